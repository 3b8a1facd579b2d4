"""Kubernetes resource quantities, parsed exactly as ``k8s.io/apimachinery/pkg/api/resource``.

A quantity is ``<signedNumber><suffix>`` where the suffix is a binary SI suffix
(Ki Mi Gi Ti Pi Ei), a decimal SI suffix (n u m "" k M G T P E) or a decimal exponent
(e3, E-2). Values are kept as exact fractions; ``milli_value`` and ``value`` round up
as ``Quantity.MilliValue``/``Quantity.Value`` do (``ScaledValue`` rounds away from zero
toward +inf for positives).

Bounds, as ``ParseQuantity`` (``quantity.go``) has them: a non-zero value below 1n is rounded
up to 1n; a binary-suffixed value over int64 is capped at ``2^63-1``; the exponent is parsed
as int64 (past it: "unable to parse quantity's suffix") and used as int32, so ``1e4294967296``
is ``1``. A decimal value past int64 (``1e400``) is *not* capped upstream: it is kept exact,
and the API server stores it (as ``10e399``). Here it is bounded at :data:`HUGE` (10^40, past
int64 at every scale down to nano), which keeps it positive and past int64 without ever
computing ``10**2147483647``; two such values compare equal, where upstream would order them.

Past int64, ``Value()`` and ``MilliValue()`` are not defined upstream ("this could overflow
an int64", ``quantity.go``): ``ScaledValue`` ignores the overflow flag of
``int64Amount.AsScaledInt64`` (``amount.go``), whose multiplying loop answers 0, so
``1e400``, ``1e19`` and a cpu of ``10P`` read as 0, while other shapes wrap around
(``9223372036854775807`` has a MilliValue of -1000, ``7Ei`` of -2^63). Here any result
outside int64 is 0, upstream's answer for the decimal-exponent form; a kube-scheduler node
with such an allocatable fits no pod that requests the resource, and neither does ours.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
# Upstream grammar: <sign><digits>[.<digits>] or <sign>.<digits>, then the suffix.
_NUMBER = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")
MAX_INT64 = 2**63 - 1
_NANO = Fraction(1, 10**9)
_MAX_EXPONENT = 40  # past 10**40 every non-zero value is over int64: bounded without computing
HUGE = Fraction(10**_MAX_EXPONENT)  # a decimal value past this is read as this (see above)
_MIN_INT64 = -(2**63)


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


@lru_cache(maxsize=4096)
def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity ("100m", "1Gi", "1e3", "0.5", "1k", 2) into an exact Fraction."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression, got {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        # YAML turns "0.5" unquoted into a float; its shortest repr is what the user wrote.
        text = repr(text)
    raw = text.strip() if isinstance(text, str) else text
    match = _NUMBER.match(raw)
    if not match or raw != text:
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {text!r}"
        )
    sign, number, suffix = match.groups()
    value = _number(number)
    if suffix in _BINARY:
        value *= _BINARY[suffix]
    elif suffix in _DECIMAL:
        value *= _DECIMAL[suffix]
    else:
        exp = _EXPONENT.match(suffix)
        if not exp or len(exp.group(1)) > 20 or not -(2**63) <= int(exp.group(1)) < 2**63:
            raise QuantityError(f"unable to parse quantity's suffix in {text!r}")
        exponent = (int(exp.group(1)) + 2**31) % 2**32 - 2**31  # Go's int32(parsed)
        if not value:
            pass  # zero at any exponent: 10**2147483647 is never computed
        elif exponent > _MAX_EXPONENT:
            value = HUGE
        elif exponent < -_MAX_EXPONENT:
            value = _NANO
        else:
            value *= Fraction(10) ** exponent
    if value and value < _NANO:
        value = _NANO
    elif value > MAX_INT64 and suffix in _BINARY:
        value = Fraction(MAX_INT64)
    elif value > HUGE:
        value = HUGE
    return -value if sign == "-" else value


def _number(number: str) -> Fraction:
    """The digits as a Fraction, bounded: past 40 integer digits every value is over int64
    (capped by the caller), and fraction digits past 40 only round up."""
    whole, _, frac = number.partition(".")
    whole = whole.lstrip("0")
    if len(whole) > _MAX_EXPONENT:
        return HUGE + 1
    if len(frac) > _MAX_EXPONENT:
        frac = frac[:_MAX_EXPONENT] + ("1" if frac[_MAX_EXPONENT:].strip("0") else "")
    return Fraction(f"{whole or '0'}.{frac or '0'}")


def int64_ceil(value: Fraction) -> int:
    """``ScaledValue``'s rounding up, and 0 past int64 (see above)."""
    result = math.ceil(value)
    return result if _MIN_INT64 <= result <= MAX_INT64 else 0


def int64_wrap(value: int) -> int:
    """Go's int64 arithmetic: a sum past int64 wraps around, as ``Resource.Add``'s ``+=``
    (a value in range, nearly every one, is returned as it is without the arithmetic)."""
    if _MIN_INT64 <= value <= MAX_INT64:
        return value
    return ((value - _MIN_INT64) & (2**64 - 1)) + _MIN_INT64


def milli_value(text: str | int | float) -> int:
    """``Quantity.MilliValue``: the value times 1000, rounded up."""
    return int64_ceil(parse_quantity(text) * 1000)


def value(text: str | int | float) -> int:
    """``Quantity.Value``: the value rounded up to an integer."""
    return int64_ceil(parse_quantity(text))


# -- writing a quantity back (``Quantity.String``, ``CanonicalizeBytes``) -------------------------------
BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


def format_of(text: str | int | float) -> str:
    """The format ``ParseQuantity`` gives a quantity: its suffix's kind (none is decimal)."""
    raw = str(text).strip()
    if raw[-2:] in _BINARY:
        return BINARY_SI
    match = _NUMBER.match(raw)
    return DECIMAL_EXPONENT if match and _EXPONENT.match(match.group(3)) else DECIMAL_SI


def canonical(value: Fraction, fmt: str) -> str:
    """``Quantity.String`` of a parsed quantity (how the API server writes it back): a binary
    quantity as a whole number of the largest binary suffix dividing it, unless it is below
    1024 or not whole (then decimal); a decimal one as the smallest integer times a power of
    ten that is a multiple of three, with that power's suffix (``e<n>`` past the suffixes, or
    always for the exponent format)."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        amount, exponent = int(value), 0
        while amount % 1024 == 0 and exponent < len(_BINARY_SUFFIXES) - 1:
            amount //= 1024
            exponent += 1
        return f"{amount}{_BINARY_SUFFIXES[exponent]}"
    amount, exponent = int(value * 10**9), -9  # parse_quantity keeps nano precision
    while amount % 10 == 0:
        amount //= 10
        exponent += 1
    remainder = int(math.fmod(exponent, 3))  # Go's %: the sign of the dividend
    if remainder in (1, -2):
        amount, exponent = amount * 10, exponent - 1
    elif remainder in (2, -1):
        amount, exponent = amount * 100, exponent - 2
    if fmt == DECIMAL_SI and exponent in _DECIMAL_SUFFIXES:
        return f"{amount}{_DECIMAL_SUFFIXES[exponent]}"
    return f"{amount}e{exponent}" if exponent else str(amount)
