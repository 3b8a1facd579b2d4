"""The operator's HTTP/2 pool (``scheduler_operator.io.http2``) against a loopback TLS server that
speaks HTTP/2 through ``jh2`` on the server side and misbehaves as told: multiplexing, stream
limits, flow control, GOAWAY, time-outs, cancels, black holes, and the fallback to HTTP/1.1.
The real API server is exercised by the e2e tests (every operator there speaks HTTP/2)."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import ssl
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import jh2.config
import jh2.connection
import jh2.events
import jh2.settings
import pytest

from scheduler_operator.control.serving import self_signed_pair
from scheduler_operator.io import http1, http2
from scheduler_operator.io.transport import Credentials, Transport

BIG = 300_000  # bytes: over the 64 KiB every window starts with


@dataclass
class Server:
    """Answers each request with JSON naming its path and body size after ``delay`` seconds,
    except: paths in ``hang`` never get an answer; ``goaway`` answers with a graceful GOAWAY whose
    last stream is the one before; ``black_hole`` stops all answers (PINGs included)."""

    alpn: str = "h2"
    max_streams: int = 100
    delay: float = 0.0
    delays: dict[str, float] = field(default_factory=dict)  # by path, over ``delay``
    hang: set[str] = field(default_factory=set)
    received: list[str] = field(default_factory=list)  # paths, as their requests arrive
    black_hole: bool = False
    connections: int = 0
    requests: list[dict[str, str]] = field(default_factory=list)
    bodies: list[int] = field(default_factory=list)
    resets: list[int] = field(default_factory=list)
    open: int = 0
    peak: int = 0
    port: int = 0
    protocols: list[Protocol] = field(default_factory=list)


class ServerStateMachine(jh2.connection.H2ConnectionStateMachine):  # type: ignore[misc]
    """As Go's server: after its graceful GOAWAY it still answers the streams it took (jh2
    alone refuses to send anything then)."""

    _transitions = {
        **jh2.connection.H2ConnectionStateMachine._transitions,
        **{
            (jh2.connection.ConnectionState.CLOSED, value): (None, jh2.connection.ConnectionState.CLOSED)
            for value in jh2.connection.ConnectionInputs
        },
    }


async def until(condition: Callable[[], object], timeout: float = 5.0) -> None:
    """Wait, polling, for ``condition`` (a loaded machine is slow; a fixed sleep would flake)."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)


class Protocol(asyncio.Protocol):
    def __init__(self, state: Server) -> None:
        self.state = state
        self.h2 = jh2.connection.H2Connection(jh2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.h2.state_machine = ServerStateMachine()  # it answers the streams it took after its GOAWAY
        self.streams: dict[int, tuple[dict[str, str], bytearray]] = {}
        self.http1 = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.state.connections += 1
        self.state.protocols.append(self)
        self.http1 = transport.get_extra_info("ssl_object").selected_alpn_protocol() != "h2"
        if not self.http1:
            self.h2.initiate_connection()
            self.h2.update_settings({jh2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.state.max_streams})
            self.transport.write(self.h2.data_to_send())

    def data_received(self, data: bytes) -> None:
        if self.http1 and self.state.black_hole:
            return
        if self.http1:  # one small request per read is all the fallback test sends
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n"
                                 b'{"http": "1"}')  # fmt: skip
            return
        if self.state.black_hole:
            return
        for event in self.h2.receive_data(data):
            if isinstance(event, jh2.events.RequestReceived):
                self.streams[event.stream_id] = (dict(event.headers), bytearray())
                self.state.open += 1
                self.state.peak = max(self.state.peak, self.state.open)
            elif isinstance(event, jh2.events.DataReceived):
                self.streams[event.stream_id][1].extend(event.data)
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, jh2.events.StreamEnded):
                path = self.streams[event.stream_id][0][":path"]
                self.state.received.append(path)
                delay = self.state.delays.get(path, self.state.delay)
                asyncio.get_running_loop().call_later(delay, self.answer, event.stream_id)
            elif isinstance(event, jh2.events.StreamReset):
                self.state.resets.append(event.stream_id)
                self.state.open -= 1
                self.streams.pop(event.stream_id, None)
        self.transport.write(self.h2.data_to_send())

    def answer(self, stream_id: int) -> None:
        if stream_id not in self.streams or self.state.black_hole or self.transport.is_closing():
            return
        headers, body = self.streams[stream_id]
        self.state.requests.append(headers)
        self.state.bodies.append(len(body))
        path = headers[":path"]
        if path in self.state.hang:
            return
        if path == "/goaway":
            self.h2.close_connection(last_stream_id=stream_id - 2)
            self.transport.write(self.h2.data_to_send())
            return
        self.streams.pop(stream_id)
        self.state.open -= 1
        data = json.dumps({"path": path, "body": len(body)}).encode()
        extra = []
        if path == "/big":
            data = b"x" * BIG
        elif path == "/gzip":
            data, extra = gzip.compress(data), [("content-encoding", "gzip")]
        self.h2.send_headers(stream_id, [(":status", "200"), ("content-type", "application/json"), *extra])
        for start in range(0, len(data), 16384):
            self.h2.send_data(stream_id, data[start : start + 16384])
        self.h2.end_stream(stream_id)
        self.transport.write(self.h2.data_to_send())

    def drop_everything(self) -> None:
        self.transport.abort()


@pytest.fixture
def tls(tmp_path: Path) -> Iterator[tuple[ssl.SSLContext, ssl.SSLContext]]:
    cert, key = self_signed_pair()
    (tmp_path / "tls.crt").write_bytes(cert)
    (tmp_path / "tls.key").write_bytes(key)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client = ssl.create_default_context(cafile=str(tmp_path / "tls.crt"))
    client.set_alpn_protocols(["h2", "http/1.1"])
    yield server, client


@contextlib.asynccontextmanager
async def serve(state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> AsyncIterator[Server]:
    server_context, _ = tls
    server_context.set_alpn_protocols([state.alpn])
    server = await asyncio.get_running_loop().create_server(lambda: Protocol(state), "127.0.0.1", 0, ssl=server_context)
    state.port = server.sockets[0].getsockname()[1]
    async with server:
        yield state
        for protocol in state.protocols:
            protocol.drop_everything()
        server.close()


@pytest.fixture
async def state(tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> AsyncIterator[Server]:
    async with serve(Server(), tls) as state:
        yield state


def pool(
    state: Server,
    tls: tuple[ssl.SSLContext, ssl.SSLContext],
    *,
    connect_timeout: float = 0.5,
    read_timeout: float = 0.5,
) -> http2.Pool:
    return http2.Pool(
        f"https://localhost:{state.port}", tls[1], connect_timeout=connect_timeout, read_timeout=read_timeout
    )


async def test_concurrent_requests_share_one_connection_and_are_well_formed(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    state.delay = 0.3  # all in flight at once
    client = pool(state, tls, read_timeout=5.0)
    answers = await asyncio.gather(
        *(
            client.request("POST", f"/api/v1/x/{i}?a=b", {"Content-Type": "application/json"}, b'{"k":1}')
            for i in range(50)
        )
    )
    assert [json.loads(a.body) for a in answers] == [{"path": f"/api/v1/x/{i}?a=b", "body": 7} for i in range(50)]
    assert (answers[0].status, answers[0].headers["Content-Type"]) == (200, "application/json")
    assert (state.connections, client.opened, state.peak) == (1, 1, 50)
    first = state.requests[0]
    assert (first[":method"], first[":scheme"], first[":authority"]) == ("POST", "https", f"localhost:{state.port}")
    assert (first["content-type"], first["content-length"], first["accept-encoding"]) == (
        "application/json",
        "7",
        "gzip",
    )
    await client.close()


async def test_the_servers_stream_limit_is_kept(state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    state.max_streams, state.delay = 3, 0.02
    client = pool(state, tls)
    await client.request("GET", "/first", {})  # the server's settings have arrived
    answers = await asyncio.gather(*(client.request("GET", f"/{i}", {}) for i in range(20)))
    assert all(a.status == 200 for a in answers)
    assert (state.peak, state.connections) == (3, 1)
    await client.close()


async def test_bodies_larger_than_the_first_window_go_both_ways_and_gzip_is_decompressed(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    client = pool(state, tls)
    sent = await client.request("PUT", "/put", {}, b"y" * BIG)
    received = await client.request("GET", "/big", {})
    gzipped = await client.request("GET", "/gzip", {})
    assert json.loads(sent.body) == {"path": "/put", "body": BIG}
    assert received.body == b"x" * BIG
    assert json.loads(gzipped.body) == {"path": "/gzip", "body": 0}
    await client.close()


async def test_a_graceful_goaway_fails_only_the_streams_not_taken_and_the_next_request_reconnects(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    state.delays = {"/taken": 0.3}  # answered after the GOAWAY
    client = pool(state, tls, read_timeout=5.0)
    taken = asyncio.ensure_future(client.request("POST", "/taken", {}, b"{}"))  # stream 1
    await until(lambda: "/taken" in state.received)
    with pytest.raises(ConnectionResetError, match="GOAWAY"):
        await client.request("GET", "/goaway", {})  # stream 3: the server took up to stream 1
    # Stream 1 is answered on the old connection, once: a POST the server took is not retried.
    assert json.loads((await taken).body) == {"path": "/taken", "body": 2}
    answer = await client.request("GET", "/after", {})
    assert (answer.status, state.connections, client.opened) == (200, 2, 2)
    assert state.received.count("/taken") == 1
    await client.close()


async def test_a_request_waiting_for_a_stream_moves_to_the_next_connection_after_a_goaway(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    state.max_streams = 1
    state.delays = {"/goaway": 0.2}
    client = pool(state, tls, read_timeout=5.0)
    await client.request("GET", "/first", {})  # the server's limit of 1 stream has arrived
    going = asyncio.ensure_future(client.request("GET", "/goaway", {}))  # holds the one stream
    await until(lambda: "/goaway" in state.received)
    waiting = asyncio.ensure_future(client.request("POST", "/waiting", {}, b"{}"))  # waits for it
    with pytest.raises(ConnectionResetError, match="GOAWAY"):
        await going  # the server did not take it
    # The waiting request was never sent: it went to a new connection, not back to the caller.
    assert json.loads((await waiting).body) == {"path": "/waiting", "body": 2}
    assert (state.connections, state.received.count("/waiting")) == (2, 1)
    await client.close()


async def test_a_timed_out_request_resets_its_stream_and_retires_its_connection(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    state.hang = {"/slow"}
    state.delays = {"/other": 0.3}  # answered after /slow timed out, within its own time-out
    client = pool(state, tls, read_timeout=0.5)
    await client.request("GET", "/first", {})
    slow = asyncio.ensure_future(client.request("GET", "/slow", {}))
    await until(lambda: "/slow" in state.received)
    await asyncio.sleep(0.3)
    other = asyncio.ensure_future(client.request("GET", "/other", {}))
    with pytest.raises(TimeoutError, match=r"no answer within 0\.5 s"):
        await slow
    assert not other.done()
    # New requests go to a new connection; the old one still answers what it carries.
    assert (await client.request("GET", "/next", {})).status == 200
    assert json.loads((await other).body) == {"path": "/other", "body": 0}
    await until(lambda: len(state.resets) == 1)
    assert (state.connections, client.opened) == (2, 2)
    await until(lambda: state.protocols[0].transport.is_closing())  # closed after its last answer
    await client.close()


async def test_a_black_holed_connection_is_closed_after_an_unanswered_ping(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    client = pool(state, tls, read_timeout=0.5, connect_timeout=0.1)  # the PING waits 0.1 s
    assert (await client.request("GET", "/first", {})).status == 200
    state.black_hole = True
    lost = asyncio.ensure_future(client.request("GET", "/lost", {}))
    await asyncio.sleep(0.3)
    other = asyncio.ensure_future(client.request("GET", "/other", {}))  # its own time-out: 0.8 s in
    with pytest.raises(TimeoutError, match="no answer within"):
        await lost
    # /lost's time-out sent a PING; unanswered within 0.1 s, it closed the connection and failed
    # /other with it, before /other's own time-out.
    with pytest.raises(TimeoutError, match=r"no answer to a PING within 0\.1 s"):
        await other
    state.black_hole = False
    assert (await client.request("GET", "/again", {})).status == 200
    assert state.connections == 2
    await client.close()


async def slow_request(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> tuple[http2.Pool, asyncio.Future[http1.Answer]]:
    """A pool with a GET the server has received and will never answer."""
    state.hang = {"/slow"}
    client = pool(state, tls, read_timeout=5.0)
    task = asyncio.ensure_future(client.request("GET", "/slow", {}))
    await until(lambda: "/slow" in state.received)
    return client, task


async def test_a_cancelled_request_resets_its_stream_only(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    client, task = await slow_request(state, tls)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: state.resets == [1])
    assert (await client.request("GET", "/next", {})).status == 200
    assert state.connections == 1
    await client.close()


async def test_a_connection_lost_fails_what_is_on_it_with_a_reset(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    client, task = await slow_request(state, tls)
    state.protocols[0].drop_everything()
    with pytest.raises(ConnectionResetError, match="the connection closed"):
        await task
    assert (await client.request("GET", "/next", {})).status == 200
    assert state.connections == 2
    await client.close()


async def test_a_server_without_http2_gets_the_transports_requests_over_http1(
    tls: tuple[ssl.SSLContext, ssl.SSLContext],
) -> None:
    async with serve(Server(alpn="http/1.1"), tls) as state:
        with pytest.raises(http2.NotNegotiated, match=r"did not offer HTTP/2"):
            await pool(state, tls).request("GET", "/x", {})
        _, offering = tls
        plain = ssl.create_default_context(cadata=offering.get_ca_certs(binary_form=True)[0])
        transport = Transport(
            Credentials(f"https://localhost:{state.port}", plain, lambda: None, offering), qps=0, burst=0
        )
        assert await transport.request("GET", "/version") == {"http": "1"}
        assert transport._http2 is None  # for good
        await transport.close()


async def test_a_watch_that_goes_silent_retires_the_requests_connection(
    state: Server, tls: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    _, offering = tls
    plain = ssl.create_default_context(cadata=offering.get_ca_certs(binary_form=True)[0])
    credentials = Credentials(f"https://localhost:{state.port}", plain, lambda: None, offering)
    transport = Transport(credentials, qps=0, burst=0, request_timeout=(0.3, 5.0))
    assert await transport.request("GET", "/before") == {"path": "/before", "body": 0}
    state.black_hole = True  # the watch's connection and the requests' one alike
    with pytest.raises(TimeoutError):
        async with transport.stream("/api/v1/pods", {"watch": "1"}, idle_timeout=0.2) as reader:
            await reader.read()
    # The connection was retired: the re-list does not wait out the 5 s read time-out on it.
    state.black_hole = False
    assert await transport.request("GET", "/after") == {"path": "/after", "body": 0}
    assert transport._http2 is not None and transport._http2.opened == 2
    await transport.close()


def test_disable_http2_leaves_the_credentials_on_http1(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes import client

    configuration = client.Configuration(host="https://127.0.0.1:6443")
    assert Credentials.of(configuration).http2 is not None
    monkeypatch.setenv("DISABLE_HTTP2", "1")
    assert Credentials.of(configuration).http2 is None
    assert Credentials.of(client.Configuration(host="http://127.0.0.1:8080")).http2 is None
