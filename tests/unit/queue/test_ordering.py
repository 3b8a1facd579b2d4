"""Order of pops: activeQ by the QueueSort less, backoffQ popped when activeQ is empty
(upstream active_queue.go unlockedPop, backoff_queue.go lessBackoffCompletedWithPriority)."""

from __future__ import annotations

import pytest

from scheduler_core.clock import FakeClock
from scheduler_core.framework import NODE_ADD, QueuedPodInfo
from scheduler_core.queue import SchedulingQueue
from tests.wrappers import pod_info

from .support import fail, make_queue, names, pop_and_fail, register


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        pytest.param([("a", 0), ("b", 10), ("c", 5)], ["b", "c", "a"], id="by-priority"),
        pytest.param([("a", 1), ("b", 1), ("c", 1)], ["a", "b", "c"], id="same-priority-fifo"),
        pytest.param([("a", -5), ("b", 0), ("c", 2000000000)], ["c", "b", "a"], id="negative-and-huge"),
    ],
)
def test_active_queue_pops_by_less(pods: list[tuple[str, int]], expected: list[str]) -> None:
    q, clock = make_queue()
    for name, priority in pods:
        q.add(pod_info(name, uid=f"uid-{name}", priority=priority))
        clock.advance(0.001)
    popped = [q.pop() for _ in pods]
    assert [p.pod.name for p in popped if p is not None] == expected
    assert q.pop() is None


def test_pop_marks_in_flight_and_counts_cycles_and_attempts() -> None:
    q, _ = make_queue()
    q.add(pod_info("a", uid="uid-a"))
    q.add(pod_info("b", uid="uid-b"))
    assert q.scheduling_cycle() == 0
    first = q.pop()
    assert first is not None
    assert (first.attempts, q.scheduling_cycle()) == (1, 1)
    assert names(q.in_flight_pods()) == ["a"]
    assert first.initial_attempt_timestamp == 1000.0
    q.done(first.pod.uid)
    assert q.in_flight_pods() == []
    assert q.pop() is not None
    assert q.scheduling_cycle() == 2


def test_pop_clears_the_rejector_plugins_of_the_previous_attempt() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P", pending=["Q"])
    clock.advance(20)
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    again = q.pop()
    assert again is not None
    assert (again.unschedulable_plugins, again.pending_plugins, again.attempts) == (set(), set(), 2)


def _two_in_backoff(pop_from_backoff: bool) -> tuple[SchedulingQueue, FakeClock]:
    q, clock = make_queue(hints={"P": register(NODE_ADD)}, pop_from_backoff=pop_from_backoff)
    q.add(pod_info("low", uid="uid-low", priority=1))
    q.add(pod_info("high", uid="uid-high", priority=9))
    high, low = q.pop(), q.pop()
    assert high is not None and low is not None
    fail(q, low, "P")
    clock.advance(0.2)  # same ordering window, later expiry
    fail(q, high, "P")
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    return q, clock


def test_pop_from_backoff_when_active_is_empty_orders_a_window_by_priority() -> None:
    q, _ = _two_in_backoff(pop_from_backoff=True)
    assert q.pending()["active"] == []
    first, second = q.pop(), q.pop()
    assert first is not None and second is not None
    assert [first.pod.name, second.pod.name] == ["high", "low"]


def test_without_pop_from_backoff_backoff_pods_wait_and_order_by_expiry() -> None:
    q, clock = _two_in_backoff(pop_from_backoff=False)
    assert q.pop() is None
    clock.advance(1.0)
    q.flush_backoff_completed()
    # "low" expired first and was flushed alone; "high" is still backing off.
    assert names(q.pending()["active"]) == ["low"]
    assert names(q.pending()["backoff"]) == ["high"]


def test_errored_pods_are_never_popped_early() -> None:
    q, clock = make_queue()
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q)
    assert names(q.pending()["backoff"]) == ["a"]
    assert q.pop() is None
    clock.set(q.next_wakeup() or 0.0)
    q.flush_backoff_completed()
    assert q.pop() is not None


def test_set_less_reorders_pending_pods() -> None:
    q, clock = make_queue()
    for name, priority in [("a", 1), ("b", 2), ("c", 3)]:
        q.add(pod_info(name, uid=f"uid-{name}", priority=priority))
        clock.advance(1)

    def lowest_first(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.pod.priority < b.pod.priority

    q.set_less(lowest_first)
    popped = [q.pop() for _ in range(3)]
    assert [p.pod.name for p in popped if p is not None] == ["a", "b", "c"]


def test_len_counts_every_sub_queue_but_not_in_flight() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    for name in "abcd":
        q.add(pod_info(name, uid=f"uid-{name}"))
        clock.advance(0.001)
    pop_and_fail(q, "P")  # a -> unschedulable
    pop_and_fail(q)  # b -> backoff (error)
    q.pop()  # c in flight
    assert len(q) == 3
    assert {k: names(v) for k, v in q.pending().items()} == {
        "active": ["d"],
        "backoff": ["b"],
        "unschedulable": ["a"],
    }
