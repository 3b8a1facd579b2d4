"""Who may preempt, and whom (upstream default_preemption_test.go TestPodEligibleToPreemptOthers
and calculateNumCandidates, v1.36.3), and the tenant rule of DESIGN.md: a tenant profile
preempts only pods of its own namespace."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import Code, NodeToStatus, PodInfo, PostFilterResult, Status
from scheduler_core.plugins.defaultpreemption.default_preemption import pod_terminating_by_preemption
from tests.unit.plugins.defaultpreemption.harness import HIGH, LOW, ONE_POD, make_env, run
from tests.wrappers import make_node, pod, pod_info

PREEMPTED = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
TAINT_MISMATCH = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint(s)")


@pytest.mark.parametrize(
    ("pod", "pods", "nodes", "nominated_status", "expected"),
    [
        pytest.param(
            pod("p_with_nominated_node", uid="p_with_nominated_node", priority=HIGH, nominated_node_name="node1"),
            [pod("p1", uid="p1", priority=LOW, node_name="node1", terminating=True)],
            ["node1"],
            TAINT_MISMATCH,
            True,
            id="TestPodEligibleToPreemptOthers/Pod with nominated node",
        ),
        pytest.param(
            pod("p_without_nominated_node", uid="p_without_nominated_node", priority=HIGH),
            [],
            [],
            None,
            True,
            id="TestPodEligibleToPreemptOthers/Pod without nominated node",
        ),
        pytest.param(
            pod(
                "p_with_preempt_never_policy",
                uid="p_with_preempt_never_policy",
                priority=HIGH,
                preemptionPolicy="Never",
            ),
            [],
            [],
            None,
            False,
            id="TestPodEligibleToPreemptOthers/Pod with 'PreemptNever' preemption policy",
        ),
        pytest.param(
            pod("p_with_nominated_node", uid="p_with_nominated_node", priority=HIGH, nominated_node_name="node1"),
            [pod("p1", uid="p1", priority=LOW, node_name="node1", terminating=True, status={"conditions": PREEMPTED})],
            ["node1"],
            None,
            False,
            id="TestPodEligibleToPreemptOthers/preemption victim pod terminating,"
            " as indicated by the dedicated DisruptionTarget condition",
        ),
        pytest.param(
            pod("p_with_nominated_node", uid="p_with_nominated_node", priority=HIGH, nominated_node_name="node1"),
            [pod("p1", uid="p1", priority=LOW, node_name="node1", terminating=True)],
            ["node1"],
            None,
            True,
            id="TestPodEligibleToPreemptOthers/non-victim Pods terminating",
        ),
    ],
)
def test_pod_eligible_to_preempt_others(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[str],
    nominated_status: Status | None,
    expected: bool,
) -> None:
    env = make_env([make_node().name(n).capacity_only(pods="32").obj() for n in nodes], pods)
    eligible, _ = env.plugin.pod_eligible_to_preempt_others(PodInfo(pod), nominated_status)
    assert eligible is expected


@pytest.mark.parametrize(
    ("conditions", "terminating", "expected"),
    [
        pytest.param(PREEMPTED, True, True, id="deleted by the scheduler's preemption"),
        pytest.param(PREEMPTED, False, False, id="condition but not being deleted"),
        pytest.param([{**PREEMPTED[0], "status": "False"}], True, False, id="condition False"),
        pytest.param([{**PREEMPTED[0], "reason": "EvictionByEvictionAPI"}], True, False, id="evicted otherwise"),
    ],
)
def test_pod_terminating_by_preemption(conditions: list[dict[str, str]], terminating: bool, expected: bool) -> None:
    pod = pod_info("v", uid="v", node_name="n", terminating=terminating, status={"conditions": conditions})
    assert pod_terminating_by_preemption(pod) is expected


@pytest.mark.parametrize(
    ("args", "num_nodes", "expected"),
    [
        pytest.param({}, 50, 50, id="absolute floor above the node count: all nodes"),
        pytest.param({}, 5000, 500, id="10 percent of many nodes"),
        pytest.param({}, 1500, 150, id="10 percent above the floor"),
        pytest.param({}, 900, 100, id="the floor of 100"),
        pytest.param({"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1}, 5, 2, id="40 percent of 5"),
        pytest.param({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}, 7, 3, id="absolute only"),
    ],
)
def test_calculate_num_candidates(args: dict[str, Any], num_nodes: int, expected: int) -> None:
    env = make_env([make_node().name("n").capacity_only(pods="32").obj()], args=args)
    assert env.plugin.calculate_num_candidates(num_nodes) == expected


@pytest.mark.parametrize(
    ("tenant", "want_node", "want_victims"),
    [
        pytest.param(None, "node1", ["other"], id="cluster-wide profile preempts in any namespace"),
        pytest.param("team-a", "node2", ["mine"], id="tenant profile preempts only its own namespace"),
    ],
)
def test_tenant_victims(tenant: str | None, want_node: str, want_victims: list[str]) -> None:
    nodes = [
        make_node().name("node1").capacity_only(ONE_POD, pods="32").obj(),
        make_node().name("node2").capacity_only(ONE_POD, pods="32").obj(),
    ]
    pods = [
        pod("other", "team-b", uid="other", node_name="node1", priority=LOW),
        pod("mine", "team-a", uid="mine", node_name="node2", priority=LOW + 10),
    ]
    env = make_env(nodes, pods, tenant=tenant)
    preemptor = pod_info("p", "team-a", uid="p", priority=HIGH)
    statuses = {"node1": Status(Code.UNSCHEDULABLE), "node2": Status(Code.UNSCHEDULABLE)}

    async def attempt() -> tuple[PostFilterResult | None, Status | None]:
        answer = env.plugin.post_filter(env.pre_filtered_state(preemptor), preemptor, NodeToStatus(statuses))
        await env.plugin.executor.wait()
        return answer

    assert run(attempt()) == (PostFilterResult(want_node), None)
    assert env.api.deleted_names == want_victims


def test_tenant_profile_without_own_victims() -> None:
    env = make_env(
        [make_node().name("node1").capacity_only(ONE_POD, pods="32").obj()],
        [pod("other", "team-b", uid="other", node_name="node1", priority=LOW)],
        tenant="team-a",
    )
    preemptor = pod_info("p", "team-a", uid="p", priority=HIGH)

    async def attempt() -> tuple[PostFilterResult | None, Status | None]:
        return env.plugin.post_filter(
            env.pre_filtered_state(preemptor), preemptor, NodeToStatus({"node1": Status(Code.UNSCHEDULABLE)})
        )

    result, status = run(attempt())
    assert result == PostFilterResult("")
    assert status == Status(
        Code.UNSCHEDULABLE, "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )


@pytest.mark.parametrize(
    ("victim", "expected"),
    [
        pytest.param(
            pod("v", uid="v", priority=LOW, node_name="node1"), False, id="asked to go, the view shows it running"
        ),
        # Once the view shows it terminating its own fields speak: this one lacks the condition.
        pytest.param(
            pod("v", uid="v", priority=LOW, node_name="node1", terminating=True),
            True,
            id="the view shows it terminating",
        ),
        pytest.param(pod("v", uid="v", priority=HIGH, node_name="node1"), True, id="not of lower priority"),
    ],
)
def test_a_victim_asked_to_go_counts_as_terminating_by_preemption(victim: dict[str, Any], expected: bool) -> None:
    """Its deletion asked for by the executor, before the watch brings it (executor.Deleting)."""
    env = make_env([make_node().name("node1").capacity_only(pods="32").obj()], [victim])
    env.plugin.executor.deleting.add(PodInfo(victim))
    pod = pod_info("p", uid="p", priority=HIGH, nominated_node_name="node1")
    assert env.plugin.pod_eligible_to_preempt_others(pod, None) == (
        (True, "") if expected else (False, "not eligible due to a terminating pod on the nominated node.")
    )
