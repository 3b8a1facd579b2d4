"""One HTTP extender: upstream's ``HTTPExtender`` (``pkg/scheduler/extender.go``, v1.36.3).

Each call POSTs JSON (:mod:`scheduler_core.extender.wire`) to ``urlPrefix/verb`` and awaits the
answer on the event loop (aiohttp), so a slow extender never blocks Lease renewal or the watch
handlers. Semantics kept from upstream:

- a verb left empty means the extender does not serve that call (``IsFilter``,
  ``IsPrioritizer``, ``IsBinder``, ``SupportsPreemption``);
- ``IsInterested``: with ``managedResources``, only pods with a container or init container
  requesting or limiting one of them are sent;
- ``nodeCacheCapable``: node names only, else whole Node objects; a filter answer naming a node
  that was not sent is an error;
- ``httpTimeout`` defaults to 5 s; ``enableHTTPS`` without a CA skips verification, as
  upstream's ``makeTransport`` does;
- errors read as Go's ``net/http`` client writes them (``Post "URL": dial tcp ...: connect:
  connection refused``; ``failed filter with extender at URL URL, code 500``), since a
  non-ignorable extender's error becomes the pod's FailedScheduling message.

Full-object mode differs in one way, on purpose: upstream builds fresh NodeInfos (without their
pods) from the Node objects an extender returns and scores those; here the returned names select
the scheduler's own NodeInfos, so Score plugins see the pods already on each node.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import ssl
import tempfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from scheduler_core.clientcert import load_client_certificate
from scheduler_core.config import Extender
from scheduler_core.extender import wire
from scheduler_core.framework import Manifest, manifest

if TYPE_CHECKING:  # imported when a session is made: simulate without extenders never loads it
    import aiohttp

DEFAULT_TIMEOUT_SECONDS = 5.0  # extender.go DefaultExtenderTimeout
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ExtenderError(Exception):
    """A call that failed; ``str()`` is upstream's error text."""


def parse_duration(text: str) -> float:
    """Seconds of a Go duration (``time.ParseDuration``: ``5s``, ``1m30s``, ``250ms``, ``0``)."""
    text = text.strip()
    if text in ("", "0"):
        return 0.0
    sign = -1.0 if text.startswith("-") else 1.0
    body = text.lstrip("+-")
    pos, total = 0, 0.0
    while pos < len(body):
        match = _DURATION.match(body, pos)
        if match is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(match[1]) * _UNITS[match[2]]
        pos = match.end()
    if not body:
        raise ValueError(f'time: invalid duration "{text}"')
    return sign * total


def _pem(data: str, path: str) -> bytes | None:
    if data:
        return base64.b64decode(data)
    if path:
        with open(path, "rb") as stream:
            return stream.read()
    return None


def ssl_context(config: Extender) -> ssl.SSLContext | None:
    """Upstream ``makeTransport``: the TLS settings, or None for the defaults of the URL's scheme."""
    tls = config.tls_config
    if tls is None and not config.enable_https:
        return None
    ca = _pem(tls.ca_data, tls.ca_file) if tls is not None else None
    insecure = tls.insecure if tls is not None else False
    if config.enable_https and ca is None:
        insecure = True
    context = ssl.create_default_context()
    if insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif ca is not None:
        context = ssl.create_default_context(cadata=ca.decode())
    if tls is not None:
        cert = _pem(tls.cert_data, tls.cert_file)
        key = _pem(tls.key_data, tls.key_file)
        if cert is not None and key is not None:
            _load_client_pair(context, cert, key)
    return context


def _load_client_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """``load_cert_chain`` reads files only: write the pair to a private temporary folder."""
    with tempfile.TemporaryDirectory(prefix="crd-scheduler-extender-") as folder:
        cert_path, key_path = os.path.join(folder, "tls.crt"), os.path.join(folder, "tls.key")
        for path, data in ((cert_path, cert), (key_path, key)):
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as stream:
                stream.write(data)
        load_client_certificate(context, cert_path, key_path)


def pod_requests_any(pod: Manifest, resources: frozenset[str]) -> bool:
    """Upstream ``hasManagedResources`` over containers and init containers (requests and limits)."""
    spec = manifest.spec(pod)
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            res = container.get("resources") or {}
            for kind in ("requests", "limits"):
                if any(name in resources for name in res.get(kind) or {}):
                    return True
    return False


class HTTPExtender:
    """An extender of a profile; built once per profile build (hot reload builds a new one)."""

    def __init__(self, config: Extender) -> None:
        self.config = config
        self.name = config.url_prefix  # upstream Name(): the URL prefix
        self.weight = config.weight
        self.ignorable = config.ignorable
        self.node_cache_capable = config.node_cache_capable
        self.managed_resources = frozenset(r.name for r in config.managed_resources)
        # What it serves: the verbs it has (upstream IsFilter, IsPrioritizer, IsBinder, SupportsPreemption).
        self.is_filter = bool(config.filter_verb)
        self.is_prioritizer = bool(config.prioritize_verb)
        self.is_binder = bool(config.bind_verb)
        self.supports_preemption = bool(config.preempt_verb)
        timeout = parse_duration(config.http_timeout) if config.http_timeout else 0.0
        self.timeout = timeout or DEFAULT_TIMEOUT_SECONDS
        self._ssl = ssl_context(config)
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    # -- what it serves -------------------------------------------------------------------------
    def is_interested(self, pod: Manifest) -> bool:
        return not self.managed_resources or pod_requests_any(pod, self.managed_resources)

    # -- calls ----------------------------------------------------------------------------------
    async def filter(
        self, pod: Manifest, nodes: Sequence[Manifest]
    ) -> tuple[list[str], dict[str, str], dict[str, str]]:
        """Upstream ``Filter``: the names that pass, failed and failed-and-unresolvable nodes."""
        sent = [str(manifest.meta(n).get("name", "")) for n in nodes]
        if not self.is_filter:
            return sent, {}, {}
        args = wire.extender_args(pod, nodes, names_only=self.node_cache_capable)
        result = wire.FilterResult(await self.send(self.config.filter_verb, args))
        if result.error:
            raise ExtenderError(result.error)
        known = set(sent)
        passed: list[str] = []
        if self.node_cache_capable and result.node_names is not None:
            passed = result.node_names
        elif result.nodes is not None:
            passed = result.nodes
        for name in passed:
            if name not in known:
                raise ExtenderError(
                    f"extender {self.name!r} claims a filtered node {name!r} which is not found in the input node list"
                )
        return passed, result.failed, result.failed_unresolvable

    async def prioritize(self, pod: Manifest, nodes: Sequence[Manifest]) -> list[tuple[str, int]]:
        """Upstream ``Prioritize``: (host, score) as the extender answered (0..10, unchecked)."""
        if not self.is_prioritizer:
            return [(str(manifest.meta(n).get("name", "")), 0) for n in nodes]
        args = wire.extender_args(pod, nodes, names_only=self.node_cache_capable)
        return wire.host_priorities(await self.send(self.config.prioritize_verb, args))

    async def bind(self, *, name: str, namespace: str, uid: str, node: str) -> None:
        """Upstream ``Bind``: the extender binds; its ``Error`` fails the binding."""
        if not self.is_binder:
            raise ExtenderError("unexpected empty bindVerb in extender")
        args = wire.binding_args(name=name, namespace=namespace, uid=uid, node=node)
        error = wire.binding_error(await self.send(self.config.bind_verb, args))
        if error:
            raise ExtenderError(error)

    async def process_preemption(
        self, pod: Manifest, victims: Mapping[str, tuple[Sequence[Manifest], int]]
    ) -> dict[str, tuple[list[str], int]]:
        """Upstream ``ProcessPreemption``: the candidates the extender keeps, as victim UIDs."""
        if not self.supports_preemption:
            raise ExtenderError(f"preempt verb is not defined for extender {self.name} but run into ProcessPreemption")
        args = wire.preemption_args(pod, victims, meta=self.node_cache_capable)
        return wire.meta_victims(await self.send(self.config.preempt_verb, args))

    async def send(self, verb: str, args: Manifest) -> Any:
        """Upstream ``send``: POST, 200 required, decode the first JSON value."""
        import aiohttp  # loaded by _client already

        url = self.name.rstrip("/") + "/" + verb
        session = self._client()
        try:
            async with session.post(url, json=args, ssl=self._ssl_arg(), server_hostname=self._server_name()) as resp:
                if resp.status != 200:
                    raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status}")
                body = await resp.read()
        except ExtenderError:
            raise
        except TimeoutError:
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)'
            ) from None
        except aiohttp.ClientConnectorCertificateError as exc:
            raise ExtenderError(f'Post "{url}": tls: failed to verify certificate: {_x509(exc)}') from None
        except aiohttp.ClientConnectorError as exc:
            raise ExtenderError(f'Post "{url}": dial tcp {exc.host}:{exc.port}: connect: {_reason(exc)}') from None
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise ExtenderError(f'Post "{url}": {exc}') from None
        try:
            return wire.decode(body)
        except wire.DecodeError as exc:
            raise ExtenderError(str(exc)) from None

    def _ssl_arg(self) -> ssl.SSLContext | bool:
        return self._ssl if self._ssl is not None else True

    def _server_name(self) -> str | None:
        tls = self.config.tls_config
        return tls.server_name if tls is not None and tls.server_name else None

    def _client(self) -> aiohttp.ClientSession:
        """One keep-alive session per event loop (simulate runs a loop per simulation)."""
        import aiohttp  # only a profile with an HTTP extender needs it

        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                connector=aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True),
                json_serialize=_dumps,
                skip_auto_headers=("User-Agent",),
            )
            self._session_loop = loop
        return self._session

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _reason(exc: aiohttp.ClientConnectorError) -> str:
    if isinstance(exc.os_error, ConnectionRefusedError):
        return "connection refused"
    return exc.os_error.strerror or str(exc.os_error)


def _x509(exc: aiohttp.ClientConnectorCertificateError) -> str:
    detail = str(getattr(exc.certificate_error, "verify_message", "") or exc.certificate_error)
    if "unable to get local issuer" in detail or "self-signed" in detail or "self signed" in detail:
        return "x509: certificate signed by unknown authority"
    if "hostname mismatch" in detail or "IP address mismatch" in detail:
        return f"x509: certificate is valid for other names ({detail})"
    return f"x509: {detail}"
