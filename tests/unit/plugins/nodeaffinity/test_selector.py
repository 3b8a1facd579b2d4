"""Node-selector semantics (component-helpers nodeaffinity.go, apimachinery labels), per node
and vectorized."""

from __future__ import annotations

import re

import pytest

from scheduler_core.framework import NodeColumns, NodeInfo
from scheduler_core.framework import node_selector as selector
from tests.unit.plugins.nodeaffinity.helpers import Json, expr, name_in, required, term
from tests.wrappers import node, pod_info


def match(terms: list[Json], node: Json) -> bool:
    """Per-node and vectorized verdicts, which must agree."""
    parsed = selector.parse_node_selector(required(*terms)["requiredDuringSchedulingIgnoredDuringExecution"])
    info = NodeInfo(node)
    per_node = parsed.match(info.labels, info.name)
    mask = parsed.mask(NodeColumns([info]))
    assert mask.tolist() == [per_node]
    return per_node


@pytest.mark.parametrize(
    ("requirement", "labels", "want"),
    [
        pytest.param(expr("k", "In", "a", "b"), {"k": "b"}, True, id="In: value listed"),
        pytest.param(expr("k", "In", "a"), {}, False, id="In: key absent"),
        pytest.param(expr("k", "NotIn", "a"), {}, True, id="NotIn: key absent matches"),
        pytest.param(expr("k", "NotIn", "a"), {"k": "a"}, False, id="NotIn: value listed"),
        pytest.param(expr("k", "Exists"), {"k": ""}, True, id="Exists: empty value"),
        pytest.param(expr("k", "DoesNotExist"), {"k": "x"}, False, id="DoesNotExist: present"),
        pytest.param(expr("k", "DoesNotExist"), {}, True, id="DoesNotExist: absent"),
        pytest.param(expr("k", "Gt", "0204"), {"k": "0206"}, True, id="Gt: leading zeros compare as integers"),
        pytest.param(expr("k", "Gt", "5"), {"k": "5"}, False, id="Gt: strict"),
        pytest.param(expr("k", "Lt", "5"), {"k": "-3"}, True, id="Lt: negative node value"),
        pytest.param(expr("k", "Lt", "5"), {"k": "+3"}, True, id="Lt: signed node value parses as Go does"),
        pytest.param(expr("k", "Gt", "1"), {"k": "1_000"}, False, id="Gt: underscores are not base-10 digits"),
        pytest.param(expr("k", "Gt", "1"), {"k": "9223372036854775808"}, False, id="Gt: int64 overflow never matches"),
        pytest.param(expr("k", "Gt", "1"), {"k": " 7"}, False, id="Gt: spaces do not parse"),
        pytest.param(expr("k", "Gt", "1"), {"k": "٣"}, False, id="Gt: non-ASCII digits do not parse"),
        pytest.param(expr("k", "Gt", "1"), {}, False, id="Gt: key absent"),
        pytest.param(
            expr("k", "Gt", "-1"), {"k": "0"}, False, id="Gt: negative bound is not a label value, term invalid"
        ),
        pytest.param(expr("k", "Gt", "1", "2"), {"k": "5"}, False, id="Gt: two values, term invalid"),
        pytest.param(expr("bad key", "Exists"), {"bad key": "x"}, False, id="invalid key, term invalid"),
    ],
)
def test_label_requirements(requirement: Json, labels: dict[str, str], want: bool) -> None:
    assert match([term(requirement)], node("n", labels=labels, hostname_label=False)) is want


@pytest.mark.parametrize(
    ("fields", "node_name", "want"),
    [
        pytest.param([name_in("n1")], "n1", True, id="metadata.name In"),
        pytest.param([expr("metadata.name", "NotIn", "n1")], "n1", False, id="metadata.name NotIn"),
        pytest.param([expr("metadata.name", "NotIn", "n1")], "n2", True, id="metadata.name NotIn other"),
        pytest.param([expr("spec.other", "In", "x")], "n1", False, id="another field reads as empty"),
        pytest.param([expr("spec.other", "NotIn", "x")], "n1", True, id="another field NotIn"),
        pytest.param([name_in("n1")], "", True, id="a node without a name skips fields"),
        pytest.param([name_in("n1", "n2")], "n1", False, id="two values, term invalid"),
    ],
)
def test_field_requirements(fields: list[Json], node_name: str, want: bool) -> None:
    assert match([term(fields=fields)], node(node_name, hostname_label=False)) is want


def test_terms_are_ored_and_bad_or_empty_terms_select_nothing() -> None:
    labelled = node("n", labels={"a": "1"}, hostname_label=False)
    assert not match([], labelled)
    assert not match([{}], labelled)
    assert not match([term(expr("a", "Bogus"))], labelled)
    assert match([term(expr("a", "Bogus")), term(expr("a", "In", "1"))], labelled)
    assert match([term(expr("b", "Exists")), term(expr("a", "Exists"))], labelled)
    assert not match([term(expr("a", "Exists"), expr("b", "Exists"))], labelled)


def test_lazy_errors_surface_only_when_nothing_matched() -> None:
    parsed = selector.parse_node_selector(
        required(term(expr("a", "Bogus")), term(expr("a", "In", "1")))["requiredDuringSchedulingIgnoredDuringExecution"]
    )
    assert parsed.match_or_error({"a": "1"}, "n")
    with pytest.raises(
        selector.SelectorError,
        match=re.escape('nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Bogus"'),
    ):
        parsed.match_or_error({"a": "2"}, "n")


def test_label_value_error_path_names_the_key() -> None:
    # labels.NewRequirement reports bad values under values[i][key].
    parsed = selector.parse_term(term(expr("zone", "In", "a b")), "")
    assert tuple(str(error) for error in parsed.errors) == (
        'matchExpressions[0].values[0][zone]: Invalid value: "a b": a valid label must be an empty string or consist '
        "of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
        "'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    )


def test_preferred_terms_sum_weights_and_fail_as_a_whole() -> None:
    terms = [
        {"weight": 3, "preference": term(expr("a", "Exists"))},
        {"weight": 4, "preference": term(expr("b", "Exists"))},
        {"weight": 0, "preference": term(expr("a", "Exists"))},
    ]
    parsed = selector.parse_preferred_terms(terms)
    assert parsed.score({"a": "x", "b": "y"}, "n") == 7
    info = NodeInfo(node("n", labels={"b": "y"}, hostname_label=False))
    assert parsed.scores(NodeColumns([info])).tolist() == [4]
    with pytest.raises(selector.SelectorError, match=r"^\[1\].matchExpressions\[0\].operator"):
        selector.parse_preferred_terms([*terms[:1], {"weight": 1, "preference": term(expr("a", "Near"))}])


def test_pod_parse_is_memoised() -> None:

    pod = pod_info(node_selector={"a": "1"}, affinity={"nodeAffinity": required(term(expr("b", "Exists")))})
    first = selector.required_node_affinity(pod)
    assert selector.required_node_affinity(pod) is first
    assert first.match({"a": "1", "b": ""}, "n")
    assert not first.match({"a": "2", "b": ""}, "n")


def test_preferred_parse_is_memoised_in_its_three_outcomes() -> None:
    # Absent terms read as None, an empty list as empty terms, a bad term as the same error,
    # on the first call and on the memoised second one.
    absent = pod_info(affinity={"nodeAffinity": {}})
    empty = pod_info(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}})
    bad = pod_info(
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": term(expr("a", "Near"))}
                ]
            }
        }
    )
    for _ in range(2):
        assert selector.preferred_node_affinity(absent) is None
        assert selector.preferred_node_affinity(empty) == selector.PreferredTerms(())
        with pytest.raises(selector.SelectorError, match=r"^\[0\].matchExpressions\[0\].operator"):
            selector.preferred_node_affinity(bad)


def test_null_terms_are_empty_terms() -> None:
    # JSON nulls in the term lists decode to empty terms upstream: they select nothing.
    parsed = selector.parse_node_selector({"nodeSelectorTerms": [None]})
    assert parsed.terms == ()
    assert selector.parse_preferred_terms([None]).terms == ()  # type: ignore[list-item]


def test_name_mask_follows_a_renamed_row() -> None:
    infos = [NodeInfo(node("a", hostname_label=False)), NodeInfo(node("b", hostname_label=False))]
    columns = NodeColumns(infos)
    parsed = selector.parse_term(term(fields=[name_in("c")]), "")
    assert parsed.mask(columns).tolist() == [False, False]
    infos[0].set_node(node("c", hostname_label=False))
    assert parsed.mask(columns).tolist() == [True, False]
