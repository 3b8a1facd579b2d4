"""The formula helpers: upstream ``requested_to_capacity_ratio_test.go`` TestBrokenLinearFunction
(k8s.io/kubernetes v1.36.3) and Go's integer division and math.Round."""

from __future__ import annotations

import pytest

from scheduler_core.plugins.noderesources.strategies import RequestedToCapacityRatio, broken_linear_function


@pytest.mark.parametrize(
    ("points", "assertions"),
    [
        pytest.param(
            [(10, 1), (90, 9)],
            [
                (-10, 1),
                (0, 1),
                (9, 1),
                (10, 1),
                (15, 1),
                (19, 1),
                (20, 2),
                (89, 8),
                (90, 9),
                (99, 9),
                (100, 9),
                (110, 9),
            ],
            id="case_0",
        ),
        pytest.param(
            [(0, 2), (40, 10), (100, 0)],
            [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
            id="case_1",
        ),
        pytest.param(
            [(0, 2), (40, 2), (100, 2)],
            [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)],
            id="case_2",
        ),
        pytest.param(
            [(0, 100), (100, 0)],
            [(1, 99), (33, 67), (99, 1)],
            id="own: decreasing segments truncate toward zero, as Go",
        ),
    ],
)
def test_broken_linear_function(points: list[tuple[int, int]], assertions: list[tuple[int, int]]) -> None:
    f = broken_linear_function(points)
    assert [f(p) for p, _ in assertions] == [want for _, want in assertions]


def test_requested_to_capacity_ratio_scales_shape_scores_to_max_node_score() -> None:
    """MaxCustomPriorityScore 10 maps to MaxNodeScore 100: shape score 1 is worth 10."""
    strategy = RequestedToCapacityRatio([1], [(0, 0), (100, 1)])
    assert strategy.score([25], [0], [100]) == 2  # 0 + (10 - 0) * 25 / 100, truncated
    assert strategy.score([101], [0], [100]) == 10  # over capacity scores as 100% utilization
