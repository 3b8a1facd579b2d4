"""The extender client against a real HTTP extender on loopback (tests/unit/extender/peer.py).

Error texts are those of upstream's client (pkg/scheduler/extender.go ``send`` and Go's
net/http), since a non-ignorable extender's error becomes the pod's FailedScheduling message.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from scheduler_core.config import Extender
from scheduler_core.extender import ExtenderError, HTTPExtender
from tests.unit.extender.peer import Peer, names, tls_pair
from tests.wrappers import node, pod


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    server = await Peer().start()
    yield server
    await server.stop()


def _extender(url: str, **config: Any) -> HTTPExtender:
    return HTTPExtender(Extender.model_validate({"urlPrefix": url, **config}))


NODES = [node("n1"), node("n2"), node("n3")]


@pytest.mark.parametrize(
    "names_only", [pytest.param(True, id="nodeCacheCapable"), pytest.param(False, id="full-nodes")]
)
async def test_filter_sends_the_mode_of_the_config_and_reads_both_failure_maps(peer: Peer, names_only: bool) -> None:
    def answer(body: dict[str, Any]) -> dict[str, Any]:
        kept = [n for n in names(body) if n != "n2" and n != "n3"]
        result: dict[str, Any] = {"FailedNodes": {"n2": "busy"}, "FailedAndUnresolvableNodes": {"n3": "wrong rack"}}
        if names_only:
            result["NodeNames"] = kept
        else:
            result["Nodes"] = {"items": [n for n in body["Nodes"]["items"] if n["metadata"]["name"] in kept]}
        return result

    peer.answers["filter"] = answer
    extender = _extender(peer.url, filterVerb="filter", nodeCacheCapable=names_only)
    passed, failed, unresolvable = await extender.filter(pod("p"), NODES)
    await extender.close()
    assert (passed, failed, unresolvable) == (["n1"], {"n2": "busy"}, {"n3": "wrong rack"})
    ((verb, body),) = peer.calls
    assert verb == "filter" and body["Pod"]["metadata"]["name"] == "p"
    if names_only:
        assert body["NodeNames"] == ["n1", "n2", "n3"] and body["Nodes"] is None
    else:
        assert body["NodeNames"] is None and [n["metadata"]["name"] for n in body["Nodes"]["items"]] == [
            "n1",
            "n2",
            "n3",
        ]


async def test_a_filter_answer_naming_a_node_not_sent_is_an_error(peer: Peer) -> None:
    peer.answers["filter"] = lambda body: {"NodeNames": ["n1", "ghost"]}
    extender = _extender(peer.url, filterVerb="filter", nodeCacheCapable=True)
    with pytest.raises(ExtenderError) as info:
        await extender.filter(pod("p"), NODES)
    await extender.close()
    assert str(info.value) == (
        f"extender {peer.url!r} claims a filtered node 'ghost' which is not found in the input node list"
    )


async def test_prioritize_returns_the_hosts_scores_and_bind_sends_binding_args(peer: Peer) -> None:
    peer.answers["prioritize"] = lambda body: [{"Host": n, "Score": i} for i, n in enumerate(names(body))]
    peer.answers["bind"] = lambda body: {"Error": ""}
    extender = _extender(peer.url + "/", prioritizeVerb="prioritize", weight=2, bindVerb="bind")
    assert await extender.prioritize(pod("p"), NODES) == [("n1", 0), ("n2", 1), ("n3", 2)]
    await extender.bind(name="p", namespace="ns", uid="u1", node="n2")
    await extender.close()
    assert peer.calls[-1] == ("bind", {"PodName": "p", "PodNamespace": "ns", "PodUID": "u1", "Node": "n2"})


async def test_verbs_left_empty_make_no_call(peer: Peer) -> None:
    extender = _extender(peer.url)
    assert await extender.filter(pod("p"), NODES) == (["n1", "n2", "n3"], {}, {})
    assert await extender.prioritize(pod("p"), NODES) == [("n1", 0), ("n2", 0), ("n3", 0)]
    assert peer.calls == []


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        pytest.param(lambda b: web.Response(status=500), "failed filter with extender at URL {url}/filter, code 500",
                     id="http-500"),
        pytest.param(lambda b: web.Response(text="<html>oops"), "invalid character '<' looking for beginning of value",
                     id="garbage"),
        pytest.param(lambda b: {"Error": "no capacity service"}, "no capacity service", id="result-error"),
    ],
)  # fmt: skip
async def test_failures_read_as_upstreams_errors(peer: Peer, answer: Any, message: str) -> None:
    peer.answers["filter"] = answer
    extender = _extender(peer.url, filterVerb="filter")
    with pytest.raises(ExtenderError) as info:
        await extender.filter(pod("p"), NODES)
    await extender.close()
    assert str(info.value) == message.format(url=peer.url)


async def test_a_slow_extender_times_out_with_gos_client_timeout_message(peer: Peer) -> None:
    async def slow(body: dict[str, Any]) -> dict[str, Any]:
        await peer.hang.wait()
        return {}

    peer.answers["filter"] = slow
    extender = _extender(peer.url, filterVerb="filter", httpTimeout="100ms")
    with pytest.raises(ExtenderError) as info:
        await extender.filter(pod("p"), NODES)
    await extender.close()
    assert str(info.value) == (
        f'Post "{peer.url}/filter": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
    )


async def test_an_extender_that_is_down_reads_as_connection_refused() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    extender = _extender(f"http://127.0.0.1:{port}", filterVerb="filter")
    with pytest.raises(ExtenderError) as info:
        await extender.filter(pod("p"), NODES)
    await extender.close()
    assert str(info.value) == (
        f'Post "http://127.0.0.1:{port}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


@pytest.mark.parametrize(
    ("requests", "interested"),
    [
        pytest.param({"example.com/gpu": "1"}, True, id="requests-managed"),
        pytest.param({"cpu": "1"}, False, id="requests-other"),
    ],
)
def test_is_interested_follows_managed_resources(requests: dict[str, str], interested: bool) -> None:
    extender = _extender("http://e", managedResources=[{"name": "example.com/gpu"}])
    assert extender.is_interested(pod("p", requests=requests)) is interested
    init = pod("q", init_containers=[{"name": "i", "resources": {"limits": {"example.com/gpu": "1"}}}])
    assert extender.is_interested(init)
    assert _extender("http://e").is_interested(pod("p"))


@pytest.mark.parametrize(
    ("config", "error"),
    [
        pytest.param(lambda pair, other: {"enableHTTPS": True, "tlsConfig": {"caData": pair["ca_data"]}}, None,
                     id="right-ca-data"),
        pytest.param(lambda pair, other: {"tlsConfig": {"caFile": pair["ca"]}}, None, id="right-ca-file"),
        pytest.param(lambda pair, other: {"enableHTTPS": True}, None, id="https-without-ca-does-not-verify"),
        pytest.param(lambda pair, other: {"enableHTTPS": True, "tlsConfig": {"caData": other["ca_data"]}},
                     "x509: certificate signed by unknown authority", id="wrong-ca"),
    ],
)  # fmt: skip
async def test_tls(tmp_path: Any, config: Any, error: str | None) -> None:
    import ssl

    pair, other = tls_pair(tmp_path, "served"), tls_pair(tmp_path, "other")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(pair["cert"], pair["key"])
    server = await Peer(ssl_context=context).start()
    server.answers["filter"] = lambda body: {"NodeNames": names(body)}
    extender = _extender(server.url, filterVerb="filter", nodeCacheCapable=True, **config(pair, other))
    try:
        if error is None:
            assert (await extender.filter(pod("p"), NODES))[0] == ["n1", "n2", "n3"]
        else:
            with pytest.raises(ExtenderError) as info:
                await extender.filter(pod("p"), NODES)
            # The text kube-scheduler v1.36.3 gives (seen in tests/e2e/test_extenders.py).
            assert str(info.value) == f'Post "{server.url}/filter": tls: failed to verify certificate: {error}'
    finally:
        await extender.close()
        await server.stop()
