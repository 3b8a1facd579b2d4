"""Dry-run preemption: victims per node and which nodes become candidates (upstream
default_preemption_test.go TestDryRunPreemption, v1.36.3, run without parallelism; the
InterPodAffinity and PodTopologySpread cases wait for those plugins). Each case counts the
calls to a fake Filter plugin registered first, as upstream does."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import Code, PodInfo
from scheduler_core.plugins.defaultpreemption.pdb import budgets
from scheduler_core.plugins.noderesources import NodeResourcesFit
from tests.unit.plugins.defaultpreemption.harness import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    FakeFilter,
    FalseFilter,
    MatchFilter,
    TrueFilter,
    UpstreamFit,
    epoch,
    make_env,
    offsets,
    pdb,
)
from tests.wrappers import make_node, pod, pod_info

FOO = {"app": "foo"}
FIT = (FakeFilter, NodeResourcesFit)


def c(node: str, *victims: str, pdb_violations: int = 0) -> tuple[str, list[str], int]:
    return node, sorted(victims), pdb_violations


CASES = [
    pytest.param(
        (FakeFilter, FalseFilter),
        ["node1", "node2"],
        [pod("p", uid="p", priority=HIGH)],
        [pod("p1", uid="p1", node_name="node1", priority=MID), pod("p2", uid="p2", node_name="node2", priority=MID)],
        (),
        None,
        None,
        [[]],
        [2],
        id="TestDryRunPreemption/a pod that does not fit on any node",
    ),
    pytest.param(
        (FakeFilter, TrueFilter),
        ["node1", "node2"],
        [pod("p", uid="p", priority=HIGH)],
        [pod("p1", uid="p1", node_name="node1", priority=MID), pod("p2", uid="p2", node_name="node2", priority=MID)],
        (),
        None,
        Code.UNSCHEDULABLE,
        [[]],
        [2],
        id="TestDryRunPreemption/a pod that fits with no preemption",
    ),
    pytest.param(
        (FakeFilter, MatchFilter),
        ["node1", "node2"],
        [pod("node1", uid="node1", priority=HIGH)],
        [pod("p1", uid="p1", node_name="node1", priority=MID), pod("p2", uid="p2", node_name="node2", priority=MID)],
        (),
        None,
        Code.UNSCHEDULABLE,
        [[]],
        [2],
        id="TestDryRunPreemption/a pod that fits on one node with no preemption",
    ),
    pytest.param(
        FIT,
        ["node1", "node2"],
        [pod("p", uid="p", priority=HIGH, requests=LARGE)],
        [
            pod("p1", uid="p1", node_name="node1", priority=MID, requests=LARGE),
            pod("p2", uid="p2", node_name="node2", priority=MID, requests=LARGE),
        ],
        (),
        None,
        None,
        [[c("node1", "p1"), c("node2", "p2")]],
        [4],
        id="TestDryRunPreemption/a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        FIT,
        ["node1", "node2"],
        [pod("p", uid="p", priority=LOW, requests=LARGE)],
        [
            pod("p1", uid="p1", node_name="node1", priority=MID, requests=LARGE),
            pod("p2", uid="p2", node_name="node2", priority=MID, requests=LARGE),
        ],
        (),
        None,
        None,
        [[]],
        [0],
        id="TestDryRunPreemption/a pod that would fit on the nodes,"
        " but other pods running are higher priority, no preemption would happen",
    ),
    pytest.param(
        FIT,
        ["node1", "node2"],
        [pod("p", uid="p", priority=HIGH, requests=LARGE)],
        [
            pod("p1.1", uid="p1.1", node_name="node1", priority=LOW, requests=SMALL),
            pod("p1.2", uid="p1.2", node_name="node1", priority=MID, requests=LARGE),
            pod("p2", uid="p2", node_name="node2", priority=MID, requests=LARGE),
        ],
        (),
        None,
        None,
        [[c("node1", "p1.2"), c("node2", "p2")]],
        [5],
        id="TestDryRunPreemption/medium priority pod is preempted, but lower priority one stays as it is small",
    ),
    pytest.param(
        FIT,
        ["node1", "node2"],
        [pod("p", uid="p", priority=HIGH, requests=LARGE)],
        [
            pod("p1.1", uid="p1.1", node_name="node1", priority=MID, requests=SMALL),
            pod("p1.2", uid="p1.2", node_name="node1", priority=LOW, requests=SMALL),
            pod("p1.3", uid="p1.3", node_name="node1", priority=MID, requests=MEDIUM),
            pod("p1.4", uid="p1.4", node_name="node1", priority=HIGH, requests=SMALL),
            pod("p2", uid="p2", node_name="node2", priority=HIGH, requests=LARGE),
        ],
        (),
        None,
        None,
        [[c("node1", "p1.2", "p1.3")]],
        [4],
        id="TestDryRunPreemption/mixed priority pods are preempted",
    ),
    pytest.param(
        FIT,
        ["node1", "node2"],
        [pod("p", uid="p", priority=HIGH, requests=LARGE)],
        [
            pod("p1.1", uid="p1.1", node_name="node1", priority=LOW, requests=SMALL, status={"startTime": epoch(5)}),
            pod("p1.2", uid="p1.2", node_name="node1", priority=LOW, requests=SMALL, status={"startTime": epoch(4)}),
            pod("p1.3", uid="p1.3", node_name="node1", priority=MID, requests=MEDIUM, status={"startTime": epoch(3)}),
            pod("p1.4", uid="p1.4", node_name="node1", priority=HIGH, requests=SMALL, status={"startTime": epoch(2)}),
            pod("p2", uid="p2", node_name="node2", priority=HIGH, requests=LARGE, status={"startTime": epoch(1)}),
        ],
        (),
        None,
        None,
        [[c("node1", "p1.1", "p1.3")]],
        [4],
        id="TestDryRunPreemption/mixed priority pods are preempted, pick later StartTime one when priorities are equal",
    ),
    pytest.param(
        FIT,
        ["node1", "node2"],
        [pod("p", uid="p", priority=HIGH, requests=LARGE)],
        [
            pod("p1", uid="p1", node_name="node1", priority=MID, requests=LARGE),
            pod("p2", uid="p2", node_name="node2", priority=MID, requests=LARGE),
        ],
        (),
        None,
        Code.UNSCHEDULABLE,
        [[]],
        [2],
        id="TestDryRunPreemption/get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
    ),
    pytest.param(
        FIT,
        ["node1"],
        [pod("p", uid="p", priority=HIGH, requests=VERY_LARGE)],
        [
            pod("p1.1", uid="p1.1", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.2", uid="p1.2", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
        ],
        (pdb(FOO, allowed=1),),
        None,
        None,
        [[c("node1", "p1.1", "p1.2", pdb_violations=1)]],
        [3],
        id="TestDryRunPreemption/preemption with violation of same pdb",
    ),
    pytest.param(
        FIT,
        ["node1"],
        [pod("p", uid="p", priority=HIGH, requests=VERY_LARGE)],
        [
            pod("p1.1", uid="p1.1", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.2", uid="p1.2", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
        ],
        (pdb(FOO, allowed=1, disrupted=["p2"]),),
        None,
        None,
        [[c("node1", "p1.1", "p1.2", pdb_violations=1)]],
        [3],
        id="TestDryRunPreemption/preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim doesn't belong to DisruptedPods",
    ),
    pytest.param(
        FIT,
        ["node1"],
        [pod("p", uid="p", priority=HIGH, requests=VERY_LARGE)],
        [
            pod("p1.1", uid="p1.1", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.2", uid="p1.2", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
        ],
        (pdb(FOO, allowed=1, disrupted=["p1.2"]),),
        None,
        None,
        [[c("node1", "p1.1", "p1.2", pdb_violations=0)]],
        [3],
        id="TestDryRunPreemption/preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim belongs to DisruptedPods",
    ),
    pytest.param(
        FIT,
        ["node1"],
        [pod("p", uid="p", priority=HIGH, requests=VERY_LARGE)],
        [
            pod("p1.1", uid="p1.1", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.2", uid="p1.2", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
            pod("p1.3", uid="p1.3", node_name="node1", priority=MID, requests=MEDIUM, labels=FOO),
        ],
        (pdb(FOO, allowed=1, disrupted=["p1.3"]),),
        None,
        None,
        [[c("node1", "p1.1", "p1.2", "p1.3", pdb_violations=1)]],
        [4],
        id="TestDryRunPreemption/preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim which belongs to DisruptedPods is treated as 'nonViolating'",
    ),
    pytest.param(
        FIT,
        [f"node{i}" for i in range(1, 6)],
        [pod("p", uid="p", priority=HIGH, requests=LARGE)],
        [pod(f"p{i}", uid=f"p{i}", node_name=f"node{i}", priority=MID, requests=LARGE) for i in range(1, 6)],
        (),
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        None,
        # cycle=0 => offset=4 => node5 (yes), node1 (yes)
        [[c("node1", "p1"), c("node5", "p5")]],
        [4],
        id="TestDryRunPreemption/all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        FIT,
        [f"node{i}" for i in range(1, 6)],
        [pod("p", uid="p", priority=HIGH, requests=LARGE)],
        [
            pod("p1", uid="p1", node_name="node1", priority=MID, requests=LARGE),
            pod("p2", uid="p2", node_name="node2", priority=VERY_HIGH, requests=LARGE),
            pod("p3", uid="p3", node_name="node3", priority=MID, requests=LARGE),
            pod("p4", uid="p4", node_name="node4", priority=MID, requests=LARGE),
            pod("p5", uid="p5", node_name="node5", priority=VERY_HIGH, requests=LARGE),
        ],
        (),
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        None,
        # cycle=0 => offset=4 => node5 (no), node1 (yes), node2 (no), node3 (yes)
        [[c("node1", "p1"), c("node3", "p3")]],
        [4],
        id="TestDryRunPreemption/some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
    ),
    pytest.param(
        FIT,
        [f"node{i}" for i in range(1, 6)],
        [pod(f"tp{i}", uid=f"tp{i}", priority=HIGH, requests=LARGE) for i in (1, 2, 3)],
        [pod(f"p{i}", uid=f"p{i}", node_name=f"node{i}", priority=MID, requests=LARGE) for i in range(1, 6)],
        (),
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        None,
        # offsets 4, 1, 3 => (node5, node1), (node2, node3), (node4, node5)
        [
            [c("node1", "p1"), c("node5", "p5")],
            [c("node2", "p2"), c("node3", "p3")],
            [c("node4", "p4"), c("node5", "p5")],
        ],
        [4, 4, 4],
        id="TestDryRunPreemption/preemption offset across multiple scheduling cycles and wrap around",
    ),
    pytest.param(
        FIT,
        [f"node{i}" for i in range(1, 6)],
        [pod("p", uid="p", priority=HIGH, requests=LARGE)],
        [
            pod("p1", uid="p1", node_name="node1", priority=MID, requests=LARGE, labels=FOO),
            pod("p2", uid="p2", node_name="node2", priority=MID, requests=LARGE, labels=FOO),
            pod("p3", uid="p3", node_name="node3", priority=MID, requests=LARGE),
            pod("p4", uid="p4", node_name="node4", priority=MID, requests=LARGE),
            pod("p5", uid="p5", node_name="node5", priority=MID, requests=LARGE, labels=FOO),
        ],
        (pdb(FOO, allowed=0),),
        {"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
        None,
        # offset=4 => node5 (yes, pdb), node1 (yes, pdb), node2 (no: list full, pdb), node3 (yes)
        [[c("node1", "p1", pdb_violations=1), c("node3", "p3"), c("node5", "p5", pdb_violations=1)]],
        [8],
        id="TestDryRunPreemption/preemption looks past numCandidates until a non-PDB violating node is found",
    ),
]


@pytest.mark.parametrize(
    ("plugins", "node_names", "test_pods", "init_pods", "pdbs", "args", "fake_code", "expected", "filter_calls"),
    CASES,
)
def test_dry_run_preemption(
    plugins: tuple[type, ...],
    node_names: list[str],
    test_pods: list[dict[str, Any]],
    init_pods: list[dict[str, Any]],
    pdbs: tuple[dict[str, Any], ...],
    args: dict[str, Any] | None,
    fake_code: Code | None,
    expected: list[list[tuple[str, list[str], int]]],
    filter_calls: list[int],
) -> None:
    """Upstream's table, with upstream's Filter calls where NodeResourcesFit cannot settle a
    node or a victim without them (:class:`UpstreamFit`); with the shortcut, the same
    candidates from at most as many calls."""
    upstream = tuple(UpstreamFit if p is NodeResourcesFit else p for p in plugins)
    case = (node_names, test_pods, init_pods, pdbs, args, fake_code, expected)
    assert _dry_run_table(upstream, *case) == filter_calls
    fewer = _dry_run_table(plugins, *case)
    assert all(ours <= theirs for ours, theirs in zip(fewer, filter_calls, strict=True))


def _dry_run_table(plugins: tuple[type, ...], *case: Any) -> list[int]:
    """The case's cycles (the table's row, but for its plugins and Filter calls): the
    candidates checked, the Filter calls of each returned."""
    node_names, test_pods, init_pods, pdbs, args, fake_code, expected = case
    nodes = [make_node().name(n).capacity_only(VERY_LARGE, pods="32").obj() for n in node_names]
    env = make_env(nodes, init_pods, plugins=plugins, pdbs=pdbs, args=args)
    FakeFilter.codes = {n: fake_code for n in node_names} if fake_code is not None else {}
    FakeFilter.calls = 0
    cycle_offsets = offsets(4, 1, 3)  # upstream getOffsetRand with rand.NewSource(4), 5 nodes
    env.plugin.offset_rand = lambda n: next(cycle_offsets) if n == 5 else 0
    node_infos = env.sorted_nodes()
    budgets_ = budgets(pdbs)
    calls: list[int] = []
    for cycle, raw in enumerate(test_pods):
        pod = PodInfo(raw)
        state = env.pre_filtered_state(pod)
        before = FakeFilter.calls
        offset, num = env.plugin.get_offset_and_num_candidates(len(node_infos))
        run = env.plugin.evaluator.dry_run_preemption(state, pod, node_infos, budgets_, offset, num, 0)
        got = sorted(
            (cand.name, sorted(v.name for v in cand.victims), cand.num_pdb_violations) for cand in run.candidates
        )
        assert got == expected[cycle], f"cycle {cycle}"
        calls.append(FakeFilter.calls - before)
    # The dry run works on clones: the snapshot keeps every pod.
    assert sum(len(n.pods) for n in env.snapshot.list()) == len(init_pods)
    return calls


def test_candidates_without_pdb_violation_come_first() -> None:
    """DryRunPreemption returns non-violating candidates before violating ones."""
    nodes = [make_node().name(n).capacity_only(VERY_LARGE, pods="32").obj() for n in ("node1", "node2")]
    pods = [
        pod("p1", uid="p1", node_name="node1", priority=MID, requests=LARGE, labels=FOO),
        pod("p2", uid="p2", node_name="node2", priority=MID, requests=LARGE),
    ]
    env = make_env(nodes, pods, pdbs=[pdb(FOO)])
    preemptor = pod_info("p", uid="p", priority=HIGH, requests=LARGE)
    state = env.pre_filtered_state(preemptor)
    run = env.plugin.evaluator.dry_run_preemption(state, preemptor, env.sorted_nodes(), budgets([pdb(FOO)]), 0, 2, 0)
    assert [(cand.name, cand.num_pdb_violations) for cand in run.candidates] == [("node2", 0), ("node1", 1)]


@pytest.mark.parametrize(
    ("pods", "pdbs", "want_victims", "want_violations"),
    [
        pytest.param(
            [
                pod("low", uid="low", node_name="n", priority=LOW, requests=SMALL, status={"startTime": epoch(1)}),
                pod(
                    "mid-old",
                    uid="mid-old",
                    node_name="n",
                    priority=MID,
                    requests=MEDIUM,
                    status={"startTime": epoch(1)},
                ),
                pod(
                    "mid-new",
                    uid="mid-new",
                    node_name="n",
                    priority=MID,
                    requests=MEDIUM,
                    status={"startTime": epoch(2)},
                ),
            ],
            (),
            ["mid-new", "low"],
            0,
            id="the most important pod is reprieved first; victims listed most important first",
        ),
        pytest.param(
            [
                pod("guarded", uid="guarded", node_name="n", priority=LOW, requests=MEDIUM, labels=FOO),
                pod("free", uid="free", node_name="n", priority=MID, requests=MEDIUM),
            ],
            (pdb(FOO),),
            ["free"],
            0,
            id="PDB-violating victims are reprieved first",
        ),
        pytest.param(
            [
                pod("guarded", uid="guarded", node_name="n", priority=LOW, requests=LARGE, labels=FOO),
                pod("free", uid="free", node_name="n", priority=MID, requests=LARGE),
            ],
            (pdb(FOO),),
            ["free", "guarded"],
            1,
            id="victims re-sorted by importance across both groups",
        ),
    ],
)
def test_select_victims_on_node(
    pods: list[dict[str, Any]], pdbs: tuple[dict[str, Any], ...], want_victims: list[str], want_violations: int
) -> None:
    """Upstream SelectVictimsOnNode: node of 500m CPU, preemptor of 300m."""
    env = make_env([make_node().name("n").capacity_only(VERY_LARGE, pods="32").obj()], pods, pdbs=pdbs)
    pod = pod_info("p", uid="p", priority=HIGH, requests=LARGE)
    state = env.pre_filtered_state(pod)
    node = env.snapshot.get("n")
    assert node is not None
    clone = node.clone()
    victims, violations, status = env.plugin.select_victims_on_node(state.clone(), pod, clone, budgets(pdbs), 0)
    assert status is None
    assert [v.name for v in victims] == want_victims
    assert violations == want_violations
    # Victims are off the clone, the others back on it; the snapshot's node is untouched.
    assert sorted(p.name for p in clone.pods) == sorted(set(p["metadata"]["name"] for p in pods) - set(want_victims))
    assert len(node.pods) == len(pods)


def _crowded(name: str) -> list[dict[str, Any]]:
    """A node's pods: a more important one that leaves no room for a LARGE pod beside it
    whatever else goes, and a less important one."""
    return [
        pod(f"{name}-top", uid=f"{name}-top", node_name=name, priority=VERY_HIGH, requests=LARGE),
        pod(f"{name}-low", uid=f"{name}-low", node_name=name, priority=MID, requests=SMALL),
    ]


def _dry_run(
    node_names: list[str], pods: list[dict[str, Any]], offset: int, fit: type = NodeResourcesFit
) -> tuple[Any, int]:
    nodes = [make_node().name(n).capacity_only(VERY_LARGE, pods="32").obj() for n in node_names]
    env = make_env(nodes, pods, plugins=(FakeFilter, fit))
    FakeFilter.codes, FakeFilter.calls = {}, 0
    preemptor = pod_info("p", uid="p", priority=HIGH, requests=LARGE)
    state = env.pre_filtered_state(preemptor)
    run = env.plugin.evaluator.dry_run_preemption(state, preemptor, env.sorted_nodes(), [], offset, 3, 0)
    return run, FakeFilter.calls


@pytest.mark.parametrize(("fit", "filter_calls"), [(NodeResourcesFit, 1), (UpstreamFit, 4)])
def test_what_resources_settle_runs_no_filters(fit: type, filter_calls: int) -> None:
    """Where NodeResourcesFit rejects the pod even with every lower-priority pod gone (node1,
    node3), the node is no candidate, and where it rejects the pod with a victim put back
    (node2), the pod is a victim: the dry run tells both without running the filters. The
    same candidates; one Filter call (node2 without its pod) where upstream makes four."""
    pods = [
        *_crowded("node1"),
        pod("node2-low", uid="node2-low", node_name="node2", priority=MID, requests=LARGE),
        *_crowded("node3"),
    ]
    run, calls = _dry_run(["node1", "node2", "node3"], pods, 0, fit)
    assert [(cand.name, [v.name for v in cand.victims]) for cand in run.candidates] == [("node2", ["node2-low"])]
    assert calls == filter_calls


@pytest.mark.parametrize(("offset", "order"), [(0, ["node1", "node3"]), (1, ["node3", "node1"])])
def test_without_candidates_every_node_passed_over_has_its_status_in_order(offset: int, order: list[str]) -> None:
    """No node is a candidate: the statuses (the pod's message) and errors are what the full
    run gives, each node's in the order visited."""
    run, calls = _dry_run(["node1", "node3"], [*_crowded("node1"), *_crowded("node3")], offset)
    assert run.candidates == []
    assert list(run.statuses) == order
    assert {name: (s.code, s.reasons) for name, s in run.statuses.items()} == {
        name: (Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory")) for name in order
    }
    assert calls == 2
