"""VolumeBinding's events, queueing hints (upstream volume_binding_test.go:
TestIsSchedulableAfterCSINodeChange, TestIsSchedulableAfterPersistentVolumeClaimChange,
TestIsSchedulableAfterStorageClassChange, TestIsSchedulableAfterCSIStorageCapacityChange,
TestIsSchedulableAfterCSIDriverChange) and args (apis/config/v1/defaults.go,
validation_pluginargs_test.go TestValidateVolumeBindingArgs)."""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic import ValidationError

from scheduler_core.framework import ActionType, EventResource, Handle, PodInfo, QueueingHint
from scheduler_core.plugins.volumebinding import VolumeBinding, VolumeBindingArgs
from scheduler_core.plugins.volumebinding.volume_binding import (
    is_schedulable_after_csi_driver_change,
    is_schedulable_after_csi_node_change,
    is_schedulable_after_csi_storage_capacity_change,
    is_schedulable_after_pvc_change,
    is_schedulable_after_storage_class_change,
)
from tests.unit.plugins.volumebinding.support import (
    StorageHandle,
    capacity,
    claim_volume,
    csi_driver,
    csi_node,
    pvc,
    storage_class,
)
from tests.wrappers import pod, pod_info

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP


def test_events() -> None:
    plugin = VolumeBinding(None, cast(Handle, StorageHandle()))
    registered = {(e.event.resource, e.event.action, e.hint is not None) for e in plugin.events_to_register()}
    add_update = ActionType.ADD | ActionType.UPDATE
    assert registered == {
        (EventResource.STORAGE_CLASS, add_update, True),
        (EventResource.PERSISTENT_VOLUME_CLAIM, add_update, True),
        (EventResource.PERSISTENT_VOLUME, add_update, False),
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL, False),
        (EventResource.CSI_NODE, add_update, True),
    }


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, csi_node("csinode-a"), QUEUE, id="CSINode is newly created"),
        pytest.param(
            csi_node("csinode-a", migrated="test1"),
            csi_node("csinode-a", migrated="test1, test2"),
            QUEUE,
            id="CSINode's migrated-plugins annotations is added",
        ),
        pytest.param(
            csi_node("csinode-a", migrated="test1"),
            csi_node("csinode-a", migrated="test2"),
            QUEUE,
            id="CSINode's migrated-plugins annotation is updated",
        ),
        pytest.param(
            csi_node("csinode-a", migrated="test1"),
            csi_node("csinode-a", {"d": 3}, migrated="test1"),
            SKIP,
            id="CSINode is updated but migrated-plugins annotation gets unchanged",
        ),
    ],
)
def test_csi_node_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    # TestIsSchedulableAfterCSINodeChange
    assert is_schedulable_after_csi_node_change(pod_info("pod-a", volumes=[]), old, new) is expected


@pytest.mark.parametrize(
    ("the_pod", "old", "new", "expected"),
    [
        pytest.param(
            PodInfo(pod("pod-a", volumes=[{"name": "e", "emptyDir": {}}])),
            pvc("pvc-b", "sc-a"),
            pvc("pvc-b", "sc-a"),
            SKIP,
            id="pod has no pvc or ephemeral volumes",
        ),
        pytest.param(
            pod_info("pod-a", namespace="ns-a", volumes=[claim_volume("pvc-a"), claim_volume("pvc-b")]),
            None,
            pvc("pvc-b"),
            SKIP,
            id="pvc with the same name as the one used by the pod in a different namespace is modified",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a"), claim_volume("pvc-c")]),
            pvc("pvc-b"),
            pvc("pvc-b"),
            SKIP,
            id="pod has no pvc that is being modified",
        ),
        pytest.param(
            pod_info(
                "pod-a", volumes=[{"name": "ephemeral-a", "ephemeral": {}}, {"name": "ephemeral-c", "ephemeral": {}}]
            ),
            pvc("pod-a-ephemeral-b"),
            pvc("pod-a-ephemeral-b"),
            SKIP,
            id="pod has no generic ephemeral volume that is being modified",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a"), claim_volume("pvc-b")]),
            pvc("pvc-b"),
            pvc("pvc-b"),
            QUEUE,
            id="pod has the pvc that is being modified",
        ),
        pytest.param(
            pod_info(
                "pod-a", volumes=[{"name": "ephemeral-a", "ephemeral": {}}, {"name": "ephemeral-b", "ephemeral": {}}]
            ),
            pvc("pod-a-ephemeral-b"),
            pvc("pod-a-ephemeral-b"),
            QUEUE,
            id="pod has the generic ephemeral volume that is being modified",
        ),
    ],
)
def test_pvc_hint(the_pod: PodInfo, old: Any, new: Any, expected: QueueingHint) -> None:
    # TestIsSchedulableAfterPersistentVolumeClaimChange
    assert is_schedulable_after_pvc_change(the_pod, old, new) is expected


TOPOLOGY = [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, storage_class("sc-a"), QUEUE, id="a new StorageClass"),
        pytest.param(
            storage_class("sc-a"),
            storage_class("sc-a", allowed_topologies=TOPOLOGY),
            QUEUE,
            id="When the AllowedTopologies are changed, it returns Queue",
        ),
        pytest.param(
            storage_class("sc-a"),
            storage_class("sc-a"),
            SKIP,
            id="When there are no changes to the StorageClass, it returns QueueSkip",
        ),
    ],
)
def test_storage_class_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    # TestIsSchedulableAfterStorageClassChange
    assert is_schedulable_after_storage_class_change(pod_info("pod-a", volumes=[]), old, new) is expected


def cap(capacity_str: str = "", max_size: str = "") -> dict[str, Any]:
    return capacity("cap", "sc", {"k": "v"}, capacity_str, max_size)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, cap("1Gi"), QUEUE, id="When a new CSIStorageCapacity is created, it returns Queue"),
        pytest.param(cap(), cap("1Gi"), QUEUE, id="When the volume limit is increase(Capacity set), it returns Queue"),
        pytest.param(
            cap(),
            cap(max_size="1Gi"),
            QUEUE,
            id="When the volume limit is increase(MaximumVolumeSize set), it returns Queue",
        ),
        pytest.param(
            cap("1Gi"), cap("2Gi"), QUEUE, id="When the volume limit is increase(Capacity increase), it returns Queue"
        ),
        pytest.param(
            cap("1Gi", "1Gi"),
            cap("2Gi"),
            QUEUE,
            id="When the volume limit is increase(MaximumVolumeSize unset), it returns Queue",
        ),
        pytest.param(
            cap("1Gi", "1Gi"),
            cap("1Gi", "2Gi"),
            QUEUE,
            id="When the volume limit is increase(MaximumVolumeSize increase), it returns Queue",
        ),
        pytest.param(
            cap("1Gi"), cap("1Gi"), SKIP, id="When there are no changes to the CSIStorageCapacity, it returns QueueSkip"
        ),
        pytest.param(
            cap("1Gi", "1Gi"),
            cap("1Gi"),
            SKIP,
            id="When the volume limit is equal(MaximumVolumeSize unset), it returns QueueSkip",
        ),
        pytest.param(
            cap("2Gi"), cap("1Gi"), SKIP, id="When the volume limit is decrease(Capacity), it returns QueueSkip"
        ),
        pytest.param(
            cap("1Gi", "2Gi"),
            cap("1Gi", "1Gi"),
            SKIP,
            id="When the volume limit is decrease(MaximumVolumeSize), it returns QueueSkip",
        ),
    ],
)
def test_csi_storage_capacity_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    # TestIsSchedulableAfterCSIStorageCapacityChange
    assert is_schedulable_after_csi_storage_capacity_change(pod_info("pod-a", volumes=[]), old, new) is expected


CSI_POD = PodInfo(pod("pod-a", volumes=[{"name": "v", "csi": {"driver": "test-driver"}}]))


@pytest.mark.parametrize(
    ("the_pod", "old", "new", "expected"),
    [
        pytest.param(
            PodInfo(pod("pod-a", volumes=[claim_volume("c")])),
            csi_driver("test-driver", True),
            csi_driver("test-driver", False),
            SKIP,
            id="pod has no CSIDriver",
        ),
        pytest.param(
            CSI_POD,
            csi_driver("test-driver", True),
            csi_driver("test-driver", False),
            QUEUE,
            id="CSIDriver.StorageCapacity is disabled",
        ),
        pytest.param(
            CSI_POD, csi_driver("test-driver", False), csi_driver("test-driver", True), SKIP, id="capacity enabled"
        ),
        pytest.param(
            CSI_POD, csi_driver("test-driver", True), csi_driver("test-driver", True), SKIP, id="nothing changed"
        ),
    ],
)
def test_csi_driver_hint(the_pod: PodInfo, old: Any, new: Any, expected: QueueingHint) -> None:
    # TestIsSchedulableAfterCSIDriverChange
    assert is_schedulable_after_csi_driver_change(the_pod, old, new) is expected


@pytest.mark.parametrize(
    "hint",
    [
        is_schedulable_after_csi_node_change,
        is_schedulable_after_pvc_change,
        is_schedulable_after_storage_class_change,
        is_schedulable_after_csi_storage_capacity_change,
        is_schedulable_after_csi_driver_change,
    ],
)
def test_hints_raise_on_unexpected_objects(hint: Any) -> None:
    # "unexpected objects are passed" / "type conversion error": an error queues the pod.
    with pytest.raises(TypeError):
        hint(pod_info("pod-a", volumes=[]), object(), object())


# -- args ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "timeout"),
    [
        pytest.param({}, 600, id="default bindTimeoutSeconds"),
        pytest.param({"bindTimeoutSeconds": None}, 600, id="null is the default"),
        pytest.param({"bindTimeoutSeconds": 0}, 0, id="zero: no waiting"),
        pytest.param({"bindTimeoutSeconds": 300}, 300, id="explicit"),
    ],
)
def test_args_defaults(raw: dict[str, Any], timeout: int) -> None:
    args = VolumeBindingArgs.model_validate(raw)
    assert args.bind_timeout_seconds == timeout
    assert args.shape is None
    assert VolumeBinding(args, cast(Handle, StorageHandle())).bind_timeout_seconds == timeout


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"bindTimeoutSeconds": -10},
            "bindTimeoutSeconds: Invalid value: -10: invalid BindTimeoutSeconds, should not be a negative value",
            id="TestValidateVolumeBindingArgs/negative value is invalid config",
        ),
        pytest.param(
            {"shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]},
            'shape: Invalid value: [{"Utilization":0,"Score":10},{"Utilization":100,"Score":0}]: '
            "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
            id="TestValidateVolumeBindingArgs/[StorageCapacityScoring=off] error if the shape is not nil",
        ),
        pytest.param(
            {"bindTimeoutSeconds": -1, "shape": []},
            "[bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value, "
            "shape: Invalid value: []: unexpected field `shape`, remove it or turn on the feature gate "
            "StorageCapacityScoring]",
            id="several errors are aggregated",
        ),
    ],
)
def test_args_validation(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        VolumeBindingArgs.model_validate(raw)
    (error,) = info.value.errors()
    assert error["msg"] == f"Value error, {message}"


def test_args_reject_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        VolumeBindingArgs.model_validate({"bindTimeout": 3})
