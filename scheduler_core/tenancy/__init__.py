"""Tenancy: what a namespaced profile may change, and what its plugins may touch.

* :mod:`.policy`: the tenant policy check, a pure function of two resolved profiles and the
  policy (the operator, ``simulate`` and the admission webhook run the same check);
* :mod:`.claims`: which schedulerNames tenant profiles may serve, and how many per namespace;
* :mod:`.scoped_api`: the ClusterAPI a tenant profile's Handle gets, refusing pods of other
  namespaces;
* :mod:`.limits`: bounds on free-form args (depth, size, counts).
"""

from scheduler_core.tenancy.claims import ClaimRules, check_profile_count, check_scheduler_name
from scheduler_core.tenancy.limits import ARGS_LIMITS, ArgsLimits, check_args_bounds
from scheduler_core.tenancy.policy import PROTECTED_POINTS, Violation, check_tenant_extenders, check_tenant_profile
from scheduler_core.tenancy.scoped_api import ScopedClusterAPI

__all__ = [
    "ARGS_LIMITS",
    "PROTECTED_POINTS",
    "ArgsLimits",
    "ClaimRules",
    "ScopedClusterAPI",
    "Violation",
    "check_args_bounds",
    "check_profile_count",
    "check_scheduler_name",
    "check_tenant_extenders",
    "check_tenant_profile",
]
