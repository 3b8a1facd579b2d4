"""Kubernetes Events (``events.k8s.io/v1``), as kube-scheduler's event recorder writes them.

Upstream (``staging/src/k8s.io/client-go/tools/events/event_recorder.go``): the event is named
``<object name>.<unix nanoseconds in hex>``, carries ``reportingController`` (here
``crd-scheduler``, upstream the scheduler name), ``reportingInstance`` (the replica's identity),
an ``action`` (``Scheduling`` for FailedScheduling, ``Binding`` for Scheduled) and a ``note`` of
at most 1 KiB.

Not flooding the API (client-go aggregates events into series and rate-limits per object):
the :class:`SpamFilter` lets an event for an object through when its note changed, or when the
same note was last posted ``repeat_after`` seconds ago or more; the report lane's backlog bound
(``scheduler_operator.io.calls``) drops the rest under pressure.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler_core.framework import Manifest, manifest
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.transport import Transport
from scheduler_operator.resources import COMPONENT

MAX_NOTE_LENGTH = 1024  # upstream validation of events.k8s.io/v1 note
DEFAULT_REPEAT_AFTER = 60.0
MAX_TRACKED_OBJECTS = 20_000
EVENTS_PATH = "/apis/events.k8s.io/v1"
NORMAL = "Normal"
WARNING = "Warning"


def micro_time(now: datetime) -> str:
    """A metav1.MicroTime: RFC 3339 with microseconds, in UTC."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_body(
    regarding: Mapping[str, Any],
    *,
    event_type: str,
    reason: str,
    action: str,
    note: str,
    instance: str,
    now: datetime,
) -> dict[str, Any]:
    meta = manifest.meta(regarding)
    namespace = meta.get("namespace") or "default"
    nanos = int(now.timestamp() * 1_000_000) * 1000
    if len(note) > MAX_NOTE_LENGTH:
        note = note[: MAX_NOTE_LENGTH - 4] + " ..."
    ref = {
        "apiVersion": regarding.get("apiVersion") or "v1",
        "kind": regarding.get("kind") or "Pod",
        "namespace": namespace,
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{meta.get('name')}.{nanos:x}", "namespace": namespace},
        "eventTime": micro_time(now),
        "reportingController": COMPONENT,
        "reportingInstance": instance,
        "action": action,
        "reason": reason,
        "type": event_type,
        "note": note,
        "regarding": {k: v for k, v in ref.items() if v},
    }


class SpamFilter:
    """Per object and reason: pass a new note at once, the same note again after a while."""

    def __init__(self, repeat_after: float = DEFAULT_REPEAT_AFTER, clock: Callable[[], float] = time.monotonic) -> None:
        self.repeat_after = repeat_after
        self._clock = clock
        self._last: OrderedDict[str, dict[str, tuple[str, float]]] = OrderedDict()  # uid -> reason -> (note, at)

    def allow(self, uid: str, reason: str, note: str) -> bool:
        now = self._clock()
        by_reason = self._last.get(uid)
        if by_reason is None:
            by_reason = self._last[uid] = {}
            if len(self._last) > MAX_TRACKED_OBJECTS:
                self._last.popitem(last=False)
        last = by_reason.get(reason)
        if last is not None and last[0] == note and now - last[1] < self.repeat_after:
            return False
        by_reason[reason] = (note, now)
        self._last.move_to_end(uid)
        return True

    def forget(self, uid: str) -> None:
        self._last.pop(uid, None)


class EventRecorder:
    def __init__(
        self,
        transport: Transport,
        lanes: Lanes,
        *,
        instance: str,
        spam: SpamFilter | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._transport = transport
        self._lanes = lanes
        self.instance = instance
        self.spam = spam or SpamFilter()
        self._now = now

    def record(self, regarding: Manifest, event_type: str, reason: str, action: str, note: str) -> bool:
        """Post an event in the background unless the spam filter holds it back."""
        uid = manifest.uid_of(regarding)
        if uid and not self.spam.allow(uid, reason, note):
            return False
        body = event_body(
            regarding, event_type=event_type, reason=reason, action=action, note=note,
            instance=self.instance, now=self._now(),
        )  # fmt: skip
        namespace = body["metadata"]["namespace"]

        async def post() -> None:
            try:
                await self._transport.request(
                    "POST", f"{EVENTS_PATH}/namespaces/{namespace}/events", body=body, decode=False
                )  # the created Event is not read
            except Exception:
                self._transport.count_failure("event")
                raise  # logged by the report lane

        return self._lanes.report(f"event {reason} for {body['regarding'].get('name')}", post)
