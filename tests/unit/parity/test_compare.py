"""Comparing outcomes: what counts as a disagreement, and what does not."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.parity_harness.compare import Disagreement, compare, plugin_of
from bench.parity_harness.outcome import SCHEDULED, UNSCHEDULABLE, Outcome

CPU = "Insufficient cpu"
TAINT = "node(s) had untolerated taint(s)"
SPREAD = "node(s) didn't match pod topology spread constraints"


def scheduled(node: str, scores: dict[str, dict[str, int]], **reasons: list[str]) -> Outcome:
    totals = {n: sum(row.values()) for n, row in scores.items()}
    return Outcome(SCHEDULED, node, frozenset(scores), dict(reasons), scores=scores, totals=totals)


def unschedulable(**reasons: list[str]) -> Outcome:
    return Outcome(UNSCHEDULABLE, None, frozenset(), dict(reasons))


A = {"a": {"NodeResourcesFit": 60, "TaintToleration": 300}, "b": {"NodeResourcesFit": 50, "TaintToleration": 300}}


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        pytest.param(scheduled("a", A, c=[CPU]), scheduled("a", A, c=[CPU]), [], id="same"),
        pytest.param(unschedulable(a=[CPU, TAINT]), unschedulable(a=[TAINT, CPU]), [], id="reason-order-is-free"),
        pytest.param(
            scheduled("a", A, c=[CPU]),
            scheduled("a", A, c=[TAINT]),
            [Disagreement(1, "c", "NodeResourcesFit/TaintToleration", "reasons", CPU, TAINT)],
            id="other-reason",
        ),
        pytest.param(
            scheduled("a", A),
            scheduled("a", A, c=[CPU]),
            [Disagreement(1, "c", "NodeResourcesFit", "reasons", "not evaluated", CPU)],
            id="node-missing-on-our-side",
        ),
        pytest.param(
            scheduled("a", {**A, "c": {"NodeResourcesFit": 1, "TaintToleration": 300}}),
            scheduled("a", A, c=[CPU]),
            [Disagreement(1, "c", "NodeResourcesFit", "feasibility", "feasible", CPU)],
            id="feasible-for-us-only",
        ),
        pytest.param(
            scheduled("a", {"a": {"NodeResourcesFit": 61, "TaintToleration": 300}, "b": A["b"]}),
            scheduled("a", A),
            [Disagreement(1, "a", "NodeResourcesFit", "score", "61", "60")],
            id="score",
        ),
        pytest.param(
            scheduled("a", {"a": {"TaintToleration": 300}, "b": {"TaintToleration": 300}}),
            scheduled("a", {"a": {"TaintToleration": 300, "NodeAffinity": 0}, "b": {"TaintToleration": 300}}),
            [Disagreement(1, "a", "NodeAffinity", "score", "not scored", "0")],
            id="a-plugin-skipped-on-one-side",
        ),
        pytest.param(
            scheduled("b", A),
            scheduled("a", A),
            [Disagreement(1, "", "selection", "chosen node", "b", "a")],
            id="unique-best-not-chosen",
        ),
        pytest.param(
            scheduled("b", {"a": A["a"], "b": A["a"]}),
            scheduled("a", {"a": A["a"], "b": A["a"]}),
            [],
            id="a-tie-is-not-compared",
        ),
        pytest.param(
            unschedulable(a=["pod affinity terms conflict"]),
            unschedulable(a=["pod affinity terms conflict"]),
            [],
            id="pre-filter-message",
        ),
    ],
)
def test_compare(ours: Outcome, theirs: Outcome, expected: list[Disagreement]) -> None:
    assert compare(1, ours, theirs) == expected


def _pooled(counts: Counter[str], nodes: set[str], **reasons: list[str]) -> Outcome:
    outcome = unschedulable(**reasons)
    outcome.pooled_reasons, outcome.pooled_nodes = counts, frozenset(nodes)
    return outcome


@pytest.mark.parametrize(
    ("ours", "expected"),
    [
        pytest.param(unschedulable(a=[TAINT], b=[SPREAD], c=[SPREAD]), [], id="same-multiset"),
        pytest.param(
            unschedulable(a=[TAINT], b=[SPREAD], c=[CPU]),
            [
                Disagreement(
                    1,
                    "b,c",
                    "NodeResourcesFit/PodTopologySpread",
                    "pooled reasons",
                    f"1x {CPU}; 1x {SPREAD}",
                    f"2x {SPREAD}",
                )
            ],
            id="other-multiset",
        ),
    ],
)
def test_reasons_known_only_together_are_compared_as_a_multiset(ours: Outcome, expected: list[Disagreement]) -> None:
    theirs = _pooled(Counter({SPREAD: 2}), {"b", "c"}, a=[TAINT])
    assert compare(1, ours, theirs) == expected


@pytest.mark.parametrize(
    ("reasons", "plugin"),
    [
        pytest.param(["Insufficient example.com/gpu"], "NodeResourcesFit", id="extended-resource"),
        pytest.param([TAINT, CPU], "NodeResourcesFit/TaintToleration", id="two-plugins"),
        pytest.param(["something new"], "Filter", id="unknown"),
    ],
)
def test_plugin_of(reasons: list[str], plugin: str) -> None:
    assert plugin_of(reasons) == plugin


def test_a_score_skipped_where_upstream_scores_zero_is_no_difference() -> None:
    """DynamicResources skips its Score for a pod without claims; upstream logs 0 for every node."""
    theirs = Outcome("Scheduled", "a", frozenset({"a", "b"}), scores={n: {"DynamicResources": 0} for n in "ab"})
    ours = Outcome("Scheduled", "a", frozenset({"a", "b"}), scores={n: {"TaintToleration": 0} for n in "ab"})
    theirs.scores = {n: {"DynamicResources": 0, "TaintToleration": 0} for n in "ab"}
    assert compare(1, ours, theirs) == []
    theirs.scores["a"]["DynamicResources"] = 10
    assert [d.plugin for d in compare(1, ours, theirs)] == ["DynamicResources"]
