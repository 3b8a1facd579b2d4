"""The pod index gives exactly upstream's per-pod walks (``getExistingAntiAffinityCounts``,
``getIncomingAffinityAntiAffinityCounts``, PreScore's ``processExistingPod``), written out
here as the reference, on generated clusters, also after pods and nodes change between
cycles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import CycleState, Handle, NodeInfo, PodInfo, Status
from scheduler_core.framework import affinity as terms
from scheduler_core.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs, filtering
from scheduler_core.plugins.interpodaffinity.filtering import PreFilterState
from scheduler_core.plugins.interpodaffinity.index import PodIndex
from scheduler_core.plugins.interpodaffinity.plugin import PRE_FILTER_STATE_KEY, PRE_SCORE_STATE_KEY
from scheduler_core.plugins.interpodaffinity.scoring import PreScoreState
from tests.unit.plugins.interpodaffinity.helpers import FakeHandle, affinity, setup
from tests.unit.plugins.interpodaffinity.helpers import term as affinity_term
from tests.unit.plugins.interpodaffinity.test_properties import NAMESPACES, clusters, node_labels, pods
from tests.wrappers import Json, node_infos, pod_info
from tests.wrappers import node as make_node

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ScoreMap = dict[str, dict[str, int]]


def reference_existing_anti_affinity_counts(
    pod: PodInfo, ns_labels: Mapping[str, str], nodes: Sequence[NodeInfo]
) -> dict[tuple[str, str], int]:
    """Upstream ``getExistingAntiAffinityCounts`` (filtering.go), pod by pod."""
    counts: dict[tuple[str, str], int] = {}
    for node in nodes:
        for existing in node.pods:
            if not existing.has_required_anti_affinity:
                continue
            for term in terms.pod_terms(existing).required_anti_affinity:
                if term.matches(pod, ns_labels) and term.topology_key in node.labels:
                    pair = (term.topology_key, node.labels[term.topology_key])
                    counts[pair] = counts.get(pair, 0) + 1
    return counts


def reference_scores(
    plugin: InterPodAffinity, snapshot: Snapshot, incoming: PodInfo, hard_weight: int
) -> ScoreMap | None:
    """Upstream PreScore's walk (scoring.go), pod by pod; None when it would Skip."""
    parsed = terms.pod_terms(incoming)
    raw = incoming.affinity
    has_constraints = bool((raw.get("podAffinity") or {}).get(terms.PREFERRED)) or bool(
        (raw.get("podAntiAffinity") or {}).get(terms.PREFERRED)
    )
    namespaces = NAMESPACES
    preferred = terms.merged_weighted_terms(parsed.preferred_affinity, namespaces)
    preferred_anti = terms.merged_weighted_terms(parsed.preferred_anti_affinity, namespaces)
    ns_labels = terms.namespace_labels(namespaces, incoming.namespace)
    nodes = snapshot.list() if has_constraints else snapshot.have_pods_with_affinity()
    scores: ScoreMap = {}
    hit = False

    def process(
        term: terms.AffinityTerm, weight: int, pod: PodInfo, ns: Mapping[str, str] | None, node: NodeInfo
    ) -> None:
        nonlocal hit
        if term.matches(pod, ns) and term.topology_key in node.labels:
            values = scores.setdefault(term.topology_key, {})
            value = node.labels[term.topology_key]
            values[value] = values.get(value, 0) + weight
            hit = True

    for node in nodes:
        if not node.labels:
            continue
        for existing in node.pods if has_constraints else [p for p in node.pods if p.has_affinity]:
            for w in preferred:
                process(w.term, w.weight, existing, None, node)
            for w in preferred_anti:
                process(w.term, -w.weight, existing, None, node)
            existing_terms = terms.pod_terms(existing)
            if hard_weight > 0:
                for term in existing_terms.required_affinity:
                    process(term, hard_weight, incoming, ns_labels, node)
            for w in existing_terms.preferred_affinity:
                process(w.term, w.weight, incoming, ns_labels, node)
            for w in existing_terms.preferred_anti_affinity:
                process(w.term, -w.weight, incoming, ns_labels, node)
    return scores if hit else None


def check_against_reference(plugin: InterPodAffinity, snapshot: Snapshot, incoming: PodInfo, hard_weight: int) -> None:
    # PreFilter through the index (the snapshot's own node list)...
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming, snapshot.list())
    # ...and through upstream's walk over the nodes given (a copy of the list).
    walked = CycleState()
    _, walked_status = plugin.pre_filter(walked, incoming, list(snapshot.list()))
    assert status == walked_status
    if status is None:
        data = state.read_as(PRE_FILTER_STATE_KEY, PreFilterState)
        assert data.existing_anti_affinity_counts == reference_existing_anti_affinity_counts(
            incoming, data.namespace_labels, snapshot.have_pods_with_required_anti_affinity()
        )
        affinity, anti = filtering.incoming_affinity_counts(
            data.affinity_terms, data.anti_affinity_terms, snapshot.list()
        )
        assert (data.affinity_counts, data.anti_affinity_counts) == (affinity, anti)
        walked_data = walked.read_as(PRE_FILTER_STATE_KEY, PreFilterState)
        assert (walked_data.affinity_counts, walked_data.anti_affinity_counts) == (affinity, anti)

    state = CycleState()
    score_status = plugin.pre_score(state, incoming, snapshot.list())
    want = reference_scores(plugin, snapshot, incoming, hard_weight)
    if want is None:
        assert score_status == Status.skip()
    else:
        assert score_status is None
        assert state.read_as(PRE_SCORE_STATE_KEY, PreScoreState).topology_score == want


@SETTINGS
@given(clusters())
def test_index_equals_upstream_walks(cluster: tuple[list[Json], list[Json], Json, int]) -> None:
    nodes, existing, incoming, weight = cluster
    args = InterPodAffinityArgs(hard_pod_affinity_weight=weight)
    plugin, snapshot = setup(existing, nodes, namespaces=NAMESPACES, args=args)
    check_against_reference(plugin, snapshot, PodInfo(incoming), weight)


def _recount(infos: Sequence[NodeInfo], affinity: dict[str, int], anti: dict[str, int]) -> None:
    """What the cache keeps for the snapshot: pods with affinity / required anti-affinity per node."""
    affinity.clear()
    anti.clear()
    for info in infos:
        affinity[info.name] = sum(p.has_affinity for p in info.pods)
        anti[info.name] = sum(p.has_required_anti_affinity for p in info.pods)


@SETTINGS
@given(clusters(), st.data())
def test_index_follows_changes_between_cycles(cluster: tuple[list[Json], list[Json], Json, int], data: Any) -> None:
    """Pods come and go (one, or one leaving and one coming on a node between two cycles), node
    labels change and nodes leave between cycles; the index kept by one plugin instance, which
    follows a node's change pod by pod, still equals the walks."""
    nodes, existing, incoming_manifest, weight = cluster
    infos = node_infos(nodes, existing)
    affinity: dict[str, int] = {}
    anti: dict[str, int] = {}
    _recount(infos, affinity, anti)
    snapshot = Snapshot(infos, pods_with_affinity=affinity, pods_with_required_anti_affinity=anti)
    handle = FakeHandle(snapshot, NAMESPACES)
    plugin = InterPodAffinity(InterPodAffinityArgs(hard_pod_affinity_weight=weight), cast(Handle, handle))
    incoming = PodInfo(incoming_manifest)
    check_against_reference(plugin, snapshot, incoming, weight)
    for _ in range(data.draw(st.integers(1, 4))):
        listed = list(snapshot.list())
        change = data.draw(
            st.sampled_from(["add", "add-many", "remove", "remove-many", "swap", "relabel", "drop-node"])
        )
        if change == "swap":
            info = data.draw(st.sampled_from(listed))
            if info.pods:
                info.remove_pod(data.draw(st.sampled_from(info.pods)))
            info.add_pod(PodInfo(data.draw(pods([info.name]))))
        elif change == "add":
            info = data.draw(st.sampled_from(listed))
            info.add_pod(PodInfo(data.draw(pods([info.name]))))
        elif change == "add-many":  # bindings between two cycles: appended in turn
            for info in data.draw(st.lists(st.sampled_from(listed), min_size=1, max_size=4)):
                info.add_pod(PodInfo(data.draw(pods([info.name]))))
        elif change == "remove-many":  # a dry run's removal of several pods at once, then one more added
            info = data.draw(st.sampled_from(listed))
            info.remove_pods(data.draw(st.lists(st.sampled_from(info.pods), unique=True)) if info.pods else [])
            info.add_pod(PodInfo(data.draw(pods([info.name]))))
        elif change == "remove":
            candidates = [(info, pod) for info in listed for pod in info.pods]
            if candidates:
                info, pod = data.draw(st.sampled_from(candidates))
                info.remove_pod(pod)
        elif change == "relabel":
            info = data.draw(st.sampled_from(listed))
            assert info.node is not None
            info.set_node({**info.node, "metadata": {"name": info.name, "labels": data.draw(node_labels)}})
        elif len(listed) > 1:
            gone = data.draw(st.sampled_from(listed))
            snapshot = Snapshot(
                [info for info in listed if info is not gone],
                pods_with_affinity=affinity,
                pods_with_required_anti_affinity=anti,
            )
            handle.current = snapshot
        _recount(snapshot.list(), affinity, anti)
        snapshot.affinity_changed()
        check_against_reference(plugin, snapshot, incoming, weight)


def reference_incoming_affinity_counts(
    affinity_terms: Sequence[terms.AffinityTerm], anti_terms: Sequence[terms.AffinityTerm], nodes: Sequence[NodeInfo]
) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str], int]]:
    """Upstream ``getIncomingAffinityAntiAffinityCounts`` (filtering.go), pod by pod."""
    affinity: dict[tuple[str, str], int] = {}
    anti: dict[tuple[str, str], int] = {}
    for node in nodes:
        for existing in node.pods:
            if terms.matches_all(affinity_terms, existing):
                for term in affinity_terms:
                    if term.topology_key in node.labels:
                        pair = (term.topology_key, node.labels[term.topology_key])
                        affinity[pair] = affinity.get(pair, 0) + 1
            for term in anti_terms:
                if term.matches(existing, None) and term.topology_key in node.labels:
                    pair = (term.topology_key, node.labels[term.topology_key])
                    anti[pair] = anti.get(pair, 0) + 1
    return affinity, anti


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_incoming_counts_look_at_the_groups_with_the_required_labels(data: Any) -> None:
    """The incoming pod's terms are matched against the groups with a label value they require
    (or all groups when they require none): the counts equal the walk over every pod, as pods
    come and go."""
    names = [f"n{i}" for i in range(data.draw(st.integers(1, 3)))]
    infos = node_infos([make_node(n, labels=data.draw(node_labels), hostname_label=False) for n in names], [])
    index = PodIndex()
    for _ in range(data.draw(st.integers(1, 4))):
        for _ in range(data.draw(st.integers(0, 8))):
            info = data.draw(st.sampled_from(infos))
            info.add_pod(PodInfo(data.draw(pods([info.name]))))
        for info in infos:
            if info.pods and data.draw(st.booleans()):
                info.remove_pod(data.draw(st.sampled_from(info.pods)))
        index.refresh(infos)
        parsed = terms.pod_terms(PodInfo(data.draw(pods([]))))
        affinity, anti = parsed.required_affinity, parsed.required_anti_affinity
        got = index.incoming_affinity_counts(affinity, anti)
        assert got == reference_incoming_affinity_counts(affinity, anti, infos)


def test_a_term_requiring_one_of_several_values_finds_the_groups_with_any_of_them() -> None:
    infos = node_infos([make_node("n", labels={"zone": "z1"}, hostname_label=False)], [])
    for name, app in (("p1", "b"), ("p2", "c")):
        infos[0].add_pod(pod_info(name, uid=name, node_name="n", labels={"app": app}))
    index = PodIndex()
    index.refresh(infos)
    selector = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]}
    incoming = pod_info("in", affinity=affinity(required=[affinity_term(selector, "zone")]))
    parsed = terms.pod_terms(incoming)
    assert index.incoming_affinity_counts(parsed.required_affinity, ()) == ({("zone", "z1"): 1}, {})
    assert index.incoming_affinity_counts((), parsed.required_affinity) == ({}, {("zone", "z1"): 1})
