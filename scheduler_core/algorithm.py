"""One pod's placement decision: feasible nodes, scores, host (upstream ``schedule_one.go``).

``find_nodes_that_fit`` runs PreFilter, then the pod's nominated node alone if it has one
(``evaluateNominatedNode``: a preemptor goes back where it freed room), then Filter over the
snapshot starting at a rotating index and stopping once ``num_feasible_nodes_to_find`` nodes
pass (adaptive ``percentageOfNodesToScore``), with the pods nominated to a node counted there
(``RunFilterPluginsWithNominatedPods``); ``prioritize`` runs PreScore/Score; ``select_host`` picks a
highest-scoring node uniformly at random among ties (the distribution of upstream's
reservoir sampling, from a seedable RNG). Filter runs in batch over the columns where
plugins allow it; the per-node Filter is then called only for reasons, which are needed
when the pod is unschedulable or when an explanation is asked for.

The search is serial: with upstream's 16 goroutines the number of nodes examined past the
last needed feasible node varies from run to run; here it is exactly up to that node.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import cast, overload

import numpy as np

from scheduler_core.framework import Code, CycleState, NodeColumns, NodeInfo, PodInfo, Status
from scheduler_core.framework.diagnosis import Diagnosis, FitError
from scheduler_core.framework.interface import SnapshotLister
from scheduler_core.metrics.scheduler_metrics import FILTER
from scheduler_core.runtime.framework import Framework, ScoreOutcome

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5
NO_NODES_AVAILABLE = "no nodes available to schedule pods"


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """Upstream ``numFeasibleNodesToFind`` (Go int32 arithmetic)."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    pct = percentage or 0
    if pct == 0:
        pct = 50 - num_all_nodes // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    num = num_all_nodes * pct // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(slots=True)
class ScheduleResult:
    suggested_host: str
    evaluated_nodes: int
    feasible_nodes: int
    scores: ScoreOutcome | None = None
    scored_nodes: Sequence[NodeInfo] = ()
    diagnosis: Diagnosis | None = None  # with explain: why the processed nodes that failed were rejected


class ScheduleError(Exception):
    """An internal error of the cycle (a plugin's Error status)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


_NO_ROWS = np.zeros(0, np.int64)


class RowView(Sequence[NodeInfo]):
    """The NodeInfos of some column rows, materialized only when a plugin asks."""

    __slots__ = ("_infos", "_rows")

    def __init__(self, infos: list[NodeInfo], rows: np.ndarray) -> None:
        self._infos = infos
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, index: int) -> NodeInfo: ...

    @overload
    def __getitem__(self, index: slice) -> list[NodeInfo]: ...

    def __getitem__(self, index: int | slice) -> NodeInfo | list[NodeInfo]:
        if isinstance(index, slice):
            return [self._infos[i] for i in self._rows[index].tolist()]
        return self._infos[int(self._rows[index])]

    def __iter__(self) -> Iterator[NodeInfo]:
        infos = self._infos
        return (infos[i] for i in self._rows.tolist())


class Algorithm:
    """The stateful part of placement: the rotating start index and the tie-break RNG."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.next_start_node_index = 0
        self.rng = rng or random.Random()

    def schedule_pod(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: SnapshotLister,
        *,
        nominated: Mapping[str, Sequence[PodInfo]] | None = None,
        nominated_node: str = "",
        explain: bool = False,
    ) -> ScheduleResult:
        if not snapshot.list():
            raise ScheduleError(Status(Code.UNSCHEDULABLE, NO_NODES_AVAILABLE))
        columns = snapshot.columns
        rows, diagnosis = self.find_nodes_that_fit(
            fwk, state, pod, snapshot, nominated or {}, explain, nominated_node=nominated_node
        )
        if not len(rows):
            raise FitError(pod, len(snapshot.list()), diagnosis)
        evaluated = len(rows) + len(diagnosis.node_to_status)
        if len(rows) == 1:
            return ScheduleResult(columns.names[int(rows[0])], evaluated, 1, diagnosis=diagnosis if explain else None)
        nodes = RowView(columns.infos, rows)
        outcome = self.prioritize(fwk, state, pod, nodes, columns, rows)
        host = columns.names[int(rows[self.select_host(outcome.totals)])]
        return ScheduleResult(host, evaluated, len(rows), outcome, nodes, diagnosis if explain else None)

    def find_nodes_that_fit(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: SnapshotLister,
        nominated: Mapping[str, Sequence[PodInfo]],
        explain: bool,
        *,
        nominated_node: str = "",
    ) -> tuple[np.ndarray, Diagnosis]:
        """Rows of the feasible nodes, in the order they were found, and the diagnosis.

        ``nominated``: the pods nominated to each node that this pod's Filter counts as placed.
        ``nominated_node``: the pod's own nomination (by an earlier preemption), tried alone
        first, as upstream's ``evaluateNominatedNode``: it is likely the only node with room."""
        diagnosis = Diagnosis()
        all_nodes = snapshot.list()
        pre = fwk.run_pre_filter(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(pre.plugins_with_nodes)
        if pre.status is not None and pre.status.code is not Code.SUCCESS:
            if not pre.status.is_rejected():
                raise ScheduleError(pre.status)
            diagnosis.absent_status = pre.status
            diagnosis.pre_filter_msg = pre.status.message()
            diagnosis.add_plugin_status(pre.status)
            return _NO_ROWS, diagnosis

        columns = snapshot.columns
        if nominated_node:
            row = self._evaluate_nominated_node(fwk, state, pod, snapshot, nominated, nominated_node)
            if row is not None:
                return np.array([row], np.int64), diagnosis
        allowed: np.ndarray | None = None
        if pre.result is not None and pre.result.node_names is not None:
            infos = (snapshot.get(name) for name in pre.result.node_names)
            allowed = np.array(sorted(info.row for info in infos if info is not None), np.int64)
            plugins = " ".join(sorted(pre.plugins_with_nodes))
            diagnosis.absent_status = Status.unresolvable(f"node(s) didn't satisfy plugin(s) [{plugins}]")
        n = columns.size if allowed is None else len(allowed)
        if n == 0:
            return _NO_ROWS, diagnosis
        to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, n)
        start = self.next_start_node_index % n
        order = np.arange(start, start + n, dtype=np.int64)
        order[n - start :] -= n
        if allowed is not None:
            order = allowed[order]

        if not fwk.filter_plugins:
            self.next_start_node_index = (start + min(to_find, n)) % n
            return order[:to_find], diagnosis

        # The Filter extension point's duration, as upstream's findNodesThatPassFilters times it.
        began = fwk.timer()
        mask = fwk.run_filter_batch(state, pod, columns)
        if mask is None:
            positions = np.arange(n, dtype=np.int64)
        else:
            positions = np.flatnonzero(mask[order])
        ghosts_on = set(nominated)  # the nodes with nominated pods: their pods are resolved when filtered
        # Statuses of the nodes the nominated pods made infeasible, kept for the diagnosis.
        rejected: dict[int, Status] = {}
        if fwk.has_per_node_filters(state) or ghosts_on:
            try:
                positions = self._refine(
                    fwk, state, pod, columns, order, positions, to_find, nominated, ghosts_on, rejected
                )
            except ScheduleError as error:
                fwk.observe(FILTER, error.status, began)
                raise
        else:
            positions = positions[:to_find]
        processed = int(positions[-1]) + 1 if len(positions) >= to_find else n
        feasible_rows = order[positions]
        if explain or not len(feasible_rows):
            try:
                self._diagnose(fwk, state, pod, columns, order[:processed], positions, nominated, rejected, diagnosis)
            except ScheduleError as error:
                fwk.observe(FILTER, error.status, began)
                raise
        fwk.observe(FILTER, None, began)
        self.next_start_node_index = (start + processed) % n
        return feasible_rows, diagnosis

    @staticmethod
    def _diagnose(
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        columns: NodeColumns,
        processed: np.ndarray,
        positions: np.ndarray,
        nominated: Mapping[str, Sequence[PodInfo]],
        rejected: dict[int, Status],
        diagnosis: Diagnosis,
    ) -> None:
        """The status of each processed node that is not feasible (``positions`` in
        ``processed``), in search order, into ``diagnosis``: upstream's per-node result of
        ``RunFilterPluginsWithNominatedPods``. A node with nominated pods keeps the status its
        search found or is filtered again with them; the others get theirs from
        :meth:`Framework.run_filter_rejected` in one pass. An Error status raises."""
        unfit = np.ones(len(processed), np.bool_)
        unfit[positions] = False
        rows = processed[unfit]
        names = columns.names
        row_names = [names[row] for row in rows.tolist()]
        with_ghosts = [i for i, name in enumerate(row_names) if name in nominated] if nominated else []
        if not with_ghosts:
            statuses = fwk.run_filter_rejected(state, pod, columns, rows)
        else:
            others = np.ones(len(rows), np.bool_)
            others[with_ghosts] = False
            found = iter(fwk.run_filter_rejected(state, pod, columns, rows[others]))
            statuses = [None if ghosts else next(found) for ghosts in (~others).tolist()]
            for i in with_ghosts:
                row = int(rows[i])
                status = rejected.get(row)
                if status is None:
                    status = fwk.run_filter_with_nominated_pods(state, pod, columns.infos[row], nominated[row_names[i]])
                statuses[i] = status
        # Nodes rejected alike share one Status: each distinct one is looked at once.
        distinct = {id(status): status for status in statuses}
        for status in distinct.values():
            if status is None:
                # Only the per-node-only filters or ghosts can reject a node the batch passed.
                rejected_by_filter = Status.unschedulable("node(s) were rejected by a filter plugin")
                statuses = [rejected_by_filter if s is None else s for s in statuses]
            elif status.code is Code.ERROR:
                raise ScheduleError(next(s for s in statuses if s is not None and s.code is Code.ERROR))
            else:
                diagnosis.add_plugin_status(status)
        diagnosis.node_to_status.update(zip(row_names, cast(list[Status], statuses), strict=True))

    @staticmethod
    def _evaluate_nominated_node(
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        snapshot: SnapshotLister,
        nominated: Mapping[str, Sequence[PodInfo]],
        node_name: str,
    ) -> int | None:
        """The row of the pod's nominated node if it passes every Filter (with the node's other
        nominated pods counted), else None: the full search follows and reports on it. Upstream
        ignores the PreFilter result's node names here, and so does this. An Error aborts the
        cycle as it would in the full search."""
        info = snapshot.get(node_name)
        if info is None:
            return None
        status = fwk.run_filter_with_nominated_pods(state, pod, info, nominated.get(node_name, ()))
        if status is None or status.code is Code.SUCCESS:
            return info.row
        if status.code is Code.ERROR:
            raise ScheduleError(status)
        return None

    def _refine(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        columns: NodeColumns,
        order: np.ndarray,
        positions: np.ndarray,
        to_find: int,
        nominated: Mapping[str, Sequence[PodInfo]],
        ghosts_on: set[str],
        rejected: dict[int, Status],
    ) -> np.ndarray:
        """Per-node evaluation, in order, of what the batch pass could not decide;
        returns positions (in ``order``) of the feasible nodes. The status of each node rejected
        with its nominated pods counted goes into ``rejected`` (by row)."""
        per_node = fwk.has_per_node_filters(state)
        found: list[int] = []
        for position in positions.tolist():
            row = int(order[position])
            info = columns.infos[row]
            if info.name in ghosts_on:
                status = fwk.run_filter_with_nominated_pods(state, pod, info, nominated[info.name])
                if status is not None:
                    if status.code is Code.ERROR:
                        raise ScheduleError(status)
                    rejected[row] = status
                    continue
            elif per_node and not fwk.run_filter_per_node_only(state, pod, info):
                continue
            found.append(position)
            if len(found) == to_find:
                break
        return np.array(found, np.int64)

    def prioritize(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        columns: NodeColumns,
        rows: np.ndarray,
    ) -> ScoreOutcome:
        if not fwk.score_plugins:
            ones = np.ones(len(nodes), np.int64)
            return ScoreOutcome([], [], ones)
        status = fwk.run_pre_score(state, pod, nodes)
        if status is not None:
            raise ScheduleError(status)
        outcome, status = fwk.run_score(state, pod, nodes, columns, rows)
        if status is not None or outcome is None:
            raise ScheduleError(status or Status.as_error("score failed"))
        return outcome

    def select_host(self, totals: np.ndarray) -> int:
        """Index of a highest total, uniformly among ties."""
        best = totals.max()
        ties = np.flatnonzero(totals == best)
        if len(ties) == 1:
            return int(ties[0])
        return int(ties[self.rng.randrange(len(ties))])
