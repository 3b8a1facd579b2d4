"""activeQ and the in-flight record.

Upstream: ``pkg/scheduler/backend/queue/active_queue.go``. activeQ is a heap ordered by the
profile's QueueSort ``less``. Popping a pod marks it *in flight* until ``done``: while it is
being scheduled (or bound), every cluster event the queue receives is appended to one list
shared by all in-flight pods, after the pod's own entry. When the attempt fails, the events
after the pod's entry are replayed against its rejector plugins' queueing hints. ``done``
drops the pod's entry and prunes events no remaining in-flight pod can still see.

Single-threaded (asyncio), so upstream's locks and condition variable are not needed; the
caller wakes waiters.
"""

from __future__ import annotations

import itertools
import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler_core.framework import ClusterEvent, PodInfo, PodUID
from scheduler_core.queue.heap import KeyedHeap
from scheduler_core.queue.queued import QueuedPod

log = logging.getLogger(__name__)

QueuedLess = Callable[[QueuedPod, QueuedPod], bool]


@dataclass(frozen=True, slots=True)
class InFlightEvent:
    """A cluster event received while some pod was in flight (upstream ``clusterEvent``)."""

    event: ClusterEvent
    old: Any
    new: Any


class ActiveQueue(KeyedHeap[QueuedPod]):
    """The heap of queued pods, by key (``KeyedHeap``: ``add_or_update``, ``get``, ``delete``,
    ``pop``), and the in-flight record."""

    def __init__(self, less: QueuedLess) -> None:
        super().__init__(lambda qp: qp.key, less)
        # Entries in arrival order: an in-flight pod (PodInfo at pop time) or an InFlightEvent.
        self._in_flight_log: OrderedDict[int, PodInfo | InFlightEvent] = OrderedDict()
        self._in_flight_pods: dict[PodUID, int] = {}
        self._seq = itertools.count()
        self.scheduling_cycle = 0
        self.closed = False

    def in_flight_labels(self) -> list[str]:
        """What the in-flight log holds, as upstream's ``scheduler_inflight_events`` labels it:
        ``PodPopped`` for a pod in flight, the event's label for an event received meanwhile."""
        return [
            entry.event.label or str(entry.event) if isinstance(entry, InFlightEvent) else "PodPopped"
            for entry in self._in_flight_log.values()
        ]

    def refresh(self, qp: QueuedPod) -> None:
        if qp.key in self:
            self.add_or_update(qp)

    # In flight.
    def move_to_in_flight(self, qp: QueuedPod) -> bool:
        """Start ``qp``'s attempt (upstream ``unlockedMoveEntityToInFlight``); False when the
        same pod is already in flight, which upstream reports and discards."""
        qp.attempts += 1
        uid = qp.pod_info.uid
        if uid in self._in_flight_pods:
            log.error("the same pod is tracked in multiple places in the scheduler: %s", qp.key)
            return False
        seq = next(self._seq)
        self._in_flight_log[seq] = qp.pod_info
        self._in_flight_pods[uid] = seq
        self.scheduling_cycle += 1
        return True

    def is_in_flight(self, uid: PodUID) -> bool:
        return uid in self._in_flight_pods

    def in_flight_pods(self) -> list[PodInfo]:
        return [entry for entry in self._in_flight_log.values() if isinstance(entry, PodInfo)]

    def in_flight_events(self) -> list[InFlightEvent]:
        return [entry for entry in self._in_flight_log.values() if isinstance(entry, InFlightEvent)]

    def add_events_if_pod_in_flight(self, old: Any, new: PodInfo, events: list[ClusterEvent]) -> bool:
        if new.uid not in self._in_flight_pods:
            return False
        for event in events:
            self._in_flight_log[next(self._seq)] = InFlightEvent(event, old, new)
        return True

    def add_event_if_any_in_flight(self, old: Any, new: Any, event: ClusterEvent) -> bool:
        if not self._in_flight_pods:
            return False
        self._in_flight_log[next(self._seq)] = InFlightEvent(event, old, new)
        return True

    def cluster_events_for_pod(self, uid: PodUID) -> list[InFlightEvent] | None:
        """Events received since ``uid`` was popped; None when it is not in flight (a bug)."""
        start = self._in_flight_pods.get(uid)
        if start is None:
            return None
        return [e for seq, e in self._in_flight_log.items() if seq > start and isinstance(e, InFlightEvent)]

    def done(self, uid: PodUID) -> None:
        seq = self._in_flight_pods.pop(uid, None)
        if seq is None:
            return
        del self._in_flight_log[seq]
        # Events before the oldest remaining in-flight pod can no longer matter to anyone.
        while self._in_flight_log:
            first = next(iter(self._in_flight_log))
            if not isinstance(self._in_flight_log[first], InFlightEvent):
                break
            del self._in_flight_log[first]

    def close(self) -> None:
        for uid in list(self._in_flight_pods):
            self.done(uid)
        self.closed = True
