"""GangScheduling: upstream v1.36's alpha all-or-nothing plugin for ``scheduling.k8s.io/v1alpha2``.

Upstream: ``pkg/scheduler/framework/plugins/gangscheduling/gangscheduling.go`` (v1.36.3),
behind the GenericWorkload and GangScheduling feature gates; here it runs when a profile
enables it (upstream's gate appends it to the default multiPoint list). A pod joins a group
with ``spec.schedulingGroup.podGroupName`` (``k8s.io/api/core/v1`` PodSchedulingGroup); the
PodGroup in the pod's namespace carries ``spec.schedulingPolicy.gang.minCount`` (a ``basic``
policy, or none, is not a gang and this plugin lets its pods be).

- PreEnqueue holds a member until its PodGroup exists and the scheduler knows at least
  ``minCount`` of its pods (all of them: pending, assumed or bound).
- PreFilter's RemovePod (ours: upstream's plugin has no PreFilter) refuses preemption's dry
  run a victim from a placed gang with a member at or above the preemptor's priority, so a
  pod never breaks a gang more important than itself (``framework.gangs``).
- PostFilter (ours) rejects the group's waiting members when a member finds no node while the
  group is short of ``minCount``, releasing their places at once: upstream's pod group cycle
  (below) never reserves a gang that does not fit whole, so neither may a member here hold a
  place for minutes that another pod would get upstream.
- Permit makes each member wait (5 minutes, ``permitTimeoutDuration``) until the members
  assumed or bound, itself included, reach ``minCount``; then it allows them all. A member
  that waits asks the queue to activate the group's unscheduled pods.

Upstream v1.36 also schedules a whole group in one "pod group scheduling cycle"
(``schedule_one_podgroup.go``) when GenericWorkload is on; here members are placed one cycle
each and held at Permit. The outcome (which pods bind, which wait) is the same, which the
parity scenarios check; the nodes chosen may differ. See docs/gang-scheduling.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    Manifest,
    NodeInfo,
    NodeToStatus,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
    QueueingHint,
    Status,
    gangs,
    manifest,
)
from scheduler_core.plugins import names

NAME = names.GANG_SCHEDULING
API_GROUP = "scheduling.k8s.io"
KIND = f"{API_GROUP}/PodGroup"  # how backends key v1alpha2 PodGroups in Handle.objects
PERMIT_TIMEOUT_SECONDS = 5 * 60.0  # permitTimeoutDuration

REASON_WAITING_FOR_MEMBERS = "waiting for minCount pods from a gang to appear in scheduling queue"
REASON_WAITING_AT_PERMIT = "waiting for minCount pods from a gang to be scheduled"
REASON_GANG_REJECTED = "a member found no node before the gang reached minCount"


def pod_group_name(pod: PodInfo) -> str:
    """``spec.schedulingGroup.podGroupName``, "" for a pod in no group."""
    spec = manifest.spec(pod.pod)
    group = spec.get("schedulingGroup") or {}
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) else ""


def gang_min_count(group: Manifest) -> int | None:
    """``spec.schedulingPolicy.gang.minCount``; None when the policy is not a gang."""
    policy = manifest.spec(group).get("schedulingPolicy") or {}
    gang = policy.get("gang")
    if not isinstance(gang, Mapping):
        return None
    return int(gang.get("minCount") or 0)


class GangScheduling:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle

    def _group(self, namespace: str, name: str) -> Manifest | None:
        found: Manifest | None = self._handle.lookup(KIND, namespace, name)
        return found

    def _members(self, namespace: str, name: str) -> Iterable[Manifest]:
        """The group's pods the scheduler knows (upstream's podGroupState ``allPods``)."""
        for obj in self._handle.objects("Pod"):
            meta = manifest.meta(obj)
            group = manifest.spec(obj).get("schedulingGroup") or {}
            if group.get("podGroupName") == name and (meta.get("namespace") or "default") == namespace:
                yield obj

    # -- EnqueueExtensions -----------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # PodSchedulingGroup and PodGroups are immutable: adds are the only events that help.
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ADD), self._after_pod_added),
            ClusterEventWithHint(ClusterEvent(EventResource.POD_GROUP, ActionType.ADD), self._after_pod_group_added),
        ]

    @staticmethod
    def _after_pod_added(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        added = PodInfo.of(new)
        name = pod_group_name(pod)
        same = bool(name) and added.namespace == pod.namespace and pod_group_name(added) == name
        return QueueingHint.QUEUE if same else QueueingHint.SKIP

    @staticmethod
    def _after_pod_group_added(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        if not isinstance(new, Mapping):
            raise TypeError(f"expected a PodGroup, got {type(new).__name__}")
        meta = manifest.meta(new)
        name = pod_group_name(pod)
        same = bool(name) and (meta.get("namespace") or "default") == pod.namespace and meta.get("name") == name
        return QueueingHint.QUEUE if same else QueueingHint.SKIP

    # -- PreEnqueue ------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        name = pod_group_name(pod)
        if not name:
            return None
        group = self._group(pod.namespace, name)
        if group is None:
            return Status.unresolvable(f'waiting for pods\'s pod group "{name}" to appear in scheduling queue')
        min_count = gang_min_count(group)
        if min_count is None:
            return None
        if sum(1 for _ in self._members(pod.namespace, name)) < min_count:
            return Status.unresolvable(REASON_WAITING_FOR_MEMBERS)
        return None

    # -- PreFilter (for its RemovePod) ------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        return gangs.protect_gang(self._handle.snapshot().list(), pod, pod_to_remove, pod_group_name)

    # -- PostFilter (ours) -----------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        name = pod_group_name(pod)
        group = self._group(pod.namespace, name) if name else None
        min_count = gang_min_count(group) if group is not None else None
        if min_count is None:
            return None, Status(Code.UNSCHEDULABLE)
        scheduled = self._scheduled(pod.namespace, name) - {pod.uid}
        if len(scheduled) >= min_count:
            return None, Status(Code.UNSCHEDULABLE)  # the gang is whole: only this extra pod waits
        for uid in scheduled:
            waiting = self._handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.reject(NAME, REASON_GANG_REJECTED)
        return None, Status(Code.UNSCHEDULABLE, f"pod group {pod.namespace}/{name}: {REASON_GANG_REJECTED}")

    # -- Permit ----------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        name = pod_group_name(pod)
        if not name:
            return None, 0
        group = self._group(pod.namespace, name)
        if group is None:
            return Status.as_error(RuntimeError(f"failed to get podGroup {pod.namespace}/{name}")), 0
        min_count = gang_min_count(group)
        if min_count is None:
            return None, 0
        scheduled = self._scheduled(pod.namespace, name)
        if len(scheduled) < min_count:
            for obj in self._members(pod.namespace, name):
                member = PodInfo.of(obj)
                if not member.node_name and member.uid not in scheduled:
                    state.pods_to_activate[member.key] = member
            return Status.wait(REASON_WAITING_AT_PERMIT), PERMIT_TIMEOUT_SECONDS
        for uid in scheduled:
            waiting = self._handle.get_waiting_pod(uid)
            if waiting is not None:
                waiting.allow(NAME)
        return None, 0

    def _scheduled(self, namespace: str, name: str) -> set[str]:
        """UIDs of the group's pods assumed or bound (``ScheduledPodsCount``): those on a node
        in the snapshot, which holds the pod in this cycle too."""
        return {p.uid for p in gangs.placed_members(self._handle.snapshot().list(), namespace, name, pod_group_name)}
