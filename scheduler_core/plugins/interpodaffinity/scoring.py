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
:mod:`.index` into a :class:`ScoreSink` as parts (a topology key, pods per value, a weight). A
node's score is the sum of its labels' totals;
NormalizeScore maps min..max linearly onto 0..100 with Go's float64 arithmetic and truncation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat

import numpy as np

from scheduler_core.framework import MAX_NODE_SCORE, IntArray, NodeColumns, PodInfo

ScoreMap = dict[str, dict[str, int]]


# One contribution to the topology totals: (topology key, pods per value of it, weight).
Part = tuple[str, Mapping[str, int], int]


class PreScoreState:
    """The PreScore sums, kept as the parts they are made of: Score adds the parts up per node
    row with numpy (:func:`score_rows`) rather than building upstream's ``scoreMap`` value by
    value, thousands of hostname values for every pod. The map itself (:attr:`topology_score`)
    is built only for the per-node form. Read-only after PreScore, as upstream."""

    __slots__ = ("_score_map", "namespace_labels", "parts", "pod")

    def __init__(self, parts: Sequence[Part], pod: PodInfo, namespace_labels: Mapping[str, str]) -> None:
        self.parts = tuple(parts)
        self.pod = pod
        self.namespace_labels = namespace_labels
        self._score_map: ScoreMap | None = None

    @property
    def topology_score(self) -> ScoreMap:
        """Upstream's ``scoreMap``: per topology key and value, the summed weights."""
        if self._score_map is None:
            scores: ScoreMap = {}
            for key, counts, weight in self.parts:
                values = scores.setdefault(key, {})
                for value, count in counts.items():
                    values[value] = values.get(value, 0) + weight * count
            self._score_map = scores
        return self._score_map

    def clone(self) -> PreScoreState:
        return self


class ScoreSink:
    """The parts of the topology totals (upstream ``scoreMap``), and whether any term matched a
    pod on a node with the term's topology key (upstream: some node's map is not empty; else
    PreScore skips). The counts are the index's own maps, read before the index next changes
    (in the same cycle)."""

    __slots__ = ("hit", "parts")

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.hit = False

    def add_values(self, key: str, counts: Mapping[str, int], weight: int) -> None:
        """``weight`` once per pod counted at each value of topology ``key``."""
        if counts:
            self.parts.append((key, counts, weight))
            self.hit = True


def score(state: PreScoreState, node_labels: Mapping[str, str]) -> int:
    total = 0
    for key, values in state.topology_score.items():
        value = node_labels.get(key)
        if value is not None:
            total += values.get(value, 0)
    return total


def score_rows(state: PreScoreState, columns: NodeColumns, rows: IntArray) -> IntArray:
    by_key: dict[str, list[tuple[Mapping[str, int], int]]] = {}
    for key, counts, weight in state.parts:
        by_key.setdefault(key, []).append((counts, weight))
    total = np.zeros(len(rows), dtype=np.int64)
    for key, parts in by_key.items():
        column = columns.label(key)
        vocab = column.vocab
        # Slot len(vocab) gathers values no listed node has; the last slot, which code -1
        # (label absent) reads, stays 0.
        unknown = len(vocab)
        lut = np.zeros(unknown + 2, dtype=np.int64)
        for counts, weight in parts:
            codes = np.fromiter(map(vocab.get, counts, repeat(unknown)), dtype=np.int64, count=len(counts))
            np.add.at(lut, codes, np.fromiter(counts.values(), dtype=np.int64, count=len(counts)) * weight)
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
