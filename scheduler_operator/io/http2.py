"""HTTP/2 to the API server: the operator's requests multiplexed on one TLS connection.

kube-scheduler's client (client-go over Go's ``net/http``) speaks HTTP/2 whenever TLS offers it
(ALPN), so all its requests share one connection. Over HTTP/1.1 (``scheduler_operator.io.http1``)
each request in flight holds a connection of its own, and a burst of bindings and events opens
as many as it has requests in flight, each with a TLS handshake and the API server's checks of
the client certificate: 2-3 ms of the operator's CPU and 1-2 ms of the API server's per
connection, against about 0.2 and 0.5 ms per request on an open one (``python -m
bench.connections``; docs/operator-io.md, "Connections"). Capping the connections instead
queues the calls, and PreemptionBasic, whose calls wait on the API server, then ran at half the
rate (bench/README.md, twelfth pass).

:class:`Pool` keeps one connection and opens another only when it is gone. The framing, HPACK and
flow control are ``jh2`` (a maintained fork of ``h2`` whose HPACK is native code: with 32
requests in flight, ``h2`` cost 0.22 ms of CPU more per request than HTTP/1.1 here, ``jh2`` 0.07;
docs/operator-io.md, "Connections").

What it does, as Go's HTTP/2 transport does where it matters:

* Offers ``h2`` and ``http/1.1`` by ALPN; a server that picks HTTP/1.1 (a proxy without
  HTTP/2) raises :class:`NotNegotiated` before any request is sent, and the transport then
  uses HTTP/1.1 for good. Watches stay on HTTP/1.1 (``http1.Pool.stream``): one per kind,
  opened once.
* Honours the server's ``SETTINGS_MAX_CONCURRENT_STREAMS`` (a request waits for a stream) and
  the flow-control windows of the bodies it sends. It advertises a 4 MiB window per stream and
  1 GiB for the connection (Go's ``transportDefaultStreamFlow`` and ``transportDefaultConnFlow``,
  ``golang.org/x/net/http2/transport.go``) and gives each received byte back at once.
* A connection lost, a protocol error or a GOAWAY with an error fails every exchange on it with
  ``ConnectionResetError``; a graceful GOAWAY (the API server's ``--goaway-chance``, a
  shutdown) fails only the streams above the last one the server took (never processed), lets
  the others finish (jh2 refuses every frame after a GOAWAY; :class:`_StateMachine` takes
  them), and the next request opens a new connection. A request that waited for a stream on a
  connection that went away meanwhile was never sent, and goes to the next connection.
  A connection nearly out of stream ids is retired as after a time-out (below). ``ConnectionResetError`` and
  ``TimeoutError`` are among :data:`scheduler_operator.io.kube.CONNECTION_ERRORS`, so the
  transport retries them as before.
* A request with no answer within ``read_timeout`` raises ``TimeoutError`` and resets its stream,
  and the connection is retired: new requests go to a new one, what is on it may still be
  answered, and a PING closes it at once (failing what is left) if no answer comes within
  ``connect_timeout``. So a black-holed connection takes no more requests after the first
  time-out, and a slow answer does not fail the others (Go checks with a PING too:
  ``ReadIdleTimeout`` and ``PingTimeout``). :meth:`Pool.retire` does the same when a watch goes
  silent or breaks.
* A cancelled request resets its stream (``CANCEL``); the connection stays.
* Asks for gzip, as client-go does, and decompresses such answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import ssl
from collections.abc import Callable, Mapping
from urllib.parse import urlsplit

import jh2.config
import jh2.connection
import jh2.events
import jh2.exceptions
import jh2.settings
from multidict import CIMultiDict

from scheduler_operator.io.http1 import Answer, decoded

log = logging.getLogger(__name__)

STREAM_WINDOW = 4 << 20  # Go's transportDefaultStreamFlow
CONNECTION_WINDOW = 1 << 30  # Go's transportDefaultConnFlow
_DEFAULT_WINDOW = 65535  # RFC 9113 6.9.2: every window starts here
_CONFIG = jh2.config.H2Configuration(
    client_side=True,
    header_encoding=None,
    # Our own headers are well formed; the server's are Go's. Checking them costs CPU per request.
    validate_outbound_headers=False,
    normalize_outbound_headers=False,
    validate_inbound_headers=False,
    normalize_inbound_headers=False,
)


_MOVES = 3  # connections a request that was never sent may try before it fails
_STREAM_LIMIT_UNTIL_SETTINGS = 100  # Go's initialMaxConcurrentStreams, until the server's SETTINGS arrive
_LAST_STREAM_ID = 2**31 - 1  # RFC 9113 5.1.1: a connection runs out of stream ids here
_STREAM_IDS_KEPT = 2 * 1024  # the connection is retired this close to it


class _StateMachine(jh2.connection.H2ConnectionStateMachine):  # type: ignore[misc]
    """jh2's connection states, and frames still taken in CLOSED: after a graceful GOAWAY the
    server answers the streams it took (RFC 9113 6.8), and a connection closed by jh2 is never
    used again (:meth:`_Connection.fail`). jh2 itself refuses every frame but GOAWAY there
    (``H2ConnectionStateMachine._transitions``), so those answers were lost."""

    _transitions = {
        **jh2.connection.H2ConnectionStateMachine._transitions,
        **{
            (jh2.connection.ConnectionState.CLOSED, getattr(jh2.connection.ConnectionInputs, name)): (
                None,
                jh2.connection.ConnectionState.CLOSED,
            )
            for name in (
                "RECV_HEADERS", "RECV_DATA", "RECV_WINDOW_UPDATE", "RECV_PING", "RECV_SETTINGS",
                "RECV_RST_STREAM", "RECV_PRIORITY", "SEND_DATA", "SEND_WINDOW_UPDATE", "SEND_PING",
                "SEND_SETTINGS", "SEND_RST_STREAM",
            )
        },
    }  # fmt: skip


def disabled() -> bool:
    """``DISABLE_HTTP2`` set to anything: HTTP/1.1 only, as client-go reads it
    (``k8s.io/apimachinery/pkg/util/net/http.go``, ``SetTransportDefaults``)."""
    return bool(os.environ.get("DISABLE_HTTP2"))


class NotNegotiated(ConnectionError):
    """The server did not pick ``h2`` by ALPN: no request was sent."""


class _NotSent(ConnectionResetError):
    """The connection went away while the request waited for a stream: it was never sent."""


class _Exchange:
    __slots__ = ("body", "future", "headers", "status")

    def __init__(self, future: asyncio.Future[Answer]) -> None:
        self.future = future
        self.status = 0
        self.headers: CIMultiDict[str] = CIMultiDict()
        self.body: list[bytes] = []


class _Connection(asyncio.Protocol):
    """One HTTP/2 connection: its streams' exchanges, by stream id."""

    def __init__(self, authority: str, read_timeout: float, ping_timeout: float) -> None:
        self.h2 = jh2.connection.H2Connection(_CONFIG)
        self.h2.state_machine = _StateMachine()
        self.settled = False  # the server's SETTINGS arrived
        self.authority = authority.encode("latin-1")
        self.read_timeout = read_timeout
        self.ping_timeout = ping_timeout
        self.transport: asyncio.Transport | None = None
        self.exchanges: dict[int, _Exchange] = {}
        self.failure: BaseException | None = None  # why it takes no new stream
        self.room = asyncio.Event()  # a stream closed, a window grew, a setting changed, or it failed
        self.pings: dict[bytes, asyncio.Future[None]] = {}
        self.checking = False

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.h2.initiate_connection()
        self.h2.update_settings(
            {jh2.settings.SettingCodes.INITIAL_WINDOW_SIZE: STREAM_WINDOW, jh2.settings.SettingCodes.ENABLE_PUSH: 0}
        )
        self.h2.increment_flow_control_window(CONNECTION_WINDOW - _DEFAULT_WINDOW)
        self.flush()

    def data_received(self, data: bytes) -> None:
        try:
            for event in self.h2.receive_data(data):
                self._on(event)
        except jh2.exceptions.H2Error as error:
            self.flush()  # the GOAWAY jh2 wrote
            self.fail(ConnectionResetError(f"HTTP/2 protocol error from the server: {error}"))
            return
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(ConnectionResetError(f"the connection closed ({exc or 'by the server'})"))

    # the exchanges

    def _on(self, event: jh2.events.Event) -> None:
        kind = type(event)
        if kind is jh2.events.DataReceived:
            exchange = self.exchanges.get(event.stream_id)
            if exchange is not None:
                exchange.body.append(event.data)
            if event.flow_controlled_length:
                self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif kind is jh2.events.ResponseReceived:
            exchange = self.exchanges.get(event.stream_id)
            if exchange is not None:
                for name, value in event.headers:
                    if name == b":status":
                        exchange.status = int(value)
                    else:
                        exchange.headers.add(name.decode("latin-1"), value.decode("latin-1"))
        elif kind is jh2.events.StreamEnded:
            exchange = self.exchanges.pop(event.stream_id, None)
            if exchange is not None and not exchange.future.done():
                try:
                    exchange.future.set_result(_answer(exchange))
                except ConnectionError as error:
                    exchange.future.set_exception(error)
            self._closed_stream()
        elif kind is jh2.events.StreamReset:
            exchange = self.exchanges.pop(event.stream_id, None)
            if exchange is not None and not exchange.future.done():
                reset = ConnectionResetError(f"the server reset the stream ({_code(event.error_code)})")
                exchange.future.set_exception(reset)
            self._closed_stream()
        elif kind is jh2.events.ConnectionTerminated:
            self._goaway(event)
        elif kind is jh2.events.PingAckReceived:
            future = self.pings.pop(bytes(event.ping_data), None)
            if future is not None and not future.done():
                future.set_result(None)
        elif kind is jh2.events.RemoteSettingsChanged:
            self.settled = True
            self.room.set()
        elif kind is jh2.events.WindowUpdated:
            self.room.set()

    def _goaway(self, event: jh2.events.ConnectionTerminated) -> None:
        reason = f"the server sent GOAWAY ({_code(event.error_code)})"
        if event.error_code:  # an error: nothing on the connection will be answered
            self.fail(ConnectionResetError(reason))
            return
        self.failure = ConnectionResetError(reason)  # graceful: no new stream, the taken ones finish
        last = event.last_stream_id if event.last_stream_id is not None else 0
        for stream_id in [sid for sid in self.exchanges if sid > last]:
            exchange = self.exchanges.pop(stream_id)
            if not exchange.future.done():
                exchange.future.set_exception(ConnectionResetError(f"{reason}: stream {stream_id} was not taken"))
        self.room.set()
        if not self.exchanges and self.transport is not None:
            self.transport.close()

    def _closed_stream(self) -> None:
        self.room.set()
        if self.failure is not None and not self.exchanges and self.transport is not None:
            self.transport.close()  # retired, or after a graceful GOAWAY: its last stream is done

    def fail(self, error: BaseException) -> None:
        """Close the connection: every exchange on it, and every PING, fails with ``error``."""
        if self.failure is None:
            self.failure = error
        exchanges, self.exchanges = self.exchanges, {}
        for exchange in exchanges.values():
            if not exchange.future.done():
                exchange.future.set_exception(error)
        for future in self.pings.values():
            if not future.done():
                future.set_exception(error)
        self.pings.clear()
        self.room.set()
        if self.transport is not None:
            self.transport.close()

    @property
    def usable(self) -> bool:
        return self.failure is None

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    async def _wait_for_room(self) -> None:
        self.room.clear()
        self.flush()
        await self.room.wait()

    def _stream_limit(self) -> int:
        limit: int = self.h2.remote_settings.max_concurrent_streams
        return limit if self.settled else min(limit, _STREAM_LIMIT_UNTIL_SETTINGS)

    async def request(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None) -> Answer:
        while self.failure is None and self.h2.open_outbound_streams >= self._stream_limit():
            await self._wait_for_room()
        if self.failure is not None:  # never sent: safe to retry
            raise _NotSent(f"{self.failure} (the request was not sent)")
        stream_id = self.h2.get_next_available_stream_id()
        if stream_id >= _LAST_STREAM_ID - _STREAM_IDS_KEPT:
            self.retire("it is running out of stream ids")
        send = [
            (b":method", method.encode("latin-1")),
            (b":scheme", b"https"),
            (b":authority", self.authority),
            (b":path", target.encode("latin-1")),
            (b"accept-encoding", b"gzip"),
        ]
        send += [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
        if body is not None:
            send.append((b"content-length", str(len(body)).encode("latin-1")))
        self.h2.send_headers(stream_id, send, end_stream=not body)
        exchange = _Exchange(asyncio.get_running_loop().create_future())
        self.exchanges[stream_id] = exchange
        deadline = asyncio.timeout(self.read_timeout)  # the body and the answer, together
        try:
            async with deadline:
                if body:
                    await self._send_body(stream_id, body)
                self.flush()
                return await exchange.future
        except TimeoutError:
            self._reset(stream_id)
            if not deadline.expired():
                raise  # the connection failed with a time-out (its PING went unanswered)
            self.retire()
            raise TimeoutError(f"no answer within {self.read_timeout:g} s") from None
        except BaseException:  # a cancel; a failure of the connection (the stream is gone with it)
            self._reset(stream_id)
            raise

    async def _send_body(self, stream_id: int, body: bytes) -> None:
        """The body, as the windows allow; it stops early once the stream is over (answered
        or reset by the server, or failed with the connection): its future tells which."""
        view = memoryview(body)
        while view and stream_id in self.exchanges:
            size = min(len(view), self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size)
            if size <= 0:
                await self._wait_for_room()
                continue
            try:
                self.h2.send_data(stream_id, view[:size].tobytes(), end_stream=size == len(view))
            except jh2.exceptions.StreamClosedError:
                return  # the server reset it: StreamReset has failed its future, or will
            view = view[size:]

    def _reset(self, stream_id: int) -> None:
        if self.exchanges.pop(stream_id, None) is None:
            return  # answered or failed meanwhile
        if self.transport is not None and not self.transport.is_closing():
            with contextlib.suppress(jh2.exceptions.H2Error):
                self.h2.reset_stream(stream_id, jh2.exceptions.ErrorCodes.CANCEL)
            self.flush()
        self._closed_stream()

    # health

    def retire(self, why: str = "a request or a watch timed out") -> None:
        """No new stream goes here (the pool opens another connection); what is on it may still
        be answered, and the connection closes once it is not. A PING closes it at once, failing
        what is left, if the server does not answer it in time: it is likely black-holed."""
        if self.failure is None:
            self.failure = ConnectionResetError(f"the connection was retired: {why}")
        if not self.exchanges:
            if self.transport is not None:
                self.transport.close()
            return
        if not self.checking:
            self.checking = True
            task = asyncio.ensure_future(self.check())
            task.add_done_callback(lambda _task: setattr(self, "checking", False))

    async def check(self) -> bool:
        """PING the server; no answer within ``ping_timeout``: the connection is closed, and
        what is on it fails. True if it answered."""
        if self.transport is None or self.transport.is_closing():
            return False
        data = os.urandom(8)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        try:
            self.h2.ping(data)
        except jh2.exceptions.H2Error:
            return False
        self.pings[data] = future
        self.flush()
        try:
            async with asyncio.timeout(self.ping_timeout):
                await future
        except TimeoutError:
            log.warning("the API server did not answer a PING within %g s: closing its connection", self.ping_timeout)
            self.fail(TimeoutError(f"no answer to a PING within {self.ping_timeout:g} s"))
            return False
        except OSError:
            return False
        return True


def _answer(exchange: _Exchange) -> Answer:
    return Answer(exchange.status, "", exchange.headers, decoded(b"".join(exchange.body), exchange.headers))


def _code(code: object) -> str:
    return getattr(code, "name", None) or str(code)


class Pool:
    """HTTP/2 to one server (``https://host:port``): one connection at a time, opened on demand."""

    def __init__(
        self,
        server: str,
        ssl_context: ssl.SSLContext,
        *,
        connect_timeout: float,
        read_timeout: float,
        prepare_socket: Callable[[socket.socket], None] = lambda _sock: None,
    ) -> None:
        parts = urlsplit(server)
        self._host = parts.hostname or "localhost"
        self._port = parts.port or 443
        self._authority = parts.netloc
        self._prefix = parts.path.rstrip("/")
        self._ssl = ssl_context
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._prepare_socket = prepare_socket
        self._connection: _Connection | None = None
        self._connecting: asyncio.Future[_Connection] | None = None
        self.opened = 0  # connections opened so far

    async def request(self, method: str, target: str, headers: Mapping[str, str], body: bytes | None = None) -> Answer:
        """Send ``method target`` (a path with its query) and read the whole answer."""
        for _ in range(_MOVES):
            connection = self._connection
            if connection is None or not connection.usable:
                connection = await self._connect()
            try:
                return await connection.request(method, self._prefix + target, headers, body)
            except _NotSent:  # on to the next connection, as Go's transport moves such requests
                continue
        raise ConnectionResetError(f"no connection took the request in {_MOVES} tries")

    async def _connect(self) -> _Connection:
        """The live connection, opened once for all the requests that wait on it (a waiter
        cancelled does not cancel the opening; the next request opens anew once it is done)."""
        if self._connecting is None:
            self._connecting = asyncio.ensure_future(self._open())
            self._connecting.add_done_callback(self._opened)
        return await asyncio.shield(self._connecting)

    def _opened(self, connecting: asyncio.Future[_Connection]) -> None:
        if self._connecting is connecting:
            self._connecting = None
        if not connecting.cancelled():
            connecting.exception()  # retrieved here too, should every waiter have left

    async def _open(self) -> _Connection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self._connect_timeout):
            transport, connection = await loop.create_connection(
                lambda: _Connection(self._authority, self._read_timeout, self._connect_timeout),
                self._host,
                self._port,
                ssl=self._ssl,
                server_hostname=self._host,
            )
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
            transport.close()
            raise NotNegotiated(f"{self._authority} did not offer HTTP/2 (ALPN)")
        sock = transport.get_extra_info("socket")
        if sock is not None:
            self._prepare_socket(sock)
        self.opened += 1
        self._connection = connection
        return connection

    def retire(self) -> None:
        """A watch went silent or broke: this connection is likely black-holed too. New requests
        go to a new connection; the old one is PINGed and closed (:meth:`_Connection.retire`)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.retire()

    def drop(self) -> None:
        """Close the live connection: what is on it fails with ``ConnectionResetError``."""
        connection, self._connection = self._connection, None
        if connection is not None:
            if connection.usable:
                with contextlib.suppress(jh2.exceptions.H2Error):
                    connection.h2.close_connection()  # a GOAWAY: the server need not wait for more
                connection.flush()
            connection.fail(ConnectionResetError("the connection was dropped"))

    async def close(self) -> None:
        self.drop()
