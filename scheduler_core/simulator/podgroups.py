"""PodGroups in ``simulate`` input: the two APIs, their keys for plugins, and their checks.

scheduler-plugins' ``scheduling.x-k8s.io/v1alpha1`` PodGroup (Coscheduling) and upstream's
``scheduling.k8s.io/v1alpha2`` PodGroup (GangScheduling) share the kind name, so the reader
carries each under ``<group>/PodGroup``, the key the plugins read with ``Handle.objects``.
The fields the plugins read are checked as the API server's schema would (types and bounds);
anything else in a PodGroup is carried as written.
"""

from __future__ import annotations

from collections.abc import Mapping

from scheduler_core.framework import Manifest, QuantityError, parse_quantity
from scheduler_core.plugins.coscheduling import podgroup
from scheduler_core.plugins.gangscheduling import gang_scheduling

KIND = "PodGroup"
API_VERSIONS = {
    f"{podgroup.API_GROUP}/v1alpha1": podgroup.KIND,
    f"{gang_scheduling.API_GROUP}/v1alpha2": gang_scheduling.KIND,
}


def key(obj: Manifest) -> str | None:
    """The ``Handle.objects`` key of a PodGroup, None for an API version we do not know."""
    return API_VERSIONS.get(str(obj.get("apiVersion") or ""))


def problems(obj: Manifest) -> list[tuple[str, str]]:
    """(field path, reason) for each field a gang plugin reads that the API would refuse."""
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        return [("spec", "must be an object")]
    found: list[tuple[str, str]] = []
    if key(obj) == podgroup.KIND:
        _int(found, spec, "minMember", "spec.minMember", minimum=0)
        _int(found, spec, "scheduleTimeoutSeconds", "spec.scheduleTimeoutSeconds", minimum=0)
        resources = spec.get("minResources")
        if resources is not None and not isinstance(resources, Mapping):
            found.append(("spec.minResources", "must be an object of resource quantities"))
        for name, quantity in (resources or {}).items() if isinstance(resources, Mapping) else ():
            try:
                parse_quantity(quantity)
            except (QuantityError, TypeError, ValueError) as exc:
                found.append((f"spec.minResources.{name}", f"invalid quantity {quantity!r}: {exc}"))
    else:
        policy = spec.get("schedulingPolicy")
        if not isinstance(policy, Mapping):
            return [("spec.schedulingPolicy", "required: one of basic or gang")]
        if ("basic" in policy) == ("gang" in policy):
            found.append(("spec.schedulingPolicy", "exactly one of basic or gang must be set"))
        gang = policy.get("gang")
        if "gang" in policy:
            if not isinstance(gang, Mapping):
                found.append(("spec.schedulingPolicy.gang", "must be an object"))
            else:
                _int(found, gang, "minCount", "spec.schedulingPolicy.gang.minCount", minimum=1, required=True)
    return found


def _int(
    found: list[tuple[str, str]],
    spec: Manifest,
    field: str,
    path: str,
    *,
    minimum: int,
    required: bool = False,
) -> None:
    value = spec.get(field)
    if value is None:
        if required:
            found.append((path, "required"))
        return
    if isinstance(value, bool) or not isinstance(value, int):
        found.append((path, f"must be an integer (got {value!r})"))
    elif value < minimum:
        found.append((path, f"must be greater than or equal to {minimum} (got {value})"))
