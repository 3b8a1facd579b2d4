"""VolumeZone, as upstream ``volumezone/volume_zone_test.go`` (TestSingleZone, TestMultiZone,
TestWithBinding, TestIsSchedulableAfterPersistentVolumeClaimAdded,
TestIsSchedulableAfterStorageClassAdded, TestIsSchedulableAfterPersistentVolumeChange)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from scheduler_core.framework import Code, CycleState, Handle, PodInfo, QueueingHint, Status
from scheduler_core.plugins.volumezone import VolumeZone
from scheduler_core.plugins.volumezone.volume_zone import (
    ERR_REASON_CONFLICT,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
)
from tests.unit.plugins.volumebinding.support import StorageHandle, claim_volume, pv, pvc, storage_class
from tests.wrappers import node_info, pod, pod_info

BETA_ZONE, BETA_REGION = LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_FAILURE_DOMAIN_BETA_REGION
ZONE, REGION = LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION
USELESS = {"uselessLabel": "none"}
CONFLICT = Status.unresolvable(ERR_REASON_CONFLICT)
QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP

SINGLE_ZONE = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_REGION: "us-west1", **USELESS}),
    pv("Vol_3", labels={BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={REGION: "us-west1", **USELESS}),
    pv("Vol_Stable_3", labels={ZONE: "us-west1-a", REGION: "us-west1-a"}),
    pvc("PVC_1", None, volume_name="Vol_1"),
    pvc("PVC_2", None, volume_name="Vol_2"),
    pvc("PVC_3", None, volume_name="Vol_3"),
    pvc("PVC_4", None, volume_name="Vol_not_exist"),
    pvc("PVC_Stable_1", None, volume_name="Vol_Stable_1"),
    pvc("PVC_Stable_2", None, volume_name="Vol_Stable_2"),
    pvc("PVC_Stable_3", None, volume_name="Vol_Stable_3"),
]

MULTI_ZONE = [
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", labels={BETA_ZONE: "us-west1-b", **USELESS}),
    pv("Vol_3", labels={BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", labels={ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", labels={ZONE: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", None, volume_name="Vol_1"),
    pvc("PVC_2", None, volume_name="Vol_2"),
    pvc("PVC_3", None, volume_name="Vol_3"),
    pvc("PVC_Stable_1", None, volume_name="Vol_Stable_1"),
    pvc("PVC_Stable_2", None, volume_name="Vol_Stable_2"),
]

WITH_BINDING = [
    storage_class("Class_Immediate", None),
    storage_class("Class_Wait", "WaitForFirstConsumer"),
    pv("Vol_1", labels={BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", None, volume_name="Vol_1"),
    pvc("PVC_NoSC", "Class_0"),
    pvc("PVC_EmptySC", None),
    pvc("PVC_WaitSC", "Class_Wait"),
    pvc("PVC_ImmediateSC", "Class_Immediate"),
]


def run(
    objects: list[dict[str, Any]], claim: str | None, labels: dict[str, str]
) -> tuple[Status | None, Status | None]:
    plugin = VolumeZone(None, cast(Handle, StorageHandle(objects)))
    the_pod = pod_info("pod_1", volumes=[claim_volume(claim)]) if claim else PodInfo(pod("pod_1"))
    state = CycleState()
    _, pre_filter = plugin.pre_filter(state, the_pod, [])
    if pre_filter is not None:
        # Upstream runs Filter anyway in these tests: without state it recomputes.
        if pre_filter.code is Code.SKIP:
            return pre_filter, None
        return pre_filter, plugin.filter(CycleState(), the_pod, node_info("host1", labels=labels))
    return None, plugin.filter(state, the_pod, node_info("host1", labels=labels))


@pytest.mark.parametrize(
    ("claim", "labels", "want_filter"),
    [
        pytest.param("PVC_1", {}, None, id="TestSingleZone/node without labels"),
        pytest.param("PVC_1", {BETA_ZONE: "us-west1-a", **USELESS}, None, id="TestSingleZone/beta zone label matched"),
        pytest.param(
            "PVC_2", {BETA_REGION: "us-west1", **USELESS}, None, id="TestSingleZone/beta region label matched"
        ),
        pytest.param(
            "PVC_2",
            {BETA_REGION: "no_us-west1", **USELESS},
            CONFLICT,
            id="TestSingleZone/beta region label doesn't match",
        ),
        pytest.param(
            "PVC_1",
            {BETA_ZONE: "no_us-west1-a", **USELESS},
            CONFLICT,
            id="TestSingleZone/beta zone label doesn't match",
        ),
        pytest.param("PVC_Stable_1", {ZONE: "us-west1-a", **USELESS}, None, id="TestSingleZone/zone label matched"),
        pytest.param("PVC_Stable_2", {REGION: "us-west1", **USELESS}, None, id="TestSingleZone/region label matched"),
        pytest.param(
            "PVC_Stable_2", {REGION: "no_us-west1", **USELESS}, CONFLICT, id="TestSingleZone/region label doesn't match"
        ),
        pytest.param(
            "PVC_Stable_1", {ZONE: "no_us-west1-a", **USELESS}, CONFLICT, id="TestSingleZone/zone label doesn't match"
        ),
        pytest.param(
            "PVC_Stable_3",
            {ZONE: "us-west1-a"},
            CONFLICT,
            id="TestSingleZone/pv with zone and region, node with only zone",
        ),
        pytest.param(
            "PVC_Stable_1", {BETA_ZONE: "us-west1-a"}, CONFLICT, id="TestSingleZone/pv with zone,node with beta zone"
        ),
        pytest.param(
            "PVC_1", {ZONE: "us-west1-a"}, None, id="TestSingleZone/pv with beta label,node with ga label, matched"
        ),
        pytest.param(
            "PVC_1",
            {ZONE: "us-west1-b"},
            CONFLICT,
            id="TestSingleZone/pv with beta label,node with ga label, don't match",
        ),
    ],
)
def test_single_zone(claim: str, labels: dict[str, str], want_filter: Status | None) -> None:
    assert run(SINGLE_ZONE, claim, labels) == (None, want_filter)


def test_pod_without_volume_skips() -> None:
    # TestSingleZone/pod without volume; no object is read.
    handle = StorageHandle(SINGLE_ZONE)
    result, status = VolumeZone(None, cast(Handle, handle)).pre_filter(CycleState(), PodInfo(pod("pod_1")), [])
    assert result is None and status is not None and status.code is Code.SKIP
    assert handle.calls == []


@pytest.mark.parametrize(
    ("claim", "labels", "want_filter"),
    [
        pytest.param("PVC_3", {}, None, id="TestMultiZone/node without labels"),
        pytest.param("PVC_3", {BETA_ZONE: "us-west1-a", **USELESS}, None, id="TestMultiZone/beta zone label matched"),
        pytest.param(
            "PVC_1", {BETA_ZONE: "us-west1-b", **USELESS}, CONFLICT, id="TestMultiZone/beta zone label doesn't match"
        ),
        pytest.param("PVC_Stable_2", {ZONE: "us-west1-a", **USELESS}, None, id="TestMultiZone/zone label matched"),
        pytest.param(
            "PVC_Stable_1", {ZONE: "us-west1-b", **USELESS}, CONFLICT, id="TestMultiZone/zone label doesn't match"
        ),
    ],
)
def test_multi_zone(claim: str, labels: dict[str, str], want_filter: Status | None) -> None:
    assert run(MULTI_ZONE, claim, labels) == (None, want_filter)


TEST_NODE = {BETA_ZONE: "us-west1-a", **USELESS}


@pytest.mark.parametrize(
    ("objects", "claim", "want"),
    [
        pytest.param(WITH_BINDING, "PVC_1", (None, None), id="TestWithBinding/label zone failure domain matched"),
        pytest.param(
            WITH_BINDING,
            "PVC_EmptySC",
            (Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),) * 2,
            id="TestWithBinding/unbound volume empty storage class",
        ),
        pytest.param(
            WITH_BINDING,
            "PVC_NoSC",
            # The informer lister's message (upstream's fake lister says "storageclasses").
            (Status.unresolvable('storageclass.storage.k8s.io "Class_0" not found'),) * 2,
            id="TestWithBinding/unbound volume no storage class",
        ),
        pytest.param(
            WITH_BINDING,
            "PVC_ImmediateSC",
            # A class without volumeBindingMode is Immediate (API defaulting), not an error.
            (Status.unresolvable("PersistentVolume had no name"),) * 2,
            id="TestWithBinding/unbound volume immediate binding mode",
        ),
        pytest.param(
            WITH_BINDING, "PVC_WaitSC", (Status.skip(), None), id="TestWithBinding/unbound volume wait binding mode"
        ),
        pytest.param(
            SINGLE_ZONE,
            "PVC_4",
            (Status.unresolvable('persistentvolume "Vol_not_exist" not found'),) * 2,
            id="bound to a missing PV",
        ),
        pytest.param(
            SINGLE_ZONE,
            "PVC_missing",
            (Status.unresolvable('persistentvolumeclaim "PVC_missing" not found'),) * 2,
            id="missing claim",
        ),
    ],
)
def test_with_binding(objects: list[dict[str, Any]], claim: str, want: tuple[Status | None, Status | None]) -> None:
    assert run(objects, claim, TEST_NODE) == want


def test_claim_without_name() -> None:
    the_pod = PodInfo(pod("p", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": ""}}]))
    plugin = VolumeZone(None, cast(Handle, StorageHandle([])))
    assert plugin.pre_filter(CycleState(), the_pod, [])[1] == Status.unresolvable("PersistentVolumeClaim had no name")


def _hint(plugin: VolumeZone, kind: str) -> Any:
    for registered in plugin.events_to_register():
        if registered.event.resource.value.endswith(kind):
            return registered.hint
    raise AssertionError(kind)


@pytest.mark.parametrize(
    ("the_pod", "old", "new", "expected"),
    [
        pytest.param(
            pod_info("pod_1", volumes=[claim_volume("PVC_1")]), None, pvc("PVC_1"), QUEUE, id="pod has the pvc"
        ),
        pytest.param(
            pod_info("pod_1", volumes=[claim_volume("PVC_1")]), None, pvc("PVC_2"), SKIP, id="pvc irrelevant to the pod"
        ),
        pytest.param(
            pod_info("pod_1", volumes=[claim_volume("PVC_1")]),
            None,
            pvc("PVC_1", namespace="other"),
            SKIP,
            id="same name in another namespace",
        ),
        pytest.param(
            pod_info("pod_1", volumes=[claim_volume("PVC_1")]),
            pvc("PVC_1"),
            pvc("PVC_1", volume_name="v"),
            QUEUE,
            id="pvc of the pod updated",
        ),
    ],
)
def test_pvc_hint(the_pod: PodInfo, old: Any, new: Any, expected: QueueingHint) -> None:
    # TestIsSchedulableAfterPersistentVolumeClaimAdded
    plugin = VolumeZone(None, cast(Handle, StorageHandle()))
    assert _hint(plugin, "PersistentVolumeClaim")(the_pod, old, new) is expected


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param(storage_class("sc", "WaitForFirstConsumer"), QUEUE, id="sc with waitForFirstConsumer"),
        pytest.param(storage_class("sc", "Immediate"), SKIP, id="sc with Immediate"),
        pytest.param(storage_class("sc", None), SKIP, id="sc without mode (Immediate)"),
    ],
)
def test_storage_class_hint(new: Any, expected: QueueingHint) -> None:
    # TestIsSchedulableAfterStorageClassAdded
    plugin = VolumeZone(None, cast(Handle, StorageHandle()))
    assert _hint(plugin, "StorageClass")(pod_info("pod-a", volumes=[]), None, new) is expected


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(None, pv("v", labels={ZONE: "a"}), QUEUE, id="new pv"),
        pytest.param(pv("v", labels={ZONE: "a"}), pv("v", labels={ZONE: "b"}), QUEUE, id="pv zone changed"),
        pytest.param(pv("v", labels={ZONE: "a"}), pv("v", labels={ZONE: "a", "x": "y"}), SKIP, id="topology unchanged"),
        pytest.param(pv("v"), pv("v", labels={BETA_REGION: "r"}), QUEUE, id="topology label added"),
    ],
)
def test_pv_hint(old: Any, new: Any, expected: QueueingHint) -> None:
    # TestIsSchedulableAfterPersistentVolumeChange
    plugin = VolumeZone(None, cast(Handle, StorageHandle()))
    assert _hint(plugin, "PersistentVolume")(pod_info("pod-a", volumes=[]), old, new) is expected


@pytest.mark.parametrize("kind", ["PersistentVolumeClaim", "StorageClass", "PersistentVolume"])
def test_hints_raise_on_unexpected_objects(kind: str) -> None:
    plugin = VolumeZone(None, cast(Handle, StorageHandle()))
    with pytest.raises(TypeError):
        _hint(plugin, kind)(pod_info("pod-a", volumes=[]), object(), object())
