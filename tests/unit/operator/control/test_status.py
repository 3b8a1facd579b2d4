"""Status of SchedulerProfiles and PluginConfigs: shape, transitions, and when a write is needed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler_operator.control.status import merge_patch, needs_write, plugin_config_status, profile_status

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = datetime(2026, 1, 2, 3, 9, 0, tzinfo=UTC)
T1S = "2026-01-02T03:09:00Z"
T2 = datetime(2026, 1, 2, 3, 12, 0, tzinfo=UTC)
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
            {
                "Valid": ("True", "Valid", ""),
                "Ready": ("True", "Serving", "serving generation 2"),
                "Stalled": ("False", "Valid", ""),
            },
            "generation 2 is serving", id="valid",
        ),
        pytest.param(
            ["spec.pluginConfig[0].args: bad"], 1,
            {
                "Valid": ("False", "InvalidProfile", "spec.pluginConfig[0].args: bad"),
                "Ready": (
                    "False", "SpecRejected",
                    "generation 2 refused, the last good generation 1 keeps serving: spec.pluginConfig[0].args: bad",
                ),
                "Stalled": (
                    "True", "SpecRejected",
                    "generation 2 refused, the last good generation 1 keeps serving: spec.pluginConfig[0].args: bad",
                ),
            },
            "spec.pluginConfig[0].args: bad", id="invalid-keeps-last-good",
        ),
        pytest.param(
            ["a: x", "b: y"], None,
            {
                "Valid": ("False", "InvalidProfile", "a: x; b: y"),
                "Ready": (
                    "False", "SpecRejected",
                    "generation 2 refused, no generation of this profile ever served: its pods wait: a: x; b: y",
                ),
                "Stalled": (
                    "True", "SpecRejected",
                    "generation 2 refused, no generation of this profile ever served: its pods wait: a: x; b: y",
                ),
            },
            "a: x; b: y", id="never-valid-is-stalled",
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


def test_a_generation_refused_for_a_new_plugin_config_keeps_its_earlier_build() -> None:
    status = profile_status(
        generation=3, problems=["PluginConfig ns/fit: spec.args: bad"], serving_generation=3, plugins=PLUGINS,
        previous=None, now=T0,
    )  # fmt: skip

    assert _conditions(status)["Ready"] == (
        "False", "SpecRejected",
        "generation 3 refused, generation 3 as last built (with the PluginConfigs then) keeps serving: "
        "PluginConfig ns/fit: spec.args: bad",
    )  # fmt: skip


def test_transition_time_changes_only_with_the_condition_status() -> None:
    first = profile_status(generation=1, problems=[], serving_generation=1, plugins=PLUGINS, previous=None, now=T0)
    second = profile_status(
        generation=2, problems=["x: y"], serving_generation=1, plugins=PLUGINS, previous=first, now=T1
    )

    times = {c["type"]: c["lastTransitionTime"] for c in second["conditions"]}
    # Ready and Stalled turned with Valid; a refused spec is not Ready, whoever still serves.
    assert times == {"Valid": T1S, "Ready": T1S, "Stalled": T1S}
    third = profile_status(
        generation=3, problems=["x: z"], serving_generation=1, plugins=PLUGINS, previous=second, now=T2
    )
    assert {c["type"]: c["lastTransitionTime"] for c in third["conditions"]} == times


@pytest.mark.parametrize(
    ("problems", "unknown", "refusals", "expected", "message"),
    [
        pytest.param([], False, [], {"Valid": ("True", "Valid"), "Ready": ("True", "Applied"),
                                     "Stalled": ("False", "Applied")},
                     "applies to profiles: a, b", id="valid"),
        pytest.param(["spec.args: bad"], False, [], {"Valid": ("False", "InvalidArgs"),
                                                     "Ready": ("False", "InvalidArgs"),
                                                     "Stalled": ("True", "InvalidArgs")},
                     "spec.args: bad", id="bad-args"),
        pytest.param(["spec.plugin: no"], True, [], {"Valid": ("False", "UnknownPlugin"),
                                                     "Ready": ("False", "UnknownPlugin"),
                                                     "Stalled": ("True", "UnknownPlugin")},
                     "spec.plugin: no", id="unknown"),
        pytest.param([], False, ["team/a: spec.args: tenant policy rule 'args': too big"],
                     {"Valid": ("True", "Valid"), "Ready": ("False", "RefusedByProfile"),
                      "Stalled": ("True", "RefusedByProfile")},
                     "refused by profile team/a: spec.args: tenant policy rule 'args': too big",
                     id="refused-by-profile"),
    ],
)  # fmt: skip
def test_plugin_config_status(
    problems: list[str], unknown: bool, refusals: list[str], expected: dict[str, tuple[str, str]], message: str
) -> None:
    status = plugin_config_status(
        generation=4, problems=problems, unknown_plugin=unknown, profiles=["a", "b"], refusals=refusals,
        previous=None, now=T0,
    )  # fmt: skip

    assert {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]} == expected
    assert status["message"] == message
    assert status["observedGeneration"] == 4
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["message"] == ("" if ready["status"] == "True" else message)


def test_an_unused_plugin_config_says_so() -> None:
    status = plugin_config_status(generation=1, problems=[], unknown_plugin=False, profiles=[], previous=None, now=T0)
    assert status["message"] == "no profile of this namespace selects it"


def test_a_status_differing_only_in_times_needs_no_write() -> None:
    written = profile_status(generation=1, problems=[], serving_generation=1, plugins=PLUGINS, previous=None, now=T0)
    again = profile_status(generation=1, problems=[], serving_generation=1, plugins=PLUGINS, previous=None, now=T1)
    emptied = [{**c, "message": None} if c["type"] in ("Valid", "Stalled") else c for c in written["conditions"]]
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
