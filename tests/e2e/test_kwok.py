"""kwok nodes in a dev cluster (``scripts/dev-cluster up --controllers ... --kwok-nodes N``).

A cluster of its own (the built binaries shared; the shared dev cluster is never restarted, and
its tests never see fake nodes that run pods): nodes turn Ready in their zones, a ReplicaSet's
pods are scheduled by the real kube-scheduler and go Running, and an extended resource a spec
patches into a node's capacity reaches its allocatable (and leaves it) as with a kubelet.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from tests.e2e import DEV_CLUSTER, Cluster, eventually

EXTENDED = "example.com/dongle"


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
