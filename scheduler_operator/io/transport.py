"""One async HTTP layer for the operator's traffic to the API server: watches, lists and writes.

The official ``kubernetes`` client is synchronous, decodes into models, has no client-side
rate limiter and no timeouts unless every call passes one. The operator's hot path (the pod and
node watches, ``scheduler_operator.watch.reflector``; binds, pod condition patches, preemption,
events and custom-resource status, ``backend``, ``recorder``, ``writer``) goes through one
:class:`Transport` instead, on the event loop: every request over HTTP/2 on one multiplexed
connection (``http2.Pool``), as client-go's, unless the server does not offer it or
``DISABLE_HTTP2`` is set; then through ``http1.Pool`` (a lean HTTP/1.1 client). The watches'
long streams stay on HTTP/1.1 (``http1.Pool.stream``); with

* the credentials Kubernetes clients use (in-cluster service account, else ``KUBECONFIG``),
  read through the kubernetes client's own loaders so that token refresh and client
  certificates behave as they do there;
* a timeout on every request (``kube.REQUEST_TIMEOUT``: connect, then read) and TCP keepalive
  on every connection, so a silently dead peer is noticed by the kernel as well as by the read
  timeout; watches get a server-side ``timeoutSeconds`` and a client-side idle timeout;
* client-side QPS and burst (:class:`TokenBucket`), kube-scheduler's ``clientConnection``
  (defaults 50 and 100: ``pkg/scheduler/apis/config/v1/defaults.go`` of v1.36.3), taken
  before each request is sent, as client-go's rate limiter;
* retries with backoff on 429 (``Retry-After`` honoured), 5xx and connection errors, with
  ``kube.retry_delay``'s policy. An answer that stays an error raises ``kube.ApiError`` (status,
  ``metav1.Status`` reason and message, ``Retry-After``), from a request and from a watch alike;
  a lost connection raises an ``OSError`` (``kube.CONNECTION_ERRORS``).

The Lease (``leader.py``) has a :class:`Transport` of its own, on a thread and event loop of its
own: renewals never queue behind scheduling's writes, the rate limiter or a long cycle.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass
from http import HTTPStatus
from ssl import SSLContext
from typing import Any
from urllib.parse import urlencode

from kubernetes import client

from scheduler_core.clientcert import load_client_certificate
from scheduler_operator.io import decoding, http1, http2, kube
from scheduler_operator.io.calls import DEFAULT_BURST, DEFAULT_QPS
from scheduler_operator.io.kube import ApiError, describe

log = logging.getLogger(__name__)

CONTENT_JSON = "application/json"
KEEPALIVE_IDLE = 30  # seconds before the first TCP keepalive probe
KEEPALIVE_INTERVAL = 10
KEEPALIVE_COUNT = 3
PAGE_SIZE = 500  # items a list page asks for: client-go's pager default (tools/pager/pager.go defaultPageSize)


class TokenBucket:
    """client-go's ``flowcontrol.NewTokenBucketRateLimiter(qps, burst)``: ``burst`` requests at
    once, then ``qps`` a second. ``qps <= 0`` means no limit (client-go: a negative QPS)."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if qps > 0 and burst < 1:
            raise ValueError("burst must be at least 1 when qps is positive")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(burst)
        self._last = clock()

    async def acquire(self) -> None:
        if self.qps <= 0:
            return
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0  # reserve now; wait for the debt to be paid (FIFO by arrival)
        if self._tokens < 0:
            await self._sleep(-self._tokens / self.qps)


@dataclass(frozen=True)
class Credentials:
    """Where the API server is and how to authenticate, from a kubernetes ``Configuration``."""

    server: str
    ssl: ssl.SSLContext | bool
    token: Callable[[], str | None]
    # The same, offering HTTP/2 by ALPN (requests); None: HTTP/1.1 only (plain HTTP, DISABLE_HTTP2)
    http2: SSLContext | None = None

    @classmethod
    def load(
        cls, source: kube.KubeconfigSource = kube.IN_CLUSTER_ELSE_KUBECONFIG, *, in_cluster_first: bool = True
    ) -> Credentials:
        """From ``source`` (in-cluster, else ``KUBECONFIG``, by default): ``kube.load_configuration``."""
        return cls.of(kube.load_configuration(source, in_cluster_first=in_cluster_first))

    @classmethod
    def of(cls, configuration: client.Configuration) -> Credentials:
        def tls() -> ssl.SSLContext:
            context = ssl.create_default_context(cafile=configuration.ssl_ca_cert or None)
            if configuration.cert_file:
                load_client_certificate(context, configuration.cert_file, configuration.key_file or None)
            if not configuration.verify_ssl:
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            return context

        context: ssl.SSLContext | bool = False
        multiplexed: ssl.SSLContext | None = None
        if str(configuration.host).startswith("https"):
            context = tls()  # HTTP/1.1: the watches (and the requests, if the server has no HTTP/2)
            if not http2.disabled():
                multiplexed = tls()
                multiplexed.set_alpn_protocols(["h2", "http/1.1"])

        def token() -> str | None:
            # The client's own auth settings: they refresh an in-cluster token when it rotates.
            setting = configuration.auth_settings().get("BearerToken")
            value = setting.get("value") if setting else None
            return str(value) if value else None

        return cls(str(configuration.host).rstrip("/"), context, token, multiplexed)


def _keepalive(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL),
        ("TCP_KEEPCNT", KEEPALIVE_COUNT),
    ):
        if hasattr(socket, option):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


class Transport:
    def __init__(
        self,
        credentials: Credentials,
        *,
        qps: float = DEFAULT_QPS,
        burst: int = DEFAULT_BURST,
        max_connections: int = 64,
        request_timeout: tuple[float, float] = kube.REQUEST_TIMEOUT,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.credentials = credentials
        self.limiter = TokenBucket(qps, burst)
        self._max_connections = max_connections
        self._connect_timeout, self._read_timeout = request_timeout
        self._pool: http1.Pool | None = None  # the watches' streams; requests when HTTP/2 is not spoken
        self._http2: http2.Pool | None = None
        if credentials.http2 is not None:
            self._http2 = http2.Pool(
                credentials.server, credentials.http2, connect_timeout=self._connect_timeout,
                read_timeout=self._read_timeout, prepare_socket=_keepalive,
            )  # fmt: skip
        self.sleep = sleep
        self.requests = 0
        self.failed_writes: dict[str, int] = {}  # what -> count of writes that finally failed
        self.on_failed_write: Callable[[str], None] = lambda _what: None  # metrics (io_metrics)
        # Called on every answer of the server (readiness: "the API was reachable recently").
        self.contact: Callable[[], None] = lambda: None
        # Around each attempt, once it is about to be sent: the Lease's fence (``fence.Fence.guard``)
        self.guard: Callable[[str, str], AbstractContextManager[None]] = lambda _method, _path: nullcontext()

    def _requests(self) -> http1.Pool:
        if self._pool is None:
            self._pool = http1.Pool(
                self.credentials.server,
                self.credentials.ssl,
                max_connections=self._max_connections,
                connect_timeout=self._connect_timeout,
                read_timeout=self._read_timeout,
                prepare_socket=_keepalive,
            )
        return self._pool

    def _headers(self, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": CONTENT_JSON, "User-Agent": "crd-scheduler"}
        token = self.credentials.token()
        if token:
            headers["Authorization"] = token
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def _once(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        body: Any,
        content_type: str | None,
        decode: bool,
    ) -> Any:
        await self.limiter.acquire()
        self.requests += 1
        data = decoding.dumps(body) if body is not None else None
        target = f"{path}?{urlencode(params)}" if params else path
        headers = self._headers(content_type if data is not None else None)
        with self.guard(method, path):
            answer = await self._exchange(method, target, headers, data)
        if not HTTPStatus.OK <= answer.status < HTTPStatus.MULTIPLE_CHOICES:
            raise ApiError.of_answer(answer.status, answer.reason, answer.body, answer.headers)
        self.contact()
        return decoding.loads_api(answer.body) if answer.body and decode else None

    async def _exchange(self, method: str, target: str, headers: Mapping[str, str], data: bytes | None) -> http1.Answer:
        """One request and its whole answer: over HTTP/2 while the server speaks it, else HTTP/1.1."""
        if self._http2 is not None:
            try:
                return await self._http2.request(method, target, headers, data)
            except http2.NotNegotiated as error:  # before anything was sent
                log.info("%s; requests go over HTTP/1.1", error)
                self._http2 = None
        return await self._requests().request(method, target, headers, data)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str = CONTENT_JSON,
        retry: bool = True,
        decode: bool = True,
    ) -> Any:
        """The decoded JSON answer of ``method path``; retried as ``kube.retry_delay`` says.

        ``decode=False``: the answer's body is not decoded (None is returned) once its HTTP
        status says success; for writes whose answer nobody reads (a binding's ``Status``, a
        created Event). An error's body is read either way (``kube.ApiError.of_answer``)."""
        attempt = 0
        while True:
            try:
                return await self._once(method, path, params, body, content_type, decode)
            except Exception as error:
                delay = kube.retry_delay(attempt, error) if retry else None
                if delay is None:
                    raise
                log.warning("%s %s failed (%s); retrying in %.1f s", method, path, describe(error), delay)
                await self.sleep(delay)
                attempt += 1

    async def list_items(self, path: str) -> list[Any]:
        """Every item of the collection at ``path``, page by page (:func:`pages`)."""
        return [item async for page in pages(self.request, path) for item in page.get("items") or []]

    def count_failure(self, what: str) -> None:
        """A write that finally failed: counted by what it was (it is logged by the caller)."""
        self.failed_writes[what] = self.failed_writes.get(what, 0) + 1
        self.on_failed_write(what)

    @asynccontextmanager
    async def stream(self, path: str, params: Mapping[str, str], *, idle_timeout: float) -> AsyncIterator[http1.Stream]:
        """A streaming GET (a watch): the body's reader (``readany``); a read that waits
        ``idle_timeout`` seconds raises ``TimeoutError`` (the server sends a bookmark at least
        every minute). A watch that goes silent or breaks, before or after its headers, closes
        every idle pooled connection too (``http1.Pool.stream``): they are likely dead as well,
        and the re-list that follows must not wait out the read time-out on one of them."""
        await self.limiter.acquire()
        self.requests += 1
        target = f"{path}?{urlencode(params)}" if params else path
        try:
            async with self._requests().stream("GET", target, self._headers(None), idle_timeout=idle_timeout) as answer:
                if answer.status != HTTPStatus.OK:
                    raise ApiError.of_answer(answer.status, answer.reason, await answer.read(), answer.headers)
                self.contact()
                yield answer
        except (TimeoutError, OSError):
            if self._http2 is not None:  # the requests' connection is likely dead too
                self._http2.retire()
            raise

    async def close(self) -> None:
        if self._http2 is not None:
            await self._http2.close()
        if self._pool is not None:
            await self._pool.close()
            self._pool = None


async def pages(
    request: Callable[..., Awaitable[Any]],
    path: str,
    params: Mapping[str, str] | None = None,
    *,
    limit: int = PAGE_SIZE,
) -> AsyncGenerator[dict[str, Any]]:
    """Every page of the collection at ``path`` through ``request`` (``Transport.request``):
    ``limit``/``continue`` as client-go's pager, ``params`` added to each request. The request
    for the next page is sent before a page is yielded, so the server prepares it while the
    caller works on this one."""

    def fetch(token: str | None) -> asyncio.Future[Any]:
        query = {"limit": str(limit), **(params or {})}
        if token:
            query["continue"] = token
        return asyncio.ensure_future(request("GET", path, params=query))

    fetching = fetch(None)
    try:
        while True:
            page = await fetching
            token = (page.get("metadata") or {}).get("continue")
            if token:
                fetching = fetch(str(token))
                await asyncio.sleep(0)  # let the request go out before this page is handled
            yield page
            if not token:
                return
    finally:
        if not fetching.done():
            fetching.cancel()
