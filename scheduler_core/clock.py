"""Clocks: the real monotonic clock, and a fake one for tests and for ``simulate``.

Everything time-based in the scheduler (queue backoff, unschedulable flush, Permit
timeouts, assumed-pod expiry) reads the injected clock, never ``time`` directly, so tests
need no sleeps and ``simulate`` can jump over backoff waits.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale."""
        ...


@runtime_checkable
class SettableClock(Clock, Protocol):
    """A clock that can be moved forward (a FakeClock): with one, ``Scheduler.run_until_idle``
    jumps over backoff waits and Permit timeouts instead of waiting for them."""

    def set(self, when: float) -> None:
        """Move to ``when`` (a reading in the past leaves the clock where it is)."""
        ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()


class FakeClock:
    def __init__(self, start: float = 0.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go back")
        self._now += seconds

    def set(self, when: float) -> None:
        self.advance(max(0.0, when - self._now))
