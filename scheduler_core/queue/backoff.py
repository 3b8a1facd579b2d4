"""backoffQ: pods waiting out a backoff penalty before they may be tried again.

Upstream: ``pkg/scheduler/backend/queue/backoff_queue.go``. Two heaps, seen as one:

* ``backoff`` holds pods rejected by plugins, ordered by backoff expiry; with
  ``pop_from_backoff`` (SchedulerPopFromBackoffQ, on by default upstream) expiries are
  truncated to 1-second ordering windows and pods within one window are ordered by the
  activeQ ``less``, so the scheduler may pop the head when activeQ is empty;
* ``error_backoff`` holds pods whose last attempt ended in an Error (no rejector plugins),
  ordered by expiry only; they are never popped early.

The backoff duration is ``initial * 2**(count-1)`` capped at ``max`` where ``count`` is the
consecutive-errors count when non-zero, else the unschedulable count; a pod never rejected
(count 0), or a queue with ``max == 0``, has no backoff. Durations are computed in integer
nanoseconds with Go's shifts, as ``calculateBackoffDuration``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scheduler_core.clock import Clock
from scheduler_core.queue.heap import KeyedHeap
from scheduler_core.queue.queued import QueuedPod

BACKOFF_ORDERING_WINDOW = 1.0  # seconds (upstream backoffQOrderingWindowDuration)
_NO_BACKOFF = -math.inf  # Go's zero time.Time: before every instant
_NS = 1_000_000_000

QueuedLess = Callable[[QueuedPod, QueuedPod], bool]


def _key(qp: QueuedPod) -> str:
    return qp.key


def calculate_backoff_duration(count: int, initial: float, maximum: float) -> float:
    """Seconds of backoff after ``count`` failures (upstream ``calculateBackoffDuration``)."""
    if count == 0:
        return 0.0
    initial_ns = round(initial * _NS)
    max_ns = round(maximum * _NS)
    shift = count - 1
    if initial_ns > max_ns >> shift:
        return max_ns / _NS
    return (initial_ns << shift) / _NS


class BackoffQueue:
    def __init__(
        self,
        clock: Clock,
        *,
        initial_backoff: float,
        max_backoff: float,
        active_less: QueuedLess,
        pop_from_backoff: bool,
    ) -> None:
        self._clock = clock
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self._active_less = active_less
        self._pop_from_backoff = pop_from_backoff
        self._backoff: KeyedHeap[QueuedPod] = KeyedHeap(_key, self._less_for_backoff())
        self._error_backoff: KeyedHeap[QueuedPod] = KeyedHeap(_key, self._less_completed)

    def set_active_less(self, less: QueuedLess) -> None:
        self._active_less = less
        self._backoff.set_less(self._less_for_backoff())

    def _less_for_backoff(self) -> QueuedLess:
        return self._less_completed_with_priority if self._pop_from_backoff else self._less_completed

    def _less_completed_with_priority(self, a: QueuedPod, b: QueuedPod) -> bool:
        bo_a, bo_b = self.backoff_time(a), self.backoff_time(b)
        if bo_a != bo_b:
            return bo_a < bo_b
        return self._active_less(a, b)

    def _less_completed(self, a: QueuedPod, b: QueuedPod) -> bool:
        return self.backoff_time(a) < self.backoff_time(b)

    def align_to_window(self, t: float) -> float:
        if not self._pop_from_backoff:
            return t
        return math.floor(t / BACKOFF_ORDERING_WINDOW) * BACKOFF_ORDERING_WINDOW

    def backoff_time(self, qp: QueuedPod) -> float:
        """When ``qp`` completes backoff (upstream ``getBackoffTime``); cached on the pod."""
        if self.max_backoff == 0:
            return _NO_BACKOFF
        count = qp.consecutive_errors_count or qp.unschedulable_count
        if count == 0:
            return _NO_BACKOFF
        if qp.backoff_expiration is None:
            duration = calculate_backoff_duration(count, self.initial_backoff, self.max_backoff)
            qp.backoff_expiration = self.align_to_window(qp.timestamp + duration)
        return qp.backoff_expiration

    def is_backing_off(self, qp: QueuedPod) -> bool:
        # A pod whose expiry falls in the current ordering window is still backing off.
        return not self.backoff_time(qp) < self.align_to_window(self._clock.now())

    def completes_at(self, qp: QueuedPod) -> float:
        """The earliest clock reading at which :meth:`is_backing_off` turns false."""
        bo = self.backoff_time(qp)
        if bo == _NO_BACKOFF:
            return self._clock.now()
        if self._pop_from_backoff:
            return self.align_to_window(bo) + BACKOFF_ORDERING_WINDOW
        return math.nextafter(bo, math.inf)

    def next_completion(self) -> float | None:
        heads = [h for h in (self._backoff.peek(), self._error_backoff.peek()) if h is not None]
        return min((self.completes_at(h) for h in heads), default=None)

    def add(self, qp: QueuedPod) -> None:
        """Add to the heap matching how the last attempt failed, and out of the other one."""
        if not qp.unschedulable_plugins and not qp.pending_plugins:
            self._error_backoff.add_or_update(qp)
            self._backoff.delete(qp.key)
        else:
            self._backoff.add_or_update(qp)
            self._error_backoff.delete(qp.key)

    def refresh(self, qp: QueuedPod) -> None:
        """Re-position ``qp`` after its pod changed (upstream ``backoffQueue.update``)."""
        if qp.key in self._backoff:
            self._backoff.add_or_update(qp)
        elif qp.key in self._error_backoff:
            self._error_backoff.add_or_update(qp)

    def pop_all_completed(self) -> list[QueuedPod]:
        return self._pop_completed(self._backoff) + self._pop_completed(self._error_backoff)

    def _pop_completed(self, heap: KeyedHeap[QueuedPod]) -> list[QueuedPod]:
        popped: list[QueuedPod] = []
        while (head := heap.peek()) is not None and not self.is_backing_off(head):
            heap.pop()
            popped.append(head)
        return popped

    def pop_backoff(self) -> QueuedPod | None:
        """Pop the head of the plugin-rejected heap only (never an errored pod)."""
        return self._backoff.pop()

    def get(self, key: str) -> QueuedPod | None:
        found = self._backoff.get(key)
        return found if found is not None else self._error_backoff.get(key)

    def __contains__(self, key: str) -> bool:
        return key in self._backoff or key in self._error_backoff

    def delete(self, key: str) -> QueuedPod | None:
        found = self._backoff.delete(key)
        return found if found is not None else self._error_backoff.delete(key)

    def pods(self) -> list[QueuedPod]:
        return [*self._backoff, *self._error_backoff]

    def __len__(self) -> int:
        return len(self._backoff) + len(self._error_backoff)
