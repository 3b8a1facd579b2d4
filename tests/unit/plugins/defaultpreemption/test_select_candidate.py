"""Choosing the node to preempt on (upstream default_preemption_test.go TestSelectBestCandidate,
and the criteria of preemption.go pickOneNodeForPreemption one by one), v1.36.3."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import PodInfo
from scheduler_core.plugins.defaultpreemption.candidates import (
    Candidate,
    earliest_start_time_of_highest_priority,
    pick_one_node_for_preemption,
    pod_start_time,
)
from tests.unit.plugins.defaultpreemption.harness import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    epoch,
    make_env,
)
from tests.wrappers import make_node, pod, pod_info

E = epoch(0)


def p(name: str, node: str, priority: int, req: dict[str, str], start: str = E) -> dict[str, Any]:
    return pod(name, uid=name, node_name=node, priority=priority, requests=req, status={"startTime": start})


SELECT_BEST_CASES = [
    pytest.param(
        ["node1", "node2"],
        pod("p", uid="p", priority=HIGH, requests=LARGE),
        [p("p1", "node1", MID, LARGE), p("p2", "node2", MID, LARGE)],
        {"node1", "node2"},
        id="TestSelectBestCandidate/a pod that fits on both nodes when lower priority pods are preempted",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", uid="p", priority=HIGH, requests=VERY_LARGE),
        [
            p("p1.1", "node1", MID, MEDIUM),
            p("p1.2", "node1", MID, LARGE),
            p("p2.1", "node2", MID, MEDIUM),
            p("p2.2", "node2", LOW, MEDIUM),
            p("p3.1", "node3", LOW, MEDIUM),
            p("p3.2", "node3", LOW, MEDIUM),
        ],
        {"node3"},
        id="TestSelectBestCandidate/node with min highest priority pod is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", uid="p", priority=HIGH, requests=VERY_LARGE),
        [
            p("p1.1", "node1", MID, MEDIUM),
            p("p1.2", "node1", MID, LARGE),
            p("p2.1", "node2", MID, LARGE),
            p("p2.2", "node2", LOW, MEDIUM),
            p("p3.1", "node3", MID, MEDIUM),
            p("p3.2", "node3", MID, MEDIUM),
        ],
        {"node2"},
        id="TestSelectBestCandidate/when highest priorities are the same, minimum sum of priorities is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", uid="p", priority=HIGH, requests=VERY_LARGE),
        [
            p("p1.1", "node1", MID, SMALL),
            p("p1.2", "node1", NEG, SMALL),
            p("p1.3", "node1", MID, SMALL),
            p("p1.4", "node1", NEG, SMALL),
            p("p2.1", "node2", MID, LARGE),
            p("p2.2", "node2", NEG, MEDIUM),
            p("p3.1", "node3", MID, MEDIUM),
            p("p3.2", "node3", NEG, SMALL),
            p("p3.3", "node3", LOW, SMALL),
        ],
        {"node2"},
        id="TestSelectBestCandidate/when highest priority and sum are the same, minimum number of pods is picked",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", uid="p", priority=HIGH, requests=VERY_LARGE),
        [
            p("p1.1", "node1", MID, SMALL),
            p("p1.2", "node1", NEG, SMALL),
            p("p1.3", "node1", NEG, SMALL),
            p("p2.1", "node2", MID, LARGE),
            p("p2.2", "node2", NEG, MEDIUM),
            p("p3.1", "node3", MID, MEDIUM),
            p("p3.2", "node3", NEG, SMALL),
            p("p3.3", "node3", LOW, SMALL),
        ],
        {"node2"},
        id="TestSelectBestCandidate/sum of adjusted priorities is considered",
    ),
    pytest.param(
        ["node1", "node2", "node3", "node4"],
        pod("p", uid="p", priority=VERY_HIGH, requests=VERY_LARGE),
        [
            p("p1.1", "node1", MID, SMALL),
            p("p1.2", "node1", LOW, SMALL),
            p("p1.3", "node1", LOW, SMALL),
            p("p2.1", "node2", HIGH, LARGE),
            p("p3.1", "node3", MID, MEDIUM),
            p("p3.2", "node3", LOW, SMALL),
            p("p3.3", "node3", LOW, SMALL),
            p("p3.4", "node3", LOW, MEDIUM),
            p("p4.1", "node4", MID, MEDIUM),
            p("p4.2", "node4", MID, SMALL),
            p("p4.3", "node4", MID, SMALL),
            p("p4.4", "node4", NEG, SMALL),
        ],
        {"node1"},
        id="TestSelectBestCandidate/non-overlapping lowest high priority, sum priorities, and number of pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", uid="p", priority=HIGH, requests=VERY_LARGE),
        [
            p("p1.1", "node1", MID, MEDIUM, epoch(2)),
            p("p1.2", "node1", MID, MEDIUM, epoch(2)),
            p("p2.1", "node2", MID, MEDIUM, epoch(3)),
            p("p2.2", "node2", MID, MEDIUM, epoch(3)),
            p("p3.1", "node3", MID, MEDIUM, epoch(1)),
            p("p3.2", "node3", MID, MEDIUM, epoch(1)),
        ],
        {"node2"},
        id="TestSelectBestCandidate/same priority, same number of victims, different start time for each node's pod",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", uid="p", priority=HIGH, requests=VERY_LARGE),
        [
            p("p1.1", "node1", MID, MEDIUM, epoch(4)),
            p("p1.2", "node1", MID, MEDIUM, epoch(2)),
            p("p2.1", "node2", MID, MEDIUM, epoch(5)),
            p("p2.2", "node2", MID, MEDIUM, epoch(1)),
            p("p3.1", "node3", MID, MEDIUM, epoch(3)),
            p("p3.2", "node3", MID, MEDIUM, epoch(6)),
        ],
        {"node3"},
        id="TestSelectBestCandidate/same priority, same number of victims, different start time for all pods",
    ),
    pytest.param(
        ["node1", "node2", "node3"],
        pod("p", uid="p", priority=HIGH, requests=VERY_LARGE),
        [
            p("p1.1", "node1", LOW, MEDIUM, epoch(4)),
            p("p1.2", "node1", MID, MEDIUM, epoch(2)),
            p("p2.1", "node2", MID, MEDIUM, epoch(6)),
            p("p2.2", "node2", LOW, MEDIUM, epoch(1)),
            p("p3.1", "node3", LOW, MEDIUM, epoch(3)),
            p("p3.2", "node3", MID, MEDIUM, epoch(5)),
        ],
        {"node2"},
        id="TestSelectBestCandidate/different priority, same number of victims, different start time for all pods",
    ),
]


@pytest.mark.parametrize(("node_names", "pod", "pods", "expected"), SELECT_BEST_CASES)
def test_select_best_candidate(
    node_names: list[str], pod: dict[str, Any], pods: list[dict[str, Any]], expected: set[str]
) -> None:
    env = make_env([make_node().name(n).capacity_only(VERY_LARGE, pods="32").obj() for n in node_names], pods)
    env.plugin.offset_rand = lambda n: 0
    preemptor = PodInfo(pod)
    state = env.pre_filtered_state(preemptor)
    nodes = env.snapshot.list()
    offset, num = env.plugin.get_offset_and_num_candidates(len(nodes))
    run = env.plugin.evaluator.dry_run_preemption(state, preemptor, nodes, [], offset, num, 10**18)
    best = env.plugin.evaluator.select_candidate(run.candidates, 10**18)
    assert best is not None and best.name in expected


def victims(*spec: tuple[str, int, str | None]) -> list[PodInfo]:
    return [
        pod_info(name, uid=name, node_name="n", priority=prio, status={"startTime": start})
        for name, prio, start in spec
    ]


NOW = 10**18  # "now" in Unix nanoseconds: later than every start time below


@pytest.mark.parametrize(
    ("candidates", "want"),
    [
        pytest.param([], "", id="no candidates"),
        pytest.param(
            [
                Candidate("a", victims(("a1", LOW, None)), 2),
                Candidate("b", victims(("b1", HIGH, None), ("b2", HIGH, None)), 1),
            ],
            "b",
            id="fewest PDB violations first",
        ),
        pytest.param(
            [
                Candidate("a", victims(("a1", MID, None))),
                Candidate("b", victims(("b1", LOW, None), ("b2", LOW, None), ("b3", LOW, None))),
            ],
            "b",
            id="then the lowest highest-priority victim",
        ),
        pytest.param(
            [
                Candidate("a", victims(("a1", MID, None), ("a2", LOW, None))),
                Candidate("b", victims(("b1", MID, None), ("b2", NEG, None))),
            ],
            "b",
            id="then the smallest sum of priorities",
        ),
        pytest.param(
            [
                Candidate("a", victims(("a1", MID, None), ("a2", NEG, None), ("a3", NEG, None))),
                Candidate("b", victims(("b1", MID, None), ("b2", NEG, None))),
            ],
            "b",
            id="sum of priorities shifted by 2^31: fewer negative victims win",
        ),
        pytest.param(
            [
                Candidate("a", victims(("a1", MID, epoch(1)), ("a2", MID, epoch(9)))),
                Candidate("b", victims(("b1", MID, epoch(2)), ("b2", MID, epoch(3)))),
            ],
            "b",
            id="then the latest earliest start of the highest-priority victims",
        ),
        pytest.param(
            [
                Candidate("a", victims(("a1", MID, epoch(1)))),
                Candidate("b", victims(("b1", MID, None))),
            ],
            "b",
            id="a victim without start time counts as started now",
        ),
        pytest.param(
            [
                Candidate("a", victims(("a1", MID, epoch(1)))),
                Candidate("b", victims(("b1", MID, epoch(1)))),
            ],
            "a",
            id="then the first candidate",
        ),
    ],
)
def test_pick_one_node_for_preemption(candidates: list[Candidate], want: str) -> None:
    assert pick_one_node_for_preemption(candidates, NOW) == want


def test_earliest_start_time_of_highest_priority() -> None:
    """Upstream GetEarliestPodStartTime: only the highest-priority victims count."""
    pods = victims(("a", LOW, epoch(1)), ("b", MID, epoch(5)), ("c", MID, epoch(3)), ("d", LOW, epoch(0)))
    assert earliest_start_time_of_highest_priority(pods, NOW) == 3 * 10**9
    assert earliest_start_time_of_highest_priority([], NOW) is None


@pytest.mark.parametrize(
    ("start", "want"),
    [
        pytest.param("1970-01-01T00:00:01Z", 10**9, id="RFC 3339, UTC"),
        pytest.param("1970-01-01T01:00:01+01:00", 10**9, id="with offset"),
        pytest.param("1970-01-01T00:00:01.5Z", 1_500_000_000, id="fractional seconds"),
        pytest.param(None, NOW, id="missing: now"),
        pytest.param("yesterday", NOW, id="unparsable: now"),
    ],
)
def test_pod_start_time(start: str | None, want: int) -> None:
    assert pod_start_time(pod_info("x", uid="x", status={"startTime": start}), NOW) == want
