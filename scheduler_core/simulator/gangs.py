"""Gang outcomes in ``simulate``: for each PodGroup, how many members bound and why not all.

A gang member that did not bind has, as its own message, the last thing the scheduler said
about it, which for a gang is often only the gang plugin undoing it ("optimistic rejection in
PostFilter", "rejection in Unreserve", a Permit timeout). This module reads the outcome of the
whole group from the final state and sets each member's ``gang`` line: that it waits for its
gang, how many members bound against the quorum, and why the gang failed, taken from the
member whose own failure started it (a filter's reasons, a PreFilter check, a PreEnqueue hold),
else the timeout. Both APIs are read: scheduler-plugins' label, upstream's
``spec.schedulingGroup``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scheduler_core.framework import Manifest, PodInfo, manifest
from scheduler_core.plugins.coscheduling import coscheduling, podgroup
from scheduler_core.plugins.gangscheduling import gang_scheduling
from scheduler_core.simulator.report import SCHEDULED, PodReport

# What the gang plugins say when they undo a member for its gang's sake: not the cause.
_GANG_ECHOES = (
    coscheduling.REASON_POSTFILTER_REJECTION,
    coscheduling.REASON_UNRESERVE_REJECTION,
    "rejected due to timeout after waiting",
)


@dataclass(frozen=True, slots=True)
class Gang:
    api: str  # the Handle.objects key of its PodGroup kind
    namespace: str
    name: str
    min_member: int

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def gangs(objects: Mapping[str, Iterable[Manifest]]) -> list[Gang]:
    found: list[Gang] = []
    for obj in objects.get(podgroup.KIND, ()):
        group = podgroup.PodGroup.parse(obj)
        found.append(Gang(podgroup.KIND, group.namespace, group.name, group.min_member))
    for obj in objects.get(gang_scheduling.KIND, ()):
        count = gang_scheduling.gang_min_count(obj)
        if count is not None:
            found.append(Gang(gang_scheduling.KIND, manifest.namespace_of(obj), manifest.name_of(obj), count))
    return found


def _group_of(pod: PodInfo, api: str) -> str:
    return podgroup.group_name(pod) if api == podgroup.KIND else gang_scheduling.pod_group_name(pod)


def annotate(
    reports: Sequence[PodReport],
    pods: Iterable[Manifest],
    objects: Mapping[str, Iterable[Manifest]],
) -> None:
    """Set ``gang`` on the report of every member of a gang (``pods``: the final cluster)."""
    infos = [PodInfo(p) for p in pods]
    by_key = {(r.namespace, r.name): r for r in reports}
    for gang in gangs(objects):
        members = [p for p in infos if p.namespace == gang.namespace and _group_of(p, gang.api) == gang.name]
        bound = sum(1 for p in members if p.node_name)
        own = [by_key[(p.namespace, p.name)] for p in members if (p.namespace, p.name) in by_key]
        count = f"{bound} of {len(members)} members bound, minMember {gang.min_member}"
        if all(r.status == SCHEDULED for r in own):
            for r in own:
                r.gang = f"gang {gang.key}: {count}"
            continue
        reason = _cause(own)
        for r in own:
            if r.status == SCHEDULED:
                r.gang = f"gang {gang.key}: {count}"
            else:
                r.gang = f"waiting for its gang {gang.key}: {count}; the gang failed: {reason}"


def _cause(reports: Sequence[PodReport]) -> str:
    failed = [r for r in reports if r.status != SCHEDULED]
    for r in failed:
        if not any(echo in r.message for echo in _GANG_ECHOES):
            return f"pod {r.name}: {r.message}"
    return f"pod {failed[0].name}: {failed[0].message}" if failed else ""
