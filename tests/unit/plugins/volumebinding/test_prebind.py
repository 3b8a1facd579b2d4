"""VolumeBinding's PreBind (upstream ``binder.go`` v1.36.3: BindPodVolumes, bindAPIUpdate,
checkBindings) over the in-memory cluster, which plays the PV controller and a provisioner, and
over a cluster where nobody completes the bindings (fake time: nothing sleeps on the wall clock)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import pytest

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.clock import FakeClock
from scheduler_core.framework import CycleState, Handle, NodeInfo, PodInfo, SnapshotLister, Status
from scheduler_core.framework.storage import ANN_SELECTED_NODE
from scheduler_core.framework.writes import ClusterAPI, Verb, Write, Written
from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from scheduler_core.plugins.volumebinding import VolumeBinding
from scheduler_core.plugins.volumebinding.args import VolumeBindingArgs
from scheduler_core.plugins.volumebinding.prebind import Waiting
from scheduler_core.simulator.apiserver import merge_patch
from scheduler_core.simulator.backend import InMemoryCluster
from tests.unit.plugins.volumebinding.support import claim_volume, pv, pvc, storage_class
from tests.wrappers import node_info, pod_info

NODE = "node-a"
NO_PROVISIONER = storage_class("local", provisioner="kubernetes.io/no-provisioner")
DYNAMIC = storage_class("dyn", provisioner="csi.example.com")


class ClusterHandle:
    """The Handle parts VolumeBinding uses, over an in-memory cluster (or a stalled API)."""

    def __init__(self, cluster: InMemoryCluster, nodes: Sequence[NodeInfo], api: Any = None) -> None:
        self.cluster = cluster
        self.api = api if api is not None else cluster
        self._snapshot = Snapshot(list(nodes))
        self.tenant_namespace: str | None = None
        self.metrics = SchedulerMetrics()

    def objects(self, kind: str) -> list[Any]:
        return list(self.cluster.objects(kind))

    def lookup(self, kind: str, namespace: str, name: str) -> Any | None:
        return self.cluster.lookup(kind, namespace, name)

    def objects_version(self, kind: str) -> int | None:
        return self.cluster.objects_version(kind)

    def snapshot(self) -> SnapshotLister:
        return self._snapshot


class StalledAPI(ClusterAPI):
    """The writes land, but no PV controller or provisioner acts on them."""

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self.writes: list[str] = []

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        raise AssertionError("VolumeBinding must not bind")

    async def write(self, call: Write) -> Written:
        assert call.verb is Verb.PATCH, call
        kind = call.resource.kind
        self.writes.append(f"{'pv' if kind == 'PersistentVolume' else 'pvc'}/{call.name}")
        for stored in self.cluster.objects(kind):
            if stored["metadata"]["name"] == call.name:
                new = merge_patch(stored, call.obj)
                version = str(int(stored["metadata"]["resourceVersion"]) + 100)
                new["metadata"] = {**new["metadata"], "resourceVersion": version}
                assert self.cluster.replace_object(kind, new) is not None
                return new, None
        raise AssertionError(call)


def setup(
    objects: Sequence[dict[str, Any]], *, stalled: bool = False, timeout: int = 600
) -> tuple[VolumeBinding, InMemoryCluster, PodInfo, FakeClock, Any]:
    the_pod = pod_info(
        "pod-a",
        volumes=[claim_volume(o["metadata"]["name"]) for o in objects if o["kind"] == "PersistentVolumeClaim"],
    )
    nodes = [node_info(NODE)]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    cluster = InMemoryCluster(nodes=[n.node for n in nodes if n.node is not None], pods=[the_pod.pod], objects=by_kind)
    api = StalledAPI(cluster) if stalled else cluster
    handle = ClusterHandle(cluster, nodes, api)
    plugin = VolumeBinding(VolumeBindingArgs(bind_timeout_seconds=timeout), cast(Handle, handle))
    clock = FakeClock()

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)

    plugin.waiting = Waiting(now=clock.now, sleep=sleep)
    return plugin, cluster, the_pod, clock, api


def reserve(plugin: VolumeBinding, the_pod: PodInfo) -> CycleState:
    state = CycleState()
    nodes = [node_info(NODE)]
    assert plugin.pre_filter(state, the_pod, nodes)[1] is None
    assert plugin.filter(state, the_pod, nodes[0]) is None
    assert plugin.reserve(state, the_pod, NODE) is None
    return state


def find(cluster: InMemoryCluster, kind: str, name: str) -> dict[str, Any]:
    return next(o for o in cluster.objects(kind) if o["metadata"]["name"] == name)


def test_static_binding_writes_the_claim_ref_and_ends_bound() -> None:
    plugin, cluster, the_pod, clock, _ = setup(
        [NO_PROVISIONER, pvc("claim", "local", request="1Gi"), pv("pv-1", "local", capacity="1Gi", phase="Available")]
    )
    state = reserve(plugin, the_pod)
    assert asyncio.run(plugin.pre_bind(state, the_pod, NODE)) is None
    volume, claim = find(cluster, "PersistentVolume", "pv-1"), find(cluster, "PersistentVolumeClaim", "claim")
    assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert volume["status"]["phase"] == "Bound"
    assert claim["spec"]["volumeName"] == "pv-1"
    assert claim["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert clock.now() == 0  # bound within the write: no wait


def test_wait_for_first_consumer_claim_is_annotated_and_provisioned() -> None:
    plugin, cluster, the_pod, _, _ = setup(
        [DYNAMIC, pvc("claim", "dyn", request="2Gi", access_modes=["ReadWriteOnce"])]
    )
    state = reserve(plugin, the_pod)
    assert asyncio.run(plugin.pre_bind(state, the_pod, NODE)) is None
    claim = find(cluster, "PersistentVolumeClaim", "claim")
    assert claim["metadata"]["annotations"][ANN_SELECTED_NODE] == NODE
    volume = find(cluster, "PersistentVolume", claim["spec"]["volumeName"])
    assert volume["metadata"]["name"] == f"pvc-{claim['metadata']['uid']}"
    assert volume["spec"]["capacity"] == {"storage": "2Gi"}
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert volume["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "csi.example.com"
    assert claim["status"]["phase"] == "Bound"


@pytest.mark.parametrize(
    ("objects", "timeout", "writes"),
    [
        pytest.param([DYNAMIC, pvc("claim", "dyn")], 600, ["pvc/claim"], id="no-provisioner-default-timeout"),
        pytest.param(
            [NO_PROVISIONER, pvc("claim", "local"), pv("pv-1", "local", phase="Available")],
            5,
            ["pv/pv-1"],
            id="no-pv-controller-short-timeout",
        ),
    ],
)
def test_nothing_completes_the_binding_times_out(
    objects: list[dict[str, Any]], timeout: int, writes: list[str]
) -> None:
    plugin, _, the_pod, clock, api = setup(objects, stalled=True, timeout=timeout)
    state = reserve(plugin, the_pod)
    status = asyncio.run(plugin.pre_bind(state, the_pod, NODE))
    assert status == Status.as_error("binding volumes: context deadline exceeded")
    assert clock.now() == timeout
    assert api.writes == writes


def changing_after_first_poll(clock: FakeClock, change: Callable[[], None]) -> Waiting:
    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        change()

    return Waiting(now=clock.now, sleep=sleep)


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        pytest.param({}, 'selectedNode annotation reset for PVC "claim"', id="no-annotation-left"),
        pytest.param({"example.com/other": "x"}, 'provisioning failed for PVC "claim"', id="other-annotations"),
    ],
)
def test_provisioner_giving_up_fails_at_once(annotations: dict[str, str], message: str) -> None:
    plugin, cluster, the_pod, clock, _ = setup([DYNAMIC, pvc("claim", "dyn", annotations=annotations)], stalled=True)
    state = reserve(plugin, the_pod)

    def give_up() -> None:  # external-provisioner removes the annotation to ask for a reschedule
        claim = find(cluster, "PersistentVolumeClaim", "claim")
        claim["metadata"]["annotations"].pop(ANN_SELECTED_NODE)

    plugin.waiting = changing_after_first_poll(clock, give_up)
    status = asyncio.run(plugin.pre_bind(state, the_pod, NODE))
    assert status == Status.as_error(f"binding volumes: {message}")
    assert clock.now() == 1


def test_claim_ref_reset_fails_at_once() -> None:
    plugin, cluster, the_pod, clock, _ = setup(
        [NO_PROVISIONER, pvc("claim", "local"), pv("pv-1", "local", phase="Available")], stalled=True
    )
    state = reserve(plugin, the_pod)
    plugin.waiting = changing_after_first_poll(
        clock, lambda: find(cluster, "PersistentVolume", "pv-1")["spec"].pop("claimRef")
    )
    status = asyncio.run(plugin.pre_bind(state, the_pod, NODE))
    assert status == Status.as_error('binding volumes: ClaimRef got reset for pv "pv-1"')


def test_deleted_pod_stops_the_wait() -> None:
    plugin, cluster, the_pod, clock, _ = setup([DYNAMIC, pvc("claim", "dyn")], stalled=True)
    state = reserve(plugin, the_pod)
    plugin.waiting = changing_after_first_poll(clock, lambda: cluster.pods.clear())
    status = asyncio.run(plugin.pre_bind(state, the_pod, NODE))
    assert status == Status.as_error('binding volumes: pod does not exist any more: pod "pod-a" not found')


def test_write_conflict_fails_with_the_api_message_and_unreserve_frees_the_volume() -> None:
    plugin, cluster, _, _, _ = setup(
        [NO_PROVISIONER, pvc("claim", "local"), pvc("other", "local"), pv("pv-1", "local", phase="Available")]
    )
    one_claim = pod_info("pod-a", volumes=[claim_volume("claim")])
    state = reserve(plugin, one_claim)
    # Someone else writes the PV after Reserve read it.
    stored = find(cluster, "PersistentVolume", "pv-1")
    stored["metadata"]["resourceVersion"] = "999"
    status = asyncio.run(plugin.pre_bind(state, one_claim, NODE))
    assert status == Status.as_error(
        'Operation cannot be fulfilled on persistentvolumes "pv-1": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert "claimRef" not in find(cluster, "PersistentVolume", "pv-1")["spec"]
    metrics = plugin._handle.metrics
    assert isinstance(metrics, SchedulerMetrics)
    assert metrics.volume_stage_errors.labels("bind").value == 1  # binder.go BindPodVolumes
    plugin.unreserve(state, one_claim, NODE)
    assert reserve(plugin, pod_info("pod-b", volumes=[claim_volume("other")])) is not None  # the volume is free again
