"""Fault injection for the operator's e2e tests (no tests here): proxies between the operator
and the real API server, an API server restart, and a plugin that raises.

* :class:`TcpProxy`: a loopback TCP proxy (TLS passes through untouched, the server's
  certificate is valid for 127.0.0.1) that can *hang*: every connection open at that moment, and
  every one accepted until :meth:`TcpProxy.resume`, stops forwarding for good without being
  closed, as a silently dead peer or a dropped NAT entry looks to the client.
* :class:`HttpProxy`: an HTTP proxy (aiohttp) the operator reaches over plain HTTP on loopback
  and that forwards every request over TLS to the API server, bearer token included. It can
  answer the next matching requests with 429 as API Priority and Fairness does, and end the
  open watches of a path with a 410 "Expired" ERROR event, holding that path's requests back
  for a gap so that changes happen while the operator is not watching.
* :func:`restart_apiserver`: stop kube-apiserver of a *private* dev cluster, wait, start it
  again with the same command line (``/proc``), and update its pid file for ``dev-cluster down``;
  :func:`pause_apiserver` freezes it (SIGSTOP) for a while instead.
* :func:`plugin_env`: test plugins on a folder put on the operator's ``PYTHONPATH``,
  registered through the real ``crd_scheduler.plugins`` entry-point group: one that raises,
  and a marker that keeps other tests' operators away from these tests' pods.

Each proxy runs its own event loop on a daemon thread; the tests drive it from theirs.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import yaml
from aiohttp import ClientError, ClientSession, ClientTimeout, TCPConnector, web

from tests.e2e.operator_support import Env, OperatorProcess

T = TypeVar("T")

# upstream staging/src/k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go, tooManyRequests
TOO_MANY_REQUESTS = "Too many requests, please try again later."
# upstream staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go (errors.NewResourceExpired)
EXPIRED = {
    "type": "ERROR",
    "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "too old resource version: 1 (2)", "reason": "Expired", "code": 410,
    },
}  # fmt: skip
HOP_BY_HOP = frozenset(
    {"host", "connection", "keep-alive", "transfer-encoding", "content-length", "accept-encoding", "content-encoding"}
)


class _LoopThread:
    """An event loop on a daemon thread, for servers the (synchronous) tests drive."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, work: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def stop(self) -> None:
        """Cancel what still runs (handlers of open streams), then end and close the loop."""

        async def cancel_all() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        self.run(cancel_all())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


# -- TCP ------------------------------------------------------------------------------------


class TcpProxy:
    """127.0.0.1:``port`` → ``target``; :meth:`hang` black-holes connections (see module doc)."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._thread = _LoopThread("tcp-proxy")
        self._hanging = False
        self._open: set[_Connection] = set()
        self._dead: list[_Connection] = []  # black-holed, kept open
        self.connections = 0
        self._server = self._thread.run(asyncio.start_server(self._accept, "127.0.0.1", 0))
        self.port: int = self._server.sockets[0].getsockname()[1]

    @property
    def hung(self) -> int:
        return len(self._dead)

    def hang(self) -> None:
        """Every open connection, and every new one until :meth:`resume`, stops forwarding."""

        def hang() -> None:
            self._hanging = True
            for connection in list(self._open):
                self._bury(connection)

        self._thread.loop.call_soon_threadsafe(hang)

    def resume(self) -> None:
        """New connections forward again; the hung ones stay hung."""
        self._hanging = False

    def _bury(self, connection: _Connection) -> None:
        connection.dead = True
        self._open.discard(connection)
        self._dead.append(connection)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        connection = _Connection(writer)
        if self._hanging:
            self._bury(connection)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        connection.upstream = up_writer
        self._open.add(connection)
        await asyncio.gather(
            self._pump(reader, up_writer, connection), self._pump(up_reader, writer, connection), return_exceptions=True
        )
        if not connection.dead:
            self._open.discard(connection)
            for w in (writer, up_writer):
                w.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: _Connection) -> None:
        while True:
            chunk = await reader.read(65536)
            if connection.dead:
                await asyncio.Event().wait()  # never forwards again, never closes
            if not chunk:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(chunk)
            await writer.drain()

    def close(self) -> None:
        self._server.close()
        for connection in self._dead + list(self._open):
            for writer in (connection.client, connection.upstream):
                if writer is not None:
                    self._thread.loop.call_soon_threadsafe(writer.close)
        self._thread.stop()


@dataclass(eq=False)
class _Connection:
    client: asyncio.StreamWriter
    upstream: asyncio.StreamWriter | None = None
    dead: bool = False


# -- HTTP -----------------------------------------------------------------------------------

Matcher = Callable[[str, str], bool]  # (method, path) -> bool


def leases(method: str, path: str) -> bool:
    return "/leases" in path


def bindings(method: str, path: str) -> bool:
    return method == "POST" and path.endswith("/binding")


def writes(method: str, path: str) -> bool:
    """Writes other than the Lease's (renewals are the leader-election tests' business)."""
    return method not in ("GET", "HEAD", "OPTIONS") and "/leases" not in path


def reports(method: str, path: str) -> bool:
    """Writes other than bindings and the Lease's: conditions, events, statuses."""
    return writes(method, path) and not bindings(method, path)


@dataclass
class _Throttle:
    match: Matcher
    left: int
    every: int
    seen: int = 0


@dataclass
class _Expiry:
    prefix: str
    gap: float
    fired: threading.Event = field(default_factory=threading.Event)
    until: float = 0.0


class HttpProxy:
    """http://127.0.0.1:``port`` → the API server over TLS (see module doc)."""

    def __init__(self, upstream: str, ca_data: bytes) -> None:
        self._upstream = upstream.rstrip("/")
        self._ssl = ssl.create_default_context(cadata=ca_data.decode())
        self._thread = _LoopThread("http-proxy")
        self._throttles: list[_Throttle] = []
        self._delays: list[tuple[Matcher, float]] = []
        self._expiries: list[_Expiry] = []
        self._wake: asyncio.Event | None = None
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status) answered
        self._session, self._runner, self.port = self._thread.run(self._start())

    async def _start(self) -> tuple[ClientSession, web.AppRunner, int]:
        self._wake = asyncio.Event()
        session = ClientSession(connector=TCPConnector(ssl=self._ssl, limit=0), timeout=ClientTimeout(total=None))
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port: int = runner.addresses[0][1]
        return session, runner, port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def throttle(self, match: Matcher, count: int, every: int = 1) -> None:
        """Answer 429 (Retry-After: 1) to ``count`` of the matching requests, one in ``every``."""
        self._throttles.append(_Throttle(match, count, every))

    def delay(self, match: Matcher, seconds: float) -> None:
        """Hold each matching request ``seconds`` before forwarding it (a slow server)."""
        self._delays.append((match, seconds))

    def throttled(self) -> int:
        return sum(1 for _, _, status in self.requests if status == 429)

    def expire_watches(self, prefix: str, gap: float) -> threading.Event:
        """End the open watches under ``prefix`` with a 410 ERROR event, and hold that path's
        requests back for ``gap`` seconds after; the event is set once a watch was ended."""
        expiry = _Expiry(prefix, gap)
        self._expiries.append(expiry)

        def wake() -> None:
            assert self._wake is not None
            self._wake.set()
            self._wake = asyncio.Event()

        self._thread.loop.call_soon_threadsafe(wake)
        return expiry.fired

    def _throttle_now(self, method: str, path: str) -> bool:
        for rule in self._throttles:
            if rule.left > 0 and rule.match(method, path):
                rule.seen += 1
                if rule.seen % rule.every == 0:
                    rule.left -= 1
                    return True
        return False

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method, path = request.method, request.path
        for expiry in self._expiries:
            if path.startswith(expiry.prefix) and expiry.fired.is_set():
                await asyncio.sleep(max(expiry.until - time.monotonic(), 0.0))
        if self._throttle_now(method, path):
            self.requests.append((method, path, 429))
            return web.Response(status=429, text=TOO_MANY_REQUESTS + "\n", headers={"Retry-After": "1"})
        for match, seconds in self._delays:
            if match(method, path):
                await asyncio.sleep(seconds)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read()
        response = web.StreamResponse()
        try:
            async with self._session.request(
                method, self._upstream + str(request.rel_url), headers=headers, data=body or None,
                skip_auto_headers=("Content-Type",),  # the Python client sends JSON without one
            ) as upstream:  # fmt: skip
                response = web.StreamResponse(
                    status=upstream.status,
                    headers={k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP},
                )
                await response.prepare(request)
                self.requests.append((method, path, upstream.status))
                if request.query.get("watch") in ("true", "1"):
                    await self._watch(path, upstream.content, response)
                else:
                    async for chunk in upstream.content.iter_any():
                        await response.write(chunk)
                await response.write_eof()
        except (ClientError, ConnectionError):  # either side went away (the proxy is closing)
            if not response.prepared:
                raise
        return response

    async def _watch(self, path: str, content: Any, response: web.StreamResponse) -> None:
        """Forward whole lines of a watch; end it with 410 when an expiry for its path comes."""
        pending = b""
        reading: asyncio.Future[Any] = asyncio.ensure_future(content.readany())
        woken: asyncio.Future[Any] | None = None
        try:
            while True:
                expiry = next((e for e in self._expiries if path.startswith(e.prefix) and not e.fired.is_set()), None)
                if expiry is not None:
                    await response.write(json.dumps(EXPIRED).encode() + b"\n")
                    expiry.until = time.monotonic() + expiry.gap
                    expiry.fired.set()
                    return
                assert self._wake is not None
                woken = asyncio.ensure_future(self._wake.wait())
                done, _ = await asyncio.wait({reading, woken}, return_when=asyncio.FIRST_COMPLETED)
                woken.cancel()
                if reading not in done:
                    continue
                chunk = reading.result()
                if not chunk:
                    return
                pending += chunk
                lines, _, pending = pending.rpartition(b"\n")
                if lines:
                    await response.write(lines + b"\n")
                reading = asyncio.ensure_future(content.readany())
        finally:
            for future in (reading, woken):
                if future is not None:
                    future.cancel()

    def close(self) -> None:
        async def shutdown() -> None:
            await self._session.close()  # ends the watches still forwarded
            await self._runner.cleanup()

        self._thread.run(shutdown())
        self._thread.stop()


# -- kubeconfigs ----------------------------------------------------------------------------


def server_of(kubeconfig: Path) -> tuple[str, bytes]:
    """The server URL and the CA bundle of a kubeconfig's first cluster."""
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    return cluster["server"], base64.b64decode(cluster["certificate-authority-data"])


def kubeconfig_via(kubeconfig: Path, server: str, dest: Path) -> Path:
    """A copy of ``kubeconfig`` whose clusters point at ``server`` (plain HTTP drops the CA)."""
    config = yaml.safe_load(kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = server
        if server.startswith("http://"):
            entry["cluster"].pop("certificate-authority-data", None)
    dest.write_text(yaml.safe_dump(config))
    return dest


def tcp_target(kubeconfig: Path) -> tuple[str, int]:
    parts = urlsplit(server_of(kubeconfig)[0])
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


# -- the API server -------------------------------------------------------------------------


def restart_apiserver(state: Path, down_for: float) -> float:
    """Stop the kube-apiserver of the dev cluster in ``state`` (SIGKILL), keep it down for
    ``down_for`` seconds, start it again as it was; the seconds it was really unreachable."""
    pidfile = state / "run" / "pids" / "kube-apiserver.pid"
    pid = int(pidfile.read_text().split()[0])
    argv = [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    cwd = os.readlink(f"/proc/{pid}/cwd")
    environ = dict(
        item.decode().split("=", 1) for item in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item
    )
    stopped = time.monotonic()
    os.kill(pid, signal.SIGKILL)  # SIGTERM drains watches for up to a minute
    while Path(f"/proc/{pid}").exists() and _state(pid) not in ("Z", None):
        time.sleep(0.05)
    time.sleep(max(down_for - (time.monotonic() - stopped), 0.0))
    log = state / "run" / "logs" / "kube-apiserver.log"
    with log.open("ab") as out:
        child = subprocess.Popen(
            argv, cwd=cwd, env=environ, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    started = Path(f"/proc/{child.pid}/stat").read_text()
    pidfile.write_text(f"{child.pid} {started[started.rindex(')') + 2 :].split()[19]}\n")
    child.returncode = 0  # outlives the test like the rest of the cluster; dev-cluster stops it
    return time.monotonic() - stopped


def pause_apiserver(state: Path, down_for: float) -> None:
    """Freeze the kube-apiserver of the dev cluster in ``state`` (SIGSTOP) for ``down_for``
    seconds, then let it go on (SIGCONT): its connections stay open and silent meanwhile, as a
    server stuck in a long GC pause or a frozen VM looks to its clients."""
    pid = int((state / "run" / "pids" / "kube-apiserver.pid").read_text().split()[0])
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(down_for)
    finally:
        os.kill(pid, signal.SIGCONT)


def _state(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()[0]


# -- test plugins ---------------------------------------------------------------------------
# Every operator the e2e tests start serves every namespace's profiles, so another test's
# operator on the shared cluster would bind these tests' pods too. Their profiles therefore
# enable MARKER, a no-op plugin only these tests' operators have: anywhere else the profile is
# invalid and its pods are left alone.

RAISE_LABEL = "faults.crd-scheduler.io/raise"
KILL_LOOP_LABEL = "faults.crd-scheduler.io/kill-loop"
RAISING_PLUGIN = "FaultRaisesOnce"
RAISING_POST_FILTER = "FaultPostFilterRaises"
LOOP_KILLER = "FaultKillsTheLoop"
MARKER = "FaultTestMarker"
_PLUGIN_SOURCE = f'''
"""Test plugins: {MARKER} does nothing; {RAISING_PLUGIN}'s Filter raises on the first cycle of
each pod labelled {RAISE_LABEL}, then passes."""

_raised = set()


class Marker:
    name = "{MARKER}"

    def __init__(self, args, handle):
        pass

    def filter(self, state, pod, node):
        return None


class RaisesOnce:
    name = "{RAISING_PLUGIN}"

    def __init__(self, args, handle):
        pass

    def filter(self, state, pod, node):
        if "{RAISE_LABEL}" in pod.labels and pod.uid not in _raised:
            _raised.add(pod.uid)
            raise RuntimeError("injected fault in " + pod.key)
        return None


class PostFilterRaises:
    """A PostFilter with a bug: it raises for every unschedulable pod."""

    name = "{RAISING_POST_FILTER}"

    def __init__(self, args, handle):
        pass

    def post_filter(self, state, pod, statuses):
        raise RuntimeError("bug in a PostFilter plugin")


class KillsTheLoop:
    """A fault injected into the scheduling loop itself, outside any plugin call: the first pod
    labelled {KILL_LOOP_LABEL} makes the queue's next pop raise, which ends Scheduler.run."""

    name = "{LOOP_KILLER}"

    def __init__(self, args, handle):
        self.queue = handle._activate.__self__

    def filter(self, state, pod, node):
        if "{KILL_LOOP_LABEL}" in pod.labels and "pop" not in vars(self.queue):
            def pop():
                raise RuntimeError("injected fault in the scheduling loop")
            self.queue.pop = pop
        return None
'''


def plugin_env(folder: Path) -> dict[str, str]:
    """Write the test plugins and their entry points into ``folder``; the environment that
    puts them on an operator's ``PYTHONPATH``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "crd_fault_plugin.py").write_text(_PLUGIN_SOURCE)
    info = folder / "crd_fault_plugin-0.0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: crd-fault-plugin\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text(
        f"[crd_scheduler.plugins]\n{MARKER} = crd_fault_plugin:Marker\n{RAISING_PLUGIN} = crd_fault_plugin:RaisesOnce\n"
        f"{RAISING_POST_FILTER} = crd_fault_plugin:PostFilterRaises\n{LOOP_KILLER} = crd_fault_plugin:KillsTheLoop\n"
    )
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


def marked(*enabled: str) -> dict[str, Any]:
    """A profile's ``plugins`` with MARKER (and ``enabled``) on."""
    return {"multiPoint": {"enabled": [{"name": name} for name in (MARKER, *enabled)]}}


def start_marked(env: Env, *extra: str, **kwargs: Any) -> OperatorProcess:
    """``env.start_operator`` with the test plugins installed (profiles use :func:`marked`)."""
    return env.start_operator(*extra, env=plugin_env(env.tmp / "plugins"), **kwargs)
