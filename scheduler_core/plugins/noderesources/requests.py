"""What NodeResourcesFit checks: the pod's request and the resources a node lacks for it.

Upstream ``noderesources/fit.go`` (k8s.io/kubernetes v1.36.3) ``computePodResourceRequest``
and ``fitsRequest``. A node lacks a resource when the pod requests more of it than
``allocatable - requested``; the shortage is *unresolvable* (no preemption can help) when the
pod requests more than the node's whole allocatable. The pod-count check comes first, then
cpu, memory, ephemeral storage and the scalar resources, each reported, as upstream keeps all
failure reasons. Upstream walks scalar resources in Go map order (random); here they are
checked in name order so that reasons are stable.

A scalar resource backed by DRA (a DeviceClass maps its name, ``FitRequest.dra_backed``) is
left to DynamicResources on a node whose allocatable has none of it
(``shouldDelegateResourceToDRA``); a node that advertises it (a device plugin) is checked here.

Zero requests are never checked (upstream guards each resource with ``> 0`` and skips zero
scalar quantities), and ignored extended resources (``ignoredResources``, or whose
``<group>/`` prefix is in ``ignoredResourceGroups``) are dropped once, when the request is
computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from scheduler_core.framework import Resource, is_extended_resource_name
from scheduler_core.framework.extended_resources import DeviceClassResolver, is_dra_extended_resource_name

REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT_CPU = "Insufficient cpu"
REASON_INSUFFICIENT_MEMORY = "Insufficient memory"
REASON_INSUFFICIENT_EPHEMERAL_STORAGE = "Insufficient ephemeral-storage"


def insufficient_reason(resource: str) -> str:
    return f"Insufficient {resource}"


@dataclass(frozen=True, slots=True)
class FitRequest:
    """The pod's request as Filter checks it (upstream ``preFilterState``)."""

    milli_cpu: int
    memory: int
    ephemeral_storage: int
    scalars: tuple[tuple[str, int], ...]  # non-zero, not ignored, by name
    dra_backed: frozenset[str] = frozenset()  # scalars a DeviceClass maps (DRAExtendedResource)

    def clone(self) -> FitRequest:
        return self  # immutable, as upstream's Clone returns itself


class InsufficientResource(NamedTuple):
    """A resource the node lacks (a tuple: built for every rejecting node, and cheaper to
    build than a frozen dataclass)."""

    resource: str
    reason: str
    requested: int
    used: int
    capacity: int
    unresolvable: bool = False


def _never_ignored(_: str) -> bool:
    return False


def compute_fit_request(
    requests: Resource,
    ignored: Callable[[str], bool] = _never_ignored,
    classes: Callable[[], DeviceClassResolver] | None = None,
) -> FitRequest:
    """The request Filter checks; ``classes`` (read only when the pod asks for a resource a
    DeviceClass could map) tells which of its scalars are backed by DRA."""
    scalars = tuple(
        (name, quantity)
        for name, quantity in sorted(requests.scalar_resources.items())
        if quantity != 0 and not (is_extended_resource_name(name) and ignored(name))
    )
    dra_backed: frozenset[str] = frozenset()
    if classes is not None and any(is_dra_extended_resource_name(name) for name, _ in scalars):
        resolver = classes()
        dra_backed = frozenset(name for name, _ in scalars if resolver.get(name) is not None)
    return FitRequest(requests.milli_cpu, requests.memory, requests.ephemeral_storage, scalars, dra_backed)


def ignore_predicate(resources: frozenset[str], groups: frozenset[str]) -> Callable[[str], bool]:
    """Whether an extended resource is ignored by name or by its ``group/`` prefix."""

    def ignored(name: str) -> bool:
        return name in resources or (bool(groups) and name.split("/", 1)[0] in groups)

    return ignored


def insufficient_resources(
    request: FitRequest, allocatable: Resource, requested: Resource, pod_count: int
) -> list[InsufficientResource]:
    """Upstream ``fitsRequest``: every resource the node lacks for the pod, in upstream order."""
    # A node with room for everything the pod asks (no extended resources) lacks nothing: the
    # common answer, asked of every reprieve in preemption's dry runs, without building checks.
    if (
        not request.scalars
        and pod_count < allocatable.allowed_pod_number
        and request.milli_cpu <= allocatable.milli_cpu - requested.milli_cpu
        and request.memory <= allocatable.memory - requested.memory
        and request.ephemeral_storage <= allocatable.ephemeral_storage - requested.ephemeral_storage
    ):
        return []
    found: list[InsufficientResource] = []
    if pod_count + 1 > allocatable.allowed_pod_number:
        found.append(InsufficientResource("pods", REASON_TOO_MANY_PODS, 1, pod_count, allocatable.allowed_pod_number))
    checks = (
        ("cpu", REASON_INSUFFICIENT_CPU, request.milli_cpu, allocatable.milli_cpu, requested.milli_cpu),
        ("memory", REASON_INSUFFICIENT_MEMORY, request.memory, allocatable.memory, requested.memory),
        (
            "ephemeral-storage",
            REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
            request.ephemeral_storage,
            allocatable.ephemeral_storage,
            requested.ephemeral_storage,
        ),
    )
    for resource, reason, want, capacity, used in checks:
        if want > 0 and want > capacity - used:
            found.append(InsufficientResource(resource, reason, want, used, capacity, want > capacity))
    for name, want in request.scalars:
        capacity = allocatable.scalar_resources.get(name, 0)
        if capacity <= 0 and name in request.dra_backed:
            continue  # DynamicResources allocates it on this node
        used = requested.scalar_resources.get(name, 0)
        if want > capacity - used:
            found.append(InsufficientResource(name, insufficient_reason(name), want, used, capacity, want > capacity))
    return found
