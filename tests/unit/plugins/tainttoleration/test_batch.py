"""TaintToleration's batch forms agree with the per-node forms on generated clusters."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework import CycleState, NodeColumns, NodeInfo, NodeScore
from scheduler_core.plugins.tainttoleration import TaintToleration
from tests.wrappers import node, pod_info

KEYS = ["a", "b", "c"]
VALUES = ["", "x", "y"]
EFFECTS = ["NoSchedule", "NoExecute", "PreferNoSchedule"]

# API validation keeps a node's taints unique by (key, effect).
TAINTS = st.dictionaries(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(EFFECTS)), st.sampled_from(VALUES), max_size=6
).map(lambda d: [{"key": k, "effect": e, "value": v} for (k, e), v in d.items()])

TOLERATIONS = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from(["", *KEYS]),
            "operator": st.sampled_from(["Equal", "Exists"]),
            "value": st.sampled_from(VALUES),
            "effect": st.sampled_from(["", *EFFECTS]),
        }
    ),
    max_size=4,
).map(lambda ts: [{**t, "value": ""} if t["operator"] == "Exists" else t for t in ts])


def cluster(taint_lists: list[list[dict[str, Any]]]) -> list[NodeInfo]:
    return [NodeInfo(node(f"n{i}", taints=taints)) for i, taints in enumerate(taint_lists)]


@settings(max_examples=150, deadline=None)
@given(taint_lists=st.lists(TAINTS, max_size=12), tolerations=TOLERATIONS, data=st.data())
def test_batch_equals_per_node(
    taint_lists: list[list[dict[str, Any]]], tolerations: list[dict[str, str]], data: st.DataObject
) -> None:
    infos = cluster(taint_lists)
    columns = NodeColumns(infos)
    plugin = TaintToleration(None, None)
    p = pod_info(tolerations=tolerations)
    state = CycleState()

    mask = plugin.filter_batch(state, p, columns)
    assert mask is not None
    expected_mask = [plugin.filter(state, p, info) is None for info in infos]
    assert mask.tolist() == expected_mask

    assert plugin.pre_score(state, p, infos) is None
    rows = np.array(data.draw(st.lists(st.integers(0, len(infos) - 1), unique=True)) if infos else [], dtype=np.int64)
    scores = [NodeScore(infos[r].name, plugin.score(state, p, infos[r])[0]) for r in rows]
    batch = plugin.score_batch(state, p, columns, rows)
    assert batch is not None
    assert batch.tolist() == [s.score for s in scores]
    plugin.normalize_score(state, p, scores)
    plugin.normalize_score_batch(state, p, batch)
    assert batch.tolist() == [s.score for s in scores]


@settings(max_examples=50, deadline=None)
@given(taint_lists=st.lists(TAINTS, min_size=1, max_size=6), new_taints=TAINTS, tolerations=TOLERATIONS)
def test_batch_sees_node_updates(
    taint_lists: list[list[dict[str, Any]]], new_taints: list[dict[str, Any]], tolerations: list[dict[str, str]]
) -> None:
    infos = cluster(taint_lists)
    columns = NodeColumns(infos)
    plugin = TaintToleration(None, None)
    p = pod_info(tolerations=tolerations)
    plugin.filter_batch(CycleState(), p, columns)  # builds the taint columns
    infos[-1].set_node(node(f"n{len(infos) - 1}", taints=new_taints))
    mask = plugin.filter_batch(CycleState(), p, columns)
    assert mask is not None
    assert mask.tolist() == [plugin.filter(CycleState(), p, info) is None for info in infos]
