"""Writes custom-resource status and events, on the leader only.

Every replica reconciles every SchedulerProfile and PluginConfig (so a standby serves warm
frameworks the moment it leads), but two replicas writing the same status would fight. The
writer keeps the desired status of each object; the leader writes the ones that differ from
what the object carries (a JSON merge patch of the ``/status`` subresource with the object's
UID as precondition), at once when it leads and on every change after. Events about profiles
(Reloaded, InvalidProfile) are posted by the leader only, when the change happens.

Writes go through the async HTTP layer (``scheduler_operator.io.transport``: timeouts, QPS, retries
on 429, 5xx and lost connections). A write that still fails is logged, counted
(``Transport.failed_writes["status"]``) and tried again :data:`RETRY_LATER` seconds later, as
long as this replica leads and the status is still wanted: an invalid generation never keeps
showing ``Valid=True`` because one write failed.

Bounded under an edit storm (issue 26): writes are *coalesced per object* and *rate-limited per
namespace*. :meth:`StatusWriter.set` only records the newest desired status and marks the object
dirty; a namespace's worker writes its dirty objects one at a time, reading each object's desired
status when the write is sent, so a pending write is replaced by a newer one, never queued behind
it (the newest generation wins, and an object has at most one write pending however often it
changes). Each namespace has its own token bucket (:data:`NAMESPACE_QPS`, :data:`NAMESPACE_BURST`)
and its own worker, so one namespace's storm spends its own tokens and never delays another
namespace's writes (all share the :data:`STATUS_LANE_LIMIT` requests in flight and the
transport's client-side QPS). Memory is bounded by the objects, not by the edits: a dirty mark
per object and one worker task per namespace with work.

The defaults: a burst of 10 is the default ``maxProfilesPerNamespace`` of the tenant policy, so
a namespace within the default cap gets every status written at once after any change (and at
failover); then 5 writes a second, a tenth of kube-scheduler's default client QPS (50,
``clientConnection``), so a storm in one namespace cannot take more than that from the API
server, and one round over a namespace of 300 profiles takes a minute.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from scheduler_core.framework import Manifest, manifest
from scheduler_operator.control.recorder import EventRecorder
from scheduler_operator.control.status import merge_patch, needs_write
from scheduler_operator.io import kube
from scheduler_operator.io.calls import Lane
from scheduler_operator.io.kube import describe
from scheduler_operator.io.transport import TokenBucket, Transport
from scheduler_operator.resources import GROUP, VERSION

log = logging.getLogger(__name__)

ObjectKey = tuple[str, str, str]  # plural, namespace, name
ACTION_RELOAD = "Reload"
STATUS_LANE_LIMIT = 4  # status writes in flight at once, over all namespaces
NAMESPACE_QPS = 5.0  # status writes a second per namespace, after the burst
NAMESPACE_BURST = 10  # the tenant policy's default maxProfilesPerNamespace
RETRY_LATER = 10.0  # seconds before a failed status write is tried again


class StatusWriter:
    def __init__(
        self,
        transport: Transport,
        recorder: EventRecorder,
        *,
        namespace_qps: float = NAMESPACE_QPS,
        namespace_burst: int = NAMESPACE_BURST,
    ) -> None:
        self._transport = transport
        self._lane = Lane("status", STATUS_LANE_LIMIT)
        self._recorder = recorder
        self.leading = False
        self.namespace_qps = namespace_qps
        self.namespace_burst = namespace_burst
        self._desired: dict[ObjectKey, tuple[str, dict[str, Any]]] = {}  # key -> (uid, status)
        self._current: dict[ObjectKey, Mapping[str, Any] | None] = {}  # status the object carries
        self._written: dict[ObjectKey, dict[str, Any]] = {}  # in flight or written, not yet seen back
        self._dirty: dict[str, dict[ObjectKey, None]] = {}  # namespace -> objects to write, oldest first
        self._workers: dict[str, asyncio.Task[None]] = {}  # namespace -> its writer, while it has work
        self._buckets: dict[str, TokenBucket] = {}  # namespace -> its rate limit
        self.now: Callable[[], datetime] = lambda: datetime.now(UTC)
        self.writes = 0
        self.retry_later = RETRY_LATER

    def observe(self, plural: str, body: Mapping[str, Any]) -> None:
        """The object as last seen (its status included). Level-triggered: a leader seeing a
        status other than the one it wants (an older write seen late, a write by someone else)
        writes the wanted one again."""
        key = _key(plural, body)
        self._current[key] = body.get("status")
        self._written.pop(key, None)
        if self.leading and self._wanted(key):
            self._schedule(key)

    def current(self, plural: str, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
        key = _key(plural, body)
        return self._written.get(key) or self._current.get(key)

    def set(self, plural: str, body: Manifest, status: dict[str, Any]) -> None:
        """The newest status wanted for the object: replaces any not yet written."""
        key = _key(plural, body)
        self._desired[key] = (manifest.uid_of(body), status)
        if self.leading:
            self._schedule(key)

    def desired(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The status this replica would write (leading or not)."""
        found = self._desired.get((plural, namespace, name))
        return found[1] if found is not None else None

    def pending(self, namespace: str | None = None) -> int:
        """Objects with a write pending (in ``namespace``, or anywhere)."""
        if namespace is not None:
            return len(self._dirty.get(namespace) or ())
        return sum(len(d) for d in self._dirty.values())

    def drop(self, plural: str, body: Mapping[str, Any]) -> None:
        key = _key(plural, body)
        self._desired.pop(key, None)
        self._current.pop(key, None)
        self._written.pop(key, None)
        dirty = self._dirty.get(key[1])
        if dirty is not None:
            dirty.pop(key, None)
        if not any(k[1] == key[1] for k in self._desired):
            self._buckets.pop(key[1], None)  # the namespace has nothing left to write

    def event(
        self, body: Mapping[str, Any], event_type: str, reason: str, note: str, *, action: str = ACTION_RELOAD
    ) -> None:
        if self.leading:
            self._recorder.record(body, event_type, reason, action, note)

    def lead(self, leading: bool) -> None:
        """Start (write every status that differs) or stop writing."""
        self.leading = leading
        if leading:
            for key in list(self._desired):
                self._schedule(key)

    def _schedule(self, key: ObjectKey) -> None:
        """Mark the object dirty (once, however often it changes) and wake its namespace's worker."""
        namespace = key[1]
        self._dirty.setdefault(namespace, {})[key] = None
        worker = self._workers.get(namespace)
        if worker is None or worker.done():
            self._workers[namespace] = asyncio.ensure_future(self._work(namespace))

    async def _work(self, namespace: str) -> None:
        """Write the namespace's dirty objects one at a time (so an object's writes land in the
        order made), each at its newest desired status, as the namespace's bucket allows."""
        try:
            dirty = self._dirty.get(namespace) or {}
            while dirty and self.leading:
                key = next(iter(dirty))
                if not self._wanted(key):
                    del dirty[key]
                    continue
                await self._bucket(namespace).acquire()
                if key not in dirty:
                    continue  # dropped while waiting for the token
                del dirty[key]  # from here on, a newer status marks it dirty again
                try:
                    await self._lane.run(self._patch, key)
                except Exception as error:  # never lose the worker: the others still need it
                    log.warning("status write failed: %s", error)
        finally:
            if self._workers.get(namespace) is asyncio.current_task():
                del self._workers[namespace]
            if not self._dirty.get(namespace):
                self._dirty.pop(namespace, None)

    def _bucket(self, namespace: str) -> TokenBucket:
        bucket = self._buckets.get(namespace)
        if bucket is None:
            loop = asyncio.get_running_loop()  # the loop's clock: fake time in tests
            bucket = self._buckets[namespace] = TokenBucket(self.namespace_qps, self.namespace_burst, clock=loop.time)
        return bucket

    def _wanted(self, key: ObjectKey) -> bool:
        found = self._desired.get(key)
        return found is not None and needs_write(self._written.get(key) or self._current.get(key), found[1])

    async def _patch(self, key: ObjectKey) -> None:
        if not self._wanted(key):
            return
        uid, desired = self._desired[key]
        current = self._written.get(key) or self._current.get(key)
        self._written[key] = desired
        plural, namespace, name = key
        body = {"metadata": {"uid": uid}, "status": merge_patch(current, desired)}
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}/{name}/status"
        try:
            await self._transport.request("PATCH", path, body=body, content_type=kube.CONTENT_MERGE_PATCH, decode=False)
            self.writes += 1
        except Exception as error:
            if self._written.get(key) is desired:
                self._written.pop(key, None)
            gone = (HTTPStatus.NOT_FOUND, HTTPStatus.CONFLICT)
            if isinstance(error, kube.ApiError) and error.status in gone:
                return  # deleted, or re-created: its own events bring the new state
            self._transport.count_failure("status")
            log.warning("status of %s %s/%s failed (%s); trying again in %.0f s",
                        plural, namespace, name, describe(error), self.retry_later)  # fmt: skip
            asyncio.get_running_loop().call_later(self.retry_later, self._retry, key)

    def _retry(self, key: ObjectKey) -> None:
        if self.leading and key in self._desired:
            self._schedule(key)

    async def drain(self) -> None:
        """Wait until no namespace has a write pending or in flight (tests, shutdown)."""
        while self._workers:
            await asyncio.wait(set(self._workers.values()))

    def close(self) -> None:
        for worker in self._workers.values():
            worker.cancel()


def _key(plural: str, body: Manifest) -> ObjectKey:
    # the namespace as given, "" when absent (not manifest.namespace_of's "default")
    return plural, str(manifest.meta(body).get("namespace") or ""), manifest.name_of(body)
