"""PreScore, Score and NormalizeScore of PodTopologySpread.

Upstream (k8s.io/kubernetes v1.36.3) ``pkg/scheduler/framework/plugins/podtopologyspread/scoring.go``.
PreScore takes the soft (ScheduleAnyway) constraints, or the default ones when the pod has
no constraints at all. Candidate nodes missing a topology key are ignored (score 0) unless the
constraints are the system defaults, so that nodes without a zone still spread by hostname.
Each constraint gets the weight ``log(number of its domains among the candidates + 2)``
(hostname: the number of candidates). Matching pods are counted per domain over all nodes
(hostname domains are counted at Score, per node). A node's raw score is
``round(sum over constraints whose key it has of count * weight + maxSkew - 1)``; NormalizeScore
maps it to ``100 * (max + min - score) / max`` so the least crowded nodes score highest.

The float math is Go's, operation for operation (see :mod:`.gomath`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from scheduler_core.framework import MAX_NODE_SCORE, IntArray, NodeColumns, NodeInfo, NodeScore, PodInfo
from scheduler_core.framework.gomath import go_log, go_round, go_round_array
from scheduler_core.plugins.podtopologyspread.common import LABEL_HOSTNAME, Constraint, node_labels_match
from scheduler_core.plugins.podtopologyspread.counting import (
    InclusionMasks,
    MatchCounter,
    RowCounter,
    all_keys_present,
    generations,
    sum_by_value,
)

INVALID_SCORE = -1
_MAX_INT64 = 2**63 - 1


@dataclass(slots=True)
class PreScoreState:
    """``preScoreState``: never changed after PreScore, so clones share it."""

    constraints: list[Constraint]
    ignored_nodes: set[str]
    # Per constraint, the matching pods per domain of the candidates (empty for hostname).
    topology_value_to_pod_counts: list[dict[str, int]]
    topology_normalizing_weight: list[float]

    def clone(self) -> PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    return go_log(float(size + 2))


def compute(
    pod: PodInfo,
    constraints: list[Constraint],
    filtered_nodes: Sequence[NodeInfo],
    columns: NodeColumns,
    require_all_topologies: bool,
    counter: RowCounter,
) -> PreScoreState:
    """``initPreScoreState`` over the candidates, then the counting over all the nodes of the
    snapshot (``columns``), vectorized."""
    ignored: set[str] = set()
    domains: list[dict[str, int]] = [{} for _ in constraints]
    for info in filtered_nodes:
        labels = info.labels
        if require_all_topologies and not node_labels_match(labels, constraints):
            ignored.add(info.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != LABEL_HOSTNAME:
                domains[i].setdefault(labels.get(c.topology_key, ""), 0)
    weights = []
    for i, c in enumerate(constraints):
        size = len(filtered_nodes) - len(ignored) if c.topology_key == LABEL_HOSTNAME else len(domains[i])
        weights.append(topology_normalizing_weight(size))

    base = all_keys_present(columns, constraints) if require_all_topologies else np.ones(columns.size, np.bool_)
    masks = InclusionMasks(pod, columns)
    gens: IntArray | None = None
    for c, domain in zip(constraints, domains, strict=True):
        # Domains of no candidate are not counted (hostname ones are counted at Score).
        if not domain:
            continue
        column = columns.label(c.topology_key)
        # A node without the key is in the "" domain (only when keys are not all required).
        wanted = np.zeros(len(column.vocab) + 1, dtype=np.bool_)
        for value, code in column.vocab.items():
            wanted[code] = value in domain
        wanted[-1] = "" in domain
        rows = masks.eligible(c, base) & wanted[column.codes]
        if not rows.any():
            continue
        if gens is None:
            gens = generations(columns)
        counts = counter.counts(columns, gens, c.selector, pod.namespace)
        absent = rows & (column.codes < 0)
        for value, total in sum_by_value(columns, c.topology_key, rows & ~absent, counts).items():
            domain[value] += total
        if absent.any():
            domain[""] += int(counts[absent].sum())
    return PreScoreState(constraints, ignored, domains, weights)


def score_node(state: PreScoreState, pod: PodInfo, node: NodeInfo, counter: MatchCounter) -> int:
    if node.name in state.ignored_nodes:
        return 0
    score = 0.0
    for i, c in enumerate(state.constraints):
        value = node.labels.get(c.topology_key)
        if value is None:
            continue
        if c.topology_key == LABEL_HOSTNAME:
            memo = counter.counts_for(c.selector, pod.namespace)
            cnt = counter.count(memo, node, c.selector, pod.namespace)
        else:
            cnt = state.topology_value_to_pod_counts[i].get(value, 0)
        # scoreForCount: float64(cnt)*tpWeight + float64(maxSkew-1)
        score += float(cnt) * state.topology_normalizing_weight[i] + float(c.max_skew - 1)
    return int(go_round(score))


def score_rows(
    state: PreScoreState, pod: PodInfo, columns: NodeColumns, rows: IntArray, counter: RowCounter
) -> IntArray:
    """:func:`score_node` for the nodes at ``rows`` of the columns."""
    n = len(rows)
    total = np.zeros(n, dtype=np.float64)
    gens: IntArray | None = None
    for i, c in enumerate(state.constraints):
        column = columns.label(c.topology_key)
        codes = column.codes[rows]
        has = codes >= 0
        if c.topology_key == LABEL_HOSTNAME:
            if gens is None:
                gens = generations(columns)
            cnt = counter.counts(columns, gens, c.selector, pod.namespace)[rows]
        else:
            domain = state.topology_value_to_pod_counts[i]
            lut = np.zeros(len(column.vocab) + 1, dtype=np.int64)
            for value, code in column.vocab.items():
                lut[code] = domain.get(value, 0)
            cnt = lut[codes]
        term = cnt.astype(np.float64) * state.topology_normalizing_weight[i] + float(c.max_skew - 1)
        total = np.where(has, total + term, total)
    scores: IntArray = go_round_array(total).astype(np.int64)
    if state.ignored_nodes:
        names = columns.names
        ignored = np.fromiter((names[row] in state.ignored_nodes for row in rows.tolist()), dtype=np.bool_, count=n)
        scores[ignored] = 0
    return scores


def normalize(state: PreScoreState, scores: list[NodeScore]) -> None:
    """NormalizeScore, in place: ignored nodes 0, else ``100 * (max + min - s) / max``."""
    min_score = _MAX_INT64
    max_score = 0
    for entry in scores:
        if entry.name in state.ignored_nodes:
            entry.score = INVALID_SCORE
            continue
        min_score = min(min_score, entry.score)
        max_score = max(max_score, entry.score)
    for entry in scores:
        if entry.score == INVALID_SCORE:
            entry.score = 0
        elif max_score == 0:
            entry.score = MAX_NODE_SCORE
        else:
            # Non-negative operands: floor division is Go's truncation.
            entry.score = MAX_NODE_SCORE * (max_score + min_score - entry.score) // max_score
