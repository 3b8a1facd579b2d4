"""A lean HTTP/1.1 client for the operator's watches (and requests) to the API server.

:class:`scheduler_operator.io.transport.Transport` opens its watches through this pool
(:meth:`Pool.stream`: the answer's body read chunk by chunk as it comes), and sends its requests
here only when the server does not speak HTTP/2 or ``DISABLE_HTTP2`` is set: otherwise they go
over one multiplexed connection (``scheduler_operator.io.http2``), as each request in flight here
holds a connection of its own, and a burst opens as many.

Why it exists: aiohttp's request machinery (URL objects, header multidicts, tracing, redirects,
the response object) cost about 0.2 ms of CPU a request on the bench machine. A binding plus its
Scheduled event are two requests a pod, and on two cores the API server needs that CPU.
Measured on the dev cluster with 16 requests in flight, both over TLS: about 110 µs per GET
here against about 210-280 µs through aiohttp.

What it does:

* Keeps persistent connections (TLS, or plain for loopback test servers) in a pool of at most
  ``max_connections``. Each connection carries one request at a time, as client-go's HTTP/1.1
  transport does. An idle connection is dropped after ``idle_timeout`` (15 s, aiohttp's default
  keep-alive timeout), well before the API server's own idle limit closes it.
* Reads an answer by ``Content-Length``, by chunks, or to the end when the server closes. A
  connection is given back only after a complete answer that does not say ``Connection: close``.
* Streams an answer (a watch, :meth:`Pool.stream`): each read waits at most ``idle_timeout``
  seconds; a stream read to its end goes back to the pool as any answer, one left early (a
  410, a cancel) is closed. A stream holds its connection outside ``max_connections``: there
  is one per watched kind, and requests must not wait behind them.
* Bounds the connect and each read with timeouts. A connection that failed in any way is
  closed, never reused.
* After a connection-level failure (a time-out, a reset, a broken answer) every idle connection
  is closed too (:meth:`Pool.drop_idle`): a peer or proxy that black-holes one connection
  usually black-holes all that were open, and each reuse of one would wait out the read
  time-out. The transport does the same when a watch's stream goes silent.
* Raises ``ConnectionError`` (an ``OSError``) for dropped connections and broken answers, and
  ``TimeoutError`` for time-outs. Both are among :data:`scheduler_operator.io.kube.CONNECTION_ERRORS`,
  so the transport retries them as before.
* Asks for gzip as client-go's transport does (``Accept-Encoding: gzip``) and decompresses such
  answers: the API server compresses only answers over 128 KiB (list pages), so a list over a
  real network moves a tenth of the bytes, and writes are unaffected.
* Sets TCP keep-alive on every socket (the transport's ``_keepalive``), so a silently dead peer
  is noticed.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

from multidict import CIMultiDict

_HEAD_END = b"\r\n\r\n"
_MAX_HEAD = 64 * 1024  # the API server's answers carry a few hundred bytes of headers


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    reason: str
    headers: CIMultiDict[str]  # names as the server sent them, looked up in any case
    body: bytes


class _Connection:
    __slots__ = ("reader", "used", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.used = time.monotonic()

    def close(self) -> None:
        self.writer.close()


class Pool:
    """Persistent HTTP/1.1 connections to one server (``scheme://host:port``)."""

    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext | bool,
        *,
        max_connections: int,
        connect_timeout: float,
        read_timeout: float,
        idle_timeout: float = 15.0,
        prepare_socket: Callable[[socket.socket], None] = lambda _sock: None,
    ) -> None:
        parts = urlsplit(server)
        tls = parts.scheme == "https"
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if tls else 80)
        self._authority = parts.netloc
        self._prefix = parts.path.rstrip("/")  # a server URL with a path (behind a proxy)
        if tls:
            self._ssl: ssl.SSLContext | None = (
                ssl_context if isinstance(ssl_context, ssl.SSLContext) else ssl.create_default_context()
            )
            if ssl_context is False:
                self._ssl.check_hostname = False
                self._ssl.verify_mode = ssl.CERT_NONE
        else:
            self._ssl = None
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[_Connection] = []
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._idle_timeout = idle_timeout
        self._prepare_socket = prepare_socket

    def _encode(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        head = [f"{method} {self._prefix}{target} HTTP/1.1\r\nHost: {self._authority}\r\nAccept-Encoding: gzip\r\n"]
        for name, value in headers.items():
            head.append(f"{name}: {value}\r\n")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body) if body is not None else 0}\r\n")
        head.append("\r\n")
        return "".join(head).encode("latin-1") + (body or b"")

    async def request(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None = None) -> Answer:
        """Send ``method target`` (a path with its query) and read the whole answer."""
        data = self._encode(method, target, headers, body)
        async with self._slots:
            connection = self._take() or await self._connect()
            with self._failing(connection):
                connection.writer.write(data)
                async with asyncio.timeout(self._read_timeout):
                    answer, reusable = await self._read(connection.reader, method)
            self._give_back(connection, reusable)
            return answer

    @asynccontextmanager
    async def stream(
        self, method: str, target: str, headers: Mapping[str, str], *, idle_timeout: float
    ) -> AsyncIterator[Stream]:
        """Send ``method target`` and yield the answer as it comes (a watch): its status line and
        headers read (within ``idle_timeout``), its body left to :meth:`Stream.readany`.
        Failures close the connection and raise as :meth:`request`'s do."""
        try:
            connection = self._take() or await self._connect()
        except (TimeoutError, OSError):
            self.drop_idle()
            raise
        with self._failing(connection):  # also when left early (a 410, a cancel): the rest is unread
            connection.writer.write(self._encode(method, target, headers, None))
            async with asyncio.timeout(idle_timeout):
                status, reason, answer_headers, reusable = await _read_head(connection.reader)
            stream = Stream(connection.reader, status, reason, answer_headers, method, idle_timeout)
            yield stream
        self._give_back(connection, stream.complete and stream.delimited and reusable)

    @contextmanager
    def _failing(self, connection: _Connection) -> Iterator[None]:
        """What :meth:`request` and :meth:`stream` do when their exchange fails: the connection is
        closed, never reused; after a connection-level failure (a cut, a time-out, a reset) every
        idle one is dropped too, and a cut mid-answer is a ``ConnectionResetError``. Anything
        else (a cancel, the caller leaving a stream early) closes this connection only: its state
        is unknown, the others' is not."""
        try:
            yield
        except asyncio.IncompleteReadError as error:
            connection.close()
            self.drop_idle()
            raise ConnectionResetError(f"the connection closed mid-answer ({error})") from None
        except (TimeoutError, OSError):
            connection.close()
            self.drop_idle()
            raise
        except BaseException:
            connection.close()
            raise

    def _give_back(self, connection: _Connection, reusable: bool) -> None:
        """After a complete exchange: the connection back to the pool, or closed."""
        if reusable:
            connection.used = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if now - connection.used < self._idle_timeout and not connection.writer.is_closing():
                return connection
            connection.close()
        return None

    async def _connect(self) -> _Connection:
        async with asyncio.timeout(self._connect_timeout):
            reader, writer = await asyncio.open_connection(
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._host if self._ssl is not None else None,
                limit=_MAX_HEAD,
            )
        sock = writer.get_extra_info("socket")
        if sock is not None:
            self._prepare_socket(sock)
        return _Connection(reader, writer)

    @staticmethod
    async def _read(reader: asyncio.StreamReader, method: str) -> tuple[Answer, bool]:
        status, reason, headers, reusable = await _read_head(reader)
        if _bodiless(method, status):
            body = b""
        elif "content-length" in headers and not _chunked(headers):  # one read: the common case
            body = await reader.readexactly(_content_length(headers))
            body = decoded(body, headers)
        else:  # chunked, or to the end when the server closes: as a stream, within the request's time-out
            stream = Stream(reader, status, reason, headers, method, None)
            body = await stream.read()
            reusable = reusable and stream.delimited
        return Answer(status, reason, headers, body), reusable

    def drop_idle(self) -> None:
        """Close every idle connection: new requests open fresh ones."""
        while self._idle:
            self._idle.pop().close()

    async def close(self) -> None:
        self.drop_idle()


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, str, CIMultiDict[str], bool]:
    """The status line and headers: status, reason, headers, whether the connection may be reused."""
    try:
        raw = await reader.readuntil(_HEAD_END)
    except asyncio.LimitOverrunError:
        raise ConnectionError("the answer's headers are too long") from None
    lines = raw[: -len(_HEAD_END)].decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ConnectionError(f"not an HTTP/1.1 answer: {lines[0][:80]!r}")
    headers: CIMultiDict[str] = CIMultiDict()
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers.add(name.strip(), value.strip())
    reusable = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
    return int(code), reason, headers, reusable


def _bodiless(method: str, status: int) -> bool:
    return method == "HEAD" or status in (204, 304) or 100 <= status < 200


def _content_length(headers: CIMultiDict[str]) -> int:
    length = headers["content-length"]
    if not length.isdigit():
        raise ConnectionError(f"invalid Content-Length {length[:20]!r}")
    return int(length)


def _chunked(headers: CIMultiDict[str]) -> bool:
    return "chunked" in headers.get("transfer-encoding", "").lower()


def _gzip(headers: CIMultiDict[str]) -> bool:
    return headers.get("content-encoding", "").lower() == "gzip"


def decoded(body: bytes, headers: CIMultiDict[str]) -> bytes:
    """A whole answer's body as sent, gzip undone when the headers say so (``ConnectionError``
    if it does not decompress). HTTP/1.1 and HTTP/2 (``http2``) answers alike."""
    if not body or not _gzip(headers):
        return body
    try:
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    except zlib.error as error:
        raise ConnectionError(f"a gzip answer that does not decompress: {error}") from None


_SIZE, _DATA, _TRAILER = range(3)  # where a chunked stream's parser stands
_MAX_SIZE_LINE = 4096


class Stream:
    """An answer's body as it comes: :meth:`readany` gives the next bytes (decompressed), b"" at
    the end; every read waits at most ``idle_timeout`` seconds (``TimeoutError``; None: no limit
    of its own, as :meth:`Pool.request` reads a chunked answer within its own time-out).

    A chunked body (a watch) is parsed from what each read of the socket brings, whole chunks
    and the part of one that has arrived, so an event costs one read of the socket rather than
    three (size line, data, CRLF)."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        status: int,
        reason: str,
        headers: CIMultiDict[str],
        method: str,
        idle_timeout: float | None,
    ) -> None:
        self.status, self.reason, self.headers = status, reason, headers
        self._reader = reader
        self._idle_timeout = idle_timeout
        bodiless = _bodiless(method, status)
        self._chunked = not bodiless and _chunked(headers)
        self._left: int | None = None  # bytes left of a Content-Length body or chunk; None: to the end
        if bodiless or self._chunked:
            self._left = 0
        elif "content-length" in headers:
            self._left = _content_length(headers)
        self._buffer = bytearray()
        self._state = _SIZE
        self._gunzip = zlib.decompressobj(16 + zlib.MAX_WBITS) if _gzip(headers) else None
        self.delimited = self._left is not None  # else it ends when the server closes
        self.complete = not self._chunked and self._left == 0  # the whole answer is read

    async def readany(self) -> bytes:
        while not self.complete:
            async with asyncio.timeout(self._idle_timeout):
                data = await self._next()
            if self._gunzip is not None:
                try:
                    data = self._gunzip.decompress(data)
                    if self.complete:
                        data += self._gunzip.flush()
                except zlib.error as error:
                    raise ConnectionError(f"a gzip answer that does not decompress: {error}") from None
            if data:
                return data
        return b""

    async def read(self) -> bytes:
        """The rest of the body (an error's, which is short)."""
        parts = []
        while part := await self.readany():
            parts.append(part)
        return b"".join(parts)

    async def _next(self) -> bytes:
        """The next bytes of the body as sent (maybe b""); :attr:`complete` at its end."""
        reader = self._reader
        if self._chunked:
            while True:
                data = self._parse()
                if data or self.complete:
                    return data
                more = await reader.read(1 << 16)
                if not more:
                    raise ConnectionResetError("the connection closed mid-answer")
                self._buffer += more
        if self._left is None:
            data = await reader.read(1 << 16)  # to the end: the server closes
            self.complete = not data
            return data
        data = await reader.read(min(self._left, 1 << 16))
        if not data:
            raise ConnectionResetError("the connection closed mid-answer")
        self._left -= len(data)
        self.complete = self._left == 0
        return data

    def _parse(self) -> bytes:
        """The chunk data the buffer holds, framing removed (HTTP/1.1 chunked coding)."""
        out = bytearray()
        buffer = self._buffer
        while not self.complete:
            if self._state == _SIZE:
                end = buffer.find(b"\r\n")
                if end < 0:
                    if len(buffer) > _MAX_SIZE_LINE:
                        raise ConnectionError("a chunk size line is too long")
                    break
                size_text = bytes(buffer[:end]).split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise ConnectionError(f"invalid chunk size {size_text[:20]!r}") from None
                del buffer[: end + 2]
                self._state, self._left = (_TRAILER, 0) if size == 0 else (_DATA, size)
            elif self._state == _DATA:
                left = self._left or 0
                take = min(len(buffer), left)
                if take:
                    out += buffer[:take]
                    del buffer[:take]
                    self._left = left = left - take
                if left or len(buffer) < 2:
                    break  # the rest of the chunk, or its CRLF, is on its way
                if buffer[:2] != b"\r\n":
                    raise ConnectionError("a chunk does not end with CRLF")
                del buffer[:2]
                self._state = _SIZE
            else:  # trailers, then the blank line that ends the answer
                end = buffer.find(b"\r\n")
                if end < 0:
                    break
                del buffer[: end + 2]
                self.complete = end == 0
        return bytes(out)
