"""Label-selector validation with the messages of the Kubernetes API machinery.

Node selector terms are parsed as upstream parses them (``labels.NewRequirement``); a term
that fails to parse selects nothing, PreScore reports a broken preferred term as an Error,
and args validation rejects bad ``addedAffinity`` with the same messages. They reproduce:

- ``k8s.io/apimachinery/pkg/api/validate/content`` (``IsLabelKey``, ``IsLabelValue``,
  ``IsDNS1123Subdomain``, ``RegexError``, ``MaxLenError``);
- ``k8s.io/apimachinery/pkg/util/validation/field`` (paths, and ``Error.Error``:
  ``path: Invalid value: "bad": detail``);
- ``k8s.io/apimachinery/pkg/util/errors`` (an aggregate of several errors is ``[a, b]``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# -- field paths and errors (field/path.go, field/errors.go) ----------------------------


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int | str) -> str:
    return f"{path}[{i}]"


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def go_string_slice(values: Sequence[str] | None) -> str:
    """Go's ``%#v`` of a ``[]string`` (``nil`` when the field was absent)."""
    if values is None:
        return "[]string(nil)"
    return "[]string{" + ", ".join(go_quote(v) for v in values) + "}"


def go_value(value: object) -> str:
    """A bad value as ``field.Error.ErrorBody`` prints it (apimachinery v0.36.3
    ``util/validation/field/errors.go``): numbers plain, strings with Go's ``%q``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    return str(value)


def invalid(path: str, bad_value: str, detail: str) -> str:
    """``field.Invalid(path, value, detail).Error()``; ``bad_value`` is already formatted."""
    return f"{path}: Invalid value: {bad_value}: {detail}"


def invalid_value(path: str, value: object, detail: str) -> str:
    """:func:`invalid` of a plain value, formatted by :func:`go_value`."""
    return invalid(path, go_value(value), detail)


def required(path: str, detail: str) -> str:
    return f"{path}: Required value: {detail}"


def forbidden(path: str, detail: str) -> str:
    return f"{path}: Forbidden: {detail}"


def duplicate(path: str, value: object) -> str:
    return f"{path}: Duplicate value: {go_value(value)}"


def not_supported(path: str, value: str, supported: Sequence[str]) -> str:
    """``field.NotSupported(path, value, supported).Error()``."""
    detail = "supported values: " + ", ".join(go_quote(v) for v in supported)
    return f"{path}: Unsupported value: {go_quote(value)}: {detail}"


def aggregate(errors: Sequence[str]) -> str:
    """``errors.NewAggregate(errs).Error()``: duplicates dropped, several bracketed."""
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


# -- label keys and values (api/validate/content) ----------------------------------------

_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_ERR = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_KEY_RE = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_ERR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_ERR = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)


def regex_error(msg: str, regex: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{regex}')"
    msg += " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{example}', "
    return msg + f"regex used for validation is '{regex}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} bytes"


def _byte_len(text: str) -> int:
    return len(text.encode())


def dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > 253:
        errs.append(max_len_error(253))
    if _DNS1123_SUBDOMAIN_RE.fullmatch(value) is None:
        errs.append(regex_error(_DNS1123_SUBDOMAIN_ERR, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def label_key_errors(value: str) -> list[str]:
    """``content.IsLabelKey``: an optional DNS-subdomain prefix and ``/``, then a name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + msg for msg in dns1123_subdomain_errors(prefix))
    else:
        example = regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
        return [
            f"a valid label key {example} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif _byte_len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if _LABEL_KEY_RE.fullmatch(name) is None:
        errs.append("name part " + regex_error(_LABEL_KEY_ERR, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """``content.IsLabelValue``."""
    errs = []
    if _byte_len(value) > 63:
        errs.append(max_len_error(63))
    if _LABEL_VALUE_RE.fullmatch(value) is None:
        errs.append(regex_error(_LABEL_VALUE_ERR, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs
