"""The shared half of the resource scorers: which quantities a strategy sees.

Upstream ``noderesources/resource_allocation.go`` (k8s.io/kubernetes v1.36.3). For each
configured resource the scorer takes the pod's request and the node's allocatable and
already-requested amounts:

* the pod's request is its non-zero request for cpu and memory (containers without a request
  count 100m / 200Mi) unless ``use_requested`` (BalancedAllocation), and its plain request for
  anything else (``calculatePodResourceRequest``);
* the node's usage is ``NonZeroRequested`` for cpu and memory unless ``use_requested``, and
  ``Requested`` for ephemeral storage and scalar resources (``calculateResourceAllocatableRequest``);
* a scalar resource the pod does not request, and any resource the node has no allocatable
  of, is left out (``calculateNodeAllocatableRequest``).

The strategy (see :mod:`strategies`) then turns (requested, allocated, allocatable) into a score.
DRA-backed extended resources are not modelled: with no DeviceClass mapping, upstream's DRA
branch never applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler_core.framework import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    CycleState,
    IntArray,
    NodeColumns,
    NodeInfo,
    PodInfo,
    Resource,
    Status,
    is_scalar_resource_name,
    pod_level_requests,
)
from scheduler_core.framework import pod_requests as framework_pod_requests
from scheduler_core.plugins.noderesources.args import ResourceSpec
from scheduler_core.plugins.noderesources.strategies import Strategy, Term

_KIND_CPU, _KIND_MEMORY, _KIND_EPHEMERAL, _KIND_OTHER = range(4)
_KINDS = {CPU: _KIND_CPU, MEMORY: _KIND_MEMORY, EPHEMERAL_STORAGE: _KIND_EPHEMERAL}

RESOURCES_NOT_FOUND = "resources not found"


@dataclass(frozen=True, slots=True)
class PreScoreState:
    """Both scorers' PreScore state: the pod's request for each configured resource, in their
    order."""

    pod_requests: tuple[int, ...]

    def clone(self) -> PreScoreState:
        return self


@dataclass(frozen=True, slots=True)
class _Resource:
    name: str
    weight: int
    kind: int
    scalar: bool


class ResourceAllocationScorer:
    """Computes a strategy's inputs for a pod, per node or over rows of the columns."""

    def __init__(
        self, resources: Sequence[ResourceSpec], strategy: Strategy, *, use_requested: bool, pod_level: bool = True
    ) -> None:
        self.resources = tuple(
            _Resource(r.name, r.weight, _KINDS.get(r.name, _KIND_OTHER), is_scalar_resource_name(r.name))
            for r in resources
        )
        self.strategy = strategy
        self.use_requested = use_requested
        # v1.36 fit.go builds its scorer without enablePodLevelResources, so NodeResourcesFit's
        # score reads the incoming pod's container requests only; BalancedAllocation reads both.
        self.pod_level = pod_level

    # -- the pod ------------------------------------------------------------------------
    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        """Upstream ``calculatePodResourceRequestList``, in the order of the resources."""
        if not self.pod_level and pod_level_requests(pod.pod):
            return self._container_only_requests(pod)
        requests = pod.requests
        values = []
        for resource in self.resources:
            if resource.kind == _KIND_CPU:
                values.append(requests.milli_cpu if self.use_requested else pod.non_zero_cpu)
            elif resource.kind == _KIND_MEMORY:
                values.append(requests.memory if self.use_requested else pod.non_zero_memory)
            elif resource.kind == _KIND_EPHEMERAL:
                values.append(requests.ephemeral_storage)
            else:
                values.append(requests.scalar_resources.get(resource.name, 0))
        return tuple(values)

    def state_requests(self, state: CycleState, key: str, pod: PodInfo) -> tuple[int, ...]:
        """The requests PreScore wrote at ``key``, or (as upstream, when PreScore did not run)
        :meth:`pod_requests` computed now."""
        pre_score = state.read_optional(key, PreScoreState)
        return pre_score.pod_requests if pre_score is not None else self.pod_requests(pod)

    def _container_only_requests(self, pod: PodInfo) -> tuple[int, ...]:
        key = f"{self.use_requested}/{[r.name for r in self.resources]}"
        memos = pod.container_only_requests
        if memos is None:
            memos = pod.container_only_requests = {}
        memo = memos.get(key)
        if memo is None:
            exact = framework_pod_requests(pod.pod, non_missing=not self.use_requested, pod_level=False)
            total = Resource()
            total.add_fractions(exact)
            memo = memos[key] = tuple(total.get(resource.name) for resource in self.resources)
        return memo

    # -- one node -----------------------------------------------------------------------
    def score(self, node: NodeInfo, pod_requests: Sequence[int]) -> tuple[int, Status | None]:
        if not self.resources:
            return 0, Status.as_error(RESOURCES_NOT_FOUND)
        size = len(self.resources)
        requested, allocated, allocatable = [0] * size, [0] * size, [0] * size
        usage = node.requested if self.use_requested else node.non_zero_requested
        for i, resource in enumerate(self.resources):
            pod_request = pod_requests[i]
            if pod_request == 0 and resource.scalar:
                continue
            if resource.kind == _KIND_CPU:
                alloc, used = node.allocatable.milli_cpu, usage.milli_cpu
            elif resource.kind == _KIND_MEMORY:
                alloc, used = node.allocatable.memory, usage.memory
            elif resource.kind == _KIND_EPHEMERAL:
                alloc, used = node.allocatable.ephemeral_storage, node.requested.ephemeral_storage
            else:
                alloc = node.allocatable.scalar_resources.get(resource.name, 0)
                used = node.requested.scalar_resources.get(resource.name, 0)
            if alloc == 0:
                continue
            allocatable[i], allocated[i], requested[i] = alloc, used, used + pod_request
        return self.strategy.score(requested, allocated, allocatable), None

    # -- rows of the columns ------------------------------------------------------------
    def score_batch(self, columns: NodeColumns, rows: IntArray, pod_requests: Sequence[int]) -> IntArray | None:
        if not self.resources:
            return None  # the per-node form reports the error
        terms = []
        for resource, pod_request in zip(self.resources, pod_requests, strict=True):
            if pod_request == 0 and resource.scalar:
                continue  # no column is touched for scalar resources the pod does not request
            if resource.kind == _KIND_CPU:
                alloc_col, used_col = columns.alloc_cpu, columns.req_cpu if self.use_requested else columns.nz_cpu
            elif resource.kind == _KIND_MEMORY:
                alloc_col = columns.alloc_memory
                used_col = columns.req_memory if self.use_requested else columns.nz_memory
            elif resource.kind == _KIND_EPHEMERAL:
                alloc_col, used_col = columns.alloc_ephemeral, columns.req_ephemeral
            else:
                alloc_col, used_col = columns.allocatable(resource.name), columns.requested(resource.name)
            alloc = alloc_col[rows]
            used = used_col[rows]
            terms.append(Term.of(resource.weight, used + pod_request, used, alloc))
        return self.strategy.score_batch(terms, len(rows))
