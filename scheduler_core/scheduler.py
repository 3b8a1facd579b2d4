"""The scheduler loop: serial scheduling cycles, concurrent binding cycles.

Upstream: ``pkg/scheduler/schedule_one.go`` (``ScheduleOne``, ``schedulingCycle``,
``bindingCycle``, ``handleSchedulingFailure``) and ``eventhandlers.go``.

A backend (the in-memory simulator, or the Kopf operator over the API server) feeds
cluster events in (``on_node_*``, ``on_pod_*``) and profile changes (``apply_profile``),
and carries decisions out (``Backend``: bind through the Handle's API, report failures
and placements). No scheduling logic lives in a backend.

The scheduling cycle is synchronous: nothing else runs on the event loop while a pod is
placed, so the cache's NodeInfos serve as the cycle's snapshot without copying. Binding
cycles are asyncio tasks; they finish on the framework they started with even when a
profile is reloaded meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol, cast

from scheduler_core.cache import Cache, CacheError
from scheduler_core.clock import Clock, RealClock
from scheduler_core.config import PluginSet, SchedulerProfileSpec
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
from scheduler_core.profiles import ProfileKey, ProfileSet
from scheduler_core.queue import SchedulingQueue
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.schedule_one import Algorithm, ScheduleError, ScheduleResult

log = logging.getLogger(__name__)

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"
MAX_MESSAGE_LENGTH = 1024  # upstream truncateMessage


def truncate_message(message: str) -> str:
    if len(message) <= MAX_MESSAGE_LENGTH:
        return message
    suffix = " ..."
    return message[: MAX_MESSAGE_LENGTH - len(suffix)] + suffix


class Backend(Protocol):
    """What a scheduler needs from the world it schedules in."""

    @property
    def api(self) -> ClusterAPI: ...

    def objects(self, kind: str) -> Iterable[Any]: ...

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
    ) -> None:
        self.backend = backend
        self.clock = clock or RealClock()
        self.cache = Cache(self.clock)
        self.queue = SchedulingQueue(self.clock, self._less, pop_from_backoff=pop_from_backoff)
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
        self._unassigned: dict[str, PodInfo] = {}  # every pending pod, ours or not (by uid)
        self._binding: set[asyncio.Task[None]] = set()
        self._background: set[asyncio.Task[None]] = set()  # plugins' work, e.g. evictions
        self._wakeup = asyncio.Event()
        self.scheduled_count = 0
        self.attempt_count = 0

    # -- profiles --------------------------------------------------------------------------
    def _make_handle(self, key: ProfileKey) -> FrameworkHandle:
        home = self.profiles.home_namespace
        return FrameworkHandle(
            str(key),
            tenant_namespace=None if key.namespace == home else key.namespace,
            spawn=self._spawn,
            snapshot=self.cache.update_snapshot,
            api=self.backend.api,
            nominator=self.queue.nominator,
            objects=self.backend.objects,
        )

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self._sort_less(a, b)

    @staticmethod
    def _fifo(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.timestamp < b.timestamp

    def validate_profile(self, key: ProfileKey, spec: SchedulerProfileSpec) -> Framework:
        """Build the framework for ``spec`` without serving it (raises ProfileError)."""
        return self.profiles.build(key, spec)

    def apply_profile(self, key: ProfileKey, spec: SchedulerProfileSpec) -> Framework:
        """Validate and serve ``spec``; the last good framework keeps serving on error."""
        fwk = self.profiles.build(key, spec)
        old = self.profiles.install(key, fwk)
        self._profile_changed(fwk, old)
        return fwk

    def delete_profile(self, key: ProfileKey) -> None:
        old = self.profiles.remove(key)
        if old is not None:
            self._profile_changed(None, old)

    def _profile_changed(self, new: Framework | None, old: Framework | None) -> None:
        if new is not None:
            # One QueueSort per scheduler (checked when profiles are built).
            self._sort_less = new.queue_sort_plugin.less
            self.queue.set_less(self._less)
            self.queue.set_profile(
                new.scheduler_name,
                pre_enqueue=new.pre_enqueue_plugins,
                hints=new.enqueue_extensions(),
            )
        if old is not None:
            # Pods held at Permit by the old framework go back to the queue.
            for waiting in old.handle.waiting_pods:
                waiting.reject("", "the scheduling profile was reloaded")
            if new is None and not any(f.scheduler_name == old.scheduler_name for _, f in self.profiles):
                self.queue.remove_profile(old.scheduler_name)
        # Pods may now belong to another profile (or to none): re-sort the pending ones.
        for pod in list(self._unassigned.values()):
            handled = self.profiles.handles(pod)
            queued = self.queue.contains(pod)
            if handled and not queued:
                self.queue.add(pod)
            elif not handled and queued:
                self.queue.delete(pod)
        self.queue.move_all_to_active_or_backoff(ev.FORCE_ACTIVATE, None, None)
        self._wakeup.set()

    # -- cluster events ----------------------------------------------------------------------
    # Upstream logs cache inconsistencies (a delete for a pod already removed, an unknown
    # node) and goes on; an event handler must never take the scheduler down.
    def _cache_call(self, operation: Callable[..., Any], *args: Any) -> bool:
        try:
            operation(*args)
        except CacheError as exc:
            log.error("scheduler cache: %s", exc)
            return False
        return True

    def on_node_add(self, node: Mapping[str, Any]) -> None:
        self._cache_call(self.cache.add_node, node)
        self.queue.move_all_to_active_or_backoff(ev.NODE_ADD, None, node)

    def on_node_update(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        self._cache_call(self.cache.update_node, old, new)
        for event in node_change_events(old, new):
            self.queue.move_all_to_active_or_backoff(event, old, new)

    def on_node_delete(self, node: Mapping[str, Any]) -> None:
        name = (node.get("metadata") or {}).get("name", "")
        self._cache_call(self.cache.remove_node, name)
        self.queue.move_all_to_active_or_backoff(ev.NODE_DELETE, node, None)

    def on_pod_add(self, pod: Mapping[str, Any]) -> None:
        info = PodInfo(pod)
        if info.node_name:
            if not _terminal(info):
                self._cache_call(self.cache.add_pod, info)
                self.queue.assigned_pod_added(info)
            return
        self._unassigned[info.uid] = info
        if self.profiles.handles(info) and not _terminal(info):
            self.queue.add(info)

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        uid = (old.get("metadata") or {}).get("uid")
        known = self._unassigned.get(uid) if uid else None
        old_info = known if known is not None and known.pod is old else PodInfo(old)
        new_info = PodInfo(new, like=old_info)
        if old_info.node_name:
            if _terminal(old_info):
                return  # the cache let go of it when it terminated
            if _terminal(new_info):
                self._cache_call(self.cache.remove_pod, old_info)
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, old_info, None)
            else:
                self._cache_call(self.cache.update_pod, old_info, new_info)
                self.queue.assigned_pod_updated(old_info, new_info)
            return
        if new_info.node_name:
            # Bound (by us or by someone else): out of the queue, into the cache.
            self._unassigned.pop(new_info.uid, None)
            self.queue.delete(old_info)
            if not _terminal(new_info):
                self._cache_call(self.cache.add_pod, new_info)
                self.queue.assigned_pod_added(new_info)
            return
        self._unassigned[new_info.uid] = new_info
        if self.cache.is_assumed_pod(new_info):
            return
        if self.profiles.handles(new_info) and not _terminal(new_info):
            self.queue.update(old_info, new_info)
        else:
            self.queue.delete(new_info)

    def on_pod_delete(self, pod: Mapping[str, Any]) -> None:
        info = PodInfo(pod)
        if info.node_name:
            if not _terminal(info):
                self._cache_call(self.cache.remove_pod, info)
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, info, None)
            return
        self._unassigned.pop(info.uid, None)
        self.queue.delete(info)
        for _, fwk in self.profiles:
            waiting = fwk.handle.waiting_pods.get(info.uid)
            if waiting is not None:
                waiting.reject("", "pod was deleted")

    # -- the loop ------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        """Schedule until ``stop`` is set (the operator's loop)."""
        stopper = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                popper = asyncio.ensure_future(self.queue.wait_pop())
                done, _ = await asyncio.wait({popper, stopper}, return_when=asyncio.FIRST_COMPLETED)
                if popper not in done:
                    popper.cancel()
                    break
                qpi = popper.result()
                if qpi is not None:
                    self.schedule_one(qpi)
                    await asyncio.sleep(0)  # let events and binding cycles in
        finally:
            stopper.cancel()

    async def run_until_idle(self, *, max_attempts_per_pod: int = 20) -> None:
        """Schedule until nothing is left to try (``simulate``, benchmarks, tests).

        Backoff waits are jumped over when the clock can be advanced (a FakeClock). A pod
        failing with errors is tried at most ``max_attempts_per_pod`` times.
        """
        while True:
            qpi = self.queue.pop()
            if qpi is not None:
                if qpi.attempts > max_attempts_per_pod:
                    self.queue.delete(qpi.pod_info)
                    self.queue.done(qpi.pod_info.uid)
                    continue
                self.schedule_one(qpi)
                # Let the binding cycle just started run now, as a concurrent binder would.
                await asyncio.sleep(0)
                continue
            if self._binding or self._background:
                await asyncio.wait(self._binding | self._background)
                continue
            wake = self.queue.next_wakeup()
            advance = getattr(self.clock, "set", None)
            if wake is None or advance is None:
                return
            advance(wake)
            self.queue.flush_backoff_completed()

    def schedule_one(self, qpi: QueuedPodInfo) -> None:
        pod = qpi.pod_info
        fwk = self.profiles.for_pod(pod)
        if fwk is None or pod.deletion_timestamp or self.cache.is_assumed_pod(pod):
            self.queue.done(pod.uid)
            return
        self.attempt_count += 1
        state = CycleState()
        snapshot = self.cache.update_snapshot()
        nominated = self._nominated()
        try:
            result = self.algorithm.schedule_pod(fwk, state, pod, snapshot, nominated=nominated, explain=self.explain)
        except FitError as err:
            nominated_node: str | None = None
            if fwk.post_filter_plugins:
                statuses = NodeToStatus(err.diagnosis.node_to_status)
                statuses.absent_status = err.diagnosis.absent_status or Status.unresolvable()
                post, post_status = fwk.run_post_filter(state, pod, statuses)
                if post_status.reasons:
                    err.diagnosis.post_filter_msg = post_status.message()
                if post is not None:
                    nominated_node = post.nominated_node_name  # "" clears an earlier nomination
            qpi.unschedulable_plugins = set(err.diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(err.diagnosis.pending_plugins)
            self._failure(fwk, qpi, Status(Code.UNSCHEDULABLE, str(err)), err.diagnosis, None, nominated_node)
            return
        except ScheduleError as err:
            code = err.status.code
            if code is Code.UNSCHEDULABLE:  # no nodes at all
                qpi.unschedulable_plugins = set()
            self._failure(fwk, qpi, err.status, None, None, None)
            return

        host = result.suggested_host
        assumed = pod.with_node(host)
        try:
            self.cache.assume_pod(assumed)
        except Exception as exc:
            self._failure(fwk, qpi, Status.as_error(exc), None, result, None)
            return
        status: Status | None = fwk.run_reserve(state, assumed, host)
        if status is None:
            status = fwk.run_permit(state, assumed, host)
            if status is not None and status.code is Code.WAIT:
                status = None
            elif status is not None:
                fwk.run_unreserve(state, assumed, host)
                self.cache.forget_pod(assumed)
        else:
            fwk.run_unreserve(state, assumed, host)
            self.cache.forget_pod(assumed)
        if status is not None:
            self._cycle_rejected(fwk, qpi, status, host, result)
            return
        if state.pods_to_activate:
            self.queue.activate(cast(Iterable[PodInfo], state.pods_to_activate.values()))
        task = asyncio.ensure_future(self._binding_cycle(fwk, state, qpi, assumed, result))
        self._binding.add(task)
        task.add_done_callback(self._binding.discard)

    def _nominated(self) -> dict[str, list[PodInfo]]:
        nominator = self.queue.nominator
        nodes = getattr(nominator, "nominated_node_names", None)
        if nodes is None:
            return {}
        return {name: nominator.nominated_pods_for_node(name) for name in nodes()}

    def _cycle_rejected(
        self, fwk: Framework, qpi: QueuedPodInfo, status: Status, host: str, result: ScheduleResult | None
    ) -> None:
        """A Reserve/Permit/PreBind rejection is a FitError over the one chosen node."""
        if status.is_rejected():
            diagnosis = Diagnosis(node_to_status={host: status})
            diagnosis.add_plugin_status(status)
            qpi.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
            qpi.pending_plugins = set(diagnosis.pending_plugins)
            message = str(FitError(qpi.pod_info, 1, diagnosis))
            self._failure(fwk, qpi, Status(status.code, message, plugin=status.plugin), diagnosis, result, None)
        else:
            self._failure(fwk, qpi, status, None, result, None)

    async def _binding_cycle(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, assumed: PodInfo, result: ScheduleResult
    ) -> None:
        host = result.suggested_host
        try:
            status = await fwk.wait_on_permit(assumed)
            if status is None:
                self.queue.done(assumed.uid)
                status = await fwk.run_pre_bind(state, assumed, host)
            if status is None:
                status = await fwk.run_bind(state, assumed, host)
        except Exception as exc:  # a plugin raising must not lose the pod
            log.exception("binding cycle of %s failed", assumed.key)
            status = Status.as_error(exc)
        if status is not None:
            fwk.run_unreserve(state, assumed, host)
            try:
                self.cache.forget_pod(assumed)
            except Exception:
                log.exception("forget of %s failed", assumed.key)
            else:
                self.queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, assumed, None)
            self._cycle_rejected(fwk, qpi, status, host, result)
            return
        self.cache.finish_binding(assumed)
        self._unassigned.pop(assumed.uid, None)
        self.scheduled_count += 1
        if self.observer is not None:
            self.observer.attempt(
                assumed,
                fwk,
                status="Scheduled",
                node=host,
                message=f"Successfully assigned {assumed.namespace}/{assumed.name} to {host}",
                result=result,
                diagnosis=result.diagnosis,
            )
        self.backend.report_scheduled(assumed, host)
        await fwk.run_post_bind(state, assumed, host)

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
        message = status.message()
        if reason == REASON_SCHEDULER_ERROR:
            log.warning("error scheduling pod %s; retrying: %s", pod.key, message)
        current = self._unassigned.get(pod.uid)
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


def _terminal(pod: PodInfo) -> bool:
    return pod.phase in ("Succeeded", "Failed")


def node_change_events(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[ev.ClusterEvent]:
    """Upstream ``NodeSchedulingPropertiesChange`` (``pkg/scheduler/framework/events.go``):
    which node properties changed."""
    if old is None:
        return [ev.NODE_ADD]
    events: list[ev.ClusterEvent] = []
    o_spec, n_spec = old.get("spec") or {}, new.get("spec") or {}
    o_status, n_status = old.get("status") or {}, new.get("status") or {}
    o_meta, n_meta = old.get("metadata") or {}, new.get("metadata") or {}
    node = ev.EventResource.NODE
    if bool(o_spec.get("unschedulable")) != bool(n_spec.get("unschedulable")):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_TAINT, "NodeSpecUnschedulableChange"))
    if (o_status.get("allocatable") or o_status.get("capacity")) != (
        n_status.get("allocatable") or n_status.get("capacity")
    ):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAllocatableChange"))
    if (o_meta.get("labels") or {}) != (n_meta.get("labels") or {}):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_LABEL, "NodeLabelChange"))
    if (o_spec.get("taints") or []) != (n_spec.get("taints") or []):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_TAINT, "NodeTaintChange"))
    if (o_status.get("conditions") or []) != (n_status.get("conditions") or []):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_CONDITION, "NodeConditionChange"))
    if (o_meta.get("annotations") or {}) != (n_meta.get("annotations") or {}):
        events.append(ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_ANNOTATION, "NodeAnnotationChange"))
    # extractNodeFeaturesChange (the NodeDeclaredFeatures gate is on by default in v1.36).
    if (o_status.get("declaredFeatures") or []) != (n_status.get("declaredFeatures") or []):
        events.append(
            ev.ClusterEvent(node, ev.ActionType.UPDATE_NODE_DECLARED_FEATURE, "NodeDeclaredFeatureChange")
        )
    return events
