"""Helpers for the operator's e2e tests (no tests here): the operator as a subprocess, its RBAC,
the CRDs, nodes and pods, and the checks every scheduling test makes.

The operator runs as ``python -m scheduler_operator run`` with ``KUBECONFIG`` set to the
cluster's *unprivileged* identity, after ``manifests/rbac.yaml`` granted that identity its rights:
the ClusterRole and ClusterRoleBinding under test-unique names (deleted after, so the smoke
test that checks the identity has no rights still holds), the Lease Role in the test's home
namespace. Each test has its own home namespace, Lease and schedulerName, and its pods select
its own nodes by label, so tests do not see each other's work.
"""

from __future__ import annotations

import copy
import os
import re
import signal
import socket
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from scheduler_core.framework import PodInfo, Resource
from scheduler_operator.resources import GROUP, PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL, VERSION
from tests import wrappers
from tests.e2e import Cluster, eventually

ROOT = Path(__file__).resolve().parents[2]
CRD_FILES = (ROOT / "crds" / "schedulerprofiles.yaml", ROOT / "crds" / "pluginconfigs.yaml")
RBAC_FILE = ROOT / "manifests" / "rbac.yaml"
LEASE_NAME = "crd-scheduler"
# Short lease timings keep failover tests quick (upstream's are 15/10/2 s).
FAST_ELECTION = ("--lease-duration", "4", "--renew-deadline", "3", "--retry-period", "0.5")
BOUND_LINE = re.compile(r" bound (\S+) uid=(\S+) node=(\S+)")
RELOAD_LINE = re.compile(r"profile (\S+) generation (\d+) serving \(reload ([\d.]+) ms\)")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- cluster setup ----------------------------------------------------------------------------


def install_crds(api: client.ApiClient, paths: tuple[Path, ...] = CRD_FILES) -> None:
    """Create the CRDs from crds/ (or bring existing ones up to date) and wait until served."""
    extensions: Any = client.ApiextensionsV1Api(api)
    for path in paths:
        crd = yaml.safe_load(path.read_text())
        name = crd["metadata"]["name"]
        for _ in range(5):
            try:
                extensions.create_custom_resource_definition(crd)
                break
            except client.ApiException as error:
                if error.status != 409:
                    raise
            current = extensions.read_custom_resource_definition(name)
            if _plain(current.spec) == crd["spec"]:
                break
            body = {**crd, "metadata": {**crd["metadata"], "resourceVersion": current.metadata.resource_version}}
            try:
                extensions.replace_custom_resource_definition(name, body)
                break
            except client.ApiException as error:
                if error.status != 409:
                    raise

        def established(crd_name: str = name) -> None:
            conditions = extensions.read_custom_resource_definition(crd_name).status.conditions or []
            assert ("Established", "True") in {(c.type, c.status) for c in conditions}

        eventually(established)


@contextmanager
def operator_rights(api: client.ApiClient, home_namespace: str) -> Iterator[None]:
    """Apply manifests/rbac.yaml for the operator identity, with the Lease Role in ``home_namespace``."""
    rbac: Any = client.RbacAuthorizationV1Api(api)
    suffix = uuid.uuid4().hex[:6]
    documents = [d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if d]
    created: list[tuple[str, str]] = []
    try:
        for document in documents:
            doc = copy.deepcopy(document)
            kind = doc["kind"]
            if kind in ("ClusterRole", "ClusterRoleBinding"):
                doc["metadata"]["name"] = f"{doc['metadata']['name']}-e2e-{suffix}"
                if kind == "ClusterRoleBinding" and not doc["roleRef"]["name"].startswith("system:"):
                    doc["roleRef"]["name"] = f"{doc['roleRef']['name']}-e2e-{suffix}"  # not the built-in roles
                getattr(rbac, f"create_{_snake(kind)}")(doc)
                created.append((kind, doc["metadata"]["name"]))
            else:
                doc["metadata"]["namespace"] = home_namespace
                getattr(rbac, f"create_namespaced_{_snake(kind)}")(home_namespace, doc)
        yield
    finally:
        for kind, name in reversed(created):
            getattr(rbac, f"delete_{_snake(kind)}")(name)


def _plain(model: Any) -> Any:
    """A generated model as the JSON the API server sent."""
    return client.ApiClient().sanitize_for_serialization(model)  # type: ignore[no-untyped-call]


def _snake(kind: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", kind).lower()


def create_nodes(core: Any, count: int, label: str, **kwargs: Any) -> list[str]:
    names = []
    for i in range(count):
        name = f"{label}-n{i:03d}"
        core.create_node(wrappers.node(name, labels={"e2e-run": label}, **kwargs))
        names.append(name)
    return names


def delete_nodes(core: Any, names: list[str]) -> None:
    for name in names:
        try:
            core.delete_node(name)
        except client.ApiException as error:
            if error.status != 404:
                raise


def force_delete_pods(core: Any, namespace: str) -> None:
    """Delete at once: a bound pod waits for a kubelet to confirm its end, and there is none."""
    core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)


# -- custom resources -------------------------------------------------------------------------


def profile(
    name: str, scheduler: str, *, plugin_config: list[dict[str, Any]] | None = None, **spec: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"schedulerName": scheduler, **spec}
    if plugin_config is not None:
        body["pluginConfig"] = plugin_config
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "SchedulerProfile", "metadata": {"name": name}, "spec": body}


def plugin_config(name: str, plugin: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PluginConfig",
        "metadata": {"name": name},
        "spec": {"plugin": plugin, "args": args},
    }


MOST_ALLOCATED = [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]


class CustomResources:
    def __init__(self, api: client.ApiClient) -> None:
        self._custom: Any = client.CustomObjectsApi(api)

    def create(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        plural = PROFILE_PLURAL if body["kind"] == "SchedulerProfile" else PLUGIN_CONFIG_PLURAL
        created: dict[str, Any] = eventually(
            lambda: self._custom.create_namespaced_custom_object(GROUP, VERSION, namespace, plural, body)
        )
        return created

    def get(self, plural: str, namespace: str, name: str) -> dict[str, Any]:
        got: dict[str, Any] = self._custom.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        return got

    def patch_spec(self, plural: str, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        patched: dict[str, Any] = self._custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, name, {"spec": spec}, _content_type="application/merge-patch+json"
        )
        return patched

    def delete(self, plural: str, namespace: str, name: str) -> None:
        self._custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)

    def wait_status(
        self, plural: str, namespace: str, name: str, check: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        def ready() -> dict[str, Any]:
            status: dict[str, Any] = self.get(plural, namespace, name).get("status") or {}
            assert check(status), status
            return status

        return eventually(ready, timeout=timeout, interval=0.02)


def condition_of(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in status.get("conditions") or [] if c["type"] == kind), {})


# -- the operator process ---------------------------------------------------------------------


class OperatorProcess:
    """``crd-scheduler run`` in a subprocess, its output in a log file."""

    def __init__(
        self,
        kubeconfig: Path,
        home_namespace: str,
        log_dir: Path,
        *extra: str,
        identity: str = "",
        env: dict[str, str] | None = None,
    ) -> None:
        self.identity = identity or unique("op")
        self.port = free_port()
        self.metrics_port = free_port()  # /metrics, /healthz, /readyz (scheduler_operator.control.serving)
        self.url = f"http://127.0.0.1:{self.metrics_port}"
        self.log_path = log_dir / f"{self.identity}.log"
        argv = [
            sys.executable, "-m", "scheduler_operator", "run",
            "--home-namespace", home_namespace, "--identity", self.identity,
            "--liveness", f"http://127.0.0.1:{self.port}/healthz", *FAST_ELECTION,
            "--bind-address", "127.0.0.1", "--port", str(self.metrics_port),
            "--secure-port", "0", *extra,  # HTTPS only where a test asks (tests/e2e/test_observability.py)
        ]  # fmt: skip
        environ = {**os.environ, "KUBECONFIG": str(kubeconfig), "PYTHONUNBUFFERED": "1", **(env or {})}
        environ.pop("POD_NAME", None)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(argv, env=environ, stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT)

    def log(self) -> str:
        return self.log_path.read_text()

    def wait_log(self, pattern: str, timeout: float = 30) -> re.Match[str]:
        def found() -> re.Match[str]:
            assert self.process.poll() is None or re.search(pattern, self.log()), self._died()
            match = re.search(pattern, self.log())
            assert match, f"{pattern!r} not in the log of {self.identity} yet"
            return match

        return eventually(found, timeout=timeout, interval=0.05)

    def _died(self) -> str:
        return f"operator {self.identity} exited with {self.process.returncode}:\n{self.log()[-3000:]}"

    def running(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._log.close()

    def problems(self) -> list[str]:
        """Log lines telling of missing rights or crashes."""
        return [
            line for line in self.log().splitlines()
            if re.search(r"Forbidden|forbidden|HTTP 403|Not enough permissions|Traceback", line)
        ]  # fmt: skip

    def binds(self) -> list[tuple[str, str, str]]:
        """(pod, uid, node) for every binding this operator made."""
        return [m.groups() for m in BOUND_LINE.finditer(self.log())]  # type: ignore[misc]


def wait_binds(operator: OperatorProcess, count: int, timeout: float = 30) -> None:
    """Until ``operator`` has logged ``count`` bindings."""

    def bound() -> None:
        assert len(operator.binds()) >= count, f"{len(operator.binds())}/{count} bindings by {operator.identity}"

    eventually(bound, timeout=timeout, interval=0.02)


def lease_holder(coordination: Any, namespace: str) -> tuple[str, int]:
    lease = coordination.read_namespaced_lease(LEASE_NAME, namespace)
    return lease.spec.holder_identity or "", lease.spec.lease_transitions or 0


# -- a test's environment -------------------------------------------------------------------


@dataclass
class Env:
    cluster: Cluster
    api: client.ApiClient
    home: str
    tmp: Path
    label: str = field(default_factory=lambda: unique("e2e"))
    scheduler: str = field(default_factory=lambda: unique("crd-e2e"))
    nodes: list[str] = field(default_factory=list)
    operators: list[OperatorProcess] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)

    @property
    def core(self) -> Any:  # the generated client's model types are too strict for plain manifests
        return client.CoreV1Api(self.api)

    @property
    def custom(self) -> CustomResources:
        return CustomResources(self.api)

    def add_nodes(self, count: int, **kwargs: Any) -> list[str]:
        names = create_nodes(self.core, count, f"{self.label}-{len(self.nodes)}", **kwargs)
        for name in names:  # one label for all of the test's nodes
            self.core.patch_node(name, {"metadata": {"labels": {"e2e-run": self.label}}})
        self.nodes.extend(names)
        return names

    def start_operator(
        self,
        *extra: str,
        wait_for: str = r"leading: scheduling",
        kubeconfig: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> OperatorProcess:
        """``kubeconfig``: another way to the API server (a fault proxy's); ``env``: more
        environment for the process."""
        assert self.cluster.operator_kubeconfig is not None
        path = kubeconfig or self.cluster.operator_kubeconfig
        operator = OperatorProcess(path, self.home, self.tmp, *extra, env=env)
        self.operators.append(operator)
        operator.wait_log(wait_for)
        return operator

    def namespace(self) -> str:
        name = unique("e2e-tenant")
        self.core.create_namespace({"metadata": {"name": name}})
        eventually(lambda: self.core.read_namespaced_service_account("default", name))
        self.namespaces.append(name)
        return name

    def create_pods(self, namespace: str, names: list[str], **kwargs: Any) -> None:
        """Pods of the kit's keywords, for this scheduler on this test's nodes unless ``kwargs`` say otherwise."""
        defaults: dict[str, Any] = {"scheduler_name": self.scheduler, "node_selector": {"e2e-run": self.label}}
        for name in names:
            self.core.create_namespaced_pod(namespace, wrappers.pod(name, namespace, **{**defaults, **kwargs}))


@contextmanager
def environment(cluster: Cluster, api: client.ApiClient, home: str, tmp: Path) -> Iterator[Env]:
    """An Env whose operators, nodes and extra namespaces go away after (logs printed)."""
    if cluster.operator_kubeconfig is None:
        pytest.skip("no unprivileged identity: set CRD_SCHEDULER_TEST_OPERATOR_KUBECONFIG")
    with operator_rights(api, home):
        created = Env(cluster, api, home, tmp)
        try:
            yield created
        finally:
            for operator in created.operators:
                operator.stop()
                print(f"--- log of {operator.identity} (last lines) ---\n{operator.log()[-4000:]}")
            for name in [home, *created.namespaces]:
                force_delete_pods(created.core, name)
            delete_nodes(created.core, created.nodes)
            for name in created.namespaces:
                created.core.delete_namespace(name)


# -- checks -----------------------------------------------------------------------------------


def wait_all_bound(core: Any, namespace: str, names: set[str], timeout: float = 60) -> dict[str, str]:
    """Poll until every named pod has a node; return pod -> node."""

    def bound() -> dict[str, str]:
        pods = core.list_namespaced_pod(namespace).items
        placed = {p.metadata.name: p.spec.node_name for p in pods if p.metadata.name in names and p.spec.node_name}
        assert len(placed) == len(names), f"{len(placed)}/{len(names)} bound"
        return placed

    return eventually(bound, timeout=timeout, interval=0.2)


def assert_no_overcommit(core: Any, nodes: list[str]) -> None:
    """Per node, the requests of its pods fit its allocatable (as the Fit filter counts them)."""
    wanted = set(nodes)
    used: dict[str, Counter[str]] = {n: Counter() for n in nodes}
    for pod in core.list_pod_for_all_namespaces(field_selector="spec.nodeName!=").items:
        node = pod.spec.node_name
        if node in wanted:
            info = PodInfo(_plain(pod))
            used[node]["cpu"] += info.requests.milli_cpu
            used[node]["memory"] += info.requests.memory
            used[node]["pods"] += 1
    for name in nodes:
        allocatable = Resource.from_list(core.read_node(name).status.allocatable)
        assert used[name]["cpu"] <= allocatable.milli_cpu, (name, used[name])
        assert used[name]["memory"] <= allocatable.memory, (name, used[name])
        assert used[name]["pods"] <= allocatable.allowed_pod_number, (name, used[name])


def scheduled_events(api: client.ApiClient, namespace: str) -> Counter[str]:
    """Scheduled events the operator posted, per pod name."""
    events: Any = client.EventsV1Api(api).list_namespaced_event(namespace).items
    return Counter(
        e.regarding.name for e in events if e.reason == "Scheduled" and e.reporting_controller == "crd-scheduler"
    )


def failed_scheduling_notes(core: Any, namespace: str, pod: str, instance: str | None = None) -> list[str]:
    """Messages of a pod's FailedScheduling events, oldest first; with ``instance``, only those
    that scheduler replica posted (other sessions' operators on the shared cluster post about
    any pod whose profile they read). Read through core/v1, which serves events.k8s.io/v1 events
    too: the generated events/v1 models refuse events without an eventTime (the PV controller's)."""
    events = core.list_namespaced_event(namespace).items
    found = [
        e for e in events
        if e.reason == "FailedScheduling" and e.involved_object.name == pod
        and instance in (None, e.reporting_instance)
    ]  # fmt: skip
    found.sort(key=lambda e: e.event_time or e.last_timestamp or e.first_timestamp or e.metadata.creation_timestamp)
    return [str(e.message) for e in found]
