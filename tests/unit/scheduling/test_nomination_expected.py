"""The pod says where it is going before PreBind's work (upstream v1.36.3 ``bindingCycle``,
``pkg/scheduler/schedule_one.go``, with NominatedNodeNameForExpectation, beta and on by default
since v1.35).

Before waiting at Permit, the binding cycle runs the PreBind plugins' pre-flights. When one has
work for the pod (or a Permit plugin holds it), the pod's ``status.nominatedNodeName`` is
written first, unless it names the node already, so that other components (the cluster
autoscaler) see where it is going while claims and volumes are bound. A plugin whose pre-flight
skips is not run at PreBind; a failed pre-flight fails the cycle. The binding then clears the
nomination, as the API server's binding does (ClearingNominatedNodeNameAfterBinding).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler_core.framework import CycleState, PodInfo, Status
from scheduler_core.framework.writes import Write, Written
from scheduler_core.simulator.backend import InMemoryCluster
from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler
from tests.wrappers import make_node, make_pod

ABSENT = "absent"  # the plugin has no pre-flight


class Preparer:
    """A PreBind plugin whose pre-flight answers ``Preparer.flight``; its PreBind records the
    nomination the pod carried in the cluster when it ran. ``Preparer.holds``: its Permit holds
    the pod until a test allows it."""

    name = "Preparer"
    args_model = None
    flight: Status | str | None = None
    holds = False
    cluster: InMemoryCluster
    seen: list[str | None] = []

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        return (Status.wait(), 30.0) if Preparer.holds else (None, 0.0)

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        Preparer.seen.append((Preparer.cluster.pods[pod.uid].get("status") or {}).get("nominatedNodeName"))
        return None


def with_pre_flight(flight: Status | None) -> Any:
    def pre_bind_pre_flight(self: Any, state: CycleState, pod: PodInfo, node_name: str) -> Any:
        return None, flight

    return pre_bind_pre_flight


SPEC = {"plugins": {"multiPoint": {"enabled": [{"name": "Preparer"}]}}}


async def run_one(
    flight: Status | str | None, *, nominated: str = "", holds: bool = False
) -> tuple[list[tuple[str, Any]], InMemoryCluster, Any]:
    """One pod through one attempt on node ``n``: the pod writes made (status patches and the
    binding), the cluster, and the scheduler."""
    plugin: Any = type("Preparer", (Preparer,), {})
    if flight != ABSENT:
        plugin.pre_bind_pre_flight = with_pre_flight(flight)  # type: ignore[arg-type]
    Preparer.holds = holds
    Preparer.seen = []
    scheduler, cluster, _ = make_scheduler(SPEC, extra_plugins={"Preparer": plugin})
    Preparer.cluster = cluster
    add_nodes(scheduler, cluster, [make_node().name("n").capacity(cpu="4", memory="8Gi").obj()])
    pod = make_pod().name("p").uid("p").req(cpu="1")
    add_pods(scheduler, cluster, [(pod.nominated_node_name(nominated) if nominated else pod).obj()])
    writes: list[tuple[str, Any]] = []
    write, bind = cluster.write, cluster.bind

    async def record_write(call: Write) -> Written:
        writes.append((f"{call.verb} {call.target}", call.obj.get("status")))
        return await write(call)

    async def record_bind(pod: PodInfo, node_name: str, annotations: Any = None) -> Status | None:
        writes.append(("bind", node_name))
        return await bind(pod, node_name, annotations)

    cluster.write = record_write  # type: ignore[method-assign]
    cluster.bind = record_bind  # type: ignore[method-assign]
    qpi = scheduler.queue.pop()
    assert qpi is not None
    await scheduler.schedule_one(qpi)
    if holds:
        await asyncio.sleep(0.01)
        (fwk,) = [fwk for _, fwk in scheduler.profiles]
        waiting = fwk.handle.waiting_pods.get("p")
        assert waiting is not None
        waiting.allow("Preparer")
    while scheduler.pending_binding():
        await asyncio.sleep(0)
    return writes, cluster, scheduler


NOMINATE = ("patch pods/status", {"nominatedNodeName": "n"})


@pytest.mark.parametrize(
    ("flight", "writes", "seen"),
    [
        pytest.param(None, [NOMINATE, ("bind", "n")], ["n"], id="pre-bind-has-work"),
        pytest.param(ABSENT, [NOMINATE, ("bind", "n")], ["n"], id="no-pre-flight-counts-as-work"),
        pytest.param(Status.skip(), [("bind", "n")], [], id="pre-bind-has-none-and-is-not-run"),
    ],
)
async def test_the_nomination_comes_before_pre_binds_work(flight: Any, writes: list[Any], seen: list[Any]) -> None:
    made, cluster, _ = await run_one(flight)
    assert made == writes
    assert Preparer.seen == seen
    bound = cluster.pods["p"]
    assert bound["spec"]["nodeName"] == "n"
    assert "nominatedNodeName" not in bound["status"]  # the binding cleared it


async def test_a_pod_held_at_permit_is_nominated_even_when_pre_bind_has_no_work() -> None:
    made, _, _ = await run_one(Status.skip(), holds=True)
    assert made == [NOMINATE, ("bind", "n")]


async def test_a_pod_nominated_to_its_node_already_is_not_written_again() -> None:
    made, _, _ = await run_one(None, nominated="n")
    assert made == [("bind", "n")]
    assert Preparer.seen == ["n"]


async def test_a_pod_nominated_elsewhere_is_nominated_to_its_node() -> None:
    made, _, _ = await run_one(None, nominated="elsewhere")
    assert made == [NOMINATE, ("bind", "n")]


async def test_a_failed_pre_flight_fails_the_cycle_and_the_pod_is_retried() -> None:
    made, cluster, scheduler = await run_one(Status.as_error("state lost"))
    assert made == []
    assert Preparer.seen == []
    assert not cluster.pods["p"]["spec"].get("nodeName")
    (event,) = [e for e in cluster.events if e.reason == "FailedScheduling"]
    assert event.message == 'running PreBindPreFlight "Preparer": state lost'
    assert scheduler.queue.contains(PodInfo(cluster.pods["p"]))  # requeued, not dropped


async def test_each_attempt_is_logged_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    # Upstream ScheduleOne logs "Attempting to schedule pod" at V(3); -v 4 (DEBUG) shows ours.
    with caplog.at_level("DEBUG", logger="scheduler_core.scheduler"):
        await run_one(None)
    assert [r.getMessage() for r in caplog.records if r.name == "scheduler_core.scheduler"] == [
        "Attempting to schedule pod default/p"
    ]


@pytest.mark.parametrize("answer", ["refused", "raised"])
async def test_a_failed_nomination_is_logged_and_the_pod_still_binds(
    answer: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Upstream: "not critical enough to stop binding cycles here"; a raise is not either.
    original = InMemoryCluster.write

    async def refuse(self: InMemoryCluster, call: Write) -> Written:
        if call.target == "pods/status":
            if answer == "raised":
                raise ConnectionResetError("connection lost")
            return None, Status.as_error("the API server is away")
        return await original(self, call)

    monkeypatch.setattr(InMemoryCluster, "write", refuse)
    _, cluster, _ = await run_one(None)
    assert cluster.pods["p"]["spec"]["nodeName"] == "n" and Preparer.seen == [None]
    assert any(
        "Failed to update the nominated node name in the binding cycle" in r.getMessage() for r in caplog.records
    )


async def test_a_failed_pre_flight_lets_go_of_a_pod_held_at_permit() -> None:
    plugin: Any = type("Preparer", (Preparer,), {"pre_bind_pre_flight": with_pre_flight(Status.as_error("lost"))})
    Preparer.holds = True
    scheduler, cluster, _ = make_scheduler(SPEC, extra_plugins={"Preparer": plugin})
    Preparer.cluster = cluster
    add_nodes(scheduler, cluster, [make_node().name("n").capacity(cpu="4", memory="8Gi").obj()])
    add_pods(scheduler, cluster, [make_pod().name("p").uid("p").req(cpu="1").obj()])
    qpi = scheduler.queue.pop()
    assert qpi is not None
    await scheduler.schedule_one(qpi)
    while scheduler.pending_binding():
        await asyncio.sleep(0)
    (fwk,) = [fwk for _, fwk in scheduler.profiles]
    assert fwk.handle.waiting_pods.get("p") is None  # not held for a next attempt to find
