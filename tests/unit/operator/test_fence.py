"""The fence on fake time: when a write may start, what is counted in flight, when shutdown may
hand the lease over. On a real API server: tests/e2e/test_leader_fence.py."""

from __future__ import annotations

import threading

import pytest

from scheduler_operator.fence import Fence, FencedError

DEADLINE = 10.0


class Clock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("renewals", "now", "allowed"),
    [
        pytest.param([], 0.0, False, id="never-renewed"),
        pytest.param([100.0], 100.0, True, id="just-renewed"),
        pytest.param([100.0], 109.99, True, id="inside-the-deadline"),
        pytest.param([100.0], 110.0, False, id="at-the-deadline"),
        pytest.param([100.0, 105.0], 114.0, True, id="a-later-renewal-extends"),
        pytest.param([105.0, 100.0], 114.0, True, id="a-late-report-of-an-older-renewal-never-shortens"),
    ],
)
def test_a_write_may_start_only_within_the_renew_deadline(renewals: list[float], now: float, allowed: bool) -> None:
    clock = Clock()
    fence = Fence(DEADLINE, clock=clock)
    for started in renewals:
        fence.renewed(started)
    clock.now = now

    if allowed:
        with fence.write("POST /binding"):
            assert fence.in_flight == 1
    else:
        with pytest.raises(FencedError, match="POST /binding: refused"), fence.write("POST /binding"):
            pass
    assert (fence.is_open, fence.refused, fence.in_flight) == (allowed, 0 if allowed else 1, 0)


def test_closing_refuses_at_once_but_lets_the_writes_in_flight_finish() -> None:
    clock = Clock(100.0)
    fence = Fence(DEADLINE, clock=clock)
    fence.renewed(100.0)
    started, release = threading.Event(), threading.Event()

    def write() -> None:
        with fence.write("DELETE /pods/victim"):
            started.set()
            release.wait(5)

    writer = threading.Thread(target=write)
    writer.start()
    started.wait(5)
    fence.close()

    with pytest.raises(FencedError), fence.write("POST /binding"):
        pass
    assert fence.wait_idle(timeout=0.01) is False  # shutdown must not hand over yet
    release.set()
    assert fence.wait_idle(timeout=5) is True
    writer.join(5)
    assert fence.in_flight == 0


@pytest.mark.parametrize(
    ("method", "fenced"),
    [
        pytest.param("GET", False, id="get"),
        pytest.param("HEAD", False, id="head"),
        pytest.param("POST", True, id="post"),
        pytest.param("PATCH", True, id="patch"),
        pytest.param("PUT", True, id="put"),
        pytest.param("DELETE", True, id="delete"),
    ],
)
def test_only_writes_are_fenced(method: str, fenced: bool) -> None:
    fence = Fence(DEADLINE, clock=Clock())  # closed: never renewed

    def send() -> None:
        with fence.guard(method, "https://api:6443/api/v1/namespaces/a/pods/p/binding?dryRun=All"):
            pass

    if fenced:
        with pytest.raises(FencedError, match=f"^{method} /api/v1/namespaces/a/pods/p/binding: refused"):
            send()
    else:
        send()
