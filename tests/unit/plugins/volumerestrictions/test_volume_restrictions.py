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
from tests.builders import node, pod
from tests.unit.plugins.volumebinding.support import StorageHandle, claim_volume, pvc

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


def vol_pod(*volumes: dict[str, Any], name: str = "p", node_name: str = "") -> PodInfo:
    return PodInfo(pod(name, volumes=list(volumes), node_name=node_name))


def node_with(*pods: PodInfo, name: str = "node-1") -> NodeInfo:
    info = NodeInfo(node(name))
    for p in pods:
        info.add_pod(p)
    return info


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
        pytest.param(vol_pod(), node_with(), (SKIP, None), id=f"Test{kind}DiskConflicts/nothing"),
        pytest.param(vol_pod(), node_with(vol_pod(same)), (SKIP, None), id=f"Test{kind}DiskConflicts/one state"),
        pytest.param(
            vol_pod(same), node_with(vol_pod(same)), (None, DISK_CONFLICT), id=f"Test{kind}DiskConflicts/same state"
        ),
        pytest.param(
            vol_pod(other), node_with(vol_pod(same)), (None, None), id=f"Test{kind}DiskConflicts/different state"
        ),
    ]


@pytest.mark.parametrize(
    ("the_pod", "node_info", "want"),
    [
        *disk_cases("GCE", GCE_FOO, GCE_BAR),
        pytest.param(
            vol_pod(NO_RESTRICTION),
            node_with(),
            (SKIP, None),
            id="TestGCEDiskConflicts/pod with a volume that doesn't have restrictions",
        ),
        *disk_cases("AWS", AWS_FOO, AWS_BAR),
        *disk_cases("RBD", RBD_AB, RBD_CD),
        *disk_cases("ISCSI", ISCSI_1, ISCSI_2),
        pytest.param(
            vol_pod({"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}),
            node_with(vol_pod({"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}})),
            (None, None),
            id="GCE PD read-only everywhere",
        ),
        pytest.param(
            vol_pod({"name": "v", "awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}),
            node_with(vol_pod({"name": "v", "awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}})),
            (None, DISK_CONFLICT),
            id="AWS EBS conflicts even read-only",
        ),
        pytest.param(
            vol_pod({"name": "v", "rbd": {"monitors": ["b", "x"], "image": "bar"}}),
            node_with(vol_pod({"name": "v", "rbd": {"monitors": ["a", "b"], "pool": "rbd", "image": "bar"}})),
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


def claim_pod(name: str, *claims: str, node_name: str = "node-1", namespace: str = "default") -> PodInfo:
    return PodInfo(pod(name, namespace, volumes=[claim_volume(c) for c in claims], node_name=node_name))


POD_WITH_ONE_PVC = claim_pod("pod-with-one-pvc", "claim-with-rwop-1")
POD_WITH_TWO_PVCS = claim_pod("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2")
POD_WITH_RWX = claim_pod("pod-with-rwx", "claim-with-rwx")


@pytest.mark.parametrize(
    ("the_pod", "existing", "objects", "want"),
    [
        pytest.param(vol_pod(), [], [], (SKIP, None), id="TestAccessModeConflicts/nothing"),
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
            claim_pod("pod-with-one-conflict", "claim-with-rwop-1"),
            [POD_WITH_ONE_PVC, POD_WITH_RWX],
            [RWOP_1, RWX],
            (None, RWOP_CONFLICT),
            id="TestAccessModeConflicts/access mode conflict, unschedulable",
        ),
        pytest.param(
            claim_pod("pod-with-two-conflicts", "claim-with-rwop-1", "claim-with-rwop-2"),
            [POD_WITH_TWO_PVCS, POD_WITH_RWX],
            [RWOP_1, RWOP_2, RWX],
            (None, RWOP_CONFLICT),
            id="TestAccessModeConflicts/two conflicts, unschedulable",
        ),
        pytest.param(
            claim_pod("other-ns", "claim-with-rwop-1", namespace="other"),
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
    assert run(the_pod, node_with(*existing), objects) == want


def test_rwop_conflict_applies_to_every_node() -> None:
    user_node, other_node = node_with(POD_WITH_ONE_PVC, name="node-1"), node_with(name="node-2")
    handle = StorageHandle([RWOP_1], [user_node, other_node])
    plugin = VolumeRestrictions(None, cast(Handle, handle))
    state = CycleState()
    the_pod = claim_pod("new", "claim-with-rwop-1", node_name="")
    assert plugin.pre_filter(state, the_pod, [user_node, other_node]) == (None, None)
    assert plugin.filter(state, the_pod, other_node) == RWOP_CONFLICT


def test_add_and_remove_pod_track_rwop_users() -> None:
    user_node = node_with(POD_WITH_ONE_PVC)
    plugin = VolumeRestrictions(None, cast(Handle, StorageHandle([RWOP_1], [user_node])))
    state = CycleState()
    the_pod = claim_pod("new", "claim-with-rwop-1", node_name="")
    assert plugin.pre_filter(state, the_pod, [user_node]) == (None, None)
    what_if = state.clone()
    assert plugin.remove_pod(what_if, the_pod, POD_WITH_ONE_PVC, user_node) is None
    assert plugin.filter(what_if, the_pod, user_node) is None  # preempting the user helps
    assert plugin.filter(state, the_pod, user_node) == RWOP_CONFLICT  # the original state is untouched
    assert plugin.add_pod(what_if, the_pod, POD_WITH_TWO_PVCS, user_node) is None
    assert plugin.filter(what_if, the_pod, user_node) == RWOP_CONFLICT


def test_pod_without_volumes_reads_nothing() -> None:
    handle = StorageHandle([RWOP_1])
    status = VolumeRestrictions(None, cast(Handle, handle)).pre_filter(CycleState(), vol_pod(), [])[1]
    assert status is not None and status.code is Code.SKIP
    assert handle.calls == []


def test_filter_without_pre_filter_state() -> None:
    status = VolumeRestrictions(None, cast(Handle, StorageHandle())).filter(CycleState(), vol_pod(), node_with())
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
        pytest.param(vol_pod(GCE_FOO), vol_pod(GCE_FOO, node_name="n"), QueueingHint.QUEUE, id="same GCE disk"),
        pytest.param(vol_pod(GCE_FOO), vol_pod(GCE_BAR, node_name="n"), QueueingHint.SKIP, id="different GCE disk"),
        pytest.param(
            vol_pod(GCE_FOO),
            PodInfo(pod("p", "other", volumes=[GCE_FOO])),
            QueueingHint.SKIP,
            id="a pod in another namespace",
        ),
        pytest.param(
            claim_pod("p", "claim-with-rwop-1", node_name=""), POD_WITH_ONE_PVC, QueueingHint.QUEUE, id="same claim"
        ),
        pytest.param(
            claim_pod("p", "claim-with-rwop-1", node_name=""), POD_WITH_RWX, QueueingHint.SKIP, id="another claim"
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
    assert hint(claim_pod("p", "claim-with-rwop-1", node_name=""), None, new) is expected


@pytest.mark.parametrize(
    "key", [(EventResource.ASSIGNED_POD, ActionType.DELETE), (EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)]
)
def test_hints_raise_on_unexpected_objects(key: tuple[EventResource, ActionType]) -> None:
    with pytest.raises(TypeError):
        _hints()[key](vol_pod(), "not-an-object", "not-an-object")
