"""VolumeRestrictions, as upstream ``volumerestrictions/volume_restrictions_test.go``
(TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts,
TestAccessModeConflicts, Test_isSchedulableAfterPodDeleted,
Test_isSchedulableAfterPersistentVolumeClaimChange) and the AddPod/RemovePod extensions."""

from __future__ import annotations

from typing import Any, cast

import pytest

from scheduler_core.framework import (
    ActionType,
    Code,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Status,
)
from scheduler_core.plugins.volumerestrictions import VolumeRestrictions
from scheduler_core.plugins.volumerestrictions.volume_restrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT,
)
from tests.unit.plugins.volumebinding.support import StorageHandle, claim_volume, pvc
from tests.wrappers import make_node, pod, pod_info

DISK_CONFLICT = Status.unschedulable(ERR_REASON_DISK_CONFLICT)
RWOP_CONFLICT = Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
SKIP = Status.skip()

GCE_FOO = {"name": "v", "gcePersistentDisk": {"pdName": "foo"}}
GCE_BAR = {"name": "v", "gcePersistentDisk": {"pdName": "bar"}}
AWS_FOO = {"name": "v", "awsElasticBlockStore": {"volumeID": "foo"}}
AWS_BAR = {"name": "v", "awsElasticBlockStore": {"volumeID": "bar"}}
RBD_AB = {"name": "v", "rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD_CD = {"name": "v", "rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI_1 = {"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01"}}
ISCSI_2 = {"name": "v", "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01"}}
NO_RESTRICTION = {"name": "volume with no restriction", "emptyDir": {}}


def run(
    the_pod: PodInfo, node_info: NodeInfo, objects: list[dict[str, Any]] | None = None
) -> tuple[Status | None, Status | None]:
    handle = StorageHandle(objects or [], [node_info])
    plugin = VolumeRestrictions(None, cast(Handle, handle))
    state = CycleState()
    _, pre_filter = plugin.pre_filter(state, the_pod, [node_info])
    if pre_filter is not None:
        return pre_filter, None
    return None, plugin.filter(state, the_pod, node_info)


def disk_cases(kind: str, same: dict[str, Any], other: dict[str, Any]) -> list[Any]:
    return [
        pytest.param(
            pod_info(), make_node().name("node-1").info(), (SKIP, None), id=f"Test{kind}DiskConflicts/nothing"
        ),
        pytest.param(
            pod_info(),
            make_node().name("node-1").info(pod_info(volumes=[same])),
            (SKIP, None),
            id=f"Test{kind}DiskConflicts/one state",
        ),
        pytest.param(
            pod_info(volumes=[same]),
            make_node().name("node-1").info(pod_info(volumes=[same])),
            (None, DISK_CONFLICT),
            id=f"Test{kind}DiskConflicts/same state",
        ),
        pytest.param(
            pod_info(volumes=[other]),
            make_node().name("node-1").info(pod_info(volumes=[same])),
            (None, None),
            id=f"Test{kind}DiskConflicts/different state",
        ),
    ]


@pytest.mark.parametrize(
    ("the_pod", "node_info", "want"),
    [
        *disk_cases("GCE", GCE_FOO, GCE_BAR),
        pytest.param(
            pod_info(volumes=[NO_RESTRICTION]),
            make_node().name("node-1").info(),
            (SKIP, None),
            id="TestGCEDiskConflicts/pod with a volume that doesn't have restrictions",
        ),
        *disk_cases("AWS", AWS_FOO, AWS_BAR),
        *disk_cases("RBD", RBD_AB, RBD_CD),
        *disk_cases("ISCSI", ISCSI_1, ISCSI_2),
        pytest.param(
            pod_info(volumes=[{"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}]),
            make_node()
            .name("node-1")
            .info(pod_info(volumes=[{"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}])),
            (None, None),
            id="GCE PD read-only everywhere",
        ),
        pytest.param(
            pod_info(volumes=[{"name": "v", "awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}]),
            make_node()
            .name("node-1")
            .info(pod_info(volumes=[{"name": "v", "awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}])),
            (None, DISK_CONFLICT),
            id="AWS EBS conflicts even read-only",
        ),
        pytest.param(
            pod_info(volumes=[{"name": "v", "rbd": {"monitors": ["b", "x"], "image": "bar"}}]),
            make_node()
            .name("node-1")
            .info(pod_info(volumes=[{"name": "v", "rbd": {"monitors": ["a", "b"], "pool": "rbd", "image": "bar"}}])),
            (None, DISK_CONFLICT),
            id="RBD: one shared monitor, the defaulted pool",
        ),
    ],
)
def test_disk_conflicts(the_pod: PodInfo, node_info: NodeInfo, want: tuple[Status | None, Status | None]) -> None:
    assert run(the_pod, node_info) == want


RWOP_1 = pvc("claim-with-rwop-1", access_modes=["ReadWriteOncePod"])
RWOP_2 = pvc("claim-with-rwop-2", access_modes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", access_modes=["ReadWriteMany"])


POD_WITH_ONE_PVC = pod_info("pod-with-one-pvc", volumes=[claim_volume("claim-with-rwop-1")], node_name="node-1")
POD_WITH_TWO_PVCS = pod_info(
    "pod-with-two-pvcs",
    volumes=[claim_volume("claim-with-rwop-1"), claim_volume("claim-with-rwop-2")],
    node_name="node-1",
)
POD_WITH_RWX = pod_info("pod-with-rwx", volumes=[claim_volume("claim-with-rwx")], node_name="node-1")


@pytest.mark.parametrize(
    ("the_pod", "existing", "objects", "want"),
    [
        pytest.param(pod_info(), [], [], (SKIP, None), id="TestAccessModeConflicts/nothing"),
        pytest.param(
            POD_WITH_ONE_PVC,
            [],
            [],
            (Status.unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found'), None),
            id="TestAccessModeConflicts/failed to get PVC",
        ),
        pytest.param(
            POD_WITH_ONE_PVC,
            [POD_WITH_RWX],
            [RWOP_1, RWX],
            (SKIP, None),
            id="TestAccessModeConflicts/no access mode conflict",
        ),
        pytest.param(
            pod_info("pod-with-one-conflict", volumes=[claim_volume("claim-with-rwop-1")], node_name="node-1"),
            [POD_WITH_ONE_PVC, POD_WITH_RWX],
            [RWOP_1, RWX],
            (None, RWOP_CONFLICT),
            id="TestAccessModeConflicts/access mode conflict, unschedulable",
        ),
        pytest.param(
            pod_info(
                "pod-with-two-conflicts",
                volumes=[claim_volume("claim-with-rwop-1"), claim_volume("claim-with-rwop-2")],
                node_name="node-1",
            ),
            [POD_WITH_TWO_PVCS, POD_WITH_RWX],
            [RWOP_1, RWOP_2, RWX],
            (None, RWOP_CONFLICT),
            id="TestAccessModeConflicts/two conflicts, unschedulable",
        ),
        pytest.param(
            pod_info("other-ns", namespace="other", volumes=[claim_volume("claim-with-rwop-1")], node_name="node-1"),
            [POD_WITH_ONE_PVC],
            [RWOP_1, pvc("claim-with-rwop-1", namespace="other", access_modes=["ReadWriteOncePod"])],
            (SKIP, None),
            id="a claim of the same name in another namespace is another claim",
        ),
    ],
)
def test_access_mode_conflicts(
    the_pod: PodInfo,
    existing: list[PodInfo],
    objects: list[dict[str, Any]],
    want: tuple[Status | None, Status | None],
) -> None:
    assert run(the_pod, make_node().name("node-1").info(*existing), objects) == want


def test_rwop_conflict_applies_to_every_node() -> None:
    user_node, other_node = make_node().name("node-1").info(POD_WITH_ONE_PVC), make_node().name("node-2").info()
    handle = StorageHandle([RWOP_1], [user_node, other_node])
    plugin = VolumeRestrictions(None, cast(Handle, handle))
    state = CycleState()
    the_pod = pod_info("new", volumes=[claim_volume("claim-with-rwop-1")])
    assert plugin.pre_filter(state, the_pod, [user_node, other_node]) == (None, None)
    assert plugin.filter(state, the_pod, other_node) == RWOP_CONFLICT


def test_add_and_remove_pod_track_rwop_users() -> None:
    user_node = make_node().name("node-1").info(POD_WITH_ONE_PVC)
    plugin = VolumeRestrictions(None, cast(Handle, StorageHandle([RWOP_1], [user_node])))
    state = CycleState()
    the_pod = pod_info("new", volumes=[claim_volume("claim-with-rwop-1")])
    assert plugin.pre_filter(state, the_pod, [user_node]) == (None, None)
    what_if = state.clone()
    assert plugin.remove_pod(what_if, the_pod, POD_WITH_ONE_PVC, user_node) is None
    assert plugin.filter(what_if, the_pod, user_node) is None  # preempting the user helps
    assert plugin.filter(state, the_pod, user_node) == RWOP_CONFLICT  # the original state is untouched
    assert plugin.add_pod(what_if, the_pod, POD_WITH_TWO_PVCS, user_node) is None
    assert plugin.filter(what_if, the_pod, user_node) == RWOP_CONFLICT


def test_pod_without_volumes_reads_nothing() -> None:
    handle = StorageHandle([RWOP_1])
    status = VolumeRestrictions(None, cast(Handle, handle)).pre_filter(CycleState(), pod_info(), [])[1]
    assert status is not None and status.code is Code.SKIP
    assert handle.calls == []


def test_filter_without_pre_filter_state() -> None:
    status = VolumeRestrictions(None, cast(Handle, StorageHandle())).filter(
        CycleState(), pod_info(), make_node().name("node-1").info()
    )
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'cannot read "PreFilterVolumeRestrictions" from cycleState'


def _hints() -> dict[tuple[EventResource, ActionType], Any]:
    plugin = VolumeRestrictions(None, cast(Handle, StorageHandle()))
    return {(e.event.resource, e.event.action): e.hint for e in plugin.events_to_register()}


def test_events() -> None:
    assert set(_hints()) == {
        (EventResource.ASSIGNED_POD, ActionType.DELETE),
        (EventResource.POD, ActionType.DELETE),
        (EventResource.NODE, ActionType.ADD),
        (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
    }
    assert _hints()[(EventResource.NODE, ActionType.ADD)] is None


@pytest.mark.parametrize(
    ("the_pod", "deleted", "expected"),
    [
        pytest.param(
            pod_info(volumes=[GCE_FOO]),
            pod_info(volumes=[GCE_FOO], node_name="n"),
            QueueingHint.QUEUE,
            id="same GCE disk",
        ),
        pytest.param(
            pod_info(volumes=[GCE_FOO]),
            pod_info(volumes=[GCE_BAR], node_name="n"),
            QueueingHint.SKIP,
            id="different GCE disk",
        ),
        pytest.param(
            pod_info(volumes=[GCE_FOO]),
            PodInfo(pod("p", "other", volumes=[GCE_FOO])),
            QueueingHint.SKIP,
            id="a pod in another namespace",
        ),
        pytest.param(
            pod_info("p", volumes=[claim_volume("claim-with-rwop-1")]),
            POD_WITH_ONE_PVC,
            QueueingHint.QUEUE,
            id="same claim",
        ),
        pytest.param(
            pod_info("p", volumes=[claim_volume("claim-with-rwop-1")]),
            POD_WITH_RWX,
            QueueingHint.SKIP,
            id="another claim",
        ),
    ],
)
def test_pod_deleted_hint(the_pod: PodInfo, deleted: PodInfo, expected: QueueingHint) -> None:
    # Test_isSchedulableAfterPodDeleted
    assert _hints()[(EventResource.ASSIGNED_POD, ActionType.DELETE)](the_pod, deleted, None) is expected


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param(pvc("claim-with-rwop-1"), QueueingHint.QUEUE, id="the pod's claim was created"),
        pytest.param(pvc("claim-other"), QueueingHint.SKIP, id="another claim"),
        pytest.param(pvc("claim-with-rwop-1", namespace="x"), QueueingHint.SKIP, id="another namespace"),
    ],
)
def test_pvc_added_hint(new: dict[str, Any], expected: QueueingHint) -> None:
    # Test_isSchedulableAfterPersistentVolumeClaimChange
    hint = _hints()[(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)]
    assert hint(pod_info("p", volumes=[claim_volume("claim-with-rwop-1")]), None, new) is expected


@pytest.mark.parametrize(
    "key", [(EventResource.ASSIGNED_POD, ActionType.DELETE), (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)]
)
def test_hints_raise_on_unexpected_objects(key: tuple[EventResource, ActionType]) -> None:
    with pytest.raises(TypeError):
        _hints()[key](pod_info(), "not-an-object", "not-an-object")
