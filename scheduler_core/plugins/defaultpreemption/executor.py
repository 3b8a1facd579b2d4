"""Carrying a preemption out: evicting the victims in the background.

Upstream: ``pkg/scheduler/framework/preemption/executor.go`` (v1.36.3) with SchedulerAsyncPreemption
on (beta, on by default since v1.33): ``prepareCandidateAsync`` returns at once and a goroutine

1. clears ``status.nominatedNodeName`` of the lower-priority pods nominated to the chosen node
   (they may no longer fit there);
2. preempts every victim but the last, then records the last one and preempts it;
3. forgets the preemptor.

Preempting a victim (``PreemptPod``) rejects it if it waits at Permit (no API call), or else asks
the API to delete it (``writes.preempt``: a delete with the ``reason``, which the backend writes
first as the DisruptionTarget condition; a victim gone is preempted already). Victims already
being deleted are not preempted again. While its preemption runs, the preemptor is kept out of
the queue by the plugin's PreEnqueue (``is_running_preemption``): until the last victim is gone
from the scheduler's own view (the snapshot), or is terminating.

Here the work is an asyncio task; the victims of step 2 are preempted at once, as upstream's
goroutines do, and the first failure cancels those still under way. The tasks are kept so that
they can be awaited. One victim after the other, each preemption took a round trip per victim
more, and on the dev cluster (PreemptionBasic, 1,000 preemptors of three victims each) the
preemptors waiting for their victims were held by PreEnqueue the longer: every victim's
deletion moves each of them and PreEnqueue sends it back (bench/README.md).
The preemptor is activated once its preemption is over, whatever the result. Upstream v1.36.3
activates it only when a call failed (the deferred ``Activate`` on an error result), which leaves
it parked for good when the deletion that would have requeued it came while it was held: every
victim but the last is deleted in parallel, and a deletion that arrives before the last one is
consumed with the preemptor held by PreEnqueue, while the later ones may not interest the
plugins that rejected it (NodePorts for a victim without its host port); a pod held by a
PreEnqueue plugin is moved only by that plugin's events (Pod/Delete), so not even the periodic
flush of the unschedulable pool retries it (backend/queue/scheduling_queue.go). This is
kubernetes/kubernetes#141694's family; the fix proposed upstream (#142294) is this one, activate
when the preemption ends. The parity harness found it (seeds 287 and 487 of the 18-feature run,
docs/parity.md).

Activated so, the preemptor may be tried again before the watch brings its victims' deletion to
the cache (the API answers the delete first): its next attempt still sees them running, and
would find them again as its victims and ask for their deletion once more (the operator's e2e
test saw it on a loaded machine). Upstream cannot get there: it retries the preemptor on the
events that bring the deletion, after the cache took them in. So the victims whose deletion was
asked for are kept (:class:`Deleting`, one per scheduler) until the scheduler's view shows them
terminating or gone, and count as terminating by preemption meanwhile: actuation skips them, as
it skips a victim with a deletionTimestamp, and the preemptor is not eligible to preempt while
one is on its nominated node (``DefaultPreemption.pod_eligible_to_preempt_others``). Not carried
over: the "Preempted" event on each victim (the plugin API has no event recorder).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from scheduler_core.framework import Handle, PodInfo, PodUID, SnapshotLister, Status
from scheduler_core.framework.writes import patch_pod_status, preempt

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _PendingVictim:
    uid: PodUID
    node_name: str


def _seen(snapshot: SnapshotLister, node_name: str, uid: PodUID) -> PodInfo | None:
    """The pod ``uid`` on ``node_name`` in the scheduler's view, if it is there."""
    node = snapshot.get(node_name)
    return next((p for p in node.pods if p.uid == uid), None) if node is not None else None


class Deleting:
    """Victims whose deletion the scheduler asked for, until its view shows them terminating or
    gone (module doc). One per scheduler (``Handle.shared``): every profile's preemption sees
    the others' victims, and a hot reload keeps them."""

    def __init__(self) -> None:
        self._nodes: dict[PodUID, str] = {}

    def asked(self, pod: PodInfo) -> bool:
        """Asked to go and not shown terminating yet (once it is, the view's own fields speak)."""
        return pod.uid in self._nodes and not pod.deletion_timestamp

    def add(self, victim: PodInfo) -> None:
        self._nodes[victim.uid] = victim.node_name

    def discard(self, victim: PodInfo) -> None:
        self._nodes.pop(victim.uid, None)

    def forget_seen(self, snapshot: SnapshotLister) -> None:
        """Let go of the victims that ``snapshot`` shows terminating or gone: the cache has them."""
        for uid, node_name in list(self._nodes.items()):
            victim = _seen(snapshot, node_name, uid)
            if victim is None or victim.deletion_timestamp:
                del self._nodes[uid]


class Executor:
    def __init__(self, handle: Handle, plugin_name: str) -> None:
        self._handle = handle
        self.deleting = handle.shared(f"{plugin_name}/deleting", Deleting)
        # Preemptors whose preemption is under way, with the last victim once it is being preempted.
        self._preempting: dict[PodUID, _PendingVictim | None] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    # -- PreEnqueue ---------------------------------------------------------------------------
    def is_running_preemption(self, uid: PodUID) -> bool:
        """Upstream ``isRunningPreemption``."""
        if uid not in self._preempting:
            return False
        last = self._preempting[uid]
        if last is None:
            return True
        victim = _seen(self._handle.snapshot(), last.node_name, last.uid)
        # Gone, or terminating: the preemption is done.
        return victim is not None and not victim.deletion_timestamp

    # -- actuation ----------------------------------------------------------------------------
    def actuate(self, node_name: str, victims: list[PodInfo], preemptor: PodInfo) -> Status | None:
        """Start preempting ``victims`` on ``node_name`` for ``preemptor`` (upstream
        ``actuatePodPreemption`` → ``prepareCandidateAsync``). Victims being deleted are skipped,
        those the scheduler's view does not show so yet included (module doc)."""
        self.deleting.forget_seen(self._handle.snapshot())
        to_preempt = []
        for victim in victims:
            if victim.deletion_timestamp or self.deleting.asked(victim):
                # Upstream's V(2) line (executor.go prepareCandidateAsync).
                log.info(
                    "Victim Pod is already being deleted, skipping the API call for it: preemptor %s node %s victim %s",
                    preemptor.key, node_name, victim.key,
                )  # fmt: skip
                continue
            to_preempt.append(victim)
        if not to_preempt:
            return None
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return Status.as_error("preemption needs a running event loop to evict victims")
        self._preempting[preemptor.uid] = None
        task = self._handle.start_task(self._preempt(node_name, to_preempt, preemptor))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return None

    async def wait(self) -> None:
        """Wait for every preemption under way (tests, shutdown)."""
        while self.tasks:
            await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _preempt(self, node_name: str, victims: list[PodInfo], preemptor: PodInfo) -> None:
        ok = False
        started = time.perf_counter()
        try:
            ok = await self._clear_lower_priority_nominations(node_name, preemptor)
            if await self._preempt_all(node_name, preemptor, victims[:-1]):
                last = victims[-1]
                self._preempting[preemptor.uid] = _PendingVictim(last.uid, node_name)
                ok = await self._preempt_pod(node_name, preemptor, last) and ok
            else:
                # Skip the last victim after a failure so that the preemptor is retried sooner.
                ok = False
        except Exception:
            log.exception("preemption for pod %s on node %s failed", preemptor.key, node_name)
            ok = False
        finally:
            self._preempting.pop(preemptor.uid, None)
        result = "success" if ok else "error"  # metrics.go GoroutineResultSuccess / GoroutineResultError
        log.debug("preemption for %s on node %s finished: %s", preemptor.key, node_name, result)
        self._handle.metrics.preemption_goroutine_finished(result, time.perf_counter() - started)
        # Held while its preemption ran, the preemptor may have missed the event that would have
        # moved it, and then waits for ever: retry it now (see the module doc; upstream activates
        # it only when !ok, v1.36.3 executor.go prepareCandidateAsync).
        self._handle.activate([preemptor])

    async def _preempt_all(self, node_name: str, preemptor: PodInfo, victims: list[PodInfo]) -> bool:
        """Preempt ``victims`` all at once (upstream ``Parallelizer().Until`` over every victim
        but the last); the first failure cancels those still under way (its ``SendWithCancel``).
        False when one failed."""
        if len(victims) <= 1:
            return all([await self._preempt_pod(node_name, preemptor, victim) for victim in victims])
        tasks = [asyncio.ensure_future(self._preempt_pod(node_name, preemptor, victim)) for victim in victims]
        try:
            for finished in asyncio.as_completed(tasks):
                if not await finished:
                    return False
            return True
        finally:
            for task in tasks:
                task.cancel()  # those still under way after a failure; a finished one ignores it
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _clear_lower_priority_nominations(self, node_name: str, preemptor: PodInfo) -> bool:
        """Upstream ``getLowerPriorityNominatedPods`` + ``clearNominatedNodeName``; False when a
        call failed, which does not stop the preemption (not critical) but counts as its failure.
        A tenant profile touches pods of its own namespace only."""
        tenant = self._handle.tenant_namespace
        ok = True
        for pod in self._handle.nominator.nominated_pods_for_node(node_name):
            if pod.priority >= preemptor.priority or (tenant is not None and pod.namespace != tenant):
                continue
            status = await patch_pod_status(self._handle.api, pod, {"nominatedNodeName": None})
            if status is not None and not status.is_success():
                log.error("cannot clear nominatedNodeName of %s on node %s: %s", pod.key, node_name, status.message())
                ok = False
        return ok

    async def _preempt_pod(self, node_name: str, preemptor: PodInfo, victim: PodInfo) -> bool:
        """Upstream ``Executor.PreemptPod``; False when the API call failed."""
        if self._handle.get_waiting_pod(victim.uid) is not None and self._handle.reject_waiting_pod(victim.uid):
            log.info("preemptor %s rejected waiting pod %s on node %s", preemptor.key, victim.key, node_name)
            return True
        reason = f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod"
        self.deleting.add(victim)  # from the request on: another attempt may run while it is sent
        try:
            status = await preempt(self._handle.api, victim, reason)
        except BaseException:
            self.deleting.discard(victim)  # not asked after all (a raising API, a cancelled task)
            raise
        if status is not None and not status.is_success():
            self.deleting.discard(victim)  # still running: a later preemption may pick it again
            log.error("preemptor %s could not preempt %s: %s", preemptor.key, victim.key, status.message())
            return False
        log.info("preemptor %s preempted %s on node %s", preemptor.key, victim.key, node_name)
        return True
