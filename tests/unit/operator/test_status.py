"""Status of SchedulerProfiles and PluginConfigs: shape, transitions, and when a write is needed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler_operator.status import merge_patch, needs_write, plugin_config_status, profile_status

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = datetime(2026, 1, 2, 3, 9, 0, tzinfo=UTC)
PLUGINS: dict[str, list[dict[str, object]]] = {
    "score": [{"name": "NodeResourcesFit", "weight": 1}],
    "bind": [{"name": "DefaultBinder"}],
}


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}


@pytest.mark.parametrize(
    ("problems", "serving", "expected", "message"),
    [
        pytest.param(
            [], 2,
            {"Valid": ("True", "Valid", ""), "Ready": ("True", "Serving", "serving generation 2")},
            "generation 2 is serving", id="valid",
        ),
        pytest.param(
            ["spec.pluginConfig[0].args: bad"], 1,
            {
                "Valid": ("False", "InvalidProfile", "spec.pluginConfig[0].args: bad"),
                "Ready": ("True", "Serving", "serving the last valid build (generation 1)"),
            },
            "spec.pluginConfig[0].args: bad", id="invalid-keeps-last-good",
        ),
        pytest.param(
            ["a: x", "b: y"], None,
            {
                "Valid": ("False", "InvalidProfile", "a: x; b: y"),
                "Ready": ("False", "NotServing", "no valid generation of this profile was ever served"),
            },
            "a: x; b: y", id="never-valid",
        ),
    ],
)  # fmt: skip
def test_profile_status(
    problems: list[str], serving: int | None, expected: dict[str, tuple[str, str, str]], message: str
) -> None:
    status = profile_status(
        generation=2, problems=problems, serving_generation=serving, plugins=PLUGINS, previous=None, now=T0
    )

    assert _conditions(status) == expected
    assert status["observedGeneration"] == 2
    assert status["message"] == message
    assert status["plugins"] == (PLUGINS if serving is not None else None)
    assert {c["observedGeneration"] for c in status["conditions"]} == {2}


def test_transition_time_changes_only_with_the_condition_status() -> None:
    first = profile_status(generation=1, problems=[], serving_generation=1, plugins=PLUGINS, previous=None, now=T0)
    second = profile_status(
        generation=2, problems=["x: y"], serving_generation=1, plugins=PLUGINS, previous=first, now=T1
    )

    times = {c["type"]: c["lastTransitionTime"] for c in second["conditions"]}
    assert times == {"Valid": "2026-01-02T03:09:00Z", "Ready": "2026-01-02T03:04:05Z"}


@pytest.mark.parametrize(
    ("problems", "unknown", "profiles", "expected", "message"),
    [
        pytest.param([], False, ["a", "b"], ("True", "Valid"), "applies to profiles: a, b", id="valid"),
        pytest.param([], False, [], ("True", "Valid"), "no profile of this namespace selects it", id="unused"),
        pytest.param(["spec.args: bad"], False, ["a"], ("False", "InvalidArgs"), "spec.args: bad", id="bad-args"),
        pytest.param(["spec.plugin: no"], True, [], ("False", "UnknownPlugin"), "spec.plugin: no", id="unknown"),
    ],
)
def test_plugin_config_status(
    problems: list[str], unknown: bool, profiles: list[str], expected: tuple[str, str], message: str
) -> None:
    status = plugin_config_status(
        generation=4, problems=problems, unknown_plugin=unknown, profiles=profiles, previous=None, now=T0
    )

    (valid,) = status["conditions"]
    assert (valid["type"], valid["status"], valid["reason"]) == ("Valid", *expected)
    assert status["message"] == message
    assert status["observedGeneration"] == 4


def test_a_status_differing_only_in_times_needs_no_write() -> None:
    written = profile_status(generation=1, problems=[], serving_generation=1, plugins=PLUGINS, previous=None, now=T0)
    again = profile_status(generation=1, problems=[], serving_generation=1, plugins=PLUGINS, previous=None, now=T1)
    emptied = [{**c, "message": None} if c["type"] == "Valid" else c for c in written["conditions"]]
    read_back = {**written, "kopf": {"progress": {}}, "conditions": emptied}
    newer = profile_status(generation=2, problems=[], serving_generation=2, plugins=PLUGINS, previous=None, now=T0)

    assert not needs_write(written, again)
    assert not needs_write(read_back, again)  # the server drops nothing we compare; empty equals unset
    assert needs_write(written, newer)
    assert needs_write(None, written)


def test_merge_patch_nulls_extension_points_no_longer_served() -> None:
    current = {"plugins": {"score": [{"name": "A", "weight": 1}], "permit": [{"name": "P"}]}}
    desired = {"plugins": {"score": [{"name": "B", "weight": 2}]}, "message": "m"}

    assert merge_patch(current, desired) == {
        "plugins": {"permit": None, "score": [{"name": "B", "weight": 2}]},
        "message": "m",
    }
    assert merge_patch(None, desired) == desired
