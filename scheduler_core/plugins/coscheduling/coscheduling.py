"""Coscheduling: all-or-nothing placement of a PodGroup's pods, as scheduler-plugins does it.

Upstream: kubernetes-sigs/scheduler-plugins ``pkg/coscheduling/coscheduling.go`` and
``pkg/coscheduling/core/core.go`` (the PodGroupManager). Pods join a group with the label
``scheduling.x-k8s.io/pod-group``; the group (``scheduling.x-k8s.io/v1alpha1`` PodGroup) says
``minMember``, optionally ``minResources`` and ``scheduleTimeoutSeconds``.

- QueueSort ``less``: higher priority first, then the group's creation time (a pod in no group:
  its own creation time, else its first attempt), then the pod's ``namespace/name``, so a
  gang's members leave the queue back to back.
- PreFilter rejects, UnschedulableAndUnresolvable (no preemption for it), a pod whose group has
  fewer pods than ``minMember`` (pods that exist, bound or not, terminal ones aside), or whose
  ``minResources`` (with ``pods: minMember``) the cluster's free capacity cannot hold.
- Permit lets the pod through when it completes the quorum (members assumed or bound, plus
  itself, reach ``minMember``) and then allows every waiting sibling; otherwise it waits up to
  the group's ``scheduleTimeoutSeconds`` (default ``permitWaitingTimeSeconds``, 60 s), and
  the first waiting member asks the queue to activate its siblings.
- PostFilter rejects the whole waiting gang when a member finds no node ("optimistic
  rejection in PostFilter"), unless the quorum is already met or the gap is at most 10%.
- Unreserve (a member timed out, was rejected, or failed to bind) rejects every waiting
  sibling ("rejection in Unreserve"), so the gang's reserved capacity is released at once.
- PreFilter's RemovePod (preemption's dry run) refuses to take a member of a placed gang
  when the preemptor's priority is not above every placed member's: preemption never breaks
  a gang to place a pod less important than the gang (ours; scheduler-plugins leaves that to
  priorities being equal within a group).

Not carried over: upstream's 3 s ``permittedPG`` cache that skips re-checking ``minResources``
(an optimisation) and ``podGroupBackoffSeconds`` (off by default upstream; refused here when
set, rather than silently ignored). PodGroup status (phase, scheduled, running) is written by
scheduler-plugins' PodGroup controller, not by its scheduler plugin; see docs/gang-scheduling.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

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
    QueuedPodInfo,
    QueueingHint,
    Resource,
    Status,
    gangs,
    manifest,
)
from scheduler_core.framework.args import PluginArgs
from scheduler_core.plugins import names
from scheduler_core.plugins.coscheduling import podgroup
from scheduler_core.plugins.coscheduling.podgroup import PodGroup, full_name, group_name

NAME = names.COSCHEDULING
DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60  # scheduler-plugins apis/config/v1 defaults.go

REASON_POSTFILTER_REJECTION = "optimistic rejection in PostFilter"
REASON_UNRESERVE_REJECTION = "rejection in Unreserve"
REASON_NOT_FOUND = "PodGroup not found"
REASON_NO_GROUP = "can not find pod group"


class CoschedulingArgs(PluginArgs):
    """``CoschedulingArgs`` of scheduler-plugins (``apis/config/types.go``)."""

    permit_waiting_time_seconds: int = Field(default=DEFAULT_PERMIT_WAITING_TIME_SECONDS, ge=0)
    pod_group_backoff_seconds: int = Field(
        default=0, ge=0, le=0, description="group backoff after a failure; not supported, must be 0"
    )


class Coscheduling:
    name = NAME
    args_model = CoschedulingArgs

    def __init__(self, args: CoschedulingArgs | None, handle: Handle) -> None:
        self._args = args or CoschedulingArgs()
        self._handle = handle
        self._first_seen: dict[str, float] = {}  # group -> first attempt of a member (no creationTimestamp)

    # -- the PodGroupManager's reads -------------------------------------------------------
    def _group(self, pod: PodInfo) -> PodGroup | None:
        """``GetPodGroup``: the pod's group, None when it names none or it does not exist."""
        name = group_name(pod)
        if not name:
            return None
        return podgroup.parse_found(self._handle.lookup(podgroup.KIND, pod.namespace, name))

    def _members(self, pod: PodInfo) -> list[Manifest]:
        """The pods of the pod's group that exist, as stored (scheduler-plugins' pod informer
        skips Succeeded and Failed pods)."""
        name, namespace = group_name(pod), pod.namespace
        members = []
        for obj in self._handle.objects("Pod"):
            meta = manifest.meta(obj)
            if (meta.get("labels") or {}).get(podgroup.POD_GROUP_LABEL) != name:
                continue
            if (meta.get("namespace") or "default") != namespace:
                continue
            if manifest.status(obj).get("phase") in ("Succeeded", "Failed"):
                continue
            members.append(obj)
        return members

    def _assigned(self, group: PodGroup, *, besides: str = "") -> int:
        """``CalculateAssignedPods``: members on a node in the snapshot (assumed or bound).
        Our snapshot already holds the pod being placed, which upstream's does not: ``besides``
        leaves it out."""
        members = gangs.placed_members(self._handle.snapshot().list(), group.namespace, group.name, group_name)
        return sum(1 for pod in members if pod.uid != besides)

    def _reject_waiting(self, namespace: str, name: str, message: str) -> None:
        for waiting in self._handle.iterate_over_waiting_pods():
            pod = waiting.pod
            if pod.namespace == namespace and group_name(pod) == name:
                waiting.reject(NAME, message)

    # -- EnqueueExtensions -----------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # As upstream: a new member may complete the group, a PodGroup created or changed may
        # let its pods in. Members rejected at Permit are not retried on node or pod events:
        # the first member to wait again activates them (Permit's ActivateSiblings).
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ADD), self._is_member),
            ClusterEventWithHint(ClusterEvent(EventResource.X_POD_GROUP, ActionType.ADD | ActionType.UPDATE)),
        ]

    @staticmethod
    def _is_member(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        added = PodInfo.of(new)
        same = added.namespace == pod.namespace and group_name(added) == group_name(pod) != ""
        return QueueingHint.QUEUE if same else QueueingHint.SKIP

    # -- QueueSort -------------------------------------------------------------------------
    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        p1, p2 = a.pod_info.priority, b.pod_info.priority
        if p1 != p2:
            return p1 > p2
        t1, t2 = self._creation_time(a), self._creation_time(b)
        if t1 == t2:
            return a.pod_info.key < b.pod_info.key
        return t1 < t2

    def _creation_time(self, qpi: QueuedPodInfo) -> float:
        """``GetCreationTimestamp``: the group's creation time, else the pod's first attempt.

        A pod here has a creationTimestamp when it came from the API server: that stands for
        its first attempt, so times compare on one (wall-clock) scale. A PodGroup without a
        creationTimestamp (a hand-written manifest) takes the first attempt of its first member
        seen, so its members still sort together."""
        pod = qpi.pod_info
        own = podgroup.parse_time(pod.creation_timestamp)
        fallback = own if own is not None else (qpi.initial_attempt_timestamp or qpi.timestamp)
        name = group_name(pod)
        if not name:
            return fallback
        memo = pod.pod_group_created
        if memo is not None:
            return memo
        group = podgroup.parse_found(self._handle.lookup(podgroup.KIND, pod.namespace, name))
        if group is None:
            return fallback
        created = group.created
        if created is None:
            created = self._first_seen.setdefault(group.full_name, fallback)
        pod.pod_group_created = created
        return created

    # -- PreFilter -------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        # Failures are UnschedulableAndUnresolvable: preemption cannot make a group whole.
        group = self._group(pod)
        if group is None:
            return None, None
        count = len(self._members(pod))
        if count < group.min_member:
            return None, Status.unresolvable(
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {count}, minMember of group: {group.min_member}"
            )
        if group.min_resources is None:
            return None, None
        gap = _cluster_gap(nodes, group.min_resources_with_pods(), group)
        if gap:
            text = " ".join(f"{k}:{v}" for k, v in sorted(gap.items()))
            return None, Status.unresolvable(f"resource gap: map[{text}]")
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        return gangs.protect_gang(self._handle.snapshot().list(), pod, pod_to_remove, group_name)

    # -- PostFilter ------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        group = self._group(pod)
        if group is None:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE, REASON_NO_GROUP)
        assigned = self._assigned(group, besides=pod.uid)
        if assigned >= group.min_member:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # A gap of at most 10%: later members may still make the quorum.
        if group.min_member and (group.min_member - assigned) / group.min_member <= 0.1:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        self._reject_waiting(pod.namespace, group.name, REASON_POSTFILTER_REJECTION)
        return PostFilterResult(), Status(
            Code.UNSCHEDULABLE,
            f"PodGroup {group.full_name} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter",
        )

    # -- Reserve ---------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        group = self._group(pod)
        if group is not None:
            self._reject_waiting(pod.namespace, group.name, REASON_UNRESERVE_REJECTION)

    # -- Permit ----------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        name = full_name(pod)
        if not name:
            return None, 0
        group = self._group(pod)
        if group is None:
            return Status(Code.UNSCHEDULABLE, REASON_NOT_FOUND), 0
        assigned = self._assigned(group, besides=pod.uid)
        if assigned + 1 >= group.min_member:
            for waiting in self._handle.iterate_over_waiting_pods():
                if full_name(waiting.pod) == name:
                    waiting.allow(NAME)
            return None, 0
        if assigned == 0:
            self._activate_siblings(state, pod)
        wait = self._args.permit_waiting_time_seconds
        if group.schedule_timeout_seconds:  # util.GetWaitTimeDuration: a positive value wins
            wait = group.schedule_timeout_seconds
        return Status.wait(), float(wait)

    def _activate_siblings(self, state: CycleState, pod: PodInfo) -> None:
        """``ActivateSiblings``: the group's first waiting member moves the others to activeQ."""
        for obj in self._members(pod):
            sibling = PodInfo.of(obj)
            if sibling.uid != pod.uid and not sibling.node_name:
                state.pods_to_activate[sibling.key] = sibling


def _cluster_gap(nodes: Sequence[NodeInfo], wanted: Resource, group: PodGroup) -> dict[str, int]:
    """``CheckClusterResource``: what ``wanted`` still lacks after taking each node's free
    capacity in turn (the group's own pods count as free); empty when the cluster holds it."""
    remaining = {k: v for k, v in podgroup.resource_names(wanted).items() if v > 0}
    for node in nodes:
        if node.node is None:
            continue
        free = node.allocatable.clone()
        free.sub(node.requested)
        pods = len(node.pods)
        for member in node.pods:
            if member.namespace == group.namespace and group_name(member) == group.name:
                free.add(member.requests)
                pods -= 1
        free.allowed_pod_number = node.allocatable.allowed_pod_number - pods
        left = podgroup.resource_names(free)
        for key in list(remaining):
            rest = remaining[key] - left.get(key, 0)
            if rest <= 0:
                del remaining[key]
            else:
                remaining[key] = rest
        if not remaining:
            return {}
    return remaining
