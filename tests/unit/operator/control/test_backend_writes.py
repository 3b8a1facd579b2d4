"""No write is lost silently: what the backend and the status writer do when a write still
fails after the transport's retries (counted; a PodScheduled condition is written again at the
pod's next failure, a status write again later), and how a bind reads 409 and 5xx answers.
The writes themselves are tested on the real API server (tests/e2e/test_backend_contract.py).
Also the cache sync, which must end on a fresh list, never on a timer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler_core.framework import Code
from scheduler_core.framework.writes import preempt
from scheduler_operator.control import app
from scheduler_operator.control.backend import KubeBackend
from scheduler_operator.control.options import Options
from scheduler_operator.control.recorder import EventRecorder, SpamFilter
from scheduler_operator.control.writer import StatusWriter
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.transport import Transport
from tests.unit.operator.conftest import Injector
from tests.wrappers import make_pod

Server = tuple[Injector, Transport, list[float]]
FAIL = [503, 503, 503, 503]  # every attempt of one write


def backend(transport: Transport) -> tuple[KubeBackend, Lanes]:
    lanes = Lanes()
    recorder = EventRecorder(transport, lanes, instance="t", spam=SpamFilter(repeat_after=0))
    return KubeBackend(transport, lanes, recorder, stores={}), lanes


async def test_a_failed_condition_is_counted_and_written_at_the_next_failure(server: Server) -> None:
    injector, transport, _ = server
    kube, lanes = backend(transport)
    pod = make_pod().name("p").namespace("ns").info()
    # The event and the condition go out together; the event lands, the condition does not.
    injector.answers = [{}, *FAIL]
    kube.report_failure(pod, "Unschedulable", "0/3 nodes are available", None)
    await lanes.drain()
    assert transport.failed_writes == {"pod condition": 1}

    injector.answers = [{}, {}]
    kube.report_failure(pod, "Unschedulable", "0/3 nodes are available", None)
    await lanes.drain()

    patches = [r for r in injector.requests if r.startswith("PATCH")]
    assert len(patches) == 5  # four failed attempts, then the write again
    assert injector.answers == []


@pytest.mark.parametrize(
    ("answers", "code", "failed"),
    [
        pytest.param([{}], None, {}, id="bound"),
        pytest.param([409, {"metadata": {"uid": "u1"}, "spec": {"nodeName": "n2"}}], None, {},
                     id="conflict-bound-by-another-replica"),
        pytest.param([409, {"metadata": {"uid": "other"}, "spec": {}}], Code.ERROR, {}, id="conflict-re-created"),
        pytest.param([404], Code.ERROR, {}, id="gone"),
        pytest.param(FAIL, Code.ERROR, {"bind": 1}, id="server-errors-counted"),
    ],
)  # fmt: skip
async def test_bind_answers(server: Server, answers: list[Any], code: Code | None, failed: dict[str, int]) -> None:
    injector, transport, _ = server
    kube, _ = backend(transport)
    injector.answers = list(answers)

    status = await kube.bind(make_pod().name("p").namespace("ns").uid("u1").info(), "n1")

    assert (status.code if status is not None else None) is code
    assert transport.failed_writes == failed
    assert injector.requests[0] == "POST /api/v1/namespaces/ns/pods/p/binding"


PATCH_STATUS = "PATCH /api/v1/namespaces/ns/pods/p/status"
DELETE = "DELETE /api/v1/namespaces/ns/pods/p"


@pytest.mark.parametrize(
    ("answers", "requests", "preempted", "failed"),
    [
        pytest.param([{}, {}], [PATCH_STATUS, DELETE], True, {}, id="condition-then-delete"),
        pytest.param([404], [PATCH_STATUS], True, {}, id="gone-already"),
        pytest.param([{}, 409], [PATCH_STATUS, DELETE], True, {}, id="re-created-meanwhile"),
        pytest.param(FAIL, [PATCH_STATUS] * 4, False, {"patch pods/status": 1}, id="condition-fails-counted"),
        pytest.param([{}, *FAIL], [PATCH_STATUS, *[DELETE] * 4], False, {"delete pods": 1}, id="delete-fails-counted"),
    ],
)  # fmt: skip
async def test_a_preemption_writes_the_condition_then_deletes_under_the_uid(
    server: Server, answers: list[Any], requests: list[str], preempted: bool, failed: dict[str, int]
) -> None:
    """One write (a delete with a reason), two requests; a 404 or 409 answers about the victim
    and is not counted as a failed write, a server that keeps failing is."""
    injector, transport, _ = server
    kube, _ = backend(transport)
    injector.answers = list(answers)

    status = await preempt(kube, make_pod().name("p").namespace("ns").uid("u1").info(), "preempted by ns/big")

    assert (status is None) is preempted
    assert injector.requests == requests
    assert transport.failed_writes == failed


async def test_a_failed_status_write_is_counted_and_tried_again(server: Server) -> None:
    injector, transport, _ = server
    writer = StatusWriter(transport, EventRecorder(transport, Lanes(), instance="t"))
    writer.retry_later = 0.05
    writer.lead(True)
    profile = {"metadata": {"namespace": "ns", "name": "default", "uid": "u1"}}
    injector.answers = [*FAIL, {}]

    writer.set("schedulerprofiles", profile, {"observedGeneration": 2})
    await writer.drain()
    assert transport.failed_writes == {"status": 1} and writer.writes == 0
    await asyncio.sleep(0.2)
    await writer.drain()

    assert writer.writes == 1 and injector.answers == []
    assert set(injector.requests) == {
        "PATCH /apis/scheduling.crd-scheduler.io/v1alpha1/namespaces/ns/schedulerprofiles/default/status"
    }
    writer.close()


async def test_the_cache_sync_lists_again_until_the_stores_hold_what_a_fresh_list_holds(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A profile in the first list was deleted before Kopf's own list: Kopf never hears of it,
    so only a fresh list lets the sync end (it has no timeout)."""
    injector, transport, _ = server
    monkeypatch.setattr(app, "SYNC_RELIST", 0.05)
    operator = app.Operator(Options(identity="t"), transport=transport)
    for reflector in operator.reflectors:
        reflector.synced = True
    gone = {"metadata": {"namespace": "ns", "name": "gone", "uid": "u-gone"}}
    empty: dict[str, Any] = {"items": [], "metadata": {}}
    injector.answers = [{"items": [gone], "metadata": {}}, empty, empty, empty]

    await asyncio.wait_for(operator.wait_synced(), timeout=5)

    assert operator.synced and injector.answers == []
