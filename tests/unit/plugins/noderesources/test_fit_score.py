"""NodeResourcesFit PreScore/Score with each scoring strategy. Cases and expected scores are
upstream's (k8s.io/kubernetes v1.36.3 ``noderesources``: least_allocated_test.go
TestLeastAllocatedScoringStrategy, most_allocated_test.go TestMostAllocatedScoringStrategy,
requested_to_capacity_ratio_test.go, fit_test.go TestFitScore); ``scores`` also checks that
score_batch gives the same numbers. Node capacities like ``cpu: "4000"`` are cores, as there."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scheduler_core.framework import Code, CycleState, NodeColumns, PodInfo
from scheduler_core.plugins.noderesources import NodeResourcesFit, NodeResourcesFitArgs
from tests.wrappers import make_node, make_pod, node_infos

from .helpers import NOTHING, scores

EXT = "abc.com/xyz"
DEFAULT = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXTENDED_SET = [*DEFAULT, {"name": EXT, "weight": 1}]


def fit(strategy: dict[str, Any]) -> NodeResourcesFit:
    return NodeResourcesFit(NodeResourcesFitArgs.model_validate({"scoringStrategy": strategy}), None)


def run(
    plugin: NodeResourcesFit,
    pod: dict[str, Any],
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]] | None = None,
    *,
    pre_score: bool = True,
) -> list[int]:
    infos = node_infos(nodes, pods or [])
    state, pod_info = CycleState(), PodInfo(pod)
    if pre_score:
        assert plugin.pre_score(state, pod_info, infos) is None
    return scores(plugin, state, pod_info, infos)


R12 = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
N4_10 = [
    make_node().name("node1").capacity_only(pods="32", cpu="4000", memory="10000").obj(),
    make_node().name("node2").capacity_only(pods="32", cpu="4000", memory="10000").obj(),
]
N4_6 = [
    make_node().name("node1").capacity_only(pods="32", cpu="4000", memory="10000").obj(),
    make_node().name("node2").capacity_only(pods="32", cpu="6000", memory="10000").obj(),
]
N10_20 = [
    make_node().name("node1").capacity_only(pods="32", cpu="10000", memory="20000").obj(),
    make_node().name("node2").capacity_only(pods="32", cpu="10000", memory="20000").obj(),
]
CPU3K = {"cpu": "3000", "memory": "0"}
CPU3K_MEM5K = {"cpu": "3000", "memory": "5000"}


LEAST_ALLOCATED = [
    pytest.param(
        make_pod().req(NOTHING).obj(), N4_10, [], DEFAULT, [100, 100], id="nothing scheduled, nothing requested"
    ),
    pytest.param(
        make_pod().reqs(*R12).obj(),
        N4_6,
        [],
        DEFAULT,
        [37, 50],
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        make_pod().req(NOTHING).obj(),
        N4_10,
        [
            make_pod().req(NOTHING).node("node1").obj(),
            make_pod().req(NOTHING).node("node1").obj(),
            make_pod().req(NOTHING).node("node2").obj(),
            make_pod().req(NOTHING).node("node2").obj(),
        ],
        DEFAULT,
        [100, 100],
        id="no resources requested, pods scheduled",
    ),
    pytest.param(
        make_pod().req(NOTHING).obj(),
        N10_20,
        [
            make_pod().req(CPU3K).node("node1").obj(),
            make_pod().req(CPU3K).node("node1").obj(),
            make_pod().req(CPU3K).node("node2").obj(),
            make_pod().req(CPU3K_MEM5K).node("node2").obj(),
        ],
        DEFAULT,
        [70, 57],
        id="no resources requested, pods scheduled with resources",
    ),
    pytest.param(
        make_pod().reqs(*R12).obj(),
        N10_20,
        [make_pod().req(CPU3K).node("node1").obj(), make_pod().req(CPU3K_MEM5K).node("node2").obj()],
        DEFAULT,
        [57, 45],
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        make_pod().reqs(*R12).obj(),
        [
            make_node().name("node1").capacity_only(pods="32", cpu="10000", memory="20000").obj(),
            make_node().name("node2").capacity_only(pods="32", cpu="10000", memory="50000").obj(),
        ],
        [make_pod().req(CPU3K).node("node1").obj(), make_pod().req(CPU3K_MEM5K).node("node2").obj()],
        DEFAULT,
        [57, 60],
        id="resources requested, pods scheduled with resources, differently sized nodes",
    ),
    pytest.param(
        make_pod().req(CPU3K).obj(),
        N4_10,
        [make_pod().req(CPU3K).node("node1").obj(), make_pod().req(CPU3K_MEM5K).node("node2").obj()],
        DEFAULT,
        [50, 25],
        id="requested resources exceed node capacity",
    ),
    pytest.param(
        make_pod().req(NOTHING).obj(),
        [make_node().name("node1").capacity_only().obj(), make_node().name("node2").capacity_only().obj()],
        [make_pod().req(CPU3K).node("node1").obj(), make_pod().req(CPU3K_MEM5K).node("node2").obj()],
        DEFAULT,
        [0, 0],
        id="zero node resources, pods scheduled with resources",
    ),
    pytest.param(
        make_pod().reqs(*R12).node("node1").obj(),
        N4_6,
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [41, 50],
        id="nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
    ),
    pytest.param(
        make_pod().reqs(*R12).node("node1").obj(),
        [
            make_node().name("node1").capacity_only(pods="32", cpu="6000", memory="10000").obj(),
            make_node().name("node2").capacity_only({EXT: "4"}, pods="32", cpu="6000", memory="10000").obj(),
        ],
        [],
        EXTENDED_SET,
        [50, 50],
        id="bypass extended resource if the pod does not request",
    ),
    pytest.param(
        make_pod().req({"cpu": "3000", "memory": "5000", EXT: "2"}).node("node1").obj(),
        [
            make_node().name("node1").capacity_only({EXT: "4"}, pods="32", cpu="6000", memory="10000").obj(),
            make_node().name("node2").capacity_only({EXT: "10"}, pods="32", cpu="6000", memory="10000").obj(),
        ],
        [],
        EXTENDED_SET,
        [50, 60],
        id="honor extended resource if the pod requests",
    ),
    pytest.param(
        make_pod().req({"cpu": "3000", "memory": "4000"}).node("node1").obj(),
        [
            make_node().name("node1").capacity_only(pods="32", cpu="6000", memory="10000").obj(),
            make_node().name("node2").capacity_only({EXT: "4"}, pods="32", cpu="6000", memory="10000").obj(),
        ],
        [],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        [55, 55],
        id="if the node doesn't have a resource",
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "pods", "resources", "want"), LEAST_ALLOCATED)
def test_least_allocated(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], resources: Any, want: list[int]
) -> None:
    assert run(fit({"type": "LeastAllocated", "resources": resources}), pod, nodes, pods) == want


MOST_ALLOCATED = [
    pytest.param(make_pod().req(NOTHING).obj(), N4_10, [], DEFAULT, [0, 0], id="nothing scheduled, nothing requested"),
    pytest.param(
        make_pod().reqs(*R12).obj(),
        N4_6,
        [],
        DEFAULT,
        [62, 50],
        id="nothing scheduled, resources requested, differently sized nodes",
    ),
    pytest.param(
        make_pod().req(NOTHING).obj(),
        N10_20,
        [
            make_pod().req(CPU3K).node("node1").obj(),
            make_pod().req(CPU3K).node("node1").obj(),
            make_pod().req(CPU3K).node("node2").obj(),
            make_pod().req(CPU3K_MEM5K).node("node2").obj(),
        ],
        DEFAULT,
        [30, 42],
        id="no resources requested, pods scheduled with resources",
    ),
    pytest.param(
        make_pod().reqs(*R12).obj(),
        N10_20,
        [make_pod().req(CPU3K).node("node1").obj(), make_pod().req(CPU3K_MEM5K).node("node2").obj()],
        DEFAULT,
        [42, 55],
        id="resources requested, pods scheduled with resources",
    ),
    pytest.param(
        make_pod().reqs({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}).obj(),
        [
            make_node().name("node1").capacity_only(pods="32", cpu="5000", memory="10000").obj(),
            make_node().name("node2").capacity_only(pods="32", cpu="10000", memory="9000").obj(),
        ],
        [],
        DEFAULT,
        [95, 75],
        id="resources requested equal node capacity",
    ),
    pytest.param(
        make_pod().reqs(*R12).obj(),
        N4_6,
        [],
        [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}],
        [58, 50],
        id="nothing scheduled, resources requested, differently sized nodes (weighted)",
    ),
    pytest.param(
        make_pod().container().obj(),
        [
            make_node().name("node1").capacity_only(pods="32", cpu="250m", memory="1000Mi").obj(),
            make_node().name("node2").capacity_only(pods="32", cpu="250m", memory="1000Mi").obj(),
        ],
        [make_pod().container().node("node1").obj(), make_pod().container().node("node1").obj()],
        DEFAULT,
        [80, 30],
        id="no resources requested, pods scheduled, nonzero request for resource",
    ),
    pytest.param(
        make_pod().reqs(*R12).obj(),
        [
            make_node().name("node1").capacity_only(pods="32", cpu="6000", memory="10000").obj(),
            make_node().name("node2").capacity_only({EXT: "4"}, pods="32", cpu="6000", memory="10000").obj(),
        ],
        [],
        EXTENDED_SET,
        [50, 50],
        id="bypass extended resource if the pod does not request",
    ),
    pytest.param(
        make_pod().req({"cpu": "3000", "memory": "5000", EXT: "2"}).node("node1").obj(),
        [
            make_node().name("node1").capacity_only({EXT: "4"}, pods="32", cpu="6000", memory="10000").obj(),
            make_node().name("node2").capacity_only({EXT: "10"}, pods="32", cpu="6000", memory="10000").obj(),
        ],
        [],
        EXTENDED_SET,
        [50, 40],
        id="honor extended resource if the pod request",
    ),
    pytest.param(
        make_pod().req({"cpu": "3000", "memory": "4000"}).node("node1").obj(),
        [
            make_node().name("node1").capacity_only(pods="32", cpu="6000", memory="10000").obj(),
            make_node().name("node2").capacity_only({EXT: "4"}, pods="32", cpu="6000", memory="10000").obj(),
        ],
        [],
        [{"name": EXT, "weight": 2}, *DEFAULT],
        [45, 45],
        id="if the node doesn't have a resource",
    ),
]


@pytest.mark.parametrize(("pod", "nodes", "pods", "resources", "want"), MOST_ALLOCATED)
def test_most_allocated(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], resources: Any, want: list[int]
) -> None:
    assert run(fit({"type": "MostAllocated", "resources": resources}), pod, nodes, pods) == want


LEAST_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
MOST_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
BIN_PACKING_SHAPE = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}]


def rtcr(shape: list[dict[str, int]], resources: Any = None) -> NodeResourcesFit:
    strategy = {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": shape}}
    if resources is not None:
        strategy["resources"] = resources
    return fit(strategy)


@pytest.mark.parametrize(
    ("pod", "nodes", "pods", "want"),
    [
        pytest.param(
            make_pod().req(NOTHING).obj(),
            N4_10,
            [make_pod().req(NOTHING).node("node1").obj(), make_pod().req(NOTHING).node("node1").obj()],
            [100, 100],
            id="nothing scheduled, nothing requested (default - least requested nodes have priority)",
        ),
        pytest.param(
            make_pod().reqs(*R12).obj(),
            N4_6,
            [make_pod().req(NOTHING).node("node1").obj(), make_pod().req(NOTHING).node("node1").obj()],
            [38, 50],
            id="nothing scheduled, resources requested, differently sized nodes "
            "(default - least requested nodes have priority)",
        ),
        pytest.param(
            make_pod().req(NOTHING).obj(),
            N4_6,
            [make_pod().req(CPU3K_MEM5K).node("node1").obj(), make_pod().req(CPU3K_MEM5K).node("node2").obj()],
            [38, 50],
            id="no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
        ),
    ],
)
def test_requested_to_capacity_ratio(
    pod: dict[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]], want: list[int]
) -> None:
    """TestRequestedToCapacityRatioScoringStrategy (Score without PreScore, as upstream)."""
    assert run(rtcr(LEAST_SHAPE, DEFAULT), pod, nodes, pods, pre_score=False) == want


GIB10 = 10000 * 1024 * 1024
FOO, BAR = "intel.com/foo", "intel.com/bar"


@pytest.mark.parametrize(
    ("pod", "pods", "want"),
    [
        pytest.param(
            make_pod().req(NOTHING).obj(),
            [make_pod().req(NOTHING).obj()],
            [0, 0],
            id="nothing scheduled, nothing requested",
        ),
        pytest.param(
            make_pod().req({FOO: "2"}).obj(),
            [make_pod().req(NOTHING).obj()],
            [2, 5],
            id="resources requested, pods scheduled with less resources",
        ),
        pytest.param(
            make_pod().req({FOO: "2"}).obj(),
            [make_pod().req({FOO: "2"}).node("node2").obj()],
            [2, 10],
            id="resources requested, pods scheduled with resources, on node with existing pod running",
        ),
        pytest.param(
            make_pod().req({FOO: "4"}).obj(),
            [make_pod().req(NOTHING).obj()],
            [5, 10],
            id="resources requested, pods scheduled with more resources",
        ),
    ],
)
def test_resource_bin_packing_single_extended(pod: dict[str, Any], pods: list[dict[str, Any]], want: list[int]) -> None:
    """TestResourceBinPackingSingleExtended."""
    nodes = [
        make_node().name("node1").capacity_only({FOO: "8"}, cpu="4000m", memory=str(GIB10)).obj(),
        make_node().name("node2").capacity_only({FOO: "4"}, cpu="4000m", memory=str(GIB10)).obj(),
    ]
    plugin = rtcr(BIN_PACKING_SHAPE, [{"name": FOO, "weight": 1}])
    assert run(plugin, pod, nodes, pods, pre_score=False) == want


@pytest.mark.parametrize(
    ("pod", "pods", "want"),
    [
        pytest.param(make_pod().req(NOTHING).obj(), [], [0, 0], id="nothing scheduled, nothing requested"),
        pytest.param(
            make_pod().req({FOO: "2", BAR: "2"}).obj(),
            [make_pod().req(NOTHING).obj()],
            [4, 3],
            id="resources requested, pods scheduled with less resources",
        ),
        pytest.param(
            make_pod().req({FOO: "2", BAR: "2"}).obj(),
            [make_pod().req({FOO: "4", BAR: "2"}).node("node2").obj()],
            [4, 7],
            id="resources requested, pods scheduled with resources, on node with existing pod running",
        ),
        pytest.param(
            make_pod().req({FOO: "4", BAR: "2"}).obj(),
            [make_pod().req(NOTHING).obj()],
            [5, 5],
            id="resources requested, pods scheduled with more resources",
        ),
    ],
)
def test_resource_bin_packing_multiple_extended(
    pod: dict[str, Any], pods: list[dict[str, Any]], want: list[int]
) -> None:
    """TestResourceBinPackingMultipleExtended: weights 3 and 5, rounded as math.Round."""
    nodes = [
        make_node().name("node1").capacity_only({FOO: "8", BAR: "4"}, cpu="4000m", memory=str(GIB10)).obj(),
        make_node().name("node2").capacity_only({FOO: "4", BAR: "8"}, cpu="4000m", memory=str(GIB10)).obj(),
    ]
    plugin = rtcr(BIN_PACKING_SHAPE, [{"name": FOO, "weight": 3}, {"name": BAR, "weight": 5}])
    assert run(plugin, pod, nodes, pods) == want


FIT_SCORE_PODS = [
    make_pod().req({"cpu": "2000", "memory": "4000"}).node("node1").obj(),
    make_pod().req({"cpu": "1000", "memory": "2000"}).node("node2").obj(),
]


@pytest.mark.parametrize("pre_score", [True, False], ids=["PreScore", "if PreScore is not called"])
@pytest.mark.parametrize(
    ("strategy", "pod", "want"),
    [
        pytest.param(
            {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": LEAST_SHAPE}},
            make_pod().req(CPU3K_MEM5K).obj(),
            [10, 32],
            id="RequestedToCapacityRatio case1",
        ),
        pytest.param(
            {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": MOST_SHAPE}},
            make_pod().req(CPU3K_MEM5K).obj(),
            [95, 68],
            id="RequestedToCapacityRatio case2",
        ),
        pytest.param(
            {"type": "MostAllocated"},
            make_pod().req({"cpu": "1000", "memory": "2000"}).obj(),
            [67, 36],
            id="MostAllocated",
        ),
        pytest.param(
            {"type": "LeastAllocated"},
            make_pod().req({"cpu": "1000", "memory": "2000"}).obj(),
            [32, 63],
            id="LeastAllocated",
        ),
    ],
)
def test_fit_score(strategy: dict[str, Any], pod: dict[str, Any], want: list[int], pre_score: bool) -> None:
    """TestFitScore: the same scores whether or not PreScore ran."""
    assert run(fit(strategy), pod, N4_6, FIT_SCORE_PODS, pre_score=pre_score) == want


@pytest.mark.parametrize(
    ("strategy", "want"),
    [
        pytest.param({"type": "MostAllocated"}, [67, 45], id="MostAllocated with sidecar container"),
        pytest.param({"type": "LeastAllocated"}, [32, 55], id="LeastAllocated with sidecar container"),
    ],
)
def test_fit_score_with_sidecar(strategy: dict[str, Any], want: list[int]) -> None:
    """TestFitScore: an existing pod's sidecar (restartable init container) counts as usage."""
    pods = [
        make_pod()
        .req({"cpu": "1000", "memory": "2000"})
        .init_req({"cpu": "1000", "memory": "2000"}, sidecar=True)
        .node("node1")
        .obj(),
        make_pod().req({"cpu": "1000", "memory": "2000"}).node("node2").obj(),
    ]
    assert run(fit(strategy), make_pod().req({"cpu": "1000", "memory": "2000"}).obj(), N4_10, pods) == want


def test_pre_score_never_skips_and_scores_best_effort_pods() -> None:
    """Unlike BalancedAllocation, Fit scores best-effort pods with their non-zero requests."""
    plugin, state = fit({"type": "MostAllocated"}), CycleState()
    infos = node_infos([make_node().name("n").capacity_only(pods="32", cpu="1", memory="1000Mi").obj()])
    pod = PodInfo(make_pod().container().obj())
    assert plugin.pre_score(state, pod, infos) is None
    # cpu 100m/1000m = 10, memory 200Mi/1000Mi = 20 -> (10 + 20) / 2
    assert scores(plugin, state, pod, infos) == [15]


def test_score_batch_follows_rows() -> None:
    plugin, state = fit({"type": "LeastAllocated"}), CycleState()
    infos = node_infos(N4_6, FIT_SCORE_PODS)
    pod = PodInfo(make_pod().req({"cpu": "1000", "memory": "2000"}).obj())
    plugin.pre_score(state, pod, infos)
    batch = plugin.score_batch(state, pod, NodeColumns(infos), np.array([1, 0, 1], np.int64))
    assert batch is not None and batch.tolist() == [63, 32, 63]


def test_score_without_resources_is_an_error() -> None:
    """ "Resources not set, pods scheduled with error": unreachable through defaulted args,
    kept as upstream's guard."""
    plugin = fit({"type": "LeastAllocated"})
    plugin._scorer.resources = ()
    score, status = plugin.score(CycleState(), PodInfo(make_pod().req(NOTHING).obj()), node_infos(N4_10)[0])
    assert (score, status is not None and status.code) == (0, Code.ERROR)
    assert status is not None and status.message() == "resources not found"
