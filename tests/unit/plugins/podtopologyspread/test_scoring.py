"""PreScore/Score/NormalizeScore, as upstream ``podtopologyspread/scoring_test.go`` (v1.36.3).

Readable transcriptions of some ``TestPodTopologySpreadScore`` and ``TestPreScoreSkip`` cases
(all of them run from ``golden/`` in ``test_upstream_golden.py``), the system default
constraints with Services and controllers, and Go's float math.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from scheduler_core.framework import CycleState, NodeScore, PodInfo, Status
from scheduler_core.framework.gomath import go_log, go_round
from scheduler_core.plugins.podtopologyspread.plugin import PRE_SCORE_STATE_KEY
from scheduler_core.plugins.podtopologyspread.scoring import PreScoreState
from tests.unit.plugins.podtopologyspread.helpers import (
    BAR_SELECTOR,
    FOO_SELECTOR,
    HOSTNAME,
    ZONE,
    build_snapshot,
    make_plugin,
    rows_of,
    run_score,
    spread,
)
from tests.wrappers import node, pod, pod_info, pods_on

SA = "ScheduleAnyway"
SYSTEM = {"defaultingType": "System"}


def host(name: str, **labels: str) -> dict[str, Any]:
    return node(name, labels={HOSTNAME: name, **labels}, hostname_label=False)


SCORE_CASES = [
    pytest.param(
        pod_info("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, HOSTNAME, SA, FOO_SELECTOR)]),
        [host("node-a"), host("node-b")],
        [],
        [],
        {"node-a": 100, "node-b": 100},
        id="TestPodTopologySpreadScore/one constraint on node, no existing pods",
    ),
    pytest.param(
        pod_info("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, HOSTNAME, SA, FOO_SELECTOR)]),
        [host(n) for n in ("node-a", "node-b", "node-c", "node-d")],
        [],
        pods_on("node-a", "node-a", "node-b", "node-d", "node-d", "node-d", labels={"foo": ""}),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
        id="TestPodTopologySpreadScore/one constraint on node, all 4 nodes are candidates",
    ),
    pytest.param(
        pod_info("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, HOSTNAME, SA, None)]),
        [host(n) for n in ("node-a", "node-b", "node-c", "node-d")],
        [],
        pods_on("node-a", "node-a", "node-b", "node-d", "node-d", "node-d", labels={"foo": ""}),
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
        id="TestPodTopologySpreadScore/one constraint on node, null selector",
    ),
    pytest.param(
        pod_info("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, HOSTNAME, SA, FOO_SELECTOR)]),
        [host(n) for n in ("node-a", "node-b", "node-x")],
        [host("node-y")],
        pods_on(
            "node-a",
            "node-a",
            "node-a",
            "node-a",
            "node-b",
            "node-b",
            "node-x",
            "node-y",
            "node-y",
            "node-y",
            labels={"foo": ""},
        ),
        {"node-a": 33, "node-b": 83, "node-x": 100},
        id="TestPodTopologySpreadScore/one constraint on node, 3 out of 4 nodes are candidates",
    ),
    pytest.param(
        pod_info(
            "p",
            labels={"foo": "", "bar": ""},
            topologySpreadConstraints=[spread(1, "zone", SA, FOO_SELECTOR), spread(1, HOSTNAME, SA, BAR_SELECTOR)],
        ),
        [
            host(n, zone=z)
            for n, z in (("node-a", "zone1"), ("node-b", "zone1"), ("node-x", "zone2"), ("node-y", "zone2"))
        ],
        [],
        [
            pod("p-b1", labels={"bar": ""}, node_name="node-b"),
            pod("p-x1", labels={"foo": ""}, node_name="node-x"),
            pod("p-y1", labels={"foo": "", "bar": ""}, node_name="node-y"),
        ],
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
        id="TestPodTopologySpreadScore/two Constraints on zone and node, with different labelSelectors, "
        "some nodes have 0 pods",
    ),
    pytest.param(
        pod_info("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, HOSTNAME, SA, FOO_SELECTOR)]),
        [host("node-a"), host("node-b")],
        [],
        [pod("p-a", labels={"foo": ""}, node_name="node-a", terminating=True), *pods_on("node-b", labels={"foo": ""})],
        {"node-a": 100, "node-b": 0},
        id="TestPodTopologySpreadScore/terminating Pods should be excluded",
    ),
    pytest.param(
        pod_info(
            "p", labels={"foo": ""}, topologySpreadConstraints=[spread(2, "node", SA, FOO_SELECTOR, min_domains=10)]
        ),
        [node(n, labels={"node": n}, hostname_label=False) for n in ("node-a", "node-b", "node-c")],
        [],
        pods_on("node-a", "node-a", "node-b", "node-b", "node-c", labels={"foo": ""}),
        {"node-a": 75, "node-b": 75, "node-c": 100},
        id="TestPodTopologySpreadScore/minDomains has no effect when ScheduleAnyway",
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "failed", "existing", "want"), SCORE_CASES)
def test_score(
    pod: PodInfo,
    nodes: list[dict[str, Any]],
    failed: list[dict[str, Any]],
    existing: list[dict[str, Any]],
    want: dict[str, int],
) -> None:
    snapshot = build_snapshot(nodes + failed, existing)
    plugin = make_plugin(snapshot, args=SYSTEM)
    assert run_score(plugin, pod, snapshot, [n["metadata"]["name"] for n in nodes]) == want


def test_nodes_without_a_topology_key_score_zero() -> None:
    """A candidate missing a key is ignored (score 0) and does not count as a domain."""
    snapshot = build_snapshot(
        [host("node-a", zone="zone1"), host("node-b"), host("node-c", zone="zone2")],
        pods_on("node-a", "node-b", "node-b", labels={"foo": ""}),
    )
    pod = pod_info("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, "zone", SA, FOO_SELECTOR)])
    plugin = make_plugin(snapshot)
    state = CycleState()
    assert plugin.pre_score(state, pod, list(snapshot.list())) is None
    data = state.read_as(PRE_SCORE_STATE_KEY, PreScoreState)
    assert data.ignored_nodes == {"node-b"}
    assert data.topology_value_to_pod_counts == [{"zone1": 1, "zone2": 0}]
    assert data.topology_normalizing_weight == [math.log(4)]
    assert run_score(plugin, pod, snapshot, ["node-a", "node-b", "node-c"]) == {"node-a": 0, "node-b": 0, "node-c": 100}


SERVICE = {"metadata": {"name": "svc", "namespace": "default"}, "spec": {"selector": {"foo": ""}}}


def owner(kind: str, name: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": name, "controller": True}


def test_system_defaults_spread_by_hostname_when_nodes_have_no_zone() -> None:
    """Upstream "system defaulting, nodes don't have zone, pods match service": the pod has no
    constraints; the Service selecting it gives the selector; nodes without a zone label are
    not ignored under the system defaults."""
    nodes = [host(n) for n in ("node-a", "node-b", "node-c", "node-d")]
    existing = pods_on(*(["node-a"] * 4 + ["node-b"] * 3 + ["node-c"] * 2 + ["node-d"]), labels={"foo": ""})
    snapshot = build_snapshot(nodes, existing)
    plugin = make_plugin(snapshot, args=SYSTEM, objects={"Service": [SERVICE]})
    pod = pod_info("p", labels={"foo": ""})
    state = CycleState()
    # The system defaults are all ScheduleAnyway: nothing to filter.
    assert plugin.pre_filter(state, pod, snapshot.list()) == (None, Status.skip())
    names = ["node-a", "node-b", "node-c", "node-d"]
    assert run_score(plugin, pod, snapshot, names) == {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100}


def test_system_defaults_weigh_hostname_then_zone() -> None:
    """hostname maxSkew 3 and zone maxSkew 5, summed in that order."""
    nodes = [host("node-a", **{ZONE: "z1"}), host("node-b", **{ZONE: "z1"}), host("node-c", **{ZONE: "z2"})]
    snapshot = build_snapshot(nodes, pods_on("node-a", "node-a", "node-b", labels={"foo": ""}))
    plugin = make_plugin(snapshot, args=SYSTEM, objects={"Service": [SERVICE]})
    pod = pod_info("p", labels={"foo": ""})
    state = CycleState()
    assert plugin.pre_score(state, pod, list(snapshot.list())) is None
    data = state.read_as(PRE_SCORE_STATE_KEY, PreScoreState)
    assert [(c.topology_key, c.max_skew) for c in data.constraints] == [(HOSTNAME, 3), (ZONE, 5)]
    assert data.topology_value_to_pod_counts == [{}, {"z1": 3, "z2": 0}]
    raw = {}
    for name in ("node-a", "node-b", "node-c"):
        info = snapshot.get(name)
        assert info is not None
        raw[name] = plugin.score(state, pod, info)[0]
    w_host, w_zone = go_log(5.0), go_log(4.0)
    assert raw == {
        "node-a": int(go_round(2 * w_host + 2 + (3 * w_zone + 4))),
        "node-b": int(go_round(1 * w_host + 2 + (3 * w_zone + 4))),
        "node-c": int(go_round(0 * w_host + 2 + (0 * w_zone + 4))),
    }


@pytest.mark.parametrize(
    ("pod_owner", "objects", "want_scored"),
    [
        pytest.param(None, {"Service": [SERVICE]}, True, id="selected by a Service"),
        pytest.param(None, {}, False, id="selected by nothing: Skip"),
        pytest.param(
            owner("ReplicaSet", "rs"),
            {"ReplicaSet": [{"metadata": {"name": "rs", "namespace": "default"}, "spec": {"selector": FOO_SELECTOR}}]},
            True,
            id="owned by a ReplicaSet",
        ),
        pytest.param(
            owner("StatefulSet", "ss"),
            {"StatefulSet": [{"metadata": {"name": "ss", "namespace": "default"}, "spec": {"selector": FOO_SELECTOR}}]},
            True,
            id="owned by a StatefulSet",
        ),
        pytest.param(
            owner("ReplicationController", "rc", "v1"),
            {
                "ReplicationController": [
                    {"metadata": {"name": "rc", "namespace": "default"}, "spec": {"selector": {"foo": ""}}}
                ]
            },
            True,
            id="owned by a ReplicationController",
        ),
        pytest.param(
            owner("ReplicaSet", "rs2"),
            {"ReplicaSet": [{"metadata": {"name": "rs1", "namespace": "default"}, "spec": {"selector": FOO_SELECTOR}}]},
            False,
            id="TestPreScoreSkip/default constraints and a replicaset that doesn't match",
        ),
        pytest.param(
            owner("ReplicaSet", "rs", "extensions/v1beta1"),
            {"ReplicaSet": [{"metadata": {"name": "rs", "namespace": "default"}, "spec": {"selector": FOO_SELECTOR}}]},
            False,
            id="a ReplicaSet of another API group is not a controller kind",
        ),
        pytest.param(
            None,
            {"Service": [{"metadata": {"name": "svc", "namespace": "other"}, "spec": {"selector": {"foo": ""}}}]},
            False,
            id="a Service of another namespace",
        ),
    ],
)
def test_default_constraints_need_a_selecting_object(
    pod_owner: dict[str, Any] | None, objects: dict[str, list[dict[str, Any]]], want_scored: bool
) -> None:
    snapshot = build_snapshot([host("node-a", **{ZONE: "z1"})])
    plugin = make_plugin(snapshot, args=SYSTEM, objects=objects)
    pod = pod_info("p", labels={"foo": ""}, owner_references=[pod_owner] if pod_owner else None)
    status = plugin.pre_score(CycleState(), pod, list(snapshot.list()))
    assert status == (None if want_scored else Status.skip())


@pytest.mark.parametrize(
    ("args", "pod"),
    [
        pytest.param(
            {"defaultingType": "List"},
            pod_info("p"),
            id="TestPreScoreSkip/the pod doesn't have soft topology spread Constraints",
        ),
        pytest.param(
            {"defaultingType": "System"},
            pod_info(
                "p",
                labels={"foo": ""},
                topologySpreadConstraints=[spread(1, "zone", "DoNotSchedule", FOO_SELECTOR)],
            ),
            id="hard constraints only: the defaults do not apply",
        ),
    ],
)
def test_pre_score_skips(args: dict[str, Any], pod: PodInfo) -> None:
    snapshot = build_snapshot([host("node-a"), host("node-b")])
    plugin = make_plugin(snapshot, args=args, objects={"Service": [SERVICE]})
    assert plugin.pre_score(CycleState(), pod, list(snapshot.list())) == Status.skip()


def test_pre_score_skips_without_nodes() -> None:
    snapshot = build_snapshot([])
    pod = pod_info("p", labels={"foo": ""}, topologySpreadConstraints=[spread(1, HOSTNAME, SA, FOO_SELECTOR)])
    assert make_plugin(snapshot).pre_score(CycleState(), pod, []) == Status.skip()


def test_score_without_pre_score_is_an_error() -> None:
    snapshot = build_snapshot([host("node-a")])
    plugin = make_plugin(snapshot)
    pod = pod_info("p")
    info = snapshot.get("node-a")
    assert info is not None
    message = 'error reading "PreScorePodTopologySpread" from cycleState: not found'
    assert plugin.score(CycleState(), pod, info) == (0, Status.as_error(message))
    assert plugin.normalize_score(CycleState(), pod, [NodeScore("node-a", 0)]) == Status.as_error(message)
    assert plugin.score_batch(CycleState(), pod, snapshot.columns, rows_of(snapshot, ["node-a"])) is None


def test_normalize_maps_the_least_crowded_to_100() -> None:
    """``100 * (max + min - s) / max`` with Go's truncation; all zeros give 100."""
    snapshot = build_snapshot([host("a"), host("b"), host("c"), host("d")])
    plugin = make_plugin(snapshot)
    state = CycleState()
    state.write(PRE_SCORE_STATE_KEY, PreScoreState([], {"d"}, [], []))
    scores = [NodeScore("a", 3), NodeScore("b", 7), NodeScore("c", 5), NodeScore("d", 1)]
    assert plugin.normalize_score(state, pod_info("p"), scores) is None
    assert [s.score for s in scores] == [100, 42, 71, 0]
    zeros = [NodeScore("a", 0), NodeScore("d", 0)]
    assert plugin.normalize_score(state, pod_info("p"), zeros) is None
    assert [s.score for s in zeros] == [100, 0]
