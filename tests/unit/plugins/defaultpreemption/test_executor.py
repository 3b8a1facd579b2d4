"""Carrying preemption out asynchronously (upstream preemption/executor_test.go
TestIsPodRunningPreemption, TestPrepareCandidate, TestAsyncPreemptionFailure and
default_preemption_test.go TestPreEnqueue, v1.36.3)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from scheduler_core.framework import Code, PodInfo, PodUID, Status
from scheduler_core.framework.writes import Write, Written
from scheduler_core.plugins.defaultpreemption.executor import _PendingVictim
from scheduler_core.runtime.waiting_pods import WaitingPodImpl
from tests.unit.plugins.defaultpreemption.harness import HIGH, LOW, MID, RecordingAPI, make_env, run
from tests.wrappers import make_node, pod, pod_info

REASON = "crd-scheduler: preempting to accommodate a higher priority pod"


@pytest.mark.parametrize(
    ("preempting", "victims_on_node", "expected"),
    [
        pytest.param({}, [], False, id="TestIsPodRunningPreemption/preemptor not in preemptingSet"),
        pytest.param({"other": _PendingVictim(PodUID("victim1"), "node")}, [], False, id="lastVictimSet of another"),
        pytest.param(
            {"preemptor": None},
            [],
            True,
            id="TestIsPodRunningPreemption/preemptor in preemptingSet, no lastVictim for preemptor",
        ),
        pytest.param(
            {"preemptor": _PendingVictim(PodUID("victim1"), "node")},
            [],
            False,
            id="TestIsPodRunningPreemption/preemptor in preemptingSet, victim in lastVictimSet, not in PodLister",
        ),
        pytest.param(
            {"preemptor": _PendingVictim(PodUID("victim1"), "node")},
            [pod("victim1", uid="victim1", node_name="node"), pod("victim2", uid="victim2", node_name="node")],
            True,
            id="TestIsPodRunningPreemption/preemptor in preemptingSet, victim in lastVictimSet and in PodLister",
        ),
        pytest.param(
            {"preemptor": _PendingVictim(PodUID("victim-deleted"), "node")},
            [
                pod("victim1", uid="victim1", node_name="node"),
                pod("victim-deleted", uid="victim-deleted", node_name="node", terminating=True),
            ],
            False,
            id="TestIsPodRunningPreemption/preemptor in preemptingSet,"
            " victim in lastVictimSet and in PodLister with deletion timestamp",
        ),
        pytest.param(
            {"preemptor": _PendingVictim(PodUID("victim1"), "gone")},
            [],
            False,
            id="the victim's node is gone",
        ),
    ],
)
def test_is_running_preemption(
    preempting: dict[str, _PendingVictim | None], victims_on_node: list[dict[str, Any]], expected: bool
) -> None:
    env = make_env([make_node().name("node").capacity_only(pods="32").obj()], victims_on_node)
    env.plugin.executor._preempting = {PodUID(k): v for k, v in preempting.items()}
    assert env.plugin.executor.is_running_preemption(PodUID("preemptor")) is expected
    status = env.plugin.pre_enqueue(pod_info("preemptor", uid="preemptor"))
    if expected:
        assert status == Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for the preemption for this pod to be finished"
        )
    else:
        assert status is None


def test_pre_enqueue_holds_the_preemptor_until_its_last_victim_is_preempted() -> None:
    """TestPreEnqueue: the preemptor is held while its victims are evicted; another pod is not."""
    api = RecordingAPI(gate=asyncio.Event())
    pods = [pod("v1", uid="v1", node_name="n", priority=LOW), pod("v2", uid="v2", node_name="n", priority=LOW)]
    env = make_env([make_node().name("n").capacity_only(pods="32").obj()], pods, api=api)
    preemptor = pod_info("p", uid="p", priority=HIGH)
    other = pod_info("q", uid="q", priority=HIGH)
    victims = list(env.snapshot.get("n").pods)  # type: ignore[union-attr]

    async def scenario() -> list[bool]:
        assert env.plugin.executor.actuate("n", victims, preemptor) is None
        seen = [env.plugin.pre_enqueue(preemptor) is not None, env.plugin.pre_enqueue(other) is not None]
        await asyncio.sleep(0)
        assert api.gate is not None
        api.gate.set()
        await env.plugin.executor.wait()
        seen.append(env.plugin.pre_enqueue(preemptor) is not None)
        return seen

    assert run(scenario()) == [True, False, False]
    assert api.deleted == [("v1", REASON), ("v2", REASON)]


def test_prepare_candidate() -> None:
    """Victims are deleted (one already terminating is not), a victim waiting at Permit is
    rejected instead, and lower-priority pods nominated to the node lose their nomination."""
    pods = [
        pod("victim", uid="victim", node_name="n", priority=LOW),
        pod("terminating", uid="terminating", node_name="n", priority=LOW, terminating=True),
        pod("waiting", uid="waiting", node_name="n", priority=LOW),
    ]
    env = make_env(
        [make_node().name("n").capacity_only(pods="32").obj(), make_node().name("m").capacity_only(pods="32").obj()],
        pods,
    )
    preemptor = pod_info("p", uid="p", priority=HIGH)
    low_nominated = pod_info("low-nominated", uid="low-nominated", priority=MID)
    high_nominated = pod_info("high-nominated", uid="high-nominated", priority=HIGH)
    elsewhere = pod_info("elsewhere", uid="elsewhere", priority=LOW)
    env.nominator.add_nominated_pod(low_nominated, "n")
    env.nominator.add_nominated_pod(high_nominated, "n")
    env.nominator.add_nominated_pod(elsewhere, "m")
    victims = list(env.snapshot.get("n").pods)  # type: ignore[union-attr]
    waiting_pod = next(v for v in victims if v.name == "waiting")

    async def scenario() -> Status | None:
        waiting = WaitingPodImpl(waiting_pod, {"Gate": 60.0})
        env.fwk.handle.waiting_pods.add(waiting)
        outcome = waiting.wait()
        env.plugin.executor.actuate("n", victims, preemptor)
        await env.plugin.executor.wait()
        return await outcome

    rejection = run(scenario())
    assert rejection is not None and rejection.is_rejected()
    assert env.api.deleted == [("victim", REASON)]
    assert env.api.nominations == [("low-nominated", "")]


def test_nothing_to_preempt_when_every_victim_terminates() -> None:
    """prepareCandidateAsync returns at once: no task, nominations untouched."""
    env = make_env(
        [make_node().name("n").capacity_only(pods="32").obj()],
        [pod("t", uid="t", node_name="n", priority=LOW, terminating=True)],
    )
    env.nominator.add_nominated_pod(pod_info("low", uid="low", priority=LOW), "n")

    async def scenario() -> None:
        env.plugin.executor.actuate("n", list(env.snapshot.get("n").pods), pod_info("p", uid="p", priority=HIGH))  # type: ignore[union-attr]
        assert not env.plugin.executor.tasks
        assert not env.plugin.executor.is_running_preemption(PodUID("p"))

    run(scenario())
    assert env.api.deleted == [] and env.api.nominations == []


@pytest.mark.parametrize(
    ("fail", "deleted", "activated"),
    [
        # TestAsyncPreemptionFailure: after a failed call the last victim is left alone, and
        # the preemptor, no longer held, is activated (upstream's deferred Activate on an error
        # result): no deletion event would move it. v2 went alongside v1, as upstream's goroutines.
        pytest.param({"v1"}, ["v2"], ["p"], id="a-failed-deletion-skips-the-last-victim-and-activates"),
        # Upstream v1.36.3 activates nobody here; the preemptor may have missed its event while
        # held (kubernetes#141694's family; tests/unit/scheduling/test_preemption_e2e_sim.py).
        pytest.param(set(), ["v1", "v2", "v3"], ["p"], id="a-preemption-that-succeeds-activates-the-preemptor"),
    ],
)
def test_outcome_of_the_evictions(fail: set[str], deleted: list[str], activated: list[str]) -> None:
    api = RecordingAPI(fail=fail)
    pods = [
        pod("v1", uid="v1", node_name="n", priority=LOW),
        pod("v2", uid="v2", node_name="n", priority=LOW),
        pod("v3", uid="v3", node_name="n", priority=LOW),
    ]
    env = make_env([make_node().name("n").capacity_only(pods="32").obj()], pods, api=api)
    victims = sorted(env.snapshot.get("n").pods, key=lambda v: v.name)  # type: ignore[union-attr]
    preemptor = pod_info("p", uid="p", priority=HIGH)

    async def scenario() -> None:
        env.plugin.executor.actuate("n", victims, preemptor)
        await env.plugin.executor.wait()

    run(scenario())
    assert api.deleted_names == deleted
    assert not env.plugin.executor.is_running_preemption(preemptor.uid)
    assert env.activated == activated


def _three_victims(api: RecordingAPI) -> tuple[Any, list[PodInfo], PodInfo]:
    pods = [pod(name, uid=name, node_name="n", priority=LOW) for name in ("v1", "v2", "v3")]
    env = make_env([make_node().name("n").capacity_only(pods="32").obj()], pods, api=api)
    victims = sorted(env.snapshot.get("n").pods, key=lambda v: v.name)  # type: ignore[union-attr]
    return env, victims, pod_info("p", uid="p", priority=HIGH)


def test_every_victim_but_the_last_is_preempted_at_once() -> None:
    """Upstream's Parallelizer().Until over victims[:-1]: v1 and v2 are both on the wire before
    either answers; the last only after both did (executor.go prepareCandidateAsync)."""
    api = RecordingAPI(gate=asyncio.Event())
    env, victims, preemptor = _three_victims(api)

    async def scenario() -> list[list[str]]:
        env.plugin.executor.actuate("n", victims, preemptor)
        for _ in range(5):
            await asyncio.sleep(0)
        seen = [list(api.started)]
        assert api.gate is not None
        api.gate.set()
        await env.plugin.executor.wait()
        return [*seen, list(api.started)]

    assert run(scenario()) == [["v1", "v2"], ["v1", "v2", "v3"]]
    assert sorted(api.deleted_names) == ["v1", "v2", "v3"] and api.deleted_names[-1] == "v3"


def test_a_failure_cancels_the_deletions_still_under_way() -> None:
    """SendWithCancel: v1's refusal cancels v2's deletion, held on the wire; v2 is no longer
    counted as asked (another preemption may pick it), and the last victim is left alone."""
    api = RecordingAPI(gate=asyncio.Event(), gated={"v2"}, fail={"v1"})
    env, victims, preemptor = _three_victims(api)

    async def scenario() -> None:
        env.plugin.executor.actuate("n", victims, preemptor)
        await env.plugin.executor.wait()

    run(scenario())
    assert api.started == ["v1", "v2"]
    assert api.deleted_names == []
    assert not any(env.plugin.executor.deleting.asked(v) for v in victims)
    assert env.activated == ["p"]


def test_tenant_profile_clears_only_its_own_nominations() -> None:
    env = make_env(
        [make_node().name("n").capacity_only(pods="32").obj()],
        [pod("v", "team-a", uid="v", node_name="n", priority=LOW)],
        tenant="team-a",
    )
    env.nominator.add_nominated_pod(pod_info("mine", "team-a", uid="mine", priority=LOW), "n")
    env.nominator.add_nominated_pod(pod_info("theirs", "team-b", uid="theirs", priority=LOW), "n")

    async def scenario() -> None:
        preemptor = pod_info("p", "team-a", uid="p", priority=HIGH)
        env.plugin.executor.actuate("n", list(env.snapshot.get("n").pods), preemptor)  # type: ignore[union-attr]
        await env.plugin.executor.wait()

    run(scenario())
    assert env.api.nominations == [("mine", "")]


def test_actuation_needs_an_event_loop() -> None:
    env = make_env(
        [make_node().name("n").capacity_only(pods="32").obj()], [pod("v", uid="v", node_name="n", priority=LOW)]
    )
    status = env.plugin.executor.actuate("n", list(env.snapshot.get("n").pods), pod_info("p", uid="p", priority=HIGH))  # type: ignore[union-attr]
    assert status is not None and status.code is Code.ERROR


def test_a_victim_asked_to_go_is_not_asked_again_until_the_view_shows_it_gone() -> None:
    """The watch may bring a deletion after the API answered it, and the preemptor (activated
    when its preemption ends) or another one may pick the victim again meanwhile: it is skipped
    as if it had its deletionTimestamp, until the scheduler's view shows it gone."""
    env = make_env(
        [make_node().name("n").capacity_only(pods="32").obj()],
        [pod("v1", uid="v1", node_name="n", priority=LOW), pod("v2", uid="v2", node_name="n", priority=LOW)],
    )
    node = env.snapshot.get("n")
    assert node is not None
    v1, v2 = sorted(node.pods, key=lambda v: v.name)

    async def preempt(preemptor: str, victims: list[PodInfo]) -> None:
        assert env.plugin.executor.actuate("n", victims, pod_info(preemptor, uid=preemptor, priority=HIGH)) is None
        await env.plugin.executor.wait()

    run(preempt("p", [v1]))
    run(preempt("p", [v1]))  # the view still shows v1 running
    run(preempt("q", [v1, v2]))
    assert env.api.deleted_names == ["v1", "v2"]
    assert env.plugin.executor.deleting.asked(v1) and env.plugin.executor.deleting.asked(v2)

    node.remove_pod(v1)  # the watch brought v1's deletion; v2 shows terminating
    node.remove_pod(v2)
    node.add_pod(pod_info("v2", uid="v2", node_name="n", priority=LOW, terminating=True))
    run(preempt("r", []))  # any actuation lets go of what the view shows
    assert not env.plugin.executor.deleting.asked(v1) and not env.plugin.executor.deleting.asked(v2)


def test_a_victim_whose_deletion_failed_may_be_asked_again() -> None:
    api = RecordingAPI(fail={"v"})
    env = make_env(
        [make_node().name("n").capacity_only(pods="32").obj()],
        [pod("v", uid="v", node_name="n", priority=LOW)],
        api=api,
    )
    victims = list(env.snapshot.get("n").pods)  # type: ignore[union-attr]

    async def preempt() -> None:
        env.plugin.executor.actuate("n", victims, pod_info("p", uid="p", priority=HIGH))
        await env.plugin.executor.wait()

    run(preempt())
    assert api.deleted == [] and not env.plugin.executor.deleting.asked(victims[0])
    api.fail.clear()
    run(preempt())
    assert api.deleted_names == ["v"]


class _RaisingAPI(RecordingAPI):
    async def write(self, call: Write) -> Written:
        raise RuntimeError("a ClusterAPI that raises")


def test_a_victim_whose_deletion_raised_is_not_left_asked() -> None:
    """Were it left in the record, no later preemption would ask it again, and its preemptor
    would not be eligible while the victim runs on the nominated node."""
    env = make_env(
        [make_node().name("n").capacity_only(pods="32").obj()],
        [pod("v", uid="v", node_name="n", priority=LOW)],
        api=_RaisingAPI(),
    )
    victims = list(env.snapshot.get("n").pods)  # type: ignore[union-attr]

    async def preempt() -> None:
        env.plugin.executor.actuate("n", victims, pod_info("p", uid="p", priority=HIGH))
        with contextlib.suppress(RuntimeError):
            await env.plugin.executor.wait()

    run(preempt())
    assert not env.plugin.executor.deleting.asked(victims[0])
