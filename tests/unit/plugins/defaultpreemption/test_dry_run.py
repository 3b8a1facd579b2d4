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
    epoch,
    make_env,
    mknode,
    mkpod,
    offsets,
    pdb,
)

FOO = {"app": "foo"}
FIT = (FakeFilter, NodeResourcesFit)


def c(node: str, *victims: str, pdb_violations: int = 0) -> tuple[str, list[str], int]:
    return node, sorted(victims), pdb_violations


CASES = [
    pytest.param(
        (FakeFilter, FalseFilter),
        ["node1", "node2"],
        [mkpod("p", priority=HIGH)],
        [mkpod("p1", node="node1", priority=MID), mkpod("p2", node="node2", priority=MID)],
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
        [mkpod("p", priority=HIGH)],
        [mkpod("p1", node="node1", priority=MID), mkpod("p2", node="node2", priority=MID)],
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
        [mkpod("node1", priority=HIGH)],
        [mkpod("p1", node="node1", priority=MID), mkpod("p2", node="node2", priority=MID)],
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
        [mkpod("p", priority=HIGH, req=LARGE)],
        [mkpod("p1", node="node1", priority=MID, req=LARGE), mkpod("p2", node="node2", priority=MID, req=LARGE)],
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
        [mkpod("p", priority=LOW, req=LARGE)],
        [mkpod("p1", node="node1", priority=MID, req=LARGE), mkpod("p2", node="node2", priority=MID, req=LARGE)],
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
        [mkpod("p", priority=HIGH, req=LARGE)],
        [
            mkpod("p1.1", node="node1", priority=LOW, req=SMALL),
            mkpod("p1.2", node="node1", priority=MID, req=LARGE),
            mkpod("p2", node="node2", priority=MID, req=LARGE),
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
        [mkpod("p", priority=HIGH, req=LARGE)],
        [
            mkpod("p1.1", node="node1", priority=MID, req=SMALL),
            mkpod("p1.2", node="node1", priority=LOW, req=SMALL),
            mkpod("p1.3", node="node1", priority=MID, req=MEDIUM),
            mkpod("p1.4", node="node1", priority=HIGH, req=SMALL),
            mkpod("p2", node="node2", priority=HIGH, req=LARGE),
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
        [mkpod("p", priority=HIGH, req=LARGE)],
        [
            mkpod("p1.1", node="node1", priority=LOW, req=SMALL, start=epoch(5)),
            mkpod("p1.2", node="node1", priority=LOW, req=SMALL, start=epoch(4)),
            mkpod("p1.3", node="node1", priority=MID, req=MEDIUM, start=epoch(3)),
            mkpod("p1.4", node="node1", priority=HIGH, req=SMALL, start=epoch(2)),
            mkpod("p2", node="node2", priority=HIGH, req=LARGE, start=epoch(1)),
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
        [mkpod("p", priority=HIGH, req=LARGE)],
        [mkpod("p1", node="node1", priority=MID, req=LARGE), mkpod("p2", node="node2", priority=MID, req=LARGE)],
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
        [mkpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            mkpod("p1.1", node="node1", priority=MID, req=MEDIUM, labels=FOO),
            mkpod("p1.2", node="node1", priority=MID, req=MEDIUM, labels=FOO),
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
        [mkpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            mkpod("p1.1", node="node1", priority=MID, req=MEDIUM, labels=FOO),
            mkpod("p1.2", node="node1", priority=MID, req=MEDIUM, labels=FOO),
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
        [mkpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            mkpod("p1.1", node="node1", priority=MID, req=MEDIUM, labels=FOO),
            mkpod("p1.2", node="node1", priority=MID, req=MEDIUM, labels=FOO),
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
        [mkpod("p", priority=HIGH, req=VERY_LARGE)],
        [
            mkpod("p1.1", node="node1", priority=MID, req=MEDIUM, labels=FOO),
            mkpod("p1.2", node="node1", priority=MID, req=MEDIUM, labels=FOO),
            mkpod("p1.3", node="node1", priority=MID, req=MEDIUM, labels=FOO),
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
        [mkpod("p", priority=HIGH, req=LARGE)],
        [mkpod(f"p{i}", node=f"node{i}", priority=MID, req=LARGE) for i in range(1, 6)],
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
        [mkpod("p", priority=HIGH, req=LARGE)],
        [
            mkpod("p1", node="node1", priority=MID, req=LARGE),
            mkpod("p2", node="node2", priority=VERY_HIGH, req=LARGE),
            mkpod("p3", node="node3", priority=MID, req=LARGE),
            mkpod("p4", node="node4", priority=MID, req=LARGE),
            mkpod("p5", node="node5", priority=VERY_HIGH, req=LARGE),
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
        [mkpod(f"tp{i}", priority=HIGH, req=LARGE) for i in (1, 2, 3)],
        [mkpod(f"p{i}", node=f"node{i}", priority=MID, req=LARGE) for i in range(1, 6)],
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
        [mkpod("p", priority=HIGH, req=LARGE)],
        [
            mkpod("p1", node="node1", priority=MID, req=LARGE, labels=FOO),
            mkpod("p2", node="node2", priority=MID, req=LARGE, labels=FOO),
            mkpod("p3", node="node3", priority=MID, req=LARGE),
            mkpod("p4", node="node4", priority=MID, req=LARGE),
            mkpod("p5", node="node5", priority=MID, req=LARGE, labels=FOO),
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
    nodes = [mknode(n, VERY_LARGE) for n in node_names]
    env = make_env(nodes, init_pods, plugins=plugins, pdbs=pdbs, args=args)
    FakeFilter.codes = {n: fake_code for n in node_names} if fake_code is not None else {}
    FakeFilter.calls = 0
    cycle_offsets = offsets(4, 1, 3)  # upstream getOffsetRand with rand.NewSource(4), 5 nodes
    env.plugin.offset_rand = lambda n: next(cycle_offsets) if n == 5 else 0
    node_infos = env.sorted_nodes()
    budgets_ = budgets(pdbs)
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
        assert FakeFilter.calls - before == filter_calls[cycle], f"cycle {cycle}"
    # The dry run works on clones: the snapshot keeps every pod.
    assert sum(len(n.pods) for n in env.snapshot.list()) == len(init_pods)


def test_candidates_without_pdb_violation_come_first() -> None:
    """DryRunPreemption returns non-violating candidates before violating ones."""
    nodes = [mknode(n, VERY_LARGE) for n in ("node1", "node2")]
    pods = [
        mkpod("p1", node="node1", priority=MID, req=LARGE, labels=FOO),
        mkpod("p2", node="node2", priority=MID, req=LARGE),
    ]
    env = make_env(nodes, pods, pdbs=[pdb(FOO)])
    pod = PodInfo(mkpod("p", priority=HIGH, req=LARGE))
    state = env.pre_filtered_state(pod)
    run = env.plugin.evaluator.dry_run_preemption(state, pod, env.sorted_nodes(), budgets([pdb(FOO)]), 0, 2, 0)
    assert [(cand.name, cand.num_pdb_violations) for cand in run.candidates] == [("node2", 0), ("node1", 1)]


@pytest.mark.parametrize(
    ("pods", "pdbs", "want_victims", "want_violations"),
    [
        pytest.param(
            [
                mkpod("low", node="n", priority=LOW, req=SMALL, start=epoch(1)),
                mkpod("mid-old", node="n", priority=MID, req=MEDIUM, start=epoch(1)),
                mkpod("mid-new", node="n", priority=MID, req=MEDIUM, start=epoch(2)),
            ],
            (),
            ["mid-new", "low"],
            0,
            id="the most important pod is reprieved first; victims listed most important first",
        ),
        pytest.param(
            [
                mkpod("guarded", node="n", priority=LOW, req=MEDIUM, labels=FOO),
                mkpod("free", node="n", priority=MID, req=MEDIUM),
            ],
            (pdb(FOO),),
            ["free"],
            0,
            id="PDB-violating victims are reprieved first",
        ),
        pytest.param(
            [
                mkpod("guarded", node="n", priority=LOW, req=LARGE, labels=FOO),
                mkpod("free", node="n", priority=MID, req=LARGE),
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
    env = make_env([mknode("n", VERY_LARGE)], pods, pdbs=pdbs)
    pod = PodInfo(mkpod("p", priority=HIGH, req=LARGE))
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
