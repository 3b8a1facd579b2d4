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

Two more features widen it; their random choices come from a generator of their own
(:func:`extra_rng`), so turning them on adds to a seed's scenario without changing the rest:

* ``dra_partitionable`` (DRAPartitionableDevices, beta and on in v1.36.3): most node pools are
  partitionable GPUs, published as two slices (``Only one of Devices and SharedCounters can be
  set in a ResourceSlice``, k8s.io/api resource/v1 types.go): one with a counter set per physical
  GPU (``memory``, ``compute``: 7), one with the devices, each consuming from its GPU's set: the
  whole GPU (all of it), two halves (``3g``: half the memory, 3 compute) and up to three
  eighths (``1g``: 1 compute). Devices that together exceed a counter cannot be allocated
  together; the request sometimes selects a ``profile``;
* ``dra_extended_resources`` (DRAExtendedResource, beta and on): the DeviceClass names an
  extended resource (``spec.extendedResourceName``, else the pod uses the implicit
  ``deviceclass.resource.kubernetes.io/<class>``) and the pending pod asks for one or two of it in
  its container's requests and limits, instead of the claim or besides it; the scheduler makes
  the claim (the pod's ``status.extendedResourceClaimStatus`` names it).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.parity_harness import vocabulary as v
from scheduler_core.framework.extended_resources import DEVICE_CLASS_PREFIX, EXTENDED_RESOURCE_CLAIM_ANNOTATION

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


PARTITIONABLE = "dra_partitionable"
EXTENDED = "dra_extended_resources"
COMPUTE = 7  # a partitionable GPU's compute counter: one whole, two 3g halves, or seven 1g
PROFILES = (("3g", 2, 3), ("1g", 8, 1))  # profile, share of the memory (1/n), compute
PROFILE_SELECTOR = 'device.attributes["{driver}"].profile == "{profile}"'


@dataclass
class Devices:
    classes: list[Json] = field(default_factory=list)
    slices: list[Json] = field(default_factory=list)
    templates: list[Json] = field(default_factory=list)
    extended: dict[str, int] = field(default_factory=dict)  # extended resource -> how many the pod asks
    claimed: bool = True  # whether the pending pod uses the claim template (besides ``extended``)

    def manifests(self) -> list[Json]:
        return [*self.classes, *self.slices, *self.templates]


def extra_rng(seed: int, feature: str) -> random.Random:
    """The random source of an additive feature in scenario ``seed`` (see the module doc)."""
    return random.Random(f"{seed}/{feature}")


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


def _slice(stem: str, name: str, node: str, count: int, content: Json) -> Json:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": name, "labels": {v.SCENARIO: stem}},
        "spec": {
            "driver": v.DRA_DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": count},
            **content,
        },
    }


def _partitionable_pool(rng: random.Random, stem: str, node: str) -> list[Json]:
    """A node's pool of one or two partitionable GPUs: the counters' slice, the devices' slice."""
    counter_sets: list[Json] = []
    devices: list[Json] = []
    for gpu in range(rng.choice((1, 1, 2))):
        whole = _device(rng, gpu)
        memory = int(whole["capacity"]["memory"]["value"].removesuffix("Gi"))
        counter_set = f"gpu-{gpu}"
        counter_sets.append(
            {"name": counter_set, "counters": {"memory": {"value": f"{memory}Gi"}, "compute": {"value": str(COMPUTE)}}}
        )
        parts = [("full", whole["name"], memory, COMPUTE)]
        for profile, share, compute in PROFILES:
            amount = 2 if profile == "3g" else rng.choice((0, 1, 2, 3))
            parts += [(profile, f"gpu-{gpu}-{profile}-{k}", memory // share, compute) for k in range(amount)]
        for profile, name, size, compute in parts:
            device = {
                "name": name,
                "attributes": {**whole["attributes"], "profile": {"string": profile}},
                "capacity": {"memory": {"value": f"{size}Gi"}},
                "consumesCounters": [
                    {
                        "counterSet": counter_set,
                        "counters": {"memory": {"value": f"{size}Gi"}, "compute": {"value": str(compute)}},
                    }
                ],
            }
            devices.append(device)
    return [
        _slice(stem, f"{node}-counters", node, 2, {"sharedCounters": counter_sets}),
        _slice(stem, f"{node}-gpus", node, 2, {"devices": devices}),
    ]


def generate(
    rng: random.Random,
    stem: str,
    namespace: str,
    nodes: list[Json],
    extras: dict[str, random.Random] | None = None,
) -> Devices:
    """The scenario's class, slices and claim template; ``extras``: the additive features in the
    scenario, with their random sources (see the module doc)."""
    extras = extras or {}
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
    partitionable = extras.get(PARTITIONABLE)
    for node in nodes:
        if rng.random() < 0.25:
            continue
        name = node["metadata"]["name"]
        plain = [_device(rng, i) for i in range(rng.choice((0, 1, 2, 2, 3, 4)))]
        if partitionable is not None and partitionable.random() < 0.6:
            devices.slices += _partitionable_pool(partitionable, stem, name)
        else:
            if partitionable is not None:  # selectors may read it: a missing attribute is a CEL error
                for device in plain:
                    device["attributes"]["profile"] = {"string": "full"}
            devices.slices.append(_slice(stem, f"{name}-gpus", name, 1, {"devices": plain}))
    request = _request(rng, class_name)
    claim: Json = {"devices": {"requests": [request]}}
    counted = request.get("exactly", {}).get("count", 1) > 1 or "firstAvailable" in request
    if counted and rng.random() < 0.4:
        claim["devices"]["constraints"] = [{"requests": ["gpu"], "matchAttribute": f"{v.DRA_DRIVER}/numa"}]
    if partitionable is not None and "exactly" in request and partitionable.random() < 0.4:
        profile = partitionable.choice(("full", "3g", "1g"))
        expression = PROFILE_SELECTOR.format(driver=v.DRA_DRIVER, profile=profile)
        request["exactly"]["selectors"] = [
            *request["exactly"].get("selectors", ()),
            {"cel": {"expression": expression}},
        ]
    extended = extras.get(EXTENDED)
    if extended is not None:
        _extended_resource(extended, devices, class_name)
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


def _extended_resource(rng: random.Random, devices: Devices, class_name: str) -> None:
    """The class's extended resource (named, or the implicit one) and how many of it the pod asks."""
    if rng.random() < 0.6:
        name = f"dra.parity.example/{class_name}"
        devices.classes[0]["spec"]["extendedResourceName"] = name
    else:
        name = f"{DEVICE_CLASS_PREFIX}{class_name}"  # the extended resource every DeviceClass stands for
    devices.extended[name] = rng.choice((1, 1, 2))
    devices.claimed = rng.random() < 0.3


def use_claim(spec: Json, devices: Devices) -> None:
    """The pending pod's claim from the scenario's template, used by its first container, and
    the DRA-backed extended resources it asks for (requests equal to limits, as the API wants)."""
    container = spec["containers"][0]
    if devices.claimed:
        template = devices.templates[0]["metadata"]["name"]
        spec["resourceClaims"] = [{"name": CLAIM, "resourceClaimTemplateName": template}]
        container.setdefault("resources", {})["claims"] = [{"name": CLAIM}]
    for name, count in devices.extended.items():
        resources = container.setdefault("resources", {})
        resources.setdefault("requests", {})[name] = str(count)
        resources.setdefault("limits", {})[name] = str(count)


def claim_name(pod: Mapping[str, Any]) -> str | None:
    """The claim the resourceclaim controller made for the pod (``status.resourceClaimStatuses``)."""
    for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
        if entry.get("name") == CLAIM:
            return str(entry.get("resourceClaimName") or "") or None
    return None


def _extended_status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod's ``status.extendedResourceClaimStatus`` ({} when it has none)."""
    return (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}


def extended_claim_name(pod: Mapping[str, Any]) -> str | None:
    """The special claim the scheduler made for the pod's DRA-backed extended resources."""
    return str(_extended_status(pod).get("resourceClaimName") or "") or None


def is_special_claim_of(claim: Mapping[str, Any], pod_name: str) -> bool:
    """Whether ``claim`` is the special claim the scheduler made for the extended resources of
    pod ``pod_name`` (named ``<pod>-extended-resources-<suffix>``, annotated so)."""
    metadata = claim.get("metadata") or {}
    annotated = (metadata.get("annotations") or {}).get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"
    return annotated and str(metadata.get("name", "")).startswith(f"{pod_name}-extended-resources-")


def allocation(pod: Mapping[str, Any], claims: Iterable[Mapping[str, Any]]) -> list[str]:
    """The devices allocated to the pod's claim (``request pool/device``) and to its extended
    resources' special claim (``container/request pool/device``, the request named by the pod's
    ``requestMappings``: the special claim's own request names are generated), sorted."""
    by_name = {(claim.get("metadata") or {}).get("name"): claim for claim in claims}
    found: list[str] = []
    name = claim_name(pod)
    if name is not None and name in by_name:
        found += [f"{r['request']} {r['pool']}/{r['device']}" for r in _results(by_name[name])]
    special = extended_claim_name(pod)
    if special is not None and special in by_name:
        containers = {
            m.get("requestName"): f"{m.get('containerName')}/{m.get('resourceName')}"
            for m in _extended_status(pod).get("requestMappings") or ()
        }
        found += [
            f"{containers.get(r['request'], r['request'])} {r['pool']}/{r['device']}"
            for r in _results(by_name[special])
        ]
    return sorted(found)


def _results(claim: Mapping[str, Any]) -> list[Json]:
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results")
    return list(results or ())


def unallocated(claim: Mapping[str, Any]) -> Json:
    """The claim as the resourceclaim controller made it: no status, no finalizer (the
    scheduler's PreBind added both), for the simulator's input."""
    metadata = {key: value for key, value in (claim.get("metadata") or {}).items() if key != "finalizers"}
    return {key: value for key, value in claim.items() if key != "status"} | {"metadata": metadata}
