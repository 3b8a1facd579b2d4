"""Args defaults (upstream ``apis/config/v1/defaults.go``) and validation messages (upstream
``apis/config/validation/validation_pluginargs.go``; cases from validation_pluginargs_test.go
TestValidateFitArgs, TestValidate*ScoringStrategy, TestValidateNodeResourcesBalancedAllocationArgs
and the weight cases of least/most_allocated_test.go), rendered as field.ErrorList aggregates."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from scheduler_core.plugins.noderesources import (
    NodeResourcesBalancedAllocationArgs,
    NodeResourcesFitArgs,
    ResourceSpec,
)

SHAPE = [{"utilization": 30, "score": 3}, {"utilization": 70, "score": 7}]


def rtcr(shape: list[dict[str, int]], resources: Any = None) -> dict[str, Any]:
    strategy: dict[str, Any] = {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": shape}}
    if resources is not None:
        strategy["resources"] = resources
    return {"scoringStrategy": strategy}


def error_of(model: Any, raw: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as info:
        model.model_validate(raw)
    errors = info.value.errors()
    assert len(errors) == 1
    message = str(errors[0]["msg"])
    assert message.startswith("Value error, ")
    return message.removeprefix("Value error, ")


@pytest.mark.parametrize(
    ("raw", "strategy_type", "resources"),
    [
        pytest.param({}, "LeastAllocated", [("cpu", 1), ("memory", 1)], id="no args: LeastAllocated on cpu and memory"),
        pytest.param({"scoringStrategy": None}, "LeastAllocated", [("cpu", 1), ("memory", 1)], id="null strategy"),
        pytest.param(
            {"scoringStrategy": {"type": "MostAllocated"}},
            "MostAllocated",
            [("cpu", 1), ("memory", 1)],
            id="no resources: cpu and memory",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu"}, {"name": "x/y", "weight": 0}],
                }
            },
            "MostAllocated",
            [("cpu", 1), ("x/y", 1)],
            id="weight unset or 0 defaults to 1",
        ),
    ],
)
def test_fit_defaults(raw: dict[str, Any], strategy_type: str, resources: list[tuple[str, int]]) -> None:
    args = NodeResourcesFitArgs.model_validate(raw)
    assert args.scoring_strategy.type == strategy_type
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == resources
    assert args.ignored_resources == [] and args.ignored_resource_groups == []


def test_fit_args_camel_case_round_trip() -> None:
    raw = {
        "ignoredResources": ["example.com/aaa"],
        "ignoredResourceGroups": ["example.com"],
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "resources": [{"name": "cpu", "weight": 2}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
        },
    }
    args = NodeResourcesFitArgs.model_validate(raw)
    assert args.model_dump(by_alias=True) == raw


TOO_LONG = "longvalue" + "a" * 64
# content.RegexError writes "'MyName', " then " or " between examples: two spaces, as upstream.
LABEL_KEY_REGEX = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"ignoredResources": [TOO_LONG]},
            f'ignoredResources[0]: Invalid value: "{TOO_LONG}": name part must be no more than 63 bytes',
            id="IgnoredResources: too long value",
        ),
        pytest.param(
            {"ignoredResources": ["example.com/"]},
            '[ignoredResources[0]: Invalid value: "example.com/": name part must be non-empty, '
            'ignoredResources[0]: Invalid value: "example.com/": name part ' + LABEL_KEY_REGEX + "]",
            id="IgnoredResources: name is empty",
        ),
        pytest.param(
            {"ignoredResources": ["example.com/aaa/bbb"]},
            'ignoredResources[0]: Invalid value: "example.com/aaa/bbb": a valid label key '
            + LABEL_KEY_REGEX
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            id="IgnoredResources: name has too many slash",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/"]},
            "[ignoredResourceGroups[0]: Invalid value: \"example.com/\": resource group name can't contain '/', "
            'ignoredResourceGroups[0]: Invalid value: "example.com/": name part must be non-empty, '
            'ignoredResourceGroups[0]: Invalid value: "example.com/": name part ' + LABEL_KEY_REGEX + "]",
            id="IgnoredResourceGroups: illegal args",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["a" * 64]},
            f'ignoredResourceGroups[0]: Invalid value: "{"a" * 64}": name part must be no more than 63 bytes',
            id="IgnoredResourceGroups: name is too long",
        ),
        pytest.param(
            {"ignoredResourceGroups": ["example.com/aa"]},
            "ignoredResourceGroups[0]: Invalid value: \"example.com/aa\": resource group name can't contain '/'",
            id="IgnoredResourceGroups: name cannot be contain slash",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "Invalid"}},
            'scoringStrategy.type: Unsupported value: "Invalid": supported values: '
            '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
            id="ScoringStrategy: type is unsupported",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "<Most>\tAllocated"}},
            'scoringStrategy.type: Unsupported value: "<Most>\\tAllocated": supported values: '
            '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
            id="own: a string bad value is quoted with Go's %q (field/errors.go ErrorBody), not json.Marshal",
        ),
        pytest.param(
            {"scoringStrategy": {}},
            'scoringStrategy.type: Unsupported value: "": supported values: '
            '"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
            id="own: a strategy without type is not defaulted",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is "
            "RequestedToCapacityRatio",
            id="ScoringStrategy: requestedToCapacityRatio field is missing",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "LeastAllocated", "requestedToCapacityRatio": {"shape": SHAPE}}},
            "scoringStrategy.requestedToCapacityRatio: Forbidden: "
            "must be nil when type is not RequestedToCapacityRatio",
            id="own: shape given for another strategy",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "memory", "weight": -1}]}},
            "scoringStrategy.resources[0].weight: Invalid value: -1: "
            "resource weight of memory not in valid range (0, 100]",
            id="TestLeastAllocatedScoringStrategy: resource with negative weight",
        ),
        pytest.param(
            {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "memory"}, {"name": "cpu", "weight": 101}],
                }
            },
            "scoringStrategy.resources[1].weight: Invalid value: 101: "
            "resource weight of cpu not in valid range (0, 100]",
            id="TestMostAllocatedScoringStrategy: resource weight larger than MaxNodeScore",
        ),
        pytest.param(
            rtcr([]),
            "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified",
            id="RequestedToCapacityRatio: no shapes",
        ),
        pytest.param(
            rtcr(SHAPE, [{"name": "cpu", "weight": 101}]),
            "scoringStrategy.resources[0].weight: Invalid value: 101: "
            "resource weight of cpu not in valid range (0, 100]",
            id="RequestedToCapacityRatio: weight greater than max",
        ),
        pytest.param(
            rtcr([{"utilization": -1, "score": 1}, {"utilization": 100, "score": 3}]),
            "scoringStrategy.requestedToCapacityRatio.shape[0].utilization: Invalid value: -1: "
            "not in valid range [0, 100]",
            id="RequestedToCapacityRatio: utilization less than min",
        ),
        pytest.param(
            rtcr([{"utilization": 10, "score": 1}, {"utilization": 101, "score": 8}]),
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 101: "
            "not in valid range [0, 100]",
            id="RequestedToCapacityRatio: utilization greater than max",
        ),
        pytest.param(
            rtcr([{"utilization": 10, "score": 1}, {"utilization": 10, "score": 8}]),
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 10: "
            "values must be sorted in increasing order",
            id="RequestedToCapacityRatio: duplicated utilization values",
        ),
        pytest.param(
            rtcr([{"utilization": 10, "score": 1}, {"utilization": 20, "score": 8}, {"utilization": 15, "score": 2}]),
            "scoringStrategy.requestedToCapacityRatio.shape[2].utilization: Invalid value: 15: "
            "values must be sorted in increasing order",
            id="RequestedToCapacityRatio: non-increasing utilization values",
        ),
        pytest.param(
            rtcr([{"utilization": 10, "score": -1}]),
            "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: -1: not in valid range [0, 10]",
            id="RequestedToCapacityRatio: score less than min",
        ),
        pytest.param(
            rtcr([{"utilization": 10, "score": 11}]),
            "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]",
            id="RequestedToCapacityRatio: score greater than max",
        ),
        pytest.param(
            rtcr([{"utilization": 50, "score": 11}, {"utilization": 40, "score": 5}], [{"name": "cpu", "weight": 200}]),
            "[scoringStrategy.resources[0].weight: Invalid value: 200: "
            "resource weight of cpu not in valid range (0, 100], "
            "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 40: "
            "values must be sorted in increasing order, "
            "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]]",
            id="own: all errors aggregated in upstream order",
        ),
    ],
)
def test_fit_args_validation(raw: dict[str, Any], message: str) -> None:
    assert error_of(NodeResourcesFitArgs, raw) == message


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param({"ignoredResources": ["example.com"]}, id="IgnoredResources: valid args"),
        pytest.param({"ignoredResourceGroups": ["example.com"]}, id="IgnoredResourceGroups: valid args"),
        pytest.param(rtcr(SHAPE), id="RequestedToCapacityRatio: valid shapes"),
        pytest.param(
            rtcr([{"utilization": 10, "score": 1}, {"utilization": 20, "score": 2}, {"utilization": 30, "score": 3}]),
            id="RequestedToCapacityRatio: increasing utilization values",
        ),
        pytest.param(
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 100}]}},
            id="weight 100",
        ),
    ],
)
def test_fit_args_valid(raw: dict[str, Any]) -> None:
    NodeResourcesFitArgs.model_validate(raw)


def test_fit_args_reject_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="scoringStrategyy"):
        NodeResourcesFitArgs.model_validate({"scoringStrategyy": {}})


def test_balanced_allocation_defaults() -> None:
    assert [(r.name, r.weight) for r in NodeResourcesBalancedAllocationArgs().resources] == [("cpu", 1), ("memory", 1)]
    args = NodeResourcesBalancedAllocationArgs.model_validate(
        {"resources": [{"name": "cpu"}, {"name": "nvidia.com/gpu"}]}
    )
    assert args.resources == [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="nvidia.com/gpu", weight=1)]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}]},
            "resources[0].weight: Invalid value: 2: must be 1",
            id="invalid config",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]},
            'resources[1].name: Duplicate value: "cpu"',
            id="repeated resources",
        ),
        pytest.param(
            {"resources": [{"name": "cpu", "weight": 3}, {"name": "cpu", "weight": 1}]},
            '[resources[0].weight: Invalid value: 3: must be 1, resources[1].name: Duplicate value: "cpu"]',
            id="own: both errors",
        ),
    ],
)
def test_balanced_allocation_args_validation(raw: dict[str, Any], message: str) -> None:
    assert error_of(NodeResourcesBalancedAllocationArgs, raw) == message
