"""Fixtures for tests against a real Kubernetes API server.

The cluster is, in order of preference:

1. the one ``CRD_SCHEDULER_TEST_KUBECONFIG`` points at (kind or any other; an unprivileged
   identity for RBAC tests may be given in ``CRD_SCHEDULER_TEST_OPERATOR_KUBECONFIG``);
2. the loopback dev cluster of ``scripts/dev-cluster`` (etcd + kube-apiserver +
   kube-controller-manager built from Go modules), started once per session or reused when it
   already runs. Sessions register as its users: a cluster started by tests stops when the last
   session using it ends (one started by hand with ``scripts/dev-cluster up`` keeps running).
   ``CRD_SCHEDULER_KEEP_CLUSTER=1`` keeps it for the next session (which then starts in a second).

Without Go to build the dev cluster the tests skip, except in CI (``CI=true``) where they fail.
Every test in this folder carries the ``e2e`` marker: ``pytest -m "not e2e"`` leaves them out.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest
from kubernetes import client

from tests.e2e import DEV_CLUSTER, Cluster, eventually

if TYPE_CHECKING:
    from tests.e2e.operator_support import Env

EXIT_TOOLCHAIN_MISSING = 3  # scripts/dev-cluster: no Go to build the binaries with
_HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: needs a real kube-apiserver (scripts/dev-cluster)")
    config.addinivalue_line(
        "markers", "faults: a fault scenario of several minutes; runs only when selected (make faults: -m faults)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selected = "faults" in (config.getoption("markexpr", "") or "")
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)
        if item.get_closest_marker("faults") and not selected:
            item.add_marker(pytest.mark.skip(reason="a fault scenario: make faults (pytest -m faults) runs it"))


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"e2e: no Kubernetes API server in CI: {reason}", pytrace=False)
    pytest.skip(f"e2e: no Kubernetes API server: {reason}")


def _dev_cluster(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(DEV_CLUSTER), *args], capture_output=True, text=True, check=False)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    external = os.environ.get("CRD_SCHEDULER_TEST_KUBECONFIG")
    if external:
        operator = os.environ.get("CRD_SCHEDULER_TEST_OPERATOR_KUBECONFIG")
        yield Cluster(Path(external), Path(operator) if operator else None, dev_cluster=False)
        return
    started = _dev_cluster("up", "--for-pid", str(os.getpid()))
    if started.returncode == EXIT_TOOLCHAIN_MISSING:
        _unavailable(re.sub(r"^dev-cluster: error: ", "", started.stderr.strip().splitlines()[-1]))
    if started.returncode != 0:
        pytest.fail(f"scripts/dev-cluster up failed:\n{started.stderr}", pytrace=False)
    kubeconfig = Path(started.stdout.strip().splitlines()[-1])
    try:
        yield Cluster(kubeconfig, kubeconfig.with_name("kubeconfig-operator"), dev_cluster=True)
    finally:
        # Stops the cluster if this session (or an xdist sibling) started it and is the last user.
        if os.environ.get("CRD_SCHEDULER_KEEP_CLUSTER") != "1":
            released = _dev_cluster("release", str(os.getpid()))
            assert released.returncode == 0, released.stderr


@pytest.fixture(scope="session")
def api(cluster: Cluster) -> Iterator[client.ApiClient]:
    """An admin ApiClient shared by the session."""
    with cluster.api_client() as api_client:
        yield api_client


@pytest.fixture
def namespace(api: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace, ready for pods (its ``default`` ServiceAccount exists); deleted after."""
    core: Any = client.CoreV1Api(api)  # the generated client's model types are too strict for plain manifests
    stem = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].rstrip("-")
    name = f"e2e-{stem}-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    # ServiceAccount admission rejects pods until the controller has made `default`.
    eventually(lambda: core.read_namespaced_service_account("default", name))
    try:
        yield name
    finally:
        # Without kubelets, bound pods never finish terminating gracefully: force them, so
        # the namespace controller can finish deleting the namespace.
        core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        core.delete_namespace(name)


@pytest.fixture(scope="module")
def crds(api: client.ApiClient) -> None:
    """The CRDs of crds/, served (created or brought up to date once per module)."""
    from tests.e2e.operator_support import install_crds

    install_crds(api)


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path, crds: None) -> Iterator[Env]:
    """A test's operators, nodes and namespaces (``test_operator_support.environment``)."""
    from tests.e2e.operator_support import environment

    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


def _tool(name: str) -> Path:
    """A tool ``scripts/dev-cluster build`` makes from the Go module proxy (hack/kstatus/go.mod)."""
    built = _dev_cluster("build", name)
    if built.returncode == EXIT_TOOLCHAIN_MISSING:
        reason = built.stderr.strip().splitlines()[-1]
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{name}: {reason}", pytrace=False)
        pytest.skip(f"{name}: {reason}")
    assert built.returncode == 0, built.stderr
    return Path(built.stdout.strip().splitlines()[-1]) / name


@pytest.fixture(scope="session")
def kstatus() -> Path:
    """kstatus's own ``Compute`` (sigs.k8s.io/cli-utils, what Flux uses) as a binary: JSON in, status out."""
    return _tool("kstatus")


@pytest.fixture(scope="session")
def kubectl() -> Path:
    """Upstream's kubectl v1.36.3."""
    return _tool("kubectl")
