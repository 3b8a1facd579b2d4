"""DynamicResources' extension points one by one, over the in-memory cluster (the project's twin
of the API server), where the whole-scheduler runs of ``test_dynamic_resources.py`` cannot pause
between them. Ids name upstream cases of ``dynamicresources_test.go`` where one exists."""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import numpy as np
import pytest

from scheduler_core.framework import Code, CycleState, NodeInfo, PodInfo, QueueingHint, device_cel
from scheduler_core.framework.dra import ResourceClaim
from scheduler_core.framework.writes import RESOURCE_CLAIMS, STATUS, Verb, Write
from scheduler_core.plugins.dynamicresources import DynamicResources
from scheduler_core.plugins.dynamicresources.dynamic_resources import _state, compute_score
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.simulator.backend import InMemoryCluster
from tests.wrappers import make_pod, node

DRIVER = "gpu.example.com"
GPU_CLASS = {"metadata": {"name": "gpu"},
             "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}}  # fmt: skip


# Pods pa and pb, each with the claim of its letter (cycle(PA.obj())).
PA = make_pod().name("pa").uid("uid-pa").resource_claim("gpu", claim="a")
PB = make_pod().name("pb").uid("uid-pb").resource_claim("gpu", claim="b")


def gpu_slice(node_name: str, devices: int) -> dict[str, Any]:
    return {"metadata": {"name": f"{node_name}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}"} for i in range(devices)]}}  # fmt: skip


def claim(name: str, **status: Any) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu"}}
    return {"metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [request]}}, "status": status}  # fmt: skip


class Setup:
    def __init__(self, claims: list[dict[str, Any]], devices: int = 1, nodes: tuple[str, ...] = ("n1",)) -> None:
        self.nodes = [NodeInfo(node(n)) for n in nodes]
        self.cluster = InMemoryCluster(
            nodes=[node(n) for n in nodes],
            objects={"DeviceClass": [GPU_CLASS], "ResourceSlice": [gpu_slice(n, devices) for n in nodes],
                     "ResourceClaim": claims},
        )  # fmt: skip
        self.shared: dict[str, Any] = {}  # the scheduler's, for every profile
        self.plugin = self.profile("p")

    def profile(self, name: str) -> DynamicResources:
        """The plugin of one more profile of the same scheduler."""
        handle = FrameworkHandle(name, snapshot=lambda: None, api=self.cluster,  # type: ignore[arg-type, return-value]
                                 objects=self.cluster.objects, shared=self.shared)  # fmt: skip
        return DynamicResources(None, handle)

    def stored(self, name: str) -> dict[str, Any]:
        found = self.cluster.claims.find("default", name)
        assert found is not None
        return found

    def cycle(self, p: dict[str, Any]) -> tuple[CycleState, PodInfo, list[str]]:
        """PreFilter and Filter; the names of the nodes that passed."""
        state, info = CycleState(), PodInfo(p)
        _, status = self.plugin.pre_filter(state, info, self.nodes)
        assert status is None, status
        return state, info, [n.name for n in self.nodes if self.plugin.filter(state, info, n) is None]


def devices_of(allocation: dict[str, Any]) -> list[str]:
    return [r["device"] for r in allocation["devices"]["results"]]


def test_a_reserved_allocation_is_in_flight_until_prebind_lands() -> None:
    # Two pods in a row, the second scheduled before the first's PreBind: never the same device.
    setup = Setup([claim("a"), claim("b")], devices=2)
    state_a, pod_a, fit_a = setup.cycle(PA.obj())
    assert fit_a == ["n1"]
    assert setup.plugin.reserve(state_a, pod_a, "n1") is None
    state_b, pod_b, fit_b = setup.cycle(PB.obj())
    assert fit_b == ["n1"]
    assert setup.plugin.reserve(state_b, pod_b, "n1") is None
    asyncio.run(setup.plugin.pre_bind(state_b, pod_b, "n1"))
    asyncio.run(setup.plugin.pre_bind(state_a, pod_a, "n1"))
    got = devices_of(setup.stored("a")["status"]["allocation"]) + devices_of(setup.stored("b")["status"]["allocation"])
    assert sorted(got) == ["gpu-0", "gpu-1"]


def test_reserve_lets_go_of_the_cycles_allocator_and_the_other_nodes_searches() -> None:
    # A pod's cycle state lives until it is bound, and thousands of pods may wait for their
    # binding (a dev cluster binds slower than the scheduler decides): after Reserve the state
    # holds the chosen node's allocation, not the allocator and every other node's search.
    setup = Setup([claim("a")], devices=2, nodes=("n1", "n2", "n3"))
    gc.disable()
    try:
        state, pod, fit = setup.cycle(PA.obj())
        assert fit == ["n1", "n2", "n3"]
        data = _state(state)
        assert data is not None and data.allocator is not None
        allocator = weakref.ref(data.allocator)
        assert setup.plugin.reserve(state, pod, "n2") is None
        assert allocator() is None
        assert list(data.node_allocations) == [] and set(data.node_claims) <= {"n2"}
    finally:
        gc.enable()
    answer, flight = setup.plugin.pre_bind_pre_flight(state, pod, "n2")  # upstream PreBindPreFlight
    assert answer is not None and answer.allow_parallel and flight is None  # a claim: PreBind has work
    assert asyncio.run(setup.plugin.pre_bind(state, pod, "n2")) is None
    assert setup.stored("a")["status"]["allocation"]["devices"]["results"][0]["pool"] == "n2"


def test_an_in_flight_allocation_keeps_the_last_device_from_the_next_pod() -> None:
    setup = Setup([claim("a"), claim("b")], devices=1)
    state_a, pod_a, _ = setup.cycle(PA.obj())
    setup.plugin.reserve(state_a, pod_a, "n1")
    state_b, pod_b, fit_b = setup.cycle(PB.obj())
    assert fit_b == []
    assert setup.plugin.filter(state_b, pod_b, setup.nodes[0]).message() == "cannot allocate all claims"  # type: ignore[union-attr]
    setup.plugin.unreserve(state_a, pod_a, "n1")  # the first pod failed later: its device is free again
    assert setup.cycle(PB.obj())[2] == ["n1"]


def test_in_flight_allocations_are_shared_by_every_profile() -> None:
    # A tenant profile's pod right after the cluster-wide profile's: still not the same device.
    setup = Setup([claim("a"), claim("b")], devices=1)
    state_a, pod_a, _ = setup.cycle(PA.obj())
    setup.plugin.reserve(state_a, pod_a, "n1")
    setup.plugin = setup.profile("team-a/tenant")
    assert setup.cycle(PB.obj())[2] == []


@pytest.mark.parametrize("store_lags", [False, True], ids=["store-current", "store-lags"])
def test_prebind_writes_allocation_reservation_and_finalizer_and_retries_a_conflict(store_lags: bool) -> None:
    """Someone else writes the claim meanwhile (a label): PreBind's first write conflicts, and the
    retry reads the claim from the API. With ``store_lags`` the plugin's store never hears of
    that write, as the operator's may not yet: retrying with the stored claim conflicted again at
    once (one SchedulingWithResourceClaim run on the dev cluster: 335 pods failed PreBind with
    "too many conflicts", five pods sharing each claim). Upstream's bindClaim reads the claim
    from the API before each retry (retry.RetryOnConflict)."""
    setup = Setup([claim("a")])
    if store_lags:
        stale = list(setup.cluster.objects("ResourceClaim"))
        handle = FrameworkHandle("p", snapshot=lambda: None, api=setup.cluster,  # type: ignore[arg-type, return-value]
                                 objects=lambda kind: stale if kind == "ResourceClaim" else setup.cluster.objects(kind),
                                 shared={})  # fmt: skip
        setup.plugin = DynamicResources(None, handle)
    state, info, _ = setup.cycle(PA.obj())
    setup.plugin.reserve(state, info, "n1")
    changed = {**setup.stored("a"), "metadata": {**setup.stored("a")["metadata"], "labels": {"x": "y"}}}
    assert setup.cluster.claims.put(Write(Verb.UPDATE, RESOURCE_CLAIMS, changed))[1] is None
    assert asyncio.run(setup.plugin.pre_bind(state, info, "n1")) is None
    stored = setup.stored("a")
    assert stored["metadata"]["labels"] == {"x": "y"}
    assert stored["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    assert stored["status"]["reservedFor"] == [{"resource": "pods", "name": "pa", "uid": "uid-pa"}]
    assert devices_of(stored["status"]["allocation"]) == ["gpu-0"]


def test_a_claim_allocated_elsewhere_meanwhile_fails_prebind() -> None:
    setup = Setup([claim("a")])
    state, info, _ = setup.cycle(PA.obj())
    setup.plugin.reserve(state, info, "n1")
    other = {**setup.stored("a"), "status": {"allocation": {"devices": {"results": []}}}}
    assert setup.cluster.claims.put_status(Write(Verb.UPDATE, RESOURCE_CLAIMS, other, subresource=STATUS))[1] is None
    status = asyncio.run(setup.plugin.pre_bind(state, info, "n1"))
    assert status is not None and "claim default/a got allocated elsewhere in the meantime" in status.message()


ALLOCATED_ON_N2 = {
    "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "n2", "device": "gpu-0"}]},
    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]},
}  # fmt: skip


@pytest.mark.parametrize(
    ("reserved_for", "message", "deallocated"),
    [
        pytest.param([], "deallocation of ResourceClaim completed", True, id="deallocate-unused-claim"),
        pytest.param([{"resource": "pods", "name": "other", "uid": "uid-other"}], "still not schedulable", False,
                     id="in-use-by-other-pod"),
    ],
)  # fmt: skip
def test_post_filter_deallocates_a_claim_allocated_for_an_unsuitable_node(
    reserved_for: list[Any], message: str, deallocated: bool
) -> None:
    setup = Setup([claim("a", allocation=ALLOCATED_ON_N2, reservedFor=reserved_for)], nodes=("n1", "n2"))
    setup.nodes = setup.nodes[:1]  # n2 is gone, say: the claim is available nowhere
    state, info, fit = setup.cycle(PA.obj())
    assert fit == []
    assert setup.plugin.filter(state, info, setup.nodes[0]).message() == "resourceclaim not available on the node"  # type: ignore[union-attr]

    async def post_filter() -> Any:
        result = setup.plugin.post_filter(state, info, {})  # type: ignore[arg-type]
        await asyncio.sleep(0)  # the status write runs as a background task
        return result

    _, status = asyncio.run(post_filter())
    assert status is not None and status.message() == message
    assert ("allocation" not in setup.stored("a")["status"]) is deallocated


def test_queueing_hints_as_upstream() -> None:
    setup = Setup([claim("a"), claim("other")])
    info = PodInfo(PA.obj())
    mine, other = setup.stored("a"), setup.stored("other")
    hint = setup.plugin.is_schedulable_after_claim_change
    assert hint(info, None, mine) is QueueingHint.QUEUE  # isSchedulableAfterClaimChange "queue-on-add"
    assert hint(info, other, other) is QueueingHint.SKIP  # "skip-unrelated-claim"
    assert hint(info, mine, mine) is QueueingHint.SKIP  # "skip-unchanged-status"
    allocated = {**other, "status": {"allocation": ALLOCATED_ON_N2}}
    assert hint(info, allocated, other) is QueueingHint.QUEUE  # "queue-on-deallocation"
    template_pod = {"metadata": {"name": "pt", "namespace": "default", "uid": "uid-pt"},
                    "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}}  # fmt: skip
    # isSchedulableAfterPodChange: the pod's claim is not created yet, then it is
    assert (
        setup.plugin.is_schedulable_after_pod_change(PodInfo(template_pod), None, PodInfo(template_pod))
        is QueueingHint.SKIP
    )
    with_status = {**template_pod, "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "a"}]}}
    assert setup.plugin.pre_enqueue(PodInfo(template_pod)) is not None
    # "a" is not owned by the pod: still not schedulable, as resourceclaim.IsForPod says
    assert (
        setup.plugin.is_schedulable_after_pod_change(PodInfo(template_pod), None, PodInfo(with_status))
        is QueueingHint.SKIP
    )


def test_pre_enqueue_message_for_a_template_claim_not_created_yet() -> None:
    setup = Setup([])
    template_pod = {"metadata": {"name": "pt", "namespace": "default"},
                    "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]}}  # fmt: skip
    status = setup.plugin.pre_enqueue(PodInfo(template_pod))
    assert status is not None and status.message() == 'pod "default/pt": ResourceClaim not created yet'


@pytest.mark.parametrize(
    ("chosen", "expected"),
    [
        pytest.param("big", 8, id="computeScore-first-subrequest"),
        pytest.param("small", 7, id="computeScore-second-subrequest"),
    ],
)
def test_score_prefers_earlier_subrequests(chosen: str, expected: int) -> None:
    first = [{"name": "big", "deviceClassName": "gpu"}, {"name": "small", "deviceClassName": "gpu"}]
    prioritized = {
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "r", "firstAvailable": first}]}},
    }
    allocation = {"devices": {"results": [{"request": f"r/{chosen}", "driver": DRIVER, "pool": "n1", "device": "x"}]}}
    assert compute_score([ResourceClaim(prioritized)], [allocation]) == expected


@pytest.mark.parametrize(
    ("requests", "batched"),
    [
        pytest.param([{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}], True, id="exactly: zeros at once"),
        pytest.param([{"name": "gpu", "firstAvailable": [{"name": "any", "deviceClassName": "gpu"}]}], False,
                     id="firstAvailable: per node"),
    ],
)  # fmt: skip
def test_score_batch_is_the_per_node_score(requests: list[dict[str, Any]], batched: bool) -> None:
    # Upstream's Score answers per node; the batch form may only answer where that is 0 everywhere.
    c = claim("a")
    c["spec"]["devices"]["requests"] = requests
    setup = Setup([c], devices=2, nodes=("n1", "n2"))
    state, info, fit = setup.cycle(PA.obj())
    assert fit == ["n1", "n2"]
    per_node = [setup.plugin.score(state, info, n)[0] for n in setup.nodes]
    batch = setup.plugin.score_batch(state, info, None, np.arange(2))  # type: ignore[arg-type]
    if batched:
        assert batch is not None and batch.tolist() == per_node == [0, 0]
    else:
        assert batch is None and per_node == [8, 8]


def test_a_hint_reads_the_stored_claims_only_when_they_changed() -> None:
    """Each claim event runs the hint for every pending pod: re-reading every stored claim per
    call stalled the operator for minutes on SchedulingWithResourceClaimTemplate (5,000 claims,
    2,500 pending pods, a re-list of claims). Upstream's hint reads one claim from the lister."""
    setup = Setup([claim("a"), claim("other")])
    reads: list[str] = []

    def objects(kind: str) -> Any:
        reads.append(kind)
        return setup.cluster.objects(kind)

    handle = FrameworkHandle("p", snapshot=lambda: None, api=setup.cluster,  # type: ignore[arg-type, return-value]
                             objects=objects, objects_version=setup.cluster.objects_version,
                             shared={})  # fmt: skip
    plugin = DynamicResources(None, handle)
    info, mine = PodInfo(PA.obj()), setup.stored("a")
    for _ in range(50):
        assert plugin.is_schedulable_after_claim_change(info, None, mine) is QueueingHint.QUEUE
    assert reads.count("ResourceClaim") == 1
    setup.cluster.claims.create({**claim("third")})  # a new version of the stored claims
    assert plugin.is_schedulable_after_claim_change(info, None, mine) is QueueingHint.QUEUE
    assert reads.count("ResourceClaim") == 2


def test_one_claim_event_reads_the_claim_once_for_every_pending_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each claim event runs the hint for every pending pod. Wrapping the old and new claim and
    comparing their statuses per call was half the hint's CPU on the dev cluster
    (SchedulingWithResourceClaim 5000pods_500nodes, py-spy of the operator); upstream's hint
    compares the two statuses per call too, but in Go. The event's claims are read once."""
    from scheduler_core.plugins.dynamicresources import dynamic_resources

    setup = Setup([claim("a"), claim("other")])
    made: list[str] = []

    class Counted(ResourceClaim):
        __slots__ = ()

        def __init__(self, obj: Any) -> None:
            made.append(str(obj["metadata"]["name"]))
            super().__init__(obj)

    monkeypatch.setattr(dynamic_resources, "ResourceClaim", Counted)
    old = setup.stored("other")
    new = {**old, "status": {"reservedFor": [{"resource": "pods", "name": "x", "uid": "uid-x"}]}}
    pods = [PodInfo(make_pod().name(f"p{i}").uid(f"uid-p{i}").resource_claim("gpu", claim="a").obj())
            for i in range(50)]  # fmt: skip
    assert [setup.plugin.is_schedulable_after_claim_change(p, old, new) for p in pods] == [QueueingHint.SKIP] * 50
    assert made.count("other") == 2  # the event's old and new claim, once each
    # the same claims as another event (a new object): read again; a user of the claim is queued
    user = PodInfo(make_pod().name("u").uid("uid-u").resource_claim("gpu", claim="other").obj())
    assert setup.plugin.is_schedulable_after_claim_change(user, old, {**new}) is QueueingHint.QUEUE
    assert made.count("other") == 4


@pytest.mark.parametrize(
    "node_selector",
    [
        pytest.param(ALLOCATED_ON_N2["nodeSelector"], id="matchFields: one node"),
        pytest.param(
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]},
            id="matchExpressions: a zone",
        ),
        pytest.param(
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Bogus", "values": ["b"]}]}]},
            id="a bad term: no node",
        ),
    ],
)
def test_filter_batch_of_allocated_claims_is_the_per_node_filter(node_selector: dict[str, Any]) -> None:
    """Pods sharing an allocated claim (SchedulingWithResourceClaim: five pods a claim) were
    filtered node by node, each node's labels matched against the claim's node selector in
    Python; the batch form answers from the columns, the same answer."""
    from scheduler_core.framework import NodeColumns

    allocated = {**ALLOCATED_ON_N2, "nodeSelector": node_selector}
    setup = Setup([claim("a", allocation=allocated)], nodes=("n1", "n2", "n3"))
    setup.nodes = [NodeInfo(node(n, labels={"zone": z})) for n, z in (("n1", "a"), ("n2", "b"), ("n3", "b"))]
    state, info = CycleState(), PodInfo(PA.obj())
    assert setup.plugin.pre_filter(state, info, setup.nodes)[1] is None
    per_node = [setup.plugin.filter(state, info, n) for n in setup.nodes]
    batch = setup.plugin.filter_batch(state, info, NodeColumns(setup.nodes))
    assert batch is not None and batch.tolist() == [status is None for status in per_node]
    assert {s.message() for s in per_node if s is not None} <= {"resourceclaim not available on the node"}
    # a claim still to allocate: per node (the allocator answers node by node)
    state, info = CycleState(), PodInfo(PB.obj())
    setup.cluster.claims.create(claim("b"))
    assert setup.plugin.pre_filter(state, info, setup.nodes)[1] is None
    assert setup.plugin.filter_batch(state, info, NodeColumns(setup.nodes)) is None


def test_prebind_gives_up_after_five_conflicts_with_the_last_one() -> None:
    """retry.DefaultRetry: five tries, a GET before each of the last four; the error is the last
    conflict's, as RetryOnConflict returns it (bindClaim's words around the API server's)."""
    from scheduler_core.framework.writes import Written
    from scheduler_core.simulator import apiserver

    setup = Setup([claim("a")])
    calls: list[Verb] = []
    write = setup.cluster.write

    async def conflicting(call: Write) -> Written:
        calls.append(call.verb)
        if call.verb is Verb.UPDATE and call.subresource == STATUS:
            return None, apiserver.conflict(RESOURCE_CLAIMS.qualified, call.name, "the object has been modified")
        return await write(call)

    setup.cluster.write = conflicting  # type: ignore[method-assign]
    state, info, _ = setup.cycle(PA.obj())
    setup.plugin.reserve(state, info, "n1")
    status = asyncio.run(setup.plugin.pre_bind(state, info, "n1"))
    assert status is not None
    assert status.message().endswith(
        "add allocation and reservation to claim default/a: Operation cannot be fulfilled on "
        'resourceclaims.resource.k8s.io "a": the object has been modified'
    )
    assert calls == [Verb.UPDATE, Verb.UPDATE] + [Verb.GET, Verb.UPDATE] * 4  # the finalizer once, then status


def test_pre_bind_pre_flight_skips_a_pod_without_claims_and_errs_without_state() -> None:
    # Upstream PreBindPreFlight: Skip when the cycle found no claims, an error when PreFilter
    # wrote no state; parallel either way.
    setup = Setup([claim("a")])
    state, info = CycleState(), PodInfo(make_pod().name("plain").uid("uid-plain").obj())
    _, pre_filter = setup.plugin.pre_filter(state, info, setup.nodes)
    assert pre_filter is not None and pre_filter.code is Code.SKIP
    answer, flight = setup.plugin.pre_bind_pre_flight(state, info, "n1")
    assert answer is not None and answer.allow_parallel and flight is not None and flight.code is Code.SKIP
    _, flight = setup.plugin.pre_bind_pre_flight(CycleState(), info, "n1")
    assert flight is not None and flight.code is Code.ERROR and flight.message() == "not found"


def test_building_the_plugin_loads_the_cel_interpreter_before_any_pod() -> None:
    # The first DRA pod of a process paid the interpreter's load in its cycle (bench/README.md,
    # "A pod's timeline"); a profile build pays it now.
    device_cel.compile_selector.cache_clear()  # (the interpreter loads once per process)
    Setup([claim("a")])
    assert device_cel._cel.cache_info().currsize == 1
    assert device_cel.compile_selector.cache_info().currsize == 1
