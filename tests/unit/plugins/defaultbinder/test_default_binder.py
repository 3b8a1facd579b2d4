"""DefaultBinder delegates to ``handle.api.bind`` and returns its status
(upstream ``defaultbinder/default_binder.go``: an API error becomes the Bind status)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import cast

import pytest

from scheduler_core.framework import CycleState, Handle, PodInfo, Status
from scheduler_core.framework.writes import ClusterAPI, Write, Written
from scheduler_core.plugins.defaultbinder import DefaultBinder
from tests.wrappers import pod_info


class RecordingAPI(ClusterAPI):
    """The ClusterAPI, recording bind calls and answering with a fixed status."""

    def __init__(self, answer: Status | None) -> None:
        self.answer = answer
        self.bound: list[tuple[str, str]] = []

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        self.bound.append((pod.key, node_name))
        return self.answer

    async def write(self, call: Write) -> Written:
        raise AssertionError(f"DefaultBinder must not {call.verb} {call.resource.qualified}")


class FakeHandle:
    def __init__(self, api: RecordingAPI) -> None:
        self.api = api


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(None, id="TestDefaultBinder/successful"),
        pytest.param(Status.as_error("injecting failure for pod foo"), id="TestDefaultBinder/binding error"),
    ],
)
def test_bind_delegates_to_the_api(answer: Status | None) -> None:
    api = RecordingAPI(answer)
    binder = DefaultBinder(None, cast(Handle, FakeHandle(api)))
    pod = pod_info("foo", namespace="ns")
    status = asyncio.run(binder.bind(CycleState(), pod, "foohost.kube-system.svc.cluster.local"))
    assert api.bound == [("ns/foo", "foohost.kube-system.svc.cluster.local")]
    assert status == answer
