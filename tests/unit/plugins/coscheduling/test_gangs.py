"""Coscheduling end to end in-process: all or nothing, no deadlock, priority between gangs.

Scenarios follow scheduler-plugins' ``test/integration/coscheduling_test.go`` in spirit
(gangs that fit, that do not, that compete) over the real scheduler loop and the in-memory
cluster; Permit timeouts pass on the simulation's fake clock.
"""

from __future__ import annotations

import random
from typing import Any

from scheduler_core.clock import FakeClock
from scheduler_core.defaults import default_plugins
from scheduler_core.framework import PodInfo
from scheduler_core.framework.storage import scan
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator import Simulation, simulate
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_core.simulator.validate import profile_problems
from tests.unit.plugins.coscheduling.gangs import coscheduling_profile, members, pod_group
from tests.unit.simulator.support import load
from tests.wrappers import node, pod


def bound(cluster: InMemoryCluster, prefix: str) -> list[str]:
    return sorted(
        p["metadata"]["name"]
        for p in cluster.pods.values()
        if p["metadata"]["name"].startswith(prefix) and (p.get("spec") or {}).get("nodeName")
    )


async def test_gang_of_three_with_room_for_two_binds_none_then_all_after_a_node_is_added() -> None:
    objects = [
        coscheduling_profile(),
        node("n1", cpu="1"),
        node("n2", cpu="1"),
        pod_group("job", 3),
        *members("job", 3),
    ]
    cluster = load(*objects)
    backend = InMemoryCluster(nodes=cluster.nodes, pods=cluster.pods, objects=cluster.objects)
    clock = FakeClock()
    registry = default_registry()
    scheduler = Scheduler(
        backend, registry=registry, default_multi_point=default_plugins(registry), clock=clock, rng=random.Random(0)
    )
    backend.watch(scheduler)
    for n in backend.nodes.values():
        scheduler.on_node_add(n)
    assert profile_problems(cluster, home_namespace="crd-scheduler", registry=registry, into=scheduler) == []
    for p in list(backend.pods.values()):
        scheduler.on_pod_add(p)

    await scheduler.run_until_idle()
    assert bound(backend, "job") == []
    assert all(not n.pods for n in scheduler.cache.update_snapshot().list()), "reserved capacity is released"

    scheduler.on_node_add(node("n3", cpu="1"))
    await scheduler.run_until_idle()
    assert bound(backend, "job") == ["job-0", "job-1", "job-2"]


def test_two_gangs_competing_for_room_for_one_end_with_one_whole_and_none_partly_bound() -> None:
    result = simulate(
        load(
            coscheduling_profile(),
            *(node(f"n{i}", cpu="1") for i in range(4)),
            pod_group("a", 4, created="2026-01-01T00:00:00Z"),
            pod_group("b", 4, created="2026-01-01T00:00:01Z"),
            *members("b", 4),
            *members("a", 4),
        )
    )
    assert bound(result.cluster, "a-") == ["a-0", "a-1", "a-2", "a-3"]
    assert bound(result.cluster, "b-") == []
    reports = {r.name: r for r in result.pods}
    assert reports["b-0"].status == "Unschedulable"


def test_loser_waiting_within_the_ten_percent_gap_times_out_and_its_capacity_is_released() -> None:
    # Room for 19: gang a (10) binds; gang b places 9 and its 10th finds no node. A gap of
    # 10% is not rejected in PostFilter, so b's 9 wait at Permit until the group's timeout.
    result = simulate(
        load(
            coscheduling_profile(),
            *(node(f"n{i}", cpu="1") for i in range(19)),
            pod_group("a", 10, created="2026-01-01T00:00:00Z"),
            pod_group("b", 10, timeout=30, created="2026-01-01T00:00:01Z"),
            *members("a", 10),
            *members("b", 10),
        )
    )
    assert len(bound(result.cluster, "a-")) == 10
    assert bound(result.cluster, "b-") == []
    scheduler = result.scheduler
    on_nodes = [p for n in scheduler.cache.update_snapshot().list() for p in n.pods]
    assert sorted(p.name for p in on_nodes) == sorted(f"a-{i}" for i in range(10)), "b's reservations released"
    assert not any(len(fwk.handle.waiting_pods) for _, fwk in scheduler.profiles)
    messages = {r.name: r.message for r in result.pods}
    assert any("rejected due to timeout after waiting 30s at plugin Coscheduling" in m for m in messages.values())
    assert scheduler.clock.now() >= 30, "the timeout passed on the simulation's clock"


def test_priority_between_gangs_is_respected() -> None:
    # The low-priority gang's group is older, yet the high-priority gang takes the room.
    result = simulate(
        load(
            coscheduling_profile(),
            *(node(f"n{i}", cpu="1") for i in range(3)),
            pod_group("low", 3, created="2026-01-01T00:00:00Z"),
            pod_group("high", 3, created="2026-01-01T00:00:05Z"),
            *members("low", 3, priority=10),
            *members("high", 3, priority=100),
        )
    )
    assert bound(result.cluster, "high-") == ["high-0", "high-1", "high-2"]
    assert bound(result.cluster, "low-") == []


def test_pre_filter_waits_for_min_member_pods_to_exist() -> None:
    result = simulate(load(coscheduling_profile(), node("n1", cpu="8"), pod_group("job", 3), *members("job", 2)))
    assert bound(result.cluster, "job") == []
    message = result.pods[0].message
    assert "cannot find enough sibling pods, current pods number: 2, minMember of group: 3" in message


def test_pre_filter_min_resources_beyond_the_cluster() -> None:
    result = simulate(
        load(
            coscheduling_profile(),
            node("n1", cpu="2"),
            pod_group("job", 2, min_resources={"cpu": "3"}),
            *members("job", 2, cpu="500m"),
        )
    )
    assert bound(result.cluster, "job") == []
    assert "resource gap" in result.pods[0].message


def test_pods_in_no_group_are_scheduled_as_usual_beside_gangs() -> None:
    result = simulate(
        load(coscheduling_profile(), node("n1", cpu="2"), pod_group("job", 3), *members("job", 3), pod("solo", cpu="1"))
    )
    assert bound(result.cluster, "solo") == ["solo"]
    assert bound(result.cluster, "job") == []


def test_members_bound_earlier_count_towards_min_member() -> None:
    done = members("job", 2)
    for i, p in enumerate(done):
        p["spec"]["nodeName"] = f"n{i}"
    result = simulate(
        load(
            coscheduling_profile(),
            *(node(f"n{i}", cpu="1") for i in range(3)),
            pod_group("job", 3),
            *done,
            pod("job-late", cpu="1", labels={"scheduling.x-k8s.io/pod-group": "job"}),
        )
    )
    assert bound(result.cluster, "job-late") == ["job-late"]


def test_queue_sort_keeps_gang_members_together() -> None:
    from scheduler_core.framework import QueuedPodInfo
    from scheduler_core.plugins.coscheduling import Coscheduling

    groups = [pod_group("a", 2, created="2026-01-01T00:00:00Z"), pod_group("b", 2, created="2026-01-01T00:00:01Z")]

    class _Handle:
        def objects(self, kind: str) -> list[dict[str, Any]]:
            return groups if kind == "scheduling.x-k8s.io/PodGroup" else []

        def lookup(self, kind: str, namespace: str, name: str) -> Any:
            return scan(self.objects(kind), namespace, name)

    plugin = Coscheduling(None, _Handle())  # type: ignore[arg-type]
    queued = [
        QueuedPodInfo(PodInfo(p), timestamp=t, initial_attempt_timestamp=t)
        for t, p in enumerate([*members("b", 2), *members("a", 2), pod("solo")])
    ]
    import functools

    def compare(x: QueuedPodInfo, y: QueuedPodInfo) -> int:
        return -1 if plugin.less(x, y) else 1

    order = sorted(queued, key=functools.cmp_to_key(compare))
    assert [q.pod_info.name for q in order][:4] == ["solo", "a-0", "a-1", "b-0"] or [q.pod_info.name for q in order][
        :4
    ] == ["a-0", "a-1", "b-0", "b-1"]


def test_simulate_reports_that_members_wait_for_their_gang_and_why_it_failed() -> None:
    result = simulate(
        load(coscheduling_profile(), node("n1", cpu="1"), node("n2", cpu="1"), pod_group("job", 3), *members("job", 3))
    )
    for report in result.pods:
        assert report.gang.startswith("waiting for its gang default/job: 0 of 3 members bound, minMember 3;")
        assert "the gang failed: pod job-" in report.gang
        assert "Insufficient cpu" in report.gang
        assert report.to_json()["gang"] == report.gang


def _preempt_placed_gang(member_priorities: tuple[int, int], preemptor_priority: int) -> Simulation:
    """A gang of two placed on two full nodes, and one more pod at ``preemptor_priority``."""
    placed = members("job", 2)
    for i, (p, priority) in enumerate(zip(placed, member_priorities, strict=True)):
        p["spec"].update(nodeName=f"n{i}", priority=priority)
    return simulate(
        load(
            coscheduling_profile(),
            node("n0", cpu="1"),
            node("n1", cpu="1"),
            pod_group("job", 2),
            *placed,
            pod("preemptor", cpu="1", priority=preemptor_priority),
        )
    )


def test_preemption_never_breaks_a_placed_gang_for_a_pod_below_its_priority() -> None:
    # Members at 100 and 10: a pod at 50 could take the low member's place, but that would
    # break a gang that outranks it.
    result = _preempt_placed_gang((100, 10), 50)
    assert result.cluster.deleted == []
    assert bound(result.cluster, "preemptor") == []
    assert bound(result.cluster, "job") == ["job-0", "job-1"]


def test_a_pod_above_every_member_may_still_preempt_a_gang_member() -> None:
    result = _preempt_placed_gang((10, 10), 1000)
    assert len(result.cluster.deleted) == 1


def test_the_kubeflow_example_binds_one_job_whole_and_nothing_of_the_other() -> None:
    from pathlib import Path

    from scheduler_core.simulator import load_files

    example = Path(__file__).resolve().parents[4] / "examples" / "gang" / "kubeflow-jobs.yaml"
    result = simulate(load_files([str(example)]))
    assert bound(result.cluster, "mnist-") == ["mnist-master-0", "mnist-worker-0", "mnist-worker-1", "mnist-worker-2"]
    assert bound(result.cluster, "resnet-") == []
    assert all("waiting for its gang kubeflow/resnet" in r.gang for r in result.pods if r.name.startswith("resnet-"))
