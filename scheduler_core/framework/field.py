"""Field-level validation errors, as ``k8s.io/apimachinery/pkg/util/validation/field``.

Every validation message in crd-scheduler, for manifests, profiles and plugin args, has the
form the API server gives: ``<path>: <Type>[: <value>][: <detail>]``, e.g.
``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms:
Required value: must have at least one node selector term``. Paths are built as upstream's
``field.Path`` prints them: ``spec.containers[0].resources.limits[cpu]``.

The value is rendered as ``(*Error).ErrorBody`` does in apimachinery v0.36.3
(``pkg/util/validation/field/errors.go``): integers, floats and booleans bare, strings quoted
as Go's ``%q``, anything else as JSON. One deviation, on purpose: a rendered value longer than
:data:`MAX_VALUE_CHARS` is cut (``..."(truncated)``), and rendering stops as soon as the limit
is reached, so a hostile value (a 6 GB alias expansion, a 100,000-deep array) never grows a
message. Upstream relies on the request size limit for that.

A value whose Go type upstream prints otherwise (a named string type or a ``[]string`` as JSON,
a selector's values as ``%#v``) is passed already printed, as :class:`Printed` (see
:func:`go_json`, :func:`go_string_slice`). Several errors reach the user as one aggregate,
``[e1, e2]`` (:func:`aggregate`).
"""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MAX_VALUE_CHARS = 256
TRUNCATED = "...(truncated)"


class ErrorType(enum.Enum):
    """Upstream ``field.ErrorType``; the value is ``ErrorType.String()``."""

    NOT_FOUND = "Not found"
    REQUIRED = "Required value"
    DUPLICATE = "Duplicate value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    TOO_FEW = "Too few"
    INTERNAL = "Internal error"
    TYPE_INVALID = "Invalid value"  # FieldValueTypeInvalid prints as "Invalid value" too
    TOO_SHORT = "Too short"


# ErrorBody prints these without a value.
_NO_VALUE = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.TOO_SHORT})
_OMIT = object()


@dataclass(frozen=True, slots=True)
class Error:
    """One field error; ``str()`` is upstream's ``(*Error).Error()``."""

    type: ErrorType
    field: str
    bad_value: object = ""
    detail: str = ""

    def body(self) -> str:
        """Upstream ``ErrorBody``: the message without the field path."""
        text = self.type.value
        if self.type not in _NO_VALUE and self.bad_value is not _OMIT:
            text = f"{text}: {render(self.bad_value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


ErrorList = list[Error]


def aggregate(errors: Sequence[Error | str]) -> str:
    """``ErrorList.ToAggregate().Error()`` (``k8s.io/apimachinery/pkg/util/errors``): the
    messages with duplicates dropped, several of them bracketed."""
    unique = list(dict.fromkeys(str(error) for error in errors))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


# -- paths ----------------------------------------------------------------------------------


def child(path: str, *names: str) -> str:
    """``Path.Child``: ``child("spec", "affinity")`` -> ``spec.affinity``."""
    for name in names:
        path = f"{path}.{name}" if path else name
    return path


def index(path: str, i: int) -> str:
    """``Path.Index``: ``spec.containers[0]``."""
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    """``Path.Key``: ``resources.limits[cpu]``."""
    return f"{path}[{k}]"


# -- constructors (upstream's function names) -----------------------------------------------


def required(path: str, detail: str = "") -> Error:
    return Error(ErrorType.REQUIRED, path, "", detail)


def invalid(path: str, value: object, detail: str = "") -> Error:
    return Error(ErrorType.INVALID, path, value, detail)


def type_invalid(path: str, value: object, detail: str = "") -> Error:
    return Error(ErrorType.TYPE_INVALID, path, value, detail)


def not_supported(path: str, value: object, valid: Iterable[str]) -> Error:
    supported = ", ".join(go_quote(v) for v in valid)
    return Error(ErrorType.NOT_SUPPORTED, path, value, f"supported values: {supported}" if supported else "")


def forbidden(path: str, detail: str) -> Error:
    return Error(ErrorType.FORBIDDEN, path, "", detail)


def duplicate(path: str, value: object) -> Error:
    return Error(ErrorType.DUPLICATE, path, value)


def not_found(path: str, value: object) -> Error:
    return Error(ErrorType.NOT_FOUND, path, value)


def too_long(path: str, max_length: int) -> Error:
    unit = "byte" if max_length == 1 else "bytes"
    detail = f"may not be more than {max_length} {unit}" if max_length >= 0 else "value is too long"
    return Error(ErrorType.TOO_LONG, path, "<value omitted>", detail)


def too_many(path: str, actual: int, max_quantity: int) -> Error:
    unit = "item" if max_quantity == 1 else "items"
    detail = f"must have at most {max_quantity} {unit}" if max_quantity >= 0 else "has too many items"
    return Error(ErrorType.TOO_MANY, path, actual if actual >= 0 else _OMIT, detail)


# -- value rendering ------------------------------------------------------------------------

_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(text: str) -> str:
    """Go's ``%q`` of a string (``strconv.Quote``)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Printed:
    """A bad value already printed the way upstream prints its Go type; rendered verbatim."""

    text: str


def go_json(value: str | Sequence[str] | None) -> Printed:
    """``json.Marshal`` of a named string type or a ``[]string`` (Go escapes ``<``, ``>``,
    ``&``, U+2028 and U+2029), as ``ErrorBody`` prints values that are not plain strings."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
        text = text.replace(raw, escaped)
    return Printed(text.replace("\u2029", "\\u2029"))


def go_string_slice(values: Sequence[str] | None) -> Printed:
    """Go's ``%#v`` of a ``[]string`` (``nil`` when the field was absent)."""
    if values is None:
        return Printed("[]string(nil)")
    return Printed("[]string{" + ", ".join(go_quote(v) for v in values) + "}")


def render(value: object, limit: int = MAX_VALUE_CHARS) -> str:
    """The value as ``ErrorBody`` prints it, cut at ``limit`` characters."""
    if isinstance(value, Printed):
        return value.text[:limit] + TRUNCATED if len(value.text) > limit else value.text
    if isinstance(value, str):
        if len(value) > limit:
            return go_quote(value[:limit]) + TRUNCATED
        return go_quote(value)
    parts: list[str] = []
    budget = [limit]
    _json(value, parts, budget)
    text = "".join(parts)
    return text[:limit] + TRUNCATED if budget[0] < 0 else text


def _emit(parts: list[str], budget: list[int], text: str) -> bool:
    parts.append(text)
    budget[0] -= len(text)
    return budget[0] >= 0


def _json(value: object, parts: list[str], budget: list[int]) -> bool:
    """Bounded JSON (Go's ``json.Marshal``, sorted map keys); False once over budget."""
    if value is None:
        return _emit(parts, budget, "null")
    if isinstance(value, bool):
        return _emit(parts, budget, "true" if value else "false")
    if isinstance(value, int):
        digits = len(str(value)) if abs(value) < 10**100 else -1  # never str() a huge int
        return _emit(parts, budget, str(value) if digits > 0 else "<integer too large>")
    if isinstance(value, float):
        return _emit(parts, budget, _go_float(value))
    if isinstance(value, str):
        return _emit(parts, budget, go_quote(value[: max(budget[0], 0) + 1]))
    if isinstance(value, Mapping):
        if not _emit(parts, budget, "{"):
            return False
        for i, k in enumerate(sorted(value, key=str)):
            if (i and not _emit(parts, budget, ",")) or not _emit(
                parts, budget, go_quote(str(k)[: budget[0] + 1]) + ":"
            ):
                return False
            if not _json(value[k], parts, budget):
                return False
        return _emit(parts, budget, "}")
    if isinstance(value, Sequence):
        if not _emit(parts, budget, "["):
            return False
        for i, item in enumerate(value):
            if (i and not _emit(parts, budget, ",")) or not _json(item, parts, budget):
                return False
        return _emit(parts, budget, "]")
    return _emit(parts, budget, go_quote(type(value).__name__))


def _go_float(value: float) -> str:
    """Go's ``%v`` of a float64 (``strconv.FormatFloat(f, 'g', -1, 64)`` with Go's exponent)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa}e{sign}{exponent.lstrip('+-').rjust(2, '0')}"
    return text
