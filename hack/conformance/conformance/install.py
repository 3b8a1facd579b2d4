"""What a run puts in its cluster: fake per-node system pods, and crd-scheduler installed as
documented (docs/deploy.md): the CRDs of crds/, manifests/rbac.yaml for its ServiceAccount
``crd-scheduler/crd-scheduler``, a home-namespace profile serving ``default-scheduler``, and the
operator running as that ServiceAccount (``run/kubeconfig-operator``: a TokenRequest token, so
it has exactly the rights RBAC gives it), as a subprocess of this script.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from devcluster.api import Client
from devcluster.errors import DevClusterError
from devcluster.layout import Layout

ROOT = Path(__file__).resolve().parents[3]
HOME = "crd-scheduler"  # the operator's home namespace and its ServiceAccount's (scripts/dev-cluster)
GROUP = "scheduling.crd-scheduler.io"
VERSION = "v1alpha1"
PROFILE = "default"
SERVED_NAME = "default-scheduler"
# e2enode.WaitForTotalHealthy waits up to a minute, in 11 specs, for these on every node
# (test/e2e/framework/node/wait.go, requiredPerNodePods).
SYSTEM_PODS = ("kube-proxy", "fluentd-elasticsearch", "node-problem-detector")
FAKE_LABEL = "conformance.crd-scheduler.io/fake-system-pod"
_PATCH = "application/strategic-merge-patch+json"


def wait_for(what: str, check: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise DevClusterError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def _ok(status: int, answer: Any, what: str, allowed: tuple[int, ...] = (200, 201)) -> Any:
    if status not in allowed:
        raise DevClusterError(f"{what} -> {status}: {answer}")
    return answer


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def system_pods(admin: Client, nodes: list[str]) -> None:
    """Per node, Running look-alikes of the system pods upstream's specs wait for, with the
    ``PodScheduled=True`` condition a scheduler would have set (they are bound by ``nodeName``,
    so none did; predicates specs fail without it: "Did not find 'scheduled' condition")."""
    base = "/api/v1/namespaces/kube-system/pods"
    _ok(*admin.request("DELETE", f"{base}?labelSelector={FAKE_LABEL}&gracePeriodSeconds=0"), "deleting old fakes")
    wait_for("old fake system pods to go", lambda: not _fakes(admin))
    # A name of its own per run: kwok, still deleting the previous run's pod of that name,
    # deleted a new one that had the same name (seen once: a node short of one system pod).
    run = uuid.uuid4().hex[:5]
    for node in nodes:
        for name in SYSTEM_PODS:
            pod: dict[str, Any] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{name}-{node}-{run}", "labels": {FAKE_LABEL: "true", "k8s-app": name}},
                "spec": {
                    "nodeName": node,
                    "priorityClassName": "system-node-critical",
                    "tolerations": [{"operator": "Exists"}],
                    "containers": [{"name": name, "image": "registry.k8s.io/pause:3.10"}],
                },
            }
            _ok(*admin.request("POST", base, pod), f"creating pod kube-system/{name}-{node}-{run}")

    def all_running() -> bool:
        fakes = _fakes(admin)
        return len(fakes) == len(nodes) * len(SYSTEM_PODS) and all(_running(fake) for fake in fakes)

    wait_for("the fake system pods to run", all_running)
    condition: dict[str, str] = {"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()}
    for fake in _fakes(admin):
        path = f"{base}/{fake['metadata']['name']}/status"
        _ok(*admin.request("PATCH", path, {"status": {"conditions": [condition]}}, content_type=_PATCH), path)


def _fakes(admin: Client) -> list[dict[str, Any]]:
    answer = _ok(*admin.request("GET", f"/api/v1/namespaces/kube-system/pods?labelSelector={FAKE_LABEL}"), "list")
    items: list[dict[str, Any]] = answer["items"]
    return items


def _running(pod: dict[str, Any]) -> bool:
    return bool((pod.get("status") or {}).get("phase") == "Running")


# -- crd-scheduler --------------------------------------------------------------------------------


def _collection(document: dict[str, Any]) -> str:
    kind = document["kind"]
    namespace = document["metadata"].get("namespace")
    plural = {
        "CustomResourceDefinition": "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        "Role": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
        "RoleBinding": f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings",
        "SchedulerProfile": f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/schedulerprofiles",
    }
    if kind not in plural:
        raise DevClusterError(f"install: no path for kind {kind}")
    return plural[kind]


def apply(admin: Client, document: dict[str, Any]) -> None:
    """Create, or replace what a previous run left."""
    collection = _collection(document)
    status, answer = admin.request("POST", collection, document)
    if status == 409:
        path = f"{collection}/{document['metadata']['name']}"
        current = _ok(*admin.request("GET", path), path)
        body = {
            **document,
            "metadata": {**document["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }
        status, answer = admin.request("PUT", path, body)
    _ok(status, answer, f"applying {document['kind']} {document['metadata']['name']}")


def home_profile() -> dict[str, Any]:
    """manifests/default-profile.yaml, serving default-scheduler: every pod that names no scheduler."""
    profile: dict[str, Any] = yaml.safe_load((ROOT / "manifests" / "default-profile.yaml").read_text())
    profile["spec"]["schedulerName"] = SERVED_NAME
    return profile


def install(admin: Client) -> None:
    for name in ("schedulerprofiles.yaml", "pluginconfigs.yaml"):
        crd = yaml.safe_load((ROOT / "crds" / name).read_text())
        apply(admin, crd)
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}"
        wait_for(f"CRD {crd['metadata']['name']} established", functools.partial(_established, admin, path))
    for document in yaml.safe_load_all((ROOT / "manifests" / "rbac.yaml").read_text()):
        if document:
            apply(admin, document)
    apply(admin, home_profile())


def _established(admin: Client, path: str) -> bool:
    status, answer = admin.request("GET", path)
    conditions = (answer.get("status") or {}).get("conditions") or [] if status == 200 else []
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def _profile_ready(admin: Client) -> bool:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{HOME}/schedulerprofiles/{PROFILE}"
    status, answer = admin.request("GET", path)
    conditions = (answer.get("status") or {}).get("conditions") or [] if status == 200 else []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def crd_scheduler(lay: Layout, admin: Client, log_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """The operator as its ServiceAccount, leading and serving the home profile; stopped after."""
    install(admin)
    argv = [
        sys.executable, "-m", "scheduler_operator", "run", "--home-namespace", HOME, "--identity", "conformance",
        "--bind-address", "127.0.0.1", "--port", str(_free_port()),
        "--liveness", f"http://127.0.0.1:{_free_port()}/healthz",
    ]  # fmt: skip
    env = {**os.environ, "KUBECONFIG": str(lay.operator_kubeconfig), "PYTHONUNBUFFERED": "1"}
    env.pop("POD_NAME", None)
    with log_path.open("w") as log:
        operator = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        try:

            def serving() -> bool:
                if operator.poll() is not None:
                    raise DevClusterError(f"crd-scheduler exited with {operator.returncode}; log: {log_path}")
                return bool(re.search(r"leading: scheduling", log_path.read_text())) and _profile_ready(admin)

            wait_for("crd-scheduler to lead and its profile to be Ready", serving)
            yield operator
        finally:
            if operator.poll() is None:
                operator.send_signal(signal.SIGTERM)
                try:
                    operator.wait(30)
                except subprocess.TimeoutExpired:
                    operator.kill()
                    operator.wait(10)
