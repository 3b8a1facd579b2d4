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
   they are dry-run from a random offset, each on a clone of its NodeInfo and of the CycleState
   (but a node the policy rules out without one: ``cannot_be_candidate``), until enough
   candidates are found (at least one that violates no PodDisruptionBudget);
3. no candidate: Unschedulable with a FitError-style message over the dry run's statuses, and a
   result that clears the pod's nomination;
4. the best candidate (``pick_one_node_for_preemption``) is actuated, and the pod nominated there.

The dry run is serial here (upstream runs it on 16 goroutines), so which candidates are found
past the offset is deterministic. Extenders narrow the candidates between steps 3 and 4 when the
profile has preempting ones (``DefaultPreemption.post_filter_async``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scheduler_core.framework import (
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodeToStatus,
    PodInfo,
    PostFilterResult,
    Status,
    manifest,
)
from scheduler_core.framework import (
    field as field_errors,
)
from scheduler_core.framework.diagnosis import reasons_histogram
from scheduler_core.plugins.defaultpreemption.candidates import (
    Candidate,
    CandidateList,
    pick_one_node_for_preemption,
)
from scheduler_core.plugins.defaultpreemption.pdb import PodDisruptionBudget, budgets

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

    def cannot_be_candidate(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> bool:
        """True only where ``select_victims_on_node`` would find no victims on ``node`` (its
        status aside), told without the clones; False when it cannot tell."""
        ...


# -- the evaluator ----------------------------------------------------------------------------
@dataclass(slots=True)
class DryRun:
    candidates: list[Candidate]
    # Why each node visited is no candidate; every node's when none is (see dry_run_preemption).
    statuses: dict[str, Status] = field(default_factory=dict)
    error: str = ""


class Evaluator:
    def __init__(self, handle: Handle, policy: PreemptionPolicy) -> None:
        self._handle = handle
        self._policy = policy

    def preempt(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus, now: int
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
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus, now: int
    ) -> tuple[PostFilterResult | None, Status | None, list[Candidate]]:
        """Steps 1-3: the candidates, or the result and status that end preemption here."""
        nominated = _nominated_node_name(pod)
        eligible, reason = self._policy.pod_eligible_to_preempt_others(
            pod, statuses.status_of(nominated) if nominated else None
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
            message = reasons_histogram(len(all_nodes), run.statuses, absent)
            # A result with no node clears the pod's nomination.
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, message), []
        return None, None, run.candidates

    def find_candidates(
        self, state: CycleState, pod: PodInfo, all_nodes: Sequence[NodeInfo], statuses: NodeToStatus, now: int
    ) -> DryRun:
        potential = statuses.nodes_for_status_code(all_nodes, Code.UNSCHEDULABLE)
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
        """Upstream ``DryRunPreemption``: candidates that violate no PDB come first.

        A node the policy says cannot be a candidate is passed over without its clones and
        filter runs. Its status only matters when no node is a candidate (the statuses then
        make the pod's message, the errors the result): only then is it evaluated, and the
        statuses and errors are those of every node in the order visited, as without the
        shortcut."""
        non_violating = CandidateList(num_candidates)
        violating = CandidateList(num_candidates)
        visited: list[tuple[NodeInfo, Status | None]] = []  # no candidate; None: passed over
        hopeless = self._policy.cannot_be_candidate
        for i in range(len(potential)):
            node = potential[(offset + i) % len(potential)]
            if hopeless(state, pod, node):
                visited.append((node, None))
                continue
            status = self._try_node(state, pod, node, pdbs, now, non_violating, violating)
            if status is None:
                if len(non_violating) > 0 and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            visited.append((node, status))
        statuses: dict[str, Status] = {}
        errors: list[str] = []
        found = len(non_violating) + len(violating) > 0
        for node, status in visited:
            if status is None:
                if found:
                    continue
                # A policy wrong about the node makes it a candidate after all (its answer
                # otherwise the same).
                status = self._try_node(state, pod, node, pdbs, now, non_violating, violating)
                if status is None:
                    continue
            if status.code is Code.ERROR:
                errors.append(status.message())
            statuses[node.name] = status
        return DryRun(non_violating.items + violating.items, statuses, field_errors.aggregate(errors) if errors else "")

    def _try_node(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        pdbs: Sequence[PodDisruptionBudget],
        now: int,
        non_violating: CandidateList,
        violating: CandidateList,
    ) -> Status | None:
        """``select_victims_on_node`` on clones of ``node`` and ``state``: the node added to the
        candidates (None), or why it is none."""
        select = self._policy.select_victims_on_node
        victims, num_violations, status = select(state.clone(), pod, node.clone(), pdbs, now)
        if status is None and victims:
            (violating if num_violations else non_violating).add(Candidate(node.name, victims, num_violations))
            return None
        if status is None:
            return Status(Code.ERROR, f'expected at least one victim pod on node "{node.name}"')
        return status

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
    status = manifest.status(pod.pod)
    return str(status.get("nominatedNodeName") or "")
