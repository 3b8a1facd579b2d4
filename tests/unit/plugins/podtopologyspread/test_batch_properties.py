"""The batch forms agree with the per-node forms, and the vectorized counting with a plain
transcription of upstream's loops, on generated clusters and pods.

- ``filter_batch`` == ``filter`` on every node;
- PreFilter over the snapshot's columns == PreFilter node by node;
- ``score_batch`` == ``score`` on the candidates, in any order;
- PreScore's domain counts == :func:`reference_pre_score` (``initPreScoreState`` then the
  ``processAllNode`` loop of ``scoring.go``, written out naively).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scheduler_core.framework import CycleState, NodeInfo, PodInfo
from scheduler_core.framework.node_selector import required_node_affinity
from scheduler_core.framework.types import find_untolerated_taint
from scheduler_core.plugins.podtopologyspread.common import (
    LABEL_HOSTNAME,
    Constraint,
    node_labels_match,
)
from scheduler_core.plugins.podtopologyspread.counting import count_pods_match_selector
from scheduler_core.plugins.podtopologyspread.filtering import PreFilterState
from scheduler_core.plugins.podtopologyspread.plugin import PRE_FILTER_STATE_KEY, PRE_SCORE_STATE_KEY
from scheduler_core.plugins.podtopologyspread.scoring import PreScoreState
from tests.unit.plugins.podtopologyspread.helpers import HOSTNAME, ZONE, build_snapshot, make_plugin, rows_of, spread
from tests.wrappers import node, pod, pod_info

NAMES = [f"n{i}" for i in range(8)]
KEYS = [ZONE, HOSTNAME, "rack"]
SELECTORS = [
    {"matchLabels": {"app": "a"}},
    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["b"]}]},
    {},
    None,
]
TAINT = {"key": "t", "value": "", "effect": "NoSchedule"}


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=8, unique=True))
    nodes = []
    for name in names:
        labels: dict[str, str] = {}
        if draw(st.integers(0, 5)):
            labels[HOSTNAME] = name
        zone = draw(st.sampled_from(["z1", "z2", "z3", "", None]))
        if zone is not None:
            labels[ZONE] = zone
        rack = draw(st.sampled_from(["r1", "r2", None]))
        if rack is not None:
            labels["rack"] = rack
        if draw(st.booleans()):
            labels["foo"] = "1"
        nodes.append(
            node(name, labels=labels, taints=[TAINT] if draw(st.integers(0, 3)) == 0 else None, hostname_label=False)
        )
    pods = []
    for i in range(draw(st.integers(0, 24))):
        labels = draw(
            st.dictionaries(st.sampled_from(["app", "rev"]), st.sampled_from(["a", "b", "1", "2"]), max_size=2)
        )
        pods.append(
            pod(
                f"e{i}",
                labels=labels,
                node_name=draw(st.sampled_from(names)),
                namespace=draw(st.sampled_from(["default", "default", "other"])),
                terminating=draw(st.integers(0, 5)) == 0,
            )
        )
    return nodes, pods


CONSTRAINT = st.builds(
    lambda skew, key, when, selector, min_domains, affinity, taints, keys: spread(
        skew,
        key,
        when,
        selector,
        min_domains=min_domains,
        node_affinity_policy=affinity,
        node_taints_policy=taints,
        match_label_keys=keys,
    ),
    st.integers(1, 3),
    st.sampled_from(KEYS),
    st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
    st.sampled_from(SELECTORS),
    st.sampled_from([None, 1, 2, 4]),
    st.sampled_from([None, "Honor", "Ignore"]),
    st.sampled_from([None, "Honor", "Ignore"]),
    st.sampled_from([None, ["rev"]]),
)


@st.composite
def incoming(draw: st.DrawFn) -> PodInfo:
    labels = draw(st.dictionaries(st.sampled_from(["app", "rev"]), st.sampled_from(["a", "b", "1", "2"]), max_size=2))
    return pod_info(
        "incoming",
        labels=labels,
        topologySpreadConstraints=list(draw(st.lists(CONSTRAINT, max_size=3))),
        node_selector={"foo": "1"} if draw(st.booleans()) else None,
        tolerations=[{"key": "t", "operator": "Exists"}] if draw(st.booleans()) else None,
        owner_references=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "controller": True}],
    )


ARGS = st.sampled_from(
    [
        {"defaultingType": "System"},
        {"defaultingType": "List"},
        {
            "defaultingType": "List",
            "defaultConstraints": [{"maxSkew": 1, "topologyKey": "rack", "whenUnsatisfiable": "ScheduleAnyway"}],
        },
    ]
)
OBJECTS = {
    "Service": [{"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": {"app": "a"}}}],
    "ReplicaSet": [
        {"metadata": {"name": "rs", "namespace": "default"}, "spec": {"selector": {"matchLabels": {"rev": "1"}}}}
    ],
}


def reference_pre_score(
    pod: PodInfo,
    constraints: list[Constraint],
    candidates: list[NodeInfo],
    all_nodes: list[NodeInfo],
    require_all: bool,
) -> tuple[set[str], list[dict[str, int]]]:
    """``initPreScoreState`` and ``processAllNode`` of upstream scoring.go, node by node."""
    ignored: set[str] = set()
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for info in candidates:
        if require_all and not node_labels_match(info.labels, constraints):
            ignored.add(info.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key != LABEL_HOSTNAME:
                counts[i].setdefault(info.labels.get(c.topology_key, ""), 0)
    required = required_node_affinity(pod)
    for info in all_nodes:
        if require_all and not node_labels_match(info.labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if c.node_affinity_policy == "Honor" and not required.match(info.labels, info.name):
                continue
            if c.node_taints_policy == "Honor" and find_untolerated_taint(info.taints, pod.tolerations):
                continue
            value = info.labels.get(c.topology_key, "")
            if value in counts[i]:
                counts[i][value] += count_pods_match_selector(info.pods, c.selector, pod.namespace)
    return ignored, counts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), incoming(), ARGS, st.randoms(use_true_random=False))
def test_batch_forms_agree_with_per_node_forms(
    cluster: tuple[list[dict[str, Any]], list[dict[str, Any]]], pod: PodInfo, args: dict[str, Any], rng: Any
) -> None:
    nodes, pods = cluster
    snapshot = build_snapshot(nodes, pods)
    plugin = make_plugin(snapshot, args=args, objects=OBJECTS)
    infos = list(snapshot.list())

    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snapshot.list())
    event(f"PreFilter: {status}")
    if status is None:
        per_node = CycleState()
        assert plugin.pre_filter(per_node, pod, infos) == (None, None)
        data = state.read_as(PRE_FILTER_STATE_KEY, PreFilterState)
        assert (
            data.tp_value_to_match_num == per_node.read_as(PRE_FILTER_STATE_KEY, PreFilterState).tp_value_to_match_num
        )
        mask = plugin.filter_batch(state, pod, snapshot.columns)
        assert mask is not None
        assert mask.tolist() == [plugin.filter(state, pod, info) is None for info in snapshot.columns.infos]

    candidates = [info for info in infos if rng.random() < 0.7]
    rng.shuffle(candidates)
    state = CycleState()
    status = plugin.pre_score(state, pod, candidates)
    event(f"PreScore: {status}")
    if status is not None:
        return
    data_score = state.read_as(PRE_SCORE_STATE_KEY, PreScoreState)
    require_all = bool((pod.pod["spec"]).get("topologySpreadConstraints")) or args["defaultingType"] != "System"
    assert (data_score.ignored_nodes, data_score.topology_value_to_pod_counts) == reference_pre_score(
        pod, data_score.constraints, candidates, infos, require_all
    )
    names = [info.name for info in candidates]
    batch = plugin.score_batch(state, pod, snapshot.columns, rows_of(snapshot, names))
    assert batch is not None
    assert batch.tolist() == [plugin.score(state, pod, info)[0] for info in candidates]
    assert np.all(batch >= 0)
