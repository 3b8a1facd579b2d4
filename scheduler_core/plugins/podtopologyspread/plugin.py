"""PodTopologySpread: spread pods evenly across topology domains (zones, nodes...).

Upstream (k8s.io/kubernetes v1.36.3) ``pkg/scheduler/framework/plugins/podtopologyspread/plugin.go``.
A pod's ``topologySpreadConstraints`` with ``whenUnsatisfiable: DoNotSchedule`` are enforced
by PreFilter/Filter (:mod:`.filtering`), the ``ScheduleAnyway`` ones scored by
PreScore/Score/NormalizeScore (:mod:`.scoring`). A pod without constraints gets the default
ones (the system defaults unless ``defaultingType: List``), with a selector deduced from the
Services, ReplicationControllers, ReplicaSets and StatefulSets selecting it (read through
``Handle.objects``). PreFilter and PreScore return Skip when there is nothing to enforce or
score, so the runtime skips the plugin for such pods.

Queueing hints follow upstream: an assigned (or nominated) pod of the same namespace whose
labels match a hard constraint, a new toleration on the pod itself when a constraint honors
taints, and node changes that touch the topology keys or taints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_core.framework import (
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    IntArray,
    Manifest,
    NodeColumns,
    NodeInfo,
    NodeScore,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Status,
    manifest,
)
from scheduler_core.framework import labels as labelselector
from scheduler_core.plugins import names
from scheduler_core.plugins.podtopologyspread import filtering, scoring
from scheduler_core.plugins.podtopologyspread.args import SYSTEM_DEFAULTING, PodTopologySpreadArgs
from scheduler_core.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    HONOR,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    filter_constraints,
    node_labels_match,
    own_constraints,
    pod_constraints_raw,
    pod_labels_match,
)
from scheduler_core.plugins.podtopologyspread.counting import MatchCounter, RowCounter
from scheduler_core.plugins.podtopologyspread.defaults import default_selector

NAME = names.POD_TOPOLOGY_SPREAD
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

# Upstream's Pod resource covers unscheduled and assigned pods; here they are two resources.
POD_ACTIONS = ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.UPDATE_POD_TOLERATIONS | ActionType.DELETE
NODE_ACTIONS = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT


class PodTopologySpread:
    name = NAME
    args_model = PodTopologySpreadArgs

    def __init__(self, args: PodTopologySpreadArgs | None, handle: Handle) -> None:
        args = args or PodTopologySpreadArgs()
        self._handle = handle
        self._system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self._default_constraints: tuple[Manifest, ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS
            if self._system_defaulted
            else tuple(c.as_manifest() for c in args.default_constraints)
        )
        self._counter = MatchCounter()
        self._row_counter = RowCounter()

    # -- constraints -------------------------------------------------------------------------

    def _constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """``getConstraints`` / the first half of ``initPreScoreState``: the pod's own
        constraints for ``action``, else the default ones; raises ``SelectorError``."""
        if pod_constraints_raw(pod):
            return own_constraints(pod, action)
        return self._build_default_constraints(pod, action)

    def _build_default_constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        constraints = filter_constraints(self._default_constraints, pod.labels, action)
        if not constraints:
            return []
        selector = default_selector(pod, self._handle.objects)
        if selector.empty():
            return []
        return [c.with_selector(selector) for c in constraints]

    def _hard_constraints(self, pod: PodInfo) -> list[Constraint]:
        """``getConstraints``, with upstream's error wrapping."""
        try:
            return self._constraints(pod, DO_NOT_SCHEDULE)
        except labelselector.SelectorError as error:
            what = "obtaining pod's hard" if pod_constraints_raw(pod) else "setting default hard"
            raise labelselector.SelectorError(f"{what} topology spread constraints: {error}") from None

    # -- queueing hints ----------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, POD_ACTIONS), self.is_schedulable_after_pod_change
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, POD_ACTIONS), self.is_schedulable_after_pod_change),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, NODE_ACTIONS), self.is_schedulable_after_node_change),
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        original, modified = PodInfo.of_optional(old), PodInfo.of_optional(new)
        if (modified is not None and not _involved(modified, pod)) or (
            original is not None and not _involved(original, pod)
        ):
            return QueueingHint.SKIP
        constraints = self._hard_constraints(pod)  # raising means Queue
        if modified is not None and original is not None:
            if (
                modified.uid == pod.uid
                and modified.tolerations != original.tolerations
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            if dict(modified.labels) == dict(original.labels):
                return QueueingHint.SKIP
            for c in constraints:
                if c.selector.matches(original.labels) != c.selector.matches(modified.labels):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        changed = modified if modified is not None else original
        if changed is not None and pod_labels_match(constraints, changed.labels):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        original, modified = _as_node(old), _as_node(new)
        constraints = self._hard_constraints(pod)
        original_matching = original is not None and node_labels_match(original[0], constraints)
        modified_matching = modified is not None and node_labels_match(modified[0], constraints)
        if original is not None and modified is not None:
            if original_matching != modified_matching:
                return QueueingHint.QUEUE
            if modified_matching and (
                any(original[0].get(c.topology_key) != modified[0].get(c.topology_key) for c in constraints)
                or original[1] != modified[1]
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if modified is not None:
            return QueueingHint.QUEUE if modified_matching else QueueingHint.SKIP
        return QueueingHint.QUEUE if original_matching else QueueingHint.SKIP

    # -- PreFilter / Filter ------------------------------------------------------------------

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            constraints = self._hard_constraints(pod)
        except labelselector.SelectorError as error:
            return None, Status.as_error(f"get constraints from pod: {error}")
        if not constraints:
            return None, Status.skip()
        snapshot = self._handle.snapshot()
        if nodes is snapshot.list():
            data = filtering.compute_columns(pod, constraints, snapshot.columns, self._row_counter)
        else:
            data = filtering.compute(pod, constraints, nodes, self._counter)
        state.write(PRE_FILTER_STATE_KEY, data)
        return None, None

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if isinstance(data, Status):
            return data
        filtering.update_with_pod(data, pod_to_add, pod, node, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if isinstance(data, Status):
            return data
        filtering.update_with_pod(data, pod_to_remove, pod, node, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if isinstance(data, Status):
            return data
        passes, label_missing = filtering.filter_node(data, pod, node)
        if passes:
            return None
        if label_missing:
            return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
        return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None:
        data = _pre_filter_state(state)
        if isinstance(data, Status):
            return None  # the per-node form reports the error
        return filtering.filter_columns(data, pod, columns)

    # -- PreScore / Score --------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        snapshot = self._handle.snapshot()
        if not snapshot.list():
            return Status.skip()
        try:
            constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        except labelselector.SelectorError as error:
            what = "obtaining pod's soft" if pod_constraints_raw(pod) else "setting default soft"
            return Status.as_error(f"calculating preScoreState: {what} topology spread constraints: {error}")
        if not constraints:
            return Status.skip()
        # Only non-system-default spreading requires nodes to have every topology key, so
        # nodes without a zone label still spread by hostname.
        require_all = bool(pod_constraints_raw(pod)) or not self._system_defaulted
        data = scoring.compute(pod, constraints, nodes, snapshot.columns, require_all, self._row_counter)
        state.write(PRE_SCORE_STATE_KEY, data)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        data = _pre_score_state(state)
        if isinstance(data, Status):
            return 0, data
        return scoring.score_node(data, pod, node, self._counter), None

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None:
        data = _pre_score_state(state)
        if isinstance(data, Status):
            return None  # the per-node form reports the error
        return scoring.score_rows(data, pod, columns, rows, self._row_counter)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status | None:
        data = _pre_score_state(state)
        if isinstance(data, Status):
            return data
        scoring.normalize(data, scores)
        return None


# -- helpers and typed state getters ------------------------------------------------------------


def _involved(incoming: PodInfo, pod_with_spreading: PodInfo) -> bool:
    """``involvedInTopologySpreading``: the pod itself, or a pod of its namespace that is
    assigned or nominated to a node."""
    if incoming.uid == pod_with_spreading.uid:
        return True
    if not incoming.node_name and not incoming.nominated_node_name:
        return False
    return incoming.namespace == pod_with_spreading.namespace


def _as_node(obj: object) -> tuple[Mapping[str, str], list[Any]] | None:
    """A node event's object as (labels, spec.taints as written: upstream compares them deeply)."""
    node = NodeInfo.of_optional(obj)
    if node is None:
        return None
    return node.labels, list(manifest.spec(node.node or {}).get("taints") or ())


def _pre_filter_state(state: CycleState) -> filtering.PreFilterState | Status:
    try:
        return state.read_as(PRE_FILTER_STATE_KEY, filtering.PreFilterState)
    except KeyError:
        return Status.as_error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')


def _pre_score_state(state: CycleState) -> scoring.PreScoreState | Status:
    try:
        return state.read_as(PRE_SCORE_STATE_KEY, scoring.PreScoreState)
    except KeyError:
        return Status.as_error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
