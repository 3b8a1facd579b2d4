"""The scheduler loop: serial scheduling cycles, concurrent binding cycles.

Upstream: ``pkg/scheduler/schedule_one.go`` (``ScheduleOne``, ``schedulingCycle``,
``handleSchedulingFailure``). The placement algorithm is :mod:`scheduler_core.algorithm`
(``SchedulePod``), the binding cycle :mod:`scheduler_core.binding` (``bindingCycle``), and the
event handlers, as upstream's ``eventhandlers.go``, :mod:`scheduler_core.eventhandlers`.

A backend (the in-memory simulator, or the Kopf operator over the API server) feeds
cluster events in (``on_object_*(kind, ...)``, ``on_node_*``, ``on_pod_*``) and profile
changes (``apply_profile``),
and carries decisions out (``Backend``: bind through the Handle's API, report failures
and placements). No scheduling logic lives in a backend.

A scheduling cycle is one coroutine (``schedule_one``) whose extender steps run only for a
profile with HTTP extenders. For every other profile nothing in it suspends: nothing else runs
on the event loop while a pod is placed, so the cache's NodeInfos serve as the cycle's snapshot
without copying. A profile with extenders runs its cycles on a lane of its own (an asyncio
task), so a slow extender holds only that profile's pods (docs/extenders.md). Binding cycles
are asyncio tasks; they finish on the framework they started with even when a profile is
reloaded meanwhile. Every cycle is fenced: what a plugin raises fails only that pod's cycle
(:mod:`scheduler_core.framework.faults`).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol, cast

from scheduler_core import explanation
from scheduler_core.algorithm import Algorithm, ScheduleError, ScheduleResult
from scheduler_core.binding import BindingCycles, raised, unreserve
from scheduler_core.cache import Cache
from scheduler_core.clock import Clock, RealClock, SettableClock
from scheduler_core.config import PluginSet, SchedulerProfileSpec
from scheduler_core.eventhandlers import EventHandlers
from scheduler_core.extender import cycle as extender_cycle
from scheduler_core.framework import (
    ClusterAPI,
    Code,
    CycleState,
    NodeToStatus,
    PodInfo,
    QueuedPodInfo,
    Status,
)
from scheduler_core.framework import events as ev
from scheduler_core.framework.diagnosis import Diagnosis, FitError
from scheduler_core.metrics import scheduler_metrics as sm
from scheduler_core.plugins.names import COSCHEDULING, GANG_SCHEDULING
from scheduler_core.profiles import ProfileKey, ProfileSet
from scheduler_core.queue import QueuedPod, SchedulingQueue
from scheduler_core.queue.nominator import NominatedGhosts
from scheduler_core.queue.scheduling_queue import UNSCHEDULABLE_FLUSH_PERIOD
from scheduler_core.reporting import (
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    truncate_message,
)
from scheduler_core.runtime.build import ProfileError
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.runtime.waiting_pods import WaitingPods
from scheduler_core.tenancy import ScopedClusterAPI

log = logging.getLogger(__name__)

# Upstream ``clearNominatedNode`` (v1.36.3 pkg/scheduler/schedule_one.go): a failure other than a
# PostFilter's outcome ends the pod's nomination, in memory and in ``status.nominatedNodeName``
# (ModeOverride with no node). ``None`` for ``nominated_node`` is upstream's ModeNoop.
CLEAR_NOMINATION = ""


class Backend(Protocol):
    """What a scheduler needs from the world it schedules in."""

    @property
    def api(self) -> ClusterAPI: ...

    def objects(self, kind: str) -> Iterable[Any]: ...

    def lookup(self, kind: str, namespace: str, name: str) -> Any | None:
        """One of :meth:`objects` by namespace ("" when cluster-scoped) and name (``Handle.lookup``)."""
        ...

    def objects_version(self, kind: str) -> int | None:
        """The change counter of ``kind``'s objects (``Handle.objects_version``)."""
        ...

    def report_failure(self, pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        """PodScheduled=False condition and a FailedScheduling event (may be asynchronous)."""
        ...

    def report_scheduled(self, pod: PodInfo, node_name: str) -> None:
        """A Scheduled event ("Successfully assigned ns/name to node")."""
        ...


class Observer(Protocol):
    """Receives every attempt's outcome: the explanation of a placement or a failure."""

    def attempt(
        self,
        pod: PodInfo,
        fwk: Framework,
        *,
        status: str,
        node: str | None,
        message: str,
        result: ScheduleResult | None,
        diagnosis: Diagnosis | None,
    ) -> None: ...


class Scheduler:
    """Scheduling cycles (this module) and binding cycles (:mod:`scheduler_core.binding`), fed by
    the cluster's events (``on_*``, handled by its :class:`~scheduler_core.eventhandlers.EventHandlers`),
    with the queue's periodic flushes."""

    def __init__(
        self,
        backend: Backend,
        *,
        registry: Mapping[str, Any],
        default_multi_point: PluginSet,
        clock: Clock | None = None,
        home_namespace: str = "crd-scheduler",
        rng: random.Random | None = None,
        observer: Observer | None = None,
        pop_from_backoff: bool = True,
        batch: bool = True,
        metrics: sm.SchedulerMetrics | None = None,
        pod_gone: Callable[[str], None] | None = None,
    ) -> None:
        """``pod_gone``: told the uid of each pod deleted or bound (the operator's backend then
        forgets what it kept to report on the pod)."""
        self.backend = backend
        self.clock = clock or RealClock()
        self.metrics = metrics if metrics is not None else sm.SchedulerMetrics()
        self.cache = Cache()
        self.queue = SchedulingQueue(
            self.clock, self._less, pop_from_backoff=pop_from_backoff, profile_of=self._profile_of, metrics=self.metrics
        )
        self.algorithm = Algorithm(rng)
        self.observer = observer
        self.explain = observer is not None
        self.profiles = ProfileSet(
            home_namespace=home_namespace,
            registry=registry,
            default_multi_point=default_multi_point,
            make_handle=self._make_handle,
            batch=batch,
        )
        self._sort_less: Callable[[QueuedPodInfo, QueuedPodInfo], bool] = self._fifo
        self._sort_plugin = ""  # the QueueSort plugin's name, for its error
        self._sort_failed: set[str] = set()  # QueueSort plugins that raised (logged once)
        self.events = EventHandlers(
            backend=backend,
            cache=self.cache,
            queue=self.queue,
            profiles=self.profiles,
            metrics=self.metrics,
            pod_gone=pod_gone or _nothing,
        )
        # Cluster events in: the backends call these on the scheduler; they are the handlers' own.
        self.on_object_add = self.events.on_object_add
        self.on_object_update = self.events.on_object_update
        self.on_object_delete = self.events.on_object_delete
        self.on_node_add = self.events.on_node_add
        self.on_node_update = self.events.on_node_update
        self.on_node_delete = self.events.on_node_delete
        self.on_pod_add = self.events.on_pod_add
        self.on_pod_update = self.events.on_pod_update
        self.on_pod_delete = self.events.on_pod_delete
        self.on_pod_vanished = self.events.on_pod_vanished
        # Binding cycles in flight (scheduler_core.binding).
        self._binding = BindingCycles(
            cache=self.cache, queue=self.queue, backend=backend, bound=self._bound, failed=self._cycle_rejected
        )
        self._lanes: dict[str, asyncio.Future[None]] = {}  # profile -> its extender lane's task
        self._lane_pods: dict[str, deque[QueuedPodInfo]] = {}  # profile -> the pods its lane has yet to run
        self._background: set[asyncio.Task[None]] = set()  # plugins' work, e.g. evictions
        self._wakeup = asyncio.Event()
        self._last_rejectors: dict[str, set[str]] = {}  # run_until_idle: who rejected a pod last
        self._attempt_started: dict[str, float] = {}  # uid -> the attempt's start (metrics.timer)
        self.scheduled_count = 0
        self.attempt_count = 0
        self._shared: dict[str, Any] = {}  # Handle.shared: one per scheduler, across profiles and reloads
        self.last_turn: float | None = None  # clock reading of the loop's last turn (health)
        self._refused: set[ProfileKey] = set()  # profiles whose newest generation was refused (metrics)
        self._collect_metrics()

    def _collect_metrics(self) -> None:
        """The gauges read at scrape time from state kept here (scheduler_core.metrics)."""
        cache = self.cache
        self.metrics.collect("scheduler_goroutines", lambda: [((sm.BINDING,), float(len(self._binding)))])
        self.metrics.collect(
            "scheduler_cache_size",
            lambda: [
                (("assumed_pods",), float(cache.assumed_count())),
                (("pods",), float(cache.pod_count())),
                (("nodes",), float(cache.node_count())),
            ],
        )
        self.metrics.collect_profiles(self._serving_samples, self._refused_samples, self._held_samples)

    def _serving_samples(self) -> list[tuple[tuple[str, ...], float]]:
        return self._profile_samples({str(key) for key, _ in self.profiles})

    def _refused_samples(self) -> list[tuple[tuple[str, ...], float]]:
        return self._profile_samples({str(key) for key in self._refused})

    def _profile_samples(self, ones: set[str]) -> list[tuple[tuple[str, ...], float]]:
        """1 for each profile of ``ones``, 0 for every other one serving or claimed."""
        known = {str(key) for key, _ in self.profiles} | {str(key) for key in self.profiles.claimed()} | ones
        return [((key,), 1.0 if key in ones else 0.0) for key in sorted(known)]

    def _held_samples(self) -> list[tuple[tuple[str, ...], float]]:
        """Pending pods whose profile does not serve, by that profile (scheduler_pending_pods' gated)."""
        held: list[tuple[tuple[str, ...], float]] = []
        for pod in self.events.unassigned.values():
            if pod.phase in ("Succeeded", "Failed") or self.profiles.handles(pod):
                continue
            key = self.profiles.key_for_pod(pod)
            if key is not None and self.profiles.held_reason(pod) is not None:
                held.append(((str(key),), 1.0))
        return sm.count_by(values for values, _ in held)

    # -- profiles --------------------------------------------------------------------------
    def _make_handle(self, key: ProfileKey) -> FrameworkHandle:
        home = self.profiles.home_namespace
        tenant = None if key.namespace == home else key.namespace
        api = self.backend.api
        if tenant is not None:
            api = ScopedClusterAPI(api, namespace=tenant, profile=str(key), objects=self.backend.objects)
        return FrameworkHandle(
            str(key),
            tenant_namespace=tenant,
            spawn=self._spawn,
            activate=self.queue.activate,
            snapshot=self.cache.update_snapshot,
            api=api,
            nominator=self.queue.nominator,
            objects=self.backend.objects,
            lookup=self.backend.lookup,
            objects_version=self.backend.objects_version,
            shared=self._shared,
            # Permit timeouts on the fake clock when run_until_idle advances it (simulate).
            waiting_pods=WaitingPods(self.clock if _advancer(self.clock) is not None else None),
            metrics=self.metrics,
        )

    def _profile_of(self, pod: PodInfo) -> str | None:
        return self.profiles.profile_of(pod)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        """The QueueSort plugin's order, fenced: a ``less`` that raises answers with the FIFO
        order for that pair (upstream PrioritySort's tie-break, and the order before any profile
        serves). The heap only ever swaps whole items, so no answer can corrupt it; one that
        raises on every pair makes the queue FIFO, which starves no pod. Logged at ERROR once
        per plugin (it runs O(log n) times per queue operation)."""
        try:
            return self._sort_less(a, b)
        except Exception as exc:
            if self._sort_plugin not in self._sort_failed:
                self._sort_failed.add(self._sort_plugin)
                log.error(
                    "QueueSort plugin %s raised; ordering the queue first-in first-out while it does "
                    "(logged once)", self._sort_plugin, exc_info=exc,
                )  # fmt: skip
            return self._fifo(a, b)

    @staticmethod
    def _fifo(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.timestamp < b.timestamp

    def claim_profile(self, key: ProfileKey, scheduler_name: str, created: str = "") -> None:
        """Profile ``key`` exists and wants ``scheduler_name`` (see ``ProfileSet.claim``)."""
        before = self.profiles.winner(key.namespace, scheduler_name)
        self.profiles.claim(key, scheduler_name, created)
        if self.profiles.winner(key.namespace, scheduler_name) != before:
            self._profile_changed(key, scheduler_name, None, None)

    def apply_profile(self, key: ProfileKey, spec: SchedulerProfileSpec, *, created: str | None = None) -> Framework:
        """Validate and serve ``spec``; the last good framework keeps serving on error.

        A profile that never served and fails holds its pods, with the reason."""
        if created is not None:
            self.claim_profile(key, spec.scheduler_name, created)
        began = self.metrics.timer()
        try:
            fwk = self.profiles.build(key, spec)
            old = self.profiles.install(key, fwk, spec)
        except ProfileError as error:
            self._refused.add(key)
            self.hold_profile(key, spec.scheduler_name, self._created(key) if created is None else created, str(error))
            self.metrics.profile_reloaded(sm.RELOAD_INVALID, self.metrics.timer() - began)
            raise
        self._refused.discard(key)
        self._profile_changed(key, fwk.scheduler_name, fwk, old)
        self.metrics.profile_reloaded(sm.RELOAD_SUCCESS, self.metrics.timer() - began)
        if key.namespace == self.profiles.home_namespace:
            for tenant, broken, _ in self.profiles.recheck_tenants(fwk.scheduler_name):
                self._profile_changed(tenant, broken.scheduler_name, None, broken)
        return fwk

    def hold_profile(self, key: ProfileKey, scheduler_name: str, created: str, reason: str) -> None:
        """Profile ``key`` exists but does not build: unless a last good framework of it serves,
        it claims ``scheduler_name`` and its pods wait, told ``reason``."""
        if self.profiles.get(key) is not None:
            return
        self.profiles.claim(key, scheduler_name, created)
        self.profiles.set_problem(key, reason)
        self._profile_changed(key, scheduler_name, None, None)

    def _created(self, key: ProfileKey) -> str:
        claim = self.profiles.claim_of(key)
        return claim.created if claim is not None else ""

    def delete_profile(self, key: ProfileKey) -> None:
        self._refused.discard(key)
        claim = self.profiles.claim_of(key)
        old = self.profiles.delete(key)
        names = {f.scheduler_name for f in (old,) if f is not None} | ({claim.scheduler_name} if claim else set())
        for name in names:
            self._profile_changed(key, name, None, old)
            if key.namespace == self.profiles.home_namespace:  # the policy is now the default one
                for tenant, broken, _ in self.profiles.recheck_tenants(name):
                    self._profile_changed(tenant, broken.scheduler_name, None, broken)

    def _profile_changed(
        self, key: ProfileKey, scheduler_name: str, new: Framework | None, old: Framework | None
    ) -> None:
        if new is not None:
            # One QueueSort per scheduler (checked when profiles are built).
            self._sort_less = new.queue_sort_plugin.less
            self._sort_plugin = new.queue_sort_plugin.name
            self.queue.set_less(self._less)
            self.queue.set_profile(str(key), pre_enqueue=new.pre_enqueue_plugins, hints=new.enqueue_extensions)
        if old is not None:
            self._close_extenders(old)
            # Pods held at Permit by the old framework go back to the queue.
            for waiting in old.handle.waiting_pods:
                waiting.reject("", "the scheduling profile was reloaded")
            if new is None:
                self.queue.remove_profile(str(key))
        names = {scheduler_name} | {f.scheduler_name for f in (new, old) if f is not None}
        tenant = key.namespace != self.profiles.home_namespace

        def affected(pod: PodInfo) -> bool:
            # Only the pods this profile serves, served or might serve: a change costs in
            # proportion to its own pods, not to every pending pod of the cluster.
            return pod.scheduler_name in names and (not tenant or pod.namespace == key.namespace)

        # Upstream raises UnschedulablePodAdd only under its GangScheduling gate (eventhandlers.go
        # addPodToSchedulingQueue), the gate that enables the GangScheduling plugin: here when a
        # served profile enables a gang plugin (a new member may complete a gang). Other
        # plugins' Pod/Add registrations do not raise it: with them alone, upstream's default
        # never runs hints on an unscheduled pod's creation (each creation ran every hint over
        # the whole unschedulable pool: EventHandlingPodAdd's quadratic term).
        self.events.unscheduled_pod_add = any(_registers_unscheduled_pod_add(f) for _, f in self.profiles)
        # Pods may now belong to another profile (or to none): re-sort the affected pending ones.
        for pod in list(self.events.unassigned.values()):
            if affected(pod):
                self.events.sort_pending(pod)
        self.queue.move_all_to_active_or_backoff(ev.FORCE_ACTIVATE, None, None, pre_check=affected)
        self._wakeup.set()

    def _close_extenders(self, old: Framework) -> None:
        """The replaced profile's extender connections close once its binding cycles let go."""
        if old.handle.extenders:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return  # no loop ever ran a call: nothing is open
            for extender in old.handle.extenders:
                self._spawn(extender.close())

    # -- the loop ------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Schedule until ``stop`` is set (the operator's loop), flushing the pods left in the
        unschedulable pool every 30 s meanwhile (upstream ``PriorityQueue.Run``)."""
        stopper = asyncio.ensure_future(stop.wait())
        flusher = asyncio.ensure_future(self._flush_unschedulable(stop))
        self.events.report_held()
        try:
            while not stop.is_set():
                self.last_turn = self.clock.now()
                qpi = self.queue.pop()  # a pod is waiting: no task and no wait for it (one per cycle)
                if qpi is None:
                    popper = asyncio.ensure_future(self.queue.wait_pop())
                    done, _ = await asyncio.wait({popper, stopper}, return_when=asyncio.FIRST_COMPLETED)
                    if popper not in done:
                        popper.cancel()
                        break
                    qpi = popper.result()
                if qpi is not None and not self._to_lane(qpi):
                    await self.schedule_one(qpi)
                    await asyncio.sleep(0)  # let events and binding cycles in
        finally:
            for lane in list(self._lanes.values()):
                lane.cancel()
            await asyncio.gather(*self._lanes.values(), return_exceptions=True)
            self.events.stop_reporting()
            stopper.cancel()
            flusher.cancel()
            for _, fwk in self.profiles:
                for extender in fwk.handle.extenders:
                    await extender.close()

    # -- extender lanes (docs/extenders.md) ------------------------------------------------------
    def _to_lane(self, qpi: QueuedPodInfo) -> bool:
        """Hand a pod whose profile calls extenders to that profile's lane (True), so the serial
        loop goes on with the next pod while the calls are in flight. A lane runs its profile's
        cycles one at a time, in the order the queue popped them."""
        fwk = self.profiles.for_pod(qpi.pod_info)
        if fwk is None or not fwk.handle.extenders:
            return False
        lane = self._lane_pods.setdefault(fwk.profile_name, deque())
        lane.append(qpi)
        if fwk.profile_name not in self._lanes:
            self._lanes[fwk.profile_name] = asyncio.ensure_future(self._run_lane(fwk.profile_name, lane))
        return True

    async def _run_lane(self, name: str, lane: deque[QueuedPodInfo]) -> None:
        try:
            while lane:
                qpi = lane.popleft()
                current = self.events.unassigned.get(qpi.pod_info.uid)
                if current is None or current.node_name:
                    self.queue.done(qpi.pod_info.uid)  # deleted or bound while it waited in the lane
                    continue
                qpi.pod_info = current
                self.last_turn = self.clock.now()
                await self.schedule_one(qpi)
                await asyncio.sleep(0)
        finally:
            for left in lane:  # cancelled (the loop stopped): out of flight, as any popped pod
                self.queue.done(left.pod_info.uid)
            lane.clear()
            self._lanes.pop(name, None)
            self._lane_pods.pop(name, None)

    async def _flush_unschedulable(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.sleep(UNSCHEDULABLE_FLUSH_PERIOD)
            self.queue.flush_unschedulable_leftover()

    async def run_until_idle(self, *, max_attempts_per_pod: int = 20) -> None:
        """Schedule until nothing is left to try (``simulate``, benchmarks, tests).

        Backoff waits and Permit timeouts are jumped over when the clock can be advanced (a
        FakeClock): when every binding cycle in flight is a pod held at Permit, the clock moves
        to the next timeout or backoff completion. A pod is tried at most
        ``max_attempts_per_pod`` times per call: then one that plugins rejected (a gang
        thrashing for room) is parked with the unschedulable pods, where their events may
        try it again; one failing with errors is dropped from the queue.
        """
        self.events.report_held()
        attempts: dict[str, int] = {}  # this run's attempts per pod
        while True:
            qpi = self.queue.pop()
            if qpi is not None:
                uid = qpi.pod_info.uid
                attempts[uid] = attempts.get(uid, 0) + 1
                if attempts[uid] > max_attempts_per_pod:
                    rejectors = self._last_rejectors.get(uid)
                    if rejectors:
                        # Rejected each time (a gang thrashing for room): park it with the
                        # unschedulable pods, where its rejectors' events may try it again.
                        qpi.unschedulable_plugins = set(rejectors)
                        self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle())
                    else:
                        self.queue.delete(qpi.pod_info)
                        self.queue.done(qpi.pod_info.uid)
                    continue
                await self.schedule_one(qpi)
                # Let the binding cycle just started run now, as a concurrent binder would.
                await asyncio.sleep(0)
                continue
            advance = _advancer(self.clock)
            binding = self._binding.tasks
            if (binding or self._background) and (advance is None or not self._all_wait_at_permit()):
                await asyncio.wait(binding | self._background, return_when=asyncio.FIRST_COMPLETED)
                continue
            wake = _earliest(self.queue.next_wakeup(), self._permit_deadline())
            if wake is None or advance is None:
                return
            advance(wake)
            for _, fwk in self.profiles:
                fwk.handle.waiting_pods.expire(self.clock.now())
            self.queue.flush_backoff_completed()
            await asyncio.sleep(0)  # let the binding cycles of pods that timed out finish

    def _all_wait_at_permit(self) -> bool:
        """Every binding cycle in flight is a pod held at Permit (a gang waiting for members)."""
        held = sum(w.holding() for _, fwk in self.profiles for w in fwk.handle.waiting_pods)
        return not self._background and held >= len(self._binding)

    def _permit_deadline(self) -> float | None:
        return _earliest(*(fwk.handle.waiting_pods.next_deadline() for _, fwk in self.profiles))

    async def schedule_one(self, qpi: QueuedPodInfo) -> None:
        """One scheduling cycle, fenced: whatever a plugin raises fails only this pod's cycle
        (:mod:`scheduler_core.framework.faults`).

        Its extender steps (:mod:`scheduler_core.extender.cycle`) run only for a profile that
        calls extenders (on that profile's lane, in ``run``); for any other profile nothing in
        the cycle suspends, so awaiting it runs it to its end as one step of the loop, and the cache's
        NodeInfos serve as its snapshot without copying."""
        fwk = self._begin_cycle(qpi)
        if fwk is None:
            return
        if log.isEnabledFor(logging.DEBUG):  # upstream logs it at V(3) (schedule_one.go ScheduleOne)
            pod = qpi.pod_info
            log.debug("Attempting to schedule pod %s", pod.key, extra={"pod": pod.key, "profile": fwk.profile_name})
        try:
            await self._scheduling_cycle(fwk, qpi)
        except Exception as exc:
            self._plugin_raised(fwk, qpi, exc)

    async def _scheduling_cycle(self, fwk: Framework, qpi: QueuedPodInfo) -> None:
        pod = qpi.pod_info
        state = self._cycle_state()
        extenders = fwk.handle.extenders
        nominated, nominated_node = self._nominated(pod), self._nominated_node(pod)
        explain = self.explain or fwk.annotate
        try:
            if extenders:
                result = await extender_cycle.schedule_pod(
                    self.algorithm, fwk, state, pod, self.cache.update_snapshot, extenders,
                    nominated=nominated, nominated_node=nominated_node, explain=explain,
                )  # fmt: skip
            else:
                result = self.algorithm.schedule_pod(
                    fwk, state, pod, self.cache.update_snapshot(),
                    nominated=nominated, nominated_node=nominated_node, explain=explain,
                )  # fmt: skip
        except (FitError, ScheduleError) as err:
            await self._algorithm_failed(fwk, state, qpi, err)  # PostFilter runs here, inside the fence
            return
        self._algorithm_ended(pod.uid)
        if extenders:
            fresh = self._after_extenders(fwk, state, qpi, result)
            if fresh is None:
                return
            state = fresh
        self._assume_and_bind(fwk, state, qpi, result)

    def _algorithm_ended(self, uid: str) -> None:
        """schedule_one.go ``schedulingAlgorithm``'s deferred SchedulingAlgorithmLatency: from
        the attempt's start, PostFilter included, success or not."""
        began = self._attempt_started.get(uid)
        if began is not None:
            self.metrics.algorithm(self.metrics.timer() - began)

    def _after_extenders(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: ScheduleResult
    ) -> CycleState | None:
        """The cycle state Reserve reads once the extenders answered, or None when the attempt
        ends here (its failure handled). Other cycles ran while the extenders answered (the
        extender lanes, the serial loop), so the host chosen on the snapshot of the cycle's
        start may be full now: PreFilter and Filter again on the current cache for that host."""
        pod = qpi.pod_info
        current = self.events.unassigned.get(pod.uid)
        if current is None or current.node_name or current.deletion_timestamp:
            self.queue.done(pod.uid)  # deleted or bound elsewhere while the extenders answered
            self._attempt_started.pop(pod.uid, None)
            return None
        fresh = self._cycle_state()
        status = self._still_fits(fwk, fresh, pod, result.suggested_host)
        if status is not None:
            self._failure(fwk, qpi, status, None, result, CLEAR_NOMINATION)
            return None
        fresh.pods_to_activate.update(state.pods_to_activate)
        return fresh

    def _still_fits(self, fwk: Framework, state: CycleState, pod: PodInfo, host: str) -> Status | None:
        """None when ``pod`` still passes PreFilter and Filter on ``host`` in the current cache
        (with the pods nominated there counted), else the Error status that requeues it."""
        snapshot = self.cache.update_snapshot()
        info = snapshot.get(host)
        why: Status | None = None
        if info is None:
            why = Status.unresolvable("node(s) were deleted")
        else:
            pre = fwk.run_pre_filter(state, pod, snapshot.list())
            if pre.status is not None and pre.status.code is not Code.SUCCESS:
                why = pre.status
            elif pre.result is not None and pre.result.node_names is not None and host not in pre.result.node_names:
                why = Status.unresolvable(
                    f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(pre.plugins_with_nodes))}]"
                )
            else:
                why = fwk.run_filter_with_nominated_pods(state, pod, info, self._nominated(pod).get(host, ()))
        if why is None:
            return None
        return Status(
            Code.ERROR,
            f"node {host} no longer fits the pod after the extenders answered ({why.message()}); retrying",
            plugin=why.plugin,
        )

    def _begin_cycle(self, qpi: QueuedPodInfo) -> Framework | None:
        pod = qpi.pod_info
        fwk = self.profiles.for_pod(pod)
        if fwk is None or pod.deletion_timestamp or self.cache.is_assumed_pod(pod):
            self.queue.done(pod.uid)
            return None
        self.attempt_count += 1
        self._attempt_started[pod.uid] = self.metrics.timer()
        return fwk

    def _cycle_state(self) -> CycleState:
        state = CycleState()
        state.record_plugin_metrics = self.metrics.sample_cycle()
        return state

    def _attempt_ended(self, uid: str, result: str, fwk: Framework) -> None:
        """Upstream ``metrics.PodScheduled``/``PodUnschedulable``/``PodScheduleError``."""
        began = self._attempt_started.pop(uid, None)
        if began is not None:
            self.metrics.attempt(result, fwk.profile_name, self.metrics.timer() - began)

    @staticmethod
    def _post_filter_statuses(err: FitError) -> NodeToStatus:
        statuses = NodeToStatus(err.diagnosis.node_to_status)
        statuses.absent_status = err.diagnosis.absent_status or Status.unresolvable()
        return statuses

    async def _algorithm_failed(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, err: FitError | ScheduleError
    ) -> None:
        """Upstream ``schedulingCycle`` after ``SchedulePod`` failed: PostFilter on a FitError,
        then ``handleSchedulingFailure``."""
        pod = qpi.pod_info
        if isinstance(err, FitError):
            nominated_node: str | None = CLEAR_NOMINATION  # upstream: no PostFilter plugins
            if fwk.post_filter_plugins:
                nominated_node = None
                post, post_status = await fwk.run_post_filter(state, pod, self._post_filter_statuses(err))
                if post_status.reasons:
                    err.diagnosis.post_filter_msg = post_status.message()
                if post is not None:
                    nominated_node = post.nominated_node_name  # "" clears an earlier nomination
            qpi.unschedulable_plugins = set(err.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(err.diagnosis.pending_plugins)
            self._algorithm_ended(pod.uid)  # PostFilter included, as upstream's defer
            self._failure(fwk, qpi, Status(Code.UNSCHEDULABLE, str(err)), err.diagnosis, None, nominated_node)
            return
        self._algorithm_ended(pod.uid)
        code = err.status.code
        if code is Code.UNSCHEDULABLE:  # no nodes at all
            qpi.unschedulable_plugins = set()
        self._failure(fwk, qpi, err.status, None, None, CLEAR_NOMINATION)

    def _assume_and_bind(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: ScheduleResult) -> None:
        pod = qpi.pod_info
        host = result.suggested_host
        assumed = pod.with_node(host)
        try:
            self.cache.assume_pod(assumed)
        except Exception as exc:
            self._failure(fwk, qpi, Status.as_error(exc), None, result, CLEAR_NOMINATION)
            return
        # Placed now: its nomination no longer holds room (upstream ``assume``).
        self.queue.nominator.delete_nominated_pod_if_exists(pod)
        try:
            status: Status | None = fwk.run_reserve(state, assumed, host)
            if status is None:
                status = fwk.run_permit(state, assumed, host)
                if status is not None and status.code is Code.WAIT:
                    status = None
            if status is None:
                if state.pods_to_activate:
                    self.queue.activate(cast(Iterable[PodInfo], state.pods_to_activate.values()))
                if fwk.annotate:  # the Bind plugin hands them to ClusterAPI.bind: one write
                    state.binding_annotations = {explanation.ANNOTATION: explanation.summarize(result)}
        except Exception as exc:
            status = raised(fwk, exc, f"reserve/permit of {pod.key}")
        if status is not None:
            # Nothing of this attempt stays: not the Permit wait, not the reservations, not
            # the assumed pod (upstream's Unreserve then ForgetPod).
            fwk.handle.waiting_pods.remove(assumed.uid)
            unreserve(fwk, state, assumed, host)
            self.cache.forget_pod(assumed)
            self._cycle_rejected(fwk, qpi, status, host, result)
            return
        self._binding.start(fwk, state, qpi, assumed, result)

    def _plugin_raised(self, fwk: Framework, qpi: QueuedPodInfo, exc: Exception) -> None:
        """A plugin raised instead of returning a Status: upstream's SchedulerError for this pod
        (requeued with backoff), never the end of the loop (``handleSchedulingFailure``)."""
        status = raised(fwk, exc, f"scheduling cycle of {qpi.pod_info.key}")
        try:
            self._failure(fwk, qpi, status, None, None, CLEAR_NOMINATION)
        except Exception:
            # Reporting failed too (a backend's bug): the pod leaves the in-flight set at least;
            # the next event or the periodic flush brings it back.
            log.exception("handling the failure of %s failed", qpi.pod_info.key)
            self.queue.done(qpi.pod_info.uid)

    def _nominated(self, pod: PodInfo) -> NominatedGhosts:
        """The pods nominated to each node that ``pod``'s Filter must count as placed there
        (upstream ``addGETNominatedPods``), resolved per node as the cycle asks."""
        return self.queue.nominator.ghosts_for(pod)

    def _nominated_node(self, pod: PodInfo) -> str:
        """Where ``pod`` was nominated (upstream reads ``status.nominatedNodeName``, which the
        scheduler's own record anticipates until the status patch comes back on the watch)."""
        return self.queue.nominator.nominated_node_for(pod.uid) or pod.nominated_node_name

    def _cycle_rejected(
        self, fwk: Framework, qpi: QueuedPodInfo, status: Status, host: str, result: ScheduleResult | None
    ) -> None:
        """A Reserve/Permit/PreBind rejection is a FitError over the one chosen node; any failure
        after a node was chosen ends the pod's nomination (upstream ``prepareForBindingCycle``
        and ``handleBindingCycleError`` pass ``clearNominatedNode``)."""
        if status.is_rejected():
            diagnosis = Diagnosis(node_to_status={host: status})
            diagnosis.add_plugin_status(status)
            qpi.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(diagnosis.pending_plugins)
            message = str(FitError(qpi.pod_info, 1, diagnosis))
            failed = Status(status.code, message, plugin=status.plugin)
            self._failure(fwk, qpi, failed, diagnosis, result, CLEAR_NOMINATION)
        else:
            self._failure(fwk, qpi, status, None, result, CLEAR_NOMINATION)

    def _bound(self, fwk: Framework, qpi: QueuedPodInfo, assumed: PodInfo, result: ScheduleResult) -> None:
        """The binding cycle bound ``assumed``: the attempt ends scheduled."""
        self.events.unassigned.pop(assumed.uid, None)
        self._last_rejectors.pop(assumed.uid, None)
        self.scheduled_count += 1
        # schedule_one.go bindingCycle: the attempt, its count and the SLI from the first entry in activeQ.
        self._attempt_ended(assumed.uid, sm.SCHEDULED, fwk)
        first = qpi.initial_attempt_timestamp
        self.metrics.scheduled(qpi.attempts, None if first is None else self.clock.now() - first)
        # schedule_one.go: PodScheduledAfterFlush (the queue's QueuedPod carries the flag).
        if isinstance(qpi, QueuedPod) and qpi.was_flushed_from_unschedulable:
            self.metrics.scheduled_after_flush.inc()
        if self.observer is not None:
            host = result.suggested_host
            self.observer.attempt(
                assumed,
                fwk,
                status="Scheduled",
                node=host,
                message=f"Successfully assigned {assumed.namespace}/{assumed.name} to {host}",
                result=result,
                diagnosis=result.diagnosis,
            )

    def _failure(
        self,
        fwk: Framework,
        qpi: QueuedPodInfo,
        status: Status,
        diagnosis: Diagnosis | None,
        result: ScheduleResult | None,
        nominated_node: str | None,
    ) -> None:
        """Upstream ``handleSchedulingFailure``: requeue, then condition and event."""
        pod = qpi.pod_info
        reason = REASON_UNSCHEDULABLE if status.is_rejected() else REASON_SCHEDULER_ERROR
        self._attempt_ended(pod.uid, sm.UNSCHEDULABLE if reason == REASON_UNSCHEDULABLE else sm.ERROR, fwk)
        message = status.message()
        if reason == REASON_SCHEDULER_ERROR:
            log.warning(
                "error scheduling pod %s; retrying: %s", pod.key, message,
                extra={"pod": pod.key, "uid": pod.uid, "profile": fwk.profile_name},
            )  # fmt: skip
        if qpi.unschedulable_plugins:
            self._last_rejectors[pod.uid] = set(qpi.unschedulable_plugins)
        current = self.events.unassigned.get(pod.uid)
        if current is not None and not current.node_name:
            qpi.pod_info = current
            self.queue.add_unschedulable_if_not_present(qpi, self.queue.scheduling_cycle())
        self.queue.done(pod.uid)
        if nominated_node is not None:
            self.queue.nominator.add_nominated_pod(qpi.pod_info, nominated_node)
        if self.observer is not None:
            self.observer.attempt(
                pod,
                fwk,
                status="Unschedulable" if status.is_rejected() else "Error",
                node=None,
                message=message,
                result=result,
                diagnosis=diagnosis,
            )
        self.backend.report_failure(pod, reason, truncate_message(message), nominated_node)

    def pending_binding(self) -> int:
        return len(self._binding)


_GANG_PLUGINS = frozenset({GANG_SCHEDULING, COSCHEDULING})


def _nothing(uid: str) -> None:
    """No backend state to let go of (the simulator's)."""


def _registers_unscheduled_pod_add(fwk: Framework) -> bool:
    return any(
        h.event.resource is ev.EventResource.POD and h.event.action & ev.ActionType.ADD
        for plugin, hints in fwk.enqueue_extensions.items()
        if plugin in _GANG_PLUGINS and hasattr(fwk.plugins.get(plugin), "events_to_register")
        for h in hints
    )


def _advancer(clock: Clock) -> Callable[[float], None] | None:
    """The clock's ``set`` when it can be moved forward (a FakeClock), else None."""
    return clock.set if isinstance(clock, SettableClock) else None


def _earliest(*times: float | None) -> float | None:
    return min((t for t in times if t is not None), default=None)
