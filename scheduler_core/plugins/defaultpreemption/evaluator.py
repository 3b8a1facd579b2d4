"""The preemption algorithm: which node to free for the pod, and which pods to evict there.

Upstream: ``pkg/scheduler/framework/preemption/preemption.go`` (``Evaluator.Preempt``,
``findCandidates``, ``DryRunPreemption``, ``SelectCandidate``) and the ``NodeToStatus`` and
``FitError`` of ``pkg/scheduler/framework`` (v1.36.3). The per-plugin policy (eligibility, victim
selection on one node, how many nodes to try) comes from a :class:`PreemptionPolicy`, the
upstream ``preemption.Interface``.

``Preempt``:

1. the pod must be eligible (``pod_eligible_to_preempt_others``);
2. candidates: only nodes whose filter status is Unschedulable may be freed by removing pods
   (UnschedulableAndUnresolvable nodes are not candidates; nodes absent from the statuses have
   the statuses' absent status, UnschedulableAndUnresolvable unless the scheduler says otherwise);
   they are dry-run from a random offset, each on a clone of its NodeInfo and of the CycleState,
   until enough candidates are found (at least one that violates no PodDisruptionBudget);
3. no candidate: Unschedulable with a FitError-style message over the dry run's statuses, and a
   result that clears the pod's nomination;
4. the best candidate (``pick_one_node_for_preemption``) is actuated, and the pod nominated there.

The dry run is serial here (upstream runs it on 16 goroutines), so which candidates are found
past the offset is deterministic. Extenders narrow the candidates between steps 3 and 4 when the
profile has preempting ones (``DefaultPreemption.post_filter_async``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scheduler_core.framework import Code, CycleState, Handle, NodeInfo, PodInfo, PostFilterResult, Status
from scheduler_core.plugins.defaultpreemption.candidates import (
    Candidate,
    CandidateList,
    pick_one_node_for_preemption,
)
from scheduler_core.plugins.defaultpreemption.pdb import PodDisruptionBudget, budgets

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_CANDIDATE = "no candidate node for preemption"
PDB_KIND = "PodDisruptionBudget"


class PreemptionPolicy(Protocol):
    """Upstream ``preemption.Interface``, the part a plugin decides."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]: ...

    def pod_eligible_to_preempt_others(
        self, pod: PodInfo, nominated_node_status: Status | None
    ) -> tuple[bool, str]: ...

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: Sequence[PodDisruptionBudget], now: int
    ) -> tuple[list[PodInfo], int, Status | None]: ...


# -- node statuses ----------------------------------------------------------------------------
def absent_status(statuses: Mapping[str, Status]) -> Status:
    """The status of nodes missing from ``statuses``: the mapping's ``absent_status`` attribute
    when the scheduler provides one (upstream ``NodeToStatus.AbsentNodesStatus``), else
    UnschedulableAndUnresolvable (upstream's default: nodes never filtered cannot be helped)."""
    absent = getattr(statuses, "absent_status", None)
    return absent if isinstance(absent, Status) else Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)


def status_of(statuses: Mapping[str, Status], node_name: str) -> Status:
    """Upstream ``NodeToStatus.Get``."""
    status = statuses.get(node_name)
    return status if status is not None else absent_status(statuses)


def nodes_for_status_code(statuses: Mapping[str, Status], nodes: Sequence[NodeInfo], code: Code) -> list[NodeInfo]:
    """Upstream ``NodeToStatus.NodesForStatusCode``: all nodes (in snapshot order) when absent
    nodes have ``code``, else the listed nodes with ``code``, in the statuses' order."""
    if absent_status(statuses).code is code:
        if not statuses:
            return list(nodes)
        return [n for n in nodes if status_of(statuses, n.name).code is code]
    by_name: dict[str, NodeInfo] = {n.name: n for n in nodes}
    return [by_name[name] for name, s in statuses.items() if s.code is code and name in by_name]


def fit_error_message(num_all_nodes: int, statuses: Mapping[str, Status], absent: Status) -> str:
    """Upstream ``FitError.Error`` without PreFilter/PostFilter messages: the sorted histogram
    of reasons, absent nodes counting the absent status's reasons."""
    message = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    histogram: Counter[str] = Counter()
    for status in statuses.values():
        histogram.update(status.reasons)
    if len(statuses) < num_all_nodes:
        for reason in absent.reasons:
            histogram[reason] += num_all_nodes - len(statuses)
    if histogram:
        message += " " + ", ".join(sorted(f"{count} {reason}" for reason, count in histogram.items())) + "."
    return message


def aggregate_errors(messages: Sequence[str]) -> str:
    """``utilerrors.NewAggregate(errs).Error()``."""
    unique = list(dict.fromkeys(messages))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# -- the evaluator ----------------------------------------------------------------------------
@dataclass(slots=True)
class DryRun:
    candidates: list[Candidate]
    statuses: dict[str, Status] = field(default_factory=dict)
    error: str = ""


class Evaluator:
    def __init__(self, handle: Handle, policy: PreemptionPolicy) -> None:
        self._handle = handle
        self._policy = policy

    def preempt(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status], now: int
    ) -> tuple[PostFilterResult | None, Status | None, Candidate | None]:
        """Steps 1-4 but the actuation: the result, the status (None: a node was found) and the
        chosen candidate, which the caller actuates."""
        result, status, candidates = self.candidates(state, pod, statuses, now)
        if status is not None:
            return result, status, None
        return self.choose(candidates, now)

    def choose(
        self, candidates: Sequence[Candidate], now: int
    ) -> tuple[PostFilterResult | None, Status | None, Candidate | None]:
        """Step 4: the best candidate (after the extenders narrowed them, upstream ``callExtenders``)."""
        best = self.select_candidate(candidates, now)
        if best is None or not best.name:
            return None, Status(Code.UNSCHEDULABLE, NO_CANDIDATE), None
        return PostFilterResult(best.name), None, best

    def candidates(
        self, state: CycleState, pod: PodInfo, statuses: Mapping[str, Status], now: int
    ) -> tuple[PostFilterResult | None, Status | None, list[Candidate]]:
        """Steps 1-3: the candidates, or the result and status that end preemption here."""
        nominated = _nominated_node_name(pod)
        eligible, reason = self._policy.pod_eligible_to_preempt_others(
            pod, status_of(statuses, nominated) if nominated else None
        )
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, reason), []

        all_nodes = self._handle.snapshot().list()
        if not all_nodes:
            return None, Status(Code.ERROR, "no nodes available"), []
        run = self.find_candidates(state, pod, all_nodes, statuses, now)
        if run.error and not run.candidates:
            return None, Status(Code.ERROR, run.error), []
        if not run.candidates:
            absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, PREEMPTION_NOT_HELPFUL)
            message = fit_error_message(len(all_nodes), run.statuses, absent)
            # A result with no node clears the pod's nomination.
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, message), []
        return None, None, run.candidates

    def find_candidates(
        self, state: CycleState, pod: PodInfo, all_nodes: Sequence[NodeInfo], statuses: Mapping[str, Status], now: int
    ) -> DryRun:
        potential = nodes_for_status_code(statuses, all_nodes, Code.UNSCHEDULABLE)
        if not potential:
            return DryRun([])
        pdbs = budgets(self._handle.objects(PDB_KIND))
        offset, num_candidates = self._policy.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num_candidates, now)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: PodInfo,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[PodDisruptionBudget],
        offset: int,
        num_candidates: int,
        now: int,
    ) -> DryRun:
        """Upstream ``DryRunPreemption``: candidates that violate no PDB come first."""
        non_violating = CandidateList(num_candidates)
        violating = CandidateList(num_candidates)
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        for i in range(len(potential)):
            node = potential[(offset + i) % len(potential)].clone()
            victims, num_violations, status = self._policy.select_victims_on_node(state.clone(), pod, node, pdbs, now)
            if status is None and victims:
                candidate = Candidate(node.name, victims, num_violations)
                (violating if num_violations else non_violating).add(candidate)
                if len(non_violating) > 0 and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status is None:
                status = Status(Code.ERROR, f'expected at least one victim pod on node "{node.name}"')
            if status.code is Code.ERROR:
                errors.append(status.message())
            statuses[node.name] = status
        return DryRun(non_violating.items + violating.items, statuses, aggregate_errors(errors) if errors else "")

    def select_candidate(self, candidates: Sequence[Candidate], now: int) -> Candidate | None:
        """Upstream ``SelectCandidate``."""
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        name = pick_one_node_for_preemption(candidates, now)
        return next((c for c in candidates if c.name == name), candidates[0])


def _nominated_node_name(pod: PodInfo) -> str:
    """The pod's ``status.nominatedNodeName`` as it stands now: read from the manifest, which
    the backend may have updated since the PodInfo was parsed (upstream reads the pod lister)."""
    status = pod.pod.get("status") or {}
    return str(status.get("nominatedNodeName") or "")
