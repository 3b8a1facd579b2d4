"""The scheduling queue: activeQ, backoffQ, the unschedulable pool, and the nominator.

Upstream: ``pkg/scheduler/backend/queue/scheduling_queue.go`` (``PriorityQueue``), as of the
tree where QueueingHints are GA and SchedulerPopFromBackoffQ is on by default. A pod's life::

    add ─PreEnqueue─► activeQ ─pop─► in flight ─done─► (bound)
     │ gated             ▲              │ add_unschedulable_if_not_present: replay the events
     ▼                   │              │ seen in flight against the rejectors' hints
    unschedulable pool ◄─┼── SKIP ──────┤
     │ event whose hint  │              │ QUEUE, or an Error (no rejector plugins)
     │ says QUEUE,       │              ▼
     │ activate, 5 min ──┼──────────► backoffQ (if still backing off, else activeQ)
     │ in the pool       │              │ backoff over (flush_backoff_completed),
     └───────────────────┘              └─ or popped at once when activeQ is empty

* PreEnqueue runs when a pod enters activeQ, and (with ``pop_from_backoff``) when it enters
  backoffQ instead of when it leaves it. A rejecting plugin *gates* the pod: it goes to the
  unschedulable pool with ``gating_plugin`` recorded; only events registered by that plugin
  (or wildcard events) re-run PreEnqueue for it.
* Backoff counts failures, not attempts: ``unschedulable_count`` for plugin rejections,
  ``consecutive_errors_count`` for Errors (see :mod:`scheduler_core.queue.backoff`).
* A Pending plugin answering QUEUE sends the pod straight to activeQ; the UnschedulableTimeout
  flush (a wildcard event) moves every pod that stayed ``max_in_unschedulable``, Pending ones
  included, through backoff.

Metrics (:mod:`scheduler_core.metrics.scheduler_metrics`): each entry into a sub-queue counts
in ``scheduler_queue_incoming_pods_total`` as upstream's ``active_queue.go``, ``backoff_queue.go``
and ``unschedulable_pods.go`` count it; the pending and unschedulable-by-plugin gauges are
collected from the sub-queues at scrape time.

Simplified against upstream: no pod groups (GenericWorkload) or pod signatures
(OpportunisticBatching); no async API dispatcher; single-threaded, so no locks (``wait_pop``
waits on an asyncio event instead of a condition variable). ``pop`` clears the pod's
rejector plugins for the next attempt, as upstream's activeQ pop did up to v1.33. ``update``
of an unschedulable pod stops at the first event that moves it (upstream keeps evaluating
when the pod went to backoffQ with SchedulerPopFromBackoffQ off).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from scheduler_core.clock import Clock
from scheduler_core.framework import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    PodInfo,
    PodUID,
    PreEnqueuePlugin,
    QueuedPodInfo,
)
from scheduler_core.framework.events import FORCE_ACTIVATE, UNSCHEDULABLE_TIMEOUT
from scheduler_core.metrics import scheduler_metrics as sm
from scheduler_core.metrics.registry import LabelValues
from scheduler_core.queue.active import ActiveQueue
from scheduler_core.queue.backoff import BackoffQueue
from scheduler_core.queue.hints import HintRegistry, QueueingStrategy, hint_objects, is_wildcard
from scheduler_core.queue.nominator import Nominator, PodLookup
from scheduler_core.queue.pod_events import pod_scheduling_properties_change
from scheduler_core.queue.pre_enqueue import PreEnqueueRunner
from scheduler_core.queue.queued import QueuedPod, as_queued_pod, pod_key
from scheduler_core.queue.unschedulable import UnschedulablePods

log = logging.getLogger(__name__)

# Upstream defaults (DefaultPodInitialBackoffDuration, DefaultPodMaxBackoffDuration,
# DefaultPodMaxInUnschedulablePodsDuration) and the periods of PriorityQueue.Run.
DEFAULT_INITIAL_BACKOFF = 1.0
DEFAULT_MAX_BACKOFF = 10.0
DEFAULT_MAX_IN_UNSCHEDULABLE = 300.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0

ACTIVE_Q = "Active"
BACKOFF_Q = "Backoff"
UNSCHEDULABLE_Q = "Unschedulable"


Less = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
ProfileOf = Callable[[PodInfo], str | None]
Sleep = Callable[[float], Awaitable[None]]


def _by_scheduler_name(pod: PodInfo) -> str | None:
    return pod.scheduler_name


class SchedulingQueue:
    def __init__(
        self,
        clock: Clock,
        less: Less,
        *,
        initial_backoff: float = DEFAULT_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_MAX_IN_UNSCHEDULABLE,
        pop_from_backoff: bool = True,
        pod_lister: PodLookup | None = None,
        profile_of: ProfileOf | None = None,
        metrics: sm.SchedulerMetrics | None = None,
    ) -> None:
        self._clock = clock
        # The profile a pod resolves to keys PreEnqueue plugins and hints (DESIGN.md: what
        # upstream keys per scheduler is keyed per resolved profile here).
        self._profile_of: ProfileOf = profile_of or _by_scheduler_name
        self._less = less
        self._pop_from_backoff = pop_from_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self._active = ActiveQueue(self._queued_less)
        self._backoff = BackoffQueue(
            clock,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            active_less=self._queued_less,
            pop_from_backoff=pop_from_backoff,
        )
        self._unschedulable = UnschedulablePods()
        self.metrics = metrics if metrics is not None else sm.SchedulerMetrics()
        self._hints = HintRegistry(self._profile_of, self.metrics.hint_ran, self.metrics.timer, self.metrics.hint_room)
        self._pre_enqueue = PreEnqueueRunner(self._hints.plugin_events, self._profile_of)
        self.nominator = Nominator(pod_lister=pod_lister)
        self.nominator.resolve = self._freshest
        self._wakeup = asyncio.Event()
        self._incoming = self.metrics.incoming
        self.metrics.collect("scheduler_pending_pods", self._pending_samples)
        self.metrics.collect("scheduler_unschedulable_pods", self._unschedulable_samples)
        self.metrics.collect(
            "scheduler_inflight_events", lambda: sm.count_by((label,) for label in self._active.in_flight_labels())
        )

    def _queued_less(self, a: QueuedPod, b: QueuedPod) -> bool:
        return self._less(a, b)

    # Configuration (profiles are replaced on hot reload).
    def set_less(self, less: Less) -> None:
        self._less = less
        self._active.set_less(self._queued_less)
        self._backoff.set_active_less(self._queued_less)

    def set_profile(
        self,
        profile: str,
        *,
        pre_enqueue: Sequence[PreEnqueuePlugin],
        hints: Mapping[str, Sequence[ClusterEventWithHint]],
    ) -> None:
        """Install the PreEnqueue plugins and hints of ``profile`` (a key ``profile_of`` returns)."""
        self._pre_enqueue.set_profile(profile, pre_enqueue)
        self._hints.set_profile(profile, hints)

    def remove_profile(self, profile: str) -> None:
        self._pre_enqueue.remove_profile(profile)
        self._hints.remove_profile(profile)

    # Moves between the sub-queues.
    def _move_to_active(self, qp: QueuedPod, event: str, *, from_backoff: bool = False) -> bool:
        # With pop_from_backoff, PreEnqueue already ran when the pod entered backoffQ.
        if not (self._pop_from_backoff and from_backoff):
            self._pre_enqueue.run(qp)
        if qp.gated:
            # Cleared here too: a flushed pod that is gated never reaches a failed attempt.
            qp.was_flushed_from_unschedulable = False
            self._to_unschedulable(qp, event)
            return False
        if qp.initial_attempt_timestamp is None:
            qp.initial_attempt_timestamp = self._clock.now()
        self._unschedulable.delete(qp.key)
        self._active.add_or_update(qp)
        self._incoming(sm.ACTIVE, event)
        log.debug("pod %s moved to %s on %s", qp.key, ACTIVE_Q, event)
        return True

    def _move_to_backoff(self, qp: QueuedPod, event: str) -> bool:
        if self._pop_from_backoff:
            self._pre_enqueue.run(qp)
            if qp.gated:
                qp.was_flushed_from_unschedulable = False
                self._to_unschedulable(qp, event)
                return False
        self._unschedulable.delete(qp.key)
        self._backoff.add(qp)
        self._incoming(sm.BACKOFF, event)
        log.debug("pod %s moved to %s on %s", qp.key, BACKOFF_Q, event)
        return True

    def _requeue(self, qp: QueuedPod, strategy: QueueingStrategy, event: str) -> str:
        """Upstream ``requeueEntityWithQueueingStrategy``: the queue the pod ends in."""
        if strategy is QueueingStrategy.SKIP:
            self._to_unschedulable(qp, event)
            return UNSCHEDULABLE_Q
        # The pod may have completed its backoff while it sat in the unschedulable pool.
        if strategy is QueueingStrategy.AFTER_BACKOFF and self._backoff.is_backing_off(qp):
            return BACKOFF_Q if self._move_to_backoff(qp, event) else UNSCHEDULABLE_Q
        return ACTIVE_Q if self._move_to_active(qp, event) else UNSCHEDULABLE_Q

    def _to_unschedulable(self, qp: QueuedPod, event: str) -> None:
        # Counted on entry only, not on an update in place (upstream unschedulable_pods.go).
        if qp.key not in self._unschedulable:
            self._incoming(sm.UNSCHEDULABLE_QUEUE, event)
        self._unschedulable.add_or_update(qp)

    def _wakes_pop(self, queue: str) -> bool:
        return queue == ACTIVE_Q or (self._pop_from_backoff and queue == BACKOFF_Q)

    # Pending pods from the informer.
    def add(self, pod: PodInfo) -> None:
        qp = QueuedPod(pod_info=pod, timestamp=self._clock.now())
        # Recorded even for a gated pod, and before it can be popped.
        self.nominator.add_nominated_pod(pod)
        if self._move_to_active(qp, "PodAdd"):
            self._wakeup.set()

    def update(self, old: PodInfo, new: PodInfo) -> None:
        events = pod_scheduling_properties_change(new, old, resource=EventResource.POD)
        # Being scheduled: remember the update, it is replayed if the attempt fails.
        if self._active.add_events_if_pod_in_flight(old, new, events):
            return
        key = pod_key(old)
        if (qp := self._active.get(key)) is not None:
            self._replace_pod(qp, old, new)
            self._active.refresh(qp)
            return
        if (qp := self._backoff.get(key)) is not None:
            self._replace_pod(qp, old, new)
            self._backoff.refresh(qp)
            return
        if (qp := self._unschedulable.get(key)) is not None:
            self._replace_pod(qp, old, new)
            # Plugins whose rejection an update of the pod itself may resolve register Pod/Update.
            for event in events:
                strategy = self._hints.is_pod_worth_requeuing(qp, event, old, new)
                queue = self._requeue(qp, strategy, str(event))
                if queue != UNSCHEDULABLE_Q:
                    if self._wakes_pop(queue):
                        self._wakeup.set()
                    break
            return
        self.add(new)

    def _replace_pod(self, qp: QueuedPod, old: PodInfo, new: PodInfo) -> None:
        qp.pod_info = new
        self.nominator.update_nominated_pod(old, new)

    def delete(self, pod: PodInfo) -> None:
        """Drop ``pod`` from whichever sub-queue holds it; an entry of the same name with another
        UID (a pod re-created under that name) stays.

        Upstream's ``Delete`` looks the pod up by ``namespace/name`` alone: its informer is keyed
        by that name too, so a re-created pod reaches it as an update of the old one, never as
        an add followed by the old one's delete. Ours is keyed by UID (``scheduler_operator.
        informer``): after a re-list the new pod is added first and the old one's delete follows,
        which would otherwise remove the new pod from the queue for good."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        key = pod_key(pod)
        for queue in (self._active, self._backoff, self._unschedulable):
            found = queue.get(key)
            if found is not None and found.pod_info.uid == pod.uid:
                queue.delete(key)
                return

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """Move pods from the unschedulable pool or backoffQ to activeQ; for a pod in flight,
        record a ForceActivate so it is requeued when its attempt fails; ignore others."""
        activated = False
        for pod in pods:
            key = pod_key(pod)
            from_backoff = False
            qp = self._unschedulable.get(key)
            if qp is None:
                qp = self._backoff.delete(key)
                from_backoff = qp is not None
            if qp is not None and self._move_to_active(qp, str(FORCE_ACTIVATE), from_backoff=from_backoff):
                activated = True
                continue
            self._active.add_events_if_pod_in_flight(None, pod, [FORCE_ACTIVATE])
        if activated:
            self._wakeup.set()

    # Scheduling attempts.
    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None when there is none (never blocks). The pod is
        in flight until ``done``; its attempts and the scheduling cycle are counted."""
        while True:
            qp = self._active.pop()
            if qp is None:
                qp = self._backoff.pop_backoff() if self._pop_from_backoff else None
                if qp is None:
                    return None
                self._incoming(sm.ACTIVE, "PopFromBackoffQ")  # active_queue.go unlockedPop
            if not self._active.move_to_in_flight(qp):
                continue
            qp.unschedulable_plugins.clear()
            qp.pending_plugins.clear()
            return qp

    async def wait_pop(self) -> QueuedPodInfo | None:
        """Wait for a pod; None once the queue is closed and empty."""
        while True:
            qp = self.pop()
            if qp is not None:
                return qp
            if self._active.closed:
                return None
            self._wakeup.clear()
            wakeup = self.next_wakeup()
            timeout = None if wakeup is None else max(0.0, wakeup - self._clock.now())
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                self.flush_backoff_completed()

    def done(self, uid: str) -> None:
        self._active.done(PodUID(uid))

    def scheduling_cycle(self) -> int:
        return self._active.scheduling_cycle

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, scheduling_cycle: int) -> None:
        """Requeue a pod whose attempt failed, and end the attempt (``done``).

        Pass the object ``pop`` returned (its failure counters drive backoff), with
        ``unschedulable_plugins``/``pending_plugins`` naming the rejectors (none: the attempt
        ended in an Error), and do not call ``done`` before: the events seen while the pod
        was in flight are replayed here."""
        qp = as_queued_pod(qpi)
        try:
            self._add_unschedulable(qp, scheduling_cycle)
        finally:
            self.done(qp.pod_info.uid)

    def _add_unschedulable(self, qp: QueuedPod, scheduling_cycle: int) -> None:
        key = qp.key
        for name, present in (
            (UNSCHEDULABLE_Q, key in self._unschedulable),
            (ACTIVE_Q, key in self._active),
            (BACKOFF_Q, key in self._backoff),
        ):
            if present:
                log.error("pod %s is already present in the %s queue", key, name)
                return
        if qp.rejector_plugins():
            qp.unschedulable_count += 1
            qp.consecutive_errors_count = 0
        else:
            # An unexpected error (API server, network...): back off on the error count.
            qp.consecutive_errors_count += 1
        qp.timestamp = self._clock.now()
        qp.backoff_expiration = None
        qp.was_flushed_from_unschedulable = False
        strategy = self._hint_for_in_flight_pod(qp)
        queue = self._requeue(qp, strategy, "ScheduleAttemptFailure")
        log.debug("pod %s moved to %s after cycle %d (hint %s)", key, queue, scheduling_cycle, strategy.name)
        if self._wakes_pop(queue):
            self._wakeup.set()

    def _hint_for_in_flight_pod(self, qp: QueuedPod) -> QueueingStrategy:
        """Upstream ``determineSchedulingHintForInFlightPod``."""
        if not qp.rejector_plugins():
            return QueueingStrategy.AFTER_BACKOFF
        events = self._active.cluster_events_for_pod(qp.pod_info.uid)
        if events is None:
            log.error("in-flight pod %s is not found in the scheduling queue", qp.key)
            return QueueingStrategy.AFTER_BACKOFF
        strategy = QueueingStrategy.SKIP
        for e in events:
            hint = self._hints.is_pod_worth_requeuing(qp, e.event, e.old, e.new)
            if hint is QueueingStrategy.IMMEDIATELY:
                return hint
            if hint is QueueingStrategy.AFTER_BACKOFF:
                strategy = hint
                if not qp.pending_plugins:
                    return strategy
        return strategy

    # Cluster events.
    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: object,
        new: object,
        pre_check: Callable[[PodInfo], bool] | None = None,
    ) -> None:
        if not self._hints.is_event_of_interest(event):
            return
        old, new = hint_objects(event, old, new)
        candidates = self._unschedulable.candidates(event)
        pods = candidates if pre_check is None else [qp for qp in candidates if pre_check(qp.pod_info)]
        self._move_pods(pods, event, old, new)

    def _move_pods(self, pods: Iterable[QueuedPod], event: ClusterEvent, old: Any, new: Any) -> None:
        if not self._hints.is_event_of_interest(event):
            return
        activated = False
        wildcard = is_wildcard(event)
        # A gated pod only re-runs PreEnqueue on its gating plugin's events (or a wildcard).
        asked = (
            qp for qp in pods if not qp.gated or wildcard or any(e.matches(event) for e in qp.gating_plugin_events)
        )
        for qp, strategy in self._hints.strategies(asked, event, old, new):
            if strategy is QueueingStrategy.SKIP:
                continue
            self._unschedulable.delete(qp.key)
            if self._wakes_pop(self._requeue(qp, strategy, str(event))):
                activated = True
        # Pods in flight may fail later; they must see this event then.
        self._active.add_event_if_any_in_flight(old, new, event)
        if activated:
            self._wakeup.set()

    def assigned_pod_added(self, pod: PodInfo) -> None:
        """``MoveAllToActiveOrBackoffQueue(EventAssignedPodAdd)``: eventhandlers.go
        ``addAssignedPodToCache`` with SchedulerQueueingHints, GA and locked on since v1.34, so
        every interested plugin's hint decides (``AssignedPodAdded``'s pre-filter of pods with
        cross-topology terms is the gate-off path, gone from the binary)."""
        self.move_all_to_active_or_backoff(ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: PodInfo, new: PodInfo, event: ClusterEvent | None = None) -> None:
        """``MoveAllToActiveOrBackoffQueue`` for each event of this change (eventhandlers.go
        ``updateAssignedPodInCache``: one per event from ``PodSchedulingPropertiesChange``), or
        for just ``event`` when given."""
        events = (
            [event]
            if event is not None
            else pod_scheduling_properties_change(new, old, resource=EventResource.ASSIGNED_POD)
        )
        for evt in events:
            self.move_all_to_active_or_backoff(evt, old, new)

    def assigned_pod_deleted(self, pod: PodInfo) -> None:
        self.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)

    # Time-driven moves.
    def flush_backoff_completed(self) -> None:
        activated = False
        for qp in self._backoff.pop_all_completed():
            if self._move_to_active(qp, "BackoffComplete", from_backoff=True):
                activated = True
        if activated:
            self._wakeup.set()

    def flush_unschedulable_leftover(self) -> None:
        now = self._clock.now()
        stale = [qp for qp in self._unschedulable if now - qp.timestamp > self.max_in_unschedulable]
        for qp in stale:
            qp.was_flushed_from_unschedulable = True
        if stale:
            self._move_pods(stale, UNSCHEDULABLE_TIMEOUT, None, None)

    def next_wakeup(self) -> float | None:
        """The earliest clock reading at which a pod in backoffQ completes its backoff."""
        return self._backoff.next_completion()

    def next_unschedulable_timeout(self) -> float | None:
        """The earliest clock reading at which ``flush_unschedulable_leftover`` moves a pod."""
        return min(
            (math.nextafter(qp.timestamp + self.max_in_unschedulable, math.inf) for qp in self._unschedulable),
            default=None,
        )

    async def run(self, *, sleep: Sleep = asyncio.sleep) -> None:
        """Flush completed backoff every ordering window (aligned to it) and the
        unschedulable leftovers every 30 s, until closed (upstream ``PriorityQueue.Run``)."""
        next_leftover = self._clock.now()
        while not self._active.closed:
            if self._clock.now() >= next_leftover:
                self.flush_unschedulable_leftover()
                next_leftover += UNSCHEDULABLE_FLUSH_PERIOD
            now = self._clock.now()
            await sleep(self._backoff.align_to_window(now + 1.0) - now)
            if self._active.closed:
                return
            self.flush_backoff_completed()

    def close(self) -> None:
        self._active.close()
        self._wakeup.set()

    def waiting(self) -> int:
        """Pods the loop could pop now: activeQ, and backoffQ (popped when activeQ is empty)."""
        return len(self._active) + len(self._backoff)

    # Metrics, collected at scrape time.
    def _pending_samples(self) -> list[tuple[LabelValues, float]]:
        gated = self._unschedulable.gated_count()
        return [
            ((sm.ACTIVE,), float(len(self._active))),
            ((sm.BACKOFF,), float(len(self._backoff))),
            ((sm.UNSCHEDULABLE_QUEUE,), float(len(self._unschedulable) - gated)),
            ((sm.GATED,), float(gated)),
        ]

    def _unschedulable_samples(self) -> list[tuple[LabelValues, float]]:
        """Waiting pods per rejector plugin (gating PreEnqueue plugins included) and profile; a pod
        in flight counts for none, as upstream decrements at pop (``active_queue.go``)."""
        waiting = [*self._active, *self._backoff.pods(), *self._unschedulable]
        return sm.count_by(
            (plugin, self._profile_of(qp.pod_info) or "")
            for qp in waiting
            for plugin in qp.unschedulable_plugins | qp.pending_plugins  # a gating plugin is among them
        )

    # Diagnostics.
    def pending(self) -> dict[str, list[PodInfo]]:
        return {
            "active": [qp.pod_info for qp in self._active],
            "backoff": [qp.pod_info for qp in self._backoff.pods()],
            "unschedulable": [qp.pod_info for qp in self._unschedulable],
        }

    def in_flight_pods(self) -> list[PodInfo]:
        return self._active.in_flight_pods()

    def get(self, pod: PodInfo) -> QueuedPodInfo | None:
        """The queue's record of ``pod`` (by namespace/name, of the same UID), wherever it waits."""
        key = pod_key(pod)
        for found in (self._active.get(key), self._backoff.get(key), self._unschedulable.get(key)):
            if found is not None and found.pod_info.uid == pod.uid:
                return found
        return None

    def contains(self, pod: PodInfo) -> bool:
        """Whether the queue holds ``pod``: waiting in a sub-queue, or in flight."""
        return self.get(pod) is not None or self._active.is_in_flight(pod.uid)

    def _freshest(self, pod: PodInfo) -> PodInfo | None:
        found = self.get(pod)
        return None if found is None else found.pod_info

    def __len__(self) -> int:
        return len(self._active) + len(self._backoff) + len(self._unschedulable)
