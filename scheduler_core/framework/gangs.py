"""What the gang plugins (Coscheduling, GangScheduling) share: finding a PodGroup, and what
preemption may not do to a gang.

A placed gang is broken by evicting any one member. Default preemption only takes pods of
lower priority than the preemptor, but a gang's members may differ in priority; a gang plugin's
PreFilter ``remove_pod`` (preemption's dry run) refuses a victim whose gang has a placed member
at or above the preemptor's priority, so a pod never breaks a gang more important than itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from scheduler_core.framework.status import Code, Status
from scheduler_core.framework.types import NodeInfo, PodInfo

ERR_GANG_VICTIM = "preemption would break a gang of higher or equal priority"


def placed_members(
    nodes: Sequence[NodeInfo], namespace: str, name: str, group_of: Callable[[PodInfo], str]
) -> Iterator[PodInfo]:
    """The pods of gang ``namespace/name`` (``group_of`` names a pod's gang) on a node in the
    snapshot: assumed or bound."""
    return (p for n in nodes for p in n.pods if p.namespace == namespace and group_of(p) == name)


def protect_gang(
    nodes: Sequence[NodeInfo], preemptor: PodInfo, victim: PodInfo, group_of: Callable[[PodInfo], str]
) -> Status | None:
    """Unschedulable when ``victim`` belongs to a gang (``group_of`` names it, "" for none)
    with a placed member whose priority is at least the preemptor's."""
    name = group_of(victim)
    if not name:
        return None
    highest = max(
        (p.priority for p in placed_members(nodes, victim.namespace, name, group_of)), default=victim.priority
    )
    if preemptor.priority <= highest:
        return Status(Code.UNSCHEDULABLE, f"{ERR_GANG_VICTIM}: {victim.namespace}/{name}")
    return None
