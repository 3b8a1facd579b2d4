"""VolumeBinding's PreBind on a real API server with kube-controller-manager's PV controller
(``persistentvolume-binder``, run by hack/devcluster): the operator writes the selected-node
annotation of a WaitForFirstConsumer claim (the test then acts as the external provisioner) and
the ``claimRef`` of a static PV (the PV controller completes the binding), and a PreBind that
times out (upstream ``binder.go`` v1.36.3: "binding volumes: context deadline exceeded")
leaves the pod unbound and retried. The provisioning and static scenarios also run through the
real kube-scheduler v1.36.3 (its own process and schedulerName), which must end the same way:
the same selected node, the same node for the pod, claim and PV bound to each other.

A cluster started without the PV controller cannot bind volumes: the tests fail in CI (where
the cluster is fresh from this branch's hack/devcluster) and skip elsewhere, saying so.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduler_core.framework.storage import ANN_SELECTED_NODE
from tests import wrappers
from tests.e2e import Cluster, eventually
from tests.e2e.extender_support import kube_scheduler
from tests.e2e.operator_support import (
    Env,
    create_nodes,
    environment,
    failed_scheduling_notes,
    install_crds,
    profile,
    unique,
    wait_all_bound,
)

pytestmark = pytest.mark.e2e

PV_CONTROLLER_ACCOUNT = "persistent-volume-binder"  # kube-system SA of the PV controller
PROVISIONER = "e2e.crd-scheduler.io"
HOSTNAME = "kubernetes.io/hostname"


@pytest.fixture(scope="module")
def pv_controller(api: client.ApiClient) -> None:
    """The cluster runs the PV controller (its service account exists under
    ``--use-service-account-credentials``)."""
    core: Any = client.CoreV1Api(api)
    try:
        eventually(lambda: core.read_namespaced_service_account(PV_CONTROLLER_ACCOUNT, "kube-system"), timeout=10)
    except Exception:  # any failure means the controller is not there
        reason = (
            "the cluster does not run kube-controller-manager's persistentvolume-binder controller "
            "(no kube-system/persistent-volume-binder ServiceAccount); start a fresh dev cluster from "
            "this branch's hack/devcluster (another CRD_SCHEDULER_DEVCLUSTER_DIR)"
        )
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"e2e: {reason}", pytrace=False)
        pytest.skip(f"e2e: {reason}")


@pytest.fixture
def env(pv_controller: None, cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path) -> Iterator[Env]:
    install_crds(api)
    storage: Any = client.StorageV1Api(api)
    with environment(cluster, api, namespace, tmp_path) as created:
        created.cluster_scoped = []  # type: ignore[attr-defined]
        try:
            yield created
        finally:
            core = created.core
            for kind, name in created.cluster_scoped:  # type: ignore[attr-defined]
                try:
                    if kind == "StorageClass":
                        storage.delete_storage_class(name)
                    else:
                        core.delete_persistent_volume(name)
                except client.ApiException as error:
                    if error.status != 404:
                        raise


def storage_class(env: Env, provisioner: str, allowed_node: str | None = None) -> str:
    """A WaitForFirstConsumer class; ``allowed_node``: its only allowed topology (by hostname)."""
    name = unique("e2e-sc")
    storage: Any = client.StorageV1Api(env.api)  # plain manifests, not the client's models
    body: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    if allowed_node is not None:
        body["allowedTopologies"] = [{"matchLabelExpressions": [{"key": HOSTNAME, "values": [allowed_node]}]}]
    storage.create_storage_class(body)
    env.cluster_scoped.append(("StorageClass", name))  # type: ignore[attr-defined]
    return name


def claim(env: Env, name: str, class_name: str, namespace: str | None = None) -> dict[str, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "storageClassName": class_name,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    return client.ApiClient().sanitize_for_serialization(  # type: ignore[no-untyped-call,no-any-return]
        env.core.create_namespaced_persistent_volume_claim(namespace or env.home, body)
    )


def volume(
    env: Env, name: str, class_name: str, claim_ref: dict[str, Any] | None = None, node: str | None = None
) -> None:
    """A CSI PV; ``node``: the one node it is reachable from (node affinity by hostname)."""
    spec: dict[str, Any] = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": class_name,
        "persistentVolumeReclaimPolicy": "Retain",
        "csi": {"driver": PROVISIONER, "volumeHandle": name},
    }
    if claim_ref is not None:
        spec["claimRef"] = claim_ref
    if node is not None:
        term = {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    env.core.create_persistent_volume(
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}
    )
    env.cluster_scoped.append(("PersistentVolume", name))  # type: ignore[attr-defined]


def pod_with_claim(env: Env, name: str, claim_name: str) -> None:
    env.create_pods(
        env.home, [name], cpu="100m",
        volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
    )  # fmt: skip


def read_claim(env: Env, name: str) -> Any:
    return env.core.read_namespaced_persistent_volume_claim(name, env.home)


def test_wait_for_first_consumer_claim_is_annotated_provisioned_and_the_pod_binds(env: Env) -> None:
    nodes = env.add_nodes(3, cpu="2", memory="4Gi")
    sc = storage_class(env, PROVISIONER)
    created = claim(env, "data", sc)
    env.custom.create(env.home, profile("default", env.scheduler))
    env.start_operator()
    pod_with_claim(env, "user", "data")

    def annotated() -> str:
        annotations = read_claim(env, "data").metadata.annotations or {}
        assert ANN_SELECTED_NODE in annotations
        return str(annotations[ANN_SELECTED_NODE])

    selected = eventually(annotated)
    assert selected in nodes
    assert env.core.read_namespaced_pod("user", env.home).spec.node_name is None  # PreBind still waits

    # The external provisioner's part: a PV pre-bound to the claim; the PV controller binds.
    pv_name = f"pvc-{created['metadata']['uid']}"
    ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": env.home, "name": "data"}
    volume(env, pv_name, sc, {**ref, "uid": created["metadata"]["uid"]})

    placed = wait_all_bound(env.core, env.home, {"user"}, timeout=60)
    assert placed == {"user": selected}
    bound = read_claim(env, "data")
    assert bound.spec.volume_name == pv_name and bound.status.phase == "Bound"


def test_static_claim_and_volume_end_bound_to_each_other(env: Env) -> None:
    env.add_nodes(2, cpu="2", memory="4Gi")
    sc = storage_class(env, "kubernetes.io/no-provisioner")
    pv_name = unique("e2e-pv")
    volume(env, pv_name, sc)
    created = claim(env, "static", sc)
    env.custom.create(env.home, profile("default", env.scheduler))
    env.start_operator()
    pod_with_claim(env, "user", "static")

    wait_all_bound(env.core, env.home, {"user"}, timeout=60)
    pv = env.core.read_persistent_volume(pv_name)
    bound = read_claim(env, "static")
    assert (pv.spec.claim_ref.name, pv.spec.claim_ref.uid) == ("static", created["metadata"]["uid"])
    assert bound.spec.volume_name == pv_name
    assert (pv.status.phase, bound.status.phase) == ("Bound", "Bound")


def test_prebind_timeout_unreserves_and_requeues_with_upstreams_message(env: Env) -> None:
    env.add_nodes(2, cpu="2", memory="4Gi")
    sc = storage_class(env, PROVISIONER)  # no provisioner runs (yet)
    created = claim(env, "late", sc)
    short = [{"name": "VolumeBinding", "args": {"bindTimeoutSeconds": 2}}]
    env.custom.create(env.home, profile("default", env.scheduler, plugin_config=short))
    operator = env.start_operator()
    pod_with_claim(env, "waiting", "late")
    wanted = "binding volumes: context deadline exceeded"

    def failed() -> str:
        ours = failed_scheduling_notes(env.core, env.home, "waiting", operator.identity)
        assert ours, "no FailedScheduling yet"
        return ours[0]

    note = eventually(failed, timeout=60)
    assert wanted in note and "VolumeBinding" in note
    pod = env.core.read_namespaced_pod("waiting", env.home)
    assert pod.spec.node_name is None
    # Other sessions' operators on the shared cluster read this profile as a tenant's (their home
    # namespace is another), refuse its bindTimeoutSeconds and may write the condition after us.
    if set(failed_scheduling_notes(env.core, env.home, "waiting")) <= {note}:
        condition = next(c for c in pod.status.conditions or () if c.type == "PodScheduled")
        assert condition.status == "False" and wanted in condition.message
    assert ANN_SELECTED_NODE in (read_claim(env, "late").metadata.annotations or {})  # not rolled back

    # Unreserved and requeued: once a provisioner shows up, a later attempt binds the pod (to any
    # node: the new PV has no node affinity, and the claim may be bound before the retry).
    ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": env.home, "name": "late"}
    pv_name = f"pvc-{created['metadata']['uid']}"
    volume(env, pv_name, sc, {**ref, "uid": created["metadata"]["uid"]})
    placed = wait_all_bound(env.core, env.home, {"waiting"}, timeout=60)
    assert placed["waiting"] in env.nodes
    assert read_claim(env, "late").spec.volume_name == pv_name


# -- the same scenarios through the real kube-scheduler ---------------------------------------------


@dataclass(frozen=True)
class VolumeOutcome:
    """Where a scheduler put the pod and its volume, nodes as their index in the run's nodes."""

    selected_node: int | None  # the claim's selected-node annotation (provisioning only)
    pod_node: int
    bound: bool  # the claim and the PV name each other, both phase Bound


def _volume_scenario(env: Env, namespace: str, scheduler: str, *, static: bool) -> VolumeOutcome:
    """A pod with one claim on two fresh nodes, where only one node can have the volume: a
    static PV reachable from node 0 only, or a class provisioning on node 1 only (its
    allowedTopologies). Provisioning waits for the selected-node annotation, as an external
    provisioner does."""
    label = unique("e2e-vol")
    nodes = create_nodes(env.core, 2, label, cpu="2", memory="4Gi")
    env.nodes.extend(nodes)  # deleted after the test
    if static:
        sc = storage_class(env, "kubernetes.io/no-provisioner")
        pv_name = unique("e2e-pv")
        volume(env, pv_name, sc, node=nodes[0])
    else:
        sc = storage_class(env, PROVISIONER, allowed_node=nodes[1])
    created = claim(env, "data", sc, namespace)
    volumes = [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    env.core.create_namespaced_pod(
        namespace,
        wrappers.pod(
            "user", namespace, scheduler_name=scheduler, node_selector={"e2e-run": label}, cpu="100m", volumes=volumes
        ),
    )
    selected = None
    if not static:

        def annotated() -> str:
            annotations = env.core.read_namespaced_persistent_volume_claim("data", namespace).metadata.annotations
            assert ANN_SELECTED_NODE in (annotations or {})
            return str(annotations[ANN_SELECTED_NODE])

        selected = eventually(annotated, timeout=60)
        pv_name = f"pvc-{created['metadata']['uid']}"
        ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": namespace, "name": "data"}
        volume(env, pv_name, sc, {**ref, "uid": created["metadata"]["uid"]}, node=selected)
    placed = wait_all_bound(env.core, namespace, {"user"}, timeout=60)

    def bound() -> bool:
        pvc = env.core.read_namespaced_persistent_volume_claim("data", namespace)
        pv = env.core.read_persistent_volume(pv_name)
        assert (pvc.status.phase, pv.status.phase) == ("Bound", "Bound")
        return bool(pvc.spec.volume_name == pv_name and pv.spec.claim_ref.uid == created["metadata"]["uid"])

    return VolumeOutcome(
        nodes.index(selected) if selected is not None else None, nodes.index(placed["user"]), eventually(bound)
    )


@pytest.mark.parametrize(
    ("static", "expected"),
    [
        pytest.param(False, VolumeOutcome(1, 1, True), id="wait-for-first-consumer-provisioned"),
        pytest.param(True, VolumeOutcome(None, 0, True), id="static-volume"),
    ],
)
def test_volume_scenarios_end_as_with_kube_scheduler(
    env: Env, cluster: Cluster, tmp_path: Path, static: bool, expected: VolumeOutcome
) -> None:
    env.custom.create(env.home, profile("default", env.scheduler))
    env.start_operator()
    ours = _volume_scenario(env, env.home, env.scheduler, static=static)
    assert env.operators[0].problems() == []

    kube = f"kube-vol-{uuid.uuid4().hex[:6]}"
    with kube_scheduler(cluster, tmp_path, {"profiles": [{"schedulerName": kube}]}):
        upstream = _volume_scenario(env, env.namespace(), kube, static=static)
    assert ours == upstream == expected
