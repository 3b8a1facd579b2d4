"""One contract, two backends: the same cases against the in-memory cluster of ``simulate``
(``scheduler_core.simulator.backend.InMemoryCluster``) and the Kubernetes backend of the
operator (``scheduler_operator.control.backend.KubeBackend``) on the real API server.

The simulator is the API server's twin (as httpx's in-memory transport is the network's), so
what plugins see through ``ClusterAPI`` must not depend on which one runs: binding sets
``spec.nodeName``, a missing pod is an error naming it, preemption's delete is idempotent,
nominations are set and cleared, VolumeBinding's PV/PVC patches and DynamicResources' claim
updates write what they say and fail on a stale resourceVersion with the API server's message
(each through the one write API: ``writes.preempt``, ``writes.patch_pod_status``, the
``create``/``update``/``patch``/``delete`` verbs).
One known difference is left out on purpose: binding a pod that is already bound under the same
UID is an error in memory, but success for the operator (another replica bound it during a
failover; see ``scheduler_operator/control/backend.py``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from scheduler_core.framework import ClusterAPI, Code, PodInfo
from scheduler_core.framework.writes import (
    RESOURCE_CLAIMS,
    STATUS,
    Precondition,
    Written,
    is_conflict,
    is_not_found,
    patch_pod_status,
    preempt,
)
from scheduler_core.plugins.volumebinding.prebind import claim_ref_write, selected_node_write
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_operator.control.backend import KubeBackend
from scheduler_operator.control.recorder import EventRecorder
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.transport import Credentials, Transport
from tests.wrappers import make_pod


@dataclass
class Twin:
    """A backend under contract: its ClusterAPI, and how to create and read back pods."""

    api: ClusterAPI
    namespace: str
    create: Callable[[dict[str, Any]], PodInfo]
    stored: Callable[[PodInfo], dict[str, Any] | None]
    create_storage: Callable[[dict[str, Any]], dict[str, Any]]  # a PV or PVC, as stored
    create_claim: Callable[[dict[str, Any]], dict[str, Any]]  # a ResourceClaim, as stored


def _in_memory(namespace: str) -> Twin:
    cluster = InMemoryCluster()

    def create(manifest: dict[str, Any]) -> PodInfo:
        info = PodInfo(manifest)
        cluster.pods[info.uid] = manifest
        return info

    return Twin(
        cluster, namespace, create, lambda pod: cluster.pod(pod.namespace, pod.name),
        lambda obj: cluster.volumes.create(obj["kind"], obj), cluster.claims.create,
    )  # fmt: skip


def _kube(api: client.ApiClient, namespace: str, request: pytest.FixtureRequest) -> tuple[Twin, Lanes, Transport]:
    core: Any = client.CoreV1Api(api)  # the generated client's model types are too strict for plain manifests
    lanes = Lanes()
    transport = Transport(Credentials.of(api.configuration))
    recorder = EventRecorder(transport, lanes, instance=f"contract-{uuid.uuid4().hex[:6]}")
    backend = KubeBackend(transport, lanes, recorder, stores={})

    def create(manifest: dict[str, Any]) -> PodInfo:
        body = {**manifest, "metadata": {k: v for k, v in manifest["metadata"].items() if k != "uid"}}
        created = api.sanitize_for_serialization(core.create_namespaced_pod(namespace, body))  # type: ignore[no-untyped-call]
        return PodInfo(created)

    def stored(pod: PodInfo) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = api.sanitize_for_serialization(core.read_namespaced_pod(pod.name, pod.namespace))  # type: ignore[no-untyped-call]
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    def create_storage(obj: dict[str, Any]) -> dict[str, Any]:
        if obj["kind"] == "PersistentVolume":
            name = obj["metadata"]["name"]
            created = core.create_persistent_volume(obj)
            request.addfinalizer(lambda: core.delete_persistent_volume(name))
            # The PV controller (when it runs) writes the new PV's phase at once: read that version.
            deadline = time.monotonic() + 5
            while (created.status.phase or "Pending") == "Pending" and time.monotonic() < deadline:
                time.sleep(0.1)
                created = core.read_persistent_volume(name)
        else:
            created = core.create_namespaced_persistent_volume_claim(namespace, obj)
        result: dict[str, Any] = api.sanitize_for_serialization(created)  # type: ignore[no-untyped-call]
        return result

    def create_claim(obj: dict[str, Any]) -> dict[str, Any]:
        resource: Any = client.CustomObjectsApi(api)  # plain JSON in and out
        created: dict[str, Any] = resource.create_namespaced_custom_object(
            "resource.k8s.io", "v1", namespace, "resourceclaims", obj
        )
        return created

    return Twin(backend.api, namespace, create, stored, create_storage, create_claim), lanes, transport


@pytest.fixture(params=["in-memory", "kube-apiserver"])
async def twin(request: pytest.FixtureRequest) -> AsyncIterator[Twin]:
    if request.param == "in-memory":
        yield _in_memory("default")
        return
    api: client.ApiClient = request.getfixturevalue("api")
    namespace: str = request.getfixturevalue("namespace")
    backend, lanes, transport = _kube(api, namespace, request)
    try:
        yield backend
    finally:
        await lanes.drain()
        await transport.close()


async def test_bind_sets_the_node_name(twin: Twin) -> None:
    pod = twin.create(make_pod().name("bind-me").namespace(twin.namespace).req(cpu="100m").obj())
    assert await twin.api.bind(pod, "node-a") is None
    stored = twin.stored(pod)
    assert stored is not None and stored["spec"]["nodeName"] == "node-a"


async def test_binding_a_missing_pod_is_an_error_naming_it(twin: Twin) -> None:
    ghost = make_pod().name("ghost").namespace(twin.namespace).info()
    status = await twin.api.bind(ghost, "node-a")
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'pods "ghost" not found'


async def test_preemption_delete_removes_the_pod_and_is_idempotent(twin: Twin) -> None:
    pod = twin.create(make_pod().name("victim").namespace(twin.namespace).req(cpu="100m").obj())
    assert await preempt(twin.api, pod, "preempted by default/urgent") is None
    assert twin.stored(pod) is None
    assert await preempt(twin.api, pod, "preempted by default/urgent") is None


async def test_nomination_is_set_then_cleared(twin: Twin) -> None:
    pod = twin.create(make_pod().name("nominee").namespace(twin.namespace).req(cpu="100m").obj())
    assert await patch_pod_status(twin.api, pod, {"nominatedNodeName": "node-b"}) is None
    stored = twin.stored(pod)
    assert stored is not None and stored["status"].get("nominatedNodeName") == "node-b"
    assert await patch_pod_status(twin.api, pod, {"nominatedNodeName": None}) is None
    stored = twin.stored(pod)
    assert stored is not None and not stored["status"].get("nominatedNodeName")


async def test_nominating_a_missing_pod_is_an_error_naming_it(twin: Twin) -> None:
    ghost = make_pod().name("ghost").namespace(twin.namespace).info()
    status = await patch_pod_status(twin.api, ghost, {"nominatedNodeName": "node-b"})
    assert status is not None and status.message() == 'pods "ghost" not found'


# -- VolumeBinding's PreBind writes (upstream binder.go bindAPIUpdate) -----------------------------
def _claim(twin: Twin, name: str) -> dict[str, Any]:
    return twin.create_storage(
        {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": twin.namespace},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": "contract-no-class"},  # nothing provisions or binds it
        }
    )  # fmt: skip


def _volume(twin: Twin) -> dict[str, Any]:
    return twin.create_storage(
        {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": f"contract-pv-{uuid.uuid4().hex[:8]}"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
                     "csi": {"driver": "contract.example.com", "volumeHandle": "h"}},
        }
    )  # fmt: skip


async def test_selected_node_annotation_is_written_once_and_conflicts_when_stale(twin: Twin) -> None:
    pvc = _claim(twin, "data")
    stored, status = await twin.api.write(selected_node_write(pvc, "node-a"))
    assert status is None and stored is not None
    assert stored["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-a"
    assert int(stored["metadata"]["resourceVersion"]) > int(pvc["metadata"]["resourceVersion"])
    _, status = await twin.api.write(selected_node_write(pvc, "node-b"))  # the version read before
    assert status is not None and status.message() == (
        'Operation cannot be fulfilled on persistentvolumeclaims "data": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    ghost = {**pvc, "metadata": {**pvc["metadata"], "name": "ghost"}}
    _, status = await twin.api.write(selected_node_write(ghost, "node-a"))
    assert status is not None and status.message() == 'persistentvolumeclaims "ghost" not found'


async def test_claim_ref_is_written_and_conflicts_when_stale(twin: Twin) -> None:
    pv, pvc = _volume(twin), _claim(twin, "static")
    ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": twin.namespace, "name": "static",
           "uid": pvc["metadata"]["uid"]}  # fmt: skip
    pre_bound = {**pv, "spec": {**pv["spec"], "claimRef": ref}}
    pre_bound["metadata"] = {**pv["metadata"], "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}}
    stored, status = await twin.api.write(claim_ref_write(pre_bound))
    assert status is None and stored is not None
    assert stored["spec"]["claimRef"]["uid"] == pvc["metadata"]["uid"]
    assert stored["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    _, status = await twin.api.write(claim_ref_write(pre_bound))  # same resourceVersion again: stale now
    assert status is not None and status.message() == (
        f'Operation cannot be fulfilled on persistentvolumes "{pv["metadata"]["name"]}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )


# -- DynamicResources' claim writes (upstream dynamicresources.go bindClaim, Unreserve, PostFilter) --
CLAIM_CONFLICT = (
    'Operation cannot be fulfilled on resourceclaims.resource.k8s.io "{}": the object has been modified; '
    "please apply your changes to the latest version and try again"
)
FINALIZER = "resource.kubernetes.io/delete-protection"  # k8s.io/api resource/v1 types.go Finalizer


def _resource_claim(twin: Twin, name: str) -> dict[str, Any]:
    return twin.create_claim(
        {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": twin.namespace},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "contract-class"}}]}},
        }
    )  # fmt: skip


def _allocated(claim: dict[str, Any], pod: PodInfo) -> dict[str, Any]:
    """``claim`` allocated and reserved for ``pod`` (a real one: kube-controller-manager's
    resourceclaim-controller removes reservations for pods that do not exist)."""
    status = {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.contract.example.com", "pool": "node-a",
                                     "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]},
        },
        "reservedFor": [{"resource": "pods", "name": pod.name, "uid": pod.uid}],
    }  # fmt: skip
    return {**claim, "status": status}


async def test_claim_status_is_replaced_and_conflicts_when_stale(twin: Twin) -> None:
    claim = _resource_claim(twin, "gpu")
    written = _allocated(claim, twin.create(make_pod().name("user").namespace(twin.namespace).req(cpu="100m").obj()))
    stored, status = await twin.api.update(RESOURCE_CLAIMS, written, subresource=STATUS)
    assert status is None and stored is not None
    assert stored["status"] == written["status"]
    assert stored["spec"] == claim["spec"]
    assert stored["metadata"]["resourceVersion"] != claim["metadata"]["resourceVersion"]
    _, status = await twin.api.update(RESOURCE_CLAIMS, written, subresource=STATUS)  # the version read before
    assert status is not None and status.message() == CLAIM_CONFLICT.format("gpu")
    ghost = {**written, "metadata": {**written["metadata"], "name": "ghost"}}
    _, status = await twin.api.update(RESOURCE_CLAIMS, ghost, subresource=STATUS)
    assert status is not None and status.message() == 'resourceclaims.resource.k8s.io "ghost" not found'


async def test_get_reads_the_claim_a_conflict_left_behind(twin: Twin) -> None:
    """DynamicResources' PreBind reads the claim again after a conflict (upstream bindClaim's
    GET): the API's current object, not a store that may lag it; a claim gone is NotFound."""
    claim = _resource_claim(twin, "gpu")
    written = _allocated(claim, twin.create(make_pod().name("user").namespace(twin.namespace).req(cpu="100m").obj()))
    stored, status = await twin.api.update(RESOURCE_CLAIMS, written, subresource=STATUS)
    assert status is None and stored is not None
    _, status = await twin.api.update(RESOURCE_CLAIMS, written, subresource=STATUS)  # stale: 409
    assert status is not None and is_conflict(status)
    fresh, status = await twin.api.get(RESOURCE_CLAIMS, claim)
    assert status is None and fresh is not None
    assert fresh["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    assert fresh["status"] == written["status"]
    ghost = {**claim, "metadata": {**claim["metadata"], "name": "ghost"}}
    _, status = await twin.api.get(RESOURCE_CLAIMS, ghost)
    assert status is not None and is_not_found(status)
    assert status.message() == 'resourceclaims.resource.k8s.io "ghost" not found'


async def test_claim_status_update_changes_nothing_but_the_status(twin: Twin) -> None:
    claim = _resource_claim(twin, "gpu")
    written = _allocated(claim, twin.create(make_pod().name("user").namespace(twin.namespace).req(cpu="100m").obj()))
    written["metadata"] = {**claim["metadata"], "finalizers": [FINALIZER], "labels": {"x": "y"}}
    stored, status = await twin.api.update(RESOURCE_CLAIMS, written, subresource=STATUS)
    assert status is None and stored is not None
    assert not stored["metadata"].get("finalizers") and not stored["metadata"].get("labels")
    assert stored["status"] == written["status"]


async def test_claim_update_adds_the_finalizer_keeps_the_status_and_conflicts_when_stale(twin: Twin) -> None:
    claim = _resource_claim(twin, "gpu")
    allocated, status = await twin.api.update(
        RESOURCE_CLAIMS,
        _allocated(claim, twin.create(make_pod().name("user").namespace(twin.namespace).req(cpu="100m").obj())),
        subresource=STATUS,
    )
    assert status is None and allocated is not None
    protected = {**allocated, "metadata": {**allocated["metadata"], "finalizers": [FINALIZER]}, "status": {}}
    stored, status = await twin.api.update(RESOURCE_CLAIMS, protected)
    assert status is None and stored is not None
    assert stored["metadata"]["finalizers"] == [FINALIZER]
    assert stored["status"] == allocated["status"]  # an update of the claim leaves its status
    _, status = await twin.api.update(RESOURCE_CLAIMS, protected)
    assert status is not None and status.message() == CLAIM_CONFLICT.format("gpu")


async def test_deallocation_clears_allocation_and_reservations(twin: Twin) -> None:
    """PostFilter's write (and Unreserve's, for the last pod): an empty status."""
    claim = _resource_claim(twin, "gpu")
    allocated, status = await twin.api.update(
        RESOURCE_CLAIMS,
        _allocated(claim, twin.create(make_pod().name("user").namespace(twin.namespace).req(cpu="100m").obj())),
        subresource=STATUS,
    )
    assert status is None and allocated is not None
    stored, status = await twin.api.update(RESOURCE_CLAIMS, {**allocated, "status": {}}, subresource=STATUS)
    assert status is None and stored is not None
    assert not (stored.get("status") or {}).get("allocation") and not stored["status"].get("reservedFor")


async def test_refusals_carry_the_code_and_reason_that_plugins_read(twin: Twin) -> None:
    """``writes.is_conflict`` (DynamicResources retries on it) and ``writes.is_not_found``
    (preemption counts a victim gone as preempted) read both backends alike."""
    claim = _resource_claim(twin, "gpu")
    written = _allocated(claim, twin.create(make_pod().name("user").namespace(twin.namespace).req(cpu="100m").obj()))
    assert (await twin.api.update(RESOURCE_CLAIMS, written, subresource=STATUS))[1] is None
    _, stale = await twin.api.update(RESOURCE_CLAIMS, written, subresource=STATUS)
    _, gone = await twin.api.update(RESOURCE_CLAIMS, {**claim, "metadata": {**claim["metadata"], "name": "ghost"}})
    _, recreated = await _delete_claim(twin, {**claim, "metadata": {**claim["metadata"], "uid": "0000"}})
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "contract-class"}}]}}
    _, taken = await twin.api.create(RESOURCE_CLAIMS, {"metadata": {"name": "gpu", "namespace": twin.namespace},
                                                       "spec": spec})  # fmt: skip
    refusals = [stale, gone, recreated, taken]
    assert all(s is not None for s in refusals)
    assert [is_conflict(s) for s in refusals if s is not None] == [True, False, True, False]
    assert [is_not_found(s) for s in refusals if s is not None] == [False, True, False, False]
    assert taken is not None and taken.message() == 'resourceclaims.resource.k8s.io "gpu" already exists'


# -- extended resources backed by DRA: the special claim and the pod's status (extendeddynamicresources.go) --
GENERATED_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery pkg/util/rand


async def _delete_claim(twin: Twin, claim: dict[str, Any]) -> Written:
    """DynamicResources' delete of a claim: under its uid."""
    return await twin.api.delete(RESOURCE_CLAIMS, claim, precondition=Precondition(uid=claim["metadata"]["uid"]))


def _special(twin: Twin, pod: PodInfo) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"namespace": twin.namespace, "generateName": f"{pod.name}-extended-resources-",
                     "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid,
                                          "controller": True}]},
        "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
            "deviceClassName": "contract-class", "allocationMode": "ExactCount", "count": 1}}]}},
    }  # fmt: skip


async def test_the_special_claim_gets_a_generated_name_and_is_deleted_under_its_uid(twin: Twin) -> None:
    pod = twin.create(make_pod().name("user").namespace(twin.namespace).req(cpu="100m").obj())
    created, status = await twin.api.create(RESOURCE_CLAIMS, _special(twin, pod))
    assert status is None and created is not None
    name, uid = created["metadata"]["name"], created["metadata"]["uid"]
    suffix = name.removeprefix("user-extended-resources-")
    assert len(suffix) == 5 and set(suffix) <= set(GENERATED_NAME_ALPHABET)
    assert created["spec"] == _special(twin, pod)["spec"]
    other = {**created, "metadata": {**created["metadata"], "uid": "0000"}}
    _, status = await _delete_claim(twin, other)
    assert status is not None and status.message() == (  # k8s.io/apiserver pkg/registry/rest/delete.go
        f'Operation cannot be fulfilled on ResourceClaim.resource.k8s.io "{name}": the UID in the precondition '
        f"(0000) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
    )
    assert (await _delete_claim(twin, created))[1] is None
    _, status = await _delete_claim(twin, created)
    assert status is not None and status.message() == f'resourceclaims.resource.k8s.io "{name}" not found'


async def test_the_pod_status_names_its_special_claim(twin: Twin) -> None:
    manifest = make_pod().name("user").namespace(twin.namespace).req({"example.com/gpu": "1"}).obj()
    manifest["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "1"}
    pod = twin.create(manifest)
    container = pod.pod["spec"]["containers"][0]["name"]
    mapping = {"containerName": container, "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    value = {"requestMappings": [mapping], "resourceClaimName": "user-extended-resources-abcde"}
    assert await patch_pod_status(twin.api, pod, {"extendedResourceClaimStatus": value}) is None
    stored = twin.stored(pod)
    assert stored is not None and stored["status"]["extendedResourceClaimStatus"] == value
    ghost = make_pod().name("ghost").namespace(twin.namespace).info()
    status = await patch_pod_status(twin.api, ghost, {"extendedResourceClaimStatus": value})
    assert status is not None and status.message() == 'pods "ghost" not found'


async def test_a_pod_status_naming_no_container_of_the_pod_is_invalid(twin: Twin) -> None:
    """``validatePodExtendedResourceClaimStatus`` (pkg/apis/core/validation/validation.go v1.36.3)."""
    manifest = make_pod().name("user").namespace(twin.namespace).req({"example.com/gpu": "1"}).obj()
    manifest["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "1"}
    pod = twin.create(manifest)
    mapping = {"containerName": "nope", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
    status = await patch_pod_status(
        twin.api, pod, {"extendedResourceClaimStatus": {"requestMappings": [mapping],
                                                        "resourceClaimName": "user-extended-resources-abcde"}}
    )  # fmt: skip
    assert status is not None and status.message() == (
        'Pod "user" is invalid: status.extendedResourceClaimStatus.requestMappings[0].containerName: '
        'Invalid value: "nope": must match the name of an entry in spec.initContainers.name or spec.containers.name'
    )
    container = manifest["spec"]["containers"][0]["name"]
    status = await patch_pod_status(
        twin.api, pod, {"extendedResourceClaimStatus": {
            "requestMappings": [{**mapping, "containerName": container, "resourceName": "example.com/other"}]}}
    )  # fmt: skip
    assert status is not None and status.message() == (
        'Pod "user" is invalid: [status.extendedResourceClaimStatus.requestMappings[0].resourceName: Invalid value: '
        '"example.com/other": must match the extended resource name of an entry in '
        "spec.initContainers.resources.requests or spec.containers.resources.requests, "
        "status.extendedResourceClaimStatus.resourceClaimName: Required value]"
    )
