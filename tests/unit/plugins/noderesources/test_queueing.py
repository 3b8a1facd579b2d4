"""NodeResourcesFit events and queueing hints, cases from upstream ``noderesources/fit_test.go``
(k8s.io/kubernetes v1.36.3: TestEventsToRegister, Test_isSchedulableAfterPodChange,
Test_isSchedulableAfterNodeChange, TestIsFit, TestHaveAnyRequestedResourcesIncreased), with
v1.36's default gates (in-place pod resize and queueing hints on)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import ActionType, ClusterEvent, EventResource, NodeInfo, PodInfo, QueueingHint
from scheduler_core.plugins.noderesources import NodeResourcesFit
from scheduler_core.plugins.noderesources.queueing import (
    _requested_resources_increased,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_event,
)
from tests.wrappers import make_node, make_pod

from .helpers import NOTHING, usage

A, B = "example.com/aaa", "example.com/bbb"
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def test_events_to_register() -> None:
    """ "Register events with InPlacePodVerticalScaling/SchedulingQueueHint enabled": pod delete or
    scale-down (assigned pods, and unscheduled ones such as nominated pods), node add or
    allocatable update."""
    events = NodeResourcesFit(None, None).events_to_register()
    assert [e.event for e in events] == [
        ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        ClusterEvent(EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
        ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
    ]
    assert [e.hint for e in events] == [
        is_schedulable_after_pod_event,
        is_schedulable_after_pod_event,
        is_schedulable_after_node_change,
    ]


CPU1, CPU2 = {"cpu": "1"}, {"cpu": "2"}


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            make_pod().name("pod1").req(CPU1).obj(),
            make_pod().name("pod2").req(CPU1).node("fake").obj(),
            None,
            QUEUE,
            id="queue-on-other-pod-deleted",
        ),
        pytest.param(
            make_pod().req(NOTHING).obj(),
            make_pod().req(NOTHING).obj(),
            None,
            SKIP,
            id="skip-queue-on-unscheduled-pod-deleted",
        ),
        pytest.param(
            make_pod().uid("uid0").req(CPU1).obj(),
            make_pod().uid("uid1").req(CPU2).nominated_node_name("fake").obj(),
            None,
            QUEUE,
            id="queue-on-nominated-pod-deleted",
        ),
        pytest.param(
            make_pod().uid("uid0").req(CPU1).obj(),
            make_pod().uid("uid1").req(CPU2).obj(),
            make_pod().uid("uid1").req(CPU1).obj(),
            SKIP,
            id="skip-queue-on-other-unscheduled-pod",
        ),
        pytest.param(
            make_pod().uid("pod1").req(CPU1).obj(),
            make_pod().uid("pod2").req({"memory": "2"}).node("fake").obj(),
            make_pod().uid("pod2").req({"memory": "1"}).node("fake").obj(),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-resource-scaled-down",
        ),
        pytest.param(
            make_pod().uid("pod1").req(CPU1).obj(),
            make_pod().uid("pod2").req(CPU2).node("fake").obj(),
            make_pod().uid("pod2").req(CPU1).node("fake").obj(),
            QUEUE,
            id="queue-on-other-pod-some-resource-scale-down",
        ),
        pytest.param(
            make_pod().uid("pod1").req(CPU1).obj(),
            make_pod().uid("pod1").req(CPU2).obj(),
            make_pod().uid("pod1").req(CPU1).obj(),
            QUEUE,
            id="queue-on-target-pod-some-resource-scale-down",
        ),
        pytest.param(
            make_pod().uid("pod1").req({A: "1"}).obj(),
            make_pod().uid("pod2").req({A: "2"}).node("fake").obj(),
            make_pod().uid("pod2").req({A: "1"}).node("fake").obj(),
            QUEUE,
            id="own: scalar resource scaled down",
        ),
    ],
)
def test_is_schedulable_after_pod_event(pod: dict[str, Any], old: Any, new: Any, want: QueueingHint) -> None:
    assert is_schedulable_after_pod_event(PodInfo(pod), old, new) is want
    # Parsed objects give the same answer as manifests.
    parsed_old = None if old is None else PodInfo(old)
    parsed_new = None if new is None else PodInfo(new)
    assert is_schedulable_after_pod_event(PodInfo(pod), parsed_old, parsed_new) is want


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param("not-a-pod", None, id="backoff-wrong-old-object"),
        pytest.param(None, "not-a-pod", id="backoff-wrong-new-object"),
    ],
)
def test_pod_event_with_wrong_objects_raises(old: Any, new: Any) -> None:
    """Upstream returns Queue with an error; the queue treats a raising hint as Queue."""
    with pytest.raises(TypeError):
        is_schedulable_after_pod_event(PodInfo(make_pod().req(NOTHING).obj()), old, new)


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            make_pod().req(usage(memory=2)).obj(),
            None,
            make_node().capacity_only(pods="32", memory="1").obj(),
            SKIP,
            id="skip-queue-on-node-add-without-sufficient-resources",
        ),
        pytest.param(
            make_pod().req(usage(scalars={A: 1})).obj(),
            None,
            make_node().capacity_only({B: "1"}, pods="32").obj(),
            SKIP,
            id="skip-queue-on-node-add-without-required-resource-type",
        ),
        pytest.param(
            make_pod().req(usage(memory=2, scalars={A: 1})).obj(),
            None,
            make_node().capacity_only({"memory": "4", A: "2"}, pods="32").obj(),
            QUEUE,
            id="queue-on-node-add-with-sufficient-resources",
        ),
        pytest.param(
            make_pod().req(usage(memory=2, scalars={A: 1})).obj(),
            make_node().capacity_only({"memory": "2", A: "2"}, pods="32").obj(),
            make_node().capacity_only({"memory": "2", A: "1", B: "2"}, pods="32").obj(),
            SKIP,
            id="skip-queue-on-node-unrelated-changes",
        ),
        pytest.param(
            make_pod().req(usage(memory=2, scalars={A: 1})).obj(),
            make_node().capacity_only({"memory": "2", A: "1"}, pods="32").obj(),
            make_node().capacity_only({"memory": "2", A: "2"}, pods="32").obj(),
            QUEUE,
            id="queue-on-pod-requested-resources-increase",
        ),
        pytest.param(
            make_pod().req(usage(memory=2, scalars={A: 1})).obj(),
            make_node().capacity_only({"memory": "4", A: "2"}, pods="32").obj(),
            make_node().capacity_only({"memory": "1", A: "2"}, pods="32").obj(),
            SKIP,
            id="skip-queue-on-node-changes-from-suitable-to-unsuitable",
        ),
        pytest.param(
            make_pod().req(usage(memory=2, scalars={A: 1})).obj(),
            make_node().capacity_only({"memory": "1", A: "2"}, pods="32").obj(),
            make_node().capacity_only({"memory": "4", A: "2"}, pods="32").obj(),
            QUEUE,
            id="queue-on-node-changes-from-unsuitable-to-suitable",
        ),
        pytest.param(
            make_pod().req(CPU2).obj(),
            None,
            make_node().capacity_only({"cpu": "1"}, pods="32").obj(),
            SKIP,
            id="TestIsFit: insufficient resource",
        ),
        pytest.param(
            make_pod().req(CPU1).obj(),
            None,
            make_node().capacity_only({"cpu": "2"}, pods="32").obj(),
            QUEUE,
            id="TestIsFit: sufficient resource",
        ),
        pytest.param(
            make_pod().req({B: "1"}).obj(),
            None,
            make_node().capacity_only({"cpu": "2"}, pods="32").obj(),
            SKIP,
            id="own: ignoredResources do not apply (upstream Fits)",
        ),
    ],
)
def test_is_schedulable_after_node_change(pod: dict[str, Any], old: Any, new: Any, want: QueueingHint) -> None:
    assert is_schedulable_after_node_change(PodInfo(pod), old, new) is want
    parsed_old = None if old is None else NodeInfo(old)
    assert is_schedulable_after_node_change(PodInfo(pod), parsed_old, NodeInfo(new)) is want


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(None, "not-a-node", id="backoff-wrong-new-object"),
        pytest.param("not-a-node", make_node().capacity_only({}, pods="32").obj(), id="backoff-wrong-old-object"),
    ],
)
def test_node_change_with_wrong_objects_raises(old: Any, new: Any) -> None:
    with pytest.raises(TypeError):
        is_schedulable_after_node_change(PodInfo(make_pod().req(NOTHING).obj()), old, new)


EPH = "ephemeral-storage"


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            usage(),
            {"pods": "1", "cpu": "1", "memory": "1", EPH: "1", A: "1"},
            {"pods": "1", "cpu": "2", "memory": "2", EPH: "2", A: "2"},
            False,
            id="no-requested-resources",
        ),
        pytest.param(
            usage(),
            {"pods": "1", "cpu": "1", "memory": "1", EPH: "1", A: "1"},
            {"pods": "2", "cpu": "1", "memory": "1", EPH: "1", A: "1"},
            True,
            id="no-requested-resources-pods-increased",
        ),
        pytest.param(
            usage(2, 2, 2, {A: 2}),
            {"cpu": "1", "memory": "2", EPH: "3"},
            {"cpu": "1", "memory": "2", EPH: "1"},
            False,
            id="scalar-resources-not-in-node",
        ),
        pytest.param(
            usage(2, 2, 2, {A: 2}),
            {"cpu": "1", "memory": "2", EPH: "3", A: "4"},
            {"cpu": "1", "memory": "2", EPH: "1", A: "1"},
            False,
            id="requested-resources-decreased",
        ),
        pytest.param(
            usage(2, 2, 2, {A: 2}),
            {"cpu": "1", "memory": "2", EPH: "3", A: "4"},
            {"cpu": "3", "memory": "4", EPH: "3", A: "4"},
            True,
            id="requested-resources-increased",
        ),
        pytest.param(
            usage(2, 2),
            {"cpu": "1", "memory": "2", EPH: "3", A: "4"},
            {"cpu": "1", "memory": "2", EPH: "1", A: "1"},
            False,
            id="non-requested-resources-decreased",
        ),
    ],
)
def test_requested_resources_increased(
    pod: dict[str, str], old: dict[str, str], new: dict[str, str], want: bool
) -> None:
    wanted = PodInfo(make_pod().req(pod).obj()).requests
    before, after = (
        NodeInfo(make_node().capacity_only(old, pods="32").obj()).allocatable,
        NodeInfo(make_node().capacity_only(new, pods="32").obj()).allocatable,
    )
    assert _requested_resources_increased(wanted, before, after) is want
