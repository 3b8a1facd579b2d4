"""Clocks: the real monotonic clock, and a fake one for tests and for ``simulate``.

Everything time-based in the scheduler (queue backoff, unschedulable flush, Permit
timeouts, assumed-pod expiry) reads the injected clock, never ``time`` directly, so tests
need no sleeps and ``simulate`` can jump over backoff waits.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale."""
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
