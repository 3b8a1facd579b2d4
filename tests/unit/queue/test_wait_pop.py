"""Blocking pop on asyncio (upstream active_queue.go pop waits on a condition variable,
woken by add, moves into activeQ or backoffQ, and Close)."""

from __future__ import annotations

import asyncio

from scheduler_core.clock import FakeClock
from scheduler_core.framework import NODE_ADD
from tests.wrappers import pod_info

from .support import make_queue, names, pop_and_fail, register


async def _started(task: asyncio.Task[object]) -> None:
    for _ in range(3):
        await asyncio.sleep(0)  # let the waiter reach its wait (no wall-clock sleep)
    assert not task.done()


async def test_wait_pop_returns_at_once_when_a_pod_is_queued() -> None:
    q, _ = make_queue()
    q.add(pod_info("a", uid="uid-a"))
    qpi = await q.wait_pop()
    assert qpi is not None and qpi.pod.name == "a"


async def test_wait_pop_wakes_on_add() -> None:
    q, _ = make_queue()
    waiter: asyncio.Task[object] = asyncio.create_task(q.wait_pop())
    await _started(waiter)
    q.add(pod_info("a", uid="uid-a"))
    qpi = await asyncio.wait_for(waiter, 5)
    assert qpi is not None and qpi.pod.name == "a"  # type: ignore[attr-defined]


async def test_wait_pop_wakes_on_a_move_to_active() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)})
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q, "P")
    waiter: asyncio.Task[object] = asyncio.create_task(q.wait_pop())
    await _started(waiter)
    clock.advance(20)
    q.move_all_to_active_or_backoff(NODE_ADD, None, None)
    assert await asyncio.wait_for(waiter, 5) is not None


async def test_wait_pop_wakes_when_backoff_is_flushed() -> None:
    q, clock = make_queue(clock=FakeClock(1000.0))
    q.add(pod_info("a", uid="uid-a"))
    pop_and_fail(q)  # Error: errored pods are not popped early
    waiter: asyncio.Task[object] = asyncio.create_task(q.wait_pop())
    await _started(waiter)
    clock.set(q.next_wakeup() or 0.0)
    q.flush_backoff_completed()
    assert await asyncio.wait_for(waiter, 5) is not None


async def test_wait_pop_returns_none_when_closed() -> None:
    q, _ = make_queue()
    waiter: asyncio.Task[object] = asyncio.create_task(q.wait_pop())
    await _started(waiter)
    q.close()
    assert await asyncio.wait_for(waiter, 5) is None


async def test_run_flushes_on_the_injected_schedule() -> None:
    q, clock = make_queue(hints={"P": register(NODE_ADD)}, max_in_unschedulable=0.5)
    q.add(pod_info("parked", uid="uid-parked", priority=2))
    q.add(pod_info("errored", uid="uid-errored", priority=1))
    pop_and_fail(q, "P")  # parked: in the pool until the 30 s leftover flush
    pop_and_fail(q)  # errored: backoffQ, 1 s, flushed by a 1 s tick
    seen: dict[float, tuple[list[str], list[str]]] = {}

    async def fake_sleep(seconds: float) -> None:
        assert seconds == 1.0
        clock.advance(seconds)
        if clock.now() >= 1040:
            q.close()

    def snapshot() -> None:
        pending = q.pending()
        seen[round(clock.now(), 3)] = (names(pending["active"]), names(pending["unschedulable"]))

    async def sleep_and_look(seconds: float) -> None:
        snapshot()
        await fake_sleep(seconds)

    await q.run(sleep=sleep_and_look)
    assert seen[1001.0] == ([], ["parked"])  # errored: expiry 1001 is in the current window
    assert seen[1002.0] == (["errored"], ["parked"])
    assert seen[1029.0] == (["errored"], ["parked"])
    assert sorted(seen[1030.0][0]) == ["errored", "parked"] and seen[1030.0][1] == []
