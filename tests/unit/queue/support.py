"""Shared pieces for the queue tests: a queue on a FakeClock, pods, tiny plugins."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler_core.clock import FakeClock
from scheduler_core.framework import (
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
    Status,
)
from scheduler_core.queue import SchedulingQueue

PROFILE = "crd-scheduler"


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort (upstream queuesort/priority_sort.go): higher priority, then older."""
    pa, pb = a.pod.priority, b.pod.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def make_queue(
    clock: FakeClock | None = None,
    *,
    hints: Mapping[str, Sequence[ClusterEventWithHint]] | None = None,
    pre_enqueue: Sequence[Any] = (),
    **kwargs: Any,
) -> tuple[SchedulingQueue, FakeClock]:
    clock = clock or FakeClock(1000.0)
    q = SchedulingQueue(clock, priority_less, **kwargs)
    q.set_profile(PROFILE, pre_enqueue=pre_enqueue, hints=hints or {})
    return q, clock


def names(pods: Sequence[PodInfo]) -> list[str]:
    return [p.name for p in pods]


def sorted_names(pods: Sequence[PodInfo]) -> list[str]:
    return sorted(p.name for p in pods)


def fail(q: SchedulingQueue, qpi: QueuedPodInfo, *plugins: str, pending: Sequence[str] = ()) -> None:
    """End ``qpi``'s attempt as rejected by ``plugins`` (and Pending ``pending``)."""
    qpi.unschedulable_plugins = set(plugins)
    qpi.pending_plugins = set(pending)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())


def pop_and_fail(q: SchedulingQueue, *plugins: str, pending: Sequence[str] = ()) -> QueuedPodInfo:
    qpi = q.pop()
    assert qpi is not None
    fail(q, qpi, *plugins, pending=pending)
    return qpi


def hint_always(answer: QueueingHint) -> Callable[[PodInfo, Any, Any], QueueingHint]:
    return lambda _pod, _old, _new: answer


def register(
    event: ClusterEvent, hint: Callable[[PodInfo, Any, Any], QueueingHint] | None = None
) -> list[ClusterEventWithHint]:
    return [ClusterEventWithHint(event, hint)]


class Gate:
    """A PreEnqueue plugin gating pods whose name is in ``closed``."""

    def __init__(self, name: str = "Gate", closed: set[str] | None = None) -> None:
        self.name = name
        self.closed = closed if closed is not None else set()
        self.calls: list[str] = []

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        self.calls.append(pod.name)
        if pod.name in self.closed:
            return Status.unresolvable(f"{pod.name} is gated")
        return None
