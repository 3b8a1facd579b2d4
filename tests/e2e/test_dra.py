"""DynamicResources on a real API server: the test plays a DRA driver publishing ResourceSlices
(``tests/e2e/dra_support.py``), the dev cluster's ``resourceclaim-controller`` makes each pod's
claim from its ResourceClaimTemplate, and the scheduler allocates it in PreBind (the claim's
``status.allocation`` and ``reservedFor``) before binding the pod.

Every scenario runs twice, on fresh nodes of its own: through the operator (unprivileged
identity, manifests/rbac.yaml) and through the real kube-scheduler v1.36.3 (its own process and
schedulerName). Both must allocate the same devices on the same node (the scenarios leave one
best answer: upstream breaks score ties at random) and, for a pod asking more than exists, give
the same FailedScheduling reasons. Three pods for two devices: no device is allocated twice.
A pod waiting for devices binds once the driver publishes them (the ResourceSlice watch is a
cluster event), and ``explain`` on a live snapshot gives the operator's reasons.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from tests import wrappers
from tests.e2e import Cluster, eventually
from tests.e2e.dra_support import (
    Allocation,
    Device,
    Driver,
    claim_template,
    device,
    exactly,
    first_available,
    generated_claim,
)
from tests.e2e.extender_support import kube_scheduler
from tests.e2e.operator_support import (
    ROOT,
    Env,
    create_nodes,
    failed_scheduling_notes,
    profile,
    unique,
    wait_all_bound,
)

pytestmark = pytest.mark.e2e

NODES = 3
# Every operator on the shared dev cluster serves every namespace's profiles, including the
# operators of other sessions whose code has no DynamicResources (they would bind our pods with
# their claims unallocated). Naming the plugin in the profile makes it invalid for them: they
# hold our pods (and say so in FailedScheduling events of their own, told apart by instance).
ONLY_WITH_DYNAMIC_RESOURCES = {"multiPoint": {"enabled": [{"name": "DynamicResources", "weight": 2}]}}
# upstream pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go v1.36.3 (Filter):
# the allocator found no devices for every claim on the node.
CANNOT_ALLOCATE = "cannot allocate all claims"
STILL_NOT_SCHEDULABLE = "still not schedulable"  # the same file, PostFilter: no claim to deallocate
# pkg/scheduler/framework/preemption/preemption.go v1.36.3: every node failed unresolvably.
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"


@dataclass(frozen=True)
class Scenario:
    slices: dict[int, list[Device]]  # node index -> the devices the driver publishes there
    requests: Callable[[Driver], list[dict[str, Any]]]  # the template's requests
    constraints: Callable[[Driver], list[dict[str, Any]]] = lambda _: []


def _model(driver: Driver, model: str) -> str:
    return f'device.attributes["{driver.name}"].model == "{model}"'


ONE_DEVICE = Scenario({1: [device("gpu-0"), device("gpu-1")]}, lambda d: [exactly("gpu", d.device_class)])
SCHEDULABLE = [
    pytest.param(ONE_DEVICE, id="one-device-from-the-only-node-that-has-them"),
    pytest.param(
        Scenario(
            {
                0: [device("gpu-0", model="a"), device("gpu-1", model="b"), device("gpu-2", model="b")],
                2: [device("gpu-0", model="b")],
            },
            lambda d: [exactly("gpu", d.device_class, count=2, cel=_model(d, "b"))],
        ),
        id="cel-selector-count-two",
    ),
    pytest.param(
        Scenario(
            {1: [device("gpu-0", model="a"), device("gpu-1", model="a")]},
            lambda d: [first_available("gpu", d.device_class, ("big", _model(d, "b")), ("small", _model(d, "a")))],
        ),
        id="first-available-falls-back-to-the-second-choice",
    ),
    pytest.param(
        Scenario(
            {0: [device("gpu-0", numa="0"), device("gpu-1", numa="1"), device("gpu-2", numa="1")]},
            lambda d: [exactly("gpu", d.device_class, count=2)],
            lambda d: [{"requests": ["gpu"], "matchAttribute": f"{d.name}/numa"}],
        ),
        id="match-attribute-same-numa-node",
    ),
]
TOO_MANY = Scenario({0: [device("gpu-0"), device("gpu-1")]}, lambda d: [exactly("gpu", d.device_class, count=3)])


@pytest.fixture
def driver(api: client.ApiClient) -> Iterator[Driver]:
    created = Driver(api)
    created.install()
    try:
        yield created
    finally:
        created.close()


@dataclass
class Run:
    """One scenario under one scheduler: its own nodes (label), namespace and pod."""

    env: Env
    driver: Driver
    namespace: str
    scheduler: str
    label: str
    nodes: list[str]

    @classmethod
    def prepare(cls, env: Env, driver: Driver, namespace: str, scheduler: str, scenario: Scenario) -> Run:
        label = unique("e2e-dra")
        nodes = create_nodes(env.core, NODES, label, cpu="2", memory="4Gi")
        env.nodes.extend(nodes)  # deleted after the test
        for index, devices in scenario.slices.items():
            driver.publish(nodes[index], devices)
        claim_template(env.api, namespace, "devices", scenario.requests(driver), scenario.constraints(driver))
        return cls(env, driver, namespace, scheduler, label, nodes)

    def create_pod(self, name: str = "user") -> None:
        # One container using a claim made from the template "devices".
        container = {
            "name": "c",
            "image": "pause",
            "resources": {"requests": {"cpu": "100m"}, "claims": [{"name": "dev"}]},
        }
        pod = wrappers.pod(
            name, self.namespace, scheduler_name=self.scheduler, node_selector={"e2e-run": self.label},
            containers=[container], resourceClaims=[{"name": "dev", "resourceClaimTemplateName": "devices"}],
        )  # fmt: skip
        self.env.core.create_namespaced_pod(self.namespace, pod)

    def bound(self, name: str = "user") -> tuple[int, Allocation]:
        placed = wait_all_bound(self.env.core, self.namespace, {name}, timeout=60)
        claim = generated_claim(self.env.api, self.namespace, name)
        return self.nodes.index(placed[name]), Allocation.of(claim, self.nodes)

    def failure(self, name: str = "user", instance: str | None = None) -> str:
        def failed() -> str:
            notes = failed_scheduling_notes(self.env.core, self.namespace, name, instance)
            assert notes, f"no FailedScheduling for {self.namespace}/{name} yet"
            return notes[-1]

        return eventually(failed, timeout=60)

    def settle(
        self, names: list[str], bound: int, instance: str | None = None
    ) -> tuple[list[tuple[tuple[str, int, str], ...]], list[str]]:
        """Wait until ``bound`` of the pods are bound and every other one has a FailedScheduling
        (posted by ``instance``); the devices of the bound ones (sorted) and the messages."""
        core = self.env.core

        def settled() -> tuple[list[tuple[tuple[str, int, str], ...]], list[str]]:
            pods = [p for p in core.list_namespaced_pod(self.namespace).items if p.metadata.name in names]
            placed = [p.metadata.name for p in pods if p.spec.node_name]
            assert len(placed) == bound, f"{len(placed)}/{bound} bound"
            notes = [failed_scheduling_notes(core, self.namespace, n, instance) for n in names if n not in placed]
            assert all(notes), "a pending pod has no FailedScheduling yet"
            devices = [
                Allocation.of(generated_claim(self.env.api, self.namespace, n), self.nodes).devices for n in placed
            ]
            return sorted(devices), [n[-1] for n in notes]

        return eventually(settled, timeout=60, interval=0.5)


def _kube_scheduler_config(scheduler: str) -> dict[str, Any]:
    return {"profiles": [{"schedulerName": scheduler}]}


def _claim_part(message: str) -> tuple[list[str], str]:
    """A FailedScheduling message's reasons that concern claims, and its PostFilter part with the
    node count as ``N``. Other tests' nodes on the shared cluster add reasons of their own (node
    affinity, taints) and raise the count; every one of them is unresolvable, so preemption
    counts them with ours."""
    main, _, post = message.partition(". ")
    total, _, reasons = main.partition(" nodes are available: ")
    count = total.removeprefix("0/")
    return [r for r in reasons.split(", ") if "claim" in r], post.replace(f"{count} ", "N ").replace(f"/{count}", "/N")


def _ensure_operator(env: Env) -> None:
    """The test's operator, serving a profile of DynamicResources alone (started once)."""
    if not env.operators:
        env.custom.create(env.home, profile("default", env.scheduler, plugins=ONLY_WITH_DYNAMIC_RESOURCES))
        env.start_operator()


def _operator_run(env: Env, driver: Driver, scenario: Scenario) -> Run:
    run = Run.prepare(env, driver, env.home, env.scheduler, scenario)
    _ensure_operator(env)
    return run


@pytest.mark.parametrize("scenario", SCHEDULABLE)
def test_claim_from_a_template_is_allocated_reserved_and_the_pod_binds_as_kube_scheduler_does(
    env: Env, cluster: Cluster, driver: Driver, tmp_path: Path, scenario: Scenario
) -> None:
    ours = _operator_run(env, driver, scenario)
    ours.create_pod()
    node, allocation = ours.bound()
    assert allocation.node == node
    assert allocation.reserved_for == ("user",)
    assert allocation.devices and all(pool == node for _, pool, _ in allocation.devices)
    assert env.operators[0].problems() == []

    kube = Run.prepare(env, driver, env.namespace(), f"kube-dra-{uuid.uuid4().hex[:6]}", scenario)
    with kube_scheduler(cluster, tmp_path, _kube_scheduler_config(kube.scheduler)):
        kube.create_pod()
        assert kube.bound() == (node, allocation)


def _versions(run: Run, create: Callable[[], None]) -> list[tuple[int | None, int | None]]:
    """``create`` the pod, then each change of its (``spec.nodeName``, ``status.nominatedNodeName``)
    until it is bound, as node indexes, from a watch that starts before the pod existed."""
    core = run.env.core
    since = core.list_namespaced_pod(run.namespace).metadata.resource_version
    create()
    seen: list[tuple[int | None, int | None]] = []
    stream: Any = watch.Watch()  # type: ignore[no-untyped-call]
    for event in stream.stream(
        core.list_namespaced_pod, run.namespace, field_selector="metadata.name=user",
        resource_version=since, timeout_seconds=60,
    ):  # fmt: skip
        pod = event["object"]
        version = tuple(
            run.nodes.index(name) if name else None for name in (pod.spec.node_name, pod.status.nominated_node_name)
        )
        if not seen or seen[-1] != version:
            seen.append(version)  # type: ignore[arg-type]
        if pod.spec.node_name:
            stream.stop()
    return seen


def test_the_pod_is_nominated_to_its_node_before_its_claim_is_allocated_as_kube_scheduler_does(
    env: Env, cluster: Cluster, driver: Driver, tmp_path: Path
) -> None:
    # NominatedNodeNameForExpectation (beta, on since v1.35): DynamicResources' PreBindPreFlight
    # has work, so the binding cycle writes status.nominatedNodeName before PreBind allocates the
    # claim; the binding clears it (ClearingNominatedNodeNameAfterBinding).
    scenario = ONE_DEVICE
    ours = _operator_run(env, driver, scenario)
    nominated_first = [(None, None), (None, 1), (1, None)]
    assert _versions(ours, ours.create_pod) == nominated_first
    assert ours.bound()[1].reserved_for == ("user",)

    kube = Run.prepare(env, driver, env.namespace(), f"kube-dra-{uuid.uuid4().hex[:6]}", scenario)
    with kube_scheduler(cluster, tmp_path, _kube_scheduler_config(kube.scheduler)):
        assert _versions(kube, kube.create_pod) == nominated_first


def test_more_devices_than_exist_is_upstreams_failed_scheduling(
    env: Env, cluster: Cluster, driver: Driver, tmp_path: Path
) -> None:
    ours = _operator_run(env, driver, TOO_MANY)
    ours.create_pod()
    message = ours.failure(instance=env.operators[0].identity)
    assert f"{NODES} {CANNOT_ALLOCATE}" in message
    claim = generated_claim(env.api, env.home, "user")
    assert not (claim.get("status") or {}).get("allocation")
    # explain, on a snapshot of the live cluster (slices, classes, claims), says the same.
    explained = subprocess.run(
        [sys.executable, "-m", "scheduler_operator", "explain", "user", "-n", env.home,
         "--home-namespace", env.home, "--kubeconfig", str(cluster.kubeconfig), "-o", "json"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    (entry,) = json.loads(explained.stdout)["pods"]
    assert _claim_part(entry["message"]) == _claim_part(message)

    kube = Run.prepare(env, driver, env.namespace(), f"kube-dra-{uuid.uuid4().hex[:6]}", TOO_MANY)
    with kube_scheduler(cluster, tmp_path, _kube_scheduler_config(kube.scheduler)):
        kube.create_pod()
        upstream = kube.failure()
    assert (
        _claim_part(message)
        == _claim_part(upstream)
        == (
            [f"{NODES} {CANNOT_ALLOCATE}"],
            f"{STILL_NOT_SCHEDULABLE}, preemption: 0/N nodes are available: N {PREEMPTION_NOT_HELPFUL}.",
        )
    )


def test_a_pod_waiting_for_devices_binds_once_the_driver_publishes_them(env: Env, driver: Driver) -> None:
    """The ResourceSlice watch is a cluster event: the pod, unschedulable while no node has the
    devices, is retried and bound when a slice appears (upstream's ResourceSlice/Add hint)."""
    ours = _operator_run(env, driver, Scenario({}, lambda d: [exactly("gpu", d.device_class)]))
    ours.create_pod()
    message = ours.failure(instance=env.operators[0].identity)
    assert _claim_part(message)[0] == [f"{NODES} {CANNOT_ALLOCATE}"]

    driver.publish(ours.nodes[2], [device("gpu-0")])
    node, allocation = ours.bound()
    assert (node, allocation) == (2, Allocation(2, (("gpu", 2, "gpu-0"),), ("user",)))


def test_no_device_is_allocated_twice_as_with_kube_scheduler(
    env: Env, cluster: Cluster, driver: Driver, tmp_path: Path
) -> None:
    """Three pods for two devices: two bind, each with its own device; the third waits, and the
    real kube-scheduler does the same."""
    scenario = Scenario({0: [device("gpu-0"), device("gpu-1")]}, lambda d: [exactly("gpu", d.device_class)])
    names = ["a", "b", "c"]
    wanted = [(("gpu", 0, "gpu-0"),), (("gpu", 0, "gpu-1"),)]
    ours = _operator_run(env, driver, scenario)
    for name in names:
        ours.create_pod(name)
    devices, (message,) = ours.settle(names, bound=2, instance=env.operators[0].identity)
    assert devices == wanted
    assert _claim_part(message)[0] == [f"{NODES} {CANNOT_ALLOCATE}"]
    assert env.operators[0].problems() == []

    kube = Run.prepare(env, driver, env.namespace(), f"kube-dra-{uuid.uuid4().hex[:6]}", scenario)
    with kube_scheduler(cluster, tmp_path, _kube_scheduler_config(kube.scheduler)):
        for name in names:
            kube.create_pod(name)
        upstream_devices, (upstream,) = kube.settle(names, bound=2)
    assert upstream_devices == devices
    assert _claim_part(upstream) == _claim_part(message)
