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
    make_plugin,
    run_filter,
    spread,
)
from tests.wrappers import node, pod, pod_info, pods_on

DNS = "DoNotSchedule"
OK = "Success"
NO = "Unschedulable"
NEVER = "UnschedulableAndUnresolvable"
NO_SCHEDULE_TAINT = [{"key": "taint", "value": "", "effect": "NoSchedule"}]
FOO = {"foo": ""}
ZONES = {"node-a": "zone1", "node-b": "zone1", "node-x": "zone2", "node-y": "zone2"}
# node-a, node-b in zone1 and node-x, node-y in zone2, labelled ``node=<name>`` (and ``foo`` on all but node-y).
FOUR_NODES = [node(n, labels={"zone": z, "node": n}, hostname_label=False) for n, z in ZONES.items()]
FOO_NODES = [
    node(n, labels={"zone": z, "node": n, **(FOO if n != "node-y" else {})}, hostname_label=False)
    for n, z in ZONES.items()
]


FILTER_CASES = [
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "zone", DNS, FOO_SELECTOR)]),
        FOUR_NODES,
        [],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="TestSingleConstraint/no existing pods",
    ),
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "zone", DNS, FOO_SELECTOR)]),
        FOUR_NODES,
        pods_on("node-a", "node-b", "node-x", "node-y", namespace="ns1", labels=FOO),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="TestSingleConstraint/existing pods in a different namespace do not count",
    ),
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "zone", DNS, FOO_SELECTOR)]),
        [
            node("node-a", labels={"zone": "zone1", "node": "node-a"}, hostname_label=False),
            node("node-b", labels={"zon": "zone1", "node": "node-b"}, hostname_label=False),
            node("node-x", labels={"zone": "zone2", "node": "node-x"}, hostname_label=False),
            node("node-y", labels={"zone": "zone2", "node": "node-y"}, hostname_label=False),
        ],
        pods_on("node-a", "node-b", "node-x", "node-y", labels=FOO),
        {"node-a": OK, "node-b": NEVER, "node-x": NO, "node-y": NO},
        id="TestSingleConstraint/pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
    ),
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR)]),
        FOUR_NODES,
        pods_on("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", labels=FOO),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/pods spread across nodes as 2/1/0/3, only node-x fits",
    ),
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(2, "node", DNS, FOO_SELECTOR)]),
        FOUR_NODES,
        pods_on("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", labels=FOO),
        {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
    ),
    pytest.param(
        pod_info("p", labels={"bar": ""}, topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR)]),
        FOUR_NODES,
        pods_on("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", labels=FOO),
        {"node-a": NO, "node-b": OK, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/pods spread across nodes as 2/1/0/3, but pod doesn't match itself",
    ),
    pytest.param(
        pod_info(
            "p",
            labels=FOO,
            topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR)],
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
        FOUR_NODES,
        pods_on("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", labels=FOO),
        # node-b and node-x are out of the pod's affinity, so their domains are not counted
        # and the global minimum is node-a's 2 (NodeAffinity itself rejects them).
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits",
    ),
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR)]),
        [
            node("node-a", labels={"node": "node-a"}, hostname_label=False),
            node("node-b", labels={"node": "node-b"}, hostname_label=False),
        ],
        [
            pod("p-a", labels={"foo": ""}, node_name="node-a", terminating=True),
            pod("p-b", labels={"foo": ""}, node_name="node-b"),
        ],
        {"node-a": OK, "node-b": NO},
        id="TestSingleConstraint/terminating Pods should be excluded",
    ),
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(2, "node", DNS, FOO_SELECTOR, min_domains=4)]),
        [node(n, labels={"node": n}, hostname_label=False) for n in ("node-a", "node-b", "node-c")],
        pods_on("node-a", "node-a", "node-b", "node-b", "node-c", labels=FOO),
        {"node-a": NO, "node-b": NO, "node-c": OK},
        id="TestSingleConstraint/pods spread across nodes as 2/2/1, maxSkew is 2, "
        "and the number of domains < minDomains, then the third node fits",
    ),
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(2, "node", DNS, FOO_SELECTOR, min_domains=2)]),
        [node(n, labels={"node": n}, hostname_label=False) for n in ("node-a", "node-b", "node-c")],
        pods_on("node-a", "node-a", "node-b", "node-b", "node-c", labels=FOO),
        {"node-a": OK, "node-b": OK, "node-c": OK},
        id="TestSingleConstraint/pods spread across nodes as 2/2/1, maxSkew is 2, "
        "and the number of domains > minDomains, then the all nodes fit",
    ),
    pytest.param(
        pod_info(
            "p", labels=FOO, topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR)], node_selector={"foo": ""}
        ),
        FOO_NODES,
        pods_on("node-a", "node-b", "node-y", labels=FOO),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK},
        id="TestSingleConstraint/NodeAffinityPolicy honored with labelSelectors",
    ),
    pytest.param(
        pod_info(
            "p",
            labels=FOO,
            topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR, node_affinity_policy="Ignore")],
            node_selector={"foo": ""},
        ),
        FOO_NODES,
        pods_on("node-a", "node-b", "node-y", labels=FOO),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/NodeAffinityPolicy ignored with labelSelectors",
    ),
    pytest.param(
        pod_info(
            "p",
            labels=FOO,
            topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR, node_taints_policy="Honor")],
        ),
        [
            *FOUR_NODES[:3],
            node("node-y", labels={"zone": "zone2", "node": "node-y"}, taints=NO_SCHEDULE_TAINT, hostname_label=False),
        ],
        pods_on("node-a", "node-b", "node-y", labels=FOO),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": OK},
        id="TestSingleConstraint/NodeTaintsPolicy honored",
    ),
    pytest.param(
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR)]),
        [
            *FOUR_NODES[:3],
            node("node-y", labels={"zone": "zone2", "node": "node-y"}, taints=NO_SCHEDULE_TAINT, hostname_label=False),
        ],
        pods_on("node-a", "node-b", "node-y", labels=FOO),
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
        id="TestSingleConstraint/NodeTaintsPolicy ignored",
    ),
    pytest.param(
        pod_info(
            "p",
            labels=FOO,
            topologySpreadConstraints=[spread(1, "zone", DNS, FOO_SELECTOR), spread(1, "node", DNS, FOO_SELECTOR)],
        ),
        FOUR_NODES,
        pods_on("node-a", "node-a", "node-b", "node-y", "node-y", "node-y", "node-y", labels=FOO),
        {"node-a": NO, "node-b": NO, "node-x": NO, "node-y": NO},
        id="TestMultipleConstraints/two Constraints on zone and node, spreads = [3/4, 2/1/0/4]",
    ),
    pytest.param(
        pod_info(
            "p",
            labels={"foo": "", "bar": ""},
            topologySpreadConstraints=[spread(1, "zone", DNS, FOO_SELECTOR), spread(1, "node", DNS, BAR_SELECTOR)],
        ),
        FOUR_NODES,
        [
            pod("p-a", labels={"foo": ""}, node_name="node-a"),
            pod("p-y", labels={"bar": ""}, node_name="node-y"),
        ],
        {"node-a": NO, "node-b": NO, "node-x": OK, "node-y": NO},
        id="TestMultipleConstraints/Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]",
    ),
    pytest.param(
        pod_info(
            "p",
            labels=FOO,
            topologySpreadConstraints=[spread(1, "zone", DNS, FOO_SELECTOR), spread(1, "node", DNS, FOO_SELECTOR)],
        ),
        [
            *FOUR_NODES[:2],
            node("node-x", labels={"zone": "zone2"}, hostname_label=False),
            node("node-y", labels={"zone": "zone2", "node": "node-y"}, hostname_label=False),
        ],
        pods_on("node-a", "node-y", labels=FOO),
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
        [
            node("node-a", labels={"zone": "zone1"}, hostname_label=False),
            node("node-b", labels={"zone": "zone2"}, hostname_label=False),
            node("node-c", hostname_label=False),
        ],
        pods_on("node-a", labels=FOO),
    )
    results = run_filter(
        make_plugin(snapshot),
        pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "zone", DNS, FOO_SELECTOR)]),
        snapshot,
    )
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
    snapshot = build_snapshot(
        [
            node("node-a", labels={"zone": "zone1"}, hostname_label=False),
            node("node-b", labels={"zone": "zone2"}, hostname_label=False),
        ]
    )
    state = CycleState()
    plugin = make_plugin(snapshot)
    pod = pod_info(
        "p",
        labels=FOO,
        topologySpreadConstraints=[spread(1, "zone", DNS, FOO_SELECTOR), spread(1, "rack", DNS, FOO_SELECTOR)],
    )
    assert plugin.pre_filter(state, pod, snapshot.list()) == (None, None)
    data = state.read_as(PRE_FILTER_STATE_KEY, PreFilterState)
    assert data.tp_value_to_match_num == [{}, {}]  # no node has every key
    info = snapshot.get("node-a")
    assert info is not None
    assert plugin.filter(state, pod, info) == Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH)
    data.tp_value_to_match_num[0]["zone1"] = 5
    data.critical_paths[0] = CriticalPaths([["zone2", 0], ["zone1", 5]])
    data.tp_value_to_match_num[0]["zone2"] = 0
    assert plugin.filter(state, pod, info) == Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)


def test_match_label_keys_are_added_to_the_selector() -> None:
    """MatchLabelKeysInPodTopologySpread (on in v1.36): pods of another revision do not count."""
    nodes = [
        node("node-a", labels={"node": "node-a"}, hostname_label=False),
        node("node-b", labels={"node": "node-b"}, hostname_label=False),
    ]
    existing = [
        pod("old-1", labels={"foo": "", "rev": "1"}, node_name="node-a"),
        pod("old-2", labels={"foo": "", "rev": "1"}, node_name="node-a"),
        pod("new-1", labels={"foo": "", "rev": "2"}, node_name="node-b"),
    ]
    snapshot = build_snapshot(nodes, existing)
    keyed = pod_info(
        "p",
        labels={"foo": "", "rev": "2"},
        topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR, match_label_keys=["rev"])],
    )
    plain = pod_info(
        "q", labels={"foo": "", "rev": "2"}, topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR)]
    )
    plugin = make_plugin(snapshot)
    assert {n: code_of(s) for n, s in run_filter(plugin, keyed, snapshot).items()} == {"node-a": OK, "node-b": NO}
    assert {n: code_of(s) for n, s in run_filter(plugin, plain, snapshot).items()} == {"node-a": NO, "node-b": OK}


def test_empty_selector_counts_no_pods_but_matches_the_pod_itself() -> None:
    """``labelSelector: {}`` is Everything: countPodsMatchSelector counts nothing for it, while
    the pod matches itself; a missing selector (Nothing) matches neither."""
    nodes = [
        node("node-a", labels={"node": "node-a"}, hostname_label=False),
        node("node-b", labels={"node": "node-b"}, hostname_label=False),
    ]
    snapshot = build_snapshot(nodes, pods_on("node-a", "node-a", labels=FOO))
    plugin = make_plugin(snapshot)
    selectors: tuple[dict[str, Any] | None, ...] = ({}, None)
    for selector in selectors:
        state = CycleState()
        pod = pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "node", DNS, selector)])
        assert plugin.pre_filter(state, pod, snapshot.list()) == (None, None)
        assert state.read_as(PRE_FILTER_STATE_KEY, PreFilterState).tp_value_to_match_num == [{"node-a": 0, "node-b": 0}]


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(pod_info("p"), id="no constraints"),
        pytest.param(
            pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "zone", "ScheduleAnyway", FOO_SELECTOR)]),
            id="only soft constraints",
        ),
    ],
)
def test_pre_filter_skips_without_hard_constraints(pod: PodInfo) -> None:
    snapshot = build_snapshot(FOUR_NODES)
    state = CycleState()
    assert make_plugin(snapshot).pre_filter(state, pod, snapshot.list()) == (None, Status.skip())
    with pytest.raises(KeyError):
        state.read(PRE_FILTER_STATE_KEY)


def test_pre_filter_reports_a_bad_selector_as_an_error() -> None:
    pod = pod_info(
        "p",
        labels=FOO,
        topologySpreadConstraints=[spread(1, "zone", DNS, {"matchExpressions": [{"key": "foo", "operator": "In"}]})],
    )
    snapshot = build_snapshot(FOUR_NODES)
    _, status = make_plugin(snapshot).pre_filter(CycleState(), pod, snapshot.list())
    assert status is not None
    assert code_of(status) == "Error"
    assert status.message() == (
        "get constraints from pod: obtaining pod's hard topology spread constraints: "
        "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    )


def test_filter_without_pre_filter_is_an_error() -> None:
    """Upstream TestPreFilterDisabled."""
    snapshot = build_snapshot([node("node-a", hostname_label=False)])
    info = snapshot.get("node-a")
    assert info is not None
    plugin = make_plugin(snapshot)
    status = plugin.filter(CycleState(), pod_info("p"), info)
    assert status is not None and code_of(status) == "Error"
    assert status.message() == 'reading "PreFilterPodTopologySpread" from cycleState: not found'
    assert plugin.filter_batch(CycleState(), pod_info("p"), snapshot.columns) is None


def test_add_and_remove_pod_update_a_clone_only() -> None:
    """AddPod/RemovePod (upstream TestPreFilterStateAddPod/RemovePod) change the state they
    are given; a clone taken before is untouched, as preemption's what-if runs need."""
    snapshot = build_snapshot(
        [
            node("node-a", labels={"node": "node-a"}, hostname_label=False),
            node("node-b", labels={"node": "node-b"}, hostname_label=False),
        ]
    )
    plugin = make_plugin(snapshot)
    pod = pod_info("p", labels=FOO, topologySpreadConstraints=[spread(1, "node", DNS, FOO_SELECTOR)])
    state = CycleState()
    assert plugin.pre_filter(state, pod, snapshot.list()) == (None, None)
    before = state.clone()
    node_a = snapshot.get("node-a")
    assert node_a is not None
    added = pod_info("p-a1", labels={"foo": ""}, node_name="node-a")
    assert plugin.add_pod(state, pod, added, node_a) is None
    after = state.read_as(PRE_FILTER_STATE_KEY, PreFilterState)
    assert after.tp_value_to_match_num == [{"node-a": 1, "node-b": 0}]
    assert after.critical_paths[0].paths == [["node-b", 0], ["node-a", 1]]
    assert before.read_as(PRE_FILTER_STATE_KEY, PreFilterState).tp_value_to_match_num == [{"node-a": 0, "node-b": 0}]
    assert plugin.filter(state, pod, node_a) == Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH)
    assert plugin.remove_pod(state, pod, added, node_a) is None
    assert plugin.filter(state, pod, node_a) is None
    other_ns = pod_info("q", labels={"foo": ""}, node_name="node-a", namespace="other")
    assert plugin.add_pod(state, pod, other_ns, node_a) is None
    assert after.tp_value_to_match_num == [{"node-a": 0, "node-b": 0}]
    assert plugin.add_pod(CycleState(), pod, added, NodeInfo(node("node-a", hostname_label=False))) == Status.as_error(
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
