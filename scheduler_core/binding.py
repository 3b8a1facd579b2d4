"""The binding cycle: from an approved Permit to the pod bound (or handed back), off the loop.

Upstream: ``pkg/scheduler/schedule_one.go`` (``bindingCycle``, ``bind``, ``extendersBinding``,
``handleBindingCycleError``), v1.36.3. The scheduling cycle (:mod:`scheduler_core.scheduler`)
assumes the pod on its host, runs Reserve and Permit, and hands the pod here; each binding cycle
is then an asyncio task, so the loop goes on with the next pod while binders talk to the API.
A cycle runs on the framework it started with, even when its profile is reloaded meanwhile.

In order: PreBind's pre-flight (and the pod's ``status.nominatedNodeName`` when PreBind or
Permit has work to do), wait at Permit, PreBind, then Bind (an interested binder extender first,
else the Bind plugins), then PostBind, which is informational. Any failure unreserves, forgets the assumed
pod (its room is free again, an ``AssignedPodDelete`` for the queue) and hands the attempt back
to the scheduler (``failed``: upstream's ``handleSchedulingFailure``); what a plugin raises fails
only that pod's cycle (:mod:`scheduler_core.framework.faults`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from scheduler_core.algorithm import ScheduleResult
from scheduler_core.cache import Cache, CacheError
from scheduler_core.extender import cycle as extender_cycle
from scheduler_core.framework import Code, CycleState, PodInfo, QueuedPodInfo, Status, writes
from scheduler_core.framework import events as ev
from scheduler_core.framework.faults import raised_status
from scheduler_core.queue import SchedulingQueue
from scheduler_core.runtime.framework import Framework

if TYPE_CHECKING:
    from scheduler_core.scheduler import Backend

log = logging.getLogger(__name__)


@runtime_checkable
class ExtenderBindings(Protocol):
    """Optional on a backend that has no watch of its own (the simulator): told of each binding
    an HTTP extender made, which the operator learns of from the pod watch instead."""

    async def bound_by_extender(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None) -> None: ...


# What the binding cycle tells the scheduler of a pod it bound, before its Scheduled event and
# PostBind (``Scheduler._bound``: the attempt's metrics and explanation), and of one it could not
# bind, with the status and host (``Scheduler._cycle_rejected``: upstream handleSchedulingFailure).
Bound = Callable[[Framework, QueuedPodInfo, PodInfo, ScheduleResult], None]
Failed = Callable[[Framework, QueuedPodInfo, Status, str, ScheduleResult | None], None]


def raised(fwk: Framework, exc: Exception, what: str) -> Status:
    """Log what a plugin (or our code) raised while running ``what``; its Error status."""
    log.error("%s failed", what, exc_info=exc)
    return raised_status(exc, fwk.plugins.values())


def unreserve(fwk: Framework, state: CycleState, pod: PodInfo, host: str) -> None:
    """Unreserve, fenced: it rolls an attempt back, so a raising plugin is logged only."""
    try:
        fwk.run_unreserve(state, pod, host)
    except Exception as exc:
        raised(fwk, exc, f"unreserve of {pod.key}")


class BindingCycles:
    """The binding cycles in flight (``tasks``), each started by :meth:`start`."""

    def __init__(
        self,
        *,
        cache: Cache,
        queue: SchedulingQueue,
        backend: Backend,
        bound: Bound,
        failed: Failed,
    ) -> None:
        """``backend`` reports each pod scheduled, and is told of extenders' bindings when it
        is :class:`ExtenderBindings`; ``bound``/``failed``: the scheduler's bookkeeping of the
        attempt's outcome."""
        self.tasks: set[asyncio.Task[None]] = set()
        self._cache = cache
        self._queue = queue
        self._backend = backend
        self._bound = bound
        self._failed = failed

    def __len__(self) -> int:
        return len(self.tasks)

    def start(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, assumed: PodInfo, result: ScheduleResult
    ) -> None:
        task = asyncio.ensure_future(self._cycle(fwk, state, qpi, assumed, result))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _cycle(
        self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, assumed: PodInfo, result: ScheduleResult
    ) -> None:
        host = result.suggested_host
        try:
            status = await self._expect(fwk, state, assumed, host)
            if status is None:
                status = await fwk.wait_on_permit(assumed)
            if status is None:
                self._queue.done(assumed.uid)
                status = await fwk.run_pre_bind(state, assumed, host)
            if status is None:
                status = await self._bind(fwk, state, assumed, host)
        except Exception as exc:  # a plugin raising must not lose the pod
            status = raised(fwk, exc, f"binding cycle of {assumed.key}")
        if status is not None:
            # A failure before Permit's wait (the pre-flight's) leaves the pod held there.
            fwk.handle.waiting_pods.remove(assumed.uid)
            unreserve(fwk, state, assumed, host)
            try:
                self._cache.forget_pod(assumed)
            except CacheError as error:
                # The watch already confirmed the pod (bound by another scheduler meanwhile):
                # upstream logs "scheduler cache ForgetPod failed" (schedule_one.go
                # handleBindingCycleError) and goes on.
                log.error("scheduler cache ForgetPod failed: %s", error)
            except Exception:
                log.exception("forget of %s failed", assumed.key)
            else:
                self._queue.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, assumed, None)
            self._failed(fwk, qpi, status, host, result)
            return
        self._bound(fwk, qpi, assumed, result)
        try:
            self._backend.report_scheduled(assumed, host)
            await fwk.run_post_bind(state, assumed, host)
        except Exception as exc:  # the pod is bound: PostBind is informational (upstream)
            raised(fwk, exc, f"post-bind of {assumed.key}")

    async def _expect(self, fwk: Framework, state: CycleState, assumed: PodInfo, host: str) -> Status | None:
        """Upstream ``bindingCycle`` with NominatedNodeNameForExpectation (beta and on by
        default since v1.35, ``pkg/features/kube_features.go``): when PreBind has work for the
        pod (``run_pre_bind_pre_flights``) or Permit holds it, ``status.nominatedNodeName``
        says where it is going before that work starts (for the cluster autoscaler), unless it
        says so already. A failed write is logged and the cycle goes on; a failed pre-flight
        fails the cycle."""
        pre_flight = fwk.run_pre_bind_pre_flights(state, assumed, host)
        if pre_flight is not None and (pre_flight.code is Code.ERROR or pre_flight.is_rejected()):
            return pre_flight
        if (pre_flight is None or fwk.will_wait_on_permit(assumed)) and assumed.nominated_node_name != host:
            try:
                error = await writes.patch_pod_status(self._backend.api, assumed, {"nominatedNodeName": host})
                why = error.message() if error is not None else None
            except Exception as exc:  # not critical enough to stop the binding cycle (upstream)
                why = repr(exc)
            if why is not None:
                log.error(
                    "Failed to update the nominated node name in the binding cycle: pod %s, nominatedNodeName %s: %s",
                    assumed.key, host, why,
                    extra={"pod": assumed.key, "uid": assumed.uid, "node": host, "profile": fwk.profile_name},
                )  # fmt: skip
        return None

    async def _bind(self, fwk: Framework, state: CycleState, assumed: PodInfo, host: str) -> Status | None:
        """Upstream ``bind``: an interested binder extender first, else the Bind plugins."""
        if fwk.handle.extenders:
            by_extender, status = await extender_cycle.bind(fwk.handle.extenders, assumed, host)
            if by_extender:
                if status is None and isinstance(self._backend, ExtenderBindings):
                    await self._backend.bound_by_extender(assumed, host, state.binding_annotations)
                return status
        return await fwk.run_bind(state, assumed, host)
