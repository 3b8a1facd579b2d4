"""``field.Error`` prints as apimachinery's (``pkg/util/validation/field/errors.go`` v0.36.3),
and never embeds a whole hostile value."""

from __future__ import annotations

import pytest

from scheduler_core.framework import field


@pytest.mark.parametrize(
    ("error", "text"),
    [
        pytest.param(field.required("spec.containers", ""), "spec.containers: Required value", id="required"),
        pytest.param(
            field.required("spec.topologyKey", "can not be empty"),
            "spec.topologyKey: Required value: can not be empty", id="required-detail",
        ),
        pytest.param(field.invalid("spec.maxSkew", 0, "must be greater than zero"),
                     "spec.maxSkew: Invalid value: 0: must be greater than zero", id="invalid-int"),
        pytest.param(field.invalid("x", "a\"b\n", "d"), 'x: Invalid value: "a\\"b\\n": d',
                     id="invalid-string-go-quoted"),
        pytest.param(field.invalid("x", True, "d"), "x: Invalid value: true: d", id="invalid-bool"),
        pytest.param(field.invalid("x", 1.5, "d"), "x: Invalid value: 1.5: d", id="invalid-float"),
        pytest.param(field.invalid("x", {"b": 1, "a": [None]}, "d"), 'x: Invalid value: {"a":[null],"b":1}: d',
                     id="invalid-object-json"),
        pytest.param(field.not_supported("spec.effect", "Never", ["NoSchedule", "NoExecute"]),
                     'spec.effect: Unsupported value: "Never": supported values: "NoSchedule", "NoExecute"',
                     id="not-supported"),
        pytest.param(field.forbidden("spec.nodeName", "cannot be set"), "spec.nodeName: Forbidden: cannot be set",
                     id="forbidden"),
        pytest.param(field.duplicate("spec.containers[1].name", "c"), 'spec.containers[1].name: Duplicate value: "c"',
                     id="duplicate"),
        pytest.param(field.too_long("x", 63), "x: Too long: may not be more than 63 bytes", id="too-long"),
        pytest.param(field.too_many("x", 5, 1), "x: Too many: 5: must have at most 1 item", id="too-many"),
        pytest.param(field.too_many("x", -1, 3), "x: Too many: must have at most 3 items", id="too-many-omitted"),
    ],
)  # fmt: skip
def test_error_text_is_upstreams(error: field.Error, text: str) -> None:
    assert str(error) == text


def test_paths_print_as_field_path() -> None:
    path = field.key(field.child(field.index(field.child("spec", "containers"), 0), "resources", "limits"), "cpu")
    assert path == "spec.containers[0].resources.limits[cpu]"


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("x" * 1_000_000, id="long-string"),
        pytest.param(list(range(1_000_000)), id="long-list"),
        pytest.param({"k": [[[[["v" * 10_000]]]]] * 10_000}, id="wide-nested"),
        pytest.param(10**4000, id="huge-int"),
    ],
)
def test_rendered_values_are_bounded(value: object) -> None:
    text = str(field.invalid("x", value, "d"))
    assert len(text) < field.MAX_VALUE_CHARS + 100
    assert field.TRUNCATED in text or "too large" in text


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        pytest.param('a"b\\c', '"a\\"b\\\\c"', id="quote-backslash"),
        pytest.param("\a\b\f\n\r\t\v", '"\\a\\b\\f\\n\\r\\t\\v"', id="short-escapes"),
        pytest.param("\x00\x1f\x7f", '"\\x00\\x1f\\x7f"', id="other-control-bytes"),
        pytest.param("é\u00a0\U000e0001", '"é\\u00a0\\U000e0001"', id="unicode"),
    ],
)
def test_go_quote_is_strconv_quote(text: str, quoted: str) -> None:
    # Go's strconv.Quote (appendEscapedRune): \a \b \f \n \r \t \v short forms, \x below
    # utf8.RuneSelf, \u / \U for other unprintable runes.
    assert field.go_quote(text) == quoted


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(field.go_json("Never"), '"Never"', id="json-named-string"),
        pytest.param(field.go_json(["a<b", "c&d>"]), '["a\\u003cb","c\\u0026d\\u003e"]', id="json-html-escaped"),
        pytest.param(field.go_json(None), "null", id="json-nil-slice"),
        pytest.param(field.go_string_slice(["a", "b"]), '[]string{"a", "b"}', id="go-syntax-slice"),
        pytest.param(field.go_string_slice(None), "[]string(nil)", id="go-syntax-nil"),
    ],
)
def test_printed_values_render_verbatim(value: field.Printed, text: str) -> None:
    assert str(field.invalid("x", value, "d")) == f"x: Invalid value: {text}: d"


def test_printed_values_are_bounded() -> None:
    text = str(field.invalid("x", field.go_string_slice(["v"] * 100_000), "d"))
    assert len(text) < field.MAX_VALUE_CHARS + 100
    assert field.TRUNCATED in text


@pytest.mark.parametrize(
    ("errors", "text"),
    [
        pytest.param([field.required("a", "")], "a: Required value", id="one-bare"),
        pytest.param(
            [field.required("a", ""), "b: Forbidden: no", field.required("a", "")],
            "[a: Required value, b: Forbidden: no]",
            id="several-bracketed-duplicates-dropped",
        ),
    ],
)
def test_aggregate_is_util_errors(errors: list[field.Error | str], text: str) -> None:
    # k8s.io/apimachinery/pkg/util/errors/errors.go (aggregate.Error): deduplicated messages.
    assert field.aggregate(errors) == text
