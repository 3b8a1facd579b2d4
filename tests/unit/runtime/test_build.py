"""Profile building rules (upstream runtime/framework.go NewFramework, v1/default_plugins.go)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.config import PluginRef, PluginSet, SchedulerProfileSpec
from scheduler_core.runtime.build import ProfileError, build_profile, merge_plugin_set
from scheduler_core.runtime.handle import FrameworkHandle
from tests.unit.runtime.fakes import Binder, OtherSort, ScorerArgs, Sort, make_plugin

A = make_plugin("A", points=("pre_filter", "filter", "score"))
B = make_plugin("B", points=("filter", "score"))
C = make_plugin("C", points=("score",), args_model=ScorerArgs)
REGISTRY: dict[str, Any] = {p.name: p for p in (Sort, OtherSort, Binder, A, B, C)}
DEFAULTS = PluginSet(
    enabled=[PluginRef(name="Sort"), PluginRef(name="A", weight=2), PluginRef(name="B"), PluginRef(name="Binder")]
)


def handle() -> FrameworkHandle:
    return FrameworkHandle("t", snapshot=lambda: None, api=None)  # type: ignore[arg-type, return-value]


def build(spec: dict[str, Any]) -> Any:
    return build_profile(SchedulerProfileSpec.model_validate(spec), REGISTRY, handle(), DEFAULTS)


def names(plugins: list[Any]) -> list[str]:
    return [p.name for p in plugins]


@pytest.mark.parametrize(
    ("spec", "point", "expected"),
    [
        pytest.param({}, "filter", ["A", "B"], id="defaults-expand-multipoint"),
        pytest.param({}, "pre_filter", ["A"], id="only-points-a-plugin-implements"),
        pytest.param(
            {"plugins": {"filter": {"disabled": [{"name": "A"}]}}}, "filter", ["B"], id="disable-one-at-a-point"
        ),
        pytest.param({"plugins": {"filter": {"disabled": [{"name": "*"}]}}}, "filter", [], id="star-disables-all"),
        pytest.param(
            {"plugins": {"filter": {"enabled": [{"name": "B"}]}}},
            "filter",
            ["B", "A"],
            id="explicit-point-enable-overrides-multipoint-order",
        ),
        pytest.param(
            {"plugins": {"multiPoint": {"disabled": [{"name": "B"}]}}}, "score", ["A"], id="multipoint-disable"
        ),
        pytest.param(
            {"plugins": {"multiPoint": {"enabled": [{"name": "C"}]}}},
            "score",
            ["A", "B", "C"],
            id="custom-multipoint-appended-after-defaults",
        ),
        pytest.param(
            {"plugins": {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "C", "weight": 4}]}}},
            "score",
            ["C"],
            id="replace-all-scorers",
        ),
    ],
)
def test_extension_point_resolution(spec: dict[str, Any], point: str, expected: list[str]) -> None:
    assert names(build(spec).points[point]) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param({}, {"A": 2, "B": 1}, id="multipoint-weight-and-default-1"),
        pytest.param(
            {"plugins": {"score": {"enabled": [{"name": "A", "weight": 7}]}}},
            {"A": 7, "B": 1},
            id="score-point-weight-wins",
        ),
        pytest.param(
            {"plugins": {"multiPoint": {"enabled": [{"name": "B", "weight": 5}]}}},
            {"A": 2, "B": 5},
            id="reconfigured-default-keeps-order-new-weight",
        ),
    ],
)
def test_score_weights(spec: dict[str, Any], expected: dict[str, int]) -> None:
    assert build(spec).score_weights == expected


def test_merge_plugin_set_replaces_in_place() -> None:
    merged = merge_plugin_set(DEFAULTS, PluginSet(enabled=[PluginRef(name="A", weight=9), PluginRef(name="C")]))
    assert [(p.name, p.weight) for p in merged.enabled] == [
        ("Sort", None),
        ("A", 9),
        ("B", None),
        ("Binder", None),
        ("C", None),
    ]


@pytest.mark.parametrize(
    ("spec", "path", "fragment"),
    [
        pytest.param(
            {"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}},
            "plugins.filter.enabled[0].name",
            "plugin 'Nope' does not exist",
            id="unknown-plugin",
        ),
        pytest.param(
            {"plugins": {"filter": {"enabled": [{"name": "C"}]}}},
            "plugins.filter.enabled[0].name",
            "does not extend filter",
            id="plugin-without-the-method",
        ),
        pytest.param(
            {"plugins": {"queueSort": {"enabled": [{"name": "OtherSort"}]}}},
            "plugins.queueSort",
            "only one queue sort plugin required",
            id="two-queue-sorts",
        ),
        pytest.param(
            {"plugins": {"bind": {"disabled": [{"name": "*"}]}}},
            "plugins.bind",
            "at least one bind plugin is needed",
            id="no-binder",
        ),
        pytest.param(
            {
                "plugins": {"multiPoint": {"enabled": [{"name": "C"}]}},
                "pluginConfig": [{"name": "C", "args": {"bonus": 500}}],
            },
            "pluginConfig[0].args.bonus",
            "plugin 'C': Input should be less than or equal to 100 (got 500)",
            id="args-out-of-range",
        ),
        pytest.param(
            {
                "plugins": {"multiPoint": {"enabled": [{"name": "C"}]}},
                "pluginConfig": [{"name": "C", "args": {"bonsu": 5}}],
            },
            "pluginConfig[0].args.bonsu",
            "unknown field",
            id="args-unknown-field",
        ),
        pytest.param(
            {"pluginConfig": [{"name": "A"}, {"name": "A"}]},
            "pluginConfig[1].name",
            "repeated config for plugin 'A'",
            id="repeated-config",
        ),
        pytest.param(
            {"pluginConfig": [{"name": "Zzz"}]},
            "pluginConfig[0].name",
            "plugin 'Zzz' does not exist",
            id="config-for-unknown-plugin",
        ),
        pytest.param(
            {"plugins": {"score": {"enabled": [{"name": "A", "weight": 2**62}]}}},
            "plugins.score",
            "could overflow",
            id="weight-overflow",
        ),
    ],
)
def test_invalid_profiles_name_field_and_reason(spec: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(ProfileError) as info:
        build(spec)
    assert any(p == path and fragment in reason for p, reason in info.value.problems), info.value.problems


def test_negative_weight_rejected_by_model() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        SchedulerProfileSpec.model_validate({"plugins": {"score": {"enabled": [{"name": "A", "weight": -1}]}}})


def test_args_are_validated_models() -> None:
    built = build(
        {"plugins": {"multiPoint": {"enabled": [{"name": "C"}]}}, "pluginConfig": [{"name": "C", "args": {"bonus": 3}}]}
    )
    assert built.plugins["C"].args == ScorerArgs(bonus=3)
