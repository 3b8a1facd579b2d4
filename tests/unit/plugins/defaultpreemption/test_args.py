"""DefaultPreemptionArgs defaults (upstream apis/config/v1/defaults.go) and validation
messages (validation_pluginargs_test.go TestValidateDefaultPreemptionArgs, v1.36.3), and the
rejection of bad args when a profile is built."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from scheduler_core.plugins.defaultpreemption import DefaultPreemption, DefaultPreemptionArgs
from scheduler_core.runtime.build import ProfileError, validate_args

BOTH_ZERO = (
    "[minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute, "
    "minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage]"
)


@pytest.mark.parametrize(
    ("raw", "percentage", "absolute"),
    [
        pytest.param({}, 10, 100, id="defaults"),
        pytest.param({"minCandidateNodesPercentage": None, "minCandidateNodesAbsolute": None}, 10, 100, id="nulls"),
        pytest.param({"minCandidateNodesPercentage": 50}, 50, 100, id="percentage only"),
        pytest.param({"minCandidateNodesAbsolute": 0}, 10, 0, id="absolute zero alone is valid"),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 3}, 0, 3, id="percentage zero alone"
        ),
    ],
)
def test_defaults(raw: dict[str, Any], percentage: int, absolute: int) -> None:
    args = DefaultPreemptionArgs.model_validate(raw)
    assert (args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute) == (percentage, absolute)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": 100},
            "minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
            id="TestValidateDefaultPreemptionArgs/negative minCandidateNodesPercentage",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 900, "minCandidateNodesAbsolute": 100},
            "minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]",
            id="TestValidateDefaultPreemptionArgs/minCandidateNodesPercentage over 100",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": -1},
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
            id="TestValidateDefaultPreemptionArgs/negative minCandidateNodesAbsolute",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            BOTH_ZERO,
            id="TestValidateDefaultPreemptionArgs/all zero",
        ),
        pytest.param(
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
            "[minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100], "
            "minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)]",
            id="TestValidateDefaultPreemptionArgs/both negative",
        ),
    ],
)
def test_validation_messages(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        DefaultPreemptionArgs.model_validate(raw)
    errors = info.value.errors()
    assert len(errors) == 1
    assert str(errors[0]["msg"]) == "Value error, " + message


def test_profile_build_names_plugin_and_field() -> None:
    with pytest.raises(ProfileError) as info:
        validate_args(DefaultPreemption.name, DefaultPreemption.args_model, {"minCandidateNodesAbsolute": -5}, "args")
    (path, reason), *_ = info.value.problems
    assert path == "args"
    assert "'DefaultPreemption'" in reason and "minCandidateNodesAbsolute: Invalid value: -5" in reason


def test_unknown_field_is_rejected() -> None:
    with pytest.raises(ProfileError) as info:
        validate_args(DefaultPreemption.name, DefaultPreemption.args_model, {"minCandidateNodes": 1}, "args")
    assert info.value.problems == [("args.minCandidateNodes", "plugin 'DefaultPreemption': unknown field")]
