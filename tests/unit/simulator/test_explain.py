"""``explain``: one pod's own scheduling cycle on a snapshot, with its live profile."""

from __future__ import annotations

import pytest

from scheduler_core.simulator import InputError, simulate
from scheduler_core.simulator.explain import explain, render_text
from scheduler_core.simulator.html import render_explanation
from tests.unit.simulator.support import load, most_allocated, profile
from tests.wrappers import node, pod

LIVE_DEFAULT = profile(
    "default", schedulerName="crd-scheduler", tenantPolicy={"allowedSchedulerNames": ["crd-scheduler"]}
)


def _cluster(*objects: object):  # type: ignore[no-untyped-def]
    return load(node("n1", cpu="2"), node("n2", cpu="4"), node("n3", cpu="8", taints=[
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]), *objects)  # fmt: skip


def test_a_pending_pod_gets_scores_per_plugin_and_filter_reasons() -> None:
    explanation = explain(_cluster(LIVE_DEFAULT, pod("web", cpu="1")), "default", "web")
    report = explanation.report
    assert (report.status, report.node, report.profile) == ("Scheduled", "n2", "crd-scheduler/default")
    assert set(report.scores) == {"n1", "n2"}
    assert report.scores["n2"]["total"] == sum(v for k, v in report.scores["n2"].items() if k != "total")
    assert report.filtered == {"n3": ["node(s) had untolerated taint(s)"]}
    text = render_text(explanation)
    assert "Result: Scheduled on n2" in text and "n3: node(s) had untolerated taint(s)" in text


def test_only_the_pod_asked_about_is_placed() -> None:
    """Other pending pods are left out: the answer is this pod's cycle on the nodes as they are."""
    cluster = _cluster(LIVE_DEFAULT, pod("big", cpu="4"), pod("web", cpu="1"))
    assert explain(cluster, "default", "web").report.node == "n2"
    assert simulate(cluster).pods[1].node == "n1"  # after big took n2


def test_an_unschedulable_pod_gets_upstreams_message() -> None:
    cluster = _cluster(LIVE_DEFAULT, pod("huge", cpu="16"))
    explanation = explain(cluster, "default", "huge")
    expected = simulate(cluster).pods[0]
    assert explanation.report.status == "Unschedulable"
    assert explanation.report.message == expected.message
    assert explanation.report.message.startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )
    assert explanation.preemption is None


def test_preemption_shows_victims_and_node_from_the_first_attempt() -> None:
    cluster = load(
        node("n1", cpu="1"), LIVE_DEFAULT,
        pod("low", cpu="1", node_name="n1", priority=0), pod("high", cpu="1", priority=1000),
    )  # fmt: skip
    explanation = explain(cluster, "default", "high")
    assert explanation.report.status == "Unschedulable"
    assert explanation.report.message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert explanation.preemption is not None
    assert (explanation.preemption.node, explanation.preemption.victims) == ("n1", ["default/low"])
    assert explanation.then is not None and explanation.then.node == "n1"
    assert "Preemption: would evict default/low and nominate node n1" in render_text(explanation)


def test_a_bound_pod_is_explained_as_placed_again_now() -> None:
    cluster = _cluster(LIVE_DEFAULT, pod("web", cpu="1", node_name="n1"))
    explanation = explain(cluster, "default", "web")
    assert explanation.bound_to == "n1"
    assert explanation.report.node == "n2"
    assert explanation.to_json()["boundTo"] == "n1"


def test_the_live_profile_of_the_pods_namespace_wins() -> None:
    cluster = _cluster(LIVE_DEFAULT, most_allocated("packing", namespace="team-a"), pod("web", "team-a", cpu="1"))
    explanation = explain(cluster, "team-a", "web")
    assert explanation.report.profile == "team-a/packing"
    assert explanation.report.node == "n1"  # MostAllocated prefers the fuller node


@pytest.mark.parametrize(
    ("objects", "namespace", "name", "problem"),
    [
        pytest.param([LIVE_DEFAULT], "default", "nope", "cluster: Pod default/nope: not found", id="missing"),
        pytest.param(
            [pod("web", cpu="1")], "default", "web",
            "cluster: Pod default/web: spec.schedulerName: no profile serves schedulerName 'crd-scheduler' in "
            "namespace 'default' or the home one",
            id="no-live-profile-no-builtin-default",
        ),
    ],
)  # fmt: skip
def test_what_cannot_be_explained_is_a_clear_error(
    objects: list[object], namespace: str, name: str, problem: str
) -> None:
    with pytest.raises(InputError) as caught:
        explain(_cluster(*objects), namespace, name)
    assert [str(p) for p in caught.value.problems] == [problem]


def test_an_invalid_live_profile_elsewhere_blocks_nothing() -> None:
    bad_args = [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Nope"}}}]
    broken = profile("broken", namespace="team-b", schedulerName="crd-scheduler", pluginConfig=bad_args)
    explanation = explain(_cluster(LIVE_DEFAULT, broken, pod("web", cpu="1")), "default", "web")
    assert explanation.report.node == "n2"
    assert any(w.startswith("in.yaml: SchedulerProfile team-b/broken: ") for w in explanation.warnings)


def test_a_live_profile_whose_spec_does_not_parse_is_left_out_with_a_warning() -> None:
    from scheduler_core.simulator import load_lists

    good = {"metadata": {"name": "default", "namespace": "crd-scheduler"}, "spec": {"schedulerName": "crd-scheduler"}}
    bad = {"metadata": {"name": "bad", "namespace": "team-b"}, "spec": {"schedulerName": "x", "bogus": []}}
    cluster = load_lists(
        "cluster", {"Node": [node("n1")], "Pod": [pod("web", cpu="1")], "SchedulerProfile": [good, bad]}, stored=True
    )
    assert [str(p.key) for p in cluster.profiles] == ["crd-scheduler/default"]
    assert cluster.warnings == ["cluster: SchedulerProfile team-b/bad: spec.bogus: unknown field: not served"]
    assert explain(cluster, "default", "web").report.node == "n1"


MISSPELT = {"score": {"enabled": [{"name": "NodeResourcesFitt"}]}}


def test_a_pod_held_by_a_profile_that_does_not_serve_is_explained_not_refused() -> None:
    held = profile("own", namespace="team-a", schedulerName="crd-scheduler", plugins=MISSPELT)
    cluster = _cluster(LIVE_DEFAULT, held, pod("web", "team-a", cpu="1"))

    explanation = explain(cluster, "team-a", "web")

    report = explanation.report
    assert (report.status, report.node, report.profile) == ("ProfileNotServing", None, "team-a/own")
    assert report.message.startswith("profile team-a/own (schedulerName 'crd-scheduler') does not serve: ")
    assert explanation.held == [
        "in.yaml: SchedulerProfile team-a/own: spec.plugins.score.enabled[0].name: plugin 'NodeResourcesFitt' "
        "does not exist"
    ]
    assert explanation.to_json()["held"] == explanation.held
    html = render_explanation(explanation)
    assert "Why profile team-a/own does not serve</h2>" in html and "NodeResourcesFitt" in html
    text = render_text(explanation)
    assert "Result: ProfileNotServing" in text
    assert "Why profile team-a/own does not serve:\n  in.yaml: SchedulerProfile team-a/own: " in text


def test_a_held_pod_shows_the_live_profiles_own_conditions_first() -> None:
    held = profile("own", namespace="team-a", schedulerName="crd-scheduler", plugins=MISSPELT)
    cluster = _cluster(LIVE_DEFAULT, held, pod("web", "team-a", cpu="1"))
    refused = "generation 2 refused, no generation of this profile ever served: its pods wait: ..."
    cluster.profile_conditions["team-a/own"] = [
        {"type": "Ready", "status": "False", "reason": "SpecRejected", "message": refused},
        {"type": "Stalled", "status": "True", "reason": "SpecRejected", "message": refused},
        {"type": "Valid", "status": "False", "reason": "InvalidProfile", "message": "..."},
    ]

    held_by = explain(cluster, "team-a", "web").held

    assert held_by[:2] == [
        f"status Ready=False (SpecRejected): {refused}",
        f"status Stalled=True (SpecRejected): {refused}",
    ]
    assert held_by[2].startswith("in.yaml: SchedulerProfile team-a/own: spec.plugins.score")
