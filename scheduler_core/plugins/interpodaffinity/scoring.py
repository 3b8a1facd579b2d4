"""InterPodAffinity's PreScore, Score and NormalizeScore (upstream ``scoring.go``).

PreScore sums, per topology pair, the weights of every (term, pod) match involving the
incoming pod and an existing pod on a node that has the term's topology key:

- the incoming pod's preferred affinity (+weight) and anti-affinity (-weight) terms that
  select the existing pod;
- the existing pod's required affinity terms that select the incoming pod
  (+``hardPodAffinityWeight``), and its preferred affinity (+weight) and anti-affinity
  (-weight) terms that select it.

Unless the incoming pod has preferred terms, only pods with (anti-)affinity matter (upstream
visits only the nodes listed by ``have_pods_with_affinity``); the sums are gathered from the
:mod:`.index` into a :class:`ScoreSink`. A node's score is the sum of its labels' pair totals;
NormalizeScore maps min..max linearly onto 0..100 with Go's float64 arithmetic and truncation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler_core.framework import MAX_NODE_SCORE, IntArray, NodeColumns, PodInfo

ScoreMap = dict[str, dict[str, int]]
Counts = dict[tuple[str, str], int]


@dataclass(frozen=True, slots=True)
class PreScoreState:
    topology_score: ScoreMap
    pod: PodInfo
    namespace_labels: Mapping[str, str]

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream


class ScoreSink:
    """Topology totals (upstream ``scoreMap``), and whether any term matched a pod on a node with
    the term's topology key (upstream: some node's map is not empty; else PreScore skips)."""

    __slots__ = ("hit", "scores")

    def __init__(self) -> None:
        self.scores: ScoreMap = {}
        self.hit = False

    def add_pairs(self, pairs: Counts, weight: int) -> None:
        """``weight`` once per pod counted at each pair."""
        for (key, value), count in pairs.items():
            values = self.scores.setdefault(key, {})
            values[value] = values.get(value, 0) + weight * count
            self.hit = True

    def add_values(self, key: str, counts: Mapping[str, int], weight: int) -> None:
        """``weight`` once per pod counted at each value of topology ``key``."""
        if not counts:
            return
        values = self.scores.setdefault(key, {})
        for value, count in counts.items():
            values[value] = values.get(value, 0) + weight * count
        self.hit = True


def score(state: PreScoreState, node_labels: Mapping[str, str]) -> int:
    total = 0
    for key, values in state.topology_score.items():
        value = node_labels.get(key)
        if value is not None:
            total += values.get(value, 0)
    return total


def score_rows(state: PreScoreState, columns: NodeColumns, rows: IntArray) -> IntArray:
    total = np.zeros(len(rows), dtype=np.int64)
    for key, values in state.topology_score.items():
        column = columns.label(key)
        lut = np.zeros(len(column.vocab) + 1, dtype=np.int64)  # last slot: label absent
        vocab = column.vocab
        for value, total_of_value in values.items():
            code = vocab.get(value)
            if code is not None:
                lut[code] = total_of_value
        total += lut[column.codes[rows]]
    return total


def normalize(scores: Sequence[int]) -> list[int]:
    """NormalizeScore: ``int64(float64(MaxNodeScore) * (float64(s-min) / float64(max-min)))``."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    diff = high - low
    if diff <= 0:
        return [0] * len(scores)
    return [int(float(MAX_NODE_SCORE) * (float(s - low) / float(diff))) for s in scores]


def normalize_array(scores: IntArray) -> None:
    """:func:`normalize` in place over an int64 array (same IEEE operations, same order)."""
    if scores.size == 0:
        return
    low = int(scores.min())
    diff = int(scores.max()) - low
    if diff <= 0:
        scores[:] = 0
        return
    ratio = (scores - low).astype(np.float64) / np.float64(diff)
    scores[:] = (np.float64(MAX_NODE_SCORE) * ratio).astype(np.int64)
