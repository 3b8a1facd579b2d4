"""Generated clusters: ``filter_batch`` agrees with ``filter`` and ``score_batch`` /
``normalize_score_batch`` with ``score`` / ``normalize_score`` on every node, and AddPod gives
the state PreFilter computes with the added pod in the snapshot (RemovePod undoes it)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scheduler_core.framework import CycleState, NodeScore, PodInfo
from scheduler_core.plugins.interpodaffinity import InterPodAffinityArgs
from scheduler_core.plugins.interpodaffinity.filtering import PreFilterState
from scheduler_core.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY
from tests.unit.plugins.interpodaffinity.helpers import affinity, setup, term, weighted
from tests.wrappers import Json, node, pod

TOPOLOGY_KEYS = ["zone", "region", "host", "absent"]
NAMESPACE_NAMES = ["default", "ns1", "ns2"]
NAMESPACES: list[Json] = [
    {"metadata": {"name": "default"}},
    {"metadata": {"name": "ns1", "labels": {"team": "t1"}}},
    {"metadata": {"name": "ns2", "labels": {"team": "t2"}}},
]

node_labels = st.fixed_dictionaries(
    {},
    optional={
        "zone": st.sampled_from(["z1", "z2", "z3"]),
        "region": st.sampled_from(["r1", "r2"]),
        "host": st.sampled_from(["h1", "h2", "h3", "h4"]),
    },
)
pod_labels = st.fixed_dictionaries(
    {}, optional={"app": st.sampled_from(["a", "b", "c"]), "tier": st.sampled_from(["x", "y"])}
)
requirement = st.one_of(
    st.builds(
        lambda k, op, vs: {"key": k, "operator": op, "values": vs},
        st.sampled_from(["app", "tier"]),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(["a", "b", "c", "x", "y"]), min_size=1, max_size=2),
    ),
    st.builds(
        lambda k, op: {"key": k, "operator": op},
        st.sampled_from(["app", "tier"]),
        st.sampled_from(["Exists", "DoesNotExist"]),
    ),
)
label_selector = st.one_of(
    st.just({}),
    st.builds(lambda exprs: {"matchExpressions": exprs}, st.lists(requirement, min_size=1, max_size=2)),
    st.builds(lambda labels: {"matchLabels": labels}, pod_labels),
)
namespace_scope = st.one_of(
    st.just({}),
    st.builds(lambda ns: {"namespaces": ns}, st.lists(st.sampled_from(NAMESPACE_NAMES), min_size=1, max_size=2)),
    st.just({"namespaceSelector": {}}),
    st.just({"namespaceSelector": {"matchLabels": {"team": "t1"}}}),
)
affinity_term = st.builds(
    lambda sel, tk, scope: term(sel, tk, **_scope(scope)),
    label_selector,
    st.sampled_from(TOPOLOGY_KEYS),
    namespace_scope,
)
terms = st.lists(affinity_term, max_size=2)
weighted_terms = st.lists(st.builds(weighted, st.integers(1, 100), affinity_term), max_size=2)
pod_affinity = st.one_of(
    st.none(),
    st.builds(
        lambda r, p, ar, ap: affinity(required=r, preferred=p, anti_required=ar, anti_preferred=ap),
        terms,
        weighted_terms,
        terms,
        weighted_terms,
    ),
)


def _scope(scope: dict[str, Any]) -> dict[str, Any]:
    return {
        "namespaces": scope.get("namespaces"),
        "namespace_selector": scope.get("namespaceSelector"),
    }


@st.composite
def pods(draw: st.DrawFn, node_names: list[str]) -> Json:
    name = f"p{draw(st.integers(0, 10**9))}"
    return pod(
        name,
        draw(st.sampled_from(NAMESPACE_NAMES)),
        uid=name,
        labels=draw(pod_labels),
        node_name=draw(st.sampled_from(node_names)) if node_names else None,
        affinity=draw(pod_affinity) or None,
    )


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Json], list[Json], Json, int]:
    count = draw(st.integers(1, 6))
    names = [f"n{i}" for i in range(count)]
    nodes = [node(name, labels=draw(node_labels), hostname_label=False) for name in names]
    existing = draw(st.lists(pods(names), max_size=8, unique_by=lambda p: p["metadata"]["uid"]))
    incoming = draw(pods([]))
    weight = draw(st.integers(0, 100))
    return nodes, existing, incoming, weight


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_batch_forms_agree_with_per_node(cluster: tuple[list[Json], list[Json], Json, int]) -> None:
    nodes, existing, incoming_manifest, weight = cluster
    plugin, snapshot = setup(
        existing, nodes, namespaces=NAMESPACES, args=InterPodAffinityArgs(hard_pod_affinity_weight=weight)
    )
    incoming = PodInfo(incoming_manifest)
    infos = snapshot.list()

    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, infos)
    event(f"pre_filter: {status.code.upstream_name if status else 'Success'}")
    if status is None:
        per_node = [plugin.filter(state, incoming, info) is None for info in infos]
        event(f"nodes passing: {'some' if any(per_node) else 'none'}")
        mask = plugin.filter_batch(state, incoming, snapshot.columns)
        assert mask is not None
        assert mask.tolist() == per_node

    state = CycleState()
    pre_score = plugin.pre_score(state, incoming, infos)
    event(f"pre_score: {pre_score.code.upstream_name if pre_score else 'Success'}")
    if pre_score is None:
        raw = [plugin.score(state, incoming, info)[0] for info in infos]
        rows = np.arange(len(infos), dtype=np.int64)
        batch = plugin.score_batch(state, incoming, snapshot.columns, rows)
        assert batch is not None
        assert batch.tolist() == raw
        event(f"distinct raw scores: {min(len(set(raw)), 3)}")
        node_scores = [NodeScore(info.name, s) for info, s in zip(infos, raw, strict=True)]
        assert plugin.normalize_score(state, incoming, node_scores) is None
        assert plugin.normalize_score_batch(state, incoming, batch) is None
        assert batch.tolist() == [s.score for s in node_scores]
        assert all(0 <= s.score <= 100 for s in node_scores)


def _counts(state: CycleState) -> tuple[Any, ...]:
    data = state.read_as(PRE_FILTER_STATE_KEY, PreFilterState)
    return data.existing_anti_affinity_counts, data.affinity_counts, data.anti_affinity_counts


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_add_pod_equals_pre_filter_with_the_pod(cluster: tuple[list[Json], list[Json], Json, int], data: Any) -> None:
    nodes, existing, incoming_manifest, _ = cluster
    names = [n["metadata"]["name"] for n in nodes]
    added = data.draw(pods(names))
    incoming = PodInfo(incoming_manifest)

    with_pod, snapshot_with = setup([*existing, added], nodes, namespaces=NAMESPACES)
    state_with = CycleState()
    _, status_with = with_pod.pre_filter(state_with, incoming, snapshot_with.list())

    plugin, snapshot = setup(existing, nodes, namespaces=NAMESPACES)
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, snapshot.list())
    if status is not None or status_with is not None:
        return  # Skip (or a parse error) on either side: no state to compare
    before = tuple(dict(c) for c in _counts(state))
    node = next(info for info in snapshot.list() if info.name == added["spec"]["nodeName"])
    assert plugin.add_pod(state, incoming, PodInfo(added), node) is None
    assert _counts(state) == _counts(state_with)
    assert plugin.remove_pod(state, incoming, PodInfo(added), node) is None
    assert _counts(state) == before
