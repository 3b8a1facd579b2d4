"""What a tenant namespace may claim: which schedulerNames its profiles serve, and how many.

The rules of :mod:`.policy` compare one tenant profile with the cluster-wide profile of its
schedulerName. These two are about the cluster's names as a whole, so they read the
``tenantPolicy`` of *every* home-namespace profile (all of them are the admin's), combined as
:class:`ClaimRules` says:

* ``scheduler-names``: a tenant profile serves every pod of its namespace that names its
  schedulerName. Serving a name another scheduler also serves makes two schedulers place the
  same pods, each blind to the other's assumptions (issue 26: a node overcommitted, cpu 4.5/4,
  with a tenant profile for ``default-scheduler``). So by default a tenant may serve any name
  but ``default-scheduler`` (kube-scheduler's: every pod that names no scheduler has it), the
  names the home namespace's profiles claim (the cluster-wide ones: overriding one in a
  namespace is the admin's call), and ``deniedSchedulerNames`` (other schedulers of the
  cluster: nothing in the API says which names they serve, so the admin lists them). Once any
  home profile sets ``allowedSchedulerNames``, tenants may serve only the names listed there
  (the union), which closes the gap of a scheduler nobody listed; a name both allowed and
  denied is denied.
* ``profiles-per-namespace``: at most ``maxProfilesPerNamespace`` profiles of one tenant
  namespace serve (the smallest value set on a home profile; :data:`DEFAULT_MAX_PROFILES`
  when none sets it); the oldest (``creationTimestamp``, then name, as rival claims) win.
  Each profile costs a framework build and status writes on every change of its namespace's
  PluginConfigs; a ResourceQuota on ``count/schedulerprofiles.scheduling.crd-scheduler.io``
  refuses the objects themselves (docs/tenancy.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from scheduler_core.config import TenantPolicy
from scheduler_core.names import UPSTREAM_DEFAULT_SCHEDULER_NAME
from scheduler_core.tenancy.policy import Violation

SCHEDULER_NAMES_RULE = "scheduler-names"
PROFILES_PER_NAMESPACE_RULE = "profiles-per-namespace"
# Ten profiles cover a namespace's real needs (a default, batch, latency-sensitive, a few
# experiments) while bounding what one namespace costs: 300 tenant profiles in one namespace
# took the operator's RSS from 126 to 795 MiB in the issue 26 edit storm.
DEFAULT_MAX_PROFILES = 10


@dataclass(frozen=True, slots=True)
class ClaimRules:
    """The home namespace's combined rules on tenant claims."""

    home_names: Mapping[str, str]  # schedulerName -> the home profile claiming it
    allowed: frozenset[str] | None = None  # None: no home profile sets allowedSchedulerNames
    denied: frozenset[str] = frozenset()
    max_profiles: int = DEFAULT_MAX_PROFILES

    @classmethod
    def of(cls, home_names: Mapping[str, str], policies: Iterable[TenantPolicy]) -> ClaimRules:
        allowed: set[str] | None = None
        denied: set[str] = set()
        caps: list[int] = []
        for policy in policies:
            if policy.allowed_scheduler_names is not None:
                allowed = (allowed or set()) | set(policy.allowed_scheduler_names)
            denied |= set(policy.denied_scheduler_names)
            if policy.max_profiles_per_namespace is not None:
                caps.append(policy.max_profiles_per_namespace)
        return cls(
            dict(home_names),
            frozenset(allowed) if allowed is not None else None,
            frozenset(denied),
            min(caps, default=DEFAULT_MAX_PROFILES),
        )


def check_scheduler_name(name: str, rules: ClaimRules, *, namespace: str) -> list[Violation]:
    """The ``scheduler-names`` rule for a profile of ``namespace`` serving ``name``."""
    if name in rules.denied:
        why = "another scheduler of the cluster serves it (the policy's deniedSchedulerNames lists it)"
    elif rules.allowed is not None:
        if name in rules.allowed:
            return []
        why = f"the policy's allowedSchedulerNames does not list it (allowed: {sorted(rules.allowed) or 'none'})"
    elif name == UPSTREAM_DEFAULT_SCHEDULER_NAME:
        why = (
            "it is kube-scheduler's name, which every pod that names no scheduler has "
            "(the policy's allowedSchedulerNames does not list it)"
        )
    elif name in rules.home_names:
        why = (
            f"the cluster-wide profile {rules.home_names[name]} serves it "
            "(the policy's allowedSchedulerNames does not list it)"
        )
    else:
        return []
    reason = f"a profile in namespace {namespace!r} may not serve schedulerName {name!r}: {why}"
    return [Violation(SCHEDULER_NAMES_RULE, "", "schedulerName", reason)]


def check_profile_count(rank: int, rules: ClaimRules, *, namespace: str) -> list[Violation]:
    """The ``profiles-per-namespace`` rule for the profile that is the ``rank``-th oldest
    (from 0) of ``namespace``."""
    if rank < rules.max_profiles:
        return []
    reason = (
        f"namespace {namespace!r} has more than {rules.max_profiles} SchedulerProfiles and this one is not "
        f"among the {rules.max_profiles} oldest (the policy's maxProfilesPerNamespace)"
    )
    return [Violation(PROFILES_PER_NAMESPACE_RULE, "", "metadata.creationTimestamp", reason)]
