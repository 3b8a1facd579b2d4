"""Update, Delete and Activate (upstream scheduling_queue.go Update, Delete, Activate;
framework/events.go PodSchedulingPropertiesChange)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler_core.framework import NODE_ADD, ActionType, ClusterEvent, EventResource, PodInfo
from scheduler_core.queue import SchedulingQueue
from scheduler_core.queue.pod_events import pod_scheduling_properties_change
from tests.wrappers import pod_info

from .support import make_queue, names, pop_and_fail, register


def _into_active(q: SchedulingQueue) -> None:
    q.add(pod_info("a", uid="uid-a"))


def _into_backoff(q: SchedulingQueue) -> None:
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q)  # Error -> backoffQ


def _into_unschedulable(q: SchedulingQueue) -> None:
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")


PLACES: list[object] = [
    pytest.param(_into_active, "active", id="active"),
    pytest.param(_into_backoff, "backoff", id="backoff"),
    pytest.param(_into_unschedulable, "unschedulable", id="unschedulable"),
]


@pytest.mark.parametrize(("place", "queue"), PLACES)
def test_delete_removes_the_pod_from_any_sub_queue(place: Callable[[SchedulingQueue], None], queue: str) -> None:
    q, _ = make_queue()
    place(q)
    assert names(q.pending()[queue]) == ["a"]
    q.delete(pod_info("a", uid="uid-a"))
    assert len(q) == 0
    assert q.get(pod_info("a", uid="uid-a")) is None


@pytest.mark.parametrize(("place", "queue"), PLACES)
def test_delete_of_an_old_uid_keeps_the_pod_re_created_under_its_name(
    place: Callable[[SchedulingQueue], None], queue: str
) -> None:
    """A pod deleted and re-created under the same name, whose new pod the informer (keyed by
    UID) announces before the old one's delete (a re-list): the delete keeps the new pod."""
    q, _ = make_queue()
    place(q)  # the new pod "a" (uid-a) waits in ``queue``
    q.delete(pod_info("a", uid="old-a"))
    assert names(q.pending()[queue]) == ["a"]
    found = q.get(pod_info("a", uid="uid-a"))
    assert found is not None and found.pod_info.uid == "uid-a"
    assert q.get(pod_info("a", uid="old-a")) is None


@pytest.mark.parametrize(("place", "queue"), PLACES[:2])
def test_update_in_active_or_backoff_replaces_the_pod_in_place(
    place: Callable[[SchedulingQueue], None], queue: str
) -> None:
    q, _ = make_queue()
    place(q)
    before = q.get(pod_info("a", uid="uid-a"))
    assert before is not None
    q.update(pod_info("a", uid="uid-a"), pod_info("a", uid="uid-a", labels={"v": "2"}))
    after = q.get(pod_info("a", uid="uid-a"))
    assert after is before
    assert after.pod.labels == {"v": "2"}
    assert names(q.pending()[queue]) == ["a"]


def test_update_in_active_reorders_by_the_new_priority() -> None:
    q, clock = make_queue()
    q.add(pod_info("a", uid="uid-a", priority=1))
    clock.advance(1)
    q.add(pod_info("b", uid="uid-b", priority=5))
    q.update(pod_info("a", uid="uid-a", priority=1), pod_info("a", uid="uid-a", priority=10))
    head = q.pop()
    assert head is not None and head.pod.name == "a"


@pytest.mark.parametrize(
    ("registered", "new_pod", "expected_queue"),
    [
        pytest.param(
            ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL),
            pod_info("a", uid="uid-a", labels={"x": "1"}),
            "backoff",
            id="label-update-hinted",
        ),
        pytest.param(
            ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL),
            pod_info("a", uid="uid-a", tolerations=[{"key": "k", "operator": "Exists"}]),
            "unschedulable",
            id="toleration-update-not-registered",
        ),
        pytest.param(
            ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS),
            pod_info("a", uid="uid-a", tolerations=[{"key": "k", "operator": "Exists"}]),
            "backoff",
            id="toleration-update-hinted",
        ),
        pytest.param(
            ClusterEvent(EventResource.POD, ActionType.UPDATE),
            pod_info("a", uid="uid-a", cpu="50m"),
            "backoff",
            id="scale-down-matches-general-update",
        ),
        pytest.param(
            NODE_ADD, pod_info("a", uid="uid-a", labels={"x": "1"}), "unschedulable", id="node-event-irrelevant"
        ),
    ],
)
def test_update_of_an_unschedulable_pod_asks_the_hints(
    registered: ClusterEvent, new_pod: PodInfo, expected_queue: str
) -> None:
    q, _ = make_queue(hints={"P": register(registered)})
    q.add(pod_info("a", uid="uid-a", cpu="100m"))
    pop_and_fail(q, "P")
    q.update(pod_info("a", uid="uid-a", cpu="100m"), new_pod)
    assert names(q.pending()[expected_queue]) == ["a"]
    record = q.get(new_pod)
    assert record is not None and record.pod is new_pod


def test_update_of_an_unknown_pod_adds_it() -> None:
    q, _ = make_queue()
    q.update(pod_info("a", uid="uid-a"), pod_info("a", uid="uid-a", labels={"x": "1"}))
    assert names(q.pending()["active"]) == ["a"]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(
            pod_info("a", uid="uid-a"), pod_info("a", uid="uid-a"), [ActionType.UPDATE], id="nothing-relevant"
        ),
        pytest.param(
            pod_info("a", uid="uid-a"),
            pod_info("a", uid="uid-a", labels={"k": "v"}),
            [ActionType.UPDATE_POD_LABEL],
            id="labels",
        ),
        pytest.param(
            pod_info("a", uid="uid-a", cpu="1"),
            pod_info("a", uid="uid-a", cpu="500m"),
            [ActionType.UPDATE_POD_SCALE_DOWN],
            id="scale-down",
        ),
        pytest.param(
            pod_info("a", uid="uid-a", cpu="1"),
            pod_info("a", uid="uid-a"),
            [ActionType.UPDATE_POD_SCALE_DOWN],
            id="request-removed",
        ),
        pytest.param(
            pod_info("a", uid="uid-a", cpu="500m"),
            pod_info("a", uid="uid-a", cpu="1"),
            [ActionType.UPDATE],
            id="scale-up-is-plain",
        ),
        pytest.param(
            pod_info("a", uid="uid-a", schedulingGates=[{"name": "g"}]),
            pod_info("a", uid="uid-a"),
            [ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED],
            id="gates-eliminated",
        ),
        pytest.param(
            pod_info("a", uid="uid-a", schedulingGates=[{"name": "g"}, {"name": "h"}]),
            pod_info("a", uid="uid-a", schedulingGates=[{"name": "g"}]),
            [ActionType.UPDATE],
            id="one-gate-left",
        ),
        pytest.param(
            pod_info("a", uid="uid-a"),
            pod_info("a", uid="uid-a", labels={"k": "v"}, tolerations=[{"operator": "Exists"}]),
            [ActionType.UPDATE_POD_LABEL, ActionType.UPDATE_POD_TOLERATIONS],
            id="labels-and-tolerations",
        ),
    ],
)
def test_pod_scheduling_properties_change(old: PodInfo, new: PodInfo, expected: list[ActionType]) -> None:
    events = pod_scheduling_properties_change(new, old)
    assert [e.action for e in events] == expected
    assert {e.resource for e in events} == {EventResource.POD}


def test_an_assigned_pod_update_raises_assigned_pod_events() -> None:
    events = pod_scheduling_properties_change(
        pod_info("a", uid="uid-a", node_name="n1", labels={"k": "v"}), pod_info("a", uid="uid-a", node_name="n1")
    )
    assert [(e.resource, e.action) for e in events] == [(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL)]
    assert [str(e) for e in events] == ["AssignedPodUpdatePodLabel"]


@pytest.mark.parametrize(
    ("new", "labels"),
    [
        pytest.param(pod_info("a", uid="uid-a", labels={"k": "v"}), ["UnschedulablePodUpdatePodLabel"], id="label"),
        pytest.param(pod_info("a", uid="uid-a", annotations={"k": "v"}), ["UnschedulablePodUpdate"], id="other"),
        pytest.param(pod_info("a", uid="uid-a", node_name="n1"), ["AssignedPodUpdate"], id="assigned"),
    ],
)
def test_pod_update_events_carry_upstreams_labels(new: PodInfo, labels: list[str]) -> None:
    """The label the queue's incoming-pods metric and the hint metrics show: upstream
    ``ClusterEvent.Label()`` is the resource (``UnschedulablePod`` or ``AssignedPod``,
    pkg/scheduler/framework/types.go) then ``ActionType.String()`` (kube-scheduler/framework
    types.go), v1.36.3."""
    assert [str(e) for e in pod_scheduling_properties_change(new, pod_info("a", uid="uid-a"))] == labels


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL), "NodeUpdateNodeLabel"),
        (ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATIONS), "PodUpdatePodToleration"),
        (
            ClusterEvent(EventResource.RESOURCE_CLAIM, ActionType.ADD | ActionType.UPDATE),
            "resource.k8s.io/ResourceClaim",
        ),
        (ClusterEvent(EventResource.WILDCARD, ActionType.ALL), "*All"),
    ],
)
def test_an_unlabelled_event_prints_as_upstream_label_does(event: ClusterEvent, label: str) -> None:
    """``fmt.Sprintf("%v%v", resource, actionType)``: an unnamed combination prints as ""."""
    assert str(event) == label


@pytest.mark.parametrize(("place", "queue"), PLACES[1:])
def test_activate_moves_from_backoff_or_unschedulable_to_active(
    place: Callable[[SchedulingQueue], None], queue: str
) -> None:
    q, _ = make_queue()
    place(q)
    q.activate([pod_info("a", uid="uid-a")])
    assert names(q.pending()["active"]) == ["a"]


def test_activate_ignores_unknown_pods() -> None:
    q, _ = make_queue()
    q.activate([pod_info("ghost", uid="uid-ghost")])
    assert len(q) == 0


@pytest.mark.parametrize(("place", "queue"), PLACES)
def test_contains_sees_every_sub_queue(place: Callable[[SchedulingQueue], None], queue: str) -> None:
    q, _ = make_queue()
    assert not q.contains(pod_info("a", uid="uid-a"))
    place(q)
    assert q.contains(pod_info("a", uid="uid-a"))


def test_contains_sees_pods_in_flight_until_done() -> None:
    q, _ = make_queue()
    q.add(pod_info("a", uid="uid-a"))
    qpi = q.pop()
    assert qpi is not None and q.contains(pod_info("a", uid="uid-a"))
    q.done(qpi.pod.uid)
    assert not q.contains(pod_info("a", uid="uid-a"))
