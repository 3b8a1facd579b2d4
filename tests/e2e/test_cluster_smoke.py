"""The test cluster behaves like a real one: the API calls the scheduler relies on, on a real server.

Nodes and pods are plain API objects (no kubelet); pods name a scheduler nobody runs, so only the
test moves them. The last tests check the dev cluster itself: loopback only, reuse, clean ``down``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client import ApiException

from scheduler_operator.control.backend import binding
from scheduler_operator.io.kube import ApiError
from scheduler_operator.io.transport import Credentials, Transport
from tests import wrappers
from tests.e2e import DEV_CLUSTER, Cluster, eventually

pytestmark = pytest.mark.e2e

UNHANDLED = "no-such-scheduler"
OPERATOR_USER = "system:serviceaccount:crd-scheduler:crd-scheduler"


@pytest.fixture
def core(api: client.ApiClient) -> Any:  # the generated client's model types are too strict for plain manifests
    return client.CoreV1Api(api)


@pytest.fixture
def make_node(core: Any) -> Iterator[Callable[..., str]]:
    """Create uniquely named Nodes (cluster-scoped, so deleted here rather than with a namespace)."""
    created: list[str] = []

    def make(**kwargs: Any) -> str:
        name = f"e2e-node-{uuid.uuid4().hex[:8]}"
        core.create_node(wrappers.node(name, **kwargs))
        created.append(name)
        return name

    yield make
    for name in created:
        core.delete_node(name)


def test_node_is_stored_as_given(core: Any, make_node: Callable[..., str], cluster: Cluster) -> None:
    name = make_node(cpu="8", memory="16Gi", labels={"zone": "a"})

    node = core.read_node(name)

    assert node.status.allocatable == {"cpu": "8", "memory": "16Gi", "pods": "110"}
    assert node.metadata.labels["zone"] == "a"
    if cluster.dev_cluster:  # TaintNodesByCondition is off: no kubelet would ever lift its taint
        assert not node.spec.taints


def test_pod_for_an_unhandled_scheduler_stays_pending(core: Any, namespace: str, make_node: Callable[..., str]) -> None:
    make_node()

    core.create_namespaced_pod(namespace, wrappers.pod("waits", namespace, scheduler_name=UNHANDLED, cpu="100m"))
    pod = core.read_namespaced_pod("waits", namespace)

    assert pod.status.phase == "Pending"
    assert pod.spec.node_name is None
    assert pod.spec.scheduler_name == UNHANDLED
    # ServiceAccount admission ran (and found the account the controller made).
    assert pod.spec.service_account_name == "default"


def bind_pod(api: client.ApiClient, namespace: str, name: str, uid: str, node: str) -> int:
    """pods/binding as the operator's and the extender's binders send it (UID precondition,
    through the transport, not retried): the HTTP status of the answer."""
    pod = wrappers.make_pod().name(name).namespace(namespace).uid(uid).info()

    async def post() -> int:
        transport = Transport(Credentials.of(api.configuration))
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
        try:
            await transport.request("POST", path, body=binding(pod, node, None), retry=False, decode=False)
        except ApiError as error:
            return error.status
        finally:
            await transport.close()
        return 201

    return asyncio.run(post())


def test_binding_sets_node_name_once(
    api: client.ApiClient, core: Any, namespace: str, make_node: Callable[..., str]
) -> None:
    first, second = make_node(), make_node()
    uid = core.create_namespaced_pod(namespace, wrappers.pod("bound", namespace, scheduler_name=UNHANDLED)).metadata.uid

    assert bind_pod(api, namespace, "bound", uid, first) == 201
    pod = core.read_namespaced_pod("bound", namespace)
    assert pod.spec.node_name == first
    assert {(c.type, c.status) for c in pod.status.conditions} >= {("PodScheduled", "True")}

    assert bind_pod(api, namespace, "bound", uid, second) == 409
    assert core.read_namespaced_pod("bound", namespace).spec.node_name == first


def test_binding_checks_the_pod_uid(
    api: client.ApiClient, core: Any, namespace: str, make_node: Callable[..., str]
) -> None:
    node = make_node()
    core.create_namespaced_pod(namespace, wrappers.pod("recreated", namespace, scheduler_name=UNHANDLED))

    assert bind_pod(api, namespace, "recreated", str(uuid.uuid4()), node) == 409
    assert core.read_namespaced_pod("recreated", namespace).spec.node_name is None


def test_binding_a_missing_pod_is_not_found(
    api: client.ApiClient, namespace: str, make_node: Callable[..., str]
) -> None:
    assert bind_pod(api, namespace, "absent", str(uuid.uuid4()), make_node()) == 404


def test_watch_sees_a_pod_added_then_modified(core: Any, namespace: str) -> None:
    start = core.list_namespaced_pod(namespace).metadata.resource_version
    core.create_namespaced_pod(namespace, wrappers.pod("watched", namespace, scheduler_name=UNHANDLED))
    core.patch_namespaced_pod("watched", namespace, {"metadata": {"labels": {"stage": "two"}}})

    seen = []
    stream: Any = watch.Watch()  # type: ignore[no-untyped-call]
    for event in stream.stream(core.list_namespaced_pod, namespace, resource_version=start, timeout_seconds=30):
        pod = event["object"]
        seen.append((event["type"], pod.metadata.name, (pod.metadata.labels or {}).get("stage")))
        if event["type"] == "MODIFIED":
            stream.stop()

    assert seen == [("ADDED", "watched", None), ("MODIFIED", "watched", "two")]


def _widget_crd(group: str) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["size"],
                "properties": {"size": {"type": "integer", "minimum": 1}},
            }
        },
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def test_custom_resource_round_trip(api: client.ApiClient, namespace: str) -> None:
    group = f"t{uuid.uuid4().hex[:8]}.e2e.crd-scheduler.io"
    extensions: Any = client.ApiextensionsV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    extensions.create_custom_resource_definition(_widget_crd(group))
    try:

        def established() -> None:
            conditions = extensions.read_custom_resource_definition(f"widgets.{group}").status.conditions or []
            assert ("Established", "True") in {(c.type, c.status) for c in conditions}

        eventually(established)
        widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 3}}
        eventually(lambda: custom.create_namespaced_custom_object(group, "v1", namespace, "widgets", widget))

        stored = custom.get_namespaced_custom_object(group, "v1", namespace, "widgets", "w1")
        with pytest.raises(ApiException) as invalid:
            bad = {**widget, "metadata": {"name": "w2"}, "spec": {"size": 0}}
            custom.create_namespaced_custom_object(group, "v1", namespace, "widgets", bad)
        listed = custom.list_namespaced_custom_object(group, "v1", namespace, "widgets")
    finally:
        extensions.delete_custom_resource_definition(f"widgets.{group}")

    assert stored["spec"] == {"size": 3}
    assert stored["metadata"]["uid"]
    assert invalid.value.status == 422  # the structural schema is enforced
    assert [item["metadata"]["name"] for item in listed["items"]] == ["w1"]


def test_operator_identity_has_only_what_rbac_grants(cluster: Cluster, api: client.ApiClient) -> None:
    rbac: Any = client.RbacAuthorizationV1Api(api)
    name = f"e2e-node-reader-{uuid.uuid4().hex[:6]}"
    with cluster.api_client(operator=True) as operator_api:
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        authentication: Any = client.AuthenticationV1Api(operator_api)
        user = authentication.create_self_subject_review(review).status.user_info.username
        nodes: Any = client.CoreV1Api(operator_api)

        def forbidden() -> None:
            try:
                nodes.list_node()
            except ApiException as error:
                assert error.status == 403, error
                return
            raise AssertionError(f"{user} may list nodes")

        forbidden()
        rbac.create_cluster_role(
            {
                "metadata": {"name": name},
                "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}],
            }
        )
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            }
        )
        try:
            listed = eventually(nodes.list_node)
        finally:
            rbac.delete_cluster_role_binding(name)
            rbac.delete_cluster_role(name)
        eventually(forbidden)

    assert listed.items is not None
    if cluster.dev_cluster:
        assert user == OPERATOR_USER


# The dev cluster itself.


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([sys.executable, str(DEV_CLUSTER), *args], capture_output=True, text=True, env=env)
    assert result.returncode == 0, f"dev-cluster {' '.join(args)}:\n{result.stderr}"
    return result


def _status(env: dict[str, str] | None = None) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(_run("status", "--json", env=env).stdout)
    return report


@pytest.fixture
def dev_cluster(cluster: Cluster) -> None:
    if not cluster.dev_cluster:
        pytest.skip("checks scripts/dev-cluster itself; the cluster in use is external")


def _ss_listeners(pids: set[int]) -> list[str]:
    """Local addresses of listening TCP sockets of ``pids``, as ``ss`` reports them."""
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True, check=True).stdout
    return [line.split()[3] for line in out.splitlines() if any(f"pid={pid}," in line for pid in pids)]


@pytest.mark.usefixtures("dev_cluster")
def test_dev_cluster_listens_on_loopback_only() -> None:
    report = _status()

    assert report["running"]
    assert {item["process"] for item in report["listeners"]} >= {"etcd", "kube-apiserver", "kube-controller-manager"}
    assert report["loopback_only"], report["listeners"]
    if shutil.which("ss"):
        addresses = _ss_listeners({item["pid"] for item in report["processes"]})
        assert addresses
        assert all(a.startswith(("127.0.0.1:", "[::1]:", "[::ffff:127.0.0.1]:")) for a in addresses), addresses


@pytest.mark.usefixtures("dev_cluster")
def test_controllers_write_at_scheduler_perfs_client_rate() -> None:
    # The resourceclaim controller creates each claim-template pod's claims; at client-go's
    # default 20 writes/s it, not the scheduler, paced the cluster benchmarks.
    processes = [p for p in _status()["processes"] if p["name"] == "kube-controller-manager" and p["alive"]]
    assert processes, _status()["processes"]
    arguments = Path(f"/proc/{processes[0]['pid']}/cmdline").read_bytes().decode().split("\0")
    assert {"--kube-api-qps=5000", "--kube-api-burst=5000"} <= set(arguments), arguments


def _running(pid: int) -> bool:
    """True unless gone or a zombie (exited, waiting for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.usefixtures("dev_cluster")
def test_second_cluster_up_is_idempotent_runs_kube_scheduler_and_down_leaves_nothing(tmp_path: Path) -> None:
    binaries = _run("build").stdout.strip()
    env = {**os.environ, "CRD_SCHEDULER_DEVCLUSTER_DIR": str(tmp_path / "dc"), "CRD_SCHEDULER_DEVCLUSTER_BIN": binaries}

    kubeconfig = _run("up", env=env).stdout.strip().splitlines()[-1]
    first = _status(env)
    again = _run("up", env=env).stdout.strip().splitlines()[-1]
    assert again == kubeconfig
    assert _status(env)["processes"] == first["processes"]

    log = Path(_run("kube-scheduler", "up", "--v", "2", env=env).stdout.strip().splitlines()[-1])
    second: Any = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    with second as second_api:
        core: Any = client.CoreV1Api(second_api)
        core.create_node(wrappers.node("n1"))
        core.create_namespaced_pod("default", wrappers.pod("p", "default", scheduler_name="default-scheduler"))

        def scheduled() -> None:
            assert core.read_namespaced_pod("p", "default").spec.node_name == "n1"

        eventually(scheduled, timeout=60)
    running = _status(env)
    assert "kube-scheduler" in {item["process"] for item in running["listeners"]}
    assert running["loopback_only"], running["listeners"]
    assert log.is_file()

    _run("down", env=env)

    pids = [item["pid"] for item in running["processes"]]
    assert len(pids) == 4
    assert not [pid for pid in pids if _running(pid)]
    assert not (tmp_path / "dc" / "run").exists()
    stopped = subprocess.run([sys.executable, str(DEV_CLUSTER), "status"], env=env, capture_output=True, text=True)
    assert stopped.returncode == 1
