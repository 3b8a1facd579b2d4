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

from .helpers import resource_pod, st_node, st_pod, usage

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
            st_pod(CPU1, name="pod1"),
            st_pod(CPU1, name="pod2", node="fake"),
            None,
            QUEUE,
            id="queue-on-other-pod-deleted",
        ),
        pytest.param(st_pod(), st_pod(), None, SKIP, id="skip-queue-on-unscheduled-pod-deleted"),
        pytest.param(
            st_pod(CPU1, uid="uid0"),
            st_pod(CPU2, uid="uid1", nominated="fake"),
            None,
            QUEUE,
            id="queue-on-nominated-pod-deleted",
        ),
        pytest.param(
            st_pod(CPU1, uid="uid0"),
            st_pod(CPU2, uid="uid1"),
            st_pod(CPU1, uid="uid1"),
            SKIP,
            id="skip-queue-on-other-unscheduled-pod",
        ),
        pytest.param(
            st_pod(CPU1, uid="pod1"),
            st_pod({"memory": "2"}, uid="pod2", node="fake"),
            st_pod({"memory": "1"}, uid="pod2", node="fake"),
            SKIP,
            id="skip-queue-on-other-pod-unrelated-resource-scaled-down",
        ),
        pytest.param(
            st_pod(CPU1, uid="pod1"),
            st_pod(CPU2, uid="pod2", node="fake"),
            st_pod(CPU1, uid="pod2", node="fake"),
            QUEUE,
            id="queue-on-other-pod-some-resource-scale-down",
        ),
        pytest.param(
            st_pod(CPU1, uid="pod1"),
            st_pod(CPU2, uid="pod1"),
            st_pod(CPU1, uid="pod1"),
            QUEUE,
            id="queue-on-target-pod-some-resource-scale-down",
        ),
        pytest.param(
            st_pod({A: "1"}, uid="pod1"),
            st_pod({A: "2"}, uid="pod2", node="fake"),
            st_pod({A: "1"}, uid="pod2", node="fake"),
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
        is_schedulable_after_pod_event(PodInfo(st_pod()), old, new)


def capacity(**resources: str) -> dict[str, Any]:
    return st_node(capacity={k.replace("_", "-"): v for k, v in resources.items()})


def ext(node_capacity: dict[str, str]) -> dict[str, Any]:
    return st_node(capacity=node_capacity)


@pytest.mark.parametrize(
    ("pod", "old", "new", "want"),
    [
        pytest.param(
            resource_pod(usage(memory=2)),
            None,
            capacity(memory="1"),
            SKIP,
            id="skip-queue-on-node-add-without-sufficient-resources",
        ),
        pytest.param(
            resource_pod(usage(scalars={A: 1})),
            None,
            ext({B: "1"}),
            SKIP,
            id="skip-queue-on-node-add-without-required-resource-type",
        ),
        pytest.param(
            resource_pod(usage(memory=2, scalars={A: 1})),
            None,
            ext({"memory": "4", A: "2"}),
            QUEUE,
            id="queue-on-node-add-with-sufficient-resources",
        ),
        pytest.param(
            resource_pod(usage(memory=2, scalars={A: 1})),
            ext({"memory": "2", A: "2"}),
            ext({"memory": "2", A: "1", B: "2"}),
            SKIP,
            id="skip-queue-on-node-unrelated-changes",
        ),
        pytest.param(
            resource_pod(usage(memory=2, scalars={A: 1})),
            ext({"memory": "2", A: "1"}),
            ext({"memory": "2", A: "2"}),
            QUEUE,
            id="queue-on-pod-requested-resources-increase",
        ),
        pytest.param(
            resource_pod(usage(memory=2, scalars={A: 1})),
            ext({"memory": "4", A: "2"}),
            ext({"memory": "1", A: "2"}),
            SKIP,
            id="skip-queue-on-node-changes-from-suitable-to-unsuitable",
        ),
        pytest.param(
            resource_pod(usage(memory=2, scalars={A: 1})),
            ext({"memory": "1", A: "2"}),
            ext({"memory": "4", A: "2"}),
            QUEUE,
            id="queue-on-node-changes-from-unsuitable-to-suitable",
        ),
        pytest.param(st_pod(CPU2), None, ext({"cpu": "1"}), SKIP, id="TestIsFit: insufficient resource"),
        pytest.param(st_pod(CPU1), None, ext({"cpu": "2"}), QUEUE, id="TestIsFit: sufficient resource"),
        pytest.param(
            st_pod({B: "1"}), None, ext({"cpu": "2"}), SKIP, id="own: ignoredResources do not apply (upstream Fits)"
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
        pytest.param("not-a-node", st_node(capacity={}), id="backoff-wrong-old-object"),
    ],
)
def test_node_change_with_wrong_objects_raises(old: Any, new: Any) -> None:
    with pytest.raises(TypeError):
        is_schedulable_after_node_change(PodInfo(st_pod()), old, new)


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
    wanted = PodInfo(resource_pod(pod)).requests
    before, after = NodeInfo(st_node(capacity=old)).allocatable, NodeInfo(st_node(capacity=new)).allocatable
    assert _requested_resources_increased(wanted, before, after) is want
