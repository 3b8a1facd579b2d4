"""Which features a registry allows, and the two equivalent profiles built from it."""

from __future__ import annotations

import pytest

from bench.parity_harness import features
from bench.parity_harness.profile import (
    PERCENTAGE_OF_NODES_TO_SCORE,
    SCHEDULER_NAME,
    kube_scheduler_config,
    parity_plugins,
    plugin_set,
    scheduler_profile,
)
from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.plugins import names
from scheduler_core.simulator import load_texts

TODAY = {
    names.PRIORITY_SORT,
    names.NODE_UNSCHEDULABLE,
    names.NODE_NAME,
    names.TAINT_TOLERATION,
    names.NODE_AFFINITY,
    names.NODE_RESOURCES_FIT,
    names.NODE_RESOURCES_BALANCED_ALLOCATION,
    names.DEFAULT_BINDER,
}


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        pytest.param(set(), set(), id="nothing-registered"),
        pytest.param(
            TODAY,
            {
                "unschedulable",
                "taints",
                "node_affinity",
                "extended_resources",
                "ephemeral_storage",
                "init_containers",
                "pod_level_resources",
                "pod_count",
            },
            id="the-first-eight-plugins",
        ),
        pytest.param(
            TODAY | {names.POD_TOPOLOGY_SPREAD},
            {
                "unschedulable",
                "taints",
                "node_affinity",
                "extended_resources",
                "ephemeral_storage",
                "init_containers",
                "pod_level_resources",
                "pod_count",
                "topology_spread",
                "services",
            },
            id="a-newly-registered-plugin-widens-the-generator",
        ),
    ],
)
def test_available_features_follow_the_registered_plugins(plugins: set[str], expected: set[str]) -> None:
    assert features.available(plugins) == expected


@pytest.mark.parametrize(
    ("wanted", "message"),
    [
        pytest.param(["nope"], "unknown feature(s) nope", id="unknown"),
        pytest.param(
            ["taints", "images"],
            "feature(s) need plugins this build lacks: {'images': ['ImageLocality']}",
            id="plugin-missing",
        ),
    ],
)
def test_selecting_features_refuses_what_cannot_be_compared(wanted: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        features.select(TODAY, wanted)


def test_selecting_nothing_in_particular_takes_every_available_feature() -> None:
    assert features.select(TODAY, None) == features.available(TODAY)
    assert features.select(TODAY, ["taints"]) == {"taints"}


def test_selecting_all_adds_the_opt_in_features_the_plugins_allow() -> None:
    with_preemption = TODAY | {names.DEFAULT_PREEMPTION}
    assert "preemption" not in features.select(with_preemption, None)
    chosen = features.select(with_preemption, ["all"])
    assert "preemption" in chosen
    assert chosen - features.select(with_preemption, None) <= features.OPT_IN
    assert "dra" not in chosen  # its plugin is not in the set
    every_plugin = {plugin for feature in features.FEATURES for plugin in feature.plugins}
    assert features.select(every_plugin, ["all"]) == set(features.BY_NAME)


def test_plugins_keep_upstream_order_and_weights_and_skip_the_missing() -> None:
    assert parity_plugins(TODAY | {"NotUpstream"}) == [
        ("PrioritySort", None),
        ("NodeUnschedulable", None),
        ("NodeName", None),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodeResourcesFit", 1),
        ("NodeResourcesBalancedAllocation", 1),
        ("DefaultBinder", None),
    ]


def test_both_configurations_enable_exactly_the_same_plugins() -> None:
    stanza = plugin_set(TODAY)
    assert stanza["multiPoint"]["disabled"] == [{"name": "*"}]
    assert {"name": "TaintToleration", "weight": 3} in stanza["multiPoint"]["enabled"]
    upstream = kube_scheduler_config(TODAY, "http://127.0.0.1:1")
    (profile,) = upstream["profiles"]
    assert profile == {
        "schedulerName": SCHEDULER_NAME,
        "percentageOfNodesToScore": PERCENTAGE_OF_NODES_TO_SCORE,
        "plugins": stanza,
    }
    *scenario, recorder = upstream["extenders"]
    assert recorder["urlPrefix"] == "http://127.0.0.1:1" and recorder["nodeCacheCapable"] is True
    ours = scheduler_profile(TODAY)
    spec = SchedulerProfileSpec.model_validate(ours["spec"])
    assert spec.scheduler_name == SCHEDULER_NAME and spec.percentage_of_nodes_to_score == 100
    assert spec.plugins.multi_point.model_dump(exclude_none=True) == stanza["multiPoint"]
    assert spec.extenders == []
    # The extenders feature: the scenario extenders, the same on both sides; the recorder on theirs only.
    with_extenders = SchedulerProfileSpec.model_validate(scheduler_profile(TODAY, "http://127.0.0.1:1")["spec"])
    assert [e.model_dump(by_alias=True, exclude_defaults=True) for e in with_extenders.extenders] == scenario


def test_the_simulator_accepts_the_profile() -> None:
    import yaml

    cluster = load_texts([("profile.yaml", yaml.safe_dump(scheduler_profile(TODAY)))])
    (profile,) = cluster.profiles
    assert profile.spec.scheduler_name == SCHEDULER_NAME
