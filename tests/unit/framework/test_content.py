"""The one copy of the content checks returns upstream's messages
(``k8s.io/apimachinery/pkg/api/validate/content`` v0.36.3: ``dns.go``, ``kube.go``, ``errors.go``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler_core.framework import content

LABEL_KEY_REGEX = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


@pytest.mark.parametrize(
    ("check", "value", "messages"),
    [
        pytest.param(content.qualified_name, "example.com/MyName", [], id="key-valid"),
        pytest.param(content.qualified_name, "/x", ["prefix part must be non-empty"], id="key-empty-prefix"),
        pytest.param(
            content.qualified_name,
            "a/b/c",
            [
                f"a valid label key {LABEL_KEY_REGEX} with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"
            ],
            id="key-two-slashes",
        ),
        pytest.param(
            content.qualified_name,
            "x" * 64,
            ["name part must be no more than 63 bytes"],
            id="key-name-too-long",
        ),
        pytest.param(content.qualified_name, "a b", [f"name part {LABEL_KEY_REGEX}"], id="key-bad-name"),
        pytest.param(content.label_value, "", [], id="value-empty-is-valid"),
        pytest.param(content.label_value, "x" * 64, ["must be no more than 63 bytes"], id="value-too-long"),
        pytest.param(content.dns1123_label, "a.b", ["must not contain dots"], id="dns-label-dots"),
        pytest.param(content.dns1123_subdomain, "a.b", [], id="dns-subdomain-dots"),
    ],
)
def test_content_messages_are_upstreams(check: Callable[[str], list[str]], value: str, messages: list[str]) -> None:
    assert check(value) == messages
