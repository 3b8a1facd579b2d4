"""Preemption that converges: each preemptor evicts once and binds where it was nominated.

The shape of upstream scheduler_perf's PreemptionBasic (``misc/performance-config.yaml``):
every 4-CPU node holds four 900m pods of priority 0, and each measured pod (3 CPU, priority 10)
needs three of them gone. Upstream keeps a preemptor's freed room for it by counting it, while
nominated, in every other pod's Filter (``RunFilterPluginsWithNominatedPods``), and retries it on
its nominated node first (``evaluateNominatedNode``); the victims' deletion requeues it
(NodeResourcesFit's hint for AssignedPod/Delete) once DefaultPreemption's PreEnqueue lets it go.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from bench import run as bench_run
from scheduler_core.framework import PodInfo, Status
from scheduler_core.framework.writes import PODS, Verb, Write, Written
from scheduler_core.plugins.defaultpreemption.default_preemption import ERR_TERMINATING_ON_NOMINATED
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator.backend import InMemoryCluster
from tests.unit.scheduling.support import add_nodes, add_pods, make_scheduler, node_of
from tests.wrappers import make_node, make_pod


def events(cluster: InMemoryCluster, name: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in cluster.events_for("default", name)]


def preemptors(count: int) -> list[dict[str, Any]]:
    return [make_pod().name(f"high-{i}").uid(f"high-{i}").priority(10).req(cpu="3").obj() for i in range(count)]


class CountingCluster(InMemoryCluster):
    """Counts delete calls per victim and which preemptors were nominated where."""

    def __init__(self) -> None:
        super().__init__()
        self.delete_calls: Counter[str] = Counter()
        self.nominations: list[tuple[str, str]] = []

    async def write(self, call: Write) -> Written:
        if (call.verb, call.resource) == (Verb.DELETE, PODS):
            self.delete_calls[call.name] += 1
        return await super().write(call)

    def report_failure(self, pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        if nominated_node:
            self.nominations.append((pod.name, nominated_node))
        super().report_failure(pod, reason, message, nominated_node)


class GracefulCluster(CountingCluster):
    """Deletion as the API server does it for a pod with a grace period: the victim is marked
    terminating (an update) and leaves only when ``finish_deletions`` runs (the kubelet)."""

    def __init__(self) -> None:
        super().__init__()
        self.terminating: list[str] = []

    async def write(self, call: Write) -> Written:
        if (call.verb, call.resource) != (Verb.DELETE, PODS):
            return await super().write(call)
        self.delete_calls[call.name] += 1
        uid = call.precondition.uid if call.precondition is not None else None
        stored = self.pods.get(uid or "")
        if uid is None or stored is None or (stored.get("metadata") or {}).get("deletionTimestamp"):
            return stored, None
        new: dict[str, Any] = {
            **stored,
            "metadata": {**stored["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"},
        }
        self.pods[uid] = new
        self.terminating.append(uid)
        self.announce(stored, new)
        return new, None

    def announce(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """The watch event of a victim turned terminating."""
        assert self._watch is not None
        self._watch.on_pod_update(old, new)

    def finish_deletions(self) -> None:
        for uid in self.terminating:
            gone: Mapping[str, Any] = self.pods.pop(uid)
            assert self._watch is not None
            self._watch.on_pod_delete(gone)
        self.terminating.clear()


async def filled(cluster: InMemoryCluster, count: int) -> Scheduler:
    """A scheduler over ``cluster`` with ``count`` nodes, each full of low-priority pods."""
    scheduler, _, _ = make_scheduler(cluster=cluster)
    add_nodes(
        scheduler, cluster, [make_node().name(f"node-{n}").capacity(cpu="4", memory="32Gi").obj() for n in range(count)]
    )
    low = make_pod().req(cpu="900m")
    add_pods(
        scheduler,
        cluster,
        [low.name(f"low-{n}-{i}").uid(f"low-{n}-{i}").node(f"node-{n}").obj() for n in range(count) for i in range(4)],
    )
    await scheduler.run_until_idle()
    return scheduler


async def test_each_preemptor_preempts_once_and_binds_to_its_nominated_node() -> None:
    cluster = CountingCluster()
    scheduler = await filled(cluster, 4)
    attempts: Counter[str] = Counter()
    schedule_one = scheduler.schedule_one

    async def counted(qpi: Any) -> None:
        attempts[qpi.pod_info.name] += 1
        await schedule_one(qpi)

    scheduler.schedule_one = counted  # type: ignore[method-assign]
    add_pods(scheduler, cluster, preemptors(4))
    await scheduler.run_until_idle()

    # Nobody takes the room freed for another: one preemption each, then a bind there.
    assert sorted(name for name, _ in cluster.nominations) == [f"high-{i}" for i in range(4)]
    assert {name: node_of(cluster, name) for name, _ in cluster.nominations} == dict(cluster.nominations)
    assert attempts == {f"high-{i}": 2 for i in range(4)}
    # Three victims per node, each asked to go once.
    assert sum(cluster.delete_calls.values()) == 12
    assert set(cluster.delete_calls.values()) == {1}


async def test_terminating_victims_are_not_preempted_twice_and_their_deletion_requeues_the_preemptor() -> None:
    """While the victims terminate, a second preemptor must not count them as room: the first
    preemptor's nomination covers the node, so it preempts on another node. The deletions then
    requeue both, and each binds to its own nominated node."""
    cluster = GracefulCluster()
    scheduler = await filled(cluster, 2)
    add_pods(scheduler, cluster, preemptors(2))
    await scheduler.run_until_idle()

    nominated = dict(cluster.nominations)
    assert sorted(nominated) == ["high-0", "high-1"]
    assert sorted(nominated.values()) == ["node-0", "node-1"]
    assert sum(cluster.delete_calls.values()) == 6 and set(cluster.delete_calls.values()) == {1}
    assert node_of(cluster, "high-0") is None and node_of(cluster, "high-1") is None

    cluster.finish_deletions()
    await scheduler.run_until_idle()
    assert {name: node_of(cluster, name) for name in nominated} == nominated
    assert sum(cluster.delete_calls.values()) == 6


class LateWatchCluster(GracefulCluster):
    """A loaded API server's watch: a deletion is answered at once, and the scheduler hears of it
    (the victim's update to terminating) only when ``deliver`` runs. With ``nominations``, the
    watch brings a preemptor's new ``nominatedNodeName`` back at once, as the operator's does."""

    def __init__(self, *, nominations: bool) -> None:
        super().__init__()
        self.late: list[tuple[Mapping[str, Any], Mapping[str, Any]]] = []
        self._nominations = nominations

    def report_failure(self, pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        before = self.pods.get(pod.uid)
        super().report_failure(pod, reason, message, nominated_node)
        after = self.pods.get(pod.uid)
        if self._nominations and nominated_node and before is not None and after is not None:
            super().announce(before, after)

    def announce(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.late.append((old, new))

    def deliver(self) -> None:
        for old, new in self.late:
            super().announce(old, new)
        self.late.clear()


@pytest.mark.parametrize(
    ("nominations", "second_attempt"),
    [
        # The preemptor's PodInfo carries no nomination yet: it is eligible, finds the same
        # victims, and actuation skips them as being deleted.
        pytest.param(False, "0/1 nodes are available: 1 Insufficient cpu.", id="nomination-not-seen-yet"),
        # It carries its nomination: the victims asked to go count as terminating on that node.
        pytest.param(True, "preemption: " + ERR_TERMINATING_ON_NOMINATED, id="nomination-seen"),
    ],
)
async def test_a_preemptor_retried_before_the_watch_brings_its_victims_deletion_preempts_none_again(
    nominations: bool, second_attempt: str
) -> None:
    """The executor activates the preemptor when its preemption ends, which can be before the
    watch brings the victims' deletion to the cache (tests/e2e/test_operator_preemption.py saw
    it on a loaded machine). Its next attempt still sees the victims running; it must not ask
    for their deletion again (upstream only retries the pod on the events that bring them)."""
    cluster = LateWatchCluster(nominations=nominations)
    scheduler = await filled(cluster, 1)
    add_pods(scheduler, cluster, preemptors(1))
    await scheduler.run_until_idle()
    assert sum(cluster.delete_calls.values()) == 3 and set(cluster.delete_calls.values()) == {1}
    assert node_of(cluster, "high-0") is None
    # One attempt after the preemption ended, which asked for nothing.
    failures = [message for reason, message in events(cluster, "high-0") if reason == "FailedScheduling"]
    assert len(failures) == 2 and failures[1].endswith(second_attempt), failures

    cluster.deliver()
    await scheduler.run_until_idle()
    cluster.finish_deletions()
    await scheduler.run_until_idle()
    assert node_of(cluster, "high-0") == "node-0"
    assert sum(cluster.delete_calls.values()) == 3


class FlakyCluster(CountingCluster):
    """The first deletion fails, as an API server answering 500 would."""

    async def write(self, call: Write) -> Written:
        if (call.verb, call.resource) == (Verb.DELETE, PODS) and not self.delete_calls:
            self.delete_calls[call.name] += 1
            return None, Status.as_error("Internal error occurred: etcdserver: request timed out")
        return await super().write(call)


async def test_a_failed_eviction_retries_the_preemptor_at_once() -> None:
    """No victim left, so no deletion event would move the preemptor: the executor activates it
    (upstream executor.go, the goroutine's deferred Activate on an error), and it preempts again."""
    cluster = FlakyCluster()
    scheduler = await filled(cluster, 1)
    add_pods(scheduler, cluster, preemptors(1))
    await scheduler.run_until_idle()
    assert node_of(cluster, "high-0") == "node-0"
    assert cluster.nominations == [("high-0", "node-0"), ("high-0", "node-0")]
    assert len(cluster.deleted) == 3


async def test_the_preemption_basic_bench_binds_every_preemptor_on_its_second_attempt() -> None:
    """``python bench/run.py PreemptionBasic`` at 50 nodes: no preemptor given up, none retried
    beyond the attempt after its victims left, three evictions each."""
    result = await bench_run.run("PreemptionBasic", nodes=50, pods=50, init_pods=200, seed=0)
    assert (result["scheduled"], result["unscheduled"]) == (50, 0)
    assert (result["attempts_max"], result["attempts_mean"], result["evicted"]) == (2, 2.0, 150)
