"""NodeAffinity's batch forms agree with the per-node forms on generated clusters and pods,
valid and invalid selectors alike."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from scheduler_core.framework import Code, CycleState, NodeColumns, NodeInfo, NodeScore
from scheduler_core.framework import node_selector as selector
from scheduler_core.plugins.nodeaffinity import NodeAffinity, NodeAffinityArgs
from tests.wrappers import make_node, pod_info

KEYS = ["zone", "rack", "gen"]
VALUES = ["a", "b", "1", "05", "10", "-3", "+4"]
NAMES = ["n0", "n1", "n2", "n3", "n4", "n5"]

LABELS = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
NODE_SELECTOR = st.one_of(st.none(), st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES[:3]), max_size=1))

VALID_LABEL_EXPR = st.one_of(
    st.builds(
        lambda key, op, values: {"key": key, "operator": op, "values": values},
        st.sampled_from(KEYS),
        st.sampled_from(["In", "NotIn"]),
        st.lists(st.sampled_from(VALUES[:5]), min_size=1, max_size=3),
    ),
    st.builds(
        lambda key, op: {"key": key, "operator": op}, st.sampled_from(KEYS), st.sampled_from(["Exists", "DoesNotExist"])
    ),
    st.builds(
        lambda key, op, value: {"key": key, "operator": op, "values": [value]},
        st.sampled_from(KEYS),
        st.sampled_from(["Gt", "Lt"]),
        st.sampled_from(["1", "05", "3", "10"]),
    ),
)
# Anything, mostly invalid: bad keys, unknown operators, wrong value counts, bad values.
RAW_LABEL_EXPR = st.fixed_dictionaries(
    {
        "key": st.sampled_from([*KEYS, "bad key"]),
        "operator": st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"]),
        "values": st.lists(st.sampled_from(["a", "1", "05", "3", "-1", "a b"]), max_size=2),
    }
)
LABEL_EXPR = st.one_of(VALID_LABEL_EXPR, VALID_LABEL_EXPR, VALID_LABEL_EXPR, RAW_LABEL_EXPR)
VALID_FIELD_EXPR = st.builds(
    lambda op, name: {"key": "metadata.name", "operator": op, "values": [name]},
    st.sampled_from(["In", "NotIn"]),
    st.sampled_from([*NAMES, "missing"]),
)
RAW_FIELD_EXPR = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["metadata.name", "spec.other"]),
        "operator": st.sampled_from(["In", "NotIn", "Exists"]),
        "values": st.lists(st.sampled_from([*NAMES, "missing", ""]), max_size=2),
    }
)
FIELD_EXPR = st.one_of(VALID_FIELD_EXPR, VALID_FIELD_EXPR, RAW_FIELD_EXPR)
EXPRS = st.lists(LABEL_EXPR, min_size=1, max_size=2)
FIELDS = st.lists(FIELD_EXPR, min_size=1, max_size=2)
TERM = st.one_of(
    st.builds(lambda exprs: {"matchExpressions": exprs}, EXPRS),
    st.builds(lambda exprs: {"matchExpressions": exprs}, EXPRS),
    st.builds(lambda fields: {"matchFields": fields}, FIELDS),
    st.builds(lambda exprs, fields: {"matchExpressions": exprs, "matchFields": fields}, EXPRS, FIELDS),
    st.sampled_from([{}, {"matchExpressions": []}, {"matchFields": None}]),  # empty terms select nothing
)
REQUIRED = st.one_of(
    st.none(),
    st.builds(lambda terms: {"nodeSelectorTerms": terms}, st.lists(TERM, min_size=1, max_size=3)),
    st.just({"nodeSelectorTerms": []}),
)
PREFERRED = st.one_of(
    st.none(),
    st.lists(st.fixed_dictionaries({"weight": st.integers(0, 10), "preference": TERM}), max_size=3),
)


def node_affinity(required: Any, preferred: Any) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if required is not None:
        result["requiredDuringSchedulingIgnoredDuringExecution"] = required
    if preferred is not None:
        result["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return result


@st.composite
def clusters(draw: st.DrawFn) -> list[NodeInfo]:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=len(NAMES)))
    if draw(st.booleans()):
        names.append("")  # a node without a name skips matchFields
    return [make_node().name(name).no_hostname_label().labels(draw(LABELS)).info() for name in names]


def plugin_with(added_required: Any, added_preferred: Any) -> NodeAffinity:
    try:
        args = NodeAffinityArgs.model_validate({"addedAffinity": node_affinity(added_required, added_preferred)})
    except ValidationError:
        args = NodeAffinityArgs()
    return NodeAffinity(args, None)


@settings(max_examples=150, deadline=None)
@given(
    infos=clusters(),
    node_selector=NODE_SELECTOR,
    required=REQUIRED,
    preferred=PREFERRED,
    added_required=REQUIRED,
    added_preferred=PREFERRED,
    data=st.data(),
)
def test_batch_equals_per_node(
    infos: list[NodeInfo],
    node_selector: dict[str, str] | None,
    required: Any,
    preferred: Any,
    added_required: Any,
    added_preferred: Any,
    data: st.DataObject,
) -> None:
    plugin = plugin_with(added_required, added_preferred)
    affinity = node_affinity(required, preferred)
    pod = pod_info(node_selector=node_selector, affinity={"nodeAffinity": affinity} if affinity else None)
    columns = NodeColumns(infos)
    state = CycleState()

    plugin.pre_filter(state, pod, infos)
    mask = plugin.filter_batch(state, pod, columns)
    assert mask is not None
    assert mask.tolist() == [plugin.filter(state, pod, info) is None for info in infos]

    pre_score = plugin.pre_score(state, pod, infos)
    rows = np.array(data.draw(st.lists(st.integers(0, len(infos) - 1), unique=True)) if infos else [], dtype=np.int64)
    batch = plugin.score_batch(state, pod, columns, rows)
    if pre_score is not None and pre_score.code is Code.ERROR:
        assert batch is None
        return
    results = [plugin.score(state, pod, infos[r]) for r in rows]
    assert all(status is None for _, status in results)
    assert batch is not None
    scores = [NodeScore(infos[r].name, score) for r, (score, _) in zip(rows, results, strict=True)]
    assert batch.tolist() == [s.score for s in scores]
    plugin.normalize_score(state, pod, scores)
    plugin.normalize_score_batch(state, pod, batch)
    assert batch.tolist() == [s.score for s in scores]


@settings(max_examples=50, deadline=None)
@given(infos=clusters(), added_required=REQUIRED, new_labels=LABELS)
def test_added_mask_follows_node_updates(
    infos: list[NodeInfo], added_required: Any, new_labels: dict[str, str]
) -> None:
    plugin = plugin_with(added_required, None)
    columns = NodeColumns(infos)
    pod = pod_info()
    plugin.filter_batch(CycleState(), pod, columns)  # caches the added affinity's mask
    for info in infos[:1]:
        info.set_node({"metadata": {"name": info.name, "labels": new_labels}})
    mask = plugin.filter_batch(CycleState(), pod, columns)
    assert mask is not None
    assert mask.tolist() == [plugin.filter(CycleState(), pod, info) is None for info in infos]


@settings(max_examples=200, deadline=None)
@given(
    infos=st.lists(LABELS, min_size=3, max_size=7).map(
        lambda labels: [
            NodeInfo({"metadata": {"name": NAMES[i % 6] if i < 6 else "", "labels": labels_}})
            for i, labels_ in enumerate(labels)
        ]
    ),
    terms=st.lists(TERM, max_size=3),
    weights=st.lists(st.integers(0, 5), min_size=3, max_size=3),
)
def test_selector_mask_equals_match(infos: list[NodeInfo], terms: list[Any], weights: list[int]) -> None:
    columns = NodeColumns(infos)
    node_selector = selector.parse_node_selector({"nodeSelectorTerms": terms})
    assert node_selector.mask(columns).tolist() == [node_selector.match(i.labels, i.name) for i in infos]
    try:
        prefs = selector.parse_preferred_terms(
            [{"weight": w, "preference": t} for w, t in zip(weights, terms, strict=False)]
        )
    except selector.SelectorError:
        return
    assert prefs.scores(columns).tolist() == [prefs.score(i.labels, i.name) for i in infos]
