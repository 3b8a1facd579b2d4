"""The operator's reflectors on the real API server: a list in small pages holds every object,
the watch that follows delivers changes, and a watch forced to 410 Gone (a resourceVersion the
server has compacted away) re-lists and delivers the deletions made while no watch ran."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kubernetes import client

from scheduler_operator.io.transport import Credentials, Transport
from scheduler_operator.resources import PODS
from scheduler_operator.watch.informer import Store, uid_of
from scheduler_operator.watch.reflector import Reflector
from tests.wrappers import make_pod


class Seen:
    """What the store was told, per pod name (of the test's namespace only: the cluster is shared)."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.added: set[str] = set()
        self.deleted: set[str] = set()

    def _ours(self, body: Any, into: set[str]) -> None:
        meta = body.get("metadata") or {}
        if meta.get("namespace") == self.namespace:
            into.add(meta["name"])

    def store(self) -> Store:
        return Store(
            "Pod", key=uid_of,
            on_add=lambda new: self._ours(new, self.added), on_update=lambda old, new: None,
            on_delete=lambda old: self._ours(old, self.deleted),
        )  # fmt: skip


@pytest.fixture
async def transport(api: client.ApiClient) -> AsyncIterator[Transport]:
    transport = Transport(Credentials.of(api.configuration), qps=0, burst=0)
    yield transport
    await transport.close()


def create_pods(api: client.ApiClient, namespace: str, names: list[str]) -> None:
    core: Any = client.CoreV1Api(api)
    for name in names:
        body = make_pod().name(name).namespace(namespace).req(cpu="10m").obj()
        body["metadata"].pop("uid", None)
        body["spec"]["schedulerName"] = "nobody-schedules-these"
        core.create_namespaced_pod(namespace, body)


async def until(check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_a_list_in_small_pages_then_a_watch(api: client.ApiClient, namespace: str, transport: Transport) -> None:
    names = [f"paged-{i}" for i in range(7)]
    create_pods(api, namespace, names)
    seen = Seen(namespace)
    reflector = Reflector(transport, PODS, seen.store(), page_size=2)

    await reflector.list_objects()

    assert reflector.synced and reflector.resource_version
    assert seen.added >= set(names)
    assert transport.requests >= 4  # 7 pods of ours alone need 4 pages of 2
    running = asyncio.ensure_future(reflector.run())
    try:
        create_pods(api, namespace, ["watched"])
        await until(lambda: "watched" in seen.added)
        client.CoreV1Api(api).delete_namespaced_pod("paged-0", namespace, grace_period_seconds=0)
        await until(lambda: "paged-0" in seen.deleted)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


async def test_a_list_page_over_128_kib_comes_gzip_compressed_and_is_read_whole(
    api: client.ApiClient, namespace: str, transport: Transport
) -> None:
    # The API server compresses answers over 128 KiB for a client that asks, as client-go's
    # transport does (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/writers.go,
    # defaultGzipThresholdBytes, v1.36.3); the pool asks and decompresses.
    core: Any = client.CoreV1Api(api)
    for i in range(160):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"c{i}"}, "data": {"x": "y" * 1024}})
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    answer = await transport._requests().request("GET", f"{path}?limit=500", transport._headers(None))
    assert answer.status == 200 and answer.headers.get("content-encoding") == "gzip"
    assert len(answer.body) > 128 * 1024
    listed = await transport.request("GET", path)
    assert {f"c{i}" for i in range(160)} <= {item["metadata"]["name"] for item in listed["items"]}


async def test_a_watch_forced_to_410_relists_and_delivers_the_missed_deletion(
    api: client.ApiClient, namespace: str, transport: Transport
) -> None:
    create_pods(api, namespace, ["stays", "goes"])
    seen = Seen(namespace)
    reflector = Reflector(transport, PODS, seen.store())
    await reflector.list_objects()
    assert {"stays", "goes"} <= seen.added
    # A gap: no watch runs while the pod is deleted, and the watch then resumes from a
    # resourceVersion the server no longer has (etcd compacts every 5 minutes; "1" is long gone).
    client.CoreV1Api(api).delete_namespaced_pod("goes", namespace, grace_period_seconds=0)
    reflector.resource_version = "1"

    running = asyncio.ensure_future(reflector.run())
    try:
        await until(lambda: "goes" in seen.deleted)
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
    assert reflector.gone == 1 and reflector.lists == 2
    assert "stays" not in seen.deleted
