"""The operator's HTTP/1.1 pool (``scheduler_operator.io.http1``) against a raw loopback server that
answers as told: framing, reuse, and what it does with connections that break or go silent."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from multidict import CIMultiDict

from scheduler_operator.io import http1

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


@dataclass
class RawServer:
    """Answers each request with the next of ``answers`` (raw bytes), or with ``OK``. ``silent``
    connections read requests and never answer (a proxy that black-holes them)."""

    answers: list[bytes] = field(default_factory=list)
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    silent: bool = False
    port: int = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        black_holed = False
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.lower().split(b"\r\n")
                length = next((int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length")), 0)
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                black_holed = black_holed or self.silent
                if black_holed:
                    continue  # this connection stays silent for good
                answer = self.answers.pop(0) if self.answers else OK
                writer.write(answer)
                await writer.drain()
                framed = b"content-length" in answer.lower() or b"chunked" in answer
                if b"connection: close" in answer.lower() or not framed:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


@pytest.fixture
async def raw() -> AsyncIterator[RawServer]:
    state = RawServer()
    server = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    async with server:
        yield state
        server.close()


def pool(raw: RawServer, **options: float) -> http1.Pool:
    settings: dict[str, float] = {"connect_timeout": 1.0, "read_timeout": 0.3} | options
    return http1.Pool(f"http://127.0.0.1:{raw.port}", False, max_connections=4, **settings)  # type: ignore[arg-type]


async def test_one_connection_carries_successive_requests_and_the_request_is_well_formed(raw: RawServer) -> None:
    client = pool(raw)
    first = await client.request("POST", "/api/v1/x?a=b", {"Accept": "application/json"}, b'{"k":1}')
    second = await client.request("GET", "/api/v1/y", {})
    assert (first.status, first.body, second.status) == (200, b"{}", 200)
    assert first.headers["content-type"] == "application/json"  # any case
    assert raw.connections == 1
    assert raw.requests[0] == (
        b"POST /api/v1/x?a=b HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAccept-Encoding: gzip\r\nAccept: application/json\r\n"
        b'Content-Length: 7\r\n\r\n{"k":1}' % raw.port
    )
    await client.close()


async def test_chunked_and_close_delimited_answers_are_read_whole(raw: RawServer) -> None:
    raw.answers = [
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n\r\nto the end",
    ]
    client = pool(raw)
    chunked = await client.request("GET", "/a", {})
    assert (chunked.status, chunked.reason, chunked.body) == (201, "Created", b"abcde")
    to_end = await client.request("GET", "/b", {})
    assert to_end.body == b"to the end"
    await client.request("GET", "/c", {})
    assert raw.connections == 2  # the chunked one was reused; the close-delimited one was not
    await client.close()


async def test_a_gzip_answer_is_decompressed(raw: RawServer) -> None:
    # The API server compresses answers over 128 KiB (list pages) for clients that ask, as
    # client-go's transport does.
    page = b'{"items": [' + b",".join(b'{"n": %d}' % i for i in range(20000)) + b"]}"
    packed = gzip.compress(page)
    raw.answers = [b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s" % (len(packed), packed)]
    client = pool(raw)
    assert (await client.request("GET", "/api/v1/pods", {})).body == page
    await client.close()


async def test_connection_close_is_not_reused(raw: RawServer) -> None:
    raw.answers = [b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"]
    client = pool(raw)
    await client.request("GET", "/a", {})
    await client.request("GET", "/b", {})
    assert raw.connections == 2
    await client.close()


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 9\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc",
    ],
    ids=["not-http", "bad-length", "short-body", "bad-gzip"],
)
async def test_a_broken_answer_is_a_connection_error_and_the_connection_is_dropped(
    raw: RawServer, answer: bytes
) -> None:
    raw.answers = [answer]
    client = pool(raw)
    with pytest.raises(ConnectionError):
        await client.request("GET", "/a", {})
    assert (await client.request("GET", "/b", {})).status == 200
    assert raw.connections == 2
    await client.close()


async def test_a_silent_connection_times_out_and_every_idle_one_is_dropped(raw: RawServer) -> None:
    client = pool(raw)
    # Three connections in the pool, all idle.
    await asyncio.gather(*(client.request("GET", f"/warm{i}", {}) for i in range(3)))
    assert raw.connections == 3
    raw.silent = True  # every open connection is black-holed from now on; new ones are not
    with pytest.raises(TimeoutError):
        await client.request("GET", "/lost", {})
    raw.silent = False
    # Without dropping the idle ones, the next two requests would each wait out the read
    # time-out on a black-holed connection.
    loop = asyncio.get_running_loop()
    started = loop.time()
    await client.request("GET", "/after1", {})
    await client.request("GET", "/after2", {})
    assert loop.time() - started < 0.25
    assert raw.connections == 4
    await client.close()


async def test_a_connection_idle_past_the_idle_timeout_is_not_reused(raw: RawServer) -> None:
    client = pool(raw, idle_timeout=0.05)
    await client.request("GET", "/a", {})
    await asyncio.sleep(0.1)
    await client.request("GET", "/b", {})
    assert raw.connections == 2
    await client.close()


# -- streams (the watches) -------------------------------------------------------------------------

WATCH = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    b'b\r\n{"type":1}\n\r\nb\r\n{"type":2}\n\r\n0\r\n\r\n'
)


async def test_a_stream_read_to_its_end_leaves_its_connection_to_the_pool(raw: RawServer) -> None:
    raw.answers = [WATCH]
    client = pool(raw)
    async with client.stream("GET", "/api/v1/pods?watch=1", {}, idle_timeout=1.0) as answer:
        assert (answer.status, answer.headers["content-type"]) == (200, "application/json")
        assert await answer.read() == b'{"type":1}\n{"type":2}\n'  # the chunks' data, framing removed
        assert await answer.readany() == b""
    assert (await client.request("GET", "/api/v1/pods", {})).status == 200
    assert raw.connections == 1
    assert raw.requests[0].startswith(b"GET /api/v1/pods?watch=1 HTTP/1.1\r\n")
    await client.close()


async def test_a_stream_left_early_closes_its_connection(raw: RawServer) -> None:
    # A 410 in the stream, or a cancel: the rest of the answer is unread, so the connection
    # cannot carry another request.
    raw.answers = [WATCH]
    client = pool(raw)
    with pytest.raises(LookupError):
        async with client.stream("GET", "/api/v1/pods?watch=1", {}, idle_timeout=1.0) as answer:
            await answer.readany()
            raise LookupError("gone")
    assert client._idle == []
    await client.request("GET", "/api/v1/pods", {})
    assert raw.connections == 2
    await client.close()


async def test_a_gzip_stream_is_decompressed_as_it_comes(raw: RawServer) -> None:
    packed = gzip.compress(b'{"type":1}\n{"type":2}\n')
    half = len(packed) // 2
    raw.answers = [
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, packed[:half], len(packed) - half, packed[half:])
    ]
    client = pool(raw)
    async with client.stream("GET", "/w", {}, idle_timeout=1.0) as answer:
        assert await answer.read() == b'{"type":1}\n{"type":2}\n'
    await client.close()


async def test_a_silent_stream_times_out_and_every_idle_connection_is_dropped(raw: RawServer) -> None:
    client = pool(raw)
    await asyncio.gather(*(client.request("GET", f"/warm{i}", {}) for i in range(2)))
    raw.answers = [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"]  # headers, then nothing
    with pytest.raises(TimeoutError):
        async with client.stream("GET", "/w", {}, idle_timeout=0.1) as answer:
            await answer.readany()
    assert client._idle == []
    await client.close()


async def test_a_stream_cut_off_is_a_connection_error(raw: RawServer) -> None:
    raw.answers = [b'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 100\r\n\r\n{"type"']  # then closes
    client = pool(raw)
    with pytest.raises(ConnectionError):
        async with client.stream("GET", "/w", {}, idle_timeout=1.0) as answer:
            await answer.read()
    await client.close()


async def test_a_chunked_stream_is_parsed_whatever_the_reads_bring() -> None:
    # One byte per read of the socket: every place a read can end, in a size line, in a chunk's
    # data, in its CRLF, in the trailers.
    reader = asyncio.StreamReader()
    headers = CIMultiDict({"Transfer-Encoding": "chunked"})
    stream = http1.Stream(reader, 200, "OK", headers, "GET", idle_timeout=1.0)
    body = b'b;x=y\r\n{"type":1}\n\r\nB\r\n{"type":2}\n\r\n0\r\nTrailer: 1\r\n\r\n'
    reading = asyncio.ensure_future(stream.read())
    for byte in body:
        reader.feed_data(bytes([byte]))
        await asyncio.sleep(0)  # the reader takes what has come (no time passes)
    assert await reading == b'{"type":1}\n{"type":2}\n'
    assert stream.complete and stream.delimited


# -- failures: requests and streams alike ------------------------------------------------------------


async def _exchange(client: http1.Pool, kind: str, path: str) -> None:
    if kind == "request":
        await client.request("GET", path, {})
    else:
        async with client.stream("GET", path, {}, idle_timeout=1.0) as answer:
            await answer.read()


@pytest.mark.parametrize("kind", ["request", "stream"])
async def test_an_answer_cut_mid_head_is_a_reset_and_every_idle_connection_is_dropped(
    raw: RawServer, kind: str
) -> None:
    client = pool(raw)
    await asyncio.gather(*(client.request("GET", f"/warm{i}", {}) for i in range(2)))
    raw.answers = [b"HTTP/1.1 200 OK\r\nContent-Le"]  # then closes: the head is never complete
    with pytest.raises(ConnectionResetError, match="the connection closed mid-answer"):
        await _exchange(client, kind, "/cut")
    assert client._idle == []
    await client.close()


@pytest.mark.parametrize("kind", ["request", "stream"])
async def test_a_cancelled_exchange_drops_its_connection_only(raw: RawServer, kind: str) -> None:
    client = pool(raw, read_timeout=5.0)
    await asyncio.gather(*(client.request("GET", f"/warm{i}", {}) for i in range(2)))
    raw.silent = True
    task = asyncio.create_task(_exchange(client, kind, "/cancelled"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(client._idle) == 1  # the other connection is still pooled
    await client.close()
