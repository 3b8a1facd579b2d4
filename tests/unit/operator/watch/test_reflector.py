"""The reflector's store semantics: a list replaces the store (deletions missed in a gap are
delivered), watch events and bookmarks move the resourceVersion, a 410 asks for a re-list; and
the views it decodes into keep what the scheduler reads. Listing and watching on the real API
server (pagination, a forced 410) are in tests/e2e/test_operator_watch.py."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from scheduler_core.framework import Manifest, PodInfo
from scheduler_operator.io.kube import ApiError
from scheduler_operator.io.transport import Credentials, Transport
from scheduler_operator.resources import PODS
from scheduler_operator.watch.informer import Store, uid_of
from scheduler_operator.watch.reflector import Gone, Reflector, Wakeup
from scheduler_operator.watch.views import LAST_APPLIED, object_view, pod_view
from tests.wrappers import make_node, make_pod


class Calls:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def store(self) -> Store:
        return Store(
            "Pod", key=uid_of,
            on_add=lambda new: self.seen.append(("add", uid_of(new))),
            on_update=lambda old, new: self.seen.append(("update", uid_of(new))),
            on_delete=lambda old: self.seen.append(("delete", uid_of(old))),
        )  # fmt: skip


def reflector(store: Store) -> Reflector:
    transport = Transport(Credentials("http://127.0.0.1:9", False, lambda: None))  # never called here
    return Reflector(transport, PODS, store)


def test_a_relist_delivers_the_deletions_of_a_gap() -> None:
    calls = Calls()
    store = calls.store()
    for uid, version in (("a", "1"), ("b", "2"), ("c", "3")):
        store.handle("ADDED", make_pod().uid(uid).resource_version(version).obj())
    calls.seen.clear()

    deleted = store.replace(
        [make_pod().uid(u).resource_version(v).obj() for u, v in (("b", "2"), ("c", "7"), ("d", "8"))]
    )

    assert calls.seen == [("update", "c"), ("add", "d"), ("delete", "a")]
    assert [uid_of(body) for body in deleted] == ["a"]
    assert sorted(store) == ["b", "c", "d"]


def test_one_object_that_fails_does_not_stop_a_list() -> None:
    failed: list[str] = []

    def add(body: Manifest) -> None:
        if uid_of(body) == "bad":
            raise ValueError("boom")

    store = Store("Pod", key=uid_of, on_add=add, on_update=lambda o, n: None, on_delete=lambda o: None)
    listed = [make_pod().uid("bad").resource_version("1").obj(), make_pod().uid("good").resource_version("2").obj()]
    store.replace(listed, on_error=lambda kind, body: failed.append(uid_of(body)))

    assert failed == ["bad"] and "good" in store


@pytest.mark.parametrize(
    ("event", "seen", "rv"),
    [
        pytest.param({"type": "ADDED", "object": make_pod().uid("x").resource_version("11").obj()}, [("add", "x")],
                     "11", id="added"),
        pytest.param({"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "15"}}}, [],
                     "15", id="bookmark-moves-the-resource-version-only"),
        pytest.param({"type": "DELETED", "object": make_pod().uid("a").resource_version("12").obj()},
                     [("delete", "a")], "12", id="deleted"),
        pytest.param({"type": "MODIFIED", "object": make_pod().uid("a").resource_version("13").node("n1").obj()},
                     [("update", "a")], "13", id="modified"),
    ],
)  # fmt: skip
def test_watch_events(event: dict[str, Any], seen: list[tuple[str, str]], rv: str) -> None:
    calls = Calls()
    store = calls.store()
    store.handle(None, make_pod().uid("a").resource_version("10").obj())
    calls.seen.clear()
    watcher = reflector(store)
    watcher.resource_version = "10"

    watcher.event(event)

    assert calls.seen == seen
    assert watcher.resource_version == rv


@pytest.mark.parametrize(
    ("status", "raised"),
    [
        pytest.param({"kind": "Status", "code": 410, "reason": "Expired", "message": "too old resource version"},
                     Gone, id="410-expired-relists"),
        pytest.param({"kind": "Status", "code": 500, "message": "internal error"}, ApiError,
                     id="other-error-rewatches"),
    ],
)  # fmt: skip
def test_an_error_event(status: dict[str, Any], raised: type[Exception]) -> None:
    watcher = reflector(Calls().store())
    watcher.resource_version = "10"
    with pytest.raises(raised) as error:
        watcher.event({"type": "ERROR", "object": status})
    assert watcher.resource_version == "10"
    if isinstance(error.value, ApiError):  # the Status's own code and message, as an answer's
        assert (error.value.status, error.value.message) == (status["code"], status["message"])


FULL_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "web", "namespace": "ns", "uid": "u1", "resourceVersion": "5", "labels": {"app": "web"},
        "annotations": {LAST_APPLIED: "{...}", "keep": "me"},
        "ownerReferences": [{"kind": "ReplicaSet", "name": "web-1", "uid": "r1", "controller": True}],
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}],
    },
    "spec": {
        "schedulerName": "crd-scheduler", "priority": 5, "nodeSelector": {"zone": "a"},
        "tolerations": [{"key": "k", "operator": "Exists"}], "volumes": [{"name": "v", "emptyDir": {}}],
        "containers": [{
            "name": "c", "image": "nginx:1", "command": ["run"], "env": [{"name": "A", "value": "1"}],
            "resources": {"requests": {"cpu": "100m"}}, "ports": [{"containerPort": 80, "hostPort": 8080}],
            "volumeMounts": [{"name": "v", "mountPath": "/v"}], "livenessProbe": {"exec": {"command": ["true"]}},
        }],
        "initContainers": [{"name": "i", "image": "busybox", "restartPolicy": "Always", "args": ["x"]}],
        "ephemeralContainers": [{"name": "debug", "image": "busybox"}],
    },
    "status": {
        "phase": "Pending", "nominatedNodeName": "n1",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        "containerStatuses": [{"name": "c", "ready": False}],
    },
}  # fmt: skip


def test_the_pod_view_keeps_what_the_scheduler_reads() -> None:
    import copy

    full = copy.deepcopy(FULL_POD)
    view = pod_view(copy.deepcopy(FULL_POD))

    assert "managedFields" not in view["metadata"]
    assert view["metadata"]["annotations"] == {"keep": "me"}
    assert view["spec"]["containers"] == [{
        "name": "c", "image": "nginx:1", "resources": {"requests": {"cpu": "100m"}},
        "ports": [{"containerPort": 80, "hostPort": 8080}],
    }]  # fmt: skip
    assert view["spec"]["initContainers"] == [{"name": "i", "image": "busybox", "restartPolicy": "Always"}]
    assert "ephemeralContainers" not in view["spec"]
    assert "containerStatuses" not in view["status"]
    # What the scheduler derives from the pod is the same from the view.
    a, b = PodInfo(full), PodInfo(view)
    for field in ("uid", "priority", "scheduler_name", "nominated_node_name", "phase", "node_selector"):
        assert getattr(a, field) == getattr(b, field), field
    assert a.requests == b.requests and a.host_ports == b.host_ports


def test_the_object_view_drops_managed_fields_only() -> None:
    body = {"metadata": {"name": "n", "managedFields": [{}], "labels": {"a": "b"}}, "status": {"images": [1]}}
    assert object_view(body) == {"metadata": {"name": "n", "labels": {"a": "b"}}, "status": {"images": [1]}}


def test_an_assumed_pod_deleted_in_a_watch_gap_leaves_the_cache() -> None:
    """The pod was assumed and bound, then deleted, all while no watch ran: the store's last
    body has no node, the re-list lacks the pod, and its capacity must come back."""
    from scheduler_operator.control.app import Operator
    from scheduler_operator.control.options import Options

    transport = Transport(Credentials("http://127.0.0.1:9", False, lambda: None))  # never called here
    operator = Operator(Options(identity="t"), transport=transport)
    operator.nodes.replace([make_node().name("n1").capacity(cpu="4", pods="10").obj()])
    pending = make_pod().name("p").namespace("ns").uid("u1").req(cpu="1").obj()
    operator.pods.replace([pending])
    operator.scheduler.cache.assume_pod(PodInfo(pending).with_node("n1"))
    node = operator.scheduler.cache.get_node("n1")
    assert node is not None and node.requested.milli_cpu == 1000

    operator.pods.replace([])

    assert operator.scheduler.cache.get_pod(PodInfo(pending)) is None
    assert node.requested.milli_cpu == 0


class PagedServer:
    """Stands in for the transport: answers a list in pages, and logs each request as it starts;
    the page ``expired`` (if any) answers 410, as a continue token past etcd's compaction."""

    def __init__(self, pages: list[list[dict[str, Any]]], log: list[tuple[str, str]], expired: int = -1) -> None:
        self.pages = pages
        self.log = log
        self.expired = expired

    async def request(self, method: str, path: str, *, params: dict[str, str]) -> dict[str, Any]:
        index = int(params.get("continue") or 0)
        self.log.append(("request", str(index)))
        await asyncio.sleep(0.01)  # the server prepares the page
        if index == self.expired:
            raise ApiError(410, "Expired")
        more = {"continue": str(index + 1)} if index + 1 < len(self.pages) else {}
        return {"metadata": {"resourceVersion": "99", **more}, "items": self.pages[index]}


def logged_store(log: list[tuple[str, str]]) -> Store:
    store = Store(
        "Pod", key=uid_of, on_add=lambda new: log.append(("add", uid_of(new))),
        on_update=lambda old, new: None, on_delete=lambda old: log.append(("delete", uid_of(old))),
    )  # fmt: skip
    store.handle("ADDED", make_pod().uid("old").resource_version("1").obj())
    log.clear()
    return store


async def test_a_list_asks_for_the_next_page_before_it_applies_this_one() -> None:
    log: list[tuple[str, str]] = []
    store = logged_store(log)
    server = PagedServer(
        [
            [
                make_pod().uid("a").resource_version("2").obj(),
                make_pod().uid("b").resource_version("3").obj(),
            ],
            [make_pod().uid("c").resource_version("4").obj()],
            [make_pod().uid("d").resource_version("5").obj()],
        ],
        log,
    )
    listing = Reflector(cast(Transport, server), PODS, store, page_size=2)

    await listing.list_objects()

    assert log == [
        ("request", "0"),
        ("request", "1"), ("add", "a"), ("add", "b"),
        ("request", "2"), ("add", "c"),
        ("add", "d"),
        ("delete", "old"),  # what the complete list lacks, after its last page
    ]  # fmt: skip
    assert listing.synced and listing.resource_version == "99" and sorted(store) == ["a", "b", "c", "d"]


async def test_a_list_that_fails_midway_deletes_nothing_and_is_not_synced() -> None:
    log: list[tuple[str, str]] = []
    store = logged_store(log)
    server = PagedServer(
        [
            [make_pod().uid("a").resource_version("2").obj()],
            [make_pod().uid("b").resource_version("3").obj()],
        ],
        log,
        expired=1,
    )
    listing = Reflector(cast(Transport, server), PODS, store)

    with pytest.raises(Gone):
        await listing.list_objects()

    assert log == [("request", "0"), ("request", "1"), ("add", "a")]  # no delete of "old"
    assert not listing.synced and listing.resource_version is None


class FailingServer:
    """Stands in for the transport: every request fails as a refused connection does."""

    def __init__(self) -> None:
        self.requests = 0

    async def request(self, method: str, path: str, *, params: dict[str, str]) -> dict[str, Any]:
        self.requests += 1
        raise ConnectionRefusedError("the API server is away")


async def test_a_wakeup_cuts_the_backoff_short_once_the_api_server_answers() -> None:
    """issue 26: after an API server restart the backoff had grown to 25.6 s and the new leader
    scheduled nothing new for that long; the Lease keeper's answered reads ring the bell."""
    server, wakeup = FailingServer(), Wakeup()
    slept: list[float] = []

    async def long_sleep(seconds: float) -> None:
        slept.append(seconds)
        await asyncio.sleep(3600)  # a backoff that, alone, would outlast the test

    watcher = Reflector(cast(Transport, server), PODS, Calls().store(), sleep=long_sleep, wakeup=wakeup)
    running = asyncio.ensure_future(watcher.run())
    try:
        for _ in range(100):
            await asyncio.sleep(0)
        assert (server.requests, slept) == (1, [0.8])  # failed once, waiting out its backoff
        for rung in (1, 2):
            wakeup.ring()  # from any thread: the keeper's
            for _ in range(100):
                await asyncio.sleep(0)
            assert server.requests == 1 + rung  # retried at once
        assert slept == [0.8, 1.6, 3.2] and wakeup.rung == 2
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
