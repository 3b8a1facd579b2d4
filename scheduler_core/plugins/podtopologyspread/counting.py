"""Counting the pods a constraint's selector matches, per node and per topology domain.

Upstream ``countPodsMatchSelector`` (``podtopologyspread/common.go``, v1.36.3): pods of the
incoming pod's namespace, not terminating, matched by the selector; an empty selector counts
none. This is the costly part of PreFilter and PreScore, so counts are memoised per
(namespace, selector) and per node generation (a NodeInfo's generation changes whenever a pod
is added to or removed from it): :class:`MatchCounter` node by node, :class:`RowCounter` over
every row of a snapshot's columns at once. :class:`InclusionMasks` and :func:`sum_by_value`
are the vectorized node inclusion policies and per-domain sums.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

from scheduler_core.framework import (
    BoolArray,
    IntArray,
    NodeColumns,
    NodeInfo,
    PodInfo,
    node_selector,
)
from scheduler_core.framework.labels import Selector
from scheduler_core.plugins.podtopologyspread.common import HONOR, Constraint


def count_pods_match_selector(pods: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """``countPodsMatchSelector``: pods of ``namespace``, not terminating, that the selector
    matches; an empty selector counts none."""
    if selector.empty():
        return 0
    count = 0
    for p in pods:
        if p.deletion_timestamp is None and p.namespace == namespace and selector.matches(p.labels):
            count += 1
    return count


class MatchCounter:
    """:func:`count_pods_match_selector` per node, memoised per node generation.

    A NodeInfo's generation changes whenever a pod is added to or removed from it (and a pod
    update is a remove and an add), so a memoised count is reused only for the same pods.
    The most recently used ``max_selectors`` (namespace, selector) pairs are kept.
    """

    def __init__(self, max_selectors: int = 64) -> None:
        self._max = max_selectors
        self._by_selector: OrderedDict[tuple[str, Selector], dict[str, tuple[int, int]]] = OrderedDict()

    def counts_for(self, selector: Selector, namespace: str) -> dict[str, tuple[int, int]]:
        key = (namespace, selector)
        memo = self._by_selector.get(key)
        if memo is None:
            memo = self._by_selector[key] = {}
            if len(self._by_selector) > self._max:
                self._by_selector.popitem(last=False)
        else:
            self._by_selector.move_to_end(key)
        return memo

    @staticmethod
    def count(memo: dict[str, tuple[int, int]], info: NodeInfo, selector: Selector, namespace: str) -> int:
        entry = memo.get(info.name)
        if entry is not None and entry[0] == info.generation:
            return entry[1]
        n = count_pods_match_selector(info.pods, selector, namespace)
        memo[info.name] = (info.generation, n)
        return n


def generations(columns: NodeColumns) -> IntArray:
    """The generation of each row's NodeInfo (changed by every pod added or removed)."""
    return np.fromiter((info.generation for info in columns.infos), dtype=np.int64, count=columns.size)


class RowCounter:
    """:func:`count_pods_match_selector` for every row of a snapshot's columns at once,
    memoised per (namespace, selector): only rows whose NodeInfo generation changed since
    the last call are counted again. The most recent ``max_selectors`` pairs are kept."""

    def __init__(self, max_selectors: int = 64) -> None:
        self._max = max_selectors
        self._memo: OrderedDict[tuple[str, Selector], tuple[weakref.ref[NodeColumns], IntArray, IntArray]] = (
            OrderedDict()
        )

    def counts(self, columns: NodeColumns, gens: IntArray, selector: Selector, namespace: str) -> IntArray:
        """Matching pods per row (read-only); ``gens`` is :func:`generations` of ``columns``."""
        if selector.empty():
            return np.zeros(columns.size, dtype=np.int64)
        key = (namespace, selector)
        infos = columns.infos
        entry = self._memo.get(key)
        if entry is None or entry[0]() is not columns or len(entry[1]) != columns.size:
            counts = np.fromiter(
                (count_pods_match_selector(info.pods, selector, namespace) for info in infos),
                dtype=np.int64,
                count=columns.size,
            )
            self._memo[key] = (weakref.ref(columns), gens.copy(), counts)
            if len(self._memo) > self._max:
                self._memo.popitem(last=False)
            return counts
        self._memo.move_to_end(key)
        _, seen, counts = entry
        for row in np.flatnonzero(seen != gens).tolist():
            counts[row] = count_pods_match_selector(infos[row].pods, selector, namespace)
            seen[row] = gens[row]
        return counts


class InclusionMasks:
    """Per-cycle masks over the columns for the node inclusion policies of one pod: the nodes
    passing its required node affinity, and those with a NoSchedule/NoExecute taint it does
    not tolerate. Built on first use."""

    def __init__(self, pod: PodInfo, columns: NodeColumns) -> None:
        self._pod = pod
        self._columns = columns
        self._affinity: BoolArray | None = None
        self._untolerated: BoolArray | None = None

    def eligible(self, constraint: Constraint, base: BoolArray) -> BoolArray:
        """``base`` narrowed to the rows passing ``constraint``'s inclusion policies."""
        mask = base
        if constraint.node_affinity_policy == HONOR:
            if self._affinity is None:
                self._affinity = node_selector.required_node_affinity(self._pod).mask(self._columns)
            mask = mask & self._affinity
        if constraint.node_taints_policy == HONOR:
            if self._untolerated is None:
                self._untolerated = self._columns.taints().untolerated(self._pod.tolerations)
            mask = mask & ~self._untolerated
        return mask


def all_keys_present(columns: NodeColumns, constraints: Sequence[Constraint]) -> BoolArray:
    """:func:`node_labels_match` for every row."""
    mask = np.ones(columns.size, dtype=np.bool_)
    for c in constraints:
        mask &= columns.label(c.topology_key).present()
    return mask


def sum_by_value(columns: NodeColumns, key: str, rows: BoolArray, counts: IntArray) -> dict[str, int]:
    """``{label value: sum of counts}`` over the ``rows`` having ``key`` (all of them must)."""
    column = columns.label(key)
    codes = column.codes[rows]
    size = len(column.vocab)
    present = np.bincount(codes, minlength=size) > 0
    # Exact: counts are far below 2**53.
    sums = np.bincount(codes, weights=counts[rows].astype(np.float64), minlength=size)
    values = list(column.vocab)  # codes are given in insertion order
    return {values[code]: int(sums[code]) for code in np.flatnonzero(present).tolist()}
