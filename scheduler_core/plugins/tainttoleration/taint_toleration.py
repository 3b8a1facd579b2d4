"""TaintToleration: keep pods off nodes whose taints they do not tolerate.

Upstream: ``pkg/scheduler/framework/plugins/tainttoleration/taint_toleration.go``. Filter
rejects a node with a NoSchedule or NoExecute taint the pod does not tolerate, as
UnschedulableAndUnresolvable (preemption cannot remove taints). Score counts the node's
PreferNoSchedule taints not tolerated by the pod's PreferNoSchedule (or effect-less)
tolerations; NormalizeScore reverses the count so the fewest untolerated taints score 100.

The batch forms work on the snapshot's distinct taints (``NodeColumns.taints()``): a pod is
checked once against each distinct taint, then one matrix reduction covers every node. A
cluster without taints costs one array allocation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scheduler_core.framework import (
    PREFER_NO_SCHEDULE,
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    IntArray,
    NodeColumns,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Status,
    Taint,
    Toleration,
    tolerations_tolerate_taint,
)
from scheduler_core.framework.helpers import DefaultNormalizeScore
from scheduler_core.framework.types import find_untolerated_taint
from scheduler_core.plugins import names

NAME = names.TAINT_TOLERATION
PRE_SCORE_STATE_KEY = "PreScore" + NAME

# Current upstream no longer names the taint (older releases said
# "node(s) had untolerated taint {key: value}").
ERR_REASON_NOT_MATCH = "node(s) had untolerated taint(s)"


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    tolerations_prefer_no_schedule: tuple[Toleration, ...]

    def clone(self) -> _PreScoreState:
        return self


def _prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> tuple[Toleration, ...]:
    """An empty effect means all effects, PreferNoSchedule included."""
    return tuple(t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE)


def _count_intolerable_prefer_no_schedule(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> int:
    return sum(
        1
        for taint in taints
        if taint.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(tolerations, taint)
    )


class TaintToleration(DefaultNormalizeScore):
    name = NAME
    args_model = None
    _normalize_reversed = True  # the fewest untolerated taints score highest

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
        modified = NodeInfo.of(new).taints
        was_untolerated = old is None or find_untolerated_taint(NodeInfo.of(old).taints, pod.tolerations) is not None
        is_untolerated = find_untolerated_taint(modified, pod.tolerations) is not None
        return QueueingHint.QUEUE if was_untolerated and not is_untolerated else QueueingHint.SKIP

    def _is_schedulable_after_pod_toleration_change(
        self, pod: PodInfo, old: EventObject, new: EventObject
    ) -> QueueingHint:
        modified = PodInfo.of(new)
        original = None if old is None else PodInfo.of(old)
        # Only a new toleration on the unschedulable pod itself may change the verdict (the
        # API allows adding tolerations, not changing or removing them).
        if modified.uid == pod.uid and (original is None or original.tolerations != modified.tolerations):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    # -- Filter ----------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if find_untolerated_taint(node.taints, pod.tolerations) is None:
            return None
        return Status.unresolvable(ERR_REASON_NOT_MATCH)

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None:
        return ~columns.taints().untolerated(pod.tolerations)

    def filter_batch_rejection(self, state: CycleState, pod: PodInfo) -> Status | None:
        return Status.unresolvable(ERR_REASON_NOT_MATCH)

    # -- PreScore / Score ------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(_prefer_no_schedule_tolerations(pod.tolerations)))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        data = _pre_score_state(state)
        if data is None:
            return 0, Status.as_error(f'failed to read "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        return _count_intolerable_prefer_no_schedule(node.taints, data.tolerations_prefer_no_schedule), None

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None:
        data = _pre_score_state(state)
        if data is None:
            return None  # the per-node form reports the error
        taints = columns.taints()
        intolerable = [
            j
            for j, taint in enumerate(taints.taints)
            if taint.effect == PREFER_NO_SCHEDULE
            and not tolerations_tolerate_taint(data.tolerations_prefer_no_schedule, taint)
        ]
        if not intolerable:
            return np.zeros(len(rows), dtype=np.int64)
        # A node's taints are unique by (key, effect) (API validation), so counting distinct
        # taints per node equals counting the node's own list.
        counts: IntArray = taints.matrix[rows][:, intolerable].sum(axis=1, dtype=np.int64)
        return counts


def _pre_score_state(state: CycleState) -> _PreScoreState | None:
    return state.read_optional(PRE_SCORE_STATE_KEY, _PreScoreState)
