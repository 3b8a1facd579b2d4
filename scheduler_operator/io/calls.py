"""Bounded concurrency for API calls: how many of a kind may be in flight at once.

The operator's writes are coroutines over the async HTTP layer (``scheduler_operator.io.transport``,
which also applies the client-side QPS/burst); a :class:`Lane` bounds how many of them run at
once (:meth:`Lane.run`, a semaphore). No call hops to a thread: the Lease, which did, has a
transport and an event loop of its own (``scheduler_operator.control.leader``).

The operator uses two lanes so that reports cannot starve binding: ``critical`` (bind, preemption,
nomination), 64 in flight by default, and ``reports`` (events, pod conditions, custom-resource
status), 16. ``--max-in-flight N`` sets the critical lane's limit, and the report lane's to N if
that is lower (:func:`lane_limits`). Upstream bounds neither: each binding and each preemption is
a goroutine of its own, limited only by the client's QPS. The critical lane had 16 once: on the
dev cluster PreemptionBasic's 1,000 preemptions (six calls each) queued behind it while the API
server, sharing two cores, answered slowly, and the preemptors they held were moved by every
victim's deletion meanwhile (bench/README.md). Reports come in two kinds:

* :meth:`Lanes.report`: fire and forget (events, custom-resource status). The backlog is bounded;
  past it, a report is dropped (and counted) rather than queued, as client-go's event broadcaster
  drops events under pressure (``DropIfChannelFull``).
* :meth:`Lanes.report_on`: one pending report per object (a pod's PodScheduled condition), never
  dropped. A newer report for an object replaces the one still waiting, and an object's reports
  are sent one at a time, in order: upstream's API dispatcher keeps one call per object the same
  way (v1.36.3 ``pkg/scheduler/backend/api_dispatcher/call_queue.go``). The backlog is thus
  bounded by the objects, not by a count. :meth:`Lanes.settle` drops an object's waiting report
  and waits out the one in flight: a binding overwrites a pending status patch there
  (``framework/api_calls/api_calls.go``: PodBinding is more relevant than PodStatusPatch).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from http import HTTPStatus
from typing import ParamSpec, TypeVar

from scheduler_operator.io.kube import ApiError, describe

log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

# The client-side rate limit the transport applies to every request: kube-scheduler's
# clientConnection defaults, pkg/scheduler/apis/config/v1/defaults.go (v1.36.3).
DEFAULT_QPS = 50.0
DEFAULT_BURST = 100
DEFAULT_CRITICAL_LIMIT = 64
DEFAULT_REPORTS_LIMIT = 16
DEFAULT_REPORTS_BACKLOG = 2000

Report = tuple[str, Callable[[], Awaitable[None]]]  # what it is (for the log), and the call


def lane_limits(max_in_flight: int) -> tuple[int, int]:
    """``--max-in-flight``: the critical lane's limit, and the report lane's (never more than
    its default: reports are fire and forget). Upstream records each event in a goroutine of its
    own (client-go v0.36.3 ``tools/events/event_broadcaster.go`` ``recordToSink``), all on one
    HTTP/2 connection, as ours are (``http2.Pool``). Over HTTP/1.1 (a server without HTTP/2,
    ``DISABLE_HTTP2``) each report in flight holds a connection of its own, and opening one costs
    both sides more than many requests (docs/operator-io.md, "Connections")."""
    return max_in_flight, min(max_in_flight, DEFAULT_REPORTS_LIMIT)


class Lane:
    """At most ``limit`` calls in flight; ``backlog``: how many may wait (None: unbounded)."""

    def __init__(self, name: str, limit: int, *, backlog: int | None = None) -> None:
        self.name = name
        self.limit = limit
        self.backlog = backlog
        self._semaphore = asyncio.Semaphore(limit)
        self.dropped = 0

    async def run(self, fn: Callable[P, Awaitable[T]], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Await ``fn(*args, **kwargs)`` once fewer than ``limit`` runs of the lane are in flight."""
        async with self._semaphore:
            return await fn(*args, **kwargs)


class Lanes:
    def __init__(
        self,
        *,
        critical: int = DEFAULT_CRITICAL_LIMIT,
        reports: int = DEFAULT_REPORTS_LIMIT,
        reports_backlog: int = DEFAULT_REPORTS_BACKLOG,
    ) -> None:
        self.critical = Lane("critical", critical)
        self.reports = Lane("reports", reports, backlog=reports_backlog)
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting: OrderedDict[str, Report] = OrderedDict()  # by object, oldest first
        self._later: dict[str, Report] = {}  # by object whose report is in flight
        self._sending: dict[str, asyncio.Future[None]] = {}
        self._senders = 0

    @property
    def max_in_flight(self) -> int:
        return self.critical.limit + self.reports.limit

    def report(self, what: str, fn: Callable[[], Awaitable[None]]) -> bool:
        """Run ``fn`` on the report lane in the background; False if dropped under pressure."""
        if len(self._tasks) >= self.reports.limit + (self.reports.backlog or 0):
            self.reports.dropped += 1
            if self.reports.dropped % 100 == 1:
                log.warning("report backlog full: dropped %s (%d dropped so far)", what, self.reports.dropped)
            return False
        task = asyncio.ensure_future(self._report(what, fn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    def report_on(self, key: str, what: str, fn: Callable[[], Awaitable[None]]) -> None:
        """Run ``fn`` on the report lane in the background, as the one report pending for the
        object ``key``: it replaces one still waiting, and waits for one in flight."""
        if key in self._sending:
            self._later[key] = (what, fn)
            return
        self._waiting[key] = (what, fn)  # a replaced report keeps its place in the line
        if self._senders < self.reports.limit:
            self._senders += 1
            task = asyncio.ensure_future(self._send_waiting())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def settle(self, key: str) -> None:
        """Drop the report waiting for ``key`` and wait for the one in flight, if any."""
        self.forget(key)
        sending = self._sending.get(key)
        if sending is not None:
            await asyncio.shield(sending)

    def forget(self, key: str) -> None:
        """Drop the report waiting for ``key`` (the object is gone, or its report is moot)."""
        self._waiting.pop(key, None)
        self._later.pop(key, None)

    async def _send_waiting(self) -> None:
        try:
            while self._waiting:
                key, (what, fn) = self._waiting.popitem(last=False)
                sent = self._sending[key] = asyncio.get_running_loop().create_future()
                try:
                    await self._report(what, fn)
                finally:
                    del self._sending[key]
                    sent.set_result(None)
                    later = self._later.pop(key, None)
                    if later is not None:
                        self._waiting[key] = later
        finally:
            self._senders -= 1

    async def _report(self, what: str, fn: Callable[[], Awaitable[None]]) -> None:
        try:
            await self.reports.run(fn)
        except Exception as exc:  # a lost report must never take the operator down
            if _namespace_terminating(exc):  # the object goes with its namespace: nothing to tell
                log.debug("%s skipped: its namespace is being deleted", what)
            else:
                log.warning("%s failed: %s", what, describe(exc))

    async def drain(self) -> None:
        """Wait for the background reports started so far (tests, shutdown)."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))


def _namespace_terminating(exc: BaseException) -> bool:
    """The API server's 403 for new content in a namespace being deleted: a Status whose details
    carry the cause ``NamespaceTerminating`` (k8s.io/api core/v1 ``NamespaceTerminatingCause``,
    set by the NamespaceLifecycle admission plugin)."""
    if not isinstance(exc, ApiError) or exc.status != HTTPStatus.FORBIDDEN:
        return False
    causes = exc.details.get("causes")
    return isinstance(causes, list) and any(
        isinstance(c, dict) and c.get("reason") == "NamespaceTerminating" for c in causes
    )
