"""Builders for gang tests: PodGroups of both APIs, their members, and gang profiles."""

from __future__ import annotations

from typing import Any

from tests.unit.simulator.support import profile
from tests.wrappers import pod

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def pod_group(
    name: str,
    min_member: int,
    *,
    namespace: str = "default",
    timeout: int | None = None,
    min_resources: dict[str, str] | None = None,
    created: str | None = None,
) -> dict[str, Any]:
    """A scheduler-plugins PodGroup (``scheduling.x-k8s.io/v1alpha1``)."""
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    if min_resources is not None:
        spec["minResources"] = min_resources
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if created is not None:
        meta["creationTimestamp"] = created
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def gang_group(name: str, min_count: int, *, namespace: str = "default") -> dict[str, Any]:
    """An upstream PodGroup (``scheduling.k8s.io/v1alpha2``) with a gang policy."""
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }


def members(
    group: str, count: int, *, cpu: str = "1", priority: int | None = None, **kwargs: Any
) -> list[dict[str, Any]]:
    """``count`` pods labelled into scheduler-plugins' group ``group`` (named group-0...)."""
    return [
        pod(f"{group}-{i}", cpu=cpu, priority=priority, labels={POD_GROUP_LABEL: group}, **kwargs) for i in range(count)
    ]


def gang_members(group: str, count: int, *, cpu: str = "1", **kwargs: Any) -> list[dict[str, Any]]:
    """``count`` pods naming the upstream group ``group`` in ``spec.schedulingGroup``."""
    return [pod(f"{group}-{i}", cpu=cpu, schedulingGroup={"podGroupName": group}, **kwargs) for i in range(count)]


def coscheduling_profile(**args: Any) -> dict[str, Any]:
    """The default plugins with Coscheduling, whose QueueSort replaces PrioritySort (as
    scheduler-plugins' sample configuration does)."""
    spec: dict[str, Any] = {
        "schedulerName": "crd-scheduler",
        "plugins": {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        },
    }
    if args:
        spec["pluginConfig"] = [{"name": "Coscheduling", "args": args}]
    return profile("gang", **spec)


def gang_scheduling_profile() -> dict[str, Any]:
    """The default plugins with upstream's GangScheduling, as its feature gate enables it."""
    return profile(
        "gang", schedulerName="crd-scheduler", plugins={"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}
    )
