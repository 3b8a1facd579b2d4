"""PreFilter/Filter/AddPod/RemovePod, as upstream ``podtopologyspread/filtering_test.go`` (v1.36.3).

Readable transcriptions of some ``TestSingleConstraint`` / ``TestMultipleConstraints`` /
``TestPreFilterState*`` cases (all of them run from ``golden/`` in ``test_upstream_golden.py``),
with the reasons upstream prints, plus the error and Skip paths.
"""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import CycleState, NodeInfo, PodInfo, Status
from scheduler_core.plugins.podtopologyspread.filtering import CriticalPaths, PreFilterState
from scheduler_core.plugins.podtopologyspread.plugin import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
)
from tests.unit.plugins.podtopologyspread.helpers import (
    BAR_SELECTOR,
    FOO_SELECTOR,
    build_snapshot,
    code_of,
    make_node,
    make_plugin,
    make_pod,
    run_filter,
    spread,
)

DNS = "DoNotSchedule"
OK = "Success"
NO = "Unschedulable"
NEVER = "UnschedulableAndUnresolvable"
NO_SCHEDULE_TAINT = [{"key": "taint", "value": "", "effect": "NoSchedule"}]


def four_nodes(**extra: dict[str, str]) -> list[dict[str, Any]]:
    """node-a, node-b in zone1 and node-x, node-y in zone2, labelled ``node=<name>``."""
    zones = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
    return [make_node(name, {"zone": zone, "node": name, **extra.get(name, {})}) for name, zone in zones.items()]


def foo_pods(*placements: str, namespace: str = "default") -> list[dict[str, Any]]:
    """One pod labelled ``foo`` per entry, on that node."""
    return [make_pod(f"p{i}", labels={"foo": ""}, node=n, namespace=namespace) for i, n in enumerate(placements)]


def foo_pod(*constraints: dict[str, Any], **kwargs: Any) -> PodInfo:
    return PodInfo(make_pod("p", labels={"foo": ""}, constraints=constraints, **kwargs))


FILTER_CASES = [
    pytest.param(
        foo_pod(spread(1, "zone", DNS, FOO_SELECTOR)),
        four_nodes(),
        [],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="TestSingleConstraint/no existing pods",
    ),
    pytest.param(
        foo_pod(spread(1, "zone", DNS, FOO_SELECTOR)),
        four_nodes(),
        foo_pods("node-a", "node-b", "node-x", "node-y", namespace="ns1"),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="TestSingleConstraint/existing pods in a different namespace do not count",
    ),
    pytest.param(
        foo_pod(spread(1, "zone", DNS, FOO_SELECTOR)),
        [
            make_node("node-a", {"zone": "zone1", "node": "node-a"}),
            make_node("node-b", {"zon": "zone1", "node": "node-b"}),
            make_node("node-x", {"zone": "zone2", "node": "node-x"}),
            make_node("node-y", {"zone": "zone2", "node": "node-y"}),
        ],
        foo_pods("node-a", "node-b", "node-x", "node-y"),
        {"node-a": OK, "node-b": NEVER, "node-x": NO, "node-y": NO},
        id="TestSingleConstraint/pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
    ),
    pytest.param(
        foo_pod(spread(1, "node", DNS, FOO_SELECTOR)),
        four_nodes(),
        foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/pods spread across nodes as 2/1/0/3, only node-x fits",
    ),
    pytest.param(
        foo_pod(spread(2, "node", DNS, FOO_SELECTOR)),
        four_nodes(),
        foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
    ),
    pytest.param(
        PodInfo(make_pod("p", labels={"bar": ""}, constraints=[spread(1, "node", DNS, FOO_SELECTOR)])),
        four_nodes(),
        foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
    ),
    pytest.param(
        foo_pod(
            spread(1, "node", DNS, FOO_SELECTOR),
            affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "node", "operator": "In", "values": ["node-a", "node-y"]}]}
                        ]
                    }
                }
            },
        ),
        four_nodes(),
        foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y"),
        # node-b and node-x are out of the pod's affinity, so their domains are not counted
        # and the global minimum is node-a's 2 (NodeAffinity itself rejects them).
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
    ),
    pytest.param(
        foo_pod(spread(1, "node", DNS, FOO_SELECTOR)),
        [make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"})],
        [
            make_pod("p-a", labels={"foo": ""}, node="node-a", terminating=True),
            make_pod("p-b", labels={"foo": ""}, node="node-b"),
        ],
        {"node-a": OK, "node-b": NO},
        id="TestSingleConstraint/terminating Pods should be excluded",
    ),
    pytest.param(
        foo_pod(spread(2, "node", DNS, FOO_SELECTOR, min_domains=4)),
        [make_node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        foo_pods("node-a", "node-a", "node-b", "node-b", "node-c"),
        {"node-a": NO, "node-b": NO, "node-c": OK},
        id="TestSingleConstraint/pods spread across nodes as 2/2/1, maxSkew is 2, "
        "and the number of domains < minDomains, then the third node fits",
    ),
    pytest.param(
        foo_pod(spread(2, "node", DNS, FOO_SELECTOR, min_domains=2)),
        [make_node(n, {"node": n}) for n in ("node-a", "node-b", "node-c")],
        foo_pods("node-a", "node-a", "node-b", "node-b", "node-c"),
        {"node-a": OK, "node-b": OK, "node-c": OK},
        id="TestSingleConstraint/pods spread across nodes as 2/2/1, maxSkew is 2, "
        "and the number of domains > minDomains, then the all nodes fit",
    ),
    pytest.param(
        foo_pod(spread(1, "node", DNS, FOO_SELECTOR), node_selector={"foo": ""}),
        four_nodes(**{n: {"foo": ""} for n in ("node-a", "node-b", "node-x")}),
        foo_pods("node-a", "node-b", "node-y"),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK},
        id="TestSingleConstraint/NodeAffinityPolicy honored with labelSelectors",
    ),
    pytest.param(
        foo_pod(spread(1, "node", DNS, FOO_SELECTOR, node_affinity_policy="Ignore"), node_selector={"foo": ""}),
        four_nodes(**{n: {"foo": ""} for n in ("node-a", "node-b", "node-x")}),
        foo_pods("node-a", "node-b", "node-y"),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        foo_pod(spread(1, "node", DNS, FOO_SELECTOR, node_taints_policy="Honor")),
        [
            *four_nodes()[:3],
            make_node("node-y", {"zone": "zone2", "node": "node-y"}, taints=NO_SCHEDULE_TAINT),
        ],
        foo_pods("node-a", "node-b", "node-y"),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK},
        id="TestSingleConstraint/NodeTaintsPolicy honored",
    ),
    pytest.param(
        foo_pod(spread(1, "node", DNS, FOO_SELECTOR)),
        [
            *four_nodes()[:3],
            make_node("node-y", {"zone": "zone2", "node": "node-y"}, taints=NO_SCHEDULE_TAINT),
        ],
        foo_pods("node-a", "node-b", "node-y"),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/NodeTaintsPolicy ignored",
    ),
    pytest.param(
        foo_pod(spread(1, "zone", DNS, FOO_SELECTOR), spread(1, "node", DNS, FOO_SELECTOR)),
        four_nodes(),
        foo_pods("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", "node-y"),
        {"node-a": NO, "node-b": NO, "node-x": NO, "node-y": NO},
        id="TestMultipleConstraints/two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
    ),
    pytest.param(
        PodInfo(
            make_pod(
                "p",
                labels={"foo": "", "bar": ""},
                constraints=[spread(1, "zone", DNS, FOO_SELECTOR), spread(1, "node", DNS, BAR_SELECTOR)],
            )
        ),
        four_nodes(),
        [
            make_pod("p-a", labels={"foo": ""}, node="node-a"),
            make_pod("p-y", labels={"bar": ""}, node="node-y"),
        ],
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
        id="TestMultipleConstraints/Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
    ),
    pytest.param(
        foo_pod(spread(1, "zone", DNS, FOO_SELECTOR), spread(1, "node", DNS, FOO_SELECTOR)),
        [
            *four_nodes()[:2],
            make_node("node-x", {"zone": "zone2"}),
            make_node("node-y", {"zone": "zone2", "node": "node-y"}),
        ],
        foo_pods("node-a", "node-y"),
        {"node-a": NO, "node-b": OK, "node-x": NEVER, "node-y": NO},
        id="TestMultipleConstraints/two Constraints on zone and node, absence of label 'node' on node-x, "
        "spreads = [1/1, 1/0/0/1]",
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "existing", "want"), FILTER_CASES)
def test_filter(
    pod: PodInfo, nodes: list[dict[str, Any]], existing: list[dict[str, Any]], want: dict[str, str]
) -> None:
    snapshot = build_snapshot(nodes, existing)
    plugin = make_plugin(snapshot)
    assert {name: code_of(status) for name, status in run_filter(plugin, pod, snapshot).items()} == want


def test_filter_reasons_are_upstreams() -> None:
    """A missing topology key is unresolvable (preemption cannot add labels); a skew is not."""
    snapshot = build_snapshot(
        [make_node("node-a", {"zone": "zone1"}), make_node("node-b", {"zone": "zone2"}), make_node("node-c")],
        foo_pods("node-a"),
    )
    results = run_filter(make_plugin(snapshot), foo_pod(spread(1, "zone", DNS, FOO_SELECTOR)), snapshot)
    assert results == {
        "node-a": Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH),
        "node-b": None,
        "node-c": Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH),
    }
    assert (
        ERR_REASON_NODE_LABEL_NOT_MATCH
        == "node(s) didn't match pod topology spread constraints (missing required label)"
    )


def test_constraints_are_checked_in_order() -> None:
    """The first failing constraint decides: a skew on the first one wins over a missing
    label for the second."""
    snapshot = build_snapshot([make_node("node-a", {"zone": "zone1"}), make_node("node-b", {"zone": "zone2"})])
    state = CycleState()
    plugin = make_plugin(snapshot)
    pod = foo_pod(spread(1, "zone", DNS, FOO_SELECTOR), spread(1, "rack", DNS, FOO_SELECTOR))
    assert plugin.pre_filter(state, pod, snapshot.list()) == (None, None)
    data = state.read_as(PRE_FILTER_STATE_KEY, PreFilterState)
    assert data.tp_value_to_match_num == [{}, {}]  # no node has every key
    node = snapshot.get("node-a")
    assert node is not None
    assert plugin.filter(state, pod, node) == Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
    data.tp_value_to_match_num[0]["zone1"] = 5
    data.critical_paths[0] = CriticalPaths([["zone2", 0], ["zone1", 5]])
    data.tp_value_to_match_num[0]["zone2"] = 0
    assert plugin.filter(state, pod, node) == Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


def test_match_label_keys_are_added_to_the_selector() -> None:
    """MatchLabelKeysInPodTopologySpread (on in v1.36): pods of another revision do not count."""
    nodes = [make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"})]
    existing = [
        make_pod("old-1", labels={"foo": "", "rev": "1"}, node="node-a"),
        make_pod("old-2", labels={"foo": "", "rev": "1"}, node="node-a"),
        make_pod("new-1", labels={"foo": "", "rev": "2"}, node="node-b"),
    ]
    snapshot = build_snapshot(nodes, existing)
    keyed = PodInfo(
        make_pod(
            "p",
            labels={"foo": "", "rev": "2"},
            constraints=[spread(1, "node", DNS, FOO_SELECTOR, match_label_keys=["rev"])],
        )
    )
    plain = PodInfo(make_pod("q", labels={"foo": "", "rev": "2"}, constraints=[spread(1, "node", DNS, FOO_SELECTOR)]))
    plugin = make_plugin(snapshot)
    assert {n: code_of(s) for n, s in run_filter(plugin, keyed, snapshot).items()} == {"node-a": OK, "node-b": NO}
    assert {n: code_of(s) for n, s in run_filter(plugin, plain, snapshot).items()} == {"node-a": NO, "node-b": OK}


def test_empty_selector_counts_no_pods_but_matches_the_pod_itself() -> None:
    """``labelSelector: {}`` is Everything: countPodsMatchSelector counts nothing for it, while
    the pod matches itself; a missing selector (Nothing) matches neither."""
    nodes = [make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"})]
    snapshot = build_snapshot(nodes, foo_pods("node-a", "node-a"))
    plugin = make_plugin(snapshot)
    selectors: tuple[dict[str, Any] | None, ...] = ({}, None)
    for selector in selectors:
        state = CycleState()
        pod = foo_pod(spread(1, "node", DNS, selector))
        assert plugin.pre_filter(state, pod, snapshot.list()) == (None, None)
        assert state.read_as(PRE_FILTER_STATE_KEY, PreFilterState).tp_value_to_match_num == [{"node-a": 0, "node-b": 0}]


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(PodInfo(make_pod("p")), id="no constraints"),
        pytest.param(foo_pod(spread(1, "zone", "ScheduleAnyway", FOO_SELECTOR)), id="only soft constraints"),
    ],
)
def test_pre_filter_skips_without_hard_constraints(pod: PodInfo) -> None:
    snapshot = build_snapshot(four_nodes())
    state = CycleState()
    assert make_plugin(snapshot).pre_filter(state, pod, snapshot.list()) == (None, Status.skip())
    with pytest.raises(KeyError):
        state.read(PRE_FILTER_STATE_KEY)


def test_pre_filter_reports_a_bad_selector_as_an_error() -> None:
    pod = foo_pod(spread(1, "zone", DNS, {"matchExpressions": [{"key": "foo", "operator": "In"}]}))
    snapshot = build_snapshot(four_nodes())
    _, status = make_plugin(snapshot).pre_filter(CycleState(), pod, snapshot.list())
    assert status is not None
    assert code_of(status) == "Error"
    assert status.message() == (
        "get constraints from pod: obtaining pod's hard topology spread constraints: "
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    )


def test_filter_without_pre_filter_is_an_error() -> None:
    """Upstream TestPreFilterDisabled."""
    snapshot = build_snapshot([make_node("node-a")])
    node = snapshot.get("node-a")
    assert node is not None
    plugin = make_plugin(snapshot)
    status = plugin.filter(CycleState(), PodInfo(make_pod("p")), node)
    assert status is not None and code_of(status) == "Error"
    assert status.message() == 'reading "PreFilterPodTopologySpread" from cycleState: not found'
    assert plugin.filter_batch(CycleState(), PodInfo(make_pod("p")), snapshot.columns) is None


def test_add_and_remove_pod_update_a_clone_only() -> None:
    """AddPod/RemovePod (upstream TestPreFilterStateAddPod/RemovePod) change the state they
    are given; a clone taken before is untouched, as preemption's what-if runs need."""
    snapshot = build_snapshot([make_node("node-a", {"node": "node-a"}), make_node("node-b", {"node": "node-b"})])
    plugin = make_plugin(snapshot)
    pod = foo_pod(spread(1, "node", DNS, FOO_SELECTOR))
    state = CycleState()
    assert plugin.pre_filter(state, pod, snapshot.list()) == (None, None)
    before = state.clone()
    node_a = snapshot.get("node-a")
    assert node_a is not None
    added = PodInfo(make_pod("p-a1", labels={"foo": ""}, node="node-a"))
    assert plugin.add_pod(state, pod, added, node_a) is None
    after = state.read_as(PRE_FILTER_STATE_KEY, PreFilterState)
    assert after.tp_value_to_match_num == [{"node-a": 1, "node-b": 0}]
    assert after.critical_paths[0].paths == [["node-b", 0], ["node-a", 1]]
    assert before.read_as(PRE_FILTER_STATE_KEY, PreFilterState).tp_value_to_match_num == [{"node-a": 0, "node-b": 0}]
    assert plugin.filter(state, pod, node_a) == Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert plugin.remove_pod(state, pod, added, node_a) is None
    assert plugin.filter(state, pod, node_a) is None
    other_ns = PodInfo(make_pod("q", labels={"foo": ""}, node="node-a", namespace="other"))
    assert plugin.add_pod(state, pod, other_ns, node_a) is None
    assert after.tp_value_to_match_num == [{"node-a": 0, "node-b": 0}]
    assert plugin.add_pod(CycleState(), pod, added, NodeInfo(make_node("node-a"))) == Status.as_error(
        'reading "PreFilterPodTopologySpread" from cycleState: not found'
    )


@pytest.mark.parametrize(
    ("updates", "want"),
    [
        pytest.param([("a", 3), ("b", 1), ("c", 2)], [["b", 1], ["c", 2]], id="keeps the two smallest"),
        pytest.param([("a", 1), ("b", 2), ("a", 3)], [["b", 2], ["a", 3]], id="an update of a kept value swaps"),
        pytest.param([("a", 1), ("b", 2), ("c", 5)], [["a", 1], ["b", 2]], id="a larger value is dropped"),
    ],
)
def test_critical_paths(updates: list[tuple[str, int]], want: list[list[Any]]) -> None:
    paths = CriticalPaths()
    for value, num in updates:
        paths.update(value, num)
    assert paths.paths == want
