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


async def test_reports_on_an_object_are_never_dropped_and_a_newer_one_replaces_the_waiting_one() -> None:
    lanes = Lanes(critical=1, reports=2, reports_backlog=0)
    release = asyncio.Event()
    sent: list[str] = []
    in_flight: set[str] = set()

    def report(key: str, text: str) -> Any:
        async def call() -> None:
            assert key not in in_flight  # one report per object at a time
            in_flight.add(key)
            await release.wait()
            sent.append(text)
            in_flight.discard(key)

        return call

    for i in range(50):  # far past any backlog bound: none is dropped
        lanes.report_on(f"pod-{i}", f"pod-{i}", report(f"pod-{i}", f"pod-{i}:first"))
    await asyncio.sleep(0)  # two senders take pod-0 and pod-1
    lanes.report_on("pod-0", "pod-0", report("pod-0", "pod-0:second"))  # in flight: sent after it
    lanes.report_on("pod-9", "pod-9", report("pod-9", "pod-9:second"))  # waiting: replaces it
    release.set()
    await lanes.drain()

    assert len(sent) == 51 and lanes.reports.dropped == 0  # 50 firsts, pod-9 replaced, two seconds
    assert sent.index("pod-0:first") < sent.index("pod-0:second")
    assert "pod-9:first" not in sent and "pod-9:second" in sent


async def test_settle_drops_the_waiting_report_and_waits_for_the_one_in_flight() -> None:
    lanes = Lanes(critical=1, reports=1)
    release = asyncio.Event()
    sent: list[str] = []

    def report(text: str) -> Any:
        async def call() -> None:
            await release.wait()
            sent.append(text)

        return call

    lanes.report_on("a", "a", report("a"))
    lanes.report_on("b", "b", report("b"))
    await asyncio.sleep(0)  # "a" is in flight, "b" waits
    lanes.report_on("a", "a", report("a again"))
    settled = asyncio.ensure_future(lanes.settle("a"))
    await asyncio.sleep(0)
    assert not settled.done()  # "a" is still in flight
    await lanes.settle("b")  # waiting: dropped at once
    release.set()
    await settled
    await lanes.drain()

    assert sent == ["a"]
