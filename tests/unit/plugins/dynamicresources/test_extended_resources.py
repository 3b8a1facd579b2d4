"""DynamicResources with extended resources backed by DRA (``DRAExtendedResource``, beta, on):
the special claim, inside the whole scheduler (``simulate``) and extension point by extension
point. Ids name upstream cases of ``dynamicresources/extendeddynamicresources_test.go`` and
``dynamicresources_test.go`` (k8s.io/kubernetes v1.36.3) where one exists."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings

from scheduler_core.framework import Code, CycleState, NodeInfo, PodInfo, Status
from scheduler_core.framework.extended_resources import DeviceClassResolver
from scheduler_core.framework.writes import PODS, RESOURCE_CLAIMS, patch_pod_status
from scheduler_core.plugins.dynamicresources import DynamicResources, extended
from scheduler_core.plugins.dynamicresources.dynamic_resources import STATE_KEY
from scheduler_core.plugins.dynamicresources.extended import requests_and_mappings
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.simulator import InputError, load_texts, simulate
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_core.tenancy.scoped_api import ScopedClusterAPI
from tests.unit.simulator.test_mutation_property import mutated
from tests.wrappers import make_pod, node

from .test_dynamic_resources import by_name, run
from .test_extension_points import gpu_slice

EXAMPLE = Path(__file__).parents[4] / "examples" / "dra" / "extended-resources.yaml"
EXAMPLE_DOCUMENTS = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d]
GPU = "example.com/gpu"
INIT = "example.com/gpuinit"
DRIVER = "gpu.example.com"
ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def device_class(name: str = "gpu", extended: str | None = GPU) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def container(name: str, requests: dict[str, str], sidecar: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {"name": name, "image": "pause", "resources": {"requests": requests, "limits": requests}}
    if sidecar:
        found["restartPolicy"] = "Always"
    return found


def k8s_slice(node_name: str, devices: int) -> dict[str, Any]:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", **gpu_slice(node_name, devices)}


# -- createRequestsAndMappings (extendeddynamicresources_test.go) --------------------------------------
CLASSES = DeviceClassResolver([device_class("class", GPU), device_class("classInit", INIT)])


def _request(name: str, device_class_name: str, count: int) -> dict[str, Any]:
    return {
        "name": name,
        "exactly": {"deviceClassName": device_class_name, "allocationMode": "ExactCount", "count": count},
    }


def _mapping(container_name: str, resource: str, request: str) -> dict[str, str]:
    return {"containerName": container_name, "resourceName": resource, "requestName": request}


@pytest.mark.parametrize(
    ("spec", "want_requests", "want_mappings"),
    [
        pytest.param(
            make_pod()
            .name("p")
            .containers([container("con0", {GPU: "1"})])
            .init_containers([container("init-con0", {INIT: "2"})])
            .obj(),
            [_request("container-0-request-0", "classInit", 2), _request("container-1-request-0", "class", 1)],
            [_mapping("con0", GPU, "container-1-request-0"), _mapping("init-con0", INIT, "container-0-request-0")],
            id="one init container, one regular container",
        ),
        pytest.param(
            make_pod()
            .name("p")
            .containers([container("con0", {GPU: "1"})])
            .init_containers([container("init-con0", {INIT: "1"}), container("init-con1", {INIT: "2"})])
            .obj(),
            [_request("container-1-request-0", "classInit", 2), _request("container-2-request-0", "class", 1)],
            [
                _mapping("con0", GPU, "container-2-request-0"),
                _mapping("init-con0", INIT, "container-1-request-0"),
                _mapping("init-con1", INIT, "container-1-request-0"),
            ],
            id="two init containers, one regular container",
        ),
        pytest.param(
            make_pod()
            .name("p")
            .containers([container("con0", {GPU: "1"})])
            .init_containers(
                [
                    container("init-con0", {INIT: "1"}),
                    container("sidecar-con1", {INIT: "1"}, sidecar=True),
                    container("init-con2", {INIT: "2"}),
                ]
            )
            .obj(),
            [
                _request("container-1-request-0", "classInit", 1),
                _request("container-2-request-0", "classInit", 2),
                _request("container-3-request-0", "class", 1),
            ],
            [
                _mapping("con0", GPU, "container-3-request-0"),
                _mapping("sidecar-con1", INIT, "container-1-request-0"),
                _mapping("init-con0", INIT, "container-1-request-0"),
                _mapping("init-con2", INIT, "container-2-request-0"),
            ],
            id="three init containers, one sidecar, one regular container",
        ),
        pytest.param(
            make_pod()
            .name("p")
            .containers([container("con0", {GPU: "1", "deviceclass.resource.kubernetes.io/classInit": "2"})])
            .obj(),
            [_request("container-0-request-0", "classInit", 2), _request("container-0-request-1", "class", 1)],
            [
                _mapping("con0", "deviceclass.resource.kubernetes.io/classInit", "container-0-request-0"),
                _mapping("con0", GPU, "container-0-request-1"),
            ],
            id="one container, one explicit and one implicit request",
        ),
    ],
)
def test_requests_and_mappings(
    spec: dict[str, Any], want_requests: list[dict[str, Any]], want_mappings: list[dict[str, str]]
) -> None:
    scalars = PodInfo(spec).requests.scalar_resources
    requests, mappings = requests_and_mappings(spec, scalars, CLASSES)
    assert requests == want_requests
    assert mappings == want_mappings


# -- the whole scheduler -----------------------------------------------------------------------------
def _claims(sim: Any) -> list[dict[str, Any]]:
    return list(sim.cluster.objects("ResourceClaim"))


def test_the_special_claim_is_created_allocated_reserved_and_named_in_the_pod_status() -> None:
    """extended-resource-name-with-resources: PreBind creates the claim (annotation, generated
    name, the pod as controlling owner, the finalizer), allocates and reserves it, and writes the
    pod's ``status.extendedResourceClaimStatus``; the report shows the devices."""
    sim = run(
        [
            node("node-a"),
            device_class(),
            k8s_slice("node-a", 2),
            make_pod().name("p").containers([container("c", {GPU: "2", "cpu": "1"})]).obj(),
        ]
    )
    report = by_name(sim)["p"]
    assert report.node == "node-a"
    (claim,) = _claims(sim)
    stored = sim.cluster.pod("default", "p")
    assert stored is not None
    meta = claim["metadata"]
    assert meta["name"].startswith("p-extended-resources-") and len(meta["name"]) == len("p-extended-resources-") + 5
    assert meta["generateName"] == "p-extended-resources-"
    assert meta["annotations"] == {ANNOTATION: "true"}
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": stored["metadata"]["uid"], "controller": True}
    ]
    assert meta["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    # the request's index is the resource's among the container's requests, by name (cpu first)
    assert claim["spec"] == {"devices": {"requests": [_request("container-0-request-1", "gpu", 2)]}}
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "p", "uid": stored["metadata"]["uid"]}]
    assert report.devices == {meta["name"]: [f"{DRIVER}/node-a/gpu-0", f"{DRIVER}/node-a/gpu-1"]}
    assert stored["status"]["extendedResourceClaimStatus"] == {
        "requestMappings": [_mapping("c", GPU, "container-0-request-1")],
        "resourceClaimName": meta["name"],
    }


@pytest.mark.parametrize(
    ("nodes", "requests", "want_node", "want_devices"),
    [
        pytest.param(
            [node("node-a", extra={GPU: "1"})],
            {GPU: "1"},
            "node-a",
            None,
            id="extended-resource-name-with-node-resource",
        ),
        pytest.param(
            [node("node-a", extra={"example.com/aaa": "1"})],
            {GPU: "1", "example.com/aaa": "1"},
            "node-a",
            [f"{DRIVER}/node-a/gpu-0"],
            id="extended-resource-one-device-plugin-one-dra",
        ),
        pytest.param(
            [node("node-a", extra={GPU: "0"})],
            {GPU: "1"},
            "node-a",
            [f"{DRIVER}/node-a/gpu-0"],
            id="extended-resource-name-with-zero-allocatable",
        ),
        pytest.param(
            [node("node-a")],
            {"deviceclass.resource.kubernetes.io/gpu": "1"},
            "node-a",
            [f"{DRIVER}/node-a/gpu-0"],
            id="implicit-extended-resource-name-with-resources",
        ),
    ],
)
def test_device_plugin_or_dra(
    nodes: list[dict[str, Any]], requests: dict[str, str], want_node: str, want_devices: list[str] | None
) -> None:
    sim = run(
        [
            *nodes,
            device_class(),
            k8s_slice("node-a", 1),
            make_pod().name("p").containers([container("c", requests)]).obj(),
        ]
    )
    report = by_name(sim)["p"]
    assert report.node == want_node
    assert list(report.devices.values()) == ([want_devices] if want_devices else [])
    if want_devices is None:
        assert _claims(sim) == []  # the device plugin serves it all: no claim


def test_more_devices_than_exist_is_upstreams_failed_scheduling() -> None:
    """Fit leaves the resource to DynamicResources, whose allocator finds too few devices."""
    sim = run(
        [
            node("node-a"),
            node("node-b"),
            device_class(),
            k8s_slice("node-a", 2),
            make_pod().name("p").containers([container("c", {GPU: "3"})]).obj(),
        ]
    )
    report = by_name(sim)["p"]
    assert report.node is None
    assert report.message == (
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert _claims(sim) == []  # nothing is created before PreBind


def test_pods_never_share_a_device_nor_with_a_claim_of_a_template() -> None:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
    }
    both = (
        make_pod()
        .name("both")
        .containers(
            [
                {
                    **container("c", {GPU: "1"}),
                    "resources": {"requests": {GPU: "1"}, "limits": {GPU: "1"}, "claims": [{"name": "dev"}]},
                }
            ]
        )
        .spec(resourceClaims=[{"name": "dev", "resourceClaimTemplateName": "one"}])
        .obj()
    )
    sim = run(
        [
            node("node-a"),
            device_class(),
            k8s_slice("node-a", 3),
            template,
            both,
            make_pod().name("second").containers([container("c", {GPU: "1"})]).obj(),
            make_pod().name("third").containers([container("c", {GPU: "1"})]).obj(),
        ]
    )
    reports = by_name(sim)
    assert [reports[n].node for n in ("both", "second", "third")] == ["node-a", "node-a", None]
    devices = [d for n in ("both", "second") for ds in reports[n].devices.values() for d in ds]
    assert sorted(devices) == [f"{DRIVER}/node-a/gpu-{i}" for i in range(3)]
    assert len(reports["both"].devices) == 2  # the template's claim and the special one


def test_a_claim_of_its_own_and_a_resource_a_device_plugin_serves_fail_prebind_as_upstream() -> None:
    """Upstream v1.36.3's quirk (run through the real kube-scheduler in
    tests/e2e/test_dra_extended.py): the special claim, with no requests on a node whose device
    plugin serves the resource, is still allocated and created, and PreBind finds no mapping."""
    template = {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}},
    }  # fmt: skip
    main = container("c", {GPU: "1"})
    main["resources"]["claims"] = [{"name": "dev"}]
    spec = (
        make_pod()
        .name("p")
        .containers([main])
        .spec(resourceClaims=[{"name": "dev", "resourceClaimTemplateName": "one"}])
        .obj()
    )
    report = by_name(run([node("node-a", extra={GPU: "1"}), device_class(), k8s_slice("node-a", 1), template, spec]))
    assert report["p"].node is None
    assert report["p"].message == (
        'running PreBind plugin "DynamicResources": nil or empty request mappings, no update of pod default/p '
        "ExtendedResourceClaimStatus"
    )


def test_a_deleted_pod_frees_the_devices_of_its_special_claim() -> None:
    sim = run(
        [
            node("node-a"),
            device_class(),
            k8s_slice("node-a", 1),
            make_pod().name("p").containers([container("c", {GPU: "1"})]).obj(),
        ]
    )
    stored = sim.cluster.pod("default", "p")
    assert stored is not None and _claims(sim)
    asyncio.run(sim.cluster.delete(PODS, stored))
    assert _claims(sim) == []  # owned by the pod: gone with it


# -- extension point by extension point --------------------------------------------------------------
class Setup:
    def __init__(self, devices: int = 1, claims: tuple[dict[str, Any], ...] = ()) -> None:
        self.reads: list[str] = []  # the kinds the plugin read
        self.nodes = [NodeInfo(node("n1")), NodeInfo(node("n2"))]
        self.cluster = InMemoryCluster(
            nodes=[node("n1"), node("n2")],
            objects={
                "DeviceClass": [device_class()],
                "ResourceSlice": [gpu_slice("n1", devices)],
                "ResourceClaim": list(claims),
            },
        )
        self.tasks: list[Any] = []  # PostFilter's and Unreserve's writes, run by drain()
        handle = FrameworkHandle(
            "p",
            snapshot=lambda: None,  # type: ignore[arg-type, return-value]
            api=self.cluster,
            objects=self._objects,
            shared={},
            spawn=self.tasks.append,  # type: ignore[arg-type]
        )
        self.plugin = DynamicResources(None, handle)

    def _objects(self, kind: str) -> Any:
        self.reads.append(kind)
        return self.cluster.objects(kind)

    def add(self, spec: dict[str, Any]) -> PodInfo:
        return PodInfo(
            self.cluster.add_pod({**spec, "metadata": {**spec["metadata"], "uid": f"uid-{spec['metadata']['name']}"}})
        )

    def cycle(self, info: PodInfo) -> tuple[CycleState, list[Status | None]]:
        state = CycleState()
        _, status = self.plugin.pre_filter(state, info, self.nodes)
        assert status is None, status
        return state, [self.plugin.filter(state, info, n) for n in self.nodes]

    def drain(self) -> None:
        for task in self.tasks:
            asyncio.run(task)
        self.tasks.clear()


def test_a_pod_without_dra_backed_requests_is_skipped_without_reading_claims() -> None:
    setup = Setup()
    info = setup.add(make_pod().name("p").containers([container("c", {"example.com/aaa": "1"})]).obj())
    assert setup.plugin.pre_filter(CycleState(), info, setup.nodes)[1] == Status.skip()
    assert setup.reads == ["DeviceClass"]  # no class backs it: the claims are never listed
    setup.reads.clear()
    info = setup.add(make_pod().name("q").containers([container("c", {"cpu": "1"})]).obj())
    assert setup.plugin.pre_filter(CycleState(), info, setup.nodes)[1] == Status.skip()
    assert setup.reads == []


def test_reserved_devices_are_in_flight_for_the_next_pod() -> None:
    """Reserve keeps the special claim's allocation in flight (``SignalClaimPendingAllocation``):
    the next pod finds no free device until PreBind lands; Unreserve frees it."""
    setup = Setup(devices=1)
    first, second = (
        setup.add(make_pod().name("a").containers([container("c", {GPU: "1"})]).obj()),
        setup.add(make_pod().name("b").containers([container("c", {GPU: "1"})]).obj()),
    )
    state, statuses = setup.cycle(first)
    assert statuses[0] is None
    assert setup.plugin.reserve(state, first, "n1") is None
    _, statuses = setup.cycle(second)
    assert statuses == [Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")] * 2
    setup.plugin.unreserve(state, first, "n1")
    _, statuses = setup.cycle(second)
    assert statuses[0] is None


def test_prebind_failure_after_creating_the_claim_deletes_it_at_unreserve() -> None:
    """extended-resource-name-with-resources-fail-patch: the pod's status write fails (the pod is
    gone), PreBind fails, and Unreserve deletes the claim it created."""
    setup = Setup()
    info = setup.add(make_pod().name("p").containers([container("c", {GPU: "1"})]).obj())
    state, _ = setup.cycle(info)
    assert setup.plugin.reserve(state, info, "n1") is None
    del setup.cluster.pods[info.uid]
    status = asyncio.run(setup.plugin.pre_bind(state, info, "n1"))
    assert status is not None and status.code == Code.ERROR
    assert status.message() == 'update pod default/p ExtendedResourceClaimStatus: pods "p" not found'
    assert len(list(setup.cluster.objects("ResourceClaim"))) == 1
    setup.plugin.unreserve(state, info, "n1")
    setup.drain()
    assert list(setup.cluster.objects("ResourceClaim")) == []


def test_a_claim_left_from_an_earlier_cycle_is_refused_then_deleted_by_post_filter() -> None:
    """extended-resource-name-with-resources-has-claim and -delete-claim."""
    setup = Setup()
    info = setup.add(make_pod().name("p").containers([container("c", {GPU: "1"})]).obj())
    left = {
        "metadata": {
            "name": "p-extended-resources-abcde",
            "namespace": "default",
            "annotations": {ANNOTATION: "true"},
            "finalizers": ["resource.kubernetes.io/delete-protection"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": info.uid, "controller": True}],
        },
        "spec": {"devices": {"requests": [_request("container-0-request-0", "gpu", 1)]}},
    }
    setup.cluster.claims.create(left)
    state, statuses = setup.cycle(info)
    assert statuses == [Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot schedule extended resource claim")] * 2
    _, status = setup.plugin.post_filter(state, info, {})  # type: ignore[arg-type]
    assert status == Status(Code.UNSCHEDULABLE, "deletion of ResourceClaim completed")
    setup.drain()
    assert list(setup.cluster.objects("ResourceClaim")) == []
    _, statuses = setup.cycle(info)
    assert statuses[0] is None


# -- the example -------------------------------------------------------------------------------------
def test_the_example_as_docs_dynamic_resources_md_shows_it() -> None:
    reports = by_name(run(EXAMPLE_DOCUMENTS))
    assert {n: (r.node, sorted(d for ds in r.devices.values() for d in ds)) for n, r in reports.items()} == {
        "trainer": ("node-a", [f"{DRIVER}/node-a/gpu-0", f"{DRIVER}/node-a/gpu-1"]),
        "inference": ("node-b", []),  # its device plugin's
        "batch": ("node-a", [f"{DRIVER}/node-a/gpu-2"]),
        "too-big": (None, []),
    }
    assert reports["too-big"].message.startswith(
        "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 cannot allocate all claims."
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(EXAMPLE_DOCUMENTS))
def test_mutated_example_simulates_or_reports_input_errors(docs: list[Any]) -> None:
    """Nothing written in a DeviceClass or a pod's requests crashes the special claim's code."""
    try:
        simulate(load_texts([("mutated.yaml", yaml.safe_dump_all(docs))]))
    except InputError as exc:
        assert exc.problems
        assert all(str(p).startswith("mutated.yaml: ") for p in exc.problems)


# -- tenancy ------------------------------------------------------------------------------------------
def test_a_tenant_profile_cannot_create_or_delete_another_namespaces_claims_nor_write_its_pods() -> None:
    cluster = InMemoryCluster()
    api = ScopedClusterAPI(cluster, namespace="team-a", profile="p", objects=cluster.objects)
    foreign = {"metadata": {"generateName": "x-extended-resources-", "name": "x", "namespace": "team-b"}}
    created, status = asyncio.run(api.create(RESOURCE_CLAIMS, foreign))
    assert (
        created is None
        and status is not None
        and "creating for claim team-b/x-extended-resources- refused" in (status.message())
    )
    _, status = asyncio.run(api.delete(RESOURCE_CLAIMS, foreign))
    assert status is not None and "deleting for claim team-b/x refused" in status.message()
    other = PodInfo({"metadata": {"name": "x", "namespace": "team-b", "uid": "u"}, "spec": {"containers": []}})
    status = asyncio.run(patch_pod_status(api, other, {"extendedResourceClaimStatus": {}}))
    assert status is not None and "extendedResourceClaimStatus of pod team-b/x refused" in status.message()
    own = {"metadata": {"generateName": "x-extended-resources-", "namespace": "team-a"}, "spec": {}}
    created, status = asyncio.run(api.create(RESOURCE_CLAIMS, own))
    assert status is None and created is not None and created["metadata"]["namespace"] == "team-a"


def test_a_failed_delete_at_unreserve_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    setup = Setup()
    info = setup.add(make_pod().name("p").containers([container("c", {GPU: "1"})]).obj())
    state, _ = setup.cycle(info)
    assert setup.plugin.reserve(state, info, "n1") is None
    del setup.cluster.pods[info.uid]
    assert asyncio.run(setup.plugin.pre_bind(state, info, "n1")) is not None
    (created,) = setup.cluster.objects("ResourceClaim")
    meta = created["metadata"]
    assert setup.cluster.delete_object("ResourceClaim", meta["namespace"], meta["name"])  # gone meanwhile (owner GC)
    setup.plugin.unreserve(state, info, "n1")
    setup.drain()
    name = created["metadata"]["name"]
    assert f"delete of resourceclaim default/{name} failed: update resourceclaim default/{name}:" in caplog.text


def test_filter_makes_the_special_claim_once_per_kind_of_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node's claim depends on the node only through what it offers of the pod's scalar
    resources: nodes alike share one (made once, so the allocator validates its requests once
    per cycle); a node whose device plugin serves the resource gets none."""
    made: list[dict[str, int]] = []
    original = extended.node_claim

    def counted(*args: Any) -> Any:
        made.append(dict(args[4]))
        return original(*args)

    monkeypatch.setattr(extended, "node_claim", counted)
    setup = Setup(devices=2)
    setup.nodes = [NodeInfo(node("n1")), NodeInfo(node("n2", extra={GPU: "2"})), NodeInfo(node("n3"))]
    info = setup.add(make_pod().name("p").containers([container("c", {GPU: "1"})]).obj())
    state, statuses = setup.cycle(info)
    assert statuses == [None, None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cannot allocate all claims")]
    assert made == [{}, {GPU: 2}]
    node_claims = state.read_optional(STATE_KEY, object).node_claims  # type: ignore[attr-defined]
    assert sorted(node_claims) == ["n1"]
    assert node_claims["n1"].claim["spec"]["devices"]["requests"] == [_request("container-0-request-0", "gpu", 1)]
