"""The PV/PVC writes of VolumeBinding's PreBind: a timeout on every request, and retries with
backoff on 429, 5xx and connection errors, never on other answers (a 409 is final: the write
carries a resourceVersion precondition). The writes themselves are tested on the real API
server in tests/e2e/test_backend_contract.py; here the answers the server seldom gives."""

from __future__ import annotations

from typing import Any

import pytest
import urllib3
from kubernetes import client

from scheduler_operator import kube
from scheduler_operator.backend import KubeBackend
from scheduler_operator.calls import Lanes
from scheduler_operator.recorder import EventRecorder


class Answer:
    """A raw (``_preload_content=False``) response as the generated client returns it."""

    def __init__(self, status: int, data: bytes = b"{}") -> None:
        self.status, self.data, self.reason = status, data, "answer"

    def release_conn(self) -> None:
        pass


class Server:
    """Answers in turn: an int is an HTTP error status, an exception is raised, else a body."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        if isinstance(answer, int):
            raise client.ApiException(status=answer, reason="injected")
        return Answer(200, answer)


@pytest.fixture
def backend() -> KubeBackend:
    api = client.ApiClient()
    lanes = Lanes()
    kube = KubeBackend(api, lanes, EventRecorder(api, lanes, instance="t"), stores={})
    kube.sleep = _no_wait
    return kube


async def _no_wait(seconds: float) -> None:
    pass


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(429, id="too-many-requests"),
        pytest.param(503, id="unavailable"),
        pytest.param(urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out"), id="timeout"),  # type: ignore[arg-type]
        pytest.param(ConnectionResetError("reset"), id="connection-reset"),
    ],
)
async def test_a_transient_failure_is_retried_and_the_write_lands(backend: KubeBackend, failure: Any) -> None:
    server = Server(failure, b'{"metadata": {"name": "pv1"}}')
    stored, status = await backend._patch_storage(server, "pv1", {})
    assert status is None and stored == {"metadata": {"name": "pv1"}}
    assert len(server.calls) == 2
    assert all(call["_request_timeout"] == kube.REQUEST_TIMEOUT for call in server.calls)


async def test_a_conflict_is_final(backend: KubeBackend) -> None:
    server = Server(409)
    stored, status = await backend._patch_storage(server, "pv1", {})
    assert stored is None and status is not None and "409" in status.message()
    assert len(server.calls) == 1


async def test_retries_are_bounded(backend: KubeBackend) -> None:
    server = Server(*([500] * kube.ATTEMPTS))
    stored, status = await backend._patch_storage(server, "pv1", {})
    assert stored is None and status is not None and "500" in status.message()
    assert len(server.calls) == kube.ATTEMPTS


@pytest.mark.parametrize(
    ("answers", "calls", "final"),
    [
        pytest.param([429, b'{"items": []}'], 2, None, id="retried"),
        pytest.param([403], 1, 403, id="forbidden-is-final"),
        pytest.param([502] * kube.ATTEMPTS, kube.ATTEMPTS, 502, id="bounded"),
    ],
)
def test_the_blocking_calls_of_explain_and_extender_serve_retry_alike(
    answers: list[Any], calls: int, final: int | None
) -> None:
    server = Server(*answers)
    waits: list[float] = []
    if final is None:
        assert kube.retrying(kube.call_json, server, sleep=waits.append) == {"items": []}
    else:
        with pytest.raises(client.ApiException) as raised:
            kube.retrying(kube.call_json, server, sleep=waits.append)
        assert raised.value.status == final
    assert len(server.calls) == calls
    assert waits == [0.5 * 2**i for i in range(calls - 1)]
    assert all(call["_request_timeout"] == kube.REQUEST_TIMEOUT for call in server.calls)
