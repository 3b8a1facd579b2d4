"""PodTopologySpreadArgs: v1 defaults and ``ValidatePodTopologySpreadArgs`` messages.

Cases follow upstream ``pkg/scheduler/apis/config/validation/validation_pluginargs_test.go``
(``TestValidatePodTopologySpreadArgs``, which checks error types and fields); the full
messages were printed by v1.36.3's ``ValidatePodTopologySpreadArgs(nil, &args)``.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from pydantic import ValidationError

from scheduler_core.framework import Handle
from scheduler_core.plugins.podtopologyspread import PodTopologySpread, PodTopologySpreadArgs
from scheduler_core.plugins.podtopologyspread.common import SYSTEM_DEFAULT_CONSTRAINTS


def c(max_skew: int, key: str, when: str, **extra: Any) -> dict[str, Any]:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}


LIST = "List"
LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(
            {
                "defaultingType": LIST,
                "defaultConstraints": [c(1, "node", "DoNotSchedule"), c(2, "zone", "ScheduleAnyway")],
            },
            id="valid config",
        ),
        pytest.param({"defaultingType": LIST}, id="list default constraints, no constraints"),
        pytest.param({"defaultingType": "System"}, id="system default constraints"),
        pytest.param({}, id="defaults"),
    ],
)
def test_valid(raw: dict[str, Any]) -> None:
    PodTopologySpreadArgs.model_validate(raw)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param(
            {"defaultingType": LIST, "defaultConstraints": [c(-1, "node", "DoNotSchedule")]},
            "defaultConstraints[0].maxSkew: Invalid value: -1: not in valid range (0, inf)",
            id="maxSkew less than zero",
        ),
        pytest.param(
            {"defaultingType": LIST, "defaultConstraints": [c(1, "", "DoNotSchedule")]},
            "defaultConstraints[0].topologyKey: Required value: can not be empty",
            id="empty topology key",
        ),
        pytest.param(
            {"defaultingType": LIST, "defaultConstraints": [c(1, "node", "")]},
            "defaultConstraints[0].whenUnsatisfiable: Required value: can not be empty",
            id="whenUnsatisfiable is empty",
        ),
        pytest.param(
            {"defaultingType": LIST, "defaultConstraints": [c(1, "node", "unknown action")]},
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "unknown action": '
            'supported values: "DoNotSchedule", "ScheduleAnyway"',
            id="whenUnsatisfiable contains unsupported action",
        ),
        pytest.param(
            {
                "defaultingType": LIST,
                "defaultConstraints": [c(1, "node", "DoNotSchedule"), c(2, "node", "DoNotSchedule")],
            },
            'defaultConstraints[1]: Duplicate value: "{node, DoNotSchedule}"',
            id="duplicated constraints",
        ),
        pytest.param(
            {
                "defaultingType": LIST,
                "defaultConstraints": [c(1, "key", "DoNotSchedule", labelSelector={"matchLabels": {"a": "b"}})],
            },
            "defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, "
            "as they deduced for each pod",
            id="label selector present",
        ),
        pytest.param(
            {"defaultingType": "unknown"},
            'defaultingType: Unsupported value: "unknown": supported values: "System", "List"',
            id="wrong constraints",
        ),
        pytest.param(
            {"defaultingType": "<&>"},
            'defaultingType: Unsupported value: "\\u003c\\u0026\\u003e": supported values: "System", "List"',
            id="bad values are rendered as JSON",
        ),
        pytest.param(
            {"defaultingType": "System", "defaultConstraints": [c(1, "key", "DoNotSchedule")]},
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
            id="system default constraints, but has constraints",
        ),
        pytest.param(
            {"defaultConstraints": [c(1, "key", "DoNotSchedule")]},
            'defaultingType: Invalid value: "System": when .defaultConstraints are not empty',
            id="an empty defaultingType is System",
        ),
        pytest.param(
            {"defaultingType": LIST, "defaultConstraints": [c(1, "example.com/", "ScheduleAnyway")]},
            '[defaultConstraints[0].topologyKey: Invalid value: "example.com/": name part must be non-empty, '
            f'defaultConstraints[0].topologyKey: Invalid value: "example.com/": name part {LABEL_KEY_MSG}]',
            id="one error per label-key message",
        ),
        pytest.param(
            {
                "defaultingType": LIST,
                "defaultConstraints": [
                    c(0, "a/b/c", "<x>"),
                    c(1, "-bad-", "ScheduleAnyway"),
                    c(1, "-bad-", "ScheduleAnyway"),
                ],
            },
            "[defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf), "
            f'defaultConstraints[0].topologyKey: Invalid value: "a/b/c": a valid label key {LABEL_KEY_MSG} '
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName'), "
            'defaultConstraints[0].whenUnsatisfiable: Unsupported value: "\\u003cx\\u003e": '
            'supported values: "DoNotSchedule", "ScheduleAnyway", '
            f'defaultConstraints[1].topologyKey: Invalid value: "-bad-": name part {LABEL_KEY_MSG}, '
            f'defaultConstraints[2].topologyKey: Invalid value: "-bad-": name part {LABEL_KEY_MSG}, '
            'defaultConstraints[2]: Duplicate value: "{-bad-, ScheduleAnyway}"]',
            id="several errors are aggregated in order",
        ),
    ],
)
def test_invalid(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        PodTopologySpreadArgs.model_validate(raw)
    (error,) = info.value.errors()
    assert error["msg"] == f"Value error, {message}"


def test_defaults_and_yaml_names() -> None:
    args = PodTopologySpreadArgs.model_validate(
        {"defaultingType": LIST, "defaultConstraints": [c(1, "zone", "ScheduleAnyway", minDomains=2)]}
    )
    assert args.defaulting_type == LIST
    assert args.default_constraints[0].as_manifest() == c(1, "zone", "ScheduleAnyway", minDomains=2)
    assert PodTopologySpreadArgs().defaulting_type == "System"
    assert PodTopologySpreadArgs.model_validate({"defaultingType": ""}).defaulting_type == "System"
    with pytest.raises(ValidationError):
        PodTopologySpreadArgs.model_validate({"defaultConstraint": []})


def test_system_default_constraints() -> None:
    """plugin.go systemDefaultConstraints, in upstream's order."""
    assert [dict(x) for x in SYSTEM_DEFAULT_CONSTRAINTS] == [
        c(3, "kubernetes.io/hostname", "ScheduleAnyway"),
        c(5, "topology.kubernetes.io/zone", "ScheduleAnyway"),
    ]
    plugin = PodTopologySpread(PodTopologySpreadArgs(), cast(Handle, None))
    assert plugin.name == "PodTopologySpread"
    assert plugin.args_model is PodTopologySpreadArgs
