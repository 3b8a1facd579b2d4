"""The one Resource type and the one pod-requests function.

Upstream sources: ``pkg/scheduler/framework/types.go`` (``Resource``, ``calculateResource``),
``k8s.io/component-helpers/resource/helpers.go`` (``PodRequests``) and
``pkg/scheduler/util/pod_resources.go`` (the non-zero defaults used for scoring).

Pod requests: the sum of the regular containers, plus restartable init containers
(sidecars) which run beside them; each non-restartable init container runs alone beside
the sidecars started before it, and the pod needs the maximum of those moments; then the
pod overhead is added. Sums are taken on exact quantities and converted once, as upstream.

Every amount is an int64, as upstream's: a quantity past int64 converts as ``MilliValue`` and
``Value`` do (0, :mod:`~scheduler_core.framework.quantity`), and sums wrap around as Go's
``+=`` does, so the columnar snapshot's int64 arrays hold every Resource there is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler_core.framework import manifest
from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.quantity import int64_ceil, int64_wrap, parse_quantity

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# pkg/scheduler/util/pod_resources.go
DEFAULT_MILLI_CPU_REQUEST = 100  # 0.1 core
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # 200 MiB

_POD_LEVEL_RESOURCES = (CPU, MEMORY)  # IsSupportedPodLevelResource
_NATIVE_PREFIX = "kubernetes.io/"
_HUGEPAGES_PREFIX = "hugepages-"
_ATTACHABLE_PREFIX = "attachable-volumes-"
_REQUESTS_PREFIX = "requests."


def is_scalar_resource_name(name: str) -> bool:
    """Extended, hugepages, prefixed-native or attachable-volume resources (``IsScalarResourceName``)."""
    if name.startswith(_HUGEPAGES_PREFIX) or name.startswith(_ATTACHABLE_PREFIX):
        return True
    if _NATIVE_PREFIX in name:
        return True
    # Extended resource: not native (so it has a '/'), not "requests."-prefixed.
    return "/" in name and not name.startswith(_REQUESTS_PREFIX)


def is_extended_resource_name(name: str) -> bool:
    return "/" in name and _NATIVE_PREFIX not in name and not name.startswith(_REQUESTS_PREFIX)


def is_hugepage_resource_name(name: str) -> bool:
    return name.startswith(_HUGEPAGES_PREFIX)


@dataclass(slots=True)
class Resource:
    """Compute resources in scheduler units: milli-CPU, bytes, pod count, scalar values."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar_resources: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Manifest | None) -> Resource:
        """A ResourceList (``{"cpu": "2", "memory": "4Gi", ...}``), as upstream ``NewResource``."""
        result = cls()
        if resources:
            result.add_fractions({name: parse_quantity(q) for name, q in resources.items()})
        return result

    def add_fractions(self, resources: Mapping[str, Fraction]) -> None:
        """Add exact quantities, converting each as ``Resource.Add`` does."""
        for name, quantity in resources.items():
            if name == CPU:
                self.milli_cpu = int64_wrap(self.milli_cpu + _ceil(quantity * 1000))
            elif name == MEMORY:
                self.memory = int64_wrap(self.memory + _ceil(quantity))
            elif name == PODS:
                self.allowed_pod_number = int64_wrap(self.allowed_pod_number + _ceil(quantity))
            elif name == EPHEMERAL_STORAGE:
                self.ephemeral_storage = int64_wrap(self.ephemeral_storage + _ceil(quantity))
            elif is_scalar_resource_name(name):
                self.scalar_resources[name] = int64_wrap(self.scalar_resources.get(name, 0) + _ceil(quantity))

    def add(self, other: Resource) -> None:
        self.milli_cpu = int64_wrap(self.milli_cpu + other.milli_cpu)
        self.memory = int64_wrap(self.memory + other.memory)
        self.ephemeral_storage = int64_wrap(self.ephemeral_storage + other.ephemeral_storage)
        self.allowed_pod_number = int64_wrap(self.allowed_pod_number + other.allowed_pod_number)
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = int64_wrap(self.scalar_resources.get(name, 0) + amount)

    def sub(self, other: Resource) -> None:
        self.milli_cpu = int64_wrap(self.milli_cpu - other.milli_cpu)
        self.memory = int64_wrap(self.memory - other.memory)
        self.ephemeral_storage = int64_wrap(self.ephemeral_storage - other.ephemeral_storage)
        self.allowed_pod_number = int64_wrap(self.allowed_pod_number - other.allowed_pod_number)
        for name, amount in other.scalar_resources.items():
            self.scalar_resources[name] = int64_wrap(self.scalar_resources.get(name, 0) - amount)

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar_resources.get(name, 0)

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar_resources),
        )

    def is_zero(self) -> bool:
        return not (
            self.milli_cpu
            or self.memory
            or self.ephemeral_storage
            or self.allowed_pod_number
            or any(self.scalar_resources.values())
        )


_ceil = int64_ceil


_DEFAULTS = {CPU: Fraction(DEFAULT_MILLI_CPU_REQUEST, 1000), MEMORY: Fraction(DEFAULT_MEMORY_REQUEST)}


def _container_requests(container: Manifest, non_missing: bool | Sequence[str]) -> dict[str, Fraction]:
    resources = container.get("resources") or {}
    requests = {name: parse_quantity(q) for name, q in (resources.get("requests") or {}).items()}
    if non_missing:
        for name in (CPU, MEMORY) if non_missing is True else non_missing:
            if name not in requests:
                requests[name] = _DEFAULTS[name]
    return requests


def _add_into(total: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, quantity in more.items():
        total[name] = total.get(name, Fraction(0)) + quantity


def _max_into(total: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for name, quantity in more.items():
        if name not in total or quantity > total[name]:
            total[name] = quantity


def pod_requests(
    pod: Manifest,
    *,
    non_missing: bool | Sequence[str] = False,
    pod_level: bool = True,
) -> dict[str, Fraction]:
    """Exact pod requests as upstream ``PodRequests``.

    With ``non_missing`` every container lacking a CPU or memory request counts the
    scheduler's defaults (100m, 200Mi), as for scoring (``NonMissingContainerRequests``); a
    sequence of names limits the defaults to those resources. ``pod_level=False`` ignores
    pod-level requests (``SkipPodLevelResources``).
    """
    spec = manifest.spec(pod)
    requests: dict[str, Fraction] = {}
    for container in spec.get("containers") or ():
        _add_into(requests, _container_requests(container, non_missing))

    restartable: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for container in spec.get("initContainers") or ():
        container_reqs = _container_requests(container, non_missing)
        if container.get("restartPolicy") == "Always":
            # A sidecar runs for the pod's whole life, beside the regular containers.
            _add_into(requests, container_reqs)
            _add_into(restartable, container_reqs)
            moment = dict(restartable)
        else:
            moment = dict(container_reqs)
            _add_into(moment, restartable)
        _max_into(init_peak, moment)
    _max_into(requests, init_peak)

    # Pod-level resources (PodLevelResources, on by default in 1.36): where the pod sets a
    # request for a supported resource, it replaces the containers' aggregate.
    if pod_level:
        for name, quantity in pod_level_requests(pod).items():
            requests[name] = quantity

    overhead = spec.get("overhead")
    if overhead:
        _add_into(requests, {name: parse_quantity(q) for name, q in overhead.items()})
    return requests


def pod_level_requests(pod: Manifest) -> dict[str, Fraction]:
    """The pod-level requests of supported resources (cpu, memory, hugepages-*)."""
    raw = (manifest.spec(pod).get("resources") or {}).get("requests") or {}
    return {
        name: parse_quantity(q)
        for name, q in raw.items()
        if name in _POD_LEVEL_RESOURCES or is_hugepage_resource_name(name)
    }


def compute_pod_resources(pod: Manifest) -> tuple[Resource, int, int]:
    """The pod's requests, and its non-zero milli-CPU and memory (upstream ``calculateResource``).

    With pod-level requests, the 100m/200Mi defaults are added (per container lacking them)
    only for cpu or memory missing from the whole request (``getNonMissingContainerRequests``)."""
    res = Resource()
    requests = pod_requests(pod)
    res.add_fractions(requests)
    if pod_level_requests(pod):
        missing = [name for name in (CPU, MEMORY) if name not in requests]
        non_zero = pod_requests(pod, non_missing=missing) if missing else requests
    else:
        non_zero = pod_requests(pod, non_missing=True)
    zero = Fraction(0)
    return res, _ceil(non_zero.get(CPU, zero) * 1000), _ceil(non_zero.get(MEMORY, zero))


_MEMO_LIMIT = 4096
_memo: dict[tuple[Any, ...], tuple[Resource, int, int]] = {}


def compute_pod_resources_memo(pod: Manifest) -> tuple[Resource, int, int]:
    """:func:`compute_pod_resources`, remembered by what it reads (container, init container,
    overhead and pod-level requests): replicas share one parse, which a snapshot of tens of
    thousands of pods would otherwise spend seconds on. The Resource is shared, as a pod's
    versions already share theirs (``PodInfo(like=...)``): nobody changes a pod's requests."""
    key = _requests_key(manifest.spec(pod))
    if key is None:
        return compute_pod_resources(pod)
    found = _memo.get(key)
    if found is None:
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        found = _memo[key] = compute_pod_resources(pod)
    return found


def _requests_key(spec: Manifest) -> tuple[Any, ...] | None:
    def requests(obj: Manifest) -> tuple[Any, ...]:
        return tuple(sorted(((obj.get("resources") or {}).get("requests") or {}).items()))

    try:
        key = (
            tuple(requests(c) for c in spec.get("containers") or ()),
            tuple((requests(c), c.get("restartPolicy")) for c in spec.get("initContainers") or ()),
            tuple(sorted((spec.get("overhead") or {}).items())),
            requests(spec),
        )
        hash(key)
    except (TypeError, AttributeError):  # odd shapes: no memo, the parse says what is wrong
        return None
    return key
