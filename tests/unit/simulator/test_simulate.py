"""End to end: manifests in, the real scheduler loop over the in-memory cluster, reports out.

Expected scores are worked out by hand from upstream's formulas (k8s.io/kubernetes
``pkg/scheduler/framework/plugins/``): TaintToleration counts intolerable PreferNoSchedule
taints and normalizes reversed (weight 3); NodeAffinity sums the weights of matching
preferred terms and normalizes to 0..100 (weight 2); NodeResourcesFit LeastAllocated is the
mean over cpu and memory of ``(alloc - requested) * 100 / alloc`` (weight 1);
BalancedAllocation (v1.36) maps the change of ``(1 - std) * 100`` made by the pod to 50..100,
75 meaning no change (weight 1).
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import Code, PodInfo, Status
from scheduler_core.names import DEFAULT_SCHEDULER_NAME
from scheduler_core.runtime.registry import default_registry
from scheduler_core.simulator import InputError, simulate
from tests.unit.simulator.support import by_name, load, most_allocated, plugin_config, profile, run
from tests.wrappers import node, pod

SCHED = DEFAULT_SCHEDULER_NAME  # the kit's pods name it
WRONG = {"type": "Wrong"}


def test_scores_per_plugin_and_totals_with_the_default_profile() -> None:
    # a: fit (75 + 75) / 2 = 75; balanced: 0.25/0.25 with the pod, 0/0 without: 50 + (50 + 100 - 100) / 2 = 75.
    # b: fit (50 + 75) / 2 = 62; balanced: std (0.5 - 0.25) / 2 = 0.125 -> 87: 50 + (50 + 87 - 100) / 2 = 68.
    result = run(node("a", cpu="4", memory="8Gi"), node("b", cpu="2", memory="8Gi"), pod("p", cpu="1", memory="2Gi"))
    (report,) = result.pods
    assert (report.status, report.node, report.profile) == ("Scheduled", "a", "crd-scheduler/default")
    assert report.message == "Successfully assigned default/p to a"
    assert report.scores == {
        "a": {
            "TaintToleration": 300,
            "NodeResourcesFit": 75,
            "NodeResourcesBalancedAllocation": 75,
            "ImageLocality": 0,
            "total": 450,
        },
        "b": {
            "TaintToleration": 300,
            "NodeResourcesFit": 62,
            "NodeResourcesBalancedAllocation": 68,
            "ImageLocality": 0,
            "total": 430,
        },
    }
    assert report.filtered == {}


def test_preferred_affinity_and_prefer_no_schedule_taints_are_scored() -> None:
    nodes = [
        node("ssd", labels={"disk": "ssd"}),
        node("hdd", labels={"disk": "hdd"}),
        node("soft", labels={"disk": "ssd"}, taints=[{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}]),
    ]
    preferred = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 80, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}}
    ]}}  # fmt: skip
    (report,) = run(*nodes, pod("cache", cpu="1", memory="1Gi", affinity=preferred)).pods
    assert report.node == "ssd"
    assert {n: (s["TaintToleration"], s["NodeAffinity"]) for n, s in report.scores.items()} == {
        "ssd": (300, 200),
        "hdd": (300, 0),
        "soft": (0, 200),
    }


def test_unschedulable_pod_gets_the_failed_scheduling_message_and_filter_reasons() -> None:
    nodes = [
        node("tainted", cpu="8", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        node("small-1", cpu="1"),
        node("small-2", cpu="1"),
    ]
    result = run(*nodes, pod("big", cpu="2"))
    (report,) = result.pods
    message = (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
        " no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert (report.status, report.node, report.message) == ("Unschedulable", None, message)
    assert report.scores == {}
    assert report.filtered == {
        "tainted": ["node(s) had untolerated taint(s)"],
        "small-1": ["Insufficient cpu"],
        "small-2": ["Insufficient cpu"],
    }
    stored = result.cluster.pod("default", "big")
    assert stored is not None and "nodeName" not in stored["spec"]
    assert stored["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    ]
    assert [(e.reason, e.message) for e in result.cluster.events_for("default", "big")] == [
        ("FailedScheduling", message)
    ]


def test_one_feasible_node_skips_scoring_as_upstream() -> None:
    nodes = [node("a", cpu="1"), node("b", cpu="4"), node("c", cpu="1")]
    (report,) = run(*nodes, pod("p", cpu="2")).pods
    assert (report.node, report.scores) == ("b", {})
    assert report.filtered == {"a": ["Insufficient cpu"], "c": ["Insufficient cpu"]}


def test_toleration_and_required_affinity_steer_to_the_dedicated_node() -> None:
    nodes = [
        node(
            "gpu",
            labels={"accelerator": "nvidia"},
            taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
        ),
        node("cpu-1"),
    ]
    required = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "accelerator", "operator": "In", "values": ["nvidia"]}]}
    ]}}}  # fmt: skip
    toleration = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    result = run(
        *nodes,
        pod("train", affinity=required, tolerations=toleration),
        pod("plain"),
        pod("picky", affinity=required),
    )
    reports = by_name(result)
    assert reports["train"].node == "gpu"
    assert reports["train"].filtered == {"cpu-1": ["node(s) didn't match Pod's node affinity/selector"]}
    assert reports["plain"].node == "cpu-1"
    assert reports["picky"].message == (
        "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
        "1 node(s) had untolerated taint(s)."
        " no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )


def test_least_allocated_spreads_and_pods_already_assigned_count() -> None:
    busy = pod("busy", cpu="2", memory="4Gi", node_name="b")
    result = run(node("a"), node("b"), node("c"), busy, *[pod(f"web-{i}", cpu="1", memory="2Gi") for i in range(3)])
    assert [r.name for r in result.pods] == ["web-0", "web-1", "web-2"]  # the assigned pod is not reported
    first, second, third = result.pods
    assert {first.node, second.node} == {"a", "c"}  # one per empty node
    assert third.node in {"a", "c"}
    # b holds the busy pod: cpu (4000 - 3000) * 100 / 4000 = 25, memory (32Gi - 6Gi) * 100 / 32Gi = 81 -> 53;
    # an empty node: cpu 75, memory 93 -> 84; the node that took the first replica: cpu 50, memory 87 -> 68.
    assert {n: s["NodeResourcesFit"] for n, s in first.scores.items()} == {"a": 84, "b": 53, "c": 84}
    assert {n: s["NodeResourcesFit"] for n, s in second.scores.items()} == {first.node: 68, "b": 53, second.node: 84}


def test_most_allocated_profile_packs_instead() -> None:
    busy = pod("busy", cpu="2", memory="4Gi", node_name="b")
    pods = [pod(f"web-{i}", cpu="500m", memory="1Gi") for i in range(3)]
    spread = run(node("a"), node("b"), busy, *pods)
    packed = run(node("a"), node("b"), busy, *pods, most_allocated())
    assert spread.pods[0].node == "a"
    assert [r.node for r in packed.pods] == ["b", "b", "b"]
    report = packed.pods[0]
    assert report.profile == "crd-scheduler/packing"
    assert set(report.scores["b"]) == {"TaintToleration", "NodeResourcesFit", "ImageLocality", "total"}
    # MostAllocated on b: cpu 2500 * 100 / 4000 = 62, memory 5Gi * 100 / 32Gi = 15 -> (62 + 15) / 2 = 38.
    assert report.scores["b"]["NodeResourcesFit"] == 38


def test_plugin_config_of_the_home_namespace_applies_to_the_built_in_profile() -> None:
    busy = pod("busy", cpu="2", node_name="b")
    args = {"scoringStrategy": {"type": "MostAllocated"}}
    result = run(node("a"), node("b"), busy, pod("p", cpu="1"), plugin_config("fit", "NodeResourcesFit", args))
    assert result.pods[0].node == "b"


def test_namespaced_profile_applies_only_to_its_namespace() -> None:
    spread = profile("spread", schedulerName=SCHED, tenantPolicy={"allowedSchedulerNames": [SCHED]})
    packing = most_allocated("packing", namespace="team-a")
    busy = pod("busy", cpu="2", memory="4Gi", node_name="b")
    result = run(
        node("a"), node("b"), busy, spread, packing,
        pod("mine", namespace="team-a", cpu="1"), pod("theirs", namespace="team-b", cpu="1"),
    )  # fmt: skip
    reports = by_name(result)
    assert (reports["mine"].profile, reports["mine"].node) == ("team-a/packing", "b")
    assert (reports["theirs"].profile, reports["theirs"].node) == ("crd-scheduler/spread", "a")


def test_pods_no_profile_serves_are_not_reported_but_warned_about() -> None:
    result = run(
        node("a"),
        pod("ours"),
        pod("default-sched", scheduler_name=""),  # defaulted to default-scheduler
        most_allocated("packing", namespace="team-a"),  # the built-in profile is off: the input has a profile
        pod("other-ns", namespace="team-b"),
    )
    assert result.pods == []
    assert result.warnings == [
        "pod default/ours: no profile serves schedulerName 'crd-scheduler' in namespace 'default'; not scheduled",
        "pod default/default-sched: no profile serves schedulerName 'default-scheduler' in namespace 'default'; "
        "not scheduled",
        "pod team-b/other-ns: no profile serves schedulerName 'crd-scheduler' in namespace 'team-b'; not scheduled",
    ]


def test_higher_priority_is_scheduled_first_then_input_order() -> None:
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100}
    pods = [
        pod("first", cpu="1"),
        pod("second", cpu="1"),
        pod("urgent", cpu="1", priorityClassName="high"),
    ]
    result = run(node("only", cpu="2"), *pods, high)
    reports = by_name(result)
    assert [r.name for r in result.pods] == ["first", "second", "urgent"]  # reported in input order
    assert (reports["urgent"].node, reports["first"].node) == ("only", "only")
    assert reports["second"].message == (
        "0/1 nodes are available: 1 Insufficient cpu."
        " no new claims to deallocate, preemption: 0/1 nodes are available:"
        " 1 No preemption victims found for incoming pod."
    )


def test_same_seed_same_placements_and_the_seed_matters() -> None:
    no_scores = profile("random", schedulerName=SCHED, plugins={"score": {"disabled": [{"name": "*"}]}})
    nodes = [node(f"n{i}") for i in range(5)]
    pods = [pod(f"p{i}") for i in range(8)]

    def placements(seed: int) -> list[str | None]:
        return [r.node for r in run(*nodes, *pods, no_scores, seed=seed).pods]

    assert placements(7) == placements(7)
    assert len({tuple(placements(seed)) for seed in range(6)}) > 1
    report = run(*nodes, *pods, no_scores, seed=1).pods[0]
    assert report.scores == {f"n{i}": {"total": 1} for i in range(5)}  # upstream: no Score plugins, every node 1


class Hold:
    """A PreEnqueue plugin that holds every pod."""

    name = "Hold"
    args_model = None

    def __init__(self, args: object, handle: object) -> None:
        pass

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        return Status.unschedulable("held")


def test_pod_held_at_pre_enqueue_is_reported_without_an_attempt() -> None:
    registry = default_registry(with_out_of_tree=False)
    registry.register(Hold.name, Hold)
    held = profile("held", schedulerName=SCHED, plugins={"preEnqueue": {"enabled": [{"name": "Hold"}]}})
    (report,) = simulate(load(node("a"), pod("p"), held), registry=registry).pods
    assert (report.status, report.node, report.attempts) == ("Unschedulable", None, 0)
    assert report.message == "not attempted: PreEnqueue plugin 'Hold' holds the pod"


class Broken:
    """A Filter plugin that fails with an internal error."""

    name = "Broken"
    args_model = None

    def __init__(self, args: object, handle: object) -> None:
        pass

    def filter(self, state: object, pod: PodInfo, node: object) -> Status | None:
        return Status(Code.ERROR, "boom")


def test_plugin_error_is_reported_as_error_after_bounded_retries() -> None:
    registry = default_registry(with_out_of_tree=False)
    registry.register(Broken.name, Broken)
    broken = profile("broken", schedulerName=SCHED, plugins={"filter": {"enabled": [{"name": "Broken"}]}})
    result = simulate(load(node("a"), pod("p"), broken), registry=registry)
    (report,) = result.pods
    assert (report.status, report.node, report.message) == ("Error", None, 'running "Broken" filter plugin: boom')
    assert report.attempts > 1  # retried after backoff, which the fake clock jumps over
    stored = result.cluster.pod("default", "p")
    assert stored is not None and stored["status"]["conditions"][0]["reason"] == "SchedulerError"


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [profile("batch", plugins={"score": {"enabled": [{"name": "Foo"}]}})],
            ["in.yaml: SchedulerProfile crd-scheduler/batch: spec.plugins.score.enabled[0].name: "
             "plugin 'Foo' does not exist"],
            id="unknown-plugin",
        ),
        pytest.param(
            [profile("batch", pluginConfig=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": WRONG}}])],
            ["in.yaml: SchedulerProfile crd-scheduler/batch: spec.pluginConfig[0].args: "
             "plugin 'NodeResourcesFit': Value "
             'error, scoringStrategy.type: Unsupported value: "Wrong": supported values: "LeastAllocated", '
             '"MostAllocated", "RequestedToCapacityRatio"'],
            id="bad-args-in-profile",
        ),
        pytest.param(
            [plugin_config("fit", "NodeResourcesFit", {"bogus": 1})],
            ["in.yaml: PluginConfig crd-scheduler/fit: spec.args.bogus: plugin 'NodeResourcesFit': unknown field"],
            id="bad-args-in-plugin-config-reported-once",
        ),
        pytest.param(
            [plugin_config("x", "Nope", {})],
            ["in.yaml: PluginConfig crd-scheduler/x: spec.plugin: plugin 'Nope' does not exist"],
            id="plugin-config-for-unknown-plugin",
        ),
        pytest.param(
            [profile("one", schedulerName="s"), profile("two", schedulerName="s")],
            ["in.yaml: SchedulerProfile crd-scheduler/two: spec.schedulerName: schedulerName 's' is already served by "
             "profile crd-scheduler/one in namespace 'crd-scheduler' (the oldest profile wins)"],
            id="two-profiles-one-scheduler-name",
        ),
    ],
)  # fmt: skip
def test_bad_profiles_are_input_errors_naming_object_field_and_reason(objects: list[Any], expected: list[str]) -> None:
    with pytest.raises(InputError) as caught:
        simulate(load(node("a"), *objects))
    assert [str(p) for p in caught.value.problems] == expected
