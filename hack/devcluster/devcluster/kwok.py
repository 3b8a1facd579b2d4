"""Fake nodes that run pods: kwok against the running cluster, and the nodes it manages.

kwok (``hack/kwok/go.mod``, built on demand) watches only the Nodes annotated
``kwok.x-k8s.io/node=fake`` and plays their kubelet through Stage objects: the "fast" node and
pod lifecycles of its module (a node turns Ready at once, a bound pod goes Running at once, a
Job's pod Succeeded), a node heartbeat, and one Stage of ours,
``node-allocatable-from-capacity.yaml``: a kubelet reports an extended resource added to
``status.capacity`` in ``status.allocatable`` too, and kwok alone does not. Its weight makes it
win over the heartbeat whenever both match (kwok picks one matching Stage at random, weighted,
and the heartbeat waits 20-45 s), and it deletes a copied key the capacity no longer has (kwok's
status patches merge, so a copy would otherwise outlive its source).

A deleted pod goes not through kwok's pod-delete Stage (by name, at once) but through
``kwok-reaper`` (``reaper.py``: after its preStop sleep, by UID, as a kubelet), a process
started and stopped with kwok.

Nodes get a realistic capacity (a kubelet never reports kwok's 1k CPUs), a zone out of
``zone-0..N-1`` (``topology.kubernetes.io/zone``), and the label ``type=kwok``. ``nodes --reset``
deletes every kwok node first: a run that patched a node's status leaves its marks on it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import build, cluster, layout, process
from .api import Client
from .errors import DevClusterError
from .layout import Layout
from .ui import say

KWOK = build.KWOK
REAPER = layout.KWOK_REAPER
ANNOTATION = "kwok.x-k8s.io/node"
ANNOTATION_VALUE = "fake"
LABEL = "type"
LABEL_VALUE = "kwok"
ZONE_LABEL = "topology.kubernetes.io/zone"
OUR_STAGES = Path(__file__).resolve().parents[2] / "kwok" / "stages"
CAPACITY = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
_READY_TIMEOUT = 60.0
_DELETE_TIMEOUT = 60.0


def stage_files(lay: Layout) -> list[Path]:
    """kwok's own Stage files that we use (copied beside the binary at build; an older build's
    folder also holds pod-delete.yaml, never passed) and ours."""
    shipped = [lay.bin / build.KWOK_STAGES / Path(stage).name for stage in build.KWOK_MODULE_STAGES]
    missing = [path.name for path in shipped if not path.is_file()]
    if missing:
        raise DevClusterError(f"{lay.bin / build.KWOK_STAGES} lacks {missing}: run `scripts/dev-cluster build kwok`")
    return [*shipped, *sorted(OUR_STAGES.glob("*.yaml"))]


def argv(lay: Layout) -> list[str]:
    configs = [f"--config={path}" for path in stage_files(lay)]
    return [
        str(lay.binary(KWOK)),
        f"--kubeconfig={lay.admin_kubeconfig}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={ANNOTATION}={ANNOTATION_VALUE}",
        "--cidr=10.0.0.0/16",  # pod IPs; the default /24 runs out at 254 pods
        "--node-ip=10.1.0.1",
        *configs,
    ]


def reaper_argv() -> list[str]:
    return [sys.executable, str(layout.REPO_ROOT / "scripts" / "dev-cluster"), "kwok-reaper"]


def running(lay: Layout, name: str = KWOK) -> process.Tracked | None:
    found = process.read_pidfile(name, lay.pidfile(name))
    return found if found is not None and found.alive else None


def start(lay: Layout) -> process.Tracked:
    """kwok and its pod deleter against the running cluster (started once; reused while they live)."""
    if not cluster.healthy(lay):
        raise DevClusterError("the dev cluster is not running: run `scripts/dev-cluster up` first")
    build.ensure_tool(lay, KWOK)
    if running(lay, REAPER) is None:
        say(f"starting {REAPER} (deleted pods of kwok's nodes); log: {lay.log(REAPER)}")
        env = {**os.environ, layout.ROOT_ENV: str(lay.root)}  # this cluster's, however lay was made
        process.start(REAPER, reaper_argv(), log=lay.log(REAPER), pidfile=lay.pidfile(REAPER), cwd=lay.run, env=env)
    found = running(lay)
    if found is not None:
        return found
    say(f"starting kwok (nodes annotated {ANNOTATION}={ANNOTATION_VALUE}); log: {lay.log(KWOK)}")
    return process.start(KWOK, argv(lay), log=lay.log(KWOK), pidfile=lay.pidfile(KWOK), cwd=lay.run)


def node_name(index: int) -> str:
    return f"kwok-node-{index}"


def node_manifest(name: str, zone: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {ANNOTATION: ANNOTATION_VALUE, "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "kwok",
                "topology.kubernetes.io/region": "region-0",
                ZONE_LABEL: zone,
                LABEL: LABEL_VALUE,
            },
        },
        "status": {"capacity": dict(CAPACITY), "allocatable": dict(CAPACITY)},
    }


def admin_api(lay: Layout) -> Client:
    ports = cluster.load_ports(lay)
    if ports is None:
        raise DevClusterError("the dev cluster is not running: run `scripts/dev-cluster up` first")
    return cluster.admin_client(lay, ports)


def _kwok_nodes(admin: Any) -> list[str]:
    status, answer = admin.request("GET", f"/api/v1/nodes?labelSelector={LABEL}%3D{LABEL_VALUE}")
    if status != 200:
        raise DevClusterError(f"listing nodes -> {status}: {answer}")
    return [
        item["metadata"]["name"]
        for item in answer["items"]
        if (item["metadata"].get("annotations") or {}).get(ANNOTATION) == ANNOTATION_VALUE
    ]


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def nodes(lay: Layout, count: int, *, zones: int = 2, reset: bool = False) -> list[str]:
    """Exactly ``count`` Ready kwok nodes (``kwok-node-0..``), kwok started if needed."""
    if count < 0:
        raise DevClusterError(f"nodes: the count must be 0 or more, not {count}")
    if zones < 1:
        raise DevClusterError(f"nodes --zones: at least 1 zone, not {zones}")
    kwok = start(lay)
    admin = admin_api(lay)
    wanted = [node_name(i) for i in range(count)]
    existing = _kwok_nodes(admin)
    doomed = existing if reset else [name for name in existing if name not in wanted]
    for name in doomed:
        status, answer = admin.request("DELETE", f"/api/v1/nodes/{name}")
        if status not in (200, 404):
            raise DevClusterError(f"deleting node {name} -> {status}: {answer}")
    _wait(lambda: not set(doomed) & set(_kwok_nodes(admin)), f"nodes {doomed} to go", kwok, _DELETE_TIMEOUT, lay)
    for index, name in enumerate(wanted):
        status, answer = admin.request("POST", "/api/v1/nodes", node_manifest(name, f"zone-{index % zones}"))
        if status not in (201, 409):
            raise DevClusterError(f"creating node {name} -> {status}: {answer}")

    def all_ready() -> bool:
        status, answer = admin.request("GET", f"/api/v1/nodes?labelSelector={LABEL}%3D{LABEL_VALUE}")
        ready = (
            {item["metadata"]["name"] for item in answer.get("items", []) if _ready(item)} if status == 200 else set()
        )
        return set(wanted) <= ready

    _wait(all_ready, f"{count} kwok nodes to turn Ready", kwok, _READY_TIMEOUT, lay)
    say(f"{count} kwok nodes Ready in {zones} zone(s)")
    return wanted


def _wait(check: Callable[[], bool], what: str, kwok: process.Tracked, timeout: float, lay: Layout) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if not kwok.alive:
            raise DevClusterError(f"kwok exited while waiting for {what}; log: {lay.log(KWOK)}")
        if time.monotonic() > deadline:
            raise DevClusterError(f"timed out after {timeout:.0f} s waiting for {what}; kwok log: {lay.log(KWOK)}")
        time.sleep(0.25)


def stop(lay: Layout) -> None:
    for name in (REAPER, KWOK):
        found = process.read_pidfile(name, lay.pidfile(name))
        if found is not None:
            process.stop(found, lay.pidfile(name))
