"""List, then watch, one kind into a :class:`~scheduler_operator.watch.informer.Store`: client-go's Reflector.

Upstream: ``staging/src/k8s.io/client-go/tools/cache/reflector.go`` (``ListAndWatch``). For
every kind the scheduler reads (pods, nodes and ``resources.OBJECT_KINDS``) the operator runs
one :class:`Reflector` on its event loop over the shared ``transport.Transport``, instead of
Kopf's per-object workers: one JSON decode, one small view (``scheduler_operator.watch.views``) and
one store call per event, in the order the server sent them.

1. **List** in pages of ``page_size`` (``limit``/``continue``); the list's resourceVersion is
   where the watch starts. The listed objects replace the store's content
   (:meth:`Store.replace`): new ones are added, changed ones updated, and objects the store
   holds that the list does not are **deleted**: a deletion missed while no watch ran (a pod
   deleted during a gap, an assumed pod included) is delivered as a delete.
2. **Watch** from that resourceVersion with ``allowWatchBookmarks=true`` and a server-side
   ``timeoutSeconds``; every event (bookmarks included) moves the resourceVersion forward, and
   when the server ends the watch, the next one resumes from there without listing again.
   A read that waits longer than ``timeoutSeconds`` + :data:`IDLE_MARGIN` (the server would
   have ended it) means a dead connection: the watch is dropped and resumed.
3. **410 Gone** (an HTTP 410 answer, or an ``ERROR`` event with code 410: the resourceVersion
   was compacted away) → list again (1), which diffs against the store.

Any other failure (connection lost, 5xx) retries the watch from the last resourceVersion after
a backoff (0.8 s doubling to 30 s, as client-go's backoff manager), and a failed list is
retried the same way. A :class:`Wakeup` cuts a backoff short once the API server is seen
answering again (the Lease keeper's reads, every retry period): after an API server restart the
backoff had reached 25.6 s, on a 403 the server answers while its authorizer starts, and the
replica that took over scheduled nothing new for that long (issue 26: recovery 33 s after the
fault ended, budget 30 s). An ``optional`` kind the server does not serve (404: a CRD not
installed) is empty and counts as synced; it is listed again after the longest backoff.

:attr:`synced` turns true once the first list is in the store (client-go's ``HasSynced``) and
stays true.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from http import HTTPStatus
from typing import Any

from scheduler_core.framework import Manifest, manifest
from scheduler_operator.io import decoding
from scheduler_operator.io.kube import ApiError, describe
from scheduler_operator.io.transport import PAGE_SIZE, Transport, pages
from scheduler_operator.resources import Resource
from scheduler_operator.watch.informer import Store, namespaced_name_of
from scheduler_operator.watch.views import Body, view_of

log = logging.getLogger(__name__)

# A dead connection (a peer or proxy that went silent) is noticed after WATCH_TIMEOUT +
# IDLE_MARGIN = 40 s without a byte: no later than client-go's HTTP/2 health check, 30 s without
# a frame then a 15 s ping (k8s.io/apimachinery@v0.36.3/pkg/util/net/http.go). A watch that ends
# every 30 s costs one request per kind and half-minute; the resume needs no list.
WATCH_TIMEOUT = 30  # seconds the server keeps a watch open (timeoutSeconds)
IDLE_MARGIN = 10.0  # seconds past WATCH_TIMEOUT without a byte: the connection is dead
MIN_BACKOFF = 0.8  # client-go reflector: NewExponentialBackoffManager(800ms, 30s, ...)
MAX_BACKOFF = 30.0


class Gone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


class Wakeup:
    """Rung (from any thread) when the API server is seen answering: every reflector waiting out
    a backoff retries at once. The backoff spares a server that is down or struggling; once it
    answers a cheap request again, waiting on is only a delay. Rung at most every retry period
    (the Lease keeper's reads), so a kind that keeps failing is retried no faster than that."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event = asyncio.Event()
        self.rung = 0

    def ring(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._ring)

    def _ring(self) -> None:
        self.rung += 1
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self, backoff: Awaitable[None]) -> None:
        """Until ``backoff`` is over or the bell rings, whichever comes first."""
        self._loop = asyncio.get_running_loop()
        sleeping = asyncio.ensure_future(backoff)
        rung = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({sleeping, rung}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeping, rung):
                task.cancel()


class Reflector:
    def __init__(
        self,
        transport: Transport,
        resource: Resource,
        store: Store,
        *,
        page_size: int = PAGE_SIZE,
        watch_timeout: int = WATCH_TIMEOUT,
        view: Callable[[Body], Body] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        wakeup: Wakeup | None = None,
    ) -> None:
        self.transport = transport
        self._wakeup = wakeup
        self.resource = resource
        self.store = store
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.view = view or view_of(resource.kind)
        self._sleep = sleep
        self.resource_version: str | None = None
        self.synced = False
        self.lists = 0
        self.gone = 0  # 410s seen

    # -- list --------------------------------------------------------------------------------
    async def list_objects(self) -> None:
        """List every page, replace the store's content with it, remember its resourceVersion.

        The request for the next page is sent before this page's objects go into the store, so
        the server prepares it meanwhile (``transport.pages``); the store drops what the list
        lacks after the last page (:meth:`Store.add_listed`, :meth:`Store.drop_unlisted`)."""
        listed: set[str] = set()
        meta: Manifest = {}
        listing = pages(self.transport.request, self.resource.path, self._selector(), limit=self.page_size)
        try:
            async with aclosing(listing):
                async for page in listing:
                    meta = manifest.meta(page)
                    view = self.view
                    items = [view(item) for item in page.get("items") or ()]
                    listed |= self.store.add_listed(items, on_error=self._failed)
        except ApiError as error:
            if error.status == HTTPStatus.GONE:
                raise Gone(f"continue token of {self.resource.kind} list expired") from error
            if error.status != HTTPStatus.NOT_FOUND or not self.resource.optional:
                raise
            meta = {}  # not served: empty, listed again later
        for body in self.store.drop_unlisted(listed, on_error=self._failed):
            log.info("%s %s was deleted unseen", self.resource.kind, namespaced_name_of(body))
        self.resource_version = meta.get("resourceVersion") or None
        self.lists += 1
        self.synced = True

    def _selector(self) -> dict[str, str]:
        return {"fieldSelector": self.resource.field_selector} if self.resource.field_selector else {}

    def _failed(self, event_type: str | None, body: Manifest) -> None:
        log.exception("%s %s event for %s failed", self.resource.kind, event_type or "list", namespaced_name_of(body))

    # -- watch -------------------------------------------------------------------------------
    async def watch(self) -> None:
        """One watch from :attr:`resource_version` until the server ends it; raises ``Gone``."""
        params = {
            "watch": "1",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(self.watch_timeout),
            **self._selector(),
        }
        if self.resource_version:
            params["resourceVersion"] = self.resource_version
        idle = self.watch_timeout + IDLE_MARGIN
        try:
            async with self.transport.stream(self.resource.path, params, idle_timeout=idle) as content:
                buffer = b""
                while True:
                    chunk = await content.readany()
                    if not chunk:
                        return  # the server ended the watch (timeoutSeconds)
                    buffer += chunk
                    if b"\n" not in chunk:
                        continue
                    *lines, buffer = buffer.split(b"\n")
                    for line in lines:
                        if line.strip():
                            self.event(decoding.loads_api(line))
        except ApiError as error:
            if error.status == HTTPStatus.GONE:
                raise Gone(f"{self.resource.kind} watch: {error.message}") from error
            raise

    def event(self, event: dict[str, Any]) -> None:
        """One watch event into the store (``ERROR`` 410 raises ``Gone``, any other ``ApiError``)."""
        kind = event.get("type")
        body = event.get("object") or {}
        if kind == "ERROR":
            code = body.get("code")
            if code == HTTPStatus.GONE:
                raise Gone(f"{self.resource.kind} watch: {body.get('message')}")
            raise ApiError.of_status(body)
        rv = manifest.meta(body).get("resourceVersion")
        if kind != "BOOKMARK":
            try:
                self.store.handle(kind, self.view(body))
            except Exception:  # one bad object must not stop the stream of the others
                self._failed(kind, body)
        if rv:
            self.resource_version = str(rv)

    # -- the loop ----------------------------------------------------------------------------
    async def run(self) -> None:
        """List and watch for ever (cancel to stop)."""
        backoff = MIN_BACKOFF
        while True:
            try:
                if self.resource_version is None:
                    await self.list_objects()
                    if self.resource_version is None:  # not served (optional kind): look again later
                        await self._sleep(MAX_BACKOFF)
                        continue
                await self.watch()
                backoff = MIN_BACKOFF
            except Gone as gone:
                self.gone += 1
                log.info("%s; listing again", gone)
                self.resource_version = None
            except asyncio.CancelledError:
                raise
            except Exception as error:
                log.warning(
                    "%s list/watch failed (%s); retrying in %.1f s", self.resource.kind, describe(error), backoff
                )
                if self._wakeup is None:
                    await self._sleep(backoff)
                else:
                    await self._wakeup.wait(self._sleep(backoff))
                backoff = min(backoff * 2, MAX_BACKOFF)
