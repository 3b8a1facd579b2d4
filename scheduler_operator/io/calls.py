"""Bounded concurrency for API calls: how many of a kind may be in flight at once.

The operator's writes are coroutines over the async HTTP layer (``scheduler_operator.io.transport``,
which also applies the client-side QPS/burst); a :class:`Lane` bounds how many of them run at
once (:meth:`Lane.run`, a semaphore). No call hops to a thread: the Lease, which did, has a
transport and an event loop of its own (``scheduler_operator.control.leader``).

The operator uses two lanes so that reports cannot starve binding: ``critical`` (bind, preemption,
nomination) and ``reports`` (events, pod conditions, custom-resource status), 16 in flight each
by default. The report lane also has a backlog bound: past it, a report is dropped (and counted)
rather than queued, as client-go's event broadcaster drops events under pressure.
"""

from __future__ import annotations

import asyncio
import logging
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
DEFAULT_CRITICAL_LIMIT = 16
DEFAULT_REPORTS_LIMIT = 16
DEFAULT_REPORTS_BACKLOG = 2000


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
