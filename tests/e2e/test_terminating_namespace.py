"""A report (event, status) about an object whose namespace is being deleted is refused by the
API server with a 403 that names the cause; the operator drops it quietly rather than logging a
Forbidden warning (scheduler_operator.io.calls), since the object goes with its namespace."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from kubernetes import client

from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.transport import Credentials, Transport
from tests.e2e import eventually

pytestmark = pytest.mark.e2e


def _event(namespace: str) -> dict[str, Any]:
    name = f"probe.{uuid.uuid4().hex[:8]}"
    return {
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
        "reason": "Probe", "message": "probe", "type": "Normal",
    }  # fmt: skip


async def test_a_report_into_a_terminating_namespace_is_dropped_without_a_warning(
    api: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    core: Any = client.CoreV1Api(api)
    namespace = f"e2e-terminating-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": namespace}})
    # A finalizer keeps the namespace Terminating until the test removes it.
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "hold", "finalizers": ["e2e/hold"]}})
    core.delete_namespace(namespace)
    eventually(lambda: _assert_terminating(core, namespace))
    transport = Transport(Credentials.of(api.configuration))  # as the operator sends its reports
    try:
        lanes = Lanes()
        with caplog.at_level(logging.DEBUG, logger="scheduler_operator.io.calls"):

            async def report() -> None:
                await transport.request("POST", f"/api/v1/namespaces/{namespace}/events", body=_event(namespace))

            lanes.report("event Probe for p", report)
            await lanes.drain()
        messages = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "scheduler_operator.io.calls"]
        assert messages == [("DEBUG", "event Probe for p skipped: its namespace is being deleted")]
    finally:
        await transport.close()
        core.patch_namespaced_config_map("hold", namespace, {"metadata": {"finalizers": None}})


def _assert_terminating(core: Any, namespace: str) -> None:
    assert core.read_namespace(namespace).status.phase == "Terminating"
