"""PreEnqueue gating (upstream scheduling_queue.go runPreEnqueuePlugins, moveToActiveQ,
moveToBackoffQ, moveEntitiesToActiveOrBackoffQueue's gated-pod shortcut)."""

from __future__ import annotations

import pytest

from scheduler_core.framework import (
    NODE_ADD,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    PodInfo,
    QueueingHint,
    Status,
)
from scheduler_core.queue import QueuedPod
from tests.wrappers import pod_info

from .support import Gate, hint_always, make_queue, names, pop_and_fail, register, sorted_names

GATES_ELIMINATED = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
WILDCARD_ALL = ClusterEvent(EventResource.WILDCARD, ActionType.ALL)


class SchedulingGatesLike:
    """Gates pods that still carry spec.schedulingGates, like upstream's SchedulingGates."""

    name = "SchedulingGates"

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if pod.scheduling_gates:
            return Status.unresolvable(f"waiting for scheduling gates: {list(pod.scheduling_gates)}")
        return None


def _ungated(p: PodInfo) -> PodInfo:
    return pod_info(p.name, uid=p.uid)


def test_gated_pod_waits_in_the_pool_with_its_gating_plugin() -> None:
    q, _ = make_queue(pre_enqueue=[SchedulingGatesLike()])
    q.add(pod_info("a", uid="uid-a", schedulingGates=[{"name": "example.com/wait"}]))
    assert names(q.pending()["unschedulable"]) == ["a"]
    assert q.pop() is None
    record = q.get(pod_info("a", uid="uid-a", schedulingGates=[{"name": "example.com/wait"}]))
    assert isinstance(record, QueuedPod)
    assert (record.gated, record.gating_plugin, record.unschedulable_plugins) == (
        True,
        "SchedulingGates",
        {"SchedulingGates"},
    )
    assert record.initial_attempt_timestamp is None


@pytest.mark.parametrize(
    ("hint", "expected_queue"),
    [
        pytest.param(QueueingHint.QUEUE, "active", id="hint-queue-reruns-pre-enqueue"),
        pytest.param(QueueingHint.SKIP, "unschedulable", id="hint-skip-stays-gated"),
    ],
)
def test_removing_the_gates_ungates_through_the_hint(hint: QueueingHint, expected_queue: str) -> None:
    q, _ = make_queue(
        pre_enqueue=[SchedulingGatesLike()],
        hints={"SchedulingGates": register(GATES_ELIMINATED, hint_always(hint))},
    )
    gated = pod_info("a", uid="uid-a", schedulingGates=[{"name": "example.com/wait"}])
    q.add(gated)
    q.update(gated, _ungated(gated))
    assert names(q.pending()[expected_queue]) == ["a"]
    record = q.get(gated)
    assert record is not None
    assert record.pod.scheduling_gates == ()
    assert record.gated is (expected_queue == "unschedulable")


def test_a_label_update_does_not_match_the_gates_eliminated_registration() -> None:
    q, _ = make_queue(
        pre_enqueue=[SchedulingGatesLike()],
        hints={"SchedulingGates": register(GATES_ELIMINATED)},
    )
    gated = pod_info("a", uid="uid-a", schedulingGates=[{"name": "example.com/wait"}])
    q.add(gated)
    q.update(gated, pod_info("a", uid=gated.uid, labels={"x": "y"}, schedulingGates=[{"name": "example.com/wait"}]))
    assert names(q.pending()["unschedulable"]) == ["a"]


def test_events_of_other_plugins_do_not_rerun_pre_enqueue_for_gated_pods() -> None:
    gate = Gate(closed={"a"})
    q, _ = make_queue(pre_enqueue=[gate], hints={"Gate": register(GATES_ELIMINATED), "P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    assert gate.calls == ["a"]
    gate.closed.clear()
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert gate.calls == ["a"]
    assert names(q.pending()["unschedulable"]) == ["a"]


@pytest.mark.parametrize(
    ("event", "looked_at"),
    [
        pytest.param(NODE_ADD, ["tried"], id="other-plugins-event-leaves-gated-pods-unread"),
        pytest.param(GATES_ELIMINATED, ["gated", "tried"], id="gating-plugins-event-reads-them"),
        pytest.param(WILDCARD_ALL, ["gated", "tried"], id="wildcard-reads-them"),
    ],
)
def test_an_event_looks_only_at_the_gated_pods_it_may_move(event: ClusterEvent, looked_at: list[str]) -> None:
    # With 10,000 gated pods, reading each one for every binding was scheduler_perf's
    # SchedulingGatedPodsWithPodAffinityImpactForThroughput at a few pods a second.
    gate = Gate(closed={"gated"})
    q, _ = make_queue(pre_enqueue=[gate], hints={"Gate": register(GATES_ELIMINATED), "P": register(NODE_ADD)})
    q.add(pod_info("gated", uid="uid-gated"))
    q.add(pod_info("tried", uid="uid-tried"))
    pop_and_fail(q, "P")
    seen: list[str] = []

    def pre_check(p: PodInfo) -> bool:
        seen.append(p.name)
        return False

    q.move_all_to_active_or_backoff(event, None, None, pre_check=pre_check)
    assert sorted(seen) == looked_at


def test_an_event_of_the_gating_plugin_reruns_pre_enqueue() -> None:
    gate = Gate(closed={"a"})
    node_event = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)
    q, _ = make_queue(pre_enqueue=[gate], hints={"Gate": register(node_event)})
    q.add(pod_info("a", uid="uid-a"))
    q.move_all_to_active_or_backoff(node_event, None, None)
    assert gate.calls == ["a", "a"]
    assert names(q.pending()["unschedulable"]) == ["a"]  # still closed
    gate.closed.clear()
    q.move_all_to_active_or_backoff(node_event, None, None)
    assert names(q.pending()["active"]) == ["a"]


def test_the_unschedulable_timeout_reruns_pre_enqueue_for_gated_pods() -> None:
    gate = Gate(closed={"a"})
    q, clock = make_queue(pre_enqueue=[gate])
    q.add(pod_info("a", uid="uid-a"))
    gate.closed.clear()
    clock.advance(301)
    q.flush_unschedulable_leftover()
    assert names(q.pending()["active"]) == ["a"]


def test_the_gating_plugin_runs_first_on_reevaluation() -> None:
    order: list[str] = []

    class Recording(Gate):
        def pre_enqueue(self, pod: PodInfo) -> Status | None:
            order.append(self.name)
            return super().pre_enqueue(pod)

    first, second = Recording("First"), Recording("Second", closed={"a"})
    q, clock = make_queue(pre_enqueue=[first, second])
    q.add(pod_info("a", uid="uid-a"))
    assert order == ["First", "Second"]
    second.closed.clear()
    clock.advance(301)
    q.flush_unschedulable_leftover()
    assert order == ["First", "Second", "Second", "First"]
    assert names(q.pending()["active"]) == ["a"]


def test_a_pre_enqueue_plugin_that_raises_gates_the_pod() -> None:
    class Broken:
        name = "Broken"

        def pre_enqueue(self, pod: PodInfo) -> Status | None:
            raise RuntimeError("boom")

    q, _ = make_queue(pre_enqueue=[Broken()])
    q.add(pod_info("a", uid="uid-a"))
    record = q.get(pod_info("a", uid="uid-a"))
    assert record is not None and record.gating_plugin == "Broken"


def test_with_pop_from_backoff_pre_enqueue_runs_when_entering_backoff() -> None:
    gate = Gate()
    q, _ = make_queue(pre_enqueue=[gate], hints={"P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    gate.closed.add("a")
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)  # backing off -> PreEnqueue now
    assert names(q.pending()["unschedulable"]) == ["a"]
    record = q.get(pod_info("a", uid="uid-a"))
    assert record is not None and record.gating_plugin == "Gate"


def test_without_pop_from_backoff_pre_enqueue_runs_when_leaving_backoff() -> None:
    gate = Gate()
    q, clock = make_queue(pre_enqueue=[gate], hints={"P": register(NODE_ADD)}, pop_from_backoff=False)
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    gate.closed.add("a")
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert names(q.pending()["backoff"]) == ["a"]
    clock.set(q.next_wakeup() or 0.0)
    q.flush_backoff_completed()
    assert names(q.pending()["unschedulable"]) == ["a"]


def test_profiles_have_their_own_pre_enqueue_plugins() -> None:
    """Keyed by the profile a pod resolves to, not by schedulerName: a tenant profile's gate
    (team-a/gated, schedulerName crd-scheduler) holds team-a's pods only."""

    def profile_of(p: PodInfo) -> str:
        return "team-a/gated" if p.namespace == "team-a" else "home/default"

    q, _ = make_queue(profile_of=profile_of)
    q.set_profile("home/default", pre_enqueue=[], hints={})
    q.set_profile("team-a/gated", pre_enqueue=[Gate(closed={"a", "b"})], hints={})
    q.add(pod_info("a", uid="uid-a", namespace="team-a"))
    q.add(pod_info("b", uid="uid-b", namespace="team-b"))
    assert names(q.pending()["unschedulable"]) == ["a"]
    assert names(q.pending()["active"]) == ["b"]
    q.remove_profile("team-a/gated")
    q.add(pod_info("c", uid="uid-c", namespace="team-a"))
    assert sorted_names(q.pending()["active"]) == ["b", "c"]


def test_hints_are_those_of_the_profile_a_pod_resolves_to() -> None:
    """team-a's profile registers no NodeAdd hint for P: team-a's pod stays; team-b's moves."""

    def profile_of(p: PodInfo) -> str:
        return "team-a/quiet" if p.namespace == "team-a" else "home/default"

    q, _ = make_queue(profile_of=profile_of)
    q.set_profile("home/default", pre_enqueue=[], hints={"P": [ClusterEventWithHint(NODE_ADD)]})
    q.set_profile("team-a/quiet", pre_enqueue=[], hints={})
    q.add(pod_info("a", uid="uid-a", namespace="team-a"))
    q.add(pod_info("b", uid="uid-b", namespace="team-b"))
    pop_and_fail(q, "P")
    pop_and_fail(q, "P")
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert names(q.pending()["unschedulable"]) == ["a"]
