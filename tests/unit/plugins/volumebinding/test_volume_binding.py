"""VolumeBinding, as upstream ``volumebinding/volume_binding_test.go`` (TestVolumeBinding: the
PreFilter and Filter outcomes; its scores need the StorageCapacityScoring gate, which
crd-scheduler does not implement) and binder_test.go behaviours (matching, provisioning,
capacity, assume/revert)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pytest

from scheduler_core.framework import Code, CycleState, Handle, NodeInfo, PodInfo, Status
from scheduler_core.framework.storage import VIEW_STATE_KEY, StorageView
from scheduler_core.plugins.volumebinding import VolumeBinding
from scheduler_core.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from scheduler_core.plugins.volumebinding.volume_binding import _StateData
from tests.unit.plugins.volumebinding.support import (
    HOSTNAME,
    StorageHandle,
    capacity,
    claim_volume,
    csi_driver,
    pv,
    pvc,
    storage_class,
)
from tests.wrappers import node_info, pod, pod_info

IMMEDIATE_SC = storage_class("immediate-sc", "Immediate")
WAIT_SC = storage_class("wait-sc")
WAIT_HDD_SC = storage_class("wait-hdd-sc")
CAP_SC = storage_class("wait-sc-with-storage-capacity", provisioner="driver-with-storage-capacity")
CAP_DRIVER = csi_driver("driver-with-storage-capacity", storage_capacity=True)
BASE = [IMMEDIATE_SC, WAIT_SC, WAIT_HDD_SC, CAP_SC, CAP_DRIVER]
NODE_KEY = "nodeKey"
REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"

BIND_CONFLICT = Status.unresolvable(ERR_REASON_BIND_CONFLICT)


def hostname_pv(name: str, class_name: str, cap: str, host: str) -> dict[str, Any]:
    return pv(name, class_name, phase="Available", capacity=cap, node_affinity={HOSTNAME: [host]})


def zonal_pv(name: str, cap: str, zone: str) -> dict[str, Any]:
    return pv(
        name,
        "wait-sc",
        phase="Available",
        capacity=cap,
        node_affinity={
            "topology.kubernetes.io/region": [f"region-{zone}"],
            "topology.kubernetes.io/zone": [f"zone-{zone}"],
        },
    )


def plugin_for(
    objects: Sequence[Mapping[str, Any]], nodes: list[NodeInfo] | None = None
) -> tuple[VolumeBinding, StorageHandle]:
    handle = StorageHandle([*BASE, *objects], nodes or [])
    return VolumeBinding(None, cast(Handle, handle)), handle


def run_filters(
    plugin: VolumeBinding, the_pod: PodInfo, nodes: list[NodeInfo]
) -> tuple[Status | None, list[Status | None], CycleState]:
    state = CycleState()
    result, status = plugin.pre_filter(state, the_pod, nodes)
    assert result is None
    if status is not None:
        return status, [], state
    return None, [plugin.filter(state, the_pod, n) for n in nodes], state


@pytest.mark.parametrize(
    ("the_pod", "nodes", "objects", "want_pre_filter", "want_filter"),
    [
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [pvc("pvc-a", "wait-sc", bound_pv="pv-a"), pv("pv-a", "wait-sc", phase="Available")],
            None,
            [None],
            id="TestVolumeBinding/all bound",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [],
            Status.unresolvable('persistentvolumeclaim "pvc-a" not found'),
            [],
            id="TestVolumeBinding/PVC does not exist",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a"), claim_volume("pvc-b")]),
            [node_info("node-a")],
            [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
            Status.unresolvable('persistentvolumeclaim "pvc-b" not found'),
            [],
            id="TestVolumeBinding/Part of PVCs do not exist",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [pvc("pvc-a", "immediate-sc")],
            Status.unresolvable("pod has unbound immediate PersistentVolumeClaims"),
            [],
            id="TestVolumeBinding/immediate claims not bound",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [pvc("pvc-a", "wait-sc")],
            None,
            [BIND_CONFLICT],
            id="TestVolumeBinding/unbound claims no matches",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a"), claim_volume("pvc-b")]),
            [node_info("node-a", labels={"foo": "barbar"})],
            [
                pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
                pvc("pvc-b", "wait-sc"),
                pv("pv-a", "wait-sc", phase="Bound", node_affinity={"foo": ["bar"]}),
            ],
            None,
            [Status.unresolvable(ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT)],
            id="TestVolumeBinding/bound and unbound unsatisfied",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
            None,
            [Status.unresolvable(ERR_REASON_PV_NOT_EXIST)],
            id="TestVolumeBinding/pv not found",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")],
            Status.unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'),
            [],
            id="TestVolumeBinding/pv not found claim lost",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a"), node_info("node-b"), node_info("node-c")],
            [
                pvc("pvc-a", "wait-sc", request="50Gi"),
                hostname_pv("pv-a-0", "wait-sc", "200Gi", "node-a"),
                hostname_pv("pv-a-1", "wait-sc", "200Gi", "node-a"),
                hostname_pv("pv-b-0", "wait-sc", "100Gi", "node-b"),
                hostname_pv("pv-b-1", "wait-sc", "100Gi", "node-b"),
            ],
            None,
            [None, None, BIND_CONFLICT],
            id="TestVolumeBinding/local volumes with close capacity are preferred",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-0"), claim_volume("pvc-1")]),
            [node_info("node-a"), node_info("node-b"), node_info("node-c")],
            [
                pvc("pvc-0", "wait-sc", request="50Gi"),
                pvc("pvc-1", "wait-hdd-sc", request="100Gi"),
                hostname_pv("pv-a-0", "wait-sc", "200Gi", "node-a"),
                hostname_pv("pv-a-1", "wait-sc", "200Gi", "node-a"),
                hostname_pv("pv-a-2", "wait-hdd-sc", "200Gi", "node-a"),
                hostname_pv("pv-a-3", "wait-hdd-sc", "200Gi", "node-a"),
                hostname_pv("pv-b-0", "wait-sc", "100Gi", "node-b"),
                hostname_pv("pv-b-1", "wait-sc", "100Gi", "node-b"),
                hostname_pv("pv-b-2", "wait-hdd-sc", "100Gi", "node-b"),
                hostname_pv("pv-b-3", "wait-hdd-sc", "100Gi", "node-b"),
            ],
            None,
            [None, None, BIND_CONFLICT],
            id="TestVolumeBinding/local volumes with close capacity are preferred (multiple pvcs)",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [
                node_info(
                    "zone-a-node-a",
                    labels={"topology.kubernetes.io/region": "region-a", "topology.kubernetes.io/zone": "zone-a"},
                ),
                node_info(
                    "zone-a-node-b",
                    labels={"topology.kubernetes.io/region": "region-a", "topology.kubernetes.io/zone": "zone-a"},
                ),
                node_info(
                    "zone-b-node-a",
                    labels={"topology.kubernetes.io/region": "region-b", "topology.kubernetes.io/zone": "zone-b"},
                ),
                node_info(
                    "zone-b-node-b",
                    labels={"topology.kubernetes.io/region": "region-b", "topology.kubernetes.io/zone": "zone-b"},
                ),
                node_info(
                    "zone-c-node-a",
                    labels={"topology.kubernetes.io/region": "region-c", "topology.kubernetes.io/zone": "zone-c"},
                ),
                node_info(
                    "zone-c-node-b",
                    labels={"topology.kubernetes.io/region": "region-c", "topology.kubernetes.io/zone": "zone-c"},
                ),
            ],
            [
                pvc("pvc-a", "wait-sc", request="50Gi"),
                zonal_pv("pv-a-0", "200Gi", "a"),
                zonal_pv("pv-a-1", "200Gi", "a"),
                zonal_pv("pv-b-0", "100Gi", "b"),
                zonal_pv("pv-b-1", "100Gi", "b"),
            ],
            None,
            [None, None, None, None, BIND_CONFLICT, BIND_CONFLICT],
            id="TestVolumeBinding/zonal volumes with close capacity are preferred",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-dynamic")]),
            [node_info(n, labels={NODE_KEY: n}) for n in ("node-a", "node-b", "node-c")],
            [
                pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="10Gi"),
                capacity("node-a", "wait-sc-with-storage-capacity", {NODE_KEY: "node-a"}, "100Gi"),
                capacity("node-b", "wait-sc-with-storage-capacity", {NODE_KEY: "node-b"}, "50Gi"),
                capacity("node-c", "wait-sc-with-storage-capacity", {NODE_KEY: "node-c"}, "10Gi"),
            ],
            None,
            [None, None, None],
            id="TestVolumeBinding/storage capacity score",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-dynamic-0"), claim_volume("pvc-dynamic-1")]),
            [node_info("node-a", labels={NODE_KEY: "node-a"})],
            [
                pvc("pvc-dynamic-0", "wait-sc-with-storage-capacity", request="50Gi"),
                pvc("pvc-dynamic-1", "wait-sc-with-storage-capacity", request="50Gi"),
                capacity("node-a", "wait-sc-with-storage-capacity", {NODE_KEY: "node-a"}, "100Gi"),
            ],
            None,
            [None],
            id="TestVolumeBinding/dynamic provisioning with multiple PVCs of the same StorageClass",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-dynamic")]),
            [node_info(n, labels={NODE_KEY: n}) for n in ("node-a", "node-b")],
            [
                pvc("pvc-dynamic", "wait-sc-with-storage-capacity", request="60Gi"),
                capacity("node-a", "wait-sc-with-storage-capacity", {NODE_KEY: "node-a"}, "100Gi", "50Gi"),
                capacity("node-b", "wait-sc-with-storage-capacity", {NODE_KEY: "node-b"}, "50Gi", "70Gi"),
            ],
            None,
            [Status.unresolvable(ERR_REASON_NOT_ENOUGH_SPACE), None],
            id="maximumVolumeSize is preferred to capacity",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a", labels={"zone": "z1"}), node_info("node-b", labels={"zone": "z2"})],
            [
                storage_class(
                    "topo-sc",
                    provisioner="csi.example.com",
                    allowed_topologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["z2"]}]}],
                ),
                pvc("pvc-a", "topo-sc", request="1Gi"),
            ],
            None,
            [BIND_CONFLICT, None],
            id="provisioning honours the class's allowed topologies",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [storage_class("np-sc", provisioner="kubernetes.io/no-provisioner"), pvc("pvc-a", "np-sc")],
            None,
            [BIND_CONFLICT],
            id="kubernetes.io/no-provisioner does not provision",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a"), node_info("node-b")],
            [
                storage_class("dyn-sc", provisioner="csi.example.com"),
                pvc("pvc-a", "dyn-sc", annotations={"volume.kubernetes.io/selected-node": "node-b"}),
            ],
            None,
            [BIND_CONFLICT, None],
            id="a claim being provisioned fits only its selected node",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [pvc("pvc-a", "wait-sc", deleting=True)],
            Status.unresolvable('persistentvolumeclaim "pvc-a" is being deleted'),
            [],
            id="deleting claim",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [pvc("pvc-a", "no-such-class")],
            Status.unresolvable("pod has unbound immediate PersistentVolumeClaims"),
            [],
            id="a claim whose class is missing binds immediately",
        ),
        pytest.param(
            pod_info("pod-a", volumes=[claim_volume("pvc-a")]),
            [node_info("node-a")],
            [pvc("pvc-a", "wait-sc", volume_name="pv-a"), pv("pv-a", "wait-sc")],
            Status.unresolvable("pod has unbound immediate PersistentVolumeClaims"),
            [],
            id="a pre-bound claim (volume name without bind-completed) is left to the PV controller",
        ),
    ],
)
def test_pre_filter_and_filter(
    the_pod: PodInfo,
    nodes: list[NodeInfo],
    objects: list[Mapping[str, Any]],
    want_pre_filter: Status | None,
    want_filter: list[Status | None],
) -> None:
    plugin, _ = plugin_for(objects, nodes)
    pre_filter, filters, _ = run_filters(plugin, the_pod, nodes)
    assert pre_filter == want_pre_filter
    assert filters == want_filter


def test_pod_without_claims_is_skipped_without_reading_objects() -> None:
    # TestVolumeBinding/pod has not pvcs; and the cost: no object is listed.
    plugin, handle = plugin_for([])
    state = CycleState()
    the_pod = PodInfo(pod("pod-a", volumes=[{"name": "scratch", "emptyDir": {}}]))
    result, status = plugin.pre_filter(state, the_pod, [])
    assert result is None and status is not None and status.code is Code.SKIP
    assert handle.calls == []
    pre_score = plugin.pre_score(state, the_pod, [])
    assert pre_score is not None and pre_score.code is Code.SKIP
    assert plugin.reserve(state, the_pod, "node-a") is None
    # Upstream PreBindPreFlight: nothing to bind, so PreBind is skipped (and may run in parallel).
    answer, flight = plugin.pre_bind_pre_flight(state, the_pod, "node-a")
    assert answer is not None and answer.allow_parallel and flight is not None and flight.code is Code.SKIP
    assert asyncio.run(plugin.pre_bind(state, the_pod, "node-a")) is None


@pytest.mark.parametrize(
    ("claims", "pvs", "node_pvs"),
    [
        pytest.param(
            [pvc("pvc-a", "wait-sc", request="5Gi")],
            [pv(f"pv-{s}", "wait-sc", capacity=f"{s}Gi", phase="Available") for s in (20, 5, 10, 1)],
            {"pvc-a": "pv-5"},
            id="the smallest volume that fits",
        ),
        pytest.param(
            [pvc("pvc-a", "wait-sc", request="5Gi", access_modes=["ReadWriteMany"])],
            [
                pv("pv-rwo", "wait-sc", capacity="5Gi", phase="Available", access_modes=["ReadWriteOnce"]),
                pv("pv-rwx", "wait-sc", capacity="50Gi", phase="Available", access_modes=["ReadWriteMany"]),
            ],
            {"pvc-a": "pv-rwx"},
            id="access modes must be offered",
        ),
        pytest.param(
            [pvc("pvc-a", "wait-sc", request="5Gi")],
            [
                pv("pv-small", "wait-sc", capacity="5Gi", phase="Released"),
                pv("pv-big", "wait-sc", capacity="50Gi", phase="Available"),
            ],
            {"pvc-a": "pv-big"},
            id="only available volumes",
        ),
        pytest.param(
            [pvc("pvc-a", "wait-sc", request="5Gi")],
            [
                pv("pv-small", "wait-sc", capacity="5Gi"),
                pv("pv-taken", "wait-sc", capacity="5Gi", claim_ref={"name": "other", "namespace": "default"}),
            ],
            {"pvc-a": "pv-small"},
            id="a volume without status is available when it has no claimRef",
        ),
        pytest.param(
            [pvc("pvc-a", "wait-sc", request="5Gi"), pvc("pvc-b", "wait-sc", request="1Gi")],
            [
                pv("pv-5", "wait-sc", capacity="5Gi", phase="Available"),
                pv("pv-10", "wait-sc", capacity="10Gi", phase="Available"),
            ],
            {"pvc-b": "pv-5", "pvc-a": "pv-10"},
            id="claims are matched smallest first and a volume is taken once",
        ),
        pytest.param(
            [pvc("pvc-a", "wait-sc", request="5Gi")],
            [
                pv("pv-5", "wait-sc", capacity="5Gi", phase="Available"),
                pv(
                    "pv-pre",
                    "wait-sc",
                    capacity="100Gi",
                    phase="Available",
                    claim_ref={"name": "pvc-a", "namespace": "default"},
                ),
            ],
            {"pvc-a": "pv-pre"},
            id="a volume pre-bound to the claim wins",
        ),
    ],
)
def test_matching_volumes(claims: list[dict[str, Any]], pvs: list[dict[str, Any]], node_pvs: dict[str, str]) -> None:
    nodes = [node_info("node-a")]
    plugin, _ = plugin_for([*claims, *pvs], nodes)
    the_pod = pod_info("pod-a", volumes=[claim_volume(c["metadata"]["name"]) for c in claims])
    pre_filter, filters, state = run_filters(plugin, the_pod, nodes)
    assert pre_filter is None and filters == [None]
    assert plugin.reserve(state, the_pod, "node-a") is None
    volumes = state.read_as("VolumeBinding", _StateData).pod_volumes_by_node["node-a"]
    chosen = {b.pvc["metadata"]["name"]: b.pv["metadata"]["name"] for b in volumes.static_bindings}
    assert chosen == node_pvs
    # Reserve assumed each chosen volume pre-bound to its claim.
    for claim, volume in chosen.items():
        assumed = plugin.binder.pv(state.read_as(VIEW_STATE_KEY, StorageView), volume)
        assert assumed["spec"]["claimRef"]["name"] == claim


def test_reserve_takes_the_volume_for_later_pods_and_unreserve_gives_it_back() -> None:
    nodes = [node_info("node-a")]
    objects = [
        pvc("claim-1", "wait-sc", request="1Gi"),
        pvc("claim-2", "wait-sc", request="1Gi"),
        pv("only-pv", "wait-sc", capacity="1Gi", phase="Available"),
    ]
    plugin, _ = plugin_for(objects, nodes)
    first, second = (
        pod_info("first", volumes=[claim_volume("claim-1")]),
        pod_info("second", volumes=[claim_volume("claim-2")]),
    )

    _, filters, state = run_filters(plugin, first, nodes)
    assert filters == [None]
    assert plugin.reserve(state, first, "node-a") is None

    assert run_filters(plugin, second, nodes)[1] == [BIND_CONFLICT]
    # The first pod's claim still finds its (assumed pre-bound) volume.
    assert run_filters(plugin, pod_info("again", volumes=[claim_volume("claim-1")]), nodes)[1] == [None]

    plugin.unreserve(state, first, "node-a")
    assert run_filters(plugin, second, nodes)[1] == [None]


def test_assumed_provisioning_pins_the_claim_to_its_node() -> None:
    nodes = [node_info("node-a"), node_info("node-b")]
    plugin, _ = plugin_for([storage_class("dyn", provisioner="csi.example.com"), pvc("shared", "dyn")], nodes)
    first = pod_info("first", volumes=[claim_volume("shared")])
    _, filters, state = run_filters(plugin, first, nodes)
    assert filters == [None, None]
    assert plugin.reserve(state, first, "node-b") is None
    assert run_filters(plugin, pod_info("second", volumes=[claim_volume("shared")]), nodes)[1] == [BIND_CONFLICT, None]


def test_assumptions_expire_when_the_object_changes() -> None:
    nodes = [node_info("node-a")]
    volume = pv("only-pv", "wait-sc", capacity="1Gi", phase="Available", version="1")
    plugin, handle = plugin_for([pvc("c1", "wait-sc"), pvc("c2", "wait-sc"), volume], nodes)
    first = pod_info("first", volumes=[claim_volume("c1")])
    _, _, state = run_filters(plugin, first, nodes)
    assert plugin.reserve(state, first, "node-a") is None
    assert run_filters(plugin, pod_info("second", volumes=[claim_volume("c2")]), nodes)[1] == [BIND_CONFLICT]
    # The API now shows a newer, still available version: the assumption is dropped.
    handle.by_kind["PersistentVolume"] = [{**volume, "metadata": {"name": "only-pv", "resourceVersion": "2"}}]
    assert run_filters(plugin, pod_info("second", volumes=[claim_volume("c2")]), nodes)[1] == [None]
    assert len(plugin.binder.pv_cache) == 0


@pytest.mark.parametrize(
    ("owner_uid", "objects_present", "want"),
    [
        pytest.param(
            None,
            False,
            Status.unresolvable(
                'waiting for ephemeral volume controller to create the persistentvolumeclaim "pod-a-scratch"'
            ),
            id="ephemeral claim not created yet",
        ),
        pytest.param(
            "someone-else",
            True,
            Status.unresolvable("PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)"),
            id="ephemeral claim owned by another pod",
        ),
        pytest.param("pod-a-uid", True, None, id="ephemeral claim of the pod"),
    ],
)
def test_generic_ephemeral_volumes(owner_uid: str | None, objects_present: bool, want: Status | None) -> None:
    the_pod = PodInfo(
        pod("pod-a", uid="pod-a-uid", volumes=[{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}])
    )
    objects = [pvc("pod-a-scratch", "wait-sc", bound_pv="pv-e", owner_uid=owner_uid), pv("pv-e", "wait-sc")]
    plugin, _ = plugin_for(objects if objects_present else [], [node_info("node-a")])
    assert plugin.pre_filter(CycleState(), the_pod, [])[1] == want


def test_pre_bind_without_filter_result_for_the_node_is_an_error() -> None:
    nodes = [node_info("node-a")]
    plugin, _ = plugin_for([pvc("c", "wait-sc"), pv("v", "wait-sc", capacity="1Gi")], nodes)
    the_pod = pod_info("p", volumes=[claim_volume("c")])
    _, _, state = run_filters(plugin, the_pod, nodes)
    assert plugin.reserve(state, the_pod, "node-z") is None  # no volumes for that node: all bound
    assert asyncio.run(plugin.pre_bind(state, the_pod, "node-z")) is None
    state2 = run_filters(plugin, the_pod, nodes)[2]
    assert plugin.reserve(state2, the_pod, "node-a") is None
    assert plugin.pre_bind_pre_flight(state2, the_pod, "node-a")[1] is None  # a claim to bind: work
    state2.read_as("VolumeBinding", _StateData).pod_volumes_by_node.clear()
    _, flight = plugin.pre_bind_pre_flight(state2, the_pod, "node-a")
    assert flight is not None and flight.code is Code.ERROR
    assert flight.message() == 'no pod volume found for node "node-a"'
    status = asyncio.run(plugin.pre_bind(state2, the_pod, "node-a"))
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'no pod volume found for node "node-a"'


def test_other_volume_kinds_do_not_need_objects() -> None:
    the_pod = PodInfo(pod("p", volumes=[claim_volume("c"), {"name": "cfg", "configMap": {"name": "x"}}]))
    plugin, _ = plugin_for([pvc("c", "wait-sc", bound_pv="v"), pv("v", "wait-sc")], [node_info("n")])
    assert run_filters(plugin, the_pod, [node_info("n")])[:2] == (None, [None])
