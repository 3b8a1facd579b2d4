"""What the backend writes on a failed attempt, and the bounded lanes its calls run on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler_operator.control.backend import nomination_patch, scheduled_condition
from scheduler_operator.io.calls import Lane, Lanes
from tests.wrappers import make_pod

UNSCHED = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes",
           "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip


@pytest.mark.parametrize(
    ("pod", "reason", "message", "expected"),
    [
        pytest.param(make_pod().status(conditions=[]).obj(), "Unschedulable", "0/3 nodes",
                     {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"},
                     id="first-failure"),
        pytest.param(make_pod().status(conditions=[UNSCHED]).obj(), "Unschedulable", "0/3 nodes", None,
                     id="same-condition-skipped"),
        pytest.param(make_pod().status(conditions=[UNSCHED]).obj(), "Unschedulable", "0/4 nodes",
                     {**UNSCHED, "message": "0/4 nodes"}, id="new-message-keeps-transition-time"),
        pytest.param(make_pod().status(conditions=[UNSCHED]).obj(), "SchedulerError", "boom",
                     {**UNSCHED, "reason": "SchedulerError", "message": "boom"}, id="new-reason"),
    ],
)  # fmt: skip
def test_scheduled_condition(pod: dict[str, Any], reason: str, message: str, expected: dict[str, Any] | None) -> None:
    assert scheduled_condition(pod, reason, message) == expected


@pytest.mark.parametrize(
    ("carried", "wanted", "expected"),
    [
        pytest.param(None, "n1", {"nominatedNodeName": "n1"}, id="nominate"),
        pytest.param("n1", "n2", {"nominatedNodeName": "n2"}, id="nominate-elsewhere"),
        pytest.param("n1", "", {"nominatedNodeName": None}, id="clear-a-nomination"),
        pytest.param("n1", "n1", {}, id="same-node-not-written"),
        pytest.param(None, "", {}, id="nothing-to-clear"),
        pytest.param("", "", {}, id="empty-is-none"),
        pytest.param("n1", None, {}, id="mode-noop-leaves-it"),
    ],
)
def test_nomination_patch(carried: str | None, wanted: str | None, expected: dict[str, Any]) -> None:
    """Upstream ``updatePod``: only ModeOverride writes, and only a change (null deletes the field)."""
    assert nomination_patch(carried, wanted) == expected


async def test_a_lane_keeps_at_most_its_limit_in_flight() -> None:
    lane = Lane("t", 3)
    in_flight = peak = 0

    async def call() -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        for _ in range(3):
            await asyncio.sleep(0)  # the others run meanwhile (no time passes)
        in_flight -= 1

    await asyncio.gather(*(lane.run(call) for _ in range(12)))

    assert peak == 3


async def test_reports_past_the_backlog_are_dropped() -> None:
    lanes = Lanes(critical=1, reports=1, reports_backlog=2)
    release = asyncio.Event()
    done: list[int] = []

    async def report(i: int) -> None:
        await release.wait()
        done.append(i)

    accepted = [lanes.report(f"r{i}", lambda i=i: report(i)) for i in range(5)]  # type: ignore[misc]
    release.set()
    await lanes.drain()
    accepted.append(lanes.report("after", lambda: report(9)))
    await lanes.drain()

    assert accepted == [True, True, True, False, False, True]  # 1 in flight + 2 waiting, then room again
    assert lanes.reports.dropped == 2
    assert sorted(done) == [0, 1, 2, 9]
