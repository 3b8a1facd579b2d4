"""PostFilter results and statuses (upstream default_preemption_test.go TestPostFilter and
TestPreempt, v1.36.3; extender and pod-group cases left out: the plugin API has neither)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import Code, NodeToStatus, PodInfo, PostFilterResult, Status
from scheduler_core.plugins.noderesources import NodeResourcesFit
from tests.unit.plugins.defaultpreemption.harness import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NODE_RES,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    ErrorExtensionPlugin,
    make_env,
    pdb,
    run,
)
from tests.wrappers import make_node, pod, pod_info

U = Status(Code.UNSCHEDULABLE)
UU = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)
VIOLATING = {"test.kubernetes.io/is-violating-pdb": "violating"}
NON_VIOLATING = {"test.kubernetes.io/is-violating-pdb": "non-violating"}


POST_FILTER_CASES = [
    pytest.param(
        pod("p", uid="p", priority=HIGH),
        [pod("p1", uid="p1", node_name="node1")],
        [make_node().name("node1").capacity_only(ONE_POD, pods="32").obj()],
        {"node1": U},
        (),
        "node1",
        None,
        id="TestPostFilter/pod with higher priority can be made schedulable",
    ),
    pytest.param(
        pod("p", uid="p"),
        [pod("p1", uid="p1", node_name="node1")],
        [make_node().name("node1").capacity_only(ONE_POD, pods="32").obj()],
        {"node1": U},
        (),
        "",
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        id="TestPostFilter/pod with tied priority is still unschedulable",
    ),
    pytest.param(
        pod("p", uid="p", priority=HIGH),
        [pod("p1", uid="p1", node_name="node1")],
        [make_node().name("node1").capacity_only(ONE_POD, pods="32").obj()],
        {"node1": UU},
        (),
        "",
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="TestPostFilter/preemption should respect filteredNodesStatuses",
    ),
    pytest.param(
        pod("p", uid="p", priority=HIGH),
        [pod("p1", uid="p1", node_name="node1")],
        [make_node().name("node1").capacity_only(ONE_POD, pods="32").obj()],
        {},
        (),
        "",
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
        id="TestPostFilter/preemption should respect absent NodeToStatusReader entry meaning "
        "UnschedulableAndUnresolvable",
    ),
    pytest.param(
        pod("p", uid="p", priority=MID),
        [pod("p1", uid="p1", node_name="node1", priority=HIGH), pod("p2", uid="p2", node_name="node2", priority=LOW)],
        [
            make_node().name("node1").capacity_only(ONE_POD, pods="32").obj(),
            make_node().name("node2").capacity_only(ONE_POD, pods="32").obj(),
        ],
        {"node1": U, "node2": U},
        (),
        "node2",
        None,
        id="TestPostFilter/pod can be made schedulable on one node",
    ),
    pytest.param(
        pod("p", uid="p", priority=VERY_HIGH),
        [
            pod("p1", uid="p1", node_name="node1", priority=HIGH, labels=NON_VIOLATING),
            pod("p2", uid="p2", node_name="node1", priority=LOW, labels=VIOLATING),
            pod("p3", uid="p3", node_name="node2", priority=MID, labels=VIOLATING),
        ],
        [
            make_node().name("node1").capacity_only(ONE_POD, pods="32").obj(),
            make_node().name("node2").capacity_only(ONE_POD, pods="32").obj(),
        ],
        {"node1": U, "node2": U},
        (pdb(VIOLATING, name="violating-pdb"), pdb(NON_VIOLATING, allowed=2**31 - 1, name="non-violating-pdb")),
        "node2",
        None,
        id="TestPostFilter/pod can be made schedulable on minHighestPriority node",
    ),
    pytest.param(
        pod("p", uid="p", priority=HIGH, requests=LARGE),
        [pod("p1", uid="p1", node_name="node1"), pod("p2", uid="p2", node_name="node2")],
        [
            make_node().name("node1").capacity_only(NODE_RES, pods="32").obj(),
            make_node().name("node2").capacity_only(NODE_RES, pods="32").obj(),
        ],
        {"node1": U, "node2": U},
        (),
        "",
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
        id="TestPostFilter/no candidate nodes found, no enough resource after removing low priority pods",
    ),
    pytest.param(
        pod("p", uid="p", priority=HIGH, requests=LARGE),
        [
            pod("p1", uid="p1", node_name="node1", priority=HIGH),
            pod("p2", uid="p2", node_name="node2"),
            pod("p3", uid="p3", node_name="node3", priority=HIGH),
        ],
        [
            make_node().name("node1").capacity_only(ONE_POD, pods="32").obj(),
            make_node().name("node2").capacity_only(NODE_RES, pods="32").obj(),
            make_node().name("node3").capacity_only(ONE_POD, pods="32").obj(),
        ],
        {"node1": U, "node2": U, "node3": U},
        (),
        "",
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod.",
        id="TestPostFilter/no candidate nodes found with mixed reasons, no lower priority pod and no enough "
        "CPU resource",
    ),
    pytest.param(
        pod("p", uid="p", priority=HIGH, requests=LARGE),
        [pod("p1", uid="p1", node_name="node1"), pod("p2", uid="p2", node_name="node2")],
        [make_node().name(f"node{i}").capacity_only(NODE_RES, pods="32").obj() for i in (1, 2, 3, 4)],
        {"node1": U, "node2": U, "node4": UU},
        (),
        "",
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling.",
        id="TestPostFilter/no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes "
        "and 2 nodes don't have enough CPU resource",
    ),
    pytest.param(
        pod("p", uid="p", priority=HIGH, requests=LARGE),
        [pod("p1", uid="p1", node_name="node1"), pod("p2", uid="p2", node_name="node2", requests=MEDIUM)],
        [
            make_node().name("node1").capacity_only(LARGE, pods="32").labels({"error": "true"}).obj(),
            make_node().name("node2").capacity_only(LARGE, pods="32").obj(),
        ],
        {"node1": U, "node2": U},
        (),
        "node2",
        None,
        id="TestPostFilter/one failed with TestPlugin and the other pass",
    ),
]


@pytest.mark.parametrize(("pod", "pods", "nodes", "statuses", "pdbs", "want_node", "want_message"), POST_FILTER_CASES)
def test_post_filter(
    pod: dict[str, Any],
    pods: list[dict[str, Any]],
    nodes: list[dict[str, Any]],
    statuses: dict[str, Status],
    pdbs: tuple[dict[str, Any], ...],
    want_node: str,
    want_message: str | None,
) -> None:
    env = make_env(nodes, pods, plugins=(NodeResourcesFit, ErrorExtensionPlugin), pdbs=pdbs)
    preemptor = PodInfo(pod)

    async def attempt() -> tuple[PostFilterResult | None, Status | None]:
        answer = env.plugin.post_filter(env.pre_filtered_state(preemptor), preemptor, NodeToStatus(statuses))
        await env.plugin.executor.wait()
        return answer

    result, status = run(attempt())
    assert result == PostFilterResult(want_node)
    if want_message is None:
        assert status is None
        victims = [p.name for p in env.snapshot.get(want_node).pods]  # type: ignore[union-attr]
        assert sorted(env.api.deleted_names) == sorted(victims)
    else:
        assert status == Status(Code.UNSCHEDULABLE, want_message)
        assert env.api.deleted == []


def test_post_filter_error_from_a_pre_filter_extension() -> None:
    """TestPostFilter/only one node but failed with TestPlugin: the RemovePod error aborts
    preemption with an Error status (upstream message: ``preemption: running RemovePod on
    PreFilter plugin "test-plugin": failed to remove pod: p``, the name quoted as Go's ``%q``)."""
    env = make_env(
        [make_node().name("node1").capacity_only(LARGE, pods="32").labels({"error": "true"}).obj()],
        [pod("p1", uid="p1", node_name="node1")],
        plugins=(NodeResourcesFit, ErrorExtensionPlugin),
    )
    preemptor = pod_info("p", uid="p", priority=HIGH, requests=LARGE)

    async def attempt() -> tuple[PostFilterResult | None, Status | None]:
        return env.plugin.post_filter(env.pre_filtered_state(preemptor), preemptor, NodeToStatus({"node1": U}))

    result, status = run(attempt())
    assert result is None
    assert status is not None and status.code is Code.ERROR
    assert (
        status.message() == 'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p'
    )


@pytest.mark.parametrize(
    ("absent", "want_node"),
    [
        pytest.param(Status(Code.UNSCHEDULABLE, "x"), "node1", id="absent nodes Unschedulable are candidates"),
        pytest.param(UU, "", id="absent nodes UnschedulableAndUnresolvable are not"),
    ],
)
def test_absent_nodes_take_the_absent_status(absent: Status, want_node: str) -> None:
    """Upstream ``NodesForStatusCode``: when PreFilter rejected every node as Unschedulable, the
    scheduler passes no per-node status and all nodes may be freed."""
    env = make_env(
        [make_node().name("node1").capacity_only(ONE_POD, pods="32").obj()], [pod("p1", uid="p1", node_name="node1")]
    )
    preemptor = pod_info("p", uid="p", priority=HIGH)

    async def attempt() -> PostFilterResult | None:
        result, _ = env.plugin.post_filter(env.pre_filtered_state(preemptor), preemptor, NodeToStatus({}, absent))
        await env.plugin.executor.wait()
        return result

    assert run(attempt()) == PostFilterResult(want_node)


PREEMPT_PODS = [
    pod("p1.1", uid="p1.1", node_name="node1", priority=LOW, requests=SMALL),
    pod("p1.2", uid="p1.2", node_name="node1", priority=LOW, requests=SMALL),
    pod("p2.1", uid="p2.1", node_name="node2", priority=HIGH, requests=LARGE),
    pod("p3.1", uid="p3.1", node_name="node3", priority=MID, requests=MEDIUM),
]


@pytest.mark.parametrize(
    ("policy", "want_node", "want_victims"),
    [
        pytest.param("PreemptLowerPriority", "node1", ["p1.1", "p1.2"], id="TestPreempt/basic preemption logic"),
        pytest.param(None, "node1", ["p1.1", "p1.2"], id="TestPreempt/PreemptionPolicy is nil"),
        pytest.param("Never", None, [], id="TestPreempt/no preempting in pod"),
    ],
)
def test_preempt(policy: str | None, want_node: str | None, want_victims: list[str]) -> None:
    nodes = [make_node().name(n).capacity_only(VERY_LARGE, pods="32").obj() for n in ("node1", "node2", "node3")]
    env = make_env(nodes, PREEMPT_PODS)
    extra: dict[str, Any] = {"preemptionPolicy": policy} if policy else {}
    raw = pod("p", uid="p", priority=HIGH, requests=VERY_LARGE, **extra)
    preemptor = PodInfo(raw)
    statuses = {n: U for n in ("node1", "node2", "node3")}

    async def attempt() -> tuple[PostFilterResult | None, Status | None]:
        answer = env.plugin.post_filter(env.pre_filtered_state(preemptor), preemptor, NodeToStatus(statuses))
        await env.plugin.executor.wait()
        return answer

    result, status = run(attempt())
    if want_node is None:
        assert result is None
        assert status == Status(Code.UNSCHEDULABLE, "preemption: not eligible due to preemptionPolicy=Never.")
    else:
        assert (result, status) == (PostFilterResult(want_node), None)
    assert sorted(env.api.deleted_names) == want_victims
    # The DisruptionTarget condition message (upstream executor.go PreemptPod).
    assert {reason for _, reason in env.api.deleted} <= {
        "crd-scheduler: preempting to accommodate a higher priority pod"
    }
    if want_node is None:
        return

    # Preempt again with the victims terminating and the pod nominated: no more preemption.
    for info in env.snapshot.get(want_node).pods:  # type: ignore[union-attr]
        info.deletion_timestamp = "2024-01-01T00:00:00Z"
    raw["status"] = {"nominatedNodeName": want_node}
    env.api.deleted.clear()

    async def again() -> tuple[PostFilterResult | None, Status | None]:
        answer = env.plugin.post_filter(env.pre_filtered_state(preemptor), preemptor, NodeToStatus())
        await env.plugin.executor.wait()
        return answer

    result, _ = run(again())
    assert result is None or not result.nominated_node_name
    assert env.api.deleted == []
