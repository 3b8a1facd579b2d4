"""The ``dra`` feature: a DRA driver's DeviceClass and ResourceSlices, and a pending pod's claim.

Per scenario (names derived from its stem; classes and slices are cluster-scoped, so each
scenario has its own and never sees another's devices): one DeviceClass ``<stem>-gpu`` selecting
the harness's driver, and on most nodes one ResourceSlice (a pool named after the node) of
zero to four GPUs with a model, a NUMA node and a driver version as attributes and a memory
capacity. The pending pod asks, through a ResourceClaimTemplate (kube-controller-manager's
``resourceclaim-controller`` makes the claim and records it in the pod's
``status.resourceClaimStatuses``), for:

* ``exactly`` one to three GPUs, sometimes with a CEL selector on an attribute, on the memory
  capacity or on the driver version (semver), sometimes ``allocationMode: All``;
* or a ``firstAvailable`` list (an H100, else two of any model);
* sometimes with a ``matchAttribute`` constraint on the NUMA node.

The harness plays the driver by publishing the slices. :func:`allocation` reads what the
scheduler wrote to the pod's claim (``status.allocation``): the same on both sides.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.parity_harness import vocabulary as v

Json = dict[str, Any]

RESOURCE_API = "resource.k8s.io/v1"
CLAIM = "gpus"  # the pod's name for its claim
MODELS = ("a100", "h100")
MEMORY_GIB = {"a100": (40, 80), "h100": (80,)}
VERSIONS = ("1.2.0", "1.10.1", "2.0.0")
SELECTORS = (
    f'device.attributes["{v.DRA_DRIVER}"].model == "h100"',
    f'device.attributes["{v.DRA_DRIVER}"].model != "h100"',
    f'device.capacity["{v.DRA_DRIVER}"].memory.compareTo(quantity("64Gi")) >= 0',
    f'device.attributes["{v.DRA_DRIVER}"].driverVersion.isGreaterThan(semver("1.5.0"))',
    f'device.attributes["{v.DRA_DRIVER}"].numa == 1',
)


@dataclass
class Devices:
    classes: list[Json] = field(default_factory=list)
    slices: list[Json] = field(default_factory=list)
    templates: list[Json] = field(default_factory=list)

    def manifests(self) -> list[Json]:
        return [*self.classes, *self.slices, *self.templates]


def _device(rng: random.Random, index: int) -> Json:
    model = rng.choice(MODELS)
    return {
        "name": f"gpu-{index}",
        "attributes": {
            "model": {"string": model},
            "numa": {"int": rng.choice((0, 1))},
            "driverVersion": {"version": rng.choice(VERSIONS)},
        },
        "capacity": {"memory": {"value": f"{rng.choice(MEMORY_GIB[model])}Gi"}},
    }


def _selectors(rng: random.Random) -> list[Json]:
    if rng.random() < 0.5:
        return []
    return [{"cel": {"expression": rng.choice(SELECTORS)}}]


def _request(rng: random.Random, class_name: str) -> Json:
    if rng.random() < 0.25:
        return {
            "name": "gpu",
            "firstAvailable": [
                {"name": "big", "deviceClassName": class_name, "selectors": [{"cel": {"expression": SELECTORS[0]}}]},
                {"name": "two", "deviceClassName": class_name, "count": 2},
            ],
        }
    exactly: Json = {"deviceClassName": class_name}
    if rng.random() < 0.1:
        exactly["allocationMode"] = "All"
    else:
        exactly["count"] = rng.choice((1, 1, 2, 3))
    selectors = _selectors(rng)
    if selectors:
        exactly["selectors"] = selectors
    return {"name": "gpu", "exactly": exactly}


def generate(rng: random.Random, stem: str, namespace: str, nodes: list[Json]) -> Devices:
    class_name = f"{stem}-gpu"
    devices = Devices()
    devices.classes.append(
        {
            "apiVersion": RESOURCE_API,
            "kind": "DeviceClass",
            "metadata": {"name": class_name, "labels": {v.SCENARIO: stem}},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{v.DRA_DRIVER}"'}}]},
        }
    )
    for node in nodes:
        if rng.random() < 0.25:
            continue
        name = node["metadata"]["name"]
        devices.slices.append(
            {
                "apiVersion": RESOURCE_API,
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-gpus", "labels": {v.SCENARIO: stem}},
                "spec": {
                    "driver": v.DRA_DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [_device(rng, i) for i in range(rng.choice((0, 1, 2, 2, 3, 4)))],
                },
            }
        )
    request = _request(rng, class_name)
    claim: Json = {"devices": {"requests": [request]}}
    counted = request.get("exactly", {}).get("count", 1) > 1 or "firstAvailable" in request
    if counted and rng.random() < 0.4:
        claim["devices"]["constraints"] = [{"requests": ["gpu"], "matchAttribute": f"{v.DRA_DRIVER}/numa"}]
    devices.templates.append(
        {
            "apiVersion": RESOURCE_API,
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"{stem}-gpus", "namespace": namespace, "labels": {v.SCENARIO: stem}},
            # The claims made from it carry the scenario label too: the cleanup finds them so.
            "spec": {"metadata": {"labels": {v.SCENARIO: stem}}, "spec": claim},
        }
    )
    return devices


def use_claim(spec: Json, devices: Devices) -> None:
    """The pending pod's claim from the scenario's template, used by its first container."""
    template = devices.templates[0]["metadata"]["name"]
    spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": template}]
    spec["containers"][0].setdefault("resources", {})["claims"] = [{"name": CLAIM}]


def claim_name(pod: Mapping[str, Any]) -> str | None:
    """The claim the resourceclaim controller made for the pod (``status.resourceClaimStatuses``)."""
    for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
        if entry.get("name") == CLAIM:
            return str(entry.get("resourceClaimName") or "") or None
    return None


def allocation(pod: Mapping[str, Any], claims: Iterable[Mapping[str, Any]]) -> list[str]:
    """The devices allocated to the pod's claim, as ``request pool/device``, sorted."""
    name = claim_name(pod)
    for claim in claims:
        if name is not None and (claim.get("metadata") or {}).get("name") == name:
            results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
            return sorted(f"{r['request']} {r['pool']}/{r['device']}" for r in results or ())
    return []


def unallocated(claim: Mapping[str, Any]) -> Json:
    """The claim as the resourceclaim controller made it: no status, no finalizer (the
    scheduler's PreBind added both), for the simulator's input."""
    metadata = {key: value for key, value in (claim.get("metadata") or {}).items() if key != "finalizers"}
    return {key: value for key, value in claim.items() if key != "status"} | {"metadata": metadata}
