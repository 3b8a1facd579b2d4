"""PreFilter, its AddPod/RemovePod extensions, and Filter of PodTopologySpread.

Upstream (k8s.io/kubernetes v1.36.3) ``pkg/scheduler/framework/plugins/podtopologyspread/filtering.go``.
PreFilter keeps, per hard (DoNotSchedule) constraint, the number of matching pods in each
topology domain (``tp_value_to_match_num``), counted over the nodes that have every
constraint's topology key and pass the constraint's node inclusion policies, and the two
domains with the fewest (``critical_paths``). Filter then admits a node when, for every
constraint, ``matching pods in the node's domain + (1 if the pod matches its own selector) -
global minimum <= maxSkew``, where the global minimum is 0 while fewer than ``minDomains``
domains exist. A node without a topology key fails as UnschedulableAndUnresolvable,
a skew too large as Unschedulable (preemption may help).

The batch Filter turns each constraint's domain counts into a lookup over the node label
column, one vector comparison per constraint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scheduler_core.framework import BoolArray, NodeColumns, NodeInfo, PodInfo, node_selector
from scheduler_core.plugins.podtopologyspread.common import Constraint, node_labels_match
from scheduler_core.plugins.podtopologyspread.counting import (
    InclusionMasks,
    MatchCounter,
    RowCounter,
    all_keys_present,
    generations,
    sum_by_value,
)

MAX_INT32 = 2**31 - 1


class CriticalPaths:
    """``criticalPaths``: two (topology value, match number) pairs; ``paths[0]`` always holds
    the minimum, ``paths[1]`` a number at least as large (not necessarily the second minimum
    once AddPod/RemovePod have updated it, as upstream)."""

    __slots__ = ("paths",)

    def __init__(self, paths: list[list[str | int]] | None = None) -> None:
        self.paths: list[list[str | int]] = paths if paths is not None else [["", MAX_INT32], ["", MAX_INT32]]

    def min_match_num(self) -> int:
        return int(self.paths[0][1])

    def update(self, value: str, num: int) -> None:
        p = self.paths
        i = 0 if value == p[0][0] else 1 if value == p[1][0] else -1
        if i >= 0:
            p[i][1] = num
            if int(p[0][1]) > int(p[1][1]):
                p[0], p[1] = p[1], p[0]
        elif num < int(p[0][1]):
            p[1] = p[0]
            p[0] = [value, num]
        elif num < int(p[1][1]):
            p[1] = [value, num]

    def clone(self) -> CriticalPaths:
        return CriticalPaths([list(self.paths[0]), list(self.paths[1])])

    def __repr__(self) -> str:
        return f"CriticalPaths({self.paths!r})"


@dataclass(slots=True)
class PreFilterState:
    """``preFilterState``; constraints are shared by clones (they never change)."""

    constraints: list[Constraint]
    critical_paths: list[CriticalPaths]
    tp_value_to_match_num: list[dict[str, int]]

    def min_match_num(self, i: int, min_domains: int) -> int:
        """The global minimum of constraint ``i``, 0 while fewer than ``min_domains`` domains."""
        if len(self.tp_value_to_match_num[i]) < min_domains:
            return 0
        return self.critical_paths[i].min_match_num()

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints,
            [paths.clone() for paths in self.critical_paths],
            [dict(counts) for counts in self.tp_value_to_match_num],
        )


def compute(
    pod: PodInfo, constraints: list[Constraint], nodes: Sequence[NodeInfo], counter: MatchCounter
) -> PreFilterState:
    """``calPreFilterState`` once the constraints are known (non-empty), node by node."""
    required = node_selector.required_node_affinity(pod)
    namespace = pod.namespace
    tp: list[dict[str, int]] = [{} for _ in constraints]
    memos = [counter.counts_for(c.selector, namespace) for c in constraints]
    for info in nodes:
        labels = info.labels
        if not node_labels_match(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if not c.match_node_inclusion_policies(pod, info, required):
                continue
            value = labels[c.topology_key]
            counts = tp[i]
            counts[value] = counts.get(value, 0) + counter.count(memos[i], info, c.selector, namespace)
    return _with_critical_paths(constraints, tp)


def compute_columns(
    pod: PodInfo, constraints: list[Constraint], columns: NodeColumns, counter: RowCounter
) -> PreFilterState:
    """:func:`compute` over all the nodes of a snapshot's columns, vectorized."""
    keys = all_keys_present(columns, constraints)
    masks = InclusionMasks(pod, columns)
    gens = generations(columns)
    tp = [
        sum_by_value(
            columns,
            c.topology_key,
            masks.eligible(c, keys),
            counter.counts(columns, gens, c.selector, pod.namespace),
        )
        for c in constraints
    ]
    return _with_critical_paths(constraints, tp)


def _with_critical_paths(constraints: list[Constraint], tp: list[dict[str, int]]) -> PreFilterState:
    paths = []
    for counts in tp:
        critical = CriticalPaths()
        for value, num in counts.items():
            critical.update(value, num)
        paths.append(critical)
    return PreFilterState(constraints, paths, tp)


def update_with_pod(state: PreFilterState, updated: PodInfo, preemptor: PodInfo, node: NodeInfo, delta: int) -> None:
    """``updateWithPod``: count ``updated`` in (+1) or out (-1) of the node's domains."""
    if updated.namespace != preemptor.namespace or node.node is None:
        return
    if not node_labels_match(node.labels, state.constraints):
        return
    required = node_selector.required_node_affinity(preemptor)
    for i, c in enumerate(state.constraints):
        if not c.selector.matches(updated.labels):
            continue
        if not c.match_node_inclusion_policies(preemptor, node, required):
            continue
        value = node.labels[c.topology_key]
        counts = state.tp_value_to_match_num[i]
        counts[value] = counts.get(value, 0) + delta
        state.critical_paths[i].update(value, counts[value])


def filter_node(state: PreFilterState, pod: PodInfo, node: NodeInfo) -> tuple[bool, bool]:
    """Filter on one node: ``(passes, label_missing)`` (a missing topology key is unresolvable)."""
    labels = node.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return False, True
        min_match = state.min_match_num(i, c.min_domains)
        self_match = 1 if c.selector.matches(pod.labels) else 0
        if state.tp_value_to_match_num[i].get(value, 0) + self_match - min_match > c.max_skew:
            return False, False
    return True, False


def filter_columns(state: PreFilterState, pod: PodInfo, columns: NodeColumns) -> BoolArray:
    """:func:`filter_node` over every row of the columns."""
    mask = np.ones(columns.size, dtype=np.bool_)
    for i, c in enumerate(state.constraints):
        column = columns.label(c.topology_key)
        counts = state.tp_value_to_match_num[i]
        # Domain counts by label code; the last slot (code -1, label absent) is masked below.
        lut = np.zeros(len(column.vocab) + 1, dtype=np.int64)
        for value, code in column.vocab.items():
            lut[code] = counts.get(value, 0)
        self_match = 1 if c.selector.matches(pod.labels) else 0
        limit = c.max_skew + state.min_match_num(i, c.min_domains) - self_match
        mask &= column.present() & (lut[column.codes] <= limit)
    return mask
