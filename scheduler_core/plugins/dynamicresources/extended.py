"""Extended resources backed by DRA: the special ResourceClaim DynamicResources allocates for them.

Upstream ``pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go``
(v1.36.3, ``DRAExtendedResource``, beta, on). A pod asking for an extended resource that a
DeviceClass maps (its ``spec.extendedResourceName`` or the implicit
``deviceclass.resource.kubernetes.io/<class>``) gets one claim for all such resources:

* PreFilter (:func:`find_claim`, :func:`special_claim`): the pod's claim from an earlier cycle
  (annotated ``resource.kubernetes.io/extended-resource-claim: "true"``, the pod its controlling
  owner), else an in-memory one named ``<extended-resources>`` with no requests;
* Filter (:func:`node_claim`): on a node whose allocatable lacks a DRA-backed resource, that
  resource becomes device requests of a per-node copy of the claim (:func:`requests_and_mappings`:
  one request ``container-<i>-request-<j>`` per container, init containers reusing the devices of
  the containers that outlive them), with the container -> request mappings the pod's
  ``status.extendedResourceClaimStatus`` will carry; a claim left from an earlier cycle already has
  requests and is refused everywhere, so that PostFilter deletes it;
* PreBind creates the claim (``generateName: <pod>-extended-resources-``), allocates and reserves
  it as any claim, then writes the pod's ``status.extendedResourceClaimStatus``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.framework import Manifest, PodInfo, manifest, parse_quantity
from scheduler_core.framework.dra import EXTENDED_RESOURCE_CLAIM_ANNOTATION, ResourceClaim
from scheduler_core.framework.extended_resources import DeviceClassResolver, is_dra_extended_resource_name

# Not a valid ResourceClaim name, so it never clashes with one (specialClaimInMemName).
SPECIAL_CLAIM_NAME = "<extended-resources>"

# Reasons, as extendeddynamicresources.go writes them.
ERR_STALE_CLAIM = "cannot schedule extended resource claim"
ERR_CANNOT_FIT = "cannot fit resource"

RequestMapping = dict[str, str]  # a ContainerExtendedResourceRequest


def dra_backed_requests(pod: PodInfo, classes: DeviceClassResolver) -> dict[str, int]:
    """The pod's scalar requests when one of them is backed by DRA
    (``hasDeviceClassMappedExtendedResource``), else empty."""
    scalars = pod.requests.scalar_resources
    if any(q and is_dra_extended_resource_name(n) and classes.get(n) is not None for n, q in scalars.items()):
        return dict(scalars)
    return {}


def find_claim(pod: PodInfo, claims: Iterable[ResourceClaim]) -> ResourceClaim | None:
    """``findExtendedResourceClaim``: the pod's special claim from an earlier cycle."""
    for claim in claims:
        if not claim.is_extended_resource_claim:
            continue
        for owner in claim.owner_references:
            if owner.get("name") == pod.name and owner.get("controller") and owner.get("uid") == pod.uid:
                return claim
    return None


def special_claim(pod: PodInfo) -> ResourceClaim:
    """The in-memory claim; its uid is a stand-in until PreBind creates it (upstream draws a
    random one; derived from the pod's, it keeps ``simulate`` reproducible)."""
    return ResourceClaim({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "namespace": pod.namespace,
            "name": SPECIAL_CLAIM_NAME,
            "uid": f"{pod.uid}{SPECIAL_CLAIM_NAME}",
            "generateName": f"{pod.name}-extended-resources-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": pod.name, "uid": pod.uid, "controller": True}
            ],
            "annotations": {EXTENDED_RESOURCE_CLAIM_ANNOTATION: "true"},
        },
        "spec": {},
    })  # fmt: skip


def is_special(claim: ResourceClaim) -> bool:
    return claim.name == SPECIAL_CLAIM_NAME


@dataclass(frozen=True, slots=True)
class NodeClaim:
    """What Filter found for one node: the claim to allocate there (None: nothing for DRA)."""

    claim: dict[str, Any] | None
    mappings: tuple[RequestMapping, ...] = ()


def node_claim(
    claim: ResourceClaim,
    user_claims: int,
    pod: Manifest,
    scalars: Mapping[str, int],
    allocatable: Mapping[str, int],
    classes: DeviceClassResolver,
) -> NodeClaim | str:
    """``filterExtendedResources`` on a node with ``allocatable`` scalar resources: the claim to
    allocate there, or the reason the node does not fit."""
    if claim.requests is not None:
        return ERR_STALE_CLAIM
    extended: dict[str, int] = {}
    for name, quantity in scalars.items():
        if not quantity or not is_dra_extended_resource_name(name):
            continue
        if classes.get(name) is not None and allocatable.get(name, 0) == 0:
            extended[name] = quantity  # the node must provide it through DRA
        elif name not in allocatable:
            return ERR_CANNOT_FIT  # neither a device plugin nor DRA provides it
    if not user_claims and not extended:
        return NodeClaim(None)
    if claim.allocation:
        return NodeClaim(None)
    requests, mappings = requests_and_mappings(pod, extended, classes)
    copied = copy.deepcopy(dict(claim.manifest))
    copied["spec"] = {"devices": {"requests": requests}} if requests else {"devices": {}}
    return NodeClaim(copied, tuple(mappings))


def _container_request(
    index: int, container: Manifest, resource: str, class_name: str,
    reusable: Sequence[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[RequestMapping]]:  # fmt: skip
    """``createResourceRequestAndMappings``: the container's request for ``resource`` (None when
    the devices of ``reusable`` cover it) and its mappings."""
    requests = (container.get("resources") or {}).get("requests") or {}
    if resource not in requests:
        return None, []
    amount = parse_quantity(requests[resource])
    if amount.denominator != 1 or amount == 0:
        return None, []
    wanted = int(amount)
    name = str(container.get("name") or "")
    mappings: list[RequestMapping] = []
    covered = 0
    for request in reusable:
        if request is None:
            continue
        covered += int(request["exactly"]["count"])
        mappings.append({"containerName": name, "resourceName": resource, "requestName": request["name"]})
        if covered >= wanted:
            return None, mappings
    request_name = f"container-{index}-request-{sorted(requests).index(resource)}"
    request = {
        "name": request_name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": wanted - covered},
    }
    mappings.append({"containerName": name, "resourceName": resource, "requestName": request_name})
    return request, mappings


def requests_and_mappings(
    pod: Manifest, extended: Mapping[str, int], classes: DeviceClassResolver
) -> tuple[list[dict[str, Any]], list[RequestMapping]]:
    """``createRequestsAndMappings``: the claim's device requests (by name) and the mappings."""
    spec = manifest.spec(pod)
    init = list(spec.get("initContainers") or ())
    containers = init + list(spec.get("containers") or ())
    short_lived = [i for i, c in enumerate(init) if c.get("restartPolicy") != "Always"]
    long_lived = [i for i in range(len(containers)) if i not in short_lived]
    requests: list[dict[str, Any]] = []
    mappings: list[RequestMapping] = []
    for resource in sorted(extended):
        device_class = classes.get(resource)
        if device_class is None:
            continue
        class_name = manifest.name_of(device_class)
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[RequestMapping] = []
        for i in long_lived:
            request, found = _container_request(i, containers[i], resource, class_name, ())
            long_requests[i] = request
            long_mappings += found
        largest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[RequestMapping] = []
        for i in short_lived:
            request, found = _container_request(i, containers[i], resource, class_name, long_requests[i:])
            if request is not None:
                short_names.add(request["name"])
                if largest is None or largest["exactly"]["count"] < request["exactly"]["count"]:
                    largest = request
            short_mappings += found
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest["name"])
            short_mappings = [
                {**m, "requestName": largest["name"]} if m["requestName"] in short_names else m for m in short_mappings
            ]
        if largest is not None:
            requests.append(largest)
        requests += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings
