"""Property tests: filter_batch and score_batch agree with filter and score on every node, for
generated clusters and pods, every scoring strategy and BalancedAllocation. Clusters include
nodes without some resources, pods without requests (non-zero defaults), scalar resources and
pod-count limits; the columns are also updated after they are built (as an assume would)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.framework import CycleState, NodeColumns, NodeInfo, PodInfo, Resource
from scheduler_core.plugins.noderesources import (
    NodeResourcesBalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFit,
    NodeResourcesFitArgs,
)
from tests.wrappers import make_node, make_pod

GPU, MIG = "example.com/gpu", "nvidia.com/mig"
RESOURCE_NAMES = ["cpu", "memory", "ephemeral-storage", GPU, MIG, "pods", "hugepages-2Mi"]

GI = 2**30


def _amount(step: int, most: int, fmt: str = "{}") -> st.SearchStrategy[str]:
    """Mostly multiples of ``step`` (so that requests exactly fill nodes, the edge cases), at
    times any amount (so that divisions truncate)."""
    grid = st.integers(0, most).map(lambda k: k * step)
    anything = st.integers(0, most * step)
    return st.one_of(grid, grid, anything).map(fmt.format)


QUANTITIES: dict[str, st.SearchStrategy[str]] = {
    "cpu": _amount(250, 32, "{}m"),
    "memory": _amount(GI // 2, 32),
    "ephemeral-storage": _amount(10 * GI, 8),
    GPU: _amount(1, 8),
    MIG: _amount(1, 4),
    "hugepages-2Mi": st.sampled_from(["0", "2Mi", "4Mi", "8Mi"]),
}


@st.composite
def requests(draw: st.DrawFn) -> dict[str, str]:
    names = draw(st.lists(st.sampled_from(list(QUANTITIES)), unique=True, max_size=4))
    return {name: draw(QUANTITIES[name]) for name in names}


@st.composite
def pods(draw: st.DrawFn, node: str = "") -> dict[str, Any]:
    wrapper = make_pod().reqs(*draw(st.lists(requests(), min_size=1, max_size=2)))
    if draw(st.booleans()):
        wrapper.init_req(draw(requests()))
    if node:
        wrapper.node(node)
    return wrapper.uid(f"u{draw(st.integers(0, 10**9))}").obj()


@st.composite
def nodes(draw: st.DrawFn, index: int, pod: PodInfo) -> NodeInfo:
    """A node with up to three pods; each allocatable amount is either arbitrary or tight:
    what its pods use plus what ``pod`` requests, give or take one unit (exact fits)."""
    name = f"n{index}"
    existing = [PodInfo(p) for p in draw(st.lists(pods(name), max_size=3))]
    used = Resource()
    for p in existing:
        used.add(p.requests)
    alloc: dict[str, str] = {}
    for resource, quantity in QUANTITIES.items():
        wanted = pod.requests.get(resource) > 0
        mode = draw(st.sampled_from(["absent", "any", "tight", "tight", "tight"] if wanted else ["absent", "any"]))
        if mode == "any":
            alloc[resource] = draw(quantity)
        elif mode == "tight":
            amount = max(
                used.get(resource) + pod.requests.get(resource) + draw(st.sampled_from([-1, 0, 0, 1, 1000])), 0
            )
            alloc[resource] = f"{amount}m" if resource == "cpu" else str(amount)
    alloc["pods"] = str(len(existing) + draw(st.sampled_from([0, 1, 1, 1, 3])))
    return make_node().name(name).capacity_only(alloc).info(*existing)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[dict[str, Any], list[NodeInfo]]:
    """A pod to place and a cluster of one to eight nodes shaped around it."""
    pod = draw(pods())
    pod_info = PodInfo(pod)
    return pod, [draw(nodes(i, pod_info)) for i in range(draw(st.integers(1, 8)))]


@st.composite
def fit_args(draw: st.DrawFn) -> NodeResourcesFitArgs:
    kind = draw(st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]))
    names = draw(
        st.one_of(
            st.just(["cpu", "memory"]),
            st.lists(st.sampled_from(RESOURCE_NAMES), unique=True, min_size=1, max_size=5),
        )
    )
    resources = [{"name": name, "weight": draw(st.sampled_from([1, 1, 1, 2, 3, 100]))} for name in names]
    strategy: dict[str, Any] = {"type": kind, "resources": resources}
    if kind == "RequestedToCapacityRatio":
        utilizations = draw(st.sets(st.integers(0, 100), min_size=1, max_size=5))
        if draw(st.booleans()):
            utilizations.add(100)  # a slope up to full utilization: over-capacity rows matter
        strategy["requestedToCapacityRatio"] = {
            "shape": [{"utilization": u, "score": draw(st.integers(0, 10))} for u in sorted(utilizations)]
        }
    ignored = draw(st.lists(st.sampled_from([GPU, MIG]), unique=True, max_size=1))
    groups = draw(st.lists(st.sampled_from(["example.com", "nvidia.com"]), unique=True, max_size=1))
    return NodeResourcesFitArgs.model_validate(
        {"scoringStrategy": strategy, "ignoredResources": ignored, "ignoredResourceGroups": groups}
    )


@st.composite
def balanced_args(draw: st.DrawFn) -> NodeResourcesBalancedAllocationArgs:
    names = draw(st.lists(st.sampled_from(RESOURCE_NAMES), unique=True, min_size=1, max_size=5))
    return NodeResourcesBalancedAllocationArgs.model_validate({"resources": [{"name": n} for n in names]})


SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _assume_more(infos: list[NodeInfo], extra: list[dict[str, Any]]) -> None:
    """Add pods after the columns exist, as the cache does when it assumes a pod."""
    for i, pod in enumerate(extra):
        info = infos[i % len(infos)]
        info.add_pod(PodInfo({**pod, "spec": {**pod["spec"], "nodeName": info.name}}))


@SETTINGS
@given(args=fit_args(), scenario=scenarios(), extra=st.lists(pods(), max_size=2))
def test_fit_filter_batch_equals_filter(
    args: NodeResourcesFitArgs, scenario: tuple[dict[str, Any], list[NodeInfo]], extra: list[dict[str, Any]]
) -> None:
    pod, infos = scenario
    plugin, state, pod_info = NodeResourcesFit(args, None), CycleState(), PodInfo(pod)
    columns = NodeColumns(infos)
    _assume_more(infos, extra)
    plugin.pre_filter(state, pod_info, infos)
    batch = plugin.filter_batch(state, pod_info, columns)
    assert batch is not None
    assert batch.tolist() == [plugin.filter(state, pod_info, info) is None for info in infos]


@SETTINGS
@given(
    args=fit_args(),
    scenario=scenarios(),
    choices=st.lists(st.booleans(), min_size=3, max_size=3),
    extra=st.lists(pods(), max_size=2),
)
def test_fit_rejects_changed_equals_filter_after_the_change(
    args: NodeResourcesFitArgs,
    scenario: tuple[dict[str, Any], list[NodeInfo]],
    choices: list[bool],
    extra: list[dict[str, Any]],
) -> None:
    """``filter_rejects_changed`` (preemption's dry run, before it clones a node or puts a
    victim back) says what ``filter`` says of the node with those pods taken off and the others
    put on: rejected exactly when it rejects."""
    pod, infos = scenario
    plugin, state, pod_info = NodeResourcesFit(args, None), CycleState(), PodInfo(pod)
    plugin.pre_filter(state, pod_info, infos)
    for info in infos:
        removed = [p for p, take in zip(info.pods, choices, strict=False) if take]
        added = [PodInfo({**p, "spec": {**p["spec"], "nodeName": info.name}}) for p in extra]
        told = plugin.filter_rejects_changed(state, pod_info, info, removed, added)
        changed = info.clone()
        changed.remove_pods(removed)
        for other in added:
            changed.add_pod(other)
        assert told is (plugin.filter(state, pod_info, changed) is not None)


@SETTINGS
@given(args=fit_args(), scenario=scenarios(), extra=st.lists(pods(), max_size=2))
def test_fit_filter_batch_statuses_equal_filter(
    args: NodeResourcesFitArgs, scenario: tuple[dict[str, Any], list[NodeInfo]], extra: list[dict[str, Any]]
) -> None:
    """The diagnosis's statuses from the columns (``filter_batch_statuses``) are ``filter``'s on
    every node: code, reasons and their order, None where it passes."""
    pod, infos = scenario
    plugin, state, pod_info = NodeResourcesFit(args, None), CycleState(), PodInfo(pod)
    columns = NodeColumns(infos)
    _assume_more(infos, extra)
    plugin.pre_filter(state, pod_info, infos)
    rows = np.arange(len(infos), dtype=np.int64)
    answers = plugin.filter_batch_statuses(state, pod_info, columns, rows)
    assert answers is not None
    expected = [plugin.filter(state, pod_info, info) for info in infos]
    assert [None if a is None else (a.code, a.reasons) for a in answers] == [
        None if e is None else (e.code, e.reasons) for e in expected
    ]


@SETTINGS
@given(
    args=fit_args(),
    scenario=scenarios(),
    extra=st.lists(pods(), max_size=2),
    pre_score=st.booleans(),
    data=st.data(),
)
def test_fit_score_batch_equals_score(
    args: NodeResourcesFitArgs,
    scenario: tuple[dict[str, Any], list[NodeInfo]],
    extra: list[dict[str, Any]],
    pre_score: bool,
    data: st.DataObject,
) -> None:
    pod, infos = scenario
    plugin, state, pod_info = NodeResourcesFit(args, None), CycleState(), PodInfo(pod)
    columns = NodeColumns(infos)
    _assume_more(infos, extra)
    if pre_score:
        assert plugin.pre_score(state, pod_info, infos) is None
    rows = data.draw(st.lists(st.integers(0, len(infos) - 1), max_size=2 * len(infos)))
    batch = plugin.score_batch(state, pod_info, columns, np.array(rows, np.int64))
    assert batch is not None
    expected = [plugin.score(state, pod_info, infos[r]) for r in rows]
    assert all(status is None and 0 <= score <= 100 for score, status in expected)
    assert batch.tolist() == [score for score, _ in expected]


@SETTINGS
@given(args=balanced_args(), scenario=scenarios(), extra=st.lists(pods(), max_size=2), pre_score=st.booleans())
def test_balanced_allocation_score_batch_equals_score(
    args: NodeResourcesBalancedAllocationArgs,
    scenario: tuple[dict[str, Any], list[NodeInfo]],
    extra: list[dict[str, Any]],
    pre_score: bool,
) -> None:
    pod, infos = scenario
    plugin, state, pod_info = NodeResourcesBalancedAllocation(args, None), CycleState(), PodInfo(pod)
    columns = NodeColumns(infos)
    _assume_more(infos, extra)
    if pre_score:
        plugin.pre_score(state, pod_info, infos)
    rows = np.arange(len(infos), dtype=np.int64)
    batch = plugin.score_batch(state, pod_info, columns, rows)
    assert batch is not None
    expected = [plugin.score(state, pod_info, info) for info in infos]
    assert all(status is None and 0 <= score <= 100 for score, status in expected)
    assert batch.tolist() == [score for score, _ in expected]
