"""NodeResourcesBalancedAllocation, cases and scores from upstream
``noderesources/balanced_allocation_test.go`` TestNodeResourcesBalancedAllocation
(k8s.io/kubernetes v1.36.3, where the score compares the balance with and without the pod);
``scores`` also checks score_batch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler_core.framework import Code, CycleState, NodeColumns, PodInfo
from scheduler_core.plugins.noderesources import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from scheduler_core.plugins.noderesources.strategies import BalancedAllocation, balanced_resource_score
from tests.wrappers import make_node, make_pod, node_infos

from .helpers import NOTHING, scores

GPU = "nvidia.com/gpu"
CPU_AND_MEMORY = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})
CPU_ONLY = ({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})
MEMORY_ONLY = ({"cpu": "0", "memory": "2000"}, {"cpu": "0", "memory": "3000"})
CPU_AND_MEMORY_AND_GPU = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"})
WITH_GPU = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 1}]


def plugin(resources: Any = None) -> NodeResourcesBalancedAllocation:
    args = {} if resources is None else {"resources": resources}
    return NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs.model_validate(args), None)


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "resources", "pre_score", "want"),
    [
        pytest.param(
            make_pod().reqs(*CPU_AND_MEMORY).obj(),
            [
                make_node().name("node1").capacity_only(cpu="4000m", memory="10000").obj(),
                make_node().name("node2").capacity_only(cpu="6000m", memory="10000").obj(),
            ],
            [],
            None,
            True,
            [68, 75],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            make_pod().reqs(*CPU_AND_MEMORY).obj(),
            [
                make_node().name("node1").capacity_only(cpu="10000m", memory="20000").obj(),
                make_node().name("node2").capacity_only(cpu="10000m", memory="20000").obj(),
            ],
            [make_pod().reqs(*CPU_ONLY).node("node1").obj(), make_pod().reqs(*CPU_AND_MEMORY).node("node2").obj()],
            None,
            True,
            [73, 74],
            id="resources requested, pods scheduled with resources",
        ),
        pytest.param(
            make_pod().reqs(*CPU_AND_MEMORY).obj(),
            [
                make_node().name("node1").capacity_only(cpu="10000m", memory="20000").obj(),
                make_node().name("node2").capacity_only(cpu="10000m", memory="50000").obj(),
            ],
            [make_pod().reqs(*CPU_ONLY).node("node1").obj(), make_pod().reqs(*CPU_AND_MEMORY).node("node2").obj()],
            None,
            True,
            [73, 70],
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        pytest.param(
            make_pod().reqs(*MEMORY_ONLY).obj(),
            [
                make_node().name("node1").capacity_only(cpu="3000m", memory="5000").obj(),
                make_node().name("node2").capacity_only(cpu="3000m", memory="5000").obj(),
            ],
            [make_pod().reqs(*CPU_ONLY).node("node1").obj()],
            None,
            True,
            [100, 50],
            id="resources requested, pods scheduled with resources, nodes to reach min/max score",
        ),
        pytest.param(
            make_pod().reqs(*CPU_ONLY).obj(),
            [
                make_node().name("node1").capacity_only(cpu="6000m", memory="10000").obj(),
                make_node().name("node2").capacity_only(cpu="6000m", memory="10000").obj(),
            ],
            [make_pod().reqs(*CPU_ONLY).node("node1").obj(), make_pod().reqs(*CPU_AND_MEMORY).node("node2").obj()],
            None,
            True,
            [62, 62],
            id="requested resources at node capacity",
        ),
        pytest.param(
            make_pod().req({"memory": "0", GPU: "1"}).obj(),
            [
                make_node().name("node1").capacity_only({GPU: "8"}, cpu="3500m", memory="40000").obj(),
                make_node().name("node2").capacity_only({GPU: "8"}, cpu="3500m", memory="40000").obj(),
            ],
            [
                make_pod().reqs(*CPU_AND_MEMORY).node("node2").obj(),
                make_pod().reqs(*CPU_AND_MEMORY_AND_GPU).node("node1").obj(),
            ],
            WITH_GPU,
            True,
            [75, 76],
            id="include scalar resource on a node for balanced resource allocation",
        ),
        pytest.param(
            make_pod().reqs(*CPU_AND_MEMORY).obj(),
            [
                make_node().name("node1").capacity_only({GPU: "8"}, cpu="3500m", memory="40000").obj(),
                make_node().name("node2").capacity_only(cpu="3500m", memory="40000").obj(),
            ],
            [],
            WITH_GPU,
            True,
            [56, 56],
            id="node without the scalar resource should skip the scalar resource",
        ),
        pytest.param(
            make_pod().reqs(*CPU_AND_MEMORY).obj(),
            [
                make_node().name("node1").capacity_only(cpu="10000m", memory="20000").obj(),
                make_node().name("node2").capacity_only(cpu="10000m", memory="20000").obj(),
            ],
            [make_pod().reqs(*CPU_ONLY).node("node1").obj(), make_pod().reqs(*CPU_AND_MEMORY).node("node2").obj()],
            None,
            False,
            [73, 74],
            id="resources requested, pods scheduled with resources if PreScore not called",
        ),
    ],
)
def test_balanced_allocation(
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    resources: Any,
    pre_score: bool,
    want: list[int],
) -> None:
    p, state, pod_info = plugin(resources), CycleState(), PodInfo(pod)
    infos = node_infos(nodes, pods)
    if pre_score:
        assert p.pre_score(state, pod_info, infos) is None
    assert scores(p, state, pod_info, infos) == want


def test_best_effort_pod_skips_in_pre_score() -> None:
    """ "nothing scheduled, nothing requested, skip in PreScore" (kubernetes#129138)."""
    p, state, pod = plugin(), CycleState(), PodInfo(make_pod().req(NOTHING).obj())
    infos = node_infos(
        [
            make_node().name("node1").capacity_only(cpu="4000m", memory="10000").obj(),
            make_node().name("node2").capacity_only(cpu="4000m", memory="10000").obj(),
        ]
    )
    status = p.pre_score(state, pod, infos)
    assert status is not None and status.code is Code.SKIP


def test_best_effort_pod_scores_zero_without_pre_score() -> None:
    """Plain requests, not the non-zero defaults: a pod without requests is best-effort, and
    Score without PreScore returns 0 for it, as upstream."""
    p, state, pod = plugin(), CycleState(), PodInfo(make_pod().container().container().obj())
    infos = node_infos(
        [
            make_node().name("node1").capacity_only(cpu="4000m", memory="10000").obj(),
            make_node().name("node2").capacity_only(cpu="1000m", memory="10000").obj(),
        ]
    )
    assert p.pre_score(state, pod, infos) is not None
    assert scores(p, state, pod, infos) == [0, 0]
    batch = p.score_batch(state, pod, NodeColumns(infos), np.array([1], np.int64))
    assert batch is not None and batch.tolist() == [0]


@pytest.mark.parametrize(
    ("requested", "allocatable", "want"),
    [
        pytest.param([3000, 5000], [4000, 10000], 87, id="two resources: 1 - |0.75-0.5|/2"),
        pytest.param([5000, 5000], [4000, 10000], 75, id="fraction capped at 1"),
        pytest.param([1, 0], [0, 10], 100, id="one resource left: std 0"),
        pytest.param([3000, 5000, 3], [3500, 40000, 8], 69, id="three resources: population std (upstream 69 -> 70)"),
        pytest.param([3000, 5000, 4], [3500, 40000, 8], 70, id="three resources, with the pod's gpu"),
        pytest.param([0, 0, 0], [0, 0, 0], 100, id="no resources"),
    ],
)
def test_balanced_resource_score(requested: list[int], allocatable: list[int], want: int) -> None:
    assert balanced_resource_score(requested, allocatable) == want


@pytest.mark.parametrize(
    ("requested", "allocated", "want"),
    [
        pytest.param([50, 50], [0, 0], 75, id="no change in balance: 75"),
        pytest.param([100, 0], [0, 0], 50, id="balanced to fully unbalanced: 50"),
        pytest.param([100, 100], [100, 0], 100, id="fully unbalanced to balanced: 100"),
    ],
)
def test_balanced_improvement_range(requested: list[int], allocated: list[int], want: int) -> None:
    """The v1.36 mapping of (with - without) to [50, 100] (upstream balancedResourceScorer)."""
    assert BalancedAllocation().score(requested, allocated, [100, 100]) == want
