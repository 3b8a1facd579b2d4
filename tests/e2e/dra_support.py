"""Helpers for the DynamicResources e2e tests (no tests here): the test plays the DRA driver.

A :class:`Driver` has a test-unique driver name, a DeviceClass selecting its devices (CEL
``device.driver == "<name>"``) and publishes one ResourceSlice per node, a pool named after the
node (generation 1, one slice), as a node-local driver's kubelet plugin does. Its cluster-scoped
objects are deleted after. The pods' claims come from ResourceClaimTemplates through the dev
cluster's ``resourceclaim-controller``, which names the generated claim in the pod's
``status.resourceClaimStatuses``.

Objects go through ``CustomObjectsApi`` as plain JSON (the generated client's models are too
strict for hand-written manifests and drop what they do not know).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from tests.e2e import eventually

GROUP, VERSION = "resource.k8s.io", "v1"
API_VERSION = f"{GROUP}/{VERSION}"

Device = dict[str, Any]


def device(name: str, **attributes: str) -> Device:
    """A device with string attributes (``model="a100"``), in the driver's own domain."""
    found: Device = {"name": name}
    if attributes:
        found["attributes"] = {key: {"string": value} for key, value in attributes.items()}
    return found


@dataclass
class Driver:
    api: client.ApiClient
    name: str = field(default_factory=lambda: f"gpu-{uuid.uuid4().hex[:6]}.e2e.crd-scheduler.io")
    created: list[tuple[str, str]] = field(default_factory=list)  # (plural, name), cluster-scoped

    @property
    def custom(self) -> Any:
        return client.CustomObjectsApi(self.api)

    @property
    def device_class(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def extended_resource(self) -> str:
        """The extended resource name its class backs with DRA when installed ``extended=True``."""
        return f"{self.name}/gpu"

    def install(self, *, extended: bool = False) -> None:
        """The DeviceClass of this driver's devices (named after the driver's first label); with
        ``extended``, it backs :attr:`extended_resource` (``spec.extendedResourceName``)."""
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{self.name}"'}}]}
        if extended:
            spec["extendedResourceName"] = self.extended_resource
        body = {"apiVersion": API_VERSION, "kind": "DeviceClass", "metadata": {"name": self.device_class}, "spec": spec}
        self._create("deviceclasses", body)

    def publish(self, node: str, devices: list[Device]) -> None:
        """The node's devices, as one ResourceSlice of a pool named after the node."""
        body = {
            "apiVersion": API_VERSION,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{self.device_class}"},
            "spec": {
                "driver": self.name,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": devices,
            },
        }
        self._create("resourceslices", body)

    def _create(self, plural: str, body: dict[str, Any]) -> None:
        self.custom.create_cluster_custom_object(GROUP, VERSION, plural, body)
        self.created.append((plural, body["metadata"]["name"]))

    def close(self) -> None:
        for plural, name in reversed(self.created):
            try:
                self.custom.delete_cluster_custom_object(GROUP, VERSION, plural, name)
            except client.ApiException as error:
                if error.status != 404:
                    raise


def claim_template(
    api: client.ApiClient,
    namespace: str,
    name: str,
    requests: list[dict[str, Any]],
    constraints: list[dict[str, Any]] | None = None,
) -> None:
    """A ResourceClaimTemplate whose claims ask for ``requests`` under ``constraints``."""
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    body = {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": {"devices": devices}},
    }
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "resourceclaimtemplates", body
    )


def exactly(name: str, device_class: str, count: int = 1, cel: str | None = None) -> dict[str, Any]:
    """A request for ``count`` devices of a class, optionally narrowed by a CEL selector."""
    request: dict[str, Any] = {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": count}
    if cel is not None:
        request["selectors"] = [{"cel": {"expression": cel}}]
    return {"name": name, "exactly": request}


def first_available(name: str, device_class: str, *alternatives: tuple[str, str]) -> dict[str, Any]:
    """A prioritized list: one device of the class, by the first (name, CEL selector) that fits."""
    subrequests = [
        {"name": sub, "deviceClassName": device_class, "selectors": [{"cel": {"expression": cel}}]}
        for sub, cel in alternatives
    ]
    return {"name": name, "firstAvailable": subrequests}


def generated_claim(api: client.ApiClient, namespace: str, pod: str, timeout: float = 30) -> dict[str, Any]:
    """The claim the resourceclaim-controller made for the pod's claim ``dev``."""
    core: Any = client.CoreV1Api(api)

    def named() -> str:
        statuses = core.read_namespaced_pod(pod, namespace).status.resource_claim_statuses or []
        names = [s.resource_claim_name for s in statuses if s.name == "dev" and s.resource_claim_name]
        assert names, f"no claim generated for {namespace}/{pod} yet"
        return str(names[0])

    name = eventually(named, timeout=timeout)
    custom: Any = client.CustomObjectsApi(api)
    found: dict[str, Any] = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, "resourceclaims", name)
    return found


@dataclass(frozen=True)
class Allocation:
    """What a scheduler decided for one claim, with node names made relative (their index in
    the test's node list), so that two runs on different nodes compare."""

    node: int
    devices: tuple[tuple[str, int, str], ...]  # (request, pool as node index, device)
    reserved_for: tuple[str, ...]  # pod names

    @classmethod
    def of(cls, claim: dict[str, Any], nodes: list[str]) -> Allocation:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        terms = ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms")) or []
        (term,) = terms
        (field_,) = term["matchFields"]
        assert (field_["key"], field_["operator"]) == ("metadata.name", "In"), field_
        (node,) = field_["values"]
        results = (allocation.get("devices") or {}).get("results") or []
        devices = tuple((r["request"], nodes.index(r["pool"]), r["device"]) for r in results)
        reserved = tuple(r["name"] for r in (claim.get("status") or {}).get("reservedFor") or [])
        return cls(nodes.index(node), devices, reserved)
