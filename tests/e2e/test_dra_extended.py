"""Extended resources backed by DRA (``DRAExtendedResource``, beta and on by default in v1.36.3)
on a real API server: the test plays a DRA driver whose DeviceClass names an extended resource
(``spec.extendedResourceName``) and publishes ResourceSlices; pods request that resource in their
containers, as they would a device plugin's.

Every scenario runs twice, on fresh nodes of its own: through the operator (unprivileged
identity, manifests/rbac.yaml) and through the real kube-scheduler v1.36.3 (its own process and
schedulerName, the gate at its default). Both must place the pod on the same node with the same
devices, in a special claim (generated name ``<pod>-extended-resources-*``, the pod its
controlling owner) named by the pod's ``status.extendedResourceClaimStatus`` with the same
request mappings; a node that advertises the resource itself (a device plugin) gets the pod with
no claim; a pod asking for more devices than exist gets the same FailedScheduling reasons.

On the shared dev cluster, the operators of other sessions serve this test's profile too; those
without extended resources cannot bind a pod whose resource only DRA provides (their
NodeResourcesFit finds it insufficient). The one scenario they could bind (a device plugin's
node, no claim) ends the same whoever binds it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from scheduler_core.simulator import load_texts, simulate
from tests import wrappers
from tests.e2e import Cluster
from tests.e2e import test_dra as dra
from tests.e2e.dra_support import GROUP, VERSION, Allocation, Device, Driver, claim_template, device, exactly
from tests.e2e.extender_support import kube_scheduler
from tests.e2e.operator_support import (
    Env,
    unique,
    wait_all_bound,
)
from tests.e2e.test_dra import _claim_part, _ensure_operator, _kube_scheduler_config

pytestmark = pytest.mark.e2e

ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
CANNOT_ALLOCATE = "cannot allocate all claims"  # dynamicresources.go v1.36.3, Filter


@dataclass(frozen=True)
class Scenario:
    slices: dict[int, list[Device]]  # node index -> the driver's devices there
    advertised: dict[int, str]  # node index -> the resource in its allocatable (a device plugin)
    requests: dict[str, str]  # container name -> how many of the resource


THREE_NODES = 3
SCHEDULABLE = [
    pytest.param(Scenario({1: [device("gpu-0"), device("gpu-1")]}, {2: "1"}, {"main": "2"}),
                 id="two-devices-from-the-only-node-that-has-enough"),
    pytest.param(Scenario({1: [device("gpu-0"), device("gpu-1"), device("gpu-2")]}, {}, {"main": "1", "side": "2"}),
                 id="two-containers-two-requests-one-claim"),
    pytest.param(Scenario({}, {0: "1", 2: "0"}, {"main": "1"}), id="a-device-plugin-node-no-claim"),
]  # fmt: skip
TOO_MANY = Scenario({0: [device("gpu-0"), device("gpu-1")]}, {}, {"main": "3"})


@pytest.fixture
def driver(api: client.ApiClient) -> Iterator[Driver]:
    created = Driver(api)
    created.install(extended=True)
    try:
        yield created
    finally:
        created.close()


@dataclass(frozen=True)
class Placement:
    """Where a scheduler put the pod and with what devices; node names as test-node indices."""

    node: int
    allocation: Allocation | None
    mappings: tuple[tuple[str, str], ...]  # (container, request)


class Run(dra.Run):
    """A scenario's nodes (some advertising the resource), slices and pod under one scheduler."""

    @classmethod
    def prepare_extended(cls, env: Env, driver: Driver, namespace: str, scheduler: str, scenario: Scenario) -> Run:
        label = unique("e2e-drax")
        nodes = []
        for i in range(THREE_NODES):
            extra = {driver.extended_resource: scenario.advertised[i]} if i in scenario.advertised else None
            name = f"{label}-n{i:03d}"
            env.core.create_node(wrappers.node(name, cpu="2", memory="4Gi", extra=extra, labels={"e2e-run": label}))
            nodes.append(name)
        env.nodes.extend(nodes)  # deleted after the test
        for index, devices in scenario.slices.items():
            driver.publish(nodes[index], devices)
        return cls(env, driver, namespace, scheduler, label, nodes)

    def create_extended_pod(self, scenario: Scenario, name: str = "user", template: str | None = None) -> None:
        """The pod; with ``template``, its first container also uses a claim made from it."""
        containers: list[dict[str, Any]] = [
            {"name": c, "image": "pause", "resources": {"requests": {self.driver.extended_resource: n},
                                                        "limits": {self.driver.extended_resource: n}}}
            for c, n in scenario.requests.items()
        ]  # fmt: skip
        spec: dict[str, Any] = {}
        if template is not None:
            containers[0]["resources"]["claims"] = [{"name": "dev"}]
            spec["resourceClaims"] = [{"name": "dev", "resourceClaimTemplateName": template}]
        pod = wrappers.pod(
            name,
            self.namespace,
            scheduler_name=self.scheduler,
            node_selector={"e2e-run": self.label},
            containers=containers,
            **spec,
        )
        self.env.core.create_namespaced_pod(self.namespace, pod)

    def placed(self, name: str = "user") -> Placement:
        node = wait_all_bound(self.env.core, self.namespace, {name}, timeout=60)[name]
        pod = self.env.api.sanitize_for_serialization(self.env.core.read_namespaced_pod(name, self.namespace))  # type: ignore[no-untyped-call]
        status = (pod.get("status") or {}).get("extendedResourceClaimStatus")
        if status is None:
            assert self._special_claims(pod) == []
            return Placement(self.nodes.index(node), None, ())
        custom: Any = client.CustomObjectsApi(self.env.api)
        claim = custom.get_namespaced_custom_object(GROUP, VERSION, self.namespace, "resourceclaims",
                                                    status["resourceClaimName"])  # fmt: skip
        assert self._special_claims(pod) == [claim["metadata"]["name"]]
        assert claim["metadata"]["name"].startswith(f"{name}-extended-resources-")
        for mapping in status["requestMappings"]:
            assert mapping["resourceName"] == self.driver.extended_resource
        mappings = tuple(sorted((m["containerName"], m["requestName"]) for m in status["requestMappings"]))
        return Placement(self.nodes.index(node), Allocation.of(claim, self.nodes), mappings)

    def _special_claims(self, pod: dict[str, Any]) -> list[str]:
        """The claims annotated as a special claim whose controlling owner is ``pod``."""
        custom: Any = client.CustomObjectsApi(self.env.api)
        claims = custom.list_namespaced_custom_object(GROUP, VERSION, self.namespace, "resourceclaims")["items"]
        uid = pod["metadata"]["uid"]
        return [
            c["metadata"]["name"] for c in claims
            if (c["metadata"].get("annotations") or {}).get(ANNOTATION) == "true"
            and any(o.get("uid") == uid and o.get("controller") for o in c["metadata"].get("ownerReferences") or ())
        ]  # fmt: skip


def _operator_run(env: Env, driver: Driver, scenario: Scenario) -> Run:
    run = Run.prepare_extended(env, driver, env.home, env.scheduler, scenario)
    _ensure_operator(env)
    return run


def _kube_run(env: Env, driver: Driver, scenario: Scenario) -> Run:
    return Run.prepare_extended(env, driver, env.namespace(), f"kube-drax-{uuid.uuid4().hex[:6]}", scenario)


@pytest.mark.parametrize("scenario", SCHEDULABLE)
def test_the_special_claim_is_allocated_and_named_in_the_pod_status_as_kube_scheduler_does(
    env: Env, cluster: Cluster, driver: Driver, tmp_path: Path, scenario: Scenario
) -> None:
    ours = _operator_run(env, driver, scenario)
    ours.create_extended_pod(scenario)
    placement = ours.placed()
    if scenario.slices:
        assert placement.allocation is not None
        assert placement.allocation.node == placement.node
        assert placement.allocation.reserved_for == ("user",)
    assert env.operators[0].problems() == []

    kube = _kube_run(env, driver, scenario)
    with kube_scheduler(cluster, tmp_path, _kube_scheduler_config(kube.scheduler)):
        kube.create_extended_pod(scenario)
        assert kube.placed() == placement


def test_more_devices_than_exist_is_upstreams_failed_scheduling(
    env: Env, cluster: Cluster, driver: Driver, tmp_path: Path
) -> None:
    """NodeResourcesFit leaves the resource to DynamicResources on nodes that do not advertise
    it; the allocator finds too few devices everywhere, and no claim is created."""
    ours = _operator_run(env, driver, TOO_MANY)
    ours.create_extended_pod(TOO_MANY)
    message = ours.failure(instance=env.operators[0].identity)
    assert _claim_part(message)[0] == [f"{THREE_NODES} {CANNOT_ALLOCATE}"]

    kube = _kube_run(env, driver, TOO_MANY)
    with kube_scheduler(cluster, tmp_path, _kube_scheduler_config(kube.scheduler)):
        kube.create_extended_pod(TOO_MANY)
        upstream = kube.failure()
    assert _claim_part(upstream) == _claim_part(message)
    custom: Any = client.CustomObjectsApi(env.api)
    for namespace in (ours.namespace, kube.namespace):
        assert custom.list_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims")["items"] == []


def _simulated(run: Run, pod: str = "user") -> str:
    """Our scheduler, in process (``simulate``), on the objects of ``run`` as the API server
    holds them: the pod's FailedScheduling-style message."""
    api, core = run.env.api, run.env.core
    custom: Any = client.CustomObjectsApi(api)

    def plain(obj: Any) -> dict[str, Any]:
        found: dict[str, Any] = api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
        found["metadata"].pop("managedFields", None)
        return found

    def listed(kind: str, namespaced: bool = False) -> list[dict[str, Any]]:
        plural = kind.lower() + ("es" if kind.endswith("s") else "s")
        if namespaced:
            items = custom.list_namespaced_custom_object(GROUP, VERSION, run.namespace, plural)["items"]
        else:
            items = custom.list_cluster_custom_object(GROUP, VERSION, plural)["items"]
        return [{**i, "apiVersion": f"{GROUP}/{VERSION}", "kind": kind} for i in items]

    nodes = [{"apiVersion": "v1", "kind": "Node", **plain(core.read_node(n))} for n in run.nodes]
    manifest = {"apiVersion": "v1", "kind": "Pod", **plain(core.read_namespaced_pod(pod, run.namespace))}
    manifest["spec"]["schedulerName"] = "crd-scheduler"
    classes = [c for c in listed("DeviceClass") if c["metadata"]["name"] == run.driver.device_class]
    slices = [s for s in listed("ResourceSlice") if s["spec"]["driver"] == run.driver.name]
    objects = [*nodes, *classes, *slices, *listed("ResourceClaimTemplate", True), *listed("ResourceClaim", True)]
    simulation = simulate(load_texts([("cluster.yaml", yaml.safe_dump_all([*objects, manifest]))]))
    (report,) = simulation.pods
    return str(report.message)


def test_a_claim_of_its_own_and_a_resource_a_device_plugin_serves_fail_prebind_as_kube_scheduler_does(
    env: Env, cluster: Cluster, driver: Driver, tmp_path: Path
) -> None:
    """Upstream v1.36.3's quirk, kept: with a claim of its own, the pod's special claim is given
    to the allocator even where a device plugin serves the resource (``filterExtendedResources``
    returns a copy with no requests), PreBind creates it empty, and then finds no request
    mapping to write in the pod's status: PreBind fails, every attempt.

    Ours runs in process on the same objects: through the operator, on the shared cluster, the
    operators of other sessions (without extended resources) would bind the pod first."""
    scenario = Scenario({0: [device("gpu-0")]}, {0: "1"}, {"main": "1"})
    kube = _kube_run(env, driver, scenario)
    claim_template(env.api, kube.namespace, "one", [exactly("gpu", driver.device_class)])
    wanted = f"nil or empty request mappings, no update of pod {kube.namespace}/user ExtendedResourceClaimStatus"
    with kube_scheduler(cluster, tmp_path, _kube_scheduler_config(kube.scheduler)):
        kube.create_extended_pod(scenario, template="one")
        upstream = kube.failure()
        assert upstream == f'running PreBind plugin "DynamicResources": {wanted}'
        assert not env.core.read_namespaced_pod("user", kube.namespace).spec.node_name
        ours = _simulated(kube)
    assert ours == upstream, ours
