"""NodeResourcesFit with extended resources backed by DRA (``DRAExtendedResource``, beta, on):
a resource a DeviceClass maps is left to DynamicResources on a node that does not advertise
it. Cases from upstream ``noderesources/fit_test.go`` (k8s.io/kubernetes v1.36.3:
TestEnoughRequests' DRA cases, Test_isSchedulableAfterDeviceClassChange,
Test_haveAnyRequestedResourcesIncreased' ``requested-resources-dra-*``, TestEventsToRegister).
Every Filter case also checks that filter_batch agrees."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler_core.framework import (
    ActionType,
    Code,
    CycleState,
    EventResource,
    NodeColumns,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Status,
)
from scheduler_core.framework.extended_resources import DeviceClassResolver
from scheduler_core.plugins.noderesources import NodeResourcesFit, NodeResourcesFitArgs
from scheduler_core.plugins.noderesources.queueing import (
    is_schedulable_after_device_class_event,
    is_schedulable_after_node_change,
)
from scheduler_core.runtime.handle import FrameworkHandle
from tests.wrappers import make_node, make_pod

GPU = "example.com/gpu"
PLUGIN_GPU = "example.com/aaa"  # no DeviceClass maps it: a device plugin's


def device_class(name: str, extended: str | None = None, created: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if created:
        meta["creationTimestamp"] = created
    return {"metadata": meta, "spec": {"extendedResourceName": extended} if extended else {}}


GPU_CLASS = device_class("gpu.example.com", GPU)


def fit(*classes: Mapping[str, Any], args: Mapping[str, Any] | None = None) -> NodeResourcesFit:
    found = list(classes)
    handle = FrameworkHandle(
        "p",
        snapshot=lambda: None,  # type: ignore[arg-type, return-value]
        api=None,  # type: ignore[arg-type]
        objects=lambda kind: found if kind == "DeviceClass" else (),
    )
    return NodeResourcesFit(NodeResourcesFitArgs.model_validate(args or {}), handle)


def run_filter(plugin: NodeResourcesFit, pod: Mapping[str, Any], info: NodeInfo) -> Status | None:
    state, pod_info = CycleState(), PodInfo(pod)
    assert plugin.pre_filter(state, pod_info, [info]) == (None, None)
    status = plugin.filter(state, pod_info, info)
    batch = plugin.filter_batch(state, pod_info, NodeColumns([info]))
    assert batch is not None and batch.tolist() == [status is None]
    return status


def insufficient(resource: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"Insufficient {resource}")


@pytest.mark.parametrize(
    ("classes", "pod", "allocatable", "want"),
    [
        pytest.param(
            [GPU_CLASS],
            make_pod().req({"cpu": "1m", "memory": "1", GPU: "1"}).obj(),
            {"cpu": "1", "memory": "1Gi"},
            None,
            id="extended-resource-backed-by-DRA",
        ),
        pytest.param(
            [],
            make_pod().req({"cpu": "1m", "memory": "1", GPU: "1"}).obj(),
            {"cpu": "1", "memory": "1Gi"},
            insufficient(GPU),
            id="extended-resource-NOT-backed-by-DRA",
        ),
        pytest.param(
            [GPU_CLASS],
            make_pod().req({GPU: "1"}).obj(),
            {GPU: "0"},
            None,
            id="extended-resource-backed-by-DRA-zero-allocatable",
        ),
        pytest.param(
            [GPU_CLASS],
            make_pod().req({GPU: "2"}).obj(),
            {GPU: "1"},
            insufficient(GPU),
            id="node-advertises-it-a-device-plugin-serves-it",
        ),
        pytest.param([GPU_CLASS], make_pod().req({GPU: "1"}).obj(), {GPU: "1"}, None, id="node-advertises-enough"),
        pytest.param(
            [device_class("gpu.example.com")],
            make_pod().req({"deviceclass.resource.kubernetes.io/gpu.example.com": "1"}).obj(),
            {},
            None,
            id="implicit-extended-resource-name",
        ),
        pytest.param(
            [device_class("other")],
            make_pod().req({"deviceclass.resource.kubernetes.io/gpu.example.com": "1"}).obj(),
            {},
            insufficient("deviceclass.resource.kubernetes.io/gpu.example.com"),
            id="implicit-name-of-a-class-that-does-not-exist",
        ),
        pytest.param(
            [GPU_CLASS],
            make_pod().req({GPU: "1", PLUGIN_GPU: "1"}).obj(),
            {},
            insufficient(PLUGIN_GPU),
            id="one-backed-by-DRA-one-not",
        ),
    ],
)
def test_filter_leaves_dra_backed_resources_to_dynamic_resources(
    classes: list[dict[str, Any]], pod: dict[str, Any], allocatable: dict[str, str], want: Status | None
) -> None:
    assert run_filter(fit(*classes), pod, make_node().name("n").capacity_only(allocatable, pods="10").info()) == want


def test_dra_backed_resource_requested_by_pods_on_the_node_does_not_count() -> None:
    """Pods placed with DRA-backed devices add to the node's requested amount, which Fit never
    compares with an allocatable of zero."""
    placed = make_pod().req({GPU: "4"}).node("n").obj()
    assert (
        run_filter(
            fit(GPU_CLASS),
            make_pod().req({GPU: "1"}).obj(),
            make_node().name("n").capacity_only({}, pods="10").info(PodInfo(placed)),
        )
        is None
    )


def test_without_a_handle_nothing_is_delegated() -> None:
    plugin = NodeResourcesFit(NodeResourcesFitArgs(), None)
    assert run_filter(
        plugin, make_pod().req({GPU: "1"}).obj(), make_node().name("n").capacity_only({}, pods="10").info()
    ) == insufficient(GPU)


def test_ignored_resources_are_dropped_before_the_device_classes_are_read() -> None:
    reads: list[str] = []
    handle = FrameworkHandle(
        "p",
        snapshot=lambda: None,  # type: ignore[arg-type, return-value]
        api=None,  # type: ignore[arg-type]
        objects=lambda kind: reads.append(kind) or [],  # type: ignore[func-returns-value]
    )
    plugin = NodeResourcesFit(NodeResourcesFitArgs.model_validate({"ignoredResources": [GPU]}), handle)
    assert (
        run_filter(
            plugin,
            make_pod().req({"cpu": "1m", GPU: "1"}).obj(),
            make_node().name("n").capacity_only({"cpu": "1"}, pods="10").info(),
        )
        is None
    )
    assert reads == []


def test_events_add_device_classes_when_they_can_be_read() -> None:
    with_classes = [e.event for e in fit(GPU_CLASS).events_to_register()]
    without = [e.event for e in NodeResourcesFit(NodeResourcesFitArgs(), None).events_to_register()]
    assert with_classes[:-1] == without
    assert with_classes[-1].resource == EventResource.DEVICE_CLASS
    assert with_classes[-1].action == ActionType.ADD | ActionType.UPDATE


@pytest.mark.parametrize(
    ("requests", "old", "new", "want"),
    [
        pytest.param(
            {GPU: "1"},
            None,
            device_class("c", GPU),
            QueueingHint.QUEUE,
            id="queue-on-class-add-with-extended-resource-name",
        ),
        pytest.param(
            {GPU: "1"},
            device_class("c"),
            device_class("c", GPU),
            QueueingHint.QUEUE,
            id="queue-on-class-update-with-extended-resource-name",
        ),
        pytest.param(
            {GPU: "1"},
            device_class("c", GPU),
            device_class("c", GPU),
            QueueingHint.SKIP,
            id="skip-queue-on-class-same-extended-resource-name",
        ),
        pytest.param(
            {GPU: "1"},
            None,
            device_class("c"),
            QueueingHint.SKIP,
            id="skip-queue-on-class-nil-extended-resource-name-pointer",
        ),
        pytest.param(
            {"deviceclass.resource.kubernetes.io/c": "1"},
            None,
            device_class("c"),
            QueueingHint.QUEUE,
            id="queue-on-class-add-with-implicit-extended-resource-name",
        ),
        pytest.param(
            {"deviceclass.resource.kubernetes.io/d": "1"},
            None,
            device_class("c"),
            QueueingHint.SKIP,
            id="skip-on-class-add-with-implicit-extended-resource-name-not-matching",
        ),
        pytest.param(
            {GPU: "1"},
            None,
            device_class("c", "example.com/gpu1"),
            QueueingHint.SKIP,
            id="skip-on-class-add-with-explicit-extended-resource-name-not-matching",
        ),
        pytest.param(
            {"deviceclass.resource.kubernetes.io/c": "1"},
            device_class("c", GPU),
            device_class("c", "example.com/gpu1"),
            QueueingHint.SKIP,
            id="skip-on-class-update-with-implicit-extended-resource-name",
        ),
    ],
)
def test_is_schedulable_after_device_class_event(
    requests: dict[str, str], old: dict[str, Any] | None, new: dict[str, Any], want: QueueingHint
) -> None:
    assert is_schedulable_after_device_class_event(PodInfo(make_pod().req(requests).obj()), old, new) == want


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        pytest.param({GPU: "1"}, {GPU: "2"}, QueueingHint.QUEUE, id="requested-resources-dra-in-node"),
        pytest.param(
            {"cpu": "1"}, {"cpu": "1", "memory": "1Gi"}, QueueingHint.QUEUE, id="requested-resources-dra-not-in-node"
        ),
        pytest.param({GPU: "1"}, {GPU: "0"}, QueueingHint.QUEUE, id="requested-resources-dra-zero-capacity"),
    ],
)
def test_node_change_of_a_pod_with_a_dra_backed_resource(
    old: dict[str, str], new: dict[str, str], want: QueueingHint
) -> None:
    """A node that does not advertise the resource fits it through DRA (``isFit`` and
    ``haveAnyRequestedResourcesIncreased`` with ``shouldDelegateResourceToDRA``)."""
    classes = DeviceClassResolver([GPU_CLASS])
    pod = PodInfo(make_pod().req({GPU: "1"}).obj())
    assert (
        is_schedulable_after_node_change(
            pod,
            make_node().name("n").capacity_only(old, pods="10").obj(),
            make_node().name("n").capacity_only(new, pods="10").obj(),
            lambda: classes,
        )
        == want
    )
    assert (
        is_schedulable_after_node_change(
            pod, None, make_node().name("n").capacity_only({}, pods="10").obj(), lambda: classes
        )
        == QueueingHint.QUEUE
    )
    assert (
        is_schedulable_after_node_change(pod, None, make_node().name("n").capacity_only({}, pods="10").obj())
        == QueueingHint.SKIP
    )


@pytest.mark.parametrize(
    ("classes", "want"),
    [
        pytest.param(
            [device_class("old", GPU, "2026-01-01T00:00:00Z"), device_class("new", GPU, "2026-02-01T00:00:00Z")],
            "new",
            id="the-newer-class-wins",
        ),
        pytest.param(
            [device_class("b", GPU, "2026-01-01T00:00:00Z"), device_class("a", GPU, "2026-01-01T00:00:00Z")],
            "a",
            id="same-time-the-lower-name-wins",
        ),
    ],
)
def test_two_classes_naming_the_same_resource(classes: list[dict[str, Any]], want: str) -> None:
    """``extendedresourcecache.updateResourceName2class``."""
    found = DeviceClassResolver(classes).get(GPU)
    assert found is not None and found["metadata"]["name"] == want
    assert DeviceClassResolver(reversed(classes)).get(GPU) == found


def test_the_device_classes_are_read_again_only_when_the_store_says_they_changed() -> None:
    """Upstream's resolver is the extended resource cache, kept by DeviceClass events; ours is
    built from the stored classes, once per change of the store's ``objects_version`` (a backend
    that cannot say, None, is read every cycle). Building it per cycle cost 21 % of the
    scheduling cycle with 500 classes (bench/README.md, sixteenth pass)."""
    classes: list[dict[str, Any]] = []
    version: list[int | None] = [1]
    reads: list[str] = []

    def objects(kind: str) -> list[dict[str, Any]]:
        reads.append(kind)
        return list(classes) if kind == "DeviceClass" else []

    handle = FrameworkHandle(
        "p",
        snapshot=lambda: None,  # type: ignore[arg-type, return-value]
        api=None,  # type: ignore[arg-type]
        objects=objects,
        objects_version=lambda kind: version[0] if kind == "DeviceClass" else None,
    )
    plugin = NodeResourcesFit(NodeResourcesFitArgs(), handle)
    pod = make_pod().req({GPU: "1"}).obj()
    node = make_node().name("n").capacity_only({}, pods="10").info()
    assert run_filter(plugin, pod, node) == insufficient(GPU)
    assert run_filter(plugin, pod, node) == insufficient(GPU)
    assert reads == ["DeviceClass"]  # one read while the version stays

    classes.append(GPU_CLASS)
    version[0] = 2
    assert run_filter(plugin, pod, node) is None  # left to DynamicResources
    assert reads == ["DeviceClass"] * 2

    version[0] = None  # a backend that cannot count: read every cycle
    classes.clear()
    assert run_filter(plugin, pod, node) == insufficient(GPU)
    assert run_filter(plugin, pod, node) == insufficient(GPU)
    assert reads == ["DeviceClass"] * 4
