"""NodeResourcesFit PreFilter/Filter, cases from upstream ``noderesources/fit_test.go``
(k8s.io/kubernetes v1.36.3: TestEnoughRequests, TestNotEnoughRequests, TestStorageRequests,
TestPreFilterDisabled). Every case also checks that filter_batch agrees."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from scheduler_core.framework import Code, CycleState, NodeColumns, NodeInfo, PodInfo, Status
from scheduler_core.plugins.noderesources import NodeResourcesFit, NodeResourcesFitArgs
from tests.wrappers import make_node, make_pod

from .helpers import NOTHING, usage

A = "example.com/aaa"
B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"


def allocatable(milli_cpu: int, memory: int, pods: int, ext_a: int, storage: int, huge_a: int) -> dict[str, str]:
    """Upstream ``makeAllocatableResources``."""
    return {
        "cpu": f"{milli_cpu}m",
        "memory": str(memory),
        "pods": str(pods),
        A: str(ext_a),
        "ephemeral-storage": str(storage),
        HUGE_A: str(huge_a),
    }


def run_filter(plugin: NodeResourcesFit, pod: Mapping[str, Any], node: NodeInfo) -> Status | None:
    state, pod_info = CycleState(), PodInfo(pod)
    assert plugin.pre_filter(state, pod_info, [node]) == (None, None)
    status = plugin.filter(state, pod_info, node)
    batch = plugin.filter_batch(state, pod_info, NodeColumns([node]))
    assert batch is not None
    assert batch.tolist() == [status is None]
    return status


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


CPU, MEM = "Insufficient cpu", "Insufficient memory"

ENOUGH_REQUESTS = [
    pytest.param(make_pod().req(NOTHING).obj(), usage(10, 20), {}, None, id="no resources requested always fits"),
    pytest.param(
        make_pod().req(usage(1, 1)).obj(), usage(10, 20), {}, unschedulable(CPU, MEM), id="too many resources fails"
    ),
    pytest.param(
        make_pod().req(usage(1, 1)).init_req(usage(3, 1)).obj(),
        usage(8, 19),
        {},
        unschedulable(CPU),
        id="too many resources fails due to init container cpu",
    ),
    pytest.param(
        make_pod().req(usage(1, 1)).init_req(usage(3, 1)).init_req(usage(2, 1)).obj(),
        usage(8, 19),
        {},
        unschedulable(CPU),
        id="too many resources fails due to highest init container cpu",
    ),
    pytest.param(
        make_pod().req(usage(1, 1)).init_req(usage(1, 3)).obj(),
        usage(9, 19),
        {},
        unschedulable(MEM),
        id="too many resources fails due to init container memory",
    ),
    pytest.param(
        make_pod().req(usage(1, 1)).init_req(usage(1, 1)).obj(),
        usage(9, 19),
        {},
        None,
        id="init container fits because it's the max, not sum, of containers and init containers",
    ),
    pytest.param(make_pod().req(usage(1, 1)).obj(), usage(5, 5), {}, None, id="both resources fit"),
    pytest.param(make_pod().req(usage(2, 1)).obj(), usage(9, 5), {}, unschedulable(CPU), id="one resource memory fits"),
    pytest.param(make_pod().req(usage(1, 2)).obj(), usage(5, 19), {}, unschedulable(MEM), id="one resource cpu fits"),
    pytest.param(make_pod().req(usage(5, 1)).obj(), usage(5, 19), {}, None, id="equal edge case"),
    pytest.param(
        make_pod().req(usage(4, 1)).init_req(usage(5, 1)).obj(),
        usage(5, 19),
        {},
        None,
        id="equal edge case for init container",
    ),
    pytest.param(make_pod().req(usage(scalars={A: 1})).obj(), usage(), {}, None, id="extended resource fits"),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={A: 10})).obj(),
        usage(scalars={A: 0}),
        {},
        unresolvable(f"Insufficient {A}"),
        id="extended resource capacity enforced",
    ),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={A: 1})).obj(),
        usage(scalars={A: 5}),
        {},
        unschedulable(f"Insufficient {A}"),
        id="extended resource allocatable enforced",
    ),
    pytest.param(
        make_pod().reqs(usage(1, 1, scalars={A: 3}), usage(1, 1, scalars={A: 3})).obj(),
        usage(scalars={A: 2}),
        {},
        unresolvable(f"Insufficient {A}"),
        id="extended resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        make_pod().req(usage()).init_req(usage(1, 1, scalars={A: 3})).init_req(usage(1, 1, scalars={A: 3})).obj(),
        usage(scalars={A: 2}),
        {},
        None,
        id="extended resource allocatable admits multiple init containers",
    ),
    pytest.param(
        make_pod().req(usage()).init_req(usage(1, 1, scalars={A: 6})).init_req(usage(1, 1, scalars={A: 3})).obj(),
        usage(scalars={A: 2}),
        {},
        unresolvable(f"Insufficient {A}"),
        id="extended resource allocatable enforced for multiple init containers",
    ),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={B: 1})).obj(),
        usage(),
        {},
        unresolvable(f"Insufficient {B}"),
        id="extended resource allocatable enforced for unknown resource",
    ),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={K8S_A: 10})).obj(),
        usage(),
        {},
        unresolvable(f"Insufficient {K8S_A}"),
        id="kubernetes.io resource capacity enforced",
    ),
    pytest.param(
        make_pod().req(usage()).init_req(usage(1, 1, scalars={K8S_B: 10})).obj(),
        usage(),
        {},
        unresolvable(f"Insufficient {K8S_B}"),
        id="kubernetes.io resource capacity enforced for init container",
    ),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={HUGE_A: 10})).obj(),
        usage(scalars={HUGE_A: 0}),
        {},
        unresolvable(f"Insufficient {HUGE_A}"),
        id="hugepages resource capacity enforced",
    ),
    pytest.param(
        make_pod().reqs(usage(1, 1, scalars={HUGE_A: 3}), usage(1, 1, scalars={HUGE_A: 3})).obj(),
        usage(scalars={HUGE_A: 2}),
        {},
        unresolvable(f"Insufficient {HUGE_A}"),
        id="hugepages resource allocatable enforced for multiple containers",
    ),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={B: 1})).obj(),
        usage(),
        {"ignoredResources": [B]},
        None,
        id="skip checking ignored extended resource",
    ),
    pytest.param(
        make_pod().req(usage(1, 1)).spec(overhead={"cpu": "3m", "memory": "13"}).obj(),
        usage(5, 5),
        {},
        None,
        id="resources + pod overhead fits",
    ),
    pytest.param(
        make_pod().req(usage(1, 1)).spec(overhead={"cpu": "1m", "memory": "15"}).obj(),
        usage(5, 5),
        {},
        unschedulable(MEM),
        id="requests + overhead does not fit for memory",
    ),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={B: 1, K8S_A: 1})).obj(),
        usage(),
        {"ignoredResourceGroups": ["example.com"]},
        unresolvable(f"Insufficient {K8S_A}"),
        id="skip checking ignored extended resource via resource groups",
    ),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={A: 0})).obj(),
        usage(scalars={A: 6}),
        {},
        None,
        id="skip checking extended resource request with quantity zero via resource groups",
    ),
    pytest.param(
        make_pod().req(usage(1, 1, scalars={B: 1, K8S_A: 1})).obj(),
        usage(),
        {},
        unresolvable(f"Insufficient {B}", f"Insufficient {K8S_A}"),
        id="own: several scalar reasons, in name order",
    ),
]


@pytest.mark.parametrize(("pod", "existing", "args", "want"), ENOUGH_REQUESTS)
def test_enough_requests(
    pod: dict[str, Any], existing: dict[str, str], args: dict[str, Any], want: Status | None
) -> None:
    plugin = NodeResourcesFit(NodeResourcesFitArgs.model_validate(args), None)
    status = run_filter(
        plugin,
        pod,
        make_node()
        .name("n")
        .capacity_only(allocatable(10, 20, 32, 5, 20, 5))
        .info(PodInfo(make_pod().req(existing).node("n").obj())),
    )
    assert status == want


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [
        pytest.param(
            make_pod().req(NOTHING).obj(),
            usage(10, 20),
            unschedulable("Too many pods"),
            id="even without specified resources",
        ),
        pytest.param(
            make_pod().req(usage(1, 1)).obj(), usage(5, 5), unschedulable("Too many pods"), id="even if both fit"
        ),
        pytest.param(
            make_pod().req(usage(5, 1)).obj(),
            usage(5, 19),
            unschedulable("Too many pods"),
            id="even for equal edge case",
        ),
        pytest.param(
            make_pod().req(usage(5, 1)).init_req(usage(5, 1)).obj(),
            usage(5, 19),
            unschedulable("Too many pods"),
            id="even for equal edge case due to init container",
        ),
        pytest.param(
            make_pod().req(usage(6, 1)).obj(),
            usage(5, 19),
            unschedulable("Too many pods", CPU),
            id="own: pod count and cpu both reported",
        ),
    ],
)
def test_not_enough_requests(pod: dict[str, Any], existing: dict[str, str], want: Status) -> None:
    """TestNotEnoughRequests: a node allowing one pod, which it already has."""
    status = run_filter(
        NodeResourcesFit(None, None),
        pod,
        make_node()
        .name("n")
        .capacity_only(allocatable(10, 20, 1, 0, 0, 0))
        .info(PodInfo(make_pod().req(existing).node("n").obj())),
    )
    assert status == want


@pytest.mark.parametrize(
    ("pod", "existing", "want"),
    [
        pytest.param(make_pod().req(usage(1, 1)).obj(), usage(2, 10), None, id="empty storage requested, and pod fits"),
        pytest.param(
            make_pod().req(usage(ephemeral=25)).obj(),
            usage(2, 2),
            unresolvable("Insufficient ephemeral-storage"),
            id="storage ephemeral local storage request exceeds allocatable",
        ),
        pytest.param(
            make_pod().req(usage(ephemeral=5)).obj(),
            usage(2, 2, ephemeral=10),
            None,
            id="ephemeral local storage is sufficient",
        ),
        pytest.param(
            make_pod().req(usage(ephemeral=11)).obj(),
            usage(2, 2, ephemeral=10),
            unschedulable("Insufficient ephemeral-storage"),
            id="own: ephemeral storage short but within allocatable",
        ),
        pytest.param(make_pod().req(usage(ephemeral=10)).obj(), usage(2, 2), None, id="pod fits"),
    ],
)
def test_storage_requests(pod: dict[str, Any], existing: dict[str, str], want: Status | None) -> None:
    status = run_filter(
        NodeResourcesFit(None, None),
        pod,
        make_node()
        .name("n")
        .capacity_only(allocatable(10, 20, 32, 5, 20, 5))
        .info(PodInfo(make_pod().req(existing).node("n").obj())),
    )
    assert status == want


def test_filter_without_pre_filter_is_an_error() -> None:
    """TestPreFilterDisabled: Filter without PreFilter state errors; the batch form defers."""
    plugin, node, state, pod = (
        NodeResourcesFit(None, None),
        make_node().name("n").capacity_only({}).info(),
        CycleState(),
        PodInfo(make_pod().req(NOTHING).obj()),
    )
    status = plugin.filter(state, pod, node)
    assert status is not None and status.code is Code.ERROR
    assert status.message() == 'error reading "PreFilterNodeResourcesFit" from cycleState: not found'
    assert plugin.filter_batch(state, pod, NodeColumns([node])) is None


def test_filter_batch_over_several_nodes() -> None:
    """Rows line up with the columns, and only requested scalar columns matter."""
    nodes = [
        make_node()
        .name("n")
        .capacity_only(allocatable(10, 20, 32, 5, 20, 5))
        .info(PodInfo(make_pod().req(usage(9, 0)).node("n").obj())),
        make_node()
        .name("n")
        .capacity_only(allocatable(10, 20, 32, 5, 20, 5))
        .info(PodInfo(make_pod().req(usage(0, 0, scalars={A: 4})).node("n").obj())),
        make_node()
        .name("n")
        .capacity_only(allocatable(10, 20, 2, 0, 20, 5))
        .info(PodInfo(make_pod().req(usage(1, 1)).node("n").obj())),
        make_node()
        .name("n")
        .capacity_only(allocatable(10, 20, 1, 5, 20, 5))
        .info(PodInfo(make_pod().req(usage(1, 1)).node("n").obj())),
    ]
    plugin, state = NodeResourcesFit(None, None), CycleState()
    pod = PodInfo(make_pod().req(usage(1, 1, scalars={A: 2})).obj())
    plugin.pre_filter(state, pod, nodes)
    batch = plugin.filter_batch(state, pod, NodeColumns(nodes))
    assert batch is not None
    assert batch.tolist() == [True, False, False, False]
    assert [plugin.filter(state, pod, n) for n in nodes] == [
        None,
        unschedulable(f"Insufficient {A}"),
        unresolvable(f"Insufficient {A}"),
        unschedulable("Too many pods"),
    ]
