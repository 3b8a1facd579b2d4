"""Go's integer and float arithmetic, bit for bit, for scores and args that must match upstream.

One contract per function, as Go's: :func:`go_div` is int64 division (truncating toward zero),
:func:`go_round` is ``math.Round`` returning a float (callers convert with ``int()`` where Go
converts with ``int64()``), :func:`parse_go_int` is ``strconv.ParseInt(s, 10, 64)``.

PodTopologySpread scoring weighs each topology by ``math.Log(size + 2)`` and rounds the float sum with
``math.Round``. Python's ``math.log`` (the C library's) differs from Go's in the last bit for
about 1% of integer arguments (e.g. ``log(3)``), which can move a score across ``.5``; and
Python's ``round`` rounds half to even. So both are reimplemented here:

- :func:`go_log` is kube-scheduler's ``math.Log`` on amd64, ``archLog`` in Go's
  ``src/math/log_amd64.s`` (the FreeBSD ``e_log.c`` reduction and polynomial, in the
  assembly's operation order; the portable ``log.go`` computes the same sums);
- :func:`go_round` / :func:`go_round_array` are ``math.Round``: half away from zero.

Go compiles ``float64(cnt)*w + float64(maxSkew-1)`` without fused multiply-add on amd64
(GOAMD64=v1, the release default), so plain IEEE multiply then add reproduces it.
"""

from __future__ import annotations

import math
import re

import numpy as np
import numpy.typing as npt

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def parse_go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: an optional sign and ASCII digits, within int64."""
    if _DECIMAL.fullmatch(text) is None:
        return None
    number = int(text)
    if number < _INT64_MIN or number > _INT64_MAX:
        return None
    return number


def go_div(a: int, b: int) -> int:
    """Go's int64 division ``a / b``, truncating toward zero (either operand may be negative)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def go_div_array(a: npt.NDArray[np.int64], b: int) -> npt.NDArray[np.int64]:
    """:func:`go_div` over an array divided by a positive constant."""
    result: npt.NDArray[np.int64] = np.where(a >= 0, a // b, -((-a) // b))
    return result


_HSQRT2 = 7.07106781186547524401e-01
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_L1 = 6.666666666666735130e-01
_L2 = 3.999999999940941908e-01
_L3 = 2.857142874366239149e-01
_L4 = 2.222219843214978396e-01
_L5 = 1.818357216161805012e-01
_L6 = 1.531383769920937332e-01
_L7 = 1.479819860511658591e-01


def go_log(x: float) -> float:
    """Go's ``math.Log(x)`` on amd64."""
    if math.isnan(x) or x == math.inf:
        return x
    if x < 0:
        return math.nan
    if x == 0:
        return -math.inf
    f1, ki = math.frexp(x)  # 0.5 <= f1 < 1, as Go's Frexp for normal numbers
    k = float(ki)
    # The assembly tests "not less than": f1 <= Sqrt2/2 (log.go has <; they differ only
    # for f1 exactly Sqrt2/2, which no integer below 2**52 produces).
    if f1 <= _HSQRT2:
        k -= 1.0
        f1 *= 2.0
    f = f1 - 1.0
    s = f / (2.0 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * (_L1 + s4 * (_L3 + s4 * (_L5 + s4 * _L7)))
    t2 = s4 * (_L2 + s4 * (_L4 + s4 * _L6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


def go_round(x: float) -> float:
    """Go's ``math.Round``: to the nearest integer, halves away from zero (exact)."""
    if not math.isfinite(x):
        return x
    t = float(math.trunc(x))
    if abs(x - t) >= 0.5:  # x - trunc(x) is exact in binary floating point
        t += math.copysign(1.0, x)
    return t


def go_round_array(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """:func:`go_round` over an array."""
    t = np.trunc(x)
    result: npt.NDArray[np.float64] = t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)
    return result
