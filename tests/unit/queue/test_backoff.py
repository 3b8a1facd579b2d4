"""Backoff durations and expiry (upstream backoff_queue.go: calculateBackoffDuration,
getBackoffTime, isEntityBackingoff; backoff_queue_test.go)."""

from __future__ import annotations

import pytest

from scheduler_core.framework import NODE_ADD
from scheduler_core.queue import SchedulingQueue, calculate_backoff_duration
from tests.wrappers import pod_info

from .support import fail, make_queue, names, pop_and_fail, register


@pytest.mark.parametrize(
    ("count", "initial", "maximum", "expected"),
    [
        pytest.param(0, 1.0, 10.0, 0.0, id="never-failed-no-backoff"),
        pytest.param(1, 1.0, 10.0, 1.0, id="first-failure-initial"),
        pytest.param(2, 1.0, 10.0, 2.0, id="doubles"),
        pytest.param(3, 1.0, 10.0, 4.0, id="doubles-again"),
        pytest.param(4, 1.0, 10.0, 8.0, id="eight"),
        pytest.param(5, 1.0, 10.0, 10.0, id="capped-at-max"),
        pytest.param(100, 1.0, 10.0, 10.0, id="huge-count-no-overflow"),
        pytest.param(2, 0.5, 10.0, 1.0, id="sub-second-initial"),
        pytest.param(3, 3.0, 10.0, 10.0, id="cap-between-steps"),
        pytest.param(1, 1.0, 0.5, 0.5, id="max-below-initial"),
    ],
)
def test_calculate_backoff_duration(count: int, initial: float, maximum: float, expected: float) -> None:
    assert calculate_backoff_duration(count, initial, maximum) == expected


def _fail_and_move(q: SchedulingQueue, *plugins: str) -> None:
    """Pop, fail with ``plugins``, then a hinted event moves the pod out of the pool."""
    pop_and_fail(q, *plugins)
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)


@pytest.mark.parametrize(
    ("failures", "expected_backoff"),
    [
        pytest.param(1, 1.0, id="1-failure"),
        pytest.param(2, 2.0, id="2-failures"),
        pytest.param(3, 4.0, id="3-failures"),
        pytest.param(4, 8.0, id="4-failures"),
        pytest.param(5, 10.0, id="5-failures-capped"),
        pytest.param(6, 10.0, id="6-failures-capped"),
    ],
)
def test_backoff_per_unschedulable_failure_without_windows(failures: int, expected_backoff: float) -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)}, pop_from_backoff=False)
    q.add(pod_info("a", uid="uid-a"))
    for _ in range(failures - 1):
        _fail_and_move(q, "P")
        clock.set(q.next_wakeup() or 0.0)
        q.flush_backoff_completed()
    failed_at = clock.now()
    _fail_and_move(q, "P")
    assert names(q.pending()["backoff"]) == ["a"]
    wakeup = q.next_wakeup()
    assert wakeup is not None
    # Still backing off exactly at the expiry (upstream: !expiry.Before(now)); free just after.
    clock.set(failed_at + expected_backoff)
    q.flush_backoff_completed()
    assert names(q.pending()["backoff"]) == ["a"]
    assert wakeup > failed_at + expected_backoff
    clock.set(wakeup)
    q.flush_backoff_completed()
    assert names(q.pending()["active"]) == ["a"]


@pytest.mark.parametrize(
    ("fail_at", "expected_wakeup"),
    [
        pytest.param(1000.0, 1002.0, id="on-window-edge"),
        pytest.param(1000.3, 1002.0, id="mid-window-truncated"),
        pytest.param(1000.99, 1002.0, id="late-in-window"),
    ],
)
def test_backoff_expiry_is_truncated_to_one_second_windows(fail_at: float, expected_wakeup: float) -> None:
    # KEP-5142: expiry truncated to the window; a pod in the current window still backs off.
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    clock.set(fail_at)
    q.add(pod_info("a", uid="uid-a"))
    _fail_and_move(q, "P")
    assert q.next_wakeup() == expected_wakeup
    clock.set(expected_wakeup - 0.001)
    q.flush_backoff_completed()
    assert names(q.pending()["backoff"]) == ["a"]
    clock.set(expected_wakeup)
    q.flush_backoff_completed()
    assert names(q.pending()["active"]) == ["a"]


def test_errors_back_off_on_their_own_count_and_take_precedence() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)}, pop_from_backoff=False)
    q.add(pod_info("a", uid="uid-a"))
    for _ in range(3):  # unschedulable_count = 3 -> would be 4 s
        _fail_and_move(q, "P")
        clock.set(q.next_wakeup() or 0.0)
        q.flush_backoff_completed()
    start = clock.now()
    pop_and_fail(q)  # an Error: no rejector plugins -> straight to backoffQ
    assert names(q.pending()["backoff"]) == ["a"]
    assert q.next_wakeup() == pytest.approx(start + 1.0)
    clock.set(q.next_wakeup() or 0.0)
    q.flush_backoff_completed()
    qpi = q.pop()
    assert qpi is not None
    fail(q, qpi)  # second consecutive error: 2 s
    assert q.next_wakeup() == pytest.approx(clock.now() + 2.0)


def test_plugin_rejection_resets_the_error_count() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)}, pop_from_backoff=False)
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q)  # error 1
    clock.set(q.next_wakeup() or 0.0)
    q.flush_backoff_completed()
    _fail_and_move(q, "P")  # unschedulable_count 1, errors reset -> 1 s
    assert q.next_wakeup() == pytest.approx(clock.now() + 1.0)


def test_max_backoff_zero_disables_backoff() -> None:
    q, _ = make_queue(hints={"P": register(NODE_ADD)}, max_backoff=0.0)
    q.add(pod_info("a", uid="uid-a"))
    _fail_and_move(q, "P")
    assert names(q.pending()["active"]) == ["a"]
    assert q.next_wakeup() is None


def test_pod_that_completed_backoff_in_the_pool_goes_straight_to_active() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    clock.advance(30)
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert names(q.pending()["active"]) == ["a"]
