"""kwok nodes in a dev cluster (``scripts/dev-cluster up --controllers ... --kwok-nodes N``).

A cluster of its own (the built binaries shared; the shared dev cluster is never restarted, and
its tests never see fake nodes that run pods): nodes turn Ready in their zones, a ReplicaSet's
pods are scheduled by the real kube-scheduler and go Running, an extended resource a spec
patches into a node's capacity reaches its allocatable (and leaves it) as with a kubelet, and a
deleted pod goes as a kubelet lets it go: after its preStop sleep, and never a pod re-created
under its name.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.e2e import DEV_CLUSTER, Cluster, eventually
from tests.wrappers import make_pod

EXTENDED = "example.com/dongle"
NAMESPACE = "default"
PAUSE = "registry.k8s.io/pause:3.10"


def _run(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, str(DEV_CLUSTER), *args], capture_output=True, text=True, env=env)
    assert result.returncode == 0 or not check, f"dev-cluster {' '.join(args)}:\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def kwok_env(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    if not cluster.dev_cluster:
        pytest.skip("starts a dev cluster of its own; the cluster in use is external")
    binaries = _run("build", "kwok", env=dict(os.environ)).stdout.strip()
    settings = ("FEATURE_GATES", "RUNTIME_CONFIG", "CONTROLLERS")  # the second cluster's own: none
    env = {
        **{k: v for k, v in os.environ.items() if k.removeprefix("CRD_SCHEDULER_DEVCLUSTER_") not in settings},
        "CRD_SCHEDULER_DEVCLUSTER_DIR": str(tmp_path_factory.mktemp("kwok") / "dc"),
        "CRD_SCHEDULER_DEVCLUSTER_BIN": binaries,
    }
    try:
        _run("up", "--controllers", "replicaset", "--kwok-nodes", "2", env=env)
        _run("kube-scheduler", "up", env=env)
        yield env
    finally:
        _run("down", env=env, check=False)


@pytest.fixture(scope="module")
def core(kwok_env: dict[str, str]) -> Iterator[Any]:
    kubeconfig = _run("kubeconfig", env=kwok_env).stdout.strip()
    api: Any = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    with api:
        yield client.CoreV1Api(api)


def _ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def test_kwok_nodes_are_ready_in_their_zones(core: Any) -> None:
    nodes = {n.metadata.name: n for n in core.list_node(label_selector="type=kwok").items}
    assert sorted(nodes) == ["kwok-node-0", "kwok-node-1"]
    assert all(_ready(node) for node in nodes.values())
    zones = {name: node.metadata.labels["topology.kubernetes.io/zone"] for name, node in nodes.items()}
    assert zones == {"kwok-node-0": "zone-0", "kwok-node-1": "zone-1"}
    assert nodes["kwok-node-0"].status.allocatable["cpu"] == "4"


def test_a_replicaset_runs_its_pods_on_kwok_nodes(core: Any, kwok_env: dict[str, str]) -> None:
    kubeconfig = _run("kubeconfig", env=kwok_env).stdout.strip()
    api: Any = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    labels = {"app": "kwok-rs"}
    replica_set: dict[str, Any] = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "kwok-rs"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }
    with api:
        apps: Any = client.AppsV1Api(api)
        apps.create_namespaced_replica_set("default", replica_set)

        def running() -> None:
            pods = core.list_namespaced_pod("default", label_selector="app=kwok-rs").items
            assert len(pods) == 2 and all(p.status.phase == "Running" for p in pods), [
                (p.metadata.name, p.spec.node_name, p.status.phase) for p in pods
            ]
            assert {p.spec.node_name for p in pods} <= {"kwok-node-0", "kwok-node-1"}

        eventually(running, timeout=60)


def _allocatable(core: Any, node: str) -> dict[str, str]:
    allocatable: dict[str, str] = core.read_node(node).status.allocatable
    return allocatable


def test_an_extended_resource_reaches_allocatable_and_leaves_with_capacity(core: Any, kwok_env: dict[str, str]) -> None:
    """Faster than kwok's node heartbeat (20-45 s), which would otherwise often go first."""
    node = "kwok-node-1"
    path = f"/status/capacity/{EXTENDED.replace('/', '~1')}"
    started = time.monotonic()
    core.patch_node_status(node, [{"op": "add", "path": path, "value": "3"}])
    eventually(lambda: _check(_allocatable(core, node).get(EXTENDED) == "3"), timeout=15)
    assert time.monotonic() - started < 15
    core.patch_node_status(node, [{"op": "remove", "path": path}])
    eventually(lambda: _check(EXTENDED not in _allocatable(core, node)), timeout=15)
    assert _allocatable(core, node)["cpu"] == "4"

    # `nodes --reset` makes the nodes anew: nothing a run patched in stays.
    core.patch_node_status(node, [{"op": "add", "path": path, "value": "3"}])
    uid = core.read_node(node).metadata.uid
    names = json.loads(_run("nodes", "2", "--reset", env=kwok_env).stdout)
    assert names == ["kwok-node-0", "kwok-node-1"]
    fresh = core.read_node(node)
    assert fresh.metadata.uid != uid
    assert EXTENDED not in fresh.status.capacity and EXTENDED not in (fresh.status.allocatable or {})


def _check(condition: bool) -> None:
    assert condition


def _running(core: Any, names: list[str]) -> None:
    phases = {
        p.metadata.name: p.status.phase
        for p in core.list_namespaced_pod(NAMESPACE, label_selector="test=kwok-delete").items
    }
    assert all(phases.get(name) == "Running" for name in names), phases


def _holds(check: Callable[[], None], seconds: float) -> None:
    """``check`` passes all along ``seconds`` (what must not happen has had its chance to)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        check()
        time.sleep(0.2)
    check()


@pytest.fixture
def cleanup(core: Any) -> Iterator[None]:
    yield
    core.delete_collection_namespaced_pod(NAMESPACE, label_selector="test=kwok-delete", grace_period_seconds=0)


@contextlib.contextmanager
def _late(env: dict[str, str]) -> Iterator[None]:
    """kwok and its pod deleter stopped (SIGSTOP) meanwhile: they see what happened after it did,
    as under load. They are this module's own cluster's processes."""
    processes = json.loads(_run("status", "--json", env=env).stdout)["processes"]
    pids = [item["pid"] for item in processes if item["name"].startswith("kwok")]
    assert pids, processes
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)


def test_a_pod_recreated_under_its_name_survives_the_old_ones_deletion(
    core: Any, kwok_env: dict[str, str], cleanup: None
) -> None:
    """Upstream's Get2NodesThatCanRunPod deletes a pod with grace 0 and creates one of the same
    name at once. kwok's shipped pod-delete Stage deleted by name, late, and so took the new pod;
    a kubelet deletes with the old pod's UID as a precondition."""
    again = make_pod().name("again").label("test", "kwok-delete").node("kwok-node-0").container(image=PAUSE).obj()
    core.create_namespaced_pod(NAMESPACE, again)
    eventually(lambda: _running(core, ["again"]), timeout=60)
    with _late(kwok_env):
        core.delete_namespaced_pod("again", NAMESPACE, grace_period_seconds=0)
        uid = eventually(functools.partial(core.create_namespaced_pod, NAMESPACE, again)).metadata.uid

    def the_new_pod_lives() -> None:
        pods = core.list_namespaced_pod(NAMESPACE, field_selector="metadata.name=again").items
        live = [pod.metadata.uid for pod in pods if pod.metadata.deletion_timestamp is None]
        assert live == [uid], f"the re-created pod {uid} was deleted: {[pod.metadata for pod in pods]}"

    _holds(the_new_pod_lives, 3)
    eventually(lambda: _running(core, ["again"]), timeout=30)


def _gone(core: Any, name: str) -> bool:
    try:
        pod = core.read_namespaced_pod(name, NAMESPACE)
    except client.ApiException as error:
        if error.status == 404:
            return True
        raise
    assert pod.metadata.deletion_timestamp is not None, f"{name} lost its deletionTimestamp"
    return False


@pytest.mark.parametrize(
    ("pre_stop", "grace", "expected"),
    [
        pytest.param(None, None, 1.0, id="plain-goes-after-a-second"),
        pytest.param(4, None, 4.0, id="prestop-sleep-4s"),
        pytest.param(20, 3, 3.0, id="prestop-sleep-capped-by-a-3s-grace"),
    ],
)
def test_a_deleted_pod_goes_after_its_prestop_sleep(
    core: Any, cleanup: None, pre_stop: int | None, grace: int | None, expected: float
) -> None:
    """As a kubelet: the preStop hook runs for at most the deletion's grace period
    (pkg/kubelet/kuberuntime/kuberuntime_container.go, killContainer), and the pod keeps its
    deletionTimestamp meanwhile (SchedulerAsyncPreemption's spec reads it on its victims)."""
    name = f"prestop-{pre_stop or 0}s-grace-{grace or 30}s"
    core.create_namespaced_pod(
        NAMESPACE,
        make_pod()
        .name(name)
        .label("test", "kwok-delete")
        .node("kwok-node-0")
        .container(image=PAUSE, pre_stop_sleep=pre_stop)
        .obj(),
    )
    eventually(lambda: _running(core, [name]), timeout=60)
    started = time.monotonic()
    core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=grace)  # None: the pod's 30 s
    while not _gone(core, name):
        # Generous: the reaper's clock starts when its watch brings the deletion (2 loaded cores).
        assert time.monotonic() - started < expected + 15, f"{name} still there after {expected + 15} s"
        time.sleep(0.1)
    took = time.monotonic() - started
    assert took >= expected - 0.5, f"{name} went after {took:.1f} s, before its {expected} s"


def test_a_deleted_pod_on_another_node_is_left_alone(core: Any, cleanup: None) -> None:
    """Only kwok's nodes (annotated kwok.x-k8s.io/node=fake) are played: another node's pod keeps
    its deletionTimestamp until its own kubelet (none here) deletes it."""
    node = "not-kwok"
    core.create_node({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    try:
        core.create_namespaced_pod(
            NAMESPACE, make_pod().name("elsewhere").label("test", "kwok-delete").node(node).container(image=PAUSE).obj()
        )
        core.delete_namespaced_pod("elsewhere", NAMESPACE)
        _holds(lambda: _check(not _gone(core, "elsewhere")), 3)
    finally:
        core.delete_node(node)


@pytest.mark.parametrize(
    ("controllers", "message"),
    [
        pytest.param("replicaset,nodelifecycle", "nodelifecycle is never run", id="nodelifecycle"),
        pytest.param("replicaset,cronjobs", "unknown controller 'cronjobs'", id="unknown"),
    ],
)
def test_up_refuses_controllers_it_does_not_offer(tmp_path: Path, controllers: str, message: str) -> None:
    env = {**os.environ, "CRD_SCHEDULER_DEVCLUSTER_DIR": str(tmp_path / "dc")}
    refused = _run("up", "--controllers", controllers, env=env, check=False)
    assert refused.returncode == 1
    assert message in refused.stderr
    assert not (tmp_path / "dc" / "run").exists()
