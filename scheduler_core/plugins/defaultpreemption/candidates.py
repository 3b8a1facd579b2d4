"""Preemption candidates and how the best one is picked.

Upstream: ``pkg/scheduler/framework/preemption/preemption.go`` (``pickOneNodeForPreemption``),
``preemption/types.go`` (``candidateList``) and ``pkg/scheduler/util/utils.go``
(``MoreImportantPod``, ``GetPodStartTime``, ``GetEarliestPodStartTime``), v1.36.3.

A pod without ``status.startTime`` (assumed, or bound but not started) counts as started *now*
(upstream ``time.Now()``). One reading of the clock serves a whole preemption attempt, so such
pods tie among themselves instead of depending on the order in which Go happened to read the
clock.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from scheduler_core.framework import PodInfo, manifest

INT32_MAX = 2**31 - 1
INT64_MIN = -(2**63)

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclass(slots=True)
class Candidate:
    """A node where preempting ``victims`` (most important first) lets the pod fit."""

    name: str
    victims: list[PodInfo]
    num_pdb_violations: int = 0


class CandidateList:
    """Upstream ``candidateList``: a list of fixed capacity; adds past it are dropped."""

    __slots__ = ("_capacity", "items")

    def __init__(self, capacity: int) -> None:
        self._capacity = capacity
        self.items: list[Candidate] = []

    def add(self, candidate: Candidate) -> None:
        if len(self.items) < self._capacity:
            self.items.append(candidate)

    def __len__(self) -> int:
        return len(self.items)


def pod_start_time(pod: PodInfo, now: int) -> int:
    """``status.startTime`` in Unix nanoseconds, or ``now`` when the pod has none (parsed once
    per pod version: the dry run sorts the same victims on hundreds of nodes)."""
    memo = pod.start_time_ns
    if memo is None:
        memo = pod.start_time_ns = (_start_time(pod),)
    started = memo[0]
    return now if started is None else started


def _start_time(pod: PodInfo) -> int | None:
    raw = manifest.status(pod.pod).get("startTime")
    if not raw or not isinstance(raw, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(raw)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return ((moment - _EPOCH) // datetime.timedelta(microseconds=1)) * 1000


def importance_key(now: int) -> Callable[[PodInfo], tuple[int, int]]:
    """Sort key putting more important pods first (upstream ``MoreImportantPod``): higher
    priority, then the earlier start time."""

    def key(pod: PodInfo) -> tuple[int, int]:
        return (-pod.priority, pod_start_time(pod, now))

    return key


def earliest_start_time_of_highest_priority(victims: Sequence[PodInfo], now: int) -> int | None:
    """Upstream ``GetEarliestPodStartTime``."""
    if not victims:
        return None
    earliest = pod_start_time(victims[0], now)
    max_priority = victims[0].priority
    for pod in victims:
        if pod.priority == max_priority:
            started = pod_start_time(pod, now)
            if started < earliest:
                earliest = started
        elif pod.priority > max_priority:
            max_priority = pod.priority
            earliest = pod_start_time(pod, now)
    return earliest


ScoreFunc = Callable[[str], int]


def default_score_funcs(by_node: dict[str, Candidate], now: int) -> list[ScoreFunc]:
    """The upstream criteria, in order; each scores higher what it prefers."""

    def min_pdb_violations(node: str) -> int:
        return -by_node[node].num_pdb_violations

    def min_highest_priority(node: str) -> int:
        return -by_node[node].victims[0].priority

    def min_sum_priorities(node: str) -> int:
        # Shifting every priority by MaxInt32+1 makes it non-negative, so a node with a few
        # negative-priority victims is not preferred over one with fewer of the same priority.
        return -sum(pod.priority + INT32_MAX + 1 for pod in by_node[node].victims)

    def min_num_pods(node: str) -> int:
        return -len(by_node[node].victims)

    def latest_start_time(node: str) -> int:
        earliest = earliest_start_time_of_highest_priority(by_node[node].victims, now)
        return INT64_MIN if earliest is None else earliest

    return [min_pdb_violations, min_highest_priority, min_sum_priorities, min_num_pods, latest_start_time]


def pick_one_node_for_preemption(
    candidates: Sequence[Candidate], now: int, score_funcs: Sequence[ScoreFunc] | None = None
) -> str:
    """Upstream ``pickOneNodeForPreemption``: the node with the fewest PDB violations, then the
    lowest highest-priority victim, the smallest sum of priorities, the fewest victims, the
    latest start of its highest-priority victims; then the first (here: in candidate order,
    where upstream iterates a map)."""
    by_node = {c.name: c for c in candidates}
    if not by_node:
        return ""
    remaining = list(by_node)
    for score in score_funcs or default_score_funcs(by_node, now):
        best = INT64_MIN
        selected: list[str] = []
        for node in remaining:
            value = score(node)
            if value > best:
                best = value
                selected = []
            if value == best:
                selected.append(node)
        if len(selected) == 1:
            return selected[0]
        remaining = selected
    return remaining[0]
