"""Go's arithmetic, bit for bit (``scheduler_core/framework/gomath.py``): ``math.Log`` on amd64,
``math.Round``, int64 division and ``strconv.ParseInt``, as scores and args validation need."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduler_core.framework.gomath import go_div, go_div_array, go_log, go_round, go_round_array, parse_go_int

# Go's math.Log(n) for integers where the C library's log differs in the last bit, from
# `fmt.Println(math.Float64bits(math.Log(n)))` with go1.26 on amd64.
GO_LOGS = {
    3: "0x1.193ea7aad030ap+0",
    14: "0x1.51cca16d7bba8p+1",
    48: "0x1.ef8383c50bb74p+1",
    74: "0x1.1375cd6fcab1cp+2",
    176: "0x1.4ae935b3cb89ep+2",
    196: "0x1.51cca16d7bba8p+2",
    220: "0x1.5931319798d6ep+2",
    299: "0x1.6cd411481a020p+2",
}


@pytest.mark.parametrize(("n", "bits"), [pytest.param(n, b, id=f"log({n})") for n, b in GO_LOGS.items()])
def test_go_log_matches_go(n: int, bits: str) -> None:
    assert go_log(float(n)) == float.fromhex(bits)
    assert math.log(n) != float.fromhex(bits)  # why go_log exists


@pytest.mark.parametrize(
    ("x", "want"),
    [
        (0.5, 1.0),
        (1.5, 2.0),
        (2.5, 3.0),
        (2.4999999999999996, 2.0),
        (0.49999999999999994, 0.0),
        (-2.5, -3.0),
        (7.0, 7.0),
    ],
)
def test_go_round_rounds_halves_away_from_zero(x: float, want: float) -> None:
    assert go_round(x) == want
    assert go_round_array(np.array([x]))[0] == want


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0), (-1, 2, 0)],
)
def test_go_div_truncates_toward_zero(a: int, b: int, want: int) -> None:
    assert go_div(a, b) == want
    if b > 0:
        assert go_div_array(np.array([a], np.int64), b).tolist() == [want]


@pytest.mark.parametrize(
    ("x", "want"),
    [(0.0, 0), (2.5, 3), (3.5, 4), (3.875, 4), (3.125, 3), (0.49999999999999994, 0), (4.0, 4)],
)
def test_go_round_of_non_negative_scores(x: float, want: int) -> None:
    assert int(go_round(x)) == want


@pytest.mark.parametrize(
    ("text", "want"),
    [
        pytest.param("42", 42, id="plain"),
        pytest.param("-9223372036854775808", -(2**63), id="int64 min"),
        pytest.param("9223372036854775807", 2**63 - 1, id="int64 max"),
        pytest.param("9223372036854775808", None, id="overflow"),
        pytest.param("", None, id="empty"),
        pytest.param("0x10", None, id="no base prefix"),
        pytest.param("4\n", None, id="trailing newline"),
    ],
)
def test_parse_go_int(text: str, want: int | None) -> None:
    assert parse_go_int(text) == want
