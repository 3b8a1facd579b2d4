"""The async HTTP layer's policy on answers the API server seldom gives: 429 (Retry-After
honoured), 5xx and dropped connections are retried with backoff, other errors are final and
raised as ``kube.ApiError``; a read that hangs times out; QPS and burst pace the
requests as client-go's token bucket. The answers come from a loopback HTTP server that
injects them; the calls themselves are tested on the real API server (tests/e2e)."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_operator.io.kube import ApiError
from scheduler_operator.io.transport import TokenBucket, Transport
from tests.unit.operator.conftest import Injector


@pytest.mark.parametrize(
    ("answers", "backoff"),
    [
        pytest.param([429, {"ok": 1}], [1.0], id="too-many-requests-waits-retry-after"),
        pytest.param([503, 500, {"ok": 1}], [0.5, 1.0], id="5xx-backs-off"),
        pytest.param(["drop", {"ok": 1}], [0.5], id="dropped-connection"),
        pytest.param(["hang", {"ok": 1}], [0.5], id="hung-read-times-out"),
    ],
)
async def test_a_transient_failure_is_retried_and_the_write_lands(
    server: tuple[Injector, Transport, list[float]], answers: list[Any], backoff: list[float]
) -> None:
    injector, transport, slept = server
    injector.answers = list(answers)
    assert await transport.request("PATCH", "/api/v1/persistentvolumes/pv1", body={"a": 1}) == {"ok": 1}
    assert slept == backoff
    assert len(injector.requests) == len(answers)


@pytest.mark.parametrize("status", [pytest.param(409, id="conflict"), pytest.param(404, id="not-found"),
                                    pytest.param(403, id="forbidden")])  # fmt: skip
async def test_other_errors_are_final(server: tuple[Injector, Transport, list[float]], status: int) -> None:
    injector, transport, slept = server
    injector.answers = [status]
    with pytest.raises(ApiError) as raised:
        await transport.request("POST", "/api/v1/namespaces/ns/pods/p/binding", body={})
    assert raised.value.status == status and raised.value.message == f"HTTP {status} {raised.value.reason}"
    assert slept == [] and len(injector.requests) == 1


async def test_retries_stop_after_the_last_attempt(server: tuple[Injector, Transport, list[float]]) -> None:
    injector, transport, slept = server
    injector.answers = [503, 503, 503, 503]
    with pytest.raises(ApiError):
        await transport.request("GET", "/api/v1/pods")
    assert slept == [0.5, 1.0, 2.0]


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(
    ("qps", "burst", "requests", "elapsed"),
    [
        pytest.param(50.0, 100, 100, 0.0, id="burst-at-once"),
        pytest.param(50.0, 100, 150, 1.0, id="then-qps"),
        pytest.param(10.0, 1, 11, 1.0, id="burst-one"),
        pytest.param(0.0, 0, 1000, 0.0, id="no-limit"),
    ],
)
async def test_token_bucket(qps: float, burst: int, requests: int, elapsed: float) -> None:
    time = FakeTime()
    bucket = TokenBucket(qps, burst, clock=time.clock, sleep=time.sleep)
    for _ in range(requests):
        await bucket.acquire()
    assert time.now == pytest.approx(elapsed)


async def test_an_answer_not_read_is_not_decoded_but_an_error_keeps_its_body(
    server: tuple[Injector, Transport, list[float]],
) -> None:
    injector, transport, _ = server
    injector.answers = [{"kind": "Status", "status": "Success", "code": 201}, 409]
    path = "/api/v1/namespaces/ns/pods/p/binding"
    assert await transport.request("POST", path, body={}, decode=False) is None
    with pytest.raises(ApiError) as raised:
        await transport.request("POST", path, body={}, decode=False)
    assert (raised.value.status, raised.value.reason) == (409, "Conflict")


async def test_a_watch_that_goes_silent_closes_the_pooled_connections(
    server: tuple[Injector, Transport, list[float]],
) -> None:
    # A peer that black-holed the watch has likely black-holed the pooled connections too: the
    # re-list that follows must open a fresh one rather than wait out the read time-out.
    injector, transport, _ = server
    injector.answers = [{"ok": 1}, "hang"]  # the watch's headers never come
    await transport.request("GET", "/api/v1/pods")
    assert transport._pool is not None and len(transport._pool._idle) == 1
    with pytest.raises(TimeoutError):
        async with transport.stream("/api/v1/pods", {"watch": "1"}, idle_timeout=0.3) as reader:
            await reader.read()
    assert transport._pool._idle == []


async def test_a_watch_cut_off_raises_a_connection_error_not_aiohttp_s(
    server: tuple[Injector, Transport, list[float]],
) -> None:
    # One family for lost connections (kube.CONNECTION_ERRORS), whichever stream broke.
    injector, transport, _ = server
    injector.answers = ["drop"]
    with pytest.raises(ConnectionError):
        async with transport.stream("/api/v1/pods", {"watch": "1"}, idle_timeout=5) as reader:
            await reader.read()


@pytest.mark.parametrize(
    ("status", "phrase", "body", "headers", "expected"),
    [
        pytest.param(409, "Conflict", b'{"kind": "Status", "code": 409, "reason": "Conflict", "message": "the '
                     b'object has been modified", "details": {"name": "p"}}', {},
                     (409, "Conflict", "the object has been modified", None, {"name": "p"}), id="status"),
        pytest.param(429, "Too Many Requests", b'{"kind": "Status", "code": 429, "reason": "TooManyRequests", '
                     b'"message": "slow down"}', {"Retry-After": "3"},
                     (429, "TooManyRequests", "slow down", 3.0, {}), id="retry-after"),
        pytest.param(502, "Bad Gateway", b"<html>a proxy's page</html>", {"Retry-After": "soon"},
                     (502, "Bad Gateway", "HTTP 502 Bad Gateway", None, {}), id="not-a-status"),
        pytest.param(500, "Internal Server Error", b"", {},
                     (500, "Internal Server Error", "HTTP 500 Internal Server Error", None, {}), id="no-body"),
    ],
)  # fmt: skip
def test_an_error_answer_is_read_as_its_status(
    status: int, phrase: str, body: bytes, headers: dict[str, str], expected: tuple[Any, ...]
) -> None:
    error = ApiError.of_answer(status, phrase, body, headers)
    assert (error.status, error.reason, error.message, error.retry_after, dict(error.details)) == expected
