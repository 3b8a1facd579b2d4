"""Writes custom-resource status and events, on the leader only.

Every replica reconciles every SchedulerProfile and PluginConfig (so a standby serves warm
frameworks the moment it leads), but two replicas writing the same status would fight. The
writer keeps the desired status of each object; the leader writes the ones that differ from
what the object carries (a JSON merge patch of the ``/status`` subresource with the object's
UID as precondition), at once when it leads and on every change after. Events about profiles
(Reloaded, InvalidProfile) are posted by the leader only, when the change happens.

Writes go through the async HTTP layer (``scheduler_operator.transport``: timeouts, QPS, retries
on 429, 5xx and lost connections). A write that still fails is logged, counted
(``Transport.failed_writes["status"]``) and tried again :data:`RETRY_LATER` seconds later, as
long as this replica leads and the status is still wanted: an invalid generation never keeps
showing ``Valid=True`` because one write failed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from kubernetes import client

from scheduler_operator import kube
from scheduler_operator.calls import Lane
from scheduler_operator.recorder import EventRecorder
from scheduler_operator.resources import GROUP, VERSION
from scheduler_operator.status import merge_patch, needs_write
from scheduler_operator.transport import Transport, describe

log = logging.getLogger(__name__)

ObjectKey = tuple[str, str, str]  # plural, namespace, name
ACTION_RELOAD = "Reload"
STATUS_LANE_LIMIT = 1  # one write at a time: writes of an object land in the order made
RETRY_LATER = 10.0  # seconds before a failed status write is tried again


class StatusWriter:
    def __init__(self, transport: Transport, recorder: EventRecorder) -> None:
        self._transport = transport
        self._lane = Lane("status", STATUS_LANE_LIMIT)
        self._recorder = recorder
        self.leading = False
        self._desired: dict[ObjectKey, tuple[str, dict[str, Any]]] = {}  # key -> (uid, status)
        self._current: dict[ObjectKey, Mapping[str, Any] | None] = {}  # status the object carries
        self._written: dict[ObjectKey, dict[str, Any]] = {}  # in flight or written, not yet seen back
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
        self.writes = 0
        self.retry_later = RETRY_LATER
        self._tasks: set[asyncio.Task[None]] = set()

    def observe(self, plural: str, body: Mapping[str, Any]) -> None:
        """The object as last seen (its status included)."""
        key = _key(plural, body)
        self._current[key] = body.get("status")
        self._written.pop(key, None)

    def current(self, plural: str, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
        key = _key(plural, body)
        return self._written.get(key) or self._current.get(key)

    def set(self, plural: str, body: Mapping[str, Any], status: dict[str, Any]) -> None:
        key = _key(plural, body)
        self._desired[key] = (str((body.get("metadata") or {}).get("uid") or ""), status)
        if self.leading:
            self._write(key)

    def desired(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The status this replica would write (leading or not)."""
        found = self._desired.get((plural, namespace, name))
        return found[1] if found is not None else None

    def drop(self, plural: str, body: Mapping[str, Any]) -> None:
        key = _key(plural, body)
        self._desired.pop(key, None)
        self._current.pop(key, None)
        self._written.pop(key, None)

    def event(self, body: Mapping[str, Any], event_type: str, reason: str, note: str) -> None:
        if self.leading:
            self._recorder.record(body, event_type, reason, ACTION_RELOAD, note)

    def lead(self, leading: bool) -> None:
        """Start (write every status that differs) or stop writing."""
        self.leading = leading
        if leading:
            for key in list(self._desired):
                self._write(key)

    def _write(self, key: ObjectKey) -> None:
        uid, desired = self._desired[key]
        current = self._written.get(key) or self._current.get(key)
        if not needs_write(current, desired):
            return
        self._written[key] = desired
        plural, namespace, name = key
        body = {"metadata": {"uid": uid}, "status": merge_patch(current, desired)}

        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}/{name}/status"

        async def patch() -> None:
            try:
                await self._transport.request(
                    "PATCH", path, body=body, content_type=kube.CONTENT_MERGE_PATCH, decode=False
                )
                self.writes += 1
            except Exception as error:
                if self._written.get(key) is desired:
                    self._written.pop(key, None)
                gone = (HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT)
                if isinstance(error, client.ApiException) and error.status in gone:
                    return  # deleted, or re-created: its own events bring the new state
                self._transport.count_failure("status")
                log.warning("status of %s %s/%s failed (%s); trying again in %.0f s",
                            plural, namespace, name, describe(error), self.retry_later)  # fmt: skip
                asyncio.get_running_loop().call_later(self.retry_later, self._retry, key)

        self._lane_task(patch)

    def _retry(self, key: ObjectKey) -> None:
        if self.leading and key in self._desired:
            self._write(key)

    def _lane_task(self, fn: Callable[[], Awaitable[None]]) -> None:
        async def run() -> None:
            try:
                await self._lane.run(fn)
            except Exception as error:
                log.warning("status write failed: %s", error)

        task = asyncio.ensure_future(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    def close(self) -> None:
        self._lane.shutdown()


def _key(plural: str, body: Mapping[str, Any]) -> ObjectKey:
    meta = body.get("metadata") or {}
    return plural, str(meta.get("namespace") or ""), str(meta.get("name") or "")
