"""Each upstream metric moves as kube-scheduler's does through an in-process scheduling run
(v1.36.3 ``schedule_one.go``, ``backend/queue/*.go``, ``framework/runtime/framework.go``)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.framework import CycleState, PodInfo, Status
from scheduler_core.metrics import scheduler_metrics
from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.build import ProfileError
from tests.promtext import Family, parse
from tests.unit.scheduling.support import HOME, add_nodes, add_pods, make_scheduler
from tests.unit.scheduling.test_preemption_e2e_sim import CLASSES
from tests.unit.scheduling.test_preemption_e2e_sim import run as simulate_preemption
from tests.wrappers import make_pod, node, pod

PROFILE = f"{HOME}/default"


class FailsOnce:
    """A Filter plugin that raises on the first attempt of pod ``flaky`` (a SchedulerError)."""

    name = "FailsOnce"
    args_model = None
    raised: set[str] = set()

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def filter(self, state: CycleState, pod: PodInfo, node_info: Any) -> Status | None:
        if pod.name == "flaky" and pod.uid not in FailsOnce.raised:
            FailsOnce.raised.add(pod.uid)
            raise RuntimeError("flaky filter")
        return None


def scrape(metrics: SchedulerMetrics) -> dict[str, Family]:
    return parse(metrics.registry.render())


async def scheduled_run(sample_percent: int) -> dict[str, Family]:
    """Three pods on two 4-CPU nodes: one fits, one never does, one errors once then fits."""
    FailsOnce.raised = set()
    metrics = SchedulerMetrics(timer=lambda: 0.0)
    metrics.plugin_sample_percent = sample_percent
    scheduler, cluster, _ = make_scheduler(
        {"plugins": {"multiPoint": {"enabled": [{"name": "FailsOnce"}]}}},
        extra_plugins={"FailsOnce": FailsOnce},
        metrics=metrics,
    )
    add_nodes(scheduler, cluster, [node("a", cpu="4"), node("b", cpu="4")])
    add_pods(
        scheduler,
        cluster,
        [pod("fits", uid="fits", cpu="1"), pod("huge", uid="huge", cpu="100"), pod("flaky", uid="flaky", cpu="1")],
    )
    await scheduler.run_until_idle()
    return scrape(metrics)


async def test_attempts_by_result_and_profile() -> None:
    families = await scheduled_run(10)
    attempts = families["scheduler_schedule_attempts_total"]
    assert attempts.values() == {
        (("profile", PROFILE), ("result", "scheduled")): 2,
        (("profile", PROFILE), ("result", "unschedulable")): 1,
        (("profile", PROFILE), ("result", "error")): 1,
    }
    duration = families["scheduler_scheduling_attempt_duration_seconds"]
    assert duration.value("_count", result="scheduled", profile=PROFILE) == 2
    assert duration.value("_count", result="error", profile=PROFILE) == 1


async def test_sli_is_labelled_by_attempts() -> None:
    families = await scheduled_run(10)
    sli = families["scheduler_pod_scheduling_sli_duration_seconds"]
    assert sli.values("_count") == {(("attempts", "1"),): 1, (("attempts", "2"),): 1}
    assert families["scheduler_pod_scheduling_attempts"].value("_sum") == 3


async def test_pending_pods_by_queue_and_unschedulable_by_plugin() -> None:
    families = await scheduled_run(10)
    pending = families["scheduler_pending_pods"]
    assert pending.values() == {
        (("queue", "active"),): 0,
        (("queue", "backoff"),): 0,
        (("queue", "unschedulable"),): 1,
        (("queue", "gated"),): 0,
    }
    assert families["scheduler_unschedulable_pods"].values() == {
        (("plugin", "NodeResourcesFit"), ("profile", PROFILE)): 1
    }


async def test_incoming_pods_by_queue_and_event() -> None:
    families = await scheduled_run(10)
    incoming = families["scheduler_queue_incoming_pods_total"].values()
    assert incoming[(("event", "PodAdd"), ("queue", "active"))] == 3
    # huge: rejected by a plugin, no event since: the unschedulable pool.
    assert incoming[(("event", "ScheduleAttemptFailure"), ("queue", "unschedulable"))] == 1
    # flaky: an error goes through backoff, then back to activeQ (or popped from backoffQ).
    assert incoming[(("event", "ScheduleAttemptFailure"), ("queue", "backoff"))] == 1
    back = {event for event, queue in incoming if queue == ("queue", "active") and event[1] != "PodAdd"}
    assert back in ({("event", "BackoffComplete")}, {("event", "PopFromBackoffQ")})


@pytest.mark.parametrize(
    ("percent", "sampled"),
    [pytest.param(100, True, id="every-cycle-sampled"), pytest.param(0, False, id="none-sampled")],
)
async def test_extension_points_always_plugins_only_when_sampled(percent: int, sampled: bool) -> None:
    families = await scheduled_run(percent)
    points = families["scheduler_framework_extension_point_duration_seconds"].values("_count")
    for point in ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit", "PreBind", "Bind", "PostBind"):
        assert points[(("extension_point", point), ("profile", PROFILE), ("status", "Success"))] >= 2, point
    assert points[(("extension_point", "PostFilter"), ("profile", PROFILE), ("status", "Unschedulable"))] == 1
    plugins = families.get("scheduler_plugin_execution_duration_seconds")
    if not sampled:
        assert plugins is None  # no sample yet: the family is not exposed, as client_golang
        return
    assert plugins is not None
    counts = plugins.values("_count")
    assert counts[(("extension_point", "Filter"), ("plugin", "NodeResourcesFit"), ("status", "Success"))] >= 1
    assert counts[(("extension_point", "Score"), ("plugin", "NodeResourcesFit"), ("status", "Success"))] >= 1
    assert counts[(("extension_point", "PreFilter"), ("plugin", "NodeResourcesFit"), ("status", "Success"))] >= 1
    assert counts[(("extension_point", "Bind"), ("plugin", "DefaultBinder"), ("status", "Success"))] == 2


async def test_a_gated_pod_is_pending_in_gated_and_counts_for_its_gate() -> None:
    metrics = SchedulerMetrics()
    scheduler, cluster, _ = make_scheduler(metrics=metrics)
    add_nodes(scheduler, cluster, [node("n")])
    add_pods(scheduler, cluster, [make_pod().name("g").uid("g").scheduling_gates("example.com/wait").obj()])
    await scheduler.run_until_idle()
    families = scrape(metrics)
    assert families["scheduler_pending_pods"].value(queue="gated") == 1
    assert families["scheduler_pending_pods"].value(queue="unschedulable") == 0
    assert families["scheduler_unschedulable_pods"].value(plugin="SchedulingGates", profile=PROFILE) == 1
    assert "scheduler_schedule_attempts_total" not in families  # never attempted


def test_preemption_attempts_and_victims() -> None:
    sim = simulate_preemption(
        CLASSES,
        node("node-a", cpu="2", memory="8Gi"),
        pod("low-1", uid="low-1", priorityClassName="low", cpu="1", node_name="node-a"),
        pod("low-2", uid="low-2", priorityClassName="low", cpu="1", node_name="node-a"),
        pod("urgent", uid="urgent", priorityClassName="high", cpu="2"),
    )
    assert [(r.name, r.status) for r in sim.pods] == [("urgent", "Scheduled")]
    families = scrape(sim.scheduler.metrics)
    assert families["scheduler_preemption_attempts_total"].value() == 1
    victims = families["scheduler_preemption_victims"]
    assert (victims.value("_count"), victims.value("_sum")) == (1, 2)
    # The background eviction, as upstream's async preemption goroutine (executor.go).
    assert families["scheduler_preemption_goroutines_execution_total"].values() == {(("result", "success"),): 1}
    assert families["scheduler_preemption_goroutines_duration_seconds"].value("_count", result="success") == 1


def test_profile_reloads_by_result() -> None:
    metrics = SchedulerMetrics()
    scheduler, _, _ = make_scheduler(metrics=metrics)  # applies one valid profile
    bad = SchedulerProfileSpec.model_validate({"plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}})
    with pytest.raises(ProfileError):
        scheduler.apply_profile(ProfileKey(HOME, "default"), bad)
    families = scrape(metrics)
    assert families["crd_scheduler_profile_reloads_total"].values() == {
        (("result", "success"),): 1,
        (("result", "invalid"),): 1,
    }
    assert families["crd_scheduler_profile_reload_duration_seconds"].value("_count", result="invalid") == 1


async def test_algorithm_event_handling_cache_and_binding_tasks() -> None:
    families = await scheduled_run(10)
    # schedulingAlgorithm's defer: every attempt whose algorithm ran (fits, huge, flaky's second;
    # flaky's first raised inside Filter and ended as an error without an algorithm result).
    assert families["scheduler_scheduling_algorithm_duration_seconds"].value("_count") == 3
    events = families["scheduler_event_handling_duration_seconds"].values("_count")
    assert events[(("event", "NodeAdd"),)] == 2
    assert events[(("event", "UnschedulablePodAdd"),)] == 3  # upstream EventUnscheduledPodAdd.Label()
    assert events[(("event", "AssignedPodAdd"),)] == 2  # the two bindings, seen by the watch
    assert families["scheduler_cache_size"].values() == {
        (("type", "assumed_pods"),): 0,
        (("type", "nodes"),): 2,
        (("type", "pods"),): 2,
    }
    assert families["scheduler_goroutines"].values() == {(("operation", "binding"),): 0}  # idle
    assert "scheduler_inflight_events" not in families  # nothing in flight: no sample
    assert families["scheduler_pod_scheduled_after_flush_total"].value() == 0


async def test_queueing_hints_are_timed_by_plugin_event_and_answer() -> None:
    metrics = SchedulerMetrics(timer=lambda: 0.0)
    scheduler, cluster, _ = make_scheduler(metrics=metrics)
    add_nodes(scheduler, cluster, [node("a", cpu="1")])
    add_pods(scheduler, cluster, [pod("huge", uid="huge", cpu="2")])
    await scheduler.run_until_idle()
    add_nodes(scheduler, cluster, [node("b", cpu="4")])  # NodeAdd: NodeResourcesFit's hint answers Queue
    hints = scrape(metrics)["scheduler_queueing_hint_execution_duration_seconds"].values("_count")
    assert hints[(("event", "NodeAdd"), ("hint", "Queue"), ("plugin", "NodeResourcesFit"))] == 1


async def test_hint_runs_are_recorded_up_to_the_recorders_budget_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's asynchronous recorder keeps 1,000 hint timings a second and drops the rest;
    every pod is still asked (the answers move all of them)."""
    monkeypatch.setattr(scheduler_metrics, "HINT_OBSERVATIONS_PER_INTERVAL", 3)
    now = [0.0]
    metrics = SchedulerMetrics(timer=lambda: now[0])
    scheduler, cluster, _ = make_scheduler(metrics=metrics)
    add_nodes(scheduler, cluster, [node("a", cpu="1")])
    add_pods(scheduler, cluster, [pod(f"p{i}", uid=f"p{i}", cpu="2") for i in range(5)])
    await scheduler.run_until_idle()

    def recorded() -> float:
        counts = scrape(metrics)["scheduler_queueing_hint_execution_duration_seconds"].values("_count")
        return sum(counts.values())

    add_nodes(scheduler, cluster, [node("b", cpu="1")])  # 5 hints (QueueSkip) within the interval: 3 kept
    assert recorded() == 3
    await scheduler.run_until_idle()
    now[0] = 0.999
    add_nodes(scheduler, cluster, [node("c", cpu="1")])
    assert recorded() == 3  # still the same interval
    now[0] = 1.0
    add_nodes(scheduler, cluster, [node("d", cpu="10")])  # a new interval: 3 of the 5 Queue answers
    assert recorded() == 6
    await scheduler.run_until_idle()
    assert {p["spec"].get("nodeName") for p in cluster.pods.values()} == {"d"}


def test_the_hint_budget_starts_again_each_interval() -> None:
    metrics = SchedulerMetrics(timer=lambda: now)
    now = 5.0
    kept = 0
    for _ in range(1500):
        if metrics.hint_room():
            metrics.hint_ran("P", "NodeAdd", "Queue", 0.0)
            kept += 1
    assert kept == scheduler_metrics.HINT_OBSERVATIONS_PER_INTERVAL == 1000
    metrics.hint_ran("P", "NodeAdd", "Queue", 0.0)  # no room: dropped
    now = 6.0
    assert metrics.hint_room()
    metrics.hint_ran("P", "NodeAdd", "Queue", 0.0)
    counts = scrape(metrics)["scheduler_queueing_hint_execution_duration_seconds"].values("_count")
    assert counts == {(("event", "NodeAdd"), ("hint", "Queue"), ("plugin", "P")): 1001}


async def test_pods_held_by_a_profile_that_does_not_serve_are_pending_as_gated() -> None:
    metrics = SchedulerMetrics()
    scheduler, cluster, _ = make_scheduler(metrics=metrics)
    add_nodes(scheduler, cluster, [node("n", cpu="4")])
    broken = {"schedulerName": "team-sched", "plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}
    bad = SchedulerProfileSpec.model_validate(broken)
    tenant = ProfileKey("team-a", "broken")
    with pytest.raises(ProfileError):
        scheduler.apply_profile(tenant, bad, created="2026-01-01T00:00:00Z")  # never served: holds its pods
    held = pod("held", "team-a", uid="held", cpu="1", scheduler_name="team-sched")
    add_pods(scheduler, cluster, [held, pod("ok", uid="ok", cpu="1")])
    await scheduler.run_until_idle()
    families = scrape(metrics)
    assert families["scheduler_pending_pods"].values() == {
        (("queue", "active"),): 0,
        (("queue", "backoff"),): 0,
        (("queue", "unschedulable"),): 0,
        (("queue", "gated"),): 1,  # held, never attempted
    }
    assert families["crd_scheduler_held_pods"].values() == {(("profile", "team-a/broken"),): 1}
    assert families["crd_scheduler_profile_serving"].values() == {
        (("profile", PROFILE),): 1,
        (("profile", "team-a/broken"),): 0,
    }
    assert families["crd_scheduler_profile_refused"].values() == {
        (("profile", PROFILE),): 0,
        (("profile", "team-a/broken"),): 1,
    }
    # A refused change of a serving profile: the last good generation keeps serving.
    with pytest.raises(ProfileError):
        scheduler.apply_profile(
            ProfileKey(HOME, "default"),
            SchedulerProfileSpec.model_validate(broken | {"schedulerName": "crd-scheduler"}),
        )
    families = scrape(metrics)
    assert families["crd_scheduler_profile_serving"].value(profile=PROFILE) == 1
    assert families["crd_scheduler_profile_refused"].value(profile=PROFILE) == 1
    scheduler.apply_profile(tenant, SchedulerProfileSpec.model_validate({"schedulerName": "team-sched"}))  # fixed
    await scheduler.run_until_idle()
    families = scrape(metrics)
    assert families["crd_scheduler_profile_refused"].value(profile="team-a/broken") == 0
    assert families["scheduler_pending_pods"].value(queue="gated") == 0
    assert "crd_scheduler_held_pods" not in families
