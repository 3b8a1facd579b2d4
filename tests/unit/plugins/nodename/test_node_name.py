"""NodeName, as upstream ``nodename/node_name_test.go`` (TestNodeName, PreFilter), plus
the batch filter against the per-node one."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework import NODE_ADD, CycleState, NodeColumns, NodeInfo, PreFilterResult, Status
from scheduler_core.plugins.nodename import NodeName
from scheduler_core.plugins.nodename.node_name import ERR_REASON
from tests.wrappers import node, node_info, pod_info


@pytest.mark.parametrize(
    ("pod_node", "node_name", "want"),
    [
        pytest.param(None, "", None, id="TestNodeName/no host specified"),
        pytest.param("foo", "foo", None, id="TestNodeName/host matches"),
        pytest.param("bar", "foo", Status.unresolvable(ERR_REASON), id="TestNodeName/host doesn't match"),
    ],
)
def test_filter(pod_node: str | None, node_name: str, want: Status | None) -> None:
    plugin = NodeName(None, None)
    assert (
        plugin.filter(CycleState(), pod_info(node_name=pod_node), NodeInfo({"metadata": {"name": node_name}})) == want
    )


@pytest.mark.parametrize(
    ("pod_node", "want"),
    [
        pytest.param("node-a", PreFilterResult(frozenset({"node-a"})), id="TestNodeName_PreFilter/assigned pod"),
        pytest.param(None, None, id="TestNodeName_PreFilter/unassigned pod"),
    ],
)
def test_pre_filter_narrows_to_the_named_node(pod_node: str | None, want: PreFilterResult | None) -> None:
    result, status = NodeName(None, None).pre_filter(CycleState(), pod_info(node_name=pod_node), [])
    assert status is None
    assert result == want


def test_events_node_add_without_hint() -> None:
    (event,) = NodeName(None, None).events_to_register()
    assert event.event == NODE_ADD
    assert event.hint is None


@settings(max_examples=100, deadline=None)
@given(
    count=st.integers(min_value=0, max_value=8),
    target=st.one_of(st.none(), st.sampled_from(["n0", "n3", "n7", "missing"])),
)
def test_filter_batch_equals_filter(count: int, target: str | None) -> None:
    infos = [node_info(f"n{i}") for i in range(count)]
    columns = NodeColumns(infos)
    plugin = NodeName(None, None)
    pod = pod_info(node_name=target)
    mask = plugin.filter_batch(CycleState(), pod, columns)
    assert mask is not None
    expected = np.array([plugin.filter(CycleState(), pod, info) is None for info in infos], dtype=np.bool_)
    np.testing.assert_array_equal(mask, expected)


def test_filter_batch_follows_a_renamed_row() -> None:
    infos = [node_info("a"), node_info("b")]
    columns = NodeColumns(infos)
    plugin = NodeName(None, None)
    pod = pod_info(node_name="c")
    assert plugin.filter_batch(CycleState(), pod, columns).tolist() == [False, False]  # type: ignore[union-attr]
    infos[1].set_node(node("c"))
    assert plugin.filter_batch(CycleState(), pod, columns).tolist() == [False, True]  # type: ignore[union-attr]
