"""Tolerant decoding: a PluginConfig nested 1,100 deep does not break the LIST of the others."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler_core.tenancy import check_args_bounds
from scheduler_operator import decoding


def deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


def config(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "team-a"}, "spec": {"plugin": "Custom", "args": args}}


def deep_text(levels: int) -> str:
    """JSON text nested ``levels`` deep, written without recursing."""
    return '{"a":' * levels + "{}" + "}" * levels


def test_a_list_with_one_object_too_deep_decodes_every_object() -> None:
    items = [config("before", {"x": 1}), "DEEP", config("after", {"y": "]}[{"})]
    text = json.dumps({"kind": "PluginConfigList", "items": items}).replace(
        '"DEEP"', json.dumps(config("deep", {})).replace('"args": {}', '"args": ' + deep_text(1100))
    )
    with pytest.raises(RecursionError):
        json.loads(text)

    listed = decoding.loads(text)

    names = [item["metadata"]["name"] for item in listed["items"]]
    assert names == ["before", "deep", "after"]
    assert listed["items"][2]["spec"]["args"] == {"y": "]}[{"}  # brackets inside strings are not counted
    args = listed["items"][1]["spec"]["args"]
    assert check_args_bounds(args, "spec.args") == [("spec.args" + ".a" * 17, "nested deeper than 16 levels")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param('{"a": [1, {"b": "x"}]}', '{"a": [1, "' + decoding.TOO_DEEP + '"]}', id="object-in-list"),
        pytest.param('[[["\\"[", 2]]]', '[["' + decoding.TOO_DEEP + '"]]', id="escaped-quote-and-bracket"),
        pytest.param('{"a": 1}', '{"a": 1}', id="shallow"),
    ],
)
def test_flatten_replaces_values_past_the_depth(text: str, expected: str) -> None:
    assert decoding.flatten_too_deep(text, max_depth=2) == expected


def test_kopf_decodes_tolerantly_once_installed() -> None:
    from kopf._cogs.clients import api

    decoding.install_in_kopf()
    decoding.install_in_kopf()  # idempotent

    assert api.json.loads(deep_text(1100))  # type: ignore[attr-defined]
    assert api.get.__module__ == decoding.__name__
