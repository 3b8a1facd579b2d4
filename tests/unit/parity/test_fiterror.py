"""Parsing FitError messages (kubernetes v1.36.3 pkg/scheduler/framework/types.go FitError.Error)."""

from __future__ import annotations

from collections import Counter

import pytest

from bench.parity_harness.fiterror import FitError, parse


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        pytest.param(
            "0/6 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s), "
            "2 node(s) were unschedulable, 3 Insufficient example.com/gpu.",
            FitError(
                6,
                Counter(
                    {
                        "Insufficient cpu": 1,
                        "node(s) had untolerated taint(s)": 1,
                        "node(s) were unschedulable": 2,
                        "Insufficient example.com/gpu": 3,
                    }
                ),
                None,
            ),
            id="histogram",
        ),
        pytest.param(
            "0/4 nodes are available: 1 parity-probe: passed the filters, "
            "3 node(s) didn't satisfy plugin(s) [NodeAffinity].",
            FitError(
                4,
                Counter({"parity-probe: passed the filters": 1, "node(s) didn't satisfy plugin(s) [NodeAffinity]": 3}),
                None,
            ),
            id="node-probe",
        ),
        pytest.param(
            "0/3 nodes are available: 3 Insufficient memory. preemption: not eligible due to preemptionPolicy=Never.",
            FitError(3, Counter({"Insufficient memory": 3}), None),
            id="post-filter-message-dropped",
        ),
        pytest.param(
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. "
            "no new claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption victims found.",
            FitError(3, Counter({"node(s) had untolerated taint(s)": 1, "Insufficient cpu": 2}), None),
            id="dynamic-resources-post-filter-reason-dropped-too",
        ),
        pytest.param(
            '0/2 nodes are available: persistentvolumeclaim "c" not found. no new claims to deallocate, '
            "preemption: not eligible due to preemptionPolicy=Never.",
            FitError(2, Counter(), 'persistentvolumeclaim "c" not found'),
            id="pre-filter-rejection-then-two-post-filter-reasons",
        ),
        pytest.param(
            "0/5 nodes are available: pod affinity terms conflict.",
            FitError(5, Counter(), "pod affinity terms conflict"),
            id="pre-filter-rejection",
        ),
        pytest.param(
            "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints (missing required label).",
            FitError(
                2, Counter({"node(s) didn't match pod topology spread constraints (missing required label)": 2}), None
            ),
            id="reason-with-parentheses",
        ),
        pytest.param(
            "0/2 nodes are available: 2 a reason, with a comma.",
            FitError(2, Counter({"a reason, with a comma": 2}), None),
            id="a-comma-not-followed-by-a-count-stays-in-the-reason",
        ),
    ],
)
def test_parse(message: str, expected: FitError) -> None:
    assert parse(message) == expected


def test_other_messages_are_refused() -> None:
    with pytest.raises(ValueError, match="not a FitError message"):
        parse("Successfully assigned a/b to n")
