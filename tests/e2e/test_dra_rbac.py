"""The operator's DynamicResources rights in manifests/rbac.yaml are enough, and each write verb
is needed: the backend's claim writes as DynamicResources makes them (:data:`WRITES`: a PUT of a
claim, of its status, and for extended resources backed by DRA a create and a delete of the
special claim and a patch of the pod's ``status.extendedResourceClaimStatus``) run as a fresh
ServiceAccount bound to the manifest's resource.k8s.io rules, then to those rules with one right
left out, on the real API server.

A fresh identity, not the shared ``kubeconfig-operator`` one: other sessions' e2e tests bind
their own copies of the ClusterRole to that identity at any moment, which would hide a missing
right. The e2e operator tests (``test_dra.py``) run the whole operator on the manifest's rights.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
import yaml
from kubernetes import client, config

from scheduler_core.framework import ClusterAPI, PodInfo
from scheduler_core.framework.writes import RESOURCE_CLAIMS, STATUS, Precondition, Written, patch_pod_status
from scheduler_operator.control.backend import KubeBackend
from scheduler_operator.control.recorder import EventRecorder
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.transport import Credentials, Transport
from tests import wrappers
from tests.e2e import Cluster, eventually
from tests.e2e.operator_support import RBAC_FILE

pytestmark = pytest.mark.e2e

GROUP = "resource.k8s.io"
T = TypeVar("T")
FINALIZER = "resource.kubernetes.io/delete-protection"


def granted() -> set[tuple[str, str]]:
    """(resource, verb) of the manifest ClusterRole's rules for resource.k8s.io."""
    role = next(d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if d and d["kind"] == "ClusterRole")
    rules = [rule for rule in role["rules"] if GROUP in rule["apiGroups"]]
    assert all(rule["apiGroups"] == [GROUP] and "resourceNames" not in rule for rule in rules)
    return {(resource, verb) for rule in rules for resource in rule["resources"] for verb in rule["verbs"]}


def pod_status_rule() -> dict[str, Any]:
    """The manifest's rule for pods/status (the pod's extendedResourceClaimStatus is written there)."""
    role = next(d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if d and d["kind"] == "ClusterRole")
    rule: dict[str, Any] = next(r for r in role["rules"] if "pods/status" in r["resources"])
    assert rule == {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch"]}
    return rule


def rules_without(left_out: tuple[str, str] | None) -> list[dict[str, Any]]:
    """Those rights less ``left_out``, as rules (one per resource)."""
    kept = sorted(granted() - {left_out})
    resources = sorted({resource for resource, _ in kept})
    return [
        {"apiGroups": [GROUP], "resources": [r], "verbs": [verb for resource, verb in kept if resource == r]}
        for r in resources
    ]


def test_the_manifest_grants_dynamic_resources_exactly_upstreams_reads_and_the_plugins_writes() -> None:
    reads = {(r, v) for r in ("deviceclasses", "resourceslices", "resourceclaims") for v in ("list", "watch")}
    writes = {("resourceclaims", "update"), ("resourceclaims/status", "update"), ("resourceclaims/binding", "update")}
    # DRAExtendedResource: the special claim (bootstrappolicy/policy.go v1.36.3 grants kube-scheduler the same)
    special = {("resourceclaims", "create"), ("resourceclaims", "delete")}
    assert granted() == reads | writes | special


@pytest.fixture
def identity(api: client.ApiClient, cluster: Cluster, namespace: str) -> Iterator[tuple[str, str]]:
    """A fresh ServiceAccount of the test namespace: (its user name, a token)."""
    core: Any = client.CoreV1Api(api)
    name = f"e2e-dra-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    token = core.create_namespaced_service_account_token(name, namespace, {"spec": {"expirationSeconds": 3600}})
    yield f"system:serviceaccount:{namespace}:{name}", token.status.token


@dataclass(frozen=True)
class AsOperator:
    """The operator's claim writes under another identity: a KubeBackend on a transport of its
    own per call (each call runs in its own event loop, as ``asyncio.run`` makes one)."""

    credentials: Credentials
    lanes: Lanes

    async def call(self, act: Callable[[ClusterAPI], Awaitable[T]]) -> T:
        transport = Transport(self.credentials)
        try:
            recorder = EventRecorder(transport, self.lanes, instance="e2e-dra-rbac")
            return await act(KubeBackend(transport, self.lanes, recorder, stores={}))
        finally:
            await transport.close()


# DynamicResources' claim writes (dynamic_resources.py), by name.
WRITES: dict[str, Callable[[ClusterAPI, dict[str, Any]], Awaitable[Written]]] = {
    "update_claim": lambda api, claim: api.update(RESOURCE_CLAIMS, claim),
    "update_claim_status": lambda api, claim: api.update(RESOURCE_CLAIMS, claim, subresource=STATUS),
    "create_claim": lambda api, claim: api.create(RESOURCE_CLAIMS, claim),
    "delete_claim": lambda api, claim: api.delete(
        RESOURCE_CLAIMS, claim, precondition=Precondition(uid=claim["metadata"]["uid"])
    ),
}


def _backend_as(cluster: Cluster, token: str) -> tuple[AsOperator, Lanes, client.ApiClient]:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)  # type: ignore[no-untyped-call]
    configuration.cert_file = configuration.key_file = None
    configuration.api_key = {"authorization": f"Bearer {token}"}
    api = client.ApiClient(configuration)
    lanes = Lanes()
    return AsOperator(Credentials.of(configuration), lanes), lanes, api


def _bind(api: client.ApiClient, user: str, rules: list[dict[str, Any]]) -> str:
    rbac: Any = client.RbacAuthorizationV1Api(api)
    name = f"e2e-dra-rbac-{uuid.uuid4().hex[:6]}"
    rbac.create_cluster_role({"metadata": {"name": name}, "rules": rules})
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    })  # fmt: skip
    return name


def _claim_and_pod(api: client.ApiClient, namespace: str) -> tuple[dict[str, Any], PodInfo]:
    custom: Any = client.CustomObjectsApi(api)
    claim: dict[str, Any] = custom.create_namespaced_custom_object(GROUP, "v1", namespace, "resourceclaims", {
        "apiVersion": f"{GROUP}/v1", "kind": "ResourceClaim", "metadata": {"name": "gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "e2e-rbac-class"}}]}},
    })  # fmt: skip
    core: Any = client.CoreV1Api(api)
    pod = core.create_namespaced_pod(
        namespace, wrappers.pod("user", namespace, scheduler_name="nobody", node_selector={"e2e-run": "nowhere"})
    )
    return claim, PodInfo(api.sanitize_for_serialization(pod))  # type: ignore[no-untyped-call]


def _allocated(claim: dict[str, Any], pod: PodInfo) -> dict[str, Any]:
    return {**claim, "status": {
        "allocation": {"devices": {"results": [
            {"request": "gpu", "driver": "gpu.e2e.crd-scheduler.io", "pool": "node-a", "device": "gpu-0"}]}},
        "reservedFor": [{"resource": "pods", "name": pod.name, "uid": pod.uid}],
    }}  # fmt: skip


def _write(backend: AsOperator, method: str, claim: dict[str, Any]) -> Written:
    return asyncio.run(backend.call(lambda api: WRITES[method](api, claim)))


def _succeeds(backend: AsOperator, method: str, claim: dict[str, Any]) -> dict[str, Any]:
    def done() -> dict[str, Any]:  # the RBAC cache settles asynchronously
        stored, status = _write(backend, method, claim)
        assert status is None and stored is not None, status
        return stored

    return eventually(done)


@pytest.mark.parametrize(
    ("without", "refused"),
    [
        pytest.param(None, None, id="as-granted"),
        pytest.param(("resourceclaims", "update"), "update_claim", id="no-update-of-claims-no-finalizer"),
        pytest.param(("resourceclaims/status", "update"), "update_claim_status", id="no-status-update"),
        pytest.param(("resourceclaims/binding", "update"), "update_claim_status", id="no-binding-no-allocation"),
    ],
)
def test_each_granted_write_is_needed_and_they_suffice(
    api: client.ApiClient, cluster: Cluster, namespace: str, identity: tuple[str, str],
    without: tuple[str, str] | None, refused: str | None,
) -> None:  # fmt: skip
    user, token = identity
    role = _bind(api, user, rules_without(without))
    backend, _, as_operator = _backend_as(cluster, token)
    rbac: Any = client.RbacAuthorizationV1Api(api)
    try:
        claim, pod = _claim_and_pod(api, namespace)
        custom: Any = client.CustomObjectsApi(as_operator)
        eventually(lambda: custom.list_cluster_custom_object(GROUP, "v1", "resourceclaims"))
        for plural in ("deviceclasses", "resourceslices"):
            custom.list_cluster_custom_object(GROUP, "v1", plural)
        protected = {**claim, "metadata": {**claim["metadata"], "finalizers": [FINALIZER]}}
        if refused == "update_claim":
            stored, status = _write(backend, "update_claim", protected)
            assert stored is None and status is not None
            assert "forbidden" in status.message() and '"resourceclaims"' in status.message()
            return
        protected = _succeeds(backend, "update_claim", protected)
        if refused == "update_claim_status":
            stored, status = _write(backend, "update_claim_status", _allocated(protected, pod))
            assert stored is None and status is not None
            wanted = (
                # pkg/registry/resource/utils.go v1.36.3 AuthorizedForBinding
                'changing status.allocation or status.reservedFor requires resource="resourceclaims/binding", '
                'verb="update" permission'
                if without == ("resourceclaims/binding", "update")
                else 'cannot update resource "resourceclaims/status"'
            )
            assert wanted in status.message()
            return
        allocated = _succeeds(backend, "update_claim_status", _allocated(protected, pod))
        assert allocated["status"]["reservedFor"][0]["uid"] == pod.uid
        released, status = _write(backend, "update_claim_status", {**allocated, "status": {}})
        assert status is None and released is not None and not released.get("status", {}).get("allocation")
    finally:
        as_operator.close()  # type: ignore[no-untyped-call]
        rbac.delete_cluster_role_binding(role)
        rbac.delete_cluster_role(role)
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP, "v1", namespace, "resourceclaims", "gpu", {"metadata": {"finalizers": None}}
        )


SPECIAL: dict[str, Any] = {
    "apiVersion": f"{GROUP}/v1", "kind": "ResourceClaim",
    "metadata": {"generateName": "user-extended-resources-",
                 "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"}},
    "spec": {"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
        "deviceClassName": "e2e-rbac-class", "allocationMode": "ExactCount", "count": 1}}]}},
}  # fmt: skip


@pytest.mark.parametrize(
    ("without", "refused"),
    [
        pytest.param(None, None, id="as-granted"),
        pytest.param(("resourceclaims", "create"), "create_claim", id="no-create-no-special-claim"),
        pytest.param(("resourceclaims", "delete"), "delete_claim", id="no-delete-special-claims-orphaned"),
    ],
)
def test_the_special_claim_of_extended_resources_needs_create_and_delete(
    api: client.ApiClient, cluster: Cluster, namespace: str, identity: tuple[str, str],
    without: tuple[str, str] | None, refused: str | None,
) -> None:  # fmt: skip
    """PreBind creates the claim (generated name, the pod its controlling owner) and writes the
    pod's ``status.extendedResourceClaimStatus`` (pods/status patch); Unreserve and PostFilter
    delete it."""
    user, token = identity
    role = _bind(api, user, [*rules_without(without), pod_status_rule()])
    backend, _, as_operator = _backend_as(cluster, token)
    rbac: Any = client.RbacAuthorizationV1Api(api)
    core: Any = client.CoreV1Api(api)
    try:
        gpu = {"example.com/gpu": "1"}
        container = {"name": "c", "image": "pause", "resources": {"requests": gpu, "limits": gpu}}
        created = core.create_namespaced_pod(
            namespace,
            wrappers.pod(
                "user", namespace, scheduler_name="nobody", node_selector={"e2e-run": "nowhere"}, containers=[container]
            ),
        )
        pod = PodInfo(api.sanitize_for_serialization(created))  # type: ignore[no-untyped-call]
        owner = {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
        special = {**SPECIAL, "metadata": {**SPECIAL["metadata"], "namespace": namespace, "ownerReferences": [owner]}}
        if refused == "create_claim":
            stored, status = _write(backend, "create_claim", special)
            assert stored is None and status is not None
            assert "forbidden" in status.message() and 'cannot create resource "resourceclaims"' in status.message()
            return
        claim = _succeeds(backend, "create_claim", special)
        assert claim["metadata"]["name"].startswith("user-extended-resources-")
        mapping = {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-0"}
        value = {"requestMappings": [mapping], "resourceClaimName": claim["metadata"]["name"]}
        fields = {"extendedResourceClaimStatus": value}
        assert asyncio.run(backend.call(lambda api: patch_pod_status(api, pod, fields))) is None
        written = core.read_namespaced_pod(pod.name, namespace).status.extended_resource_claim_status
        assert written.resource_claim_name == claim["metadata"]["name"]
        _, status = _write(backend, "delete_claim", claim)
        if refused == "delete_claim":
            assert status is not None
            assert "forbidden" in status.message() and 'cannot delete resource "resourceclaims"' in status.message()
            return
        assert status is None
        custom: Any = client.CustomObjectsApi(api)
        left = custom.list_namespaced_custom_object(GROUP, "v1", namespace, "resourceclaims")["items"]
        assert claim["metadata"]["name"] not in [c["metadata"]["name"] for c in left]
    finally:
        as_operator.close()  # type: ignore[no-untyped-call]
        rbac.delete_cluster_role_binding(role)
        rbac.delete_cluster_role(role)
