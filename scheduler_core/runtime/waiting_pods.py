"""Pods held at Permit (upstream ``runtime/waiting_pods_map.go``).

A pod waits until every plugin that asked it to wait has allowed it, or any plugin rejects
it, or a plugin's timeout passes ("rejected due to timeout after waiting 10s at plugin X").
The binding cycle awaits the outcome. Timeouts run on the asyncio loop's timers, or, when
the map is given a clock (a :class:`~scheduler_core.clock.FakeClock` that ``simulate``
advances), they are deadlines on that clock: the scheduler reads :meth:`WaitingPods.next_deadline`
when nothing else can progress, advances the clock and calls :meth:`WaitingPods.expire`, so
a gang's ``scheduleTimeoutSeconds`` passes in simulated time, not on the wall clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

from scheduler_core.clock import Clock
from scheduler_core.framework import Code, PodInfo, Status

MAX_PERMIT_TIMEOUT = 15 * 60.0  # upstream maxTimeout


def go_duration(seconds: float) -> str:
    """Format seconds as Go's ``time.Duration.String`` does ("10s", "1m30s", "500ms")."""
    nanos = round(seconds * 1e9)
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if nanos >= size:
                return sign + _trim(nanos / size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    secs = _trim(rest / 1e9) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}"
    if minutes:
        return f"{sign}{minutes}m{secs}"
    return sign + secs


def _trim(number: float) -> str:
    text = f"{number:.9f}".rstrip("0").rstrip(".")
    return text or "0"


def timeout_message(plugin: str, wait: float) -> str:
    return f"rejected due to timeout after waiting {go_duration(wait)} at plugin {plugin}"


class WaitingPodImpl:
    def __init__(self, pod: PodInfo, wait_times: dict[str, float], clock: Clock | None = None) -> None:
        """Wait on each plugin of ``wait_times`` for its seconds: on the loop's timers, or
        as deadlines on ``clock`` that :meth:`expire` enforces."""
        self.pod = pod
        self._loop = asyncio.get_event_loop()
        self._result: asyncio.Future[Status | None] = self._loop.create_future()
        self._timers: dict[str, asyncio.TimerHandle | None] = {}
        self._deadlines: dict[str, tuple[float, float]] = {}  # plugin -> (deadline, wait)
        for plugin, wait in wait_times.items():
            if clock is None:
                self._timers[plugin] = self._loop.call_later(wait, self.reject, plugin, timeout_message(plugin, wait))
            else:
                self._timers[plugin] = None
                self._deadlines[plugin] = (clock.now() + wait, wait)

    def pending_plugins(self) -> list[str]:
        return list(self._timers)

    def allow(self, plugin: str) -> None:
        timer = self._timers.pop(plugin, None)
        self._deadlines.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._timers and not self._result.done():
            self._result.set_result(None)

    def holding(self) -> bool:
        """Still held: no plugin rejected it and some plugin has yet to allow it."""
        return not self._result.done()

    def next_deadline(self) -> float | None:
        return min((deadline for deadline, _ in self._deadlines.values()), default=None)

    def expire(self, now: float) -> None:
        """Reject on the first plugin whose deadline has passed at ``now``."""
        for plugin, (deadline, wait) in sorted(self._deadlines.items(), key=lambda item: item[1][0]):
            if deadline <= now:
                self.reject(plugin, timeout_message(plugin, wait))
                return

    def reject(self, plugin: str, message: str) -> None:
        for timer in self._timers.values():
            if timer is not None:
                timer.cancel()
        self._timers.clear()
        self._deadlines.clear()
        if not self._result.done():
            self._result.set_result(Status(Code.UNSCHEDULABLE, message, plugin=plugin))

    async def wait(self) -> Status | None:
        return await self._result


class WaitingPods:
    def __init__(self, clock: Clock | None = None) -> None:
        """``clock``: measure timeouts on it (advanced by its owner) instead of loop timers."""
        self._pods: dict[str, WaitingPodImpl] = {}
        self._clock = clock

    def add(self, waiting: WaitingPodImpl) -> None:
        self._pods[waiting.pod.uid] = waiting

    def wait(self, pod: PodInfo, wait_times: dict[str, float]) -> WaitingPodImpl:
        """Hold ``pod`` until the plugins of ``wait_times`` allow it (or time out)."""
        waiting = WaitingPodImpl(pod, wait_times, self._clock)
        self.add(waiting)
        return waiting

    def next_deadline(self) -> float | None:
        """The earliest clock reading at which a waiting pod times out (clock mode only)."""
        return min((d for w in self._pods.values() if (d := w.next_deadline()) is not None), default=None)

    def expire(self, now: float) -> None:
        for waiting in list(self._pods.values()):
            waiting.expire(now)

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPodImpl | None:
        return self._pods.get(uid)

    def __iter__(self) -> Iterator[WaitingPodImpl]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)
