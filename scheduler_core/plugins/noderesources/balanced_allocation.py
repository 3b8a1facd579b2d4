"""NodeResourcesBalancedAllocation: favour nodes whose usage gets more balanced with the pod.

Upstream ``pkg/scheduler/framework/plugins/noderesources/balanced_allocation.go``
(k8s.io/kubernetes v1.36.3). The balance of a node is (1 - standard deviation of its
requested/allocatable fractions) * MaxNodeScore; the score compares the balance with and
without the pod (see :class:`strategies.BalancedAllocation`). It uses the plain requests of the
pod and the node (``useRequested``), not the non-zero defaults of NodeResourcesFit.

PreScore returns Skip for a pod that requests none of the configured resources, so that
best-effort pods do not pile up on one node (kubernetes/kubernetes#129138). Score-only: no
events to register.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from scheduler_core.framework import CycleState, Handle, IntArray, Manifest, NodeColumns, NodeInfo, PodInfo, Status
from scheduler_core.plugins import names
from scheduler_core.plugins.noderesources.args import NodeResourcesBalancedAllocationArgs
from scheduler_core.plugins.noderesources.resource_allocation import PreScoreState, ResourceAllocationScorer
from scheduler_core.plugins.noderesources.strategies import BalancedAllocation

NAME = names.NODE_RESOURCES_BALANCED_ALLOCATION
PRE_SCORE_STATE_KEY = "PreScore" + NAME


def _is_best_effort(pod_requests: Sequence[int]) -> bool:
    return not any(pod_requests)


class NodeResourcesBalancedAllocation:
    name = NAME
    args_model = NodeResourcesBalancedAllocationArgs

    def __init__(self, args: NodeResourcesBalancedAllocationArgs | Manifest | None, handle: Handle | None) -> None:
        if not isinstance(args, NodeResourcesBalancedAllocationArgs):
            args = NodeResourcesBalancedAllocationArgs.model_validate(args or {})
        self.args = args
        self._handle = handle
        self._scorer = ResourceAllocationScorer(args.resources, BalancedAllocation(), use_requested=True)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        pod_requests = self._scorer.pod_requests(pod)
        if _is_best_effort(pod_requests):
            return Status.skip()
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(pod_requests))
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        pod_requests = self._pod_requests(state, pod)
        if pod_requests is None:
            return 0, None
        return self._scorer.score(node, pod_requests)

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None:
        pod_requests = self._pod_requests(state, pod)
        if pod_requests is None:
            return np.zeros(len(rows), np.int64)
        return self._scorer.score_batch(columns, rows, pod_requests)

    def _pod_requests(self, state: CycleState, pod: PodInfo) -> tuple[int, ...] | None:
        """The PreScore state, or (as upstream, when PreScore did not run) the requests computed
        now; ``None`` for a best-effort pod, which scores 0."""
        pod_requests = self._scorer.state_requests(state, PRE_SCORE_STATE_KEY, pod)
        return None if _is_best_effort(pod_requests) else pod_requests
