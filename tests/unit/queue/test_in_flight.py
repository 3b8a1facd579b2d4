"""Events received while a pod is being scheduled (upstream active_queue.go inFlightPods /
inFlightEvents, scheduling_queue.go determineSchedulingHintForInFlightPod and
AddUnschedulablePodIfNotPresent; scheduling_queue_test.go Test_InFlightPods)."""

from __future__ import annotations

import pytest

from scheduler_core.framework import (
    NODE_ADD,
    NODE_DELETE,
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
)
from scheduler_core.queue import QueuedPod
from scheduler_core.queue.active import ActiveQueue
from tests.wrappers import pod_info

from .support import fail, hint_always, make_queue, names, priority_less, register


@pytest.mark.parametrize(
    ("event_during_attempt", "hint", "expected_queue"),
    [
        pytest.param(NODE_ADD, QueueingHint.QUEUE, "backoff", id="queue-hint-requeues"),
        pytest.param(NODE_ADD, QueueingHint.SKIP, "unschedulable", id="skip-hint-parks"),
        pytest.param(None, QueueingHint.QUEUE, "unschedulable", id="no-event-parks"),
        pytest.param(NODE_DELETE, QueueingHint.QUEUE, "unschedulable", id="unregistered-event-ignored"),
    ],
)
def test_events_during_the_attempt_are_replayed_on_failure(
    event_during_attempt: ClusterEvent | None, hint: QueueingHint, expected_queue: str
) -> None:
    q, _ = make_queue(hints={"P": register(NODE_ADD, hint_always(hint))})
    q.add(pod_info("a", uid="uid-a"))
    qpi = q.pop()
    assert qpi is not None
    if event_during_attempt is not None:
        q.move_all_to_active_or_backoff(event_during_attempt, None, None)
    fail(q, qpi, "P")
    assert names(q.pending()[expected_queue]) == ["a"]
    assert q.in_flight_pods() == []


def test_an_event_before_the_pop_is_not_replayed() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    clock.advance(0.001)
    q.add(pod_info("b", uid="uid-b"))
    first = q.pop()
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)  # only "a" is in flight
    second = q.pop()
    assert first is not None and second is not None
    q.done(first.pod.uid)  # "a" bound
    fail(q, second, "P")
    assert names(q.pending()["unschedulable"]) == ["b"]


def test_an_event_is_seen_by_every_pod_in_flight() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    clock.advance(0.001)
    q.add(pod_info("b", uid="uid-b"))
    first, second = q.pop(), q.pop()
    assert first is not None and second is not None
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    fail(q, first, "P")
    fail(q, second, "P")
    assert sorted(names(q.pending()["backoff"])) == ["a", "b"]


def test_an_error_goes_to_backoff_whatever_happened() -> None:
    q, _ = make_queue(hints={"P": register(NODE_ADD, hint_always(QueueingHint.SKIP))})
    q.add(pod_info("a", uid="uid-a"))
    qpi = q.pop()
    assert qpi is not None
    fail(q, qpi)
    assert names(q.pending()["backoff"]) == ["a"]


def test_a_pending_rejection_requeued_in_flight_skips_backoff() -> None:
    q, _ = make_queue(hints={"Wait": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    qpi = q.pop()
    assert qpi is not None
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    fail(q, qpi, pending=["Wait"])
    assert names(q.pending()["active"]) == ["a"]


def test_an_update_of_the_pod_in_flight_is_replayed() -> None:
    label_update = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL)
    q, _ = make_queue(hints={"P": register(label_update)})
    old = pod_info("a", uid="uid-a")
    q.add(old)
    qpi = q.pop()
    assert qpi is not None
    q.update(old, pod_info("a", uid="uid-a", labels={"team": "x"}))
    assert q.pending() == {"active": [], "backoff": [], "unschedulable": []}
    fail(q, qpi, "P")
    assert names(q.pending()["backoff"]) == ["a"]


def test_activating_a_pod_in_flight_requeues_it_when_it_fails() -> None:
    q, _ = make_queue()
    p = pod_info("a", uid="uid-a")
    q.add(p)
    qpi = q.pop()
    assert qpi is not None
    q.activate([p])
    fail(q, qpi, "P")
    assert names(q.pending()["backoff"]) == ["a"]


def test_add_unschedulable_ignores_a_pod_already_queued_but_ends_its_attempt() -> None:
    q, _ = make_queue()
    p = pod_info("a", uid="uid-a")
    q.add(p)
    qpi = q.pop()
    assert qpi is not None
    q.add(p)  # the informer re-added it meanwhile
    fail(q, qpi, "P")
    assert names(q.pending()["active"]) == ["a"]
    assert q.pending()["unschedulable"] == []
    assert q.in_flight_pods() == []


def test_a_pod_already_in_flight_is_discarded_when_popped_again() -> None:
    q, _ = make_queue()
    p = pod_info("a", uid="uid-a")
    q.add(p)
    assert q.pop() is not None
    q.add(p)
    assert q.pop() is None
    assert q.scheduling_cycle() == 1


def test_done_prunes_events_no_pod_in_flight_can_see() -> None:
    active = ActiveQueue(priority_less)
    first, second = QueuedPod(pod_info=pod_info("a", uid="uid-a")), QueuedPod(pod_info=pod_info("b", uid="uid-b"))
    assert active.move_to_in_flight(first)
    active.add_event_if_any_in_flight(None, None, NODE_ADD)
    assert active.move_to_in_flight(second)
    active.add_event_if_any_in_flight(None, None, NODE_DELETE)
    assert [e.event for e in active.cluster_events_for_pod(second.pod.uid) or []] == [NODE_DELETE]
    active.done(first.pod.uid)
    assert [e.event for e in active.in_flight_events()] == [NODE_DELETE]
    active.done(second.pod.uid)
    assert active.in_flight_events() == []
    assert not active.add_event_if_any_in_flight(None, None, NODE_ADD)
