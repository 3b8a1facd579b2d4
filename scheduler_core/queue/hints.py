"""Queueing hints: which events may make a rejected pod schedulable, per profile.

Upstream: ``isPodWorthRequeuing``, ``isEventOfInterest``, ``buildEventMap`` in
``pkg/scheduler/backend/queue/scheduling_queue.go`` and ``buildQueueingHintMap`` in
``pkg/scheduler/scheduler.go``. Each profile registers, per plugin, the events that plugin
declared in ``events_to_register`` with an optional hint function (none means QUEUE). For a
pod and an event, only the hints of the pod's rejector plugins (unschedulable plus pending)
whose registered event matches are asked:

* QUEUE from a Pending plugin → the pod goes straight to activeQ (no backoff);
* QUEUE from an Unschedulable plugin → activeQ or backoffQ, depending on its backoff;
* a hint that raises counts as QUEUE (upstream logs the error and queues);
* a pod with no rejector plugins (it failed with an Error) is always worth requeuing;
* a wildcard event (UnschedulableTimeout, ForceActivate) moves every pod, unless it names a
  particular pod in ``new`` (ForceActivate of one in-flight pod).

Plugins' hints are typed by their event's kind (``QueueingHintFn[NodeInfo]`` for a Node event,
:mod:`scheduler_core.framework.events`); the queue's own code takes the event's objects as
``object`` on purpose, and keeps each hint erased (``QueueingHintFn[Any]``). :func:`hint_objects`
converts an object to its kind's type when it can; one that does not convert is handed to the
hint as it came, so the hint raises and the pod is queued: upstream's type assertion
(``util.As`` in each plugin's hint) fails the same way and counts as Queue.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    NodeInfo,
    PodInfo,
    QueueingHint,
    QueueingHintFn,
)
from scheduler_core.queue.queued import QueuedPod

log = logging.getLogger(__name__)


class QueueingStrategy(enum.IntEnum):
    SKIP = 0  # stay in the unschedulable pool
    AFTER_BACKOFF = 1  # backoffQ while backing off, else activeQ
    IMMEDIATELY = 2  # activeQ


def is_wildcard(event: ClusterEvent) -> bool:
    """Upstream ``ClusterEventIsWildCard``."""
    return event.resource is EventResource.WILDCARD and event.action == ActionType.ALL


def hint_objects(event: ClusterEvent, old: object, new: object) -> tuple[object, object]:
    """An event's objects as hints receive them, converted once per event rather than once per
    pod and plugin: a Node's as :class:`NodeInfo`, a Pod's as :class:`PodInfo` (upstream hands
    hints typed ``*v1.Node``/``*v1.Pod``); other kinds stay manifests. An object that does not
    convert is passed as is: the hint's own ``NodeInfo.of``/``PodInfo.of`` raises, which counts
    as QUEUE."""
    if event.resource is EventResource.NODE:
        convert: type[NodeInfo] | type[PodInfo] = NodeInfo
    elif event.resource in (EventResource.POD, EventResource.ASSIGNED_POD):
        convert = PodInfo
    else:
        return old, new
    try:
        return convert.of_optional(old), convert.of_optional(new)
    except TypeError:
        return old, new


_UNKNOWN: Any = object()


@dataclass(frozen=True, slots=True)
class _Hint:
    event: ClusterEvent
    plugin: str
    fn: QueueingHintFn[Any] | None


class HintRegistry:
    """Per-profile registrations of (event, plugin, hint function), keyed by the profile a
    pod resolves to (``profile_of``), so a namespaced profile never answers for another
    namespace's pods."""

    def __init__(
        self,
        profile_of: Callable[[PodInfo], str | None],
        observe: Callable[[str, str, str, float], None] | None = None,
        timer: Callable[[], float] | None = None,
        room: Callable[[], bool] | None = None,
    ) -> None:
        """``observe(plugin, event, hint, seconds)``: each hint function's run (metrics), timed
        only when ``room()`` says it would be recorded (upstream's recorder drops the rest)."""
        self._profile_of = profile_of
        self._observe = observe
        self._room = room if room is not None else _always
        self._timer = timer
        self._by_profile: dict[str, tuple[_Hint, ...]] = {}
        # Per profile and event, its hints whose registered event matches, in registration
        # order: a pod's check then loops over those only, not over all of the profile's
        # (about 40 in the default profile) for each pod of the pool. Dropped when a profile
        # changes.
        self._matching: dict[tuple[str, ClusterEvent], tuple[_Hint, ...]] = {}
        self._plugin_events: dict[str, tuple[ClusterEvent, ...]] = {}
        self._events_of_interest: tuple[ClusterEvent, ...] = ()
        self._event_memo: tuple[ClusterEvent, dict[str, Any] | None, str] | None = None

    def set_profile(self, profile: str, hints: Mapping[str, Sequence[ClusterEventWithHint]]) -> None:
        self._by_profile[profile] = tuple(
            _Hint(registered.event, plugin, registered.hint)
            for plugin, registrations in hints.items()
            for registered in registrations
        )
        self._rebuild_plugin_events()

    def remove_profile(self, profile: str) -> None:
        self._by_profile.pop(profile, None)
        self._rebuild_plugin_events()

    def _rebuild_plugin_events(self) -> None:
        self._matching = {}
        self._event_memo = None
        # Upstream buildEventMap: plugin name -> its events, across all profiles.
        events: dict[str, list[ClusterEvent]] = {}
        for hints in self._by_profile.values():
            for hint in hints:
                events.setdefault(hint.plugin, []).append(hint.event)
        self._plugin_events = {plugin: tuple(evs) for plugin, evs in events.items()}
        # Distinct events of interest: a cluster event is checked against these, not against
        # every profile's registrations (there may be a profile per namespace).
        self._events_of_interest = tuple(
            {(h.event.resource, h.event.action): h.event for hints in self._by_profile.values() for h in hints}.values()
        )

    def plugin_events(self, plugin: str) -> tuple[ClusterEvent, ...]:
        return self._plugin_events.get(plugin, ())

    def is_event_of_interest(self, event: ClusterEvent) -> bool:
        if is_wildcard(event):
            return True
        return any(registered.matches(event) for registered in self._events_of_interest)

    def is_pod_worth_requeuing(self, qp: QueuedPod, event: ClusterEvent, old: object, new: object) -> QueueingStrategy:
        for _, strategy in self.strategies((qp,), event, old, new):
            return strategy
        raise AssertionError("a strategy per pod")  # pragma: no cover - strategies yields one

    def strategies(
        self, pods: Iterable[QueuedPod], event: ClusterEvent, old: object, new: object
    ) -> Iterator[tuple[QueuedPod, QueueingStrategy]]:
        """Upstream ``isPodWorthRequeuing`` for each of ``pods`` on one event, in turn (lazily:
        the caller may move each pod before the next is asked). Asked for every pod of the
        unschedulable pool on every event of interest: what depends on the event alone is
        looked up once per event, and once per call here."""
        matching, label = self._for_event(event)
        observe, timer, room = self._observe, self._timer, self._room
        if observe is None or timer is None:
            observe, timer, room = _ignore, _zero, _never
        profile_of = self._profile_of
        for qp in pods:
            unschedulable, pending = qp.unschedulable_plugins, qp.pending_plugins
            if not unschedulable and not pending:
                yield qp, QueueingStrategy.AFTER_BACKOFF
                continue
            if matching is None:
                # A wildcard event naming a pod in ``new`` is meant for that pod only.
                if new is not None and not (isinstance(new, PodInfo) and new.uid == qp.pod_info.uid):
                    yield qp, QueueingStrategy.SKIP
                else:
                    yield qp, QueueingStrategy.AFTER_BACKOFF
                continue
            profile = profile_of(qp.pod_info)
            hints = None
            if profile is not None:
                hints = matching.get(profile, _UNKNOWN)
                if hints is _UNKNOWN:
                    hints = matching[profile] = self._matching_hints(profile, event)
            if hints is None:
                log.error("no queueing hints registered for profile %r (pod %s)", profile, qp.key)
                yield qp, QueueingStrategy.AFTER_BACKOFF
                continue
            strategy = QueueingStrategy.SKIP
            for hint in hints:
                plugin = hint.plugin
                if plugin not in unschedulable and plugin not in pending:
                    continue
                # Timed by plugin, event and answer as upstream's ``isPodWorthRequeuing``
                # (``queueing_hint_execution_duration_seconds``).
                timed = room()
                start = timer() if timed else 0.0
                fn = hint.fn
                failed = False
                if fn is None:  # upstream's defaultQueueingHintFn
                    answer = QueueingHint.QUEUE
                else:
                    try:
                        answer = fn(qp.pod_info, old, new)
                    except Exception:
                        # Queue rather than leave the pod stuck in the unschedulable pool.
                        log.exception(
                            "QueueingHintFn of %s raised for event %s and pod %s", plugin, event, qp.pod_info.key
                        )
                        answer, failed = QueueingHint.QUEUE, True
                if timed:
                    # Its label as upstream's ``queueingHintToLabel``.
                    answer_label = "Error" if failed else "QueueSkip" if answer is QueueingHint.SKIP else "Queue"
                    observe(plugin, label, answer_label, timer() - start)
                if answer is QueueingHint.SKIP:
                    continue
                if plugin in pending:
                    strategy = QueueingStrategy.IMMEDIATELY
                    break
                if not pending:
                    strategy = QueueingStrategy.AFTER_BACKOFF
                    break
                # A Pending plugin may still answer QUEUE, which would mean IMMEDIATELY.
                strategy = QueueingStrategy.AFTER_BACKOFF
            yield qp, strategy

    def _for_event(self, event: ClusterEvent) -> tuple[dict[str, Any] | None, str]:
        """The event's hints by profile (filled as pods ask; None for a wildcard event) and its
        metrics label, for the event object last asked about (events are mostly module
        constants, so the memo holds from one event to the next)."""
        memo = self._event_memo
        if memo is None or memo[0] is not event:
            memo = self._event_memo = (event, None if is_wildcard(event) else {}, str(event))
        return memo[1], memo[2]

    def _matching_hints(self, profile: str, event: ClusterEvent) -> tuple[_Hint, ...] | None:
        """The hints of ``profile`` registered for an event matching ``event``; None when the
        profile has none registered."""
        found = self._matching.get((profile, event))
        if found is None:
            hints = self._by_profile.get(profile)
            if hints is None:
                return None
            found = self._matching[(profile, event)] = tuple(h for h in hints if h.event.matches(event))
        return found


def _always() -> bool:
    return True


def _never() -> bool:
    return False


def _zero() -> float:
    return 0.0


def _ignore(plugin: str, event: str, hint: str, seconds: float) -> None:
    pass
