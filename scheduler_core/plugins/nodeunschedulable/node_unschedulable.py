"""NodeUnschedulable: keep pods off cordoned nodes (``spec.unschedulable``).

Upstream: ``pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable.go``. A
pod that tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint also tolerates
``spec.unschedulable``. The rejection is UnschedulableAndUnresolvable: preemption cannot
uncordon a node. The batch form reads the snapshot's ``unschedulable`` column.
"""

from __future__ import annotations

import numpy as np

from scheduler_core.framework import (
    NO_SCHEDULE,
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    NodeColumns,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Status,
    Taint,
    Toleration,
    tolerations_tolerate_taint,
)
from scheduler_core.plugins import names

NAME = names.NODE_UNSCHEDULABLE

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
_UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", NO_SCHEDULE)


def tolerates_unschedulable(tolerations: tuple[Toleration, ...]) -> bool:
    return bool(tolerations) and tolerations_tolerate_taint(tolerations, _UNSCHEDULABLE_TAINT)


class NodeUnschedulable:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle | None) -> None:
        self._handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self._is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS),
                self._is_schedulable_after_pod_toleration_change,
            ),
        ]

    def _is_schedulable_after_node_change(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        now_unschedulable = NodeInfo.of(new).unschedulable
        was_unschedulable = True if old is None else NodeInfo.of(old).unschedulable
        # Queue when a node is uncordoned, or a schedulable node is added.
        return QueueingHint.QUEUE if was_unschedulable and not now_unschedulable else QueueingHint.SKIP

    def _is_schedulable_after_pod_toleration_change(
        self, pod: PodInfo, old: EventObject, new: EventObject
    ) -> QueueingHint:
        modified = PodInfo.of(new)
        if old is not None:
            PodInfo.of(old)  # a wrong object type raises, and the pod is queued, as upstream
        # Tolerations can only be added, so the pod was rejected without this toleration.
        if modified.uid == pod.uid and tolerates_unschedulable(modified.tolerations):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if node.unschedulable and not tolerates_unschedulable(pod.tolerations):
            return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None:
        if tolerates_unschedulable(pod.tolerations):
            return np.ones(columns.size, dtype=np.bool_)
        return ~columns.unschedulable

    def filter_batch_rejection(self, state: CycleState, pod: PodInfo) -> Status | None:
        return Status.unresolvable(ERR_REASON_UNSCHEDULABLE)
