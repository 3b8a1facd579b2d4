"""Tolerant decoding: a PluginConfig nested 1,100 deep does not break the LIST of the others."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scheduler_core.tenancy import check_args_bounds
from scheduler_operator.io import decoding


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


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"x": NaN, "y": -Infinity}', id="nan-and-infinity"),
        pytest.param('{"s": "\\ud800"}', id="lone-surrogate"),
        pytest.param('{"a": [1, 2.5, "é", null, true, -9223372036854775808], "b": {}}', id="ordinary"),
    ],
)
def test_the_api_path_decodes_what_orjson_refuses_as_json_does(text: str) -> None:
    decoded = decoding.loads_api(text.encode())
    assert json.dumps(decoded, sort_keys=True) == json.dumps(json.loads(text), sort_keys=True)


def test_the_api_path_flattens_what_is_too_deep_for_both() -> None:
    assert decoding.loads_api(json.dumps({"ok": 1}).replace("1", deep_text(1100))) == decoding.loads(
        json.dumps({"ok": 1}).replace("1", deep_text(1100))
    )


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"metadata": {"name": "p", "uid": "u"}, "target": {"name": "n"}}, id="binding"),
        pytest.param({"weights": {1: "one"}}, id="non-string-keys-through-json"),
        pytest.param({"note": "réservé ✓", "t": (1, 2)}, id="unicode-and-tuple"),
    ],
)
def test_dumps_writes_what_json_would_read_back(value: dict[str, Any]) -> None:
    assert json.loads(decoding.dumps(value)) == json.loads(json.dumps(value))
