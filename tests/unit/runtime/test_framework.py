"""Extension-point semantics of the Framework (upstream runtime/framework.go, framework_test.go)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from scheduler_core.config import PluginRef, PluginSet, SchedulerProfileSpec
from scheduler_core.framework import Code, CycleState, NodeColumns, PreBindPreFlightResult, PreFilterResult, Status
from scheduler_core.runtime.build import build_profile
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.runtime.waiting_pods import go_duration
from tests.unit.runtime.fakes import Binder, Journal, SkipBinder, Sort, make_plugin
from tests.wrappers import node_info, pod_info


def framework(
    *plugins: type[Any], weights: dict[str, int] | None = None, binders: tuple[type[Any], ...] = (Binder,)
) -> Framework:
    factories: tuple[type[Any], ...] = (Sort, *binders, *plugins)
    registry: dict[str, Any] = {p.name: p for p in factories}
    enabled = (
        [PluginRef(name="Sort")]
        + [PluginRef(name=p.name, weight=(weights or {}).get(p.name)) for p in plugins]
        + [PluginRef(name=b.name) for b in binders]
    )
    handle = FrameworkHandle("test", snapshot=lambda: None, api=None)  # type: ignore[arg-type, return-value]
    spec = SchedulerProfileSpec()
    built = build_profile(spec, registry, handle, PluginSet(enabled=enabled))
    return Framework(
        profile_name="test",
        scheduler_name=spec.scheduler_name,
        percentage_of_nodes_to_score=None,
        built=built,
        handle=handle,
    )


# -- PreFilter -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "code", "message", "skipped"),
    [
        pytest.param([(None, None), (None, None)], None, "", set(), id="all-success"),
        pytest.param([(None, Status.skip()), (None, None)], None, "", {"P0"}, id="skip-skips-its-filter"),
        pytest.param(
            [(None, Status.unresolvable("no")), (None, Status.as_error("never run"))],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "no",
            set(),
            id="unresolvable-stops-at-once",
        ),
        pytest.param(
            [(None, Status.unschedulable("maybe")), (None, None)],
            Code.UNSCHEDULABLE,
            "maybe",
            set(),
            id="unschedulable-lets-others-run",
        ),
        pytest.param(
            [(None, Status.as_error("boom")), (None, None)],
            Code.ERROR,
            'running PreFilter plugin "P0": boom',
            set(),
            id="error-wrapped",
        ),
        pytest.param(
            [(PreFilterResult(frozenset({"a"})), None), (PreFilterResult(frozenset({"b"})), None)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't satisfy plugin(s) [P0 P1] simultaneously",
            set(),
            id="disjoint-results",
        ),
        pytest.param(
            [(PreFilterResult(frozenset()), None), (None, None)],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "node(s) didn't satisfy plugin P0",
            set(),
            id="empty-result-one-plugin",
        ),
    ],
)
def test_pre_filter(answers: list[Any], code: Code | None, message: str, skipped: set[str]) -> None:
    journal = Journal()
    plugins = [
        make_plugin(f"P{i}", journal=journal, pre_filter=a, points=("pre_filter",)) for i, a in enumerate(answers)
    ]
    fwk = framework(*plugins)
    state = CycleState()
    outcome = fwk.run_pre_filter(state, pod_info(), [])
    if code is None:
        assert outcome.status is None
    else:
        assert outcome.status is not None and outcome.status.code is code and outcome.status.message() == message
    assert state.skip_filter_plugins == skipped
    if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE and "simultaneously" not in message and "plugin P0" not in message:
        assert journal.calls == ["P0.pre_filter"]


def test_pre_filter_results_intersect() -> None:
    plugins = [
        make_plugin("P0", pre_filter=(PreFilterResult(frozenset({"a", "b"})), None), points=("pre_filter",)),
        make_plugin("P1", pre_filter=(PreFilterResult(frozenset({"b", "c"})), None), points=("pre_filter",)),
    ]
    outcome = framework(*plugins).run_pre_filter(CycleState(), pod_info(), [])
    assert outcome.result == PreFilterResult(frozenset({"b"}))
    assert outcome.plugins_with_nodes == {"P0", "P1"}


# -- Filter --------------------------------------------------------------------------------------


def test_filter_stops_at_first_rejection_and_names_plugin() -> None:
    journal = Journal()
    f1 = make_plugin("F1", journal=journal, filter_status={"n": Status.unschedulable("too big")}, points=("filter",))
    f2 = make_plugin("F2", journal=journal, points=("filter",))
    status = framework(f1, f2).run_filter(CycleState(), pod_info(), node_info("n"))
    assert status is not None and status.plugin == "F1" and status.reasons == ("too big",)
    assert journal.calls == ["F1.filter(n)"]


def test_filter_error_is_wrapped() -> None:
    f1 = make_plugin("F1", filter_status={"n": Status(Code.WAIT, "huh")}, points=("filter",))
    status = framework(f1).run_filter(CycleState(), pod_info(), node_info("n"))
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'running "F1" filter plugin: huh'


def test_skipped_filter_does_not_run() -> None:
    f1 = make_plugin("F1", filter_status={"n": Status.unschedulable("x")}, points=("filter",))
    state = CycleState()
    state.skip_filter_plugins.add("F1")
    assert framework(f1).run_filter(state, pod_info(), node_info("n")) is None


# -- Score ---------------------------------------------------------------------------------------


def _score(fwk: Framework, nodes: list[Any]) -> Any:
    columns = NodeColumns(nodes)
    rows = np.arange(len(nodes), dtype=np.int64)
    return fwk.run_score(CycleState(), pod_info(), nodes, columns, rows)


def test_scores_normalized_then_weighted_and_summed() -> None:
    s1 = make_plugin("S1", scores={"a": 10, "b": 5}, normalize=True, points=("score",))
    s2 = make_plugin("S2", scores={"a": 1, "b": 3}, points=("score",))
    outcome, status = _score(framework(s1, s2, weights={"S1": 3}), [node_info("a"), node_info("b")])
    assert status is None
    assert outcome.names == ["S1", "S2"]
    assert outcome.weighted[0].tolist() == [300, 150]
    assert outcome.totals.tolist() == [301, 153]


@pytest.mark.parametrize("bad", [pytest.param(101, id="above-100"), pytest.param(-1, id="below-0")])
def test_out_of_range_score_aborts(bad: int) -> None:
    s1 = make_plugin("S1", scores={"a": bad}, points=("score",))
    _, status = _score(framework(s1), [node_info("a")])
    assert status is not None and status.code is Code.ERROR
    assert status.message() == (
        f'applying score defaultWeights on Score plugins: plugin "S1" returns an invalid score {bad}, '
        "it should in the range of [0, 100] after normalizing"
    )


def test_skipped_score_plugin_contributes_nothing() -> None:
    s1 = make_plugin("S1", scores={"a": 50}, points=("score",))
    fwk = framework(s1)
    state = CycleState()
    state.skip_score_plugins.add("S1")
    nodes = [node_info("a")]
    outcome, _ = fwk.run_score(state, pod_info(), nodes, NodeColumns(nodes), np.arange(1))
    assert outcome is not None
    assert outcome.names == [] and outcome.totals.tolist() == [0]


# -- Reserve / Permit ----------------------------------------------------------------------------


def test_reserve_in_order_unreserve_in_reverse() -> None:
    journal = Journal()
    r1 = make_plugin("R1", journal=journal, points=("reserve",))
    r2 = make_plugin("R2", journal=journal, reserve_status=Status.unschedulable("full"), points=("reserve",))
    fwk = framework(r1, r2)
    status = fwk.run_reserve(CycleState(), pod_info(), "n")
    assert status is not None and status.plugin == "R2"
    fwk.run_unreserve(CycleState(), pod_info(), "n")
    assert journal.calls == ["R1.reserve", "R2.reserve", "R2.unreserve", "R1.unreserve"]


def test_permit_reject_names_plugin() -> None:
    p1 = make_plugin("P1", permit=(Status.unschedulable("not now"), 0), points=("permit",))
    status = framework(p1).run_permit(CycleState(), pod_info(), "n")
    assert status is not None and status.code is Code.UNSCHEDULABLE and status.plugin == "P1"


async def test_permit_wait_then_allow() -> None:
    p1 = make_plugin("P1", permit=(Status.wait(), 30), points=("permit",))
    p2 = make_plugin("P2", permit=(Status.wait(), 30), points=("permit",))
    fwk = framework(p1, p2)
    pod = pod_info("w")
    status = fwk.run_permit(CycleState(), pod, "n")
    assert status is not None and status.code is Code.WAIT
    waiting = fwk.handle.get_waiting_pod(pod.uid)
    assert waiting is not None and sorted(waiting.pending_plugins()) == ["P1", "P2"]
    waiter = asyncio.ensure_future(fwk.wait_on_permit(pod))
    waiting.allow("P1")
    await asyncio.sleep(0)
    assert not waiter.done()  # P2 has not allowed yet
    waiting.allow("P2")
    assert await waiter is None
    assert fwk.handle.get_waiting_pod(pod.uid) is None


async def test_permit_reject_while_waiting() -> None:
    fwk = framework(make_plugin("P1", permit=(Status.wait(), 30), points=("permit",)))
    pod = pod_info("w")
    fwk.run_permit(CycleState(), pod, "n")
    waiter = asyncio.ensure_future(fwk.wait_on_permit(pod))
    assert fwk.handle.reject_waiting_pod(pod.uid)
    status = await waiter
    assert status is not None and status.code is Code.UNSCHEDULABLE


@pytest.mark.looptime
async def test_permit_timeout_rejects_with_upstream_message() -> None:
    fwk = framework(make_plugin("P1", permit=(Status.wait(), 10), points=("permit",)))
    pod = pod_info("w")
    fwk.run_permit(CycleState(), pod, "n")
    loop = asyncio.get_running_loop()
    start = loop.time()
    status = await fwk.wait_on_permit(pod)
    assert status is not None and status.message() == "rejected due to timeout after waiting 10s at plugin P1"
    assert loop.time() - start == pytest.approx(10)


@pytest.mark.looptime
async def test_permit_timeout_capped_at_15_minutes() -> None:
    fwk = framework(make_plugin("P1", permit=(Status.wait(), 3600), points=("permit",)))
    pod = pod_info("w")
    fwk.run_permit(CycleState(), pod, "n")
    status = await fwk.wait_on_permit(pod)
    assert status is not None and "after waiting 15m0s" in status.message()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(10, "10s"), (0.5, "500ms"), (90, "1m30s"), (900, "15m0s"), (3661, "1h1m1s"), (1.5, "1.5s"), (0, "0s")],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


# -- Bind ----------------------------------------------------------------------------------------


async def test_bind_skip_passes_to_next_binder() -> None:
    Binder.calls.clear()
    fwk = framework(binders=(SkipBinder, Binder))
    assert await fwk.run_bind(CycleState(), pod_info("b"), "n") is None
    assert Binder.calls == [("b", "n")]


async def test_bind_all_skip_is_an_error() -> None:
    fwk = framework(binders=(SkipBinder,))
    status = await fwk.run_bind(CycleState(), pod_info("b"), "n")
    assert status is not None and status.code is Code.ERROR


async def test_pre_bind_and_post_bind_run_in_order() -> None:
    journal = Journal()
    a = make_plugin("A", journal=journal, points=("pre_bind", "post_bind"))
    b = make_plugin("B", journal=journal, points=("pre_bind", "post_bind"))
    fwk = framework(a, b)
    assert await fwk.run_pre_bind(CycleState(), pod_info(), "n") is None
    await fwk.run_post_bind(CycleState(), pod_info(), "n")
    assert journal.calls == ["A.pre_bind", "B.pre_bind", "A.post_bind", "B.post_bind"]


# -- PreBindPreFlight and PreBind groups (v1.36.3 framework/runtime/framework.go) ------------------


def pre_binder(
    name: str,
    journal: Journal,
    flight: Status | str | None = None,
    *,
    parallel: bool = False,
    answer: Status | None = None,
    gate: asyncio.Event | None = None,
) -> type[Any]:
    """A PreBind plugin whose pre-flight answers ``flight`` ("absent": it has none) and whose
    PreBind answers ``answer``, after ``gate`` is set when one is given."""

    class PreBinder:
        args_model = None

        def __init__(self, args: Any, handle: Any) -> None:
            pass

        async def pre_bind(self, state: CycleState, pod: Any, node_name: str) -> Status | None:
            journal.calls.append(f"{name}.pre_bind")
            try:
                if gate is not None:
                    await gate.wait()
            except asyncio.CancelledError:
                journal.calls.append(f"{name}.cancelled")
                raise
            journal.calls.append(f"{name}.pre_bind done")
            return answer

    PreBinder.name = name  # type: ignore[attr-defined]
    if flight != "absent":

        def pre_bind_pre_flight(self: Any, state: CycleState, pod: Any, node_name: str) -> Any:
            journal.calls.append(f"{name}.pre_flight({node_name})")
            return PreBindPreFlightResult(allow_parallel=parallel), flight

        PreBinder.pre_bind_pre_flight = pre_bind_pre_flight  # type: ignore[attr-defined]
    return PreBinder


@pytest.mark.parametrize(
    ("flights", "code", "message", "skipped"),
    [
        pytest.param([Status.skip(), Status.skip()], Code.SKIP, "", {"A", "B"}, id="all-skip"),
        pytest.param([Status.skip(), None], None, "", {"A"}, id="one-has-work"),
        pytest.param([Status.skip(), "absent"], None, "", {"A"}, id="no-pre-flight-counts-as-work"),
        pytest.param(
            [Status.as_error("boom"), None], Code.ERROR, 'running PreBindPreFlight "A": boom', set(), id="error"
        ),
        pytest.param(
            [None, Status.unschedulable("no")],
            Code.ERROR,
            'PreBindPreFlight B returned "Unschedulable", which is unsupported. '
            "It is supposed to return Success, Skip, or Error status",
            set(),
            id="unsupported-code",
        ),
    ],
)
def test_pre_bind_pre_flights(flights: list[Any], code: Code | None, message: str, skipped: set[str]) -> None:
    journal = Journal()
    fwk = framework(pre_binder("A", journal, flights[0]), pre_binder("B", journal, flights[1]))
    state = CycleState()
    status = fwk.run_pre_bind_pre_flights(state, pod_info(), "n")
    assert (status.code if status else None) is code
    assert (status.message() if status else "") == message
    if code is not Code.ERROR:
        assert state.skip_pre_bind_plugins == skipped


def test_framework_without_pre_bind_plugins_skips_pre_flight() -> None:
    status = framework().run_pre_bind_pre_flights(CycleState(), pod_info(), "n")
    assert status is not None and status.code is Code.SKIP


async def test_pre_bind_runs_only_what_pre_flight_did_not_skip() -> None:
    journal = Journal()
    fwk = framework(pre_binder("A", journal, Status.skip()), pre_binder("B", journal, None))
    state = CycleState()
    assert fwk.run_pre_bind_pre_flights(state, pod_info(), "n") is None
    assert await fwk.run_pre_bind(state, pod_info(), "n") is None
    assert journal.calls == ["A.pre_flight(n)", "B.pre_flight(n)", "B.pre_bind", "B.pre_bind done"]


def test_pre_bind_groups_as_upstream_chunks_them() -> None:
    journal = Journal()
    plugins = [
        pre_binder("P1", journal, None, parallel=True),
        pre_binder("P2", journal, None, parallel=True),
        pre_binder("S1", journal, Status.skip()),  # skipped, yet it ends the group before it
        pre_binder("P3", journal, Status.skip(), parallel=True),  # skipped: in no group
        pre_binder("P4", journal, None, parallel=True),
        pre_binder("S2", journal, None),
        pre_binder("P5", journal, None, parallel=True),
    ]
    fwk = framework(*plugins)
    state = CycleState()
    fwk.run_pre_bind_pre_flights(state, pod_info(), "n")
    assert [[p.name for p in group] for group in fwk.pre_bind_groups(state)] == [
        ["P1", "P2"],
        ["P4"],
        ["S2"],
        ["P5"],
    ]


async def test_parallel_pre_binds_run_at_once() -> None:
    journal = Journal()
    gate = asyncio.Event()
    # A waits until B has run: one after the other, A would wait for ever.
    a = pre_binder("A", journal, None, parallel=True, gate=gate)
    fwk = framework(a, pre_binder("B", journal, None, parallel=True))
    state = CycleState()
    fwk.run_pre_bind_pre_flights(state, pod_info(), "n")
    run = asyncio.ensure_future(fwk.run_pre_bind(state, pod_info(), "n"))
    await asyncio.sleep(0.01)
    assert "B.pre_bind done" in journal.calls and not run.done()
    gate.set()
    assert await asyncio.wait_for(run, 1) is None


async def test_a_failing_parallel_pre_bind_cancels_the_others_and_names_itself() -> None:
    journal = Journal()
    never = asyncio.Event()
    fwk = framework(
        pre_binder("A", journal, None, parallel=True, gate=never),
        pre_binder("B", journal, None, parallel=True, answer=Status.as_error("claim refused")),
    )
    state = CycleState()
    fwk.run_pre_bind_pre_flights(state, pod_info(), "n")
    status = await asyncio.wait_for(fwk.run_pre_bind(state, pod_info(), "n"), 1)
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'running PreBind plugin "B": claim refused'
    assert "A.cancelled" in journal.calls  # and awaited before the answer


async def test_a_pre_bind_that_answers_skip_fails_the_binding_as_upstream() -> None:
    # v1.36.3 framework.go RunPreBindPlugins: Skip is not Success, so it is an error there
    # (a plugin skips PreBind through its pre-flight); the next plugin does not run.
    journal = Journal()
    fwk = framework(
        pre_binder("A", journal, None, answer=Status(Code.SKIP, "nothing to do")), pre_binder("B", journal, None)
    )
    state = CycleState()
    fwk.run_pre_bind_pre_flights(state, pod_info(), "n")
    status = await fwk.run_pre_bind(state, pod_info(), "n")
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'running PreBind plugin "A": nothing to do'
    assert "B.pre_bind" not in journal.calls


async def test_will_wait_on_permit() -> None:
    fwk = framework(make_plugin("W", points=("permit",), permit=(Status.wait(), 30.0)))
    pod = pod_info("w")
    assert not fwk.will_wait_on_permit(pod)
    fwk.run_permit(CycleState(), pod, "n")
    assert fwk.will_wait_on_permit(pod)
    fwk.handle.waiting_pods.get(pod.uid).reject("W", "done")  # type: ignore[union-attr]
    assert await fwk.wait_on_permit(pod) is not None
    assert not fwk.will_wait_on_permit(pod)
