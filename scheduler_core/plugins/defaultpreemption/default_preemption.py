"""DefaultPreemption: when a pod fits no node, evict lower-priority pods to make room for it.

Upstream: ``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go``
(k8s.io/kubernetes v1.36.3), with SchedulerAsyncPreemption on as it is by default. A PostFilter
plugin: after a FitError, it looks for the node where evicting the fewest and least important
pods lets the pod fit (:mod:`evaluator`), starts evicting them in the background
(:mod:`executor`) and nominates the pod to that node; the scheduler records the nomination and
the pod is retried when the victims are gone. Its PreEnqueue keeps the pod out of the queue while
its victims are being evicted.

Victims on a node (``select_victims_on_node``): every pod of lower priority (and, for a tenant
profile, of the tenant's namespace: DESIGN.md tenant safety) is removed from a clone of the
node, telling the PreFilter plugins through ``run_pre_filter_extension_remove_pod``; if the pod
then passes the filters (``run_filter_with_nominated_pods``), the removed pods are added back
one by one, PDB-violating ones first, most important first, each kept if the pod still fits.

Not modelled: pod groups (workload-aware and topology-aware scheduling), custom
``IsEligiblePod``/``MoreImportantPod`` hooks beyond the tenant rule, metrics.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence

from scheduler_core.framework import (
    ASSIGNED_POD_DELETE,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventObject,
    Handle,
    Manifest,
    NodeInfo,
    NodeToStatus,
    PodInfo,
    PostFilterResult,
    QueueingHint,
    Status,
    manifest,
)
from scheduler_core.plugins import names
from scheduler_core.plugins.defaultpreemption.args import DefaultPreemptionArgs
from scheduler_core.plugins.defaultpreemption.candidates import Candidate, importance_key
from scheduler_core.plugins.defaultpreemption.evaluator import Evaluator
from scheduler_core.plugins.defaultpreemption.executor import Executor
from scheduler_core.plugins.defaultpreemption.pdb import PodDisruptionBudget, filter_pods_with_pdb_violation

NAME = names.DEFAULT_PREEMPTION

# Messages (upstream default_preemption.go).
MSG_PREFIX = "preemption: "
ERR_NO_VICTIMS = "No preemption victims found for incoming pod"
ERR_PREEMPT_NEVER = "not eligible due to preemptionPolicy=Never."
ERR_TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
ERR_WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"

PREEMPT_NEVER = "Never"
DISRUPTION_TARGET = "DisruptionTarget"
REASON_PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def _skip(pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
    """Upstream ``isPodSchedulableAfterPodDeletion``: the plugins whose rejection preemption
    resolves decide when the pod is retried, not preemption itself."""
    return QueueingHint.SKIP


def pod_terminating_by_preemption(pod: PodInfo) -> bool:
    """Upstream ``podTerminatingByPreemption``: being deleted, with the DisruptionTarget
    condition the scheduler sets on its victims."""
    if not pod.deletion_timestamp:
        return False
    for condition in manifest.status(pod.pod).get("conditions") or ():
        if condition.get("type") == DISRUPTION_TARGET:
            return bool(condition.get("status") == "True" and condition.get("reason") == REASON_PREEMPTION_BY_SCHEDULER)
    return False


class DefaultPreemption:
    name = NAME
    args_model = DefaultPreemptionArgs

    def __init__(self, args: DefaultPreemptionArgs | Manifest | None, handle: Handle) -> None:
        if not isinstance(args, DefaultPreemptionArgs):
            args = DefaultPreemptionArgs.model_validate(args or {})
        self.args = args
        self._handle = handle
        self.executor = Executor(handle, NAME)
        self.evaluator = Evaluator(handle, self)
        # Upstream getOffsetRand (rand.Int31n): where the dry run starts among the potential nodes.
        # Seeded, so that a simulation is reproducible; still spreads the dry runs over the nodes.
        self.offset_rand: Callable[[int], int] = random.Random(0).randrange
        # Upstream reads time.Now() for pods without a start time.
        self.clock_ns: Callable[[], int] = time.time_ns

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # A pod kept out by PreEnqueue is looked at again when a pod is deleted.
        return [ClusterEventWithHint(ASSIGNED_POD_DELETE, _skip)]

    # -- PreEnqueue -----------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if self.executor.is_running_preemption(pod.uid):
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_WAITING_FOR_PREEMPTION)
        return None

    # -- PostFilter -----------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        result, status, best = self.evaluator.preempt(state, pod, statuses, self.clock_ns())
        return self._actuate(pod, result, status, best)

    async def post_filter_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        """``post_filter`` with the profile's preempting extenders consulted (upstream
        ``callExtenders``) between finding the candidates and choosing one; the scheduler awaits
        it only for profiles with extenders."""
        now = self.clock_ns()
        result, status, candidates = self.evaluator.candidates(state, pod, statuses, now)
        best = None
        if status is None:
            victims = {c.name: (c.victims, c.num_pdb_violations) for c in candidates}
            narrowed, status = await self._handle.extenders_process_preemption(pod, victims)
            if status is None:
                kept = [Candidate(name, pods, n) for name, (pods, n) in narrowed.items()]
                result, status, best = self.evaluator.choose(kept, now)
        return self._actuate(pod, result, status, best)

    def _actuate(
        self, pod: PodInfo, result: PostFilterResult | None, status: Status | None, best: Candidate | None
    ) -> tuple[PostFilterResult | None, Status | None]:
        """Evict ``best``'s victims and nominate; the outcome with upstream's message prefix."""
        # Every PostFilter call is an attempt; the victims are observed as the candidate is
        # prepared (v1.36.3 default_preemption.go PostFilter, preemption/executor.go).
        self._handle.metrics.preemption_attempted()
        if best is not None:
            self._handle.metrics.preemption_victims(len(best.victims))
            status = self.executor.actuate(best.name, best.victims, pod)
            if status is not None:
                result = None
        if status is not None and status.message():
            return result, Status(status.code, MSG_PREFIX + status.message())
        return result, status

    # -- the preemption policy (upstream preemption.Interface) ---------------------------------
    def calculate_num_candidates(self, num_nodes: int) -> int:
        """At least ``minCandidateNodesPercentage`` of the nodes and ``minCandidateNodesAbsolute``
        nodes, at most all of them (Go int32 arithmetic; operands are non-negative)."""
        n = num_nodes * self.args.min_candidate_nodes_percentage // 100
        n = max(n, self.args.min_candidate_nodes_absolute)
        return min(n, num_nodes)

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.offset_rand(num_nodes), self.calculate_num_candidates(num_nodes)

    def is_preemption_allowed(self, node: NodeInfo, victim: PodInfo, preemptor: PodInfo) -> bool:
        """The victim has a lower priority, and (``IsEligiblePod``) a tenant profile preempts
        only in its own namespace."""
        tenant = self._handle.tenant_namespace
        return victim.priority < preemptor.priority and (tenant is None or victim.namespace == tenant)

    def pod_eligible_to_preempt_others(self, pod: PodInfo, nominated_node_status: Status | None) -> tuple[bool, str]:
        """Not when the pod's preemptionPolicy is Never, nor while victims of an earlier
        preemption still terminate on its nominated node (unless that node now rejects the pod
        beyond what preemption can fix): those the scheduler's view shows terminating by
        preemption, and those whose deletion it asked for and does not show so yet (executor)."""
        if manifest.spec(pod.pod).get("preemptionPolicy") == PREEMPT_NEVER:
            return False, ERR_PREEMPT_NEVER
        nominated = str(manifest.status(pod.pod).get("nominatedNodeName") or "")
        if nominated:
            if nominated_node_status is not None and nominated_node_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node = self._handle.snapshot().get(nominated)
            if node is not None:
                for p in node.pods:
                    terminating = pod_terminating_by_preemption(p) or self.executor.deleting.asked(p)
                    if self.is_preemption_allowed(node, p, pod) and terminating:
                        return False, ERR_TERMINATING_ON_NOMINATED
        return True, ""

    def _potential_victims(self, pod: PodInfo, node: NodeInfo) -> list[PodInfo]:
        """The pods on ``node`` preemption may evict for ``pod`` (``is_preemption_allowed``,
        inlined: the dry run asks it of every pod of hundreds of nodes an attempt)."""
        priority = pod.priority
        tenant = self._handle.tenant_namespace
        return [p for p in node.pods if p.priority < priority and (tenant is None or p.namespace == tenant)]

    def cannot_be_candidate(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> bool:
        """Whether ``select_victims_on_node`` certainly finds no victims on ``node``, told
        without cloning it: a Filter plugin rejects the pod even with every pod it may evict
        taken off (``Handle.filter_rejects_changed``). That run's own filter pass must succeed
        for any victims (with nominated pods added and without), so the answer is the same;
        only the node's status is not computed (the evaluator computes it when needed)."""
        potential = self._potential_victims(pod, node)
        return bool(potential) and self._handle.filter_rejects_changed(state, pod, node, potential, ())

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, pdbs: Sequence[PodDisruptionBudget], now: int
    ) -> tuple[list[PodInfo], int, Status | None]:
        """Upstream ``SelectVictimsOnNode`` on ``node`` and ``state``, both clones: the fewest
        pods to evict, most important first, and how many of them violate a PDB.

        The dry run calls this for hundreds of nodes per attempt (PreemptionPVs, 1000 nodes:
        about 330 a pod), so the loops below read the handle's runners once and inline
        ``is_preemption_allowed``; the calls to the handle are upstream's, in its order."""
        handle = self._handle
        remove_extension = handle.run_pre_filter_extension_remove_pod
        add_extension = handle.run_pre_filter_extension_add_pod
        run_filter = handle.run_filter_with_nominated_pods
        potential = self._potential_victims(pod, node)
        # Nothing to remove: the node is as it was, and rejected the pod.
        if not potential:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_NO_VICTIMS)
        if handle.runs_remove_pod_extension(state):
            for victim in potential:
                node.remove_pod(victim)
                if (error := _as_error(remove_extension(state, pod, victim, node))) is not None:
                    return [], 0, error
        else:  # no plugin to tell after each removal: one pass over the node's pods and sums
            node.remove_pods(potential)
        # Even without every lower-priority pod the pod does not fit (affinity to victims is
        # deliberately not considered).
        status = run_filter(state, pod, node)
        if status is not None and not status.is_success():
            return [], 0, status

        key = importance_key(now)
        potential.sort(key=key)
        violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        victims: list[PodInfo] = []
        num_violating = 0
        # Without PreFilter extensions to tell, putting a pod back and taking it off again
        # leaves the state as it was: where a Filter plugin rejects the pod with the candidate
        # back (``filter_rejects_changed``), the filters would too, and the candidate is a
        # victim without the round trip (PreemptionBasic: three of the four pods a node).
        quick = not (handle.runs_add_pod_extension(state) or handle.runs_remove_pod_extension(state))
        rejects = handle.filter_rejects_changed
        for group in (violating, non_violating):
            for candidate in group:
                if quick and rejects(state, pod, node, (), (candidate,)):
                    victims.append(candidate)
                    if group is violating:
                        num_violating += 1
                    continue
                node.add_pod(candidate)
                if (error := _as_error(add_extension(state, pod, candidate, node))) is not None:
                    return [], 0, error
                fits = run_filter(state, pod, node)
                if fits is None or fits.is_success():
                    continue  # reprieved
                node.remove_pod(candidate)
                if (error := _as_error(remove_extension(state, pod, candidate, node))) is not None:
                    return [], 0, error
                victims.append(candidate)
                if group is violating:
                    num_violating += 1
        if violating and non_violating:
            victims.sort(key=key)
        return victims, num_violating, None


def _as_error(status: Status | None) -> Status | None:
    """A failed PreFilter extension aborts the node's evaluation with an Error (upstream
    ``status.AsError()`` then ``fwk.AsStatus``)."""
    if status is None or status.is_success():
        return None
    return Status(Code.ERROR, status.message())
