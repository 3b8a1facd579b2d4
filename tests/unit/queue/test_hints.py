"""Queueing hints on cluster events (upstream scheduling_queue.go isPodWorthRequeuing,
isEventOfInterest, moveEntitiesToActiveOrBackoffQueue; scheduling_queue_test.go
TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
    NodeInfo,
    PodInfo,
    QueueingHint,
    QueueingHintFn,
)
from scheduler_core.framework.events import FORCE_ACTIVATE, UNSCHEDULABLE_TIMEOUT
from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from tests.wrappers import pod_info

from .support import PROFILE, hint_always, make_queue, names, pop_and_fail, register

NODE_LABEL = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)


def _raises(_pod: PodInfo, _old: Any, _new: Any) -> QueueingHint:
    raise ValueError("hint bug")


# Each kind of hint: where its pod goes on the event, and its run's metric label (upstream
# ``queueingHintToLabel``).
HINT_ANSWERS = [
    pytest.param(hint_always(QueueingHint.QUEUE), "backoff", "Queue", id="queue-while-backing-off"),
    pytest.param(hint_always(QueueingHint.SKIP), "unschedulable", "QueueSkip", id="skip-stays"),
    pytest.param(None, "backoff", "Queue", id="no-hint-fn-means-queue"),
    pytest.param(_raises, "backoff", "Error", id="raising-hint-counts-as-queue"),
]


@pytest.mark.parametrize(("hint", "expected_queue", "_label"), HINT_ANSWERS)
def test_hint_decides_whether_the_event_moves_the_pod(
    hint: QueueingHintFn | None, expected_queue: str, _label: str
) -> None:
    q, _ = make_queue(hints={"P": register(NODE_ADD, hint)})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert names(q.pending()[expected_queue]) == ["a"]


@pytest.mark.parametrize(("hint", "_queue", "label"), HINT_ANSWERS)
def test_each_hint_run_is_timed_by_its_answer(hint: QueueingHintFn | None, _queue: str, label: str) -> None:
    """Upstream ``queueingHintToLabel``: the metric's ``hint`` label."""
    metrics = SchedulerMetrics(timer=lambda: 0.0)
    q, _ = make_queue(hints={"P": register(NODE_ADD, hint)}, metrics=metrics)
    for name in ("a", "b"):
        q.add(pod_info(name, uid=f"uid-{name}"))
        pop_and_fail(q, "P")
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert {values: child.count for values, child in metrics.hint_duration.children()} == {("P", "NodeAdd", label): 2}


@pytest.mark.parametrize(
    ("registered", "event", "moves"),
    [
        pytest.param(NODE_ADD, NODE_ADD, True, id="same-event"),
        pytest.param(ClusterEvent(EventResource.NODE, ActionType.ALL), NODE_LABEL, True, id="node-all-covers-update"),
        pytest.param(NODE_LABEL, NODE_ADD, False, id="other-action"),
        pytest.param(
            ClusterEvent(EventResource.NODE, ActionType.UPDATE),
            NODE_LABEL,
            True,
            id="update-covers-label-update",
        ),
        pytest.param(
            ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD), NODE_ADD, False, id="other-resource"
        ),
        pytest.param(
            ClusterEvent(EventResource.WILDCARD, ActionType.ALL), NODE_LABEL, True, id="wildcard-matches-everything"
        ),
        pytest.param(
            ClusterEvent(EventResource.WILDCARD, ActionType.ADD), NODE_ADD, True, id="wildcard-resource-same-action"
        ),
    ],
)
def test_registered_event_matching(registered: ClusterEvent, event: ClusterEvent, moves: bool) -> None:
    q, clock = make_queue(hints={"P": register(registered)})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    clock.advance(20)  # backoff over: a move goes to activeQ
    q.move_all_to_active_or_backoff(event, None, None)
    assert names(q.pending()["active" if moves else "unschedulable"]) == ["a"]


def test_only_the_rejector_plugins_hints_are_asked() -> None:
    calls: list[str] = []

    def recording(answer: QueueingHint, name: str) -> QueueingHintFn:
        def hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
            calls.append(name)
            return answer

        return hint

    q, _ = make_queue(
        hints={
            "P": register(NODE_ADD, recording(QueueingHint.SKIP, "P")),
            "Other": register(NODE_ADD, recording(QueueingHint.QUEUE, "Other")),
        }
    )
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert calls == ["P"]
    assert names(q.pending()["unschedulable"]) == ["a"]


def test_hints_see_the_pod_and_both_objects() -> None:
    seen: list[tuple[str, Any, Any]] = []

    def hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        seen.append((pod.name, old, new))
        return QueueingHint.QUEUE

    q, _ = make_queue(hints={"P": register(NODE_LABEL, hint)})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    old_node, new_node = {"metadata": {"name": "n", "labels": {}}}, {"metadata": {"name": "n", "labels": {"a": "b"}}}
    q.move_all_to_active_or_backoff(NODE_LABEL, old_node, new_node)
    assert [(name, old.node, new.node) for name, old, new in seen] == [("a", old_node, new_node)]


def test_node_event_objects_are_converted_once_per_event() -> None:
    """Every hint of every pod gets the same NodeInfo: the queue converts a Node event's
    manifests once (upstream hands hints a typed ``*v1.Node``)."""
    seen: list[tuple[str, Any, Any]] = []

    def hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        seen.append((pod.name, old, new))
        return QueueingHint.SKIP

    q, _ = make_queue(hints={"P": register(NODE_LABEL, hint)})
    for name in ("a", "b"):
        q.add(pod_info(name, uid=f"uid-{name}"))
        pop_and_fail(q, "P")
    q.move_all_to_active_or_backoff(NODE_LABEL, None, {"metadata": {"name": "n"}})
    assert sorted(name for name, _, _ in seen) == ["a", "b"]
    assert all(old is None and isinstance(new, NodeInfo) for _, old, new in seen)
    assert seen[0][2] is seen[1][2]


@pytest.mark.parametrize(
    "event",
    [pytest.param(UNSCHEDULABLE_TIMEOUT, id="unschedulable-timeout"), pytest.param(FORCE_ACTIVATE, id="force")],
)
def test_wildcard_events_move_every_pod_whatever_the_hints(event: ClusterEvent) -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD, hint_always(QueueingHint.SKIP))})
    q.add(pod_info("a", uid="uid-a"))
    q.add(pod_info("b", uid="uid-b"))
    pop_and_fail(q, "P")
    pop_and_fail(q, "NoRegistrations")
    clock.advance(20)
    q.move_all_to_active_or_backoff(event, None, None)
    assert sorted(names(q.pending()["active"])) == ["a", "b"]


def test_a_wildcard_event_naming_a_pod_moves_only_that_pod() -> None:
    q, clock = make_queue()
    a, b = pod_info("a", uid="uid-a"), pod_info("b", uid="uid-b")
    q.add(a)
    clock.advance(0.001)
    q.add(b)
    pop_and_fail(q, "P")
    pop_and_fail(q, "P")
    clock.advance(20)
    q.move_all_to_active_or_backoff(FORCE_ACTIVATE, None, b)
    assert names(q.pending()["active"]) == ["b"]
    assert names(q.pending()["unschedulable"]) == ["a"]


@pytest.mark.parametrize(
    ("unschedulable", "pending", "queueing", "expected_queue"),
    [
        pytest.param([], ["Wait"], ["Wait"], "active", id="pending-plugin-queue-skips-backoff"),
        pytest.param(["P"], ["Wait"], ["P"], "backoff", id="only-unschedulable-plugin-queues"),
        pytest.param(["P"], ["Wait"], ["P", "Wait"], "active", id="pending-wins"),
        pytest.param(["P"], ["Wait"], [], "unschedulable", id="nobody-queues"),
    ],
)
def test_pending_plugins_requeue_immediately(
    unschedulable: list[str], pending: list[str], queueing: list[str], expected_queue: str
) -> None:
    hints = {
        name: register(NODE_ADD, hint_always(QueueingHint.QUEUE if name in queueing else QueueingHint.SKIP))
        for name in ("P", "Wait")
    }
    q, _ = make_queue(hints=hints)
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, *unschedulable, pending=pending)
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert names(q.pending()[expected_queue]) == ["a"]


def test_pod_of_an_unknown_profile_is_requeued_on_any_event_of_interest() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a", scheduler_name="gone"))
    pop_and_fail(q, "X")
    clock.advance(20)
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert names(q.pending()["active"]) == ["a"]


def test_pre_check_filters_the_pods_considered() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    clock.advance(0.001)
    q.add(pod_info("b", uid="uid-b"))
    pop_and_fail(q, "P")
    pop_and_fail(q, "P")
    clock.advance(20)
    q.move_all_to_active_or_backoff(NODE_ADD, None, None, pre_check=lambda p: p.name == "b")
    assert names(q.pending()["active"]) == ["b"]


def test_a_profile_replaced_answers_with_its_new_hints() -> None:
    # The hints matching an event are kept per profile and event; a profile's reload drops them.
    q, _ = make_queue(hints={"P": register(NODE_ADD, hint_always(QueueingHint.SKIP))})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert names(q.pending()["unschedulable"]) == ["a"]

    q.set_profile(PROFILE, pre_enqueue=(), hints={"P": register(NODE_ADD, hint_always(QueueingHint.QUEUE))})
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert names(q.pending()["backoff"]) == ["a"]
