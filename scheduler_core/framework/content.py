"""Names, label keys and values, as ``k8s.io/apimachinery/pkg/api/validate/content`` v0.36.3.

The one copy of the content checks (``IsQualifiedName``, ``IsLabelValue``,
``IsDNS1123Subdomain``, ``IsDNS1123Label``; ``k8s.io/apimachinery/pkg/util/validation`` keeps the
same functions and messages under its older names). Each function returns upstream's messages
(empty when valid); the callers wrap them in :mod:`scheduler_core.framework.field` errors: the
label-selector parsers (:mod:`~scheduler_core.framework.labels`,
:mod:`~scheduler_core.framework.node_selector`), plugin args validation and
:mod:`scheduler_core.apivalidation`. They live in the framework, the bottom layer, because
plugins may import nothing else.
"""

from __future__ import annotations

import re

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_ERR = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_KEY = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)


def regex_error(msg: str, regex: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{regex}')"
    quoted = " or ".join(f"'{example}', " for example in examples)
    return f"{msg} (e.g. {quoted}regex used for validation is '{regex}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def _too_long(value: str, length: int) -> bool:
    return len(value) > length or len(value.encode()) > length


def dns1123_label(value: str) -> list[str]:
    errs = [max_len_error(63)] if _too_long(value, 63) else []
    if _DNS1123_LABEL.fullmatch(value) is None:
        if _DNS1123_SUBDOMAIN.fullmatch(value) is not None:
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_ERR, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def dns1123_subdomain(value: str) -> list[str]:
    errs = [max_len_error(253)] if _too_long(value, 253) else []
    if _DNS1123_SUBDOMAIN.fullmatch(value) is None:
        errs.append(regex_error(_DNS1123_SUBDOMAIN_ERR, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def qualified_name(value: str) -> list[str]:
    """``IsQualifiedName`` (label keys, taint keys, topology keys, scheduling gates)."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in dns1123_subdomain(prefix))
    else:
        example = regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a valid label key {example} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _too_long(name, 63):
        errs.append("name part " + max_len_error(63))
    if _LABEL_KEY.fullmatch(name) is None:
        errs.append("name part " + regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value(value: str) -> list[str]:
    errs = [max_len_error(63)] if _too_long(value, 63) else []
    if _LABEL_VALUE.fullmatch(value) is None:
        errs.append(regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs
