"""The wire format as Go reads it, and profile validation as upstream ValidateExtenders."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.extender import ExtenderConfigError, build_extenders, validate_extenders, wire
from scheduler_core.extender.client import parse_duration

LABEL_KEY_REGEX = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"", "EOF", id="empty-body"),
        pytest.param(b"  \n", "EOF", id="blank-body"),
        pytest.param(b"<html>", "invalid character '<' looking for beginning of value", id="html"),
        pytest.param(b"garbage", "invalid character 'g' looking for beginning of value", id="garbage"),
        pytest.param(b'{"NodeNames": [', "unexpected EOF", id="truncated"),
    ],
)
def test_undecodable_bodies_give_go_json_errors(body: bytes, message: str) -> None:
    with pytest.raises(wire.DecodeError) as info:
        wire.decode(body)
    assert str(info.value) == message


def test_the_first_value_is_read_and_trailing_bytes_ignored_as_json_decoder_does() -> None:
    assert wire.decode(b'{"Error": ""} trailing') == {"Error": ""}


def test_keys_match_case_insensitively_exact_first() -> None:
    result = wire.FilterResult({"nodenames": ["a"], "failedNodes": {"b": "no"}, "error": ""})
    assert result.node_names == ["a"] and result.failed == {"b": "no"}
    assert wire.field({"Score": 1, "score": 2}, "Score") == 1


def test_a_wrong_type_is_gos_unmarshal_error() -> None:
    with pytest.raises(wire.DecodeError) as info:
        wire.FilterResult({"NodeNames": "a"})
    assert str(info.value) == (
        "json: cannot unmarshal string into Go struct field ExtenderFilterResult.NodeNames of type []string"
    )


def test_args_use_go_field_names_and_null_for_the_mode_not_used() -> None:
    # extender/v1 types.go has no json tags: encoding/json writes the Go names, nil as null.
    pod = {"metadata": {"name": "p"}}
    node = {"metadata": {"name": "n1"}}
    assert wire.extender_args(pod, [node], names_only=True) == {"Pod": pod, "Nodes": None, "NodeNames": ["n1"]}
    assert wire.extender_args(pod, [node], names_only=False) == {
        "Pod": pod,
        "Nodes": {"metadata": {}, "items": [node]},
        "NodeNames": None,
    }
    assert wire.binding_args(name="p", namespace="ns", uid="u", node="n1") == {
        "PodName": "p",
        "PodNamespace": "ns",
        "PodUID": "u",
        "Node": "n1",
    }


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("5s", 5.0, id="seconds"),
        pytest.param("250ms", 0.25, id="milliseconds"),
        pytest.param("1m30s", 90.0, id="compound"),
        pytest.param("0", 0.0, id="zero"),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def _spec(*extenders: dict[str, Any]) -> SchedulerProfileSpec:
    return SchedulerProfileSpec.model_validate({"extenders": list(extenders)})


# Messages: pkg/scheduler/apis/config/validation/validation.go validateExtenders (v1.36.3).
@pytest.mark.parametrize(
    ("extenders", "problems"),
    [
        pytest.param(
            [{"urlPrefix": "http://e", "prioritizeVerb": "p"}],
            [("extenders[0].weight", "Invalid value: 0: must have a positive weight applied to it")],
            id="prioritizer-without-weight",
        ),
        pytest.param(
            [{"urlPrefix": "http://e", "prioritizeVerb": "p", "weight": -2}],
            [("extenders[0].weight", "Invalid value: -2: must have a positive weight applied to it")],
            id="negative-weight",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "bindVerb": "b"}, {"urlPrefix": "http://b", "bindVerb": "b"}],
            [
                (
                    "extenders",
                    'Invalid value: "found 2 extenders implementing bind": only one extender can implement bind',
                )
            ],
            id="two-binders",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "managedResources": [{"name": "cpu"}]}],
            [("extenders[0].managedResources[0].name", 'Invalid value: "cpu": is an invalid extended resource name')],
            id="native-resource-managed",
        ),
        # IsQualifiedName is content.IsLabelKey in v1.36.3 (apimachinery util/validation): its
        # messages, every one that applies.
        pytest.param(
            [{"urlPrefix": "http://a", "managedResources": [{"name": "example.com/"}]}],
            [
                ("extenders[0].managedResources[0].name", 'Invalid value: "example.com/": name part must be non-empty'),
                (
                    "extenders[0].managedResources[0].name",
                    f'Invalid value: "example.com/": name part {LABEL_KEY_REGEX}',
                ),
            ],
            id="managed-resource-without-name",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "managedResources": [{"name": "a/b/c"}]}],
            [
                (
                    "extenders[0].managedResources[0].name",
                    f'Invalid value: "a/b/c": a valid label key {LABEL_KEY_REGEX} with an optional DNS subdomain '
                    "prefix and '/' (e.g. 'example.com/MyName')",
                )
            ],
            id="managed-resource-of-three-parts",
        ),
        pytest.param(
            [
                {"urlPrefix": "http://a", "managedResources": [{"name": "example.com/gpu"}]},
                {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/gpu"}]},
            ],
            [
                (
                    "extenders[1].managedResources[0].name",
                    'Invalid value: "example.com/gpu": duplicate extender managed resource name',
                )
            ],
            id="resource-managed-twice",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "tlsConfig": {"insecure": True, "caData": "Zm9v"}}],
            [("extenders[0].tlsConfig", "specifying a root certificates file with the insecure flag is not allowed")],
            id="insecure-with-ca",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "httpTimeout": "soon"}],
            [("extenders[0].httpTimeout", 'time: invalid duration "soon"')],
            id="bad-timeout",
        ),
        pytest.param(
            [{"urlPrefix": "ftp://a"}],
            [("extenders[0].urlPrefix", 'Invalid value: "ftp://a": must be an http:// or https:// URL')],
            id="not-http",
        ),
        pytest.param(
            [{"urlPrefix": "http://a", "prioritizeVerb": "p", "weight": 1, "bindVerb": "b", "filterVerb": "f"}],
            [],
            id="valid",
        ),
    ],
)
def test_validate_extenders(extenders: list[dict[str, Any]], problems: list[tuple[str, str]]) -> None:
    assert validate_extenders(_spec(*extenders).extenders) == problems


def test_ignorable_extenders_are_called_last_as_build_extenders_orders_them() -> None:
    spec = _spec({"urlPrefix": "http://a", "ignorable": True}, {"urlPrefix": "http://b"}, {"urlPrefix": "http://c"})
    built, _ = build_extenders(spec)
    assert [e.name for e in built] == ["http://b", "http://c", "http://a"]


def test_resources_ignored_by_scheduler_replace_node_resources_fit_ignored_resources() -> None:
    spec = SchedulerProfileSpec.model_validate(
        {
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": ["other.io/x"]}}],
            "extenders": [
                {
                    "urlPrefix": "http://a",
                    "managedResources": [
                        {"name": "example.com/gpu", "ignoredByScheduler": True},
                        {"name": "example.com/fpga"},
                    ],
                }
            ],
        }
    )
    _, merged = build_extenders(spec)
    (entry,) = merged.plugin_config
    assert entry.args == {"ignoredResources": ["example.com/gpu"]}  # scheduler.go buildExtenders: replaced
    assert spec.plugin_config[0].args == {"ignoredResources": ["other.io/x"]}  # the input is untouched


def test_invalid_extenders_raise_with_every_problem() -> None:
    with pytest.raises(ExtenderConfigError) as info:
        build_extenders(_spec({"urlPrefix": "http://a", "prioritizeVerb": "p"}, {"urlPrefix": "x"}))
    assert [p for p, _ in info.value.problems] == ["extenders[0].weight", "extenders[1].urlPrefix"]
