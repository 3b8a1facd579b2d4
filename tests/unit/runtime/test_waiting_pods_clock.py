"""Permit timeouts on an injected clock: deadlines that the owner enforces (``simulate``)."""

from __future__ import annotations

import asyncio

from scheduler_core.clock import FakeClock
from scheduler_core.runtime.waiting_pods import WaitingPods
from tests.wrappers import pod_info


async def test_a_clocked_wait_times_out_only_when_the_clock_passes_its_deadline() -> None:
    clock = FakeClock(100.0)
    pods = WaitingPods(clock)
    waiting = pods.wait(pod_info("w"), {"Gang": 30.0, "Other": 60.0})
    assert pods.next_deadline() == 130.0
    await asyncio.sleep(0)
    pods.expire(129.9)
    assert waiting.holding()
    clock.advance(30)
    pods.expire(clock.now())
    status = await waiting.wait()
    assert status is not None and status.message() == "rejected due to timeout after waiting 30s at plugin Gang"
    assert not waiting.holding() and pods.next_deadline() is None


async def test_an_allowed_plugin_no_longer_has_a_deadline() -> None:
    pods = WaitingPods(FakeClock())
    waiting = pods.wait(pod_info("w"), {"Gang": 30.0, "Other": 60.0})
    waiting.allow("Gang")
    assert pods.next_deadline() == 60.0
    waiting.allow("Other")
    assert await waiting.wait() is None
