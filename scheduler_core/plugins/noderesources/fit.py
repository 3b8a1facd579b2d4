"""NodeResourcesFit: does the node have room for the pod's requests, and how full would it be.

Upstream ``pkg/scheduler/framework/plugins/noderesources/fit.go`` (k8s.io/kubernetes v1.36.3).
PreFilter stores the pod's requests (from the already-parsed :class:`PodInfo`); Filter rejects
a node that lacks any of them (:mod:`requests`), Unschedulable or, when the pod asks for more
than the node's whole allocatable, UnschedulableAndUnresolvable. PreScore stores the pod's
per-resource requests for the configured scoring strategy (:mod:`strategies`) and never skips.
The batch forms judge and score many nodes with a few NumPy operations over the snapshot's
columns and agree exactly with the per-node forms.

Extended resources backed by DRA (``DRAExtendedResource``, beta, on): PreFilter notes which of
the pod's scalar requests a DeviceClass maps (:mod:`scheduler_core.framework.extended_resources`);
Filter leaves those to DynamicResources on nodes that do not advertise them.

Not modelled: the SidecarContainers gate (GA, always on: no PreFilter rejection), pod-level
resources (see :mod:`requests`), the workload placement score, and the score of DRA-backed
resources named in ``scoringStrategy.resources`` (upstream counts a node's matching devices;
here such a resource scores as one the node does not have).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler_core.framework import (
    BoolArray,
    ClusterEventWithHint,
    Code,
    CycleState,
    Handle,
    IntArray,
    Manifest,
    NodeColumns,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    Resource,
    Status,
)
from scheduler_core.framework.extended_resources import DeviceClassResolver, stored_classes
from scheduler_core.framework.quantity import int64_wrap
from scheduler_core.plugins import names
from scheduler_core.plugins.noderesources import queueing, strategies
from scheduler_core.plugins.noderesources.args import NodeResourcesFitArgs, ScoringStrategy
from scheduler_core.plugins.noderesources.requests import (
    REASON_INSUFFICIENT_CPU,
    REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
    REASON_INSUFFICIENT_MEMORY,
    REASON_TOO_MANY_PODS,
    FitRequest,
    compute_fit_request,
    ignore_predicate,
    insufficient_reason,
    insufficient_resources,
)
from scheduler_core.plugins.noderesources.resource_allocation import PreScoreState, ResourceAllocationScorer
from scheduler_core.plugins.noderesources.validation import LEAST_ALLOCATED, MOST_ALLOCATED

NAME = names.NODE_RESOURCES_FIT
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def build_strategy(strategy: ScoringStrategy) -> strategies.Strategy:
    """Upstream ``nodeResourceStrategyTypeMap`` (the type is validated by the args)."""
    weights = [r.weight for r in strategy.resources]
    if strategy.type == LEAST_ALLOCATED:
        return strategies.LeastAllocated(weights)
    if strategy.type == MOST_ALLOCATED:
        return strategies.MostAllocated(weights)
    assert strategy.requested_to_capacity_ratio is not None
    shape = [(p.utilization, p.score) for p in strategy.requested_to_capacity_ratio.shape]
    return strategies.RequestedToCapacityRatio(weights, shape)


class NodeResourcesFit:
    name = NAME
    args_model = NodeResourcesFitArgs

    def __init__(self, args: NodeResourcesFitArgs | Manifest | None, handle: Handle | None) -> None:
        if not isinstance(args, NodeResourcesFitArgs):
            args = NodeResourcesFitArgs.model_validate(args or {})
        self.args = args
        self._handle = handle
        self._ignored = ignore_predicate(frozenset(args.ignored_resources), frozenset(args.ignored_resource_groups))
        strategy = args.scoring_strategy
        self._scorer = ResourceAllocationScorer(
            strategy.resources, build_strategy(strategy), use_requested=False, pod_level=False
        )

    def _device_classes(self) -> DeviceClassResolver:
        if self._handle is None:
            return DeviceClassResolver(())
        return stored_classes(self._handle).resolver

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return queueing.fit_events(self._device_classes if self._handle is not None else None)

    # -- PreFilter / Filter ---------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, compute_fit_request(pod.requests, self._ignored, self._device_classes))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        request = _pre_filter_state(state)
        if request is None:
            return Status.as_error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
        found = insufficient_resources(request, node.allocatable, node.requested, len(node.pods))
        if not found:
            return None
        code = Code.UNSCHEDULABLE
        for r in found:
            if r.unresolvable:
                code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                break
        return Status(code, *[r.reason for r in found])

    def filter_rejects_changed(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, removed: Sequence[PodInfo], added: Sequence[PodInfo]
    ) -> bool:
        """Whether ``filter`` rejects the pod on ``node`` with ``removed`` (pods on it) taken
        off and ``added`` put on: the node's sums changed as ``NodeInfo.remove_pods`` and
        ``add_pod`` change them (int64 modular), without the clone and the changes.
        Preemption's dry run asks it of each node before trying it (PreemptionBasic, 1000
        nodes: about 330 a preemptor, two thirds of them holding a higher-priority pod that
        leaves no room whatever goes) and of each victim it would put back."""
        request = _pre_filter_state(state)
        if request is None:
            return False
        cpu = memory = storage = 0
        for other in removed:
            req = other.requests
            cpu -= req.milli_cpu
            memory -= req.memory
            storage -= req.ephemeral_storage
        for other in added:
            req = other.requests
            cpu += req.milli_cpu
            memory += req.memory
            storage += req.ephemeral_storage
        used = node.requested
        count = len(node.pods) - len(removed) + len(added)
        if request.scalars:
            scalars: dict[str, int] = {}
            for name, _ in request.scalars:  # only the scalars the pod asks for are read
                amount = used.scalar_resources.get(name, 0)
                amount -= sum(other.requests.scalar_resources.get(name, 0) for other in removed)
                amount += sum(other.requests.scalar_resources.get(name, 0) for other in added)
                scalars[name] = int64_wrap(amount)
            left = Resource(
                int64_wrap(used.milli_cpu + cpu),
                int64_wrap(used.memory + memory),
                int64_wrap(used.ephemeral_storage + storage),
                used.allowed_pod_number,
                scalars,
            )
            return bool(insufficient_resources(request, node.allocatable, left, count))
        # ``insufficient_resources`` without scalars, as a yes or no: what the dry run asks
        # 700,000 times a PreemptionBasic run.
        allocatable = node.allocatable
        if count + 1 > allocatable.allowed_pod_number:
            return True
        want = request.milli_cpu
        if want > 0 and want > allocatable.milli_cpu - int64_wrap(used.milli_cpu + cpu):
            return True
        want = request.memory
        if want > 0 and want > allocatable.memory - int64_wrap(used.memory + memory):
            return True
        want = request.ephemeral_storage
        return want > 0 and want > allocatable.ephemeral_storage - int64_wrap(used.ephemeral_storage + storage)

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None:
        request = _pre_filter_state(state)
        if request is None:
            return None
        fits: BoolArray = columns.pod_count < columns.alloc_pods
        if request.milli_cpu > 0:
            fits &= columns.alloc_cpu - columns.req_cpu >= request.milli_cpu
        if request.memory > 0:
            fits &= columns.alloc_memory - columns.req_memory >= request.memory
        if request.ephemeral_storage > 0:
            fits &= columns.alloc_ephemeral - columns.req_ephemeral >= request.ephemeral_storage
        for name, quantity in request.scalars:
            allocatable = columns.allocatable(name)
            enough = allocatable - columns.requested(name) >= quantity
            fits &= (enough | (allocatable <= 0)) if name in request.dra_backed else enough
        return fits

    def filter_batch_statuses(
        self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray
    ) -> list[Status | None] | None:
        """``filter`` on the nodes at ``rows`` from the columns (a failed attempt's diagnosis:
        PreemptionPVs asks it of 1,000 nodes per preemptor): each node's lacking resources in
        ``fitsRequest``'s order, Unresolvable when one of them exceeds the node's capacity; one
        Status per combination. ``None`` (asked per node) when a figure could overflow int64 in
        the subtraction, where numpy and ``filter``'s Python integers would differ."""
        request = _pre_filter_state(state)
        if request is None:
            return None
        # (reason, lacking per row, unresolvable per row)
        checks: list[tuple[str, BoolArray, BoolArray | None]] = [
            (REASON_TOO_MANY_PODS, columns.pod_count[rows] + 1 > columns.alloc_pods[rows], None)
        ]
        # (reason, wanted, allocatable and requested columns, the extended resource's name)
        amounts: list[tuple[str, int, IntArray, IntArray, str | None]] = [
            (REASON_INSUFFICIENT_CPU, request.milli_cpu, columns.alloc_cpu, columns.req_cpu, None),
            (REASON_INSUFFICIENT_MEMORY, request.memory, columns.alloc_memory, columns.req_memory, None),
            (
                REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
                request.ephemeral_storage,
                columns.alloc_ephemeral,
                columns.req_ephemeral,
                None,
            ),
        ]
        for name, quantity in request.scalars:
            amounts.append(
                (insufficient_reason(name), quantity, columns.allocatable(name), columns.requested(name), name)
            )
        if len(amounts) > 60:
            return None
        for reason, want, allocatable, requested, scalar in amounts:
            if scalar is None and want <= 0:
                continue
            capacity, used = allocatable[rows], requested[rows]
            if abs(want) >= _SAFE or (len(rows) and max(int(np.abs(capacity).max()), int(np.abs(used).max())) >= _SAFE):
                return None
            lacking = want > capacity - used
            if scalar is not None and scalar in request.dra_backed:
                lacking &= capacity > 0  # DynamicResources allocates it on a node without it
            checks.append((reason, lacking, want > capacity))
        key = np.zeros(len(rows), np.int64)
        unresolvable = np.zeros(len(rows), np.bool_)
        for bit, (_, lacking, beyond) in enumerate(checks, start=1):
            key |= lacking.astype(np.int64) << bit
            if beyond is not None:
                unresolvable |= lacking & beyond
        key |= unresolvable
        made: dict[int, Status | None] = {}
        statuses: list[Status | None] = []
        for k in key.tolist():
            if k not in made:
                reasons = [reason for bit, (reason, _, _) in enumerate(checks, start=1) if k >> bit & 1]
                code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if k & 1 else Code.UNSCHEDULABLE
                made[k] = Status(code, *reasons) if reasons else None
            statuses.append(made[k])
        return statuses

    # -- PreScore / Score -----------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(self._scorer.pod_requests(pod)))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        return self._scorer.score(node, self._scorer.state_requests(state, PRE_SCORE_STATE_KEY, pod))

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None:
        return self._scorer.score_batch(columns, rows, self._scorer.state_requests(state, PRE_SCORE_STATE_KEY, pod))


# Figures below 2**62 in magnitude cannot overflow int64 in one subtraction.
_SAFE = 2**62


def _pre_filter_state(state: CycleState) -> FitRequest | None:
    return state.read_optional(PRE_FILTER_STATE_KEY, FitRequest)
