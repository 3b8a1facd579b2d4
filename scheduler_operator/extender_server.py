"""``crd-scheduler extender serve``: our plugins as an HTTP extender of a stock kube-scheduler.

The answers come from :class:`scheduler_core.extender.service.ExtenderService`; this module is
the I/O around it:

- HTTP (aiohttp, optionally TLS): ``POST /filter``, ``/prioritize``, ``/preempt``, ``/bind``
  (configure kube-scheduler with ``urlPrefix: http(s)://ADDR`` and those verbs), ``GET /healthz``
  (200 once nodes and pods are listed, 503 before), ``GET /metrics`` (Prometheus text).
- A request that cannot be read gets 400 with the reason as plain text; a plugin's failure gets
  500 with its message. A response never carries a traceback; unexpected exceptions are logged.
- One log line per request: verb, HTTP status, milliseconds, pod, number of nodes.
- The cache follows the API with a list-then-watch per resource (nodes; pods that are assigned
  and not terminal, the field selector kube-scheduler's own informer uses), each in a thread of
  the official client, events handed to the event loop; a 410 Gone re-lists and deletes what
  vanished. This is what makes ``nodeCacheCapable: true`` work.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import ssl
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from kubernetes import client, watch

from scheduler_core.extender.service import BadRequest, ExtenderService, ServiceError
from scheduler_core.framework import ClusterAPI, Code, PodInfo, Status
from scheduler_core.framework.writes import Write, Written
from scheduler_core.metrics.registry import CONTENT_TYPE, Registry
from scheduler_operator import kube
from scheduler_operator.informer import name_of, uid_of

log = logging.getLogger(__name__)

VERBS = ("filter", "prioritize", "preempt", "bind")
SCHEDULED_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"  # upstream informer selector
WATCH_TIMEOUT_SECONDS = 300
# Histogram buckets of request latency, seconds (Prometheus convention).
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Metrics:
    """``crd_scheduler_extender_requests_total{verb,code}``, a latency histogram per verb and the
    cache sizes, in the registry ``/metrics`` renders (:mod:`scheduler_core.metrics.registry`)."""

    def __init__(self, service: ExtenderService) -> None:
        self.registry = Registry(runtime=True)  # with the process_* and python_* collectors
        self.requests = self.registry.counter(
            "crd_scheduler_extender_requests_total", "Extender requests by verb and HTTP status.", ("verb", "code")
        )
        self.duration = self.registry.histogram(
            "crd_scheduler_extender_request_duration_seconds", "Time to answer a request.", ("verb",), BUCKETS
        )
        cache = service.cache
        self.registry.collected_gauge(
            "crd_scheduler_extender_cache_nodes", "Nodes in the cache.", (), lambda: [((), cache.node_count())]
        )
        self.registry.collected_gauge(
            "crd_scheduler_extender_cache_pods", "Pods in the cache.", (), lambda: [((), cache.pod_count())]
        )

    def observe(self, verb: str, code: int, seconds: float) -> None:
        self.requests.labels(verb, str(code)).inc()
        if verb in VERBS:
            self.duration.labels(verb).observe(seconds)


def _summary(body: Any) -> tuple[str, int]:
    """Pod and node count of a request, for the log line."""
    if not isinstance(body, dict):
        return "-", 0
    pod = body.get("Pod") or {}
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    name = f"{meta.get('namespace')}/{meta.get('name')}" if isinstance(meta, dict) else "-"
    if "PodName" in body:
        name = f"{body.get('PodNamespace')}/{body.get('PodName')}"
    names = body.get("NodeNames")
    nodes = body.get("Nodes")
    victims = body.get("NodeNameToMetaVictims") or body.get("NodeNameToVictims")
    if isinstance(names, list):
        return name, len(names)
    if isinstance(nodes, dict) and isinstance(nodes.get("items"), list):
        return name, len(nodes["items"])
    return name, len(victims) if isinstance(victims, dict) else 0


def make_app(service: ExtenderService, *, ready: Callable[[], bool] = lambda: True) -> web.Application:
    metrics = Metrics(service)

    def answer(
        verb: str, handler: Callable[[Any], Awaitable[Any] | Any]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def route(request: web.Request) -> web.Response:
            started = time.perf_counter()
            body: Any = None
            try:
                raw = await request.read()
                try:
                    body = json.loads(raw)
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise BadRequest(f"the body is not JSON: {exc}") from None
                result = handler(body)
                if asyncio.iscoroutine(result):
                    result = await result
                response = web.Response(text=json.dumps(result, separators=(",", ":")), content_type="application/json")
            except BadRequest as exc:
                response = web.Response(status=400, text=f"{verb}: {exc}\n")
            except ServiceError as exc:
                response = web.Response(status=500, text=f"{verb}: {exc}\n")
            except Exception as exc:  # a plugin's bug: logged here, never sent as a traceback
                log.exception("%s request failed", verb)
                response = web.Response(status=500, text=f"{verb}: internal error: {type(exc).__name__}: {exc}\n")
            elapsed = time.perf_counter() - started
            metrics.observe(verb, response.status, elapsed)
            pod, nodes = _summary(body)
            log.info("%s %d %.1fms pod=%s nodes=%d", verb, response.status, elapsed * 1000, pod, nodes)
            return response

        return route

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n") if ready() else web.Response(status=503, text="cache not synced\n")

    async def metrics_page(request: web.Request) -> web.Response:
        return web.Response(body=metrics.registry.render().encode(), headers={"Content-Type": CONTENT_TYPE})

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/filter", answer("filter", service.filter))
    app.router.add_post("/prioritize", answer("prioritize", service.prioritize))
    app.router.add_post("/preempt", answer("preempt", service.preempt))
    app.router.add_post("/bind", answer("bind", service.bind))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_page)
    return app


class KubeBinder(ClusterAPI):
    """The one API call the extender makes: pods/binding with the UID as precondition."""

    def __init__(self, api_client: client.ApiClient | None = None) -> None:
        self._api_client = api_client

    def connect(self, api_client: client.ApiClient) -> None:
        self._api_client = api_client

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        if self._api_client is None:
            return Status(Code.ERROR, "the extender is not connected to the API")
        try:
            bound = await asyncio.to_thread(
                kube.retrying, kube.bind_pod, self._api_client, pod.namespace, pod.name, pod.uid, node_name, annotations
            )
        except kube.ApiError as error:
            return Status(Code.ERROR, f"binding {pod.key} to {node_name}: HTTP {error.status} {error.reason}")
        except Exception as error:
            return Status.as_error(error)
        if not bound:
            return Status(Code.ERROR, f'Operation cannot be fulfilled on pods/binding "{pod.name}": conflict')
        return None

    async def write(self, call: Write) -> Written:
        """Every other write is refused: kube-scheduler runs its own PreBind plugins
        (VolumeBinding's, DynamicResources') and preemption before or instead of calling a
        binder extender, whose bind verb binds only."""
        message = f"the extender only binds pods: {call.verb} of {call.target} {call.name} refused"
        return None, Status(Code.ERROR, message)


class Follower:
    """List-then-watch of one resource in a thread; events are applied on the event loop."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        lister: Callable[..., Any],
        apply: Callable[[str, Mapping[str, Any]], None],
        key: Callable[[Mapping[str, Any]], str],
        stop: threading.Event,
        **selectors: str,
    ) -> None:
        self._loop = loop
        self._lister = lister
        self._apply = apply
        self._key = key
        self._stop = stop
        self._selectors = selectors
        self._known: dict[str, Mapping[str, Any]] = {}
        self.synced = threading.Event()

    def _emit(self, event: str, obj: Mapping[str, Any]) -> None:
        key = self._key(obj)
        if event == "DELETED":
            self._known.pop(key, None)
        else:
            self._known[key] = obj
        self._loop.call_soon_threadsafe(self._safe_apply, event, obj)

    def _safe_apply(self, event: str, obj: Mapping[str, Any]) -> None:
        try:
            self._apply(event, obj)
        except Exception:
            log.exception("cache update for %s failed", self._key(obj))

    def _list(self) -> str:
        listed = kube.retrying(functools.partial(kube.call_json, self._lister, **self._selectors))
        items = listed.get("items") or []
        fresh = {self._key(item): item for item in items}
        for key in [k for k in self._known if k not in fresh]:
            self._emit("DELETED", self._known[key])
        for item in items:
            self._emit("MODIFIED" if self._key(item) in self._known else "ADDED", item)
        self.synced.set()
        return str((listed.get("metadata") or {}).get("resourceVersion") or "")

    def run(self) -> None:
        version = ""
        while not self._stop.is_set():
            try:
                if not version:
                    version = self._list()
                stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                    self._lister,
                    resource_version=version,
                    timeout_seconds=WATCH_TIMEOUT_SECONDS,
                    # A connection that goes silent ends too (the server closes it after
                    # timeout_seconds; a read this much longer means it is dead): re-watch.
                    _request_timeout=(kube.REQUEST_TIMEOUT[0], WATCH_TIMEOUT_SECONDS + 30),
                    allow_watch_bookmarks=True,
                    **self._selectors,
                )
                for event in stream:
                    if self._stop.is_set():
                        return
                    raw = event.get("raw_object") or {}
                    kind = event.get("type")
                    version = str((raw.get("metadata") or {}).get("resourceVersion") or version)
                    if kind == "ERROR":
                        version = ""  # 410 Gone and the like: list again
                        break
                    if kind in ("ADDED", "MODIFIED", "DELETED"):
                        self._emit(kind, raw)
            except client.ApiException as error:
                if error.status == 410:
                    version = ""
                    continue
                log.warning("watch failed (HTTP %s); retrying in 1 s", error.status)
                self._stop.wait(1.0)
            except Exception as error:
                log.warning("watch failed (%s); retrying in 1 s", error)
                version = ""
                self._stop.wait(1.0)


async def serve(
    service: ExtenderService,
    api_client: client.ApiClient,
    *,
    host: str,
    port: int,
    tls: ssl.SSLContext | None,
    started: Callable[[int], None] | None = None,
) -> None:
    """Follow the API and answer kube-scheduler until cancelled."""
    loop = asyncio.get_running_loop()
    stop = threading.Event()
    core = client.CoreV1Api(api_client)
    followers = [
        Follower(loop, core.list_node, service.on_node, name_of, stop),
        Follower(loop, core.list_pod_for_all_namespaces, service.on_pod, uid_of, stop, field_selector=SCHEDULED_PODS),
    ]
    threads = [threading.Thread(target=f.run, name="extender-watch", daemon=True) for f in followers]
    for thread in threads:
        thread.start()
    app = make_app(service, ready=lambda: all(f.synced.is_set() for f in followers))
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=tls)
    await site.start()
    sockets = getattr(site._server, "sockets", None) or ()
    bound_port = int(sockets[0].getsockname()[1]) if sockets else port
    log.info("extender serving on %s://%s:%d", "https" if tls else "http", host, bound_port)
    if started is not None:
        started(bound_port)
    try:
        await asyncio.Event().wait()
    finally:
        stop.set()
        await runner.cleanup()
