"""Scoring formulas: LeastAllocated, MostAllocated, RequestedToCapacityRatio, BalancedAllocation.

Each strategy only supplies a formula over three per-resource vectors, as upstream's
``scorer func(requested, allocated, allocatable []int64) int64``: ``requested`` is the node's
usage with the pod, ``allocated`` without it, ``allocatable`` the node's capacity; a resource
with ``allocatable == 0`` is skipped. :mod:`resource_allocation` builds the vectors.

Every formula exists twice, per node (Python ints and floats) and per batch of nodes (NumPy
over rows), in the same operation order so that both give identical results: integer math is
Go's int64 with truncating division, float math is Go's float64.

Upstream (k8s.io/kubernetes v1.36.3, ``pkg/scheduler/framework/plugins/``):
``noderesources/least_allocated.go``, ``most_allocated.go``, ``requested_to_capacity_ratio.go``,
``balanced_allocation.go`` and ``helper/shape_score.go``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from scheduler_core.framework import MAX_NODE_SCORE, BoolArray, IntArray
from scheduler_core.framework.gomath import go_div, go_div_array, go_round

FloatArray = npt.NDArray[np.float64]

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True, slots=True)
class Term:
    """One resource over a batch of rows; ``allocatable == 0`` marks rows that skip it."""

    weight: int
    requested: IntArray
    allocated: IntArray
    allocatable: IntArray
    complete: bool  # no row has allocatable 0 (the common case: fewer operations)
    divisor: IntArray  # allocatable, with 1 where it is 0

    @classmethod
    def of(cls, weight: int, requested: IntArray, allocated: IntArray, allocatable: IntArray) -> Term:
        complete = bool(allocatable.all())
        divisor = allocatable if complete else np.where(allocatable != 0, allocatable, 1)
        return cls(weight, requested, allocated, allocatable, complete, divisor)


class _WeightSum:
    """Sum of the weights of the resources each row counts, kept as a scalar while no row
    skips a resource."""

    def __init__(self) -> None:
        self.total = 0
        self.missing: IntArray | None = None

    def add(self, weight: int, counted: BoolArray | None) -> None:
        self.total += weight
        if counted is not None:
            lost = (~counted) * weight
            self.missing = lost if self.missing is None else self.missing + lost

    def divide(self, node_score: IntArray) -> IntArray:
        """``node_score / weightSum`` (0 where the sum is 0); node scores are non-negative."""
        if self.missing is None:
            return node_score // self.total if self.total else np.zeros_like(node_score)
        weight_sum = self.total - self.missing
        return node_score // np.maximum(weight_sum, 1)


class Strategy(Protocol):
    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int: ...

    def score_batch(self, terms: Sequence[Term], size: int) -> IntArray: ...


class LeastAllocated:
    """Favours nodes with more unrequested capacity (upstream ``leastResourceScorer``)."""

    def __init__(self, weights: Sequence[int]) -> None:
        self._weights = tuple(weights)

    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, self._weights, strict=True):
            if alloc == 0:
                continue
            node_score += (0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc) * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    def score_batch(self, terms: Sequence[Term], size: int) -> IntArray:
        node_score = np.zeros(size, np.int64)
        weight_sum = _WeightSum()
        for term in terms:
            # Over capacity gives a negative quotient, clipped to 0; so do rows with allocatable 0.
            score = np.maximum((term.allocatable - term.requested) * MAX_NODE_SCORE // term.divisor, 0)
            node_score += score if term.weight == 1 else score * term.weight
            weight_sum.add(term.weight, None if term.complete else term.allocatable != 0)
        return weight_sum.divide(node_score)


class MostAllocated:
    """Favours nodes with more requested capacity (upstream ``mostResourceScorer``)."""

    def __init__(self, weights: Sequence[int]) -> None:
        self._weights = tuple(weights)

    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, self._weights, strict=True):
            if alloc == 0:
                continue
            # requested may exceed capacity: pods without requests count the non-zero defaults.
            node_score += min(req, alloc) * MAX_NODE_SCORE // alloc * weight
            weight_sum += weight
        return node_score // weight_sum if weight_sum else 0

    def score_batch(self, terms: Sequence[Term], size: int) -> IntArray:
        node_score = np.zeros(size, np.int64)
        weight_sum = _WeightSum()
        for term in terms:
            # Rows with allocatable 0 score 0: min(requested, 0) is 0.
            score = np.minimum(term.requested, term.allocatable) * MAX_NODE_SCORE // term.divisor
            node_score += score if term.weight == 1 else score * term.weight
            weight_sum.add(term.weight, None if term.complete else term.allocatable != 0)
        return weight_sum.divide(node_score)


def broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """Upstream ``helper.BuildBrokenLinearFunction`` over (utilization, score) points."""

    def f(p: int) -> int:
        for i, (utilization, score) in enumerate(shape):
            if p <= utilization:
                if i == 0:
                    return shape[0][1]
                prev_utilization, prev_score = shape[i - 1]
                return prev_score + go_div(
                    (score - prev_score) * (p - prev_utilization), utilization - prev_utilization
                )
        return shape[-1][1]

    return f


class RequestedToCapacityRatio:
    """Scores each resource's utilization through a user shape (upstream
    ``buildRequestedToCapacityRatioScorerFunction``). Shape scores 0..10 are scaled to
    0..MaxNodeScore as upstream ``requestedToCapacityRatioScorer`` does."""

    def __init__(self, weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> None:
        self._weights = tuple(weights)
        scale = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
        self._function = broken_linear_function([(u, s * scale) for u, s in shape])
        # Utilization is always 0..100 here, so the shape is a lookup table in batch.
        self._table: IntArray = np.array([self._function(p) for p in range(MAX_UTILIZATION + 1)], np.int64)

    def _resource_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return self._function(MAX_UTILIZATION)
        return self._function(requested * MAX_UTILIZATION // capacity)

    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, self._weights, strict=True):
            if alloc == 0:
                continue
            resource_score = self._resource_score(req, alloc)
            if resource_score > 0:
                node_score += resource_score * weight
                weight_sum += weight
        if weight_sum == 0:
            return 0
        return int(go_round(float(node_score) / float(weight_sum)))

    def score_batch(self, terms: Sequence[Term], size: int) -> IntArray:
        node_score = np.zeros(size, np.int64)
        weight_sum = np.zeros(size, np.int64)
        for term in terms:
            # requested > capacity gives a quotient of at least 100: min() makes it 100 as upstream.
            utilization = np.minimum(term.requested * MAX_UTILIZATION // term.divisor, MAX_UTILIZATION)
            score = self._table[utilization]
            counted = score > 0
            if not term.complete:
                counted &= term.allocatable != 0
                score = score * counted
            node_score += score if term.weight == 1 else score * term.weight
            weight_sum += counted if term.weight == 1 else counted * term.weight
        quotient = node_score / np.maximum(weight_sum, 1)  # float64 division, as Go's
        floor = np.floor(quotient)
        rounded = floor.astype(np.int64) + (quotient - floor >= 0.5)
        return np.where(weight_sum > 0, rounded, 0)


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """Upstream ``balancedResourceScore``: (1 - std of the usage fractions) * MaxNodeScore."""
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = min(float(req) / float(alloc), 1.0)
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        # Go may fuse this into an FMA on arm64; amd64 builds (GOAMD64=v1) do not.
        squares = 0.0
        for fraction in fractions:
            squares = squares + (fraction - mean) * (fraction - mean)
        std = math.sqrt(squares / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


def _fractions(values: Sequence[IntArray], terms: Sequence[Term]) -> list[FloatArray]:
    """float64(requested) / float64(allocatable), capped at 1, per resource."""
    return [np.minimum(value / term.divisor, 1.0) for value, term in zip(values, terms, strict=True)]


def _balanced_resource_score_batch(fractions: Sequence[FloatArray], terms: Sequence[Term], size: int) -> IntArray:
    """:func:`balanced_resource_score` over rows; rows skip resources with allocatable 0."""
    if all(term.complete for term in terms) and len(terms) <= 2:
        # Every row counts every resource: the common two-resource case, without masks.
        std = np.abs((fractions[0] - fractions[1]) / 2) if len(terms) == 2 else np.zeros(size, np.float64)
    else:
        valids = [term.allocatable != 0 for term in terms]
        count = np.zeros(size, np.int64)
        first = np.zeros(size, np.float64)
        second = np.zeros(size, np.float64)
        for fraction, valid in zip(fractions, valids, strict=True):
            first = np.where(valid & (count == 0), fraction, first)
            second = np.where(valid & (count == 1), fraction, second)
            count += valid
        std = np.where(count == 2, np.abs((first - second) / 2), 0.0)
        if len(terms) > 2:
            # Skipped resources add 0.0, which leaves Go's running sums bit-for-bit unchanged.
            total = np.zeros(size, np.float64)
            for fraction, valid in zip(fractions, valids, strict=True):
                total = total + np.where(valid, fraction, 0.0)
            n = np.maximum(count, 1)
            mean = total / n
            squares = np.zeros(size, np.float64)
            for fraction, valid in zip(fractions, valids, strict=True):
                deviation = fraction - mean
                squares = squares + np.where(valid, deviation * deviation, 0.0)
            std = np.where(count > 2, np.sqrt(squares / n), std)
    result: IntArray = ((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)
    return result


class BalancedAllocation:
    """Scores how the pod changes the node's balance (upstream v1.36 ``balancedResourceScorer``):
    scores with and without the pod are in [50, 100]; their difference is mapped back to
    [50, 100], 75 meaning no change."""

    def score(self, requested: Sequence[int], allocated: Sequence[int], allocatable: Sequence[int]) -> int:
        with_pod = balanced_resource_score(requested, allocatable)
        without_pod = balanced_resource_score(allocated, allocatable)
        half = MAX_NODE_SCORE // 2
        return half + go_div(half + with_pod - without_pod, 2)

    def score_batch(self, terms: Sequence[Term], size: int) -> IntArray:
        with_pod = _balanced_resource_score_batch(_fractions([t.requested for t in terms], terms), terms, size)
        without_pod = _balanced_resource_score_batch(_fractions([t.allocated for t in terms], terms), terms, size)
        half = MAX_NODE_SCORE // 2
        return half + go_div_array(half + with_pod - without_pod, 2)
