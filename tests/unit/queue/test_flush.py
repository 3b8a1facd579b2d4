"""Time-driven moves (upstream scheduling_queue.go flushBackoffQCompleted,
flushUnschedulableEntitiesLeftover; DefaultPodMaxInUnschedulablePodsDuration = 5 min)."""

from __future__ import annotations

import pytest

from scheduler_core.framework import NODE_ADD, QueueingHint
from scheduler_core.queue import QueuedPod
from tests.wrappers import pod_info

from .support import hint_always, make_queue, names, pop_and_fail, register


@pytest.mark.parametrize(
    ("waited", "expected_queue"),
    [
        pytest.param(299.0, "unschedulable", id="under-5-min"),
        pytest.param(300.0, "unschedulable", id="exactly-5-min-not-yet"),
        pytest.param(300.5, "active", id="over-5-min"),
    ],
)
def test_unschedulable_pods_are_flushed_after_five_minutes(waited: float, expected_queue: str) -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD, hint_always(QueueingHint.SKIP))})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    clock.advance(waited)
    q.flush_unschedulable_leftover()
    assert names(q.pending()[expected_queue]) == ["a"]


def test_flush_goes_through_backoff_when_the_pod_still_backs_off() -> None:
    q, clock = make_queue(max_in_unschedulable=0.5)
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    clock.advance(0.6)
    q.flush_unschedulable_leftover()
    assert names(q.pending()["backoff"]) == ["a"]
    record = q.get(pod_info("a", uid="uid-a"))
    assert isinstance(record, QueuedPod) and record.was_flushed_from_unschedulable


def test_flush_moves_pending_rejected_pods_too() -> None:
    # Upstream treats UnschedulableTimeout as a wildcard event: Pending rejections included.
    q, clock = make_queue(hints={"Wait": register(NODE_ADD, hint_always(QueueingHint.SKIP))})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, pending=["Wait"])
    clock.advance(301)
    q.flush_unschedulable_leftover()
    assert names(q.pending()["active"]) == ["a"]


def test_pending_rejected_pods_are_not_moved_by_backoff_alone() -> None:
    q, clock = make_queue(hints={"Wait": register(NODE_ADD, hint_always(QueueingHint.SKIP))})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, pending=["Wait"])
    clock.advance(60)
    q.flush_backoff_completed()
    assert names(q.pending()["unschedulable"]) == ["a"]
    assert q.pop() is None


def test_flush_timer_restarts_with_each_failure() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD, hint_always(QueueingHint.SKIP))})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    assert q.next_unschedulable_timeout() is not None
    clock.advance(301)
    q.flush_unschedulable_leftover()
    clock.advance(20)
    q.flush_backoff_completed()
    pop_and_fail(q, "P")
    clock.advance(200)
    q.flush_unschedulable_leftover()
    assert names(q.pending()["unschedulable"]) == ["a"]
    timeout = q.next_unschedulable_timeout()
    assert timeout is not None and timeout > clock.now()
    clock.set(timeout)
    q.flush_unschedulable_leftover()
    assert names(q.pending()["unschedulable"]) == []


def test_next_wakeup_tracks_the_earliest_backoff_expiry() -> None:
    q, clock = make_queue(pop_from_backoff=False)
    assert q.next_wakeup() is None
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q)  # error: 1 s
    assert q.next_wakeup() == pytest.approx(clock.now() + 1.0)
    clock.set(q.next_wakeup() or 0.0)
    q.flush_backoff_completed()
    assert q.next_wakeup() is None
    assert names(q.pending()["active"]) == ["a"]


def test_flush_backoff_completed_moves_only_expired_pods_in_expiry_order() -> None:
    q, clock = make_queue(pop_from_backoff=False)
    for name in "abc":
        q.add(pod_info(name, uid=f"uid-{name}"))
        clock.advance(0.001)
    pop_and_fail(q)
    clock.advance(0.5)
    pop_and_fail(q)
    clock.advance(0.5)
    pop_and_fail(q)
    clock.advance(0.6)  # a: 1.6 s since failure, b: 1.1 s, c: 0.6 s
    q.flush_backoff_completed()
    assert sorted(names(q.pending()["active"])) == ["a", "b"]
    assert names(q.pending()["backoff"]) == ["c"]
