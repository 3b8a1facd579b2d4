"""The scheduling loop (upstream schedule_one.go, schedule_one_test.go)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from scheduler_core.algorithm import num_feasible_nodes_to_find
from scheduler_core.clock import FakeClock
from scheduler_core.framework import CycleState, PodInfo, Status
from scheduler_core.framework.diagnosis import FitError
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator.backend import InMemoryCluster
from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler, node_of
from tests.wrappers import node, pod


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        pytest.param(None, 10, 10, id="fewer-than-100-all"),
        pytest.param(None, 99, 99, id="99-all"),
        pytest.param(None, 100, 100, id="adaptive-100-49pct-raised-to-100"),
        pytest.param(None, 1000, 420, id="adaptive-1000-42pct"),
        pytest.param(None, 5000, 500, id="adaptive-5000-10pct"),
        pytest.param(None, 6000, 300, id="adaptive-6000-floor-5pct"),
        pytest.param(0, 5000, 500, id="zero-is-adaptive"),
        pytest.param(50, 1000, 500, id="explicit-50pct"),
        pytest.param(1, 1000, 100, id="at-least-100"),
        pytest.param(100, 5000, 5000, id="all"),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int | None, nodes: int, expected: int) -> None:
    # upstream TestNumFeasibleNodesToFind (schedule_one_test.go)
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


async def test_rotating_start_index_examines_each_node_in_turn() -> None:
    """With 200 identical nodes, only 100 are examined per pod, starting where the last stopped."""
    scheduler, cluster, _ = make_scheduler({"percentageOfNodesToScore": 50})
    add_nodes(scheduler, cluster, [node(f"n{i:03d}") for i in range(200)])
    add_pods(scheduler, cluster, [pod("a", uid="a", cpu="100m")])
    await scheduler.run_until_idle()
    assert scheduler.algorithm.next_start_node_index == 100
    add_pods(scheduler, cluster, [pod("b", uid="b", cpu="100m")])
    await scheduler.run_until_idle()
    assert scheduler.algorithm.next_start_node_index == 0


async def test_fit_error_message_counts_reasons_per_node() -> None:
    scheduler, cluster, _ = make_scheduler()
    add_nodes(
        scheduler,
        cluster,
        [
            node("tainted", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
            node("small-1", cpu="1"),
            node("small-2", cpu="1"),
            node("cordoned", unschedulable=True),
        ],
    )
    add_pods(scheduler, cluster, [pod("big", uid="big", cpu="2")])
    await scheduler.run_until_idle()
    events = cluster.events_for("default", "big")
    assert [e.reason for e in events] == ["FailedScheduling"]
    assert events[0].message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, 2 Insufficient cpu."
        # v1.36: a request above a node's whole allocatable is UnschedulableAndUnresolvable, so
        # preemption cannot help on any node.
        " no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )
    condition = cluster.pod("default", "big")["status"]["conditions"][-1]  # type: ignore[index]
    assert condition == {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": events[0].message,
    }


async def test_unschedulable_pod_waits_in_the_pool_until_a_node_event() -> None:
    scheduler, cluster, _ = make_scheduler()
    add_nodes(scheduler, cluster, [node("small", cpu="1")])
    add_pods(scheduler, cluster, [pod("big", uid="big", cpu="2")])
    await scheduler.run_until_idle()
    assert [p.name for p in scheduler.queue.pending()["unschedulable"]] == ["big"]
    add_nodes(scheduler, cluster, [node("large", cpu="4")])  # NodeAdd: NodeResourcesFit's hint says QUEUE
    await scheduler.run_until_idle()
    assert node_of(cluster, "big") == "large"


async def test_no_nodes_message() -> None:
    scheduler, cluster, _ = make_scheduler()
    add_pods(scheduler, cluster, [pod("p", uid="p")])
    await scheduler.run_until_idle()
    assert cluster.events_for("default", "p")[0].message == "no nodes available to schedule pods"


async def test_every_pod_bound_once_and_no_node_overcommitted() -> None:
    scheduler, cluster, _ = make_scheduler()
    add_nodes(scheduler, cluster, [node(f"n{i}", cpu="1", memory="4Gi", pods=5) for i in range(6)])
    add_pods(scheduler, cluster, [pod(f"p{i}", uid=f"p{i}", cpu="300m", memory="1Gi") for i in range(25)])
    await scheduler.run_until_idle()
    placed = Counter(node_of(cluster, f"p{i}") for i in range(25))
    assert placed[None] == 25 - 18  # 3 pods of 300m fit per 1-CPU node
    assert all(count <= 3 for name, count in placed.items() if name is not None)
    scheduled = [e for e in cluster.events if e.reason == "Scheduled"]
    assert len(scheduled) == len({e.name for e in scheduled}) == 18


def test_ties_broken_uniformly_and_reproducibly() -> None:
    def run(seed: int) -> list[str | None]:
        async def go() -> list[str | None]:
            scheduler, cluster, _ = make_scheduler(seed=seed)
            add_nodes(scheduler, cluster, [node(f"n{i}") for i in range(4)])
            add_pods(scheduler, cluster, [pod(f"p{i}", uid=f"p{i}") for i in range(4)])
            await scheduler.run_until_idle()
            return [node_of(cluster, f"p{i}") for i in range(4)]

        return asyncio.run(go())

    first = run(3)
    assert first == run(3)
    counts: Counter[str | None] = Counter()
    for seed in range(40):
        counts[run(seed)[0]] += 1
    assert set(counts) == {"n0", "n1", "n2", "n3"}  # every tied node gets chosen sometimes


class Rejector:
    """Reserve/Permit plugin failing the first ``failures`` attempts."""

    name = "Rejector"
    args_model = None
    journal: list[str] = []
    mode = "reserve"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        Rejector.journal.append("reserve")
        if Rejector.mode == "reserve":
            return Status.unschedulable("reserve said no")
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        Rejector.journal.append("unreserve")

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status | None, float]:
        Rejector.journal.append("permit")
        if Rejector.mode == "wait":
            return Status.wait(), 30.0
        if Rejector.mode == "permit":
            return Status.unschedulable("permit said no"), 0.0
        return None, 0.0


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        pytest.param("reserve", "0/1 nodes are available: 1 reserve said no.", id="reserve-rejects"),
        pytest.param("permit", "0/1 nodes are available: 1 permit said no.", id="permit-rejects"),
    ],
)
async def test_rejection_after_assume_unreserves_forgets_and_reports(mode: str, message: str) -> None:
    Rejector.journal = []
    Rejector.mode = mode
    scheduler, cluster, _ = make_scheduler(
        {"plugins": {"multiPoint": {"enabled": [{"name": "Rejector"}]}}}, extra_plugins={"Rejector": Rejector}
    )
    add_nodes(scheduler, cluster, [node("n")])
    add_pods(scheduler, cluster, [pod("p", uid="p", cpu="1")])
    await scheduler.run_until_idle()
    assert Rejector.journal[-1] == "unreserve"
    assert cluster.events_for("default", "p")[-1].message == message
    node_n = scheduler.cache.update_snapshot().get("n")
    assert node_n is not None and node_n.requested.milli_cpu == 0  # forgotten
    assert node_of(cluster, "p") is None


async def test_permit_wait_then_allow_binds() -> None:
    Rejector.journal = []
    Rejector.mode = "wait"
    scheduler, cluster, _ = make_scheduler(
        {"plugins": {"multiPoint": {"enabled": [{"name": "Rejector"}]}}}, extra_plugins={"Rejector": Rejector}
    )
    add_nodes(scheduler, cluster, [node("n")])
    add_pods(scheduler, cluster, [pod("p", uid="p", cpu="1")])
    qpi = scheduler.queue.pop()
    assert qpi is not None
    await scheduler.schedule_one(qpi)
    fwk = next(f for _, f in scheduler.profiles)
    waiting = fwk.handle.get_waiting_pod("p")
    assert waiting is not None
    assert scheduler.cache.is_assumed_pod(qpi.pod_info)  # resources held while waiting
    waiting.allow("Rejector")
    await scheduler.run_until_idle()
    assert node_of(cluster, "p") == "n"


def _one_pod_one_node() -> tuple[
    Scheduler,
    InMemoryCluster,
    FakeClock,
    Callable[[PodInfo, str, Mapping[str, str] | None], Awaitable[Status | None]],
    list[str],
]:
    """Pod ``p`` pending, node ``n``; the cluster's real bind, and a list for a wrapper's calls."""
    scheduler, cluster, clock = make_scheduler()
    add_nodes(scheduler, cluster, [node("n")])
    add_pods(scheduler, cluster, [pod("p", uid="p")])
    return scheduler, cluster, clock, cluster.bind, []


async def test_bind_failure_forgets_and_requeues_to_backoff() -> None:
    scheduler, cluster, clock, original_bind, calls = _one_pod_one_node()

    async def flaky_bind(p: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        calls.append(node_name)
        if len(calls) == 1:
            return Status.as_error("apiserver unavailable")
        return await original_bind(p, node_name, annotations)

    cluster.bind = flaky_bind  # type: ignore[method-assign, assignment]
    await scheduler.run_until_idle()
    assert calls == ["n", "n"]
    assert node_of(cluster, "p") == "n"
    first = cluster.events_for("default", "p")[0]
    assert first.reason == "FailedScheduling"
    assert first.message == 'running Bind plugin "DefaultBinder": apiserver unavailable'
    assert clock.now() >= 1.0  # the retry waited out the 1 s initial backoff


def test_fit_error_with_prefilter_message() -> None:
    from scheduler_core.framework.diagnosis import Diagnosis

    diagnosis = Diagnosis(pre_filter_msg="node(s) didn't satisfy plugin NodeAffinity")
    assert str(FitError(PodInfo(pod("p")), 3, diagnosis)) == (
        "0/3 nodes are available: node(s) didn't satisfy plugin NodeAffinity."
    )


class Raiser:
    """A plugin that raises (a bug, not a Status) at ``Raiser.point``, once per pod ``victim``."""

    name = "Raiser"
    args_model = None
    point = "filter"
    victim = "bad"

    def __init__(self, args: Any, handle: Any) -> None:
        self.handle = handle

    def _maybe_raise(self, point: str, pod: PodInfo) -> None:
        if Raiser.point == point and pod.name == Raiser.victim:
            raise RuntimeError(f"{point} blew up")

    def filter(self, state: CycleState, pod: PodInfo, node_info: Any) -> Status | None:
        self._maybe_raise("filter", pod)
        return None

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self._maybe_raise("reserve", pod)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        pass


@pytest.mark.parametrize("point", [pytest.param("filter", id="filter"), pytest.param("reserve", id="reserve")])
async def test_a_plugin_that_raises_fails_only_that_pods_cycle_and_never_ends_the_loop(point: str) -> None:
    """Upstream handleSchedulingFailure: an error is a SchedulerError for that pod, requeued;
    the loop (``Scheduler.run``) goes on with the next pod, and nothing stays assumed."""
    Raiser.point = point
    scheduler, cluster, _ = make_scheduler(
        {"plugins": {"multiPoint": {"enabled": [{"name": "Raiser"}]}}}, extra_plugins={"Raiser": Raiser}
    )
    add_nodes(scheduler, cluster, [node("n", cpu="4")])
    add_pods(scheduler, cluster, [pod("bad", uid="bad", cpu="1"), pod("good", uid="good", cpu="1")])
    stop = asyncio.Event()
    loop = asyncio.ensure_future(scheduler.run(stop))
    for _ in range(200):
        await asyncio.sleep(0)
        if node_of(cluster, "good") is not None:
            break
    assert not loop.done()  # the loop survived the exception
    stop.set()
    await loop
    assert node_of(cluster, "good") == "n"
    assert node_of(cluster, "bad") is None
    [event] = [e for e in cluster.events_for("default", "bad") if e.reason == "FailedScheduling"][:1]
    assert f"{point} blew up" in event.message
    assert scheduler.queue.contains(PodInfo(cluster.pods["bad"]))  # requeued, not dropped
    node_n = scheduler.cache.update_snapshot().get("n")
    assert node_n is not None and node_n.requested.milli_cpu == 1000  # only good's request: bad not assumed


def test_a_nominated_pod_tries_its_nominated_node_first() -> None:
    """kubernetes v1.36.3 pkg/scheduler/schedule_one.go findNodesThatFitPod/evaluateNominatedNode:
    a pod nominated by an earlier preemption is tried on that node alone first and bound there
    when it passes, even where scoring would pick another node (here four tied nodes, which the
    full search would share out at random; parity scenario random-seed-1163)."""

    async def go(seed: int) -> str | None:
        scheduler, cluster, _ = make_scheduler(seed=seed)
        add_nodes(scheduler, cluster, [node(f"n{i}") for i in range(4)])
        manifest = pod("p", uid="p")
        manifest["status"] = {"nominatedNodeName": "n2"}  # as preemption wrote it
        add_pods(scheduler, cluster, [manifest])
        await scheduler.run_until_idle()
        return node_of(cluster, "p")

    assert {asyncio.run(go(seed)) for seed in range(8)} == {"n2"}


def test_filters_count_pods_nominated_with_higher_or_equal_priority() -> None:
    """schedule_one.go findNodesThatPassFilters runs RunFilterPluginsWithNominatedPods: a
    higher-priority pod nominated to a node (waiting for its victims to go) takes its room first."""

    async def go() -> tuple[str | None, str | None]:
        scheduler, cluster, _ = make_scheduler()
        add_nodes(scheduler, cluster, [node("n0", cpu="1"), node("n1", cpu="1")])
        waiting = PodInfo(pod("big", uid="big", cpu="800m", priority=100, node_name=None))
        scheduler.queue.nominator.add_nominated_pod(waiting, "n0")
        add_pods(scheduler, cluster, [pod("small", uid="small", cpu="500m", priority=1)])
        await scheduler.run_until_idle()
        return node_of(cluster, "small"), scheduler.queue.nominator.nominated_node_for(waiting.uid)

    assert asyncio.run(go()) == ("n1", "n0")


async def test_bind_answer_lost_after_the_pod_was_bound_logs_forget_failure_without_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The binding landed but its answer was an error, and the watch confirmed the pod before
    the failure was handled: ForgetPod fails. Upstream logs "scheduler cache ForgetPod failed"
    and goes on (schedule_one.go handleBindingCycleError); the pod stays bound, once."""
    scheduler, cluster, _, original_bind, calls = _one_pod_one_node()

    async def bind_then_fail(p: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        calls.append(node_name)
        await original_bind(p, node_name, annotations)
        return Status.as_error("connection reset after the request was sent")

    cluster.bind = bind_then_fail  # type: ignore[method-assign, assignment]
    with caplog.at_level("ERROR"):
        await scheduler.run_until_idle()
    assert calls == ["n"]
    assert node_of(cluster, "p") == "n"
    forget = [r for r in caplog.records if "ForgetPod failed" in r.getMessage()]
    assert len(forget) == 1
    assert forget[0].exc_info is None
    assert "wasn't assumed so cannot be forgotten" in forget[0].getMessage()
