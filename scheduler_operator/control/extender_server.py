"""``crd-scheduler extender serve``: our plugins as an HTTP extender of a stock kube-scheduler.

The answers come from :class:`scheduler_core.extender.service.ExtenderService`; this module is
the I/O around it:

- HTTP (aiohttp, optionally TLS): ``POST /filter``, ``/prioritize``, ``/preempt``, ``/bind``
  (configure kube-scheduler with ``urlPrefix: http(s)://ADDR`` and those verbs), ``GET /healthz``
  (200 once nodes and pods are listed, 503 before), ``GET /metrics`` (Prometheus text).
- A request that cannot be read gets 400 with the reason as plain text; a plugin's failure gets
  500 with its message. A response never carries a traceback; unexpected exceptions are logged.
- One log line per request: verb, HTTP status, milliseconds, pod, number of nodes.
- The cache follows the API with the operator's own machinery: a
  :class:`~scheduler_operator.watch.reflector.Reflector` per resource (nodes; pods that are assigned
  and not terminal, the field selector kube-scheduler's own informer uses) into an
  :class:`~scheduler_operator.watch.informer.Store` whose calls feed the service, on the event loop
  and over one :class:`~scheduler_operator.io.transport.Transport`: paginated lists, bookmarks,
  resume, a 410 Gone re-lists and deletes what vanished, client-go's backoff. This is what makes
  ``nodeCacheCapable: true`` work.
- The bind verb's one write, ``pods/binding``, goes through the same transport (its timeouts,
  QPS and retries).
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from http import HTTPStatus
from typing import Any

from aiohttp import web

from scheduler_core.extender.service import BadRequest, ExtenderService, ServiceError
from scheduler_core.framework import ClusterAPI, Code, Manifest, PodInfo, Status
from scheduler_core.framework.writes import Write, Written
from scheduler_core.metrics.registry import CONTENT_TYPE, Registry
from scheduler_operator.control.backend import binding
from scheduler_operator.io.kube import ApiError
from scheduler_operator.io.transport import Transport
from scheduler_operator.resources import NODES, PODS
from scheduler_operator.watch.informer import DELETED, Store, name_of, uid_of
from scheduler_operator.watch.reflector import Reflector

log = logging.getLogger(__name__)

VERBS = ("filter", "prioritize", "preempt", "bind")
SCHEDULED_PODS = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"  # upstream informer selector
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
    for verb in VERBS:  # POST /<verb>, answered by the service's method of that name
        app.router.add_post(f"/{verb}", answer(verb, getattr(service, verb)))
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_page)
    return app


class KubeBinder(ClusterAPI):
    """The one API call the extender makes: pods/binding with the UID as precondition."""

    def __init__(self, transport: Transport | None = None) -> None:
        self._transport = transport

    def connect(self, transport: Transport) -> None:
        self._transport = transport

    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        if self._transport is None:
            return Status(Code.ERROR, "the extender is not connected to the API")
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding"
        try:
            # Only the HTTP status is read, as the operator's binder reads it (backend.bind).
            await self._transport.request("POST", path, body=binding(pod, node_name, annotations), decode=False)
        except ApiError as error:
            if error.status == HTTPStatus.CONFLICT:
                return Status(Code.ERROR, f'Operation cannot be fulfilled on pods/binding "{pod.name}": conflict')
            return Status(Code.ERROR, f"binding {pod.key} to {node_name}: HTTP {error.status} {error.reason}")
        except Exception as error:
            return Status.as_error(error)
        return None

    async def write(self, call: Write) -> Written:
        """Every other write is refused: kube-scheduler runs its own PreBind plugins
        (VolumeBinding's, DynamicResources') and preemption before or instead of calling a
        binder extender, whose bind verb binds only."""
        message = f"the extender only binds pods: {call.verb} of {call.target} {call.name} refused"
        return None, Status(Code.ERROR, message)


def _store(kind: str, key: Callable[[Manifest], str], apply: Callable[[str, Mapping[str, Any]], None]) -> Store:
    """A store whose changes go to the service as the watch event that made them."""
    return Store(
        kind, key=key,
        on_add=lambda new: apply("ADDED", new),
        on_update=lambda _old, new: apply("MODIFIED", new),
        on_delete=lambda old: apply(DELETED, old),
    )  # fmt: skip


def reflectors(service: ExtenderService, transport: Transport) -> list[Reflector]:
    """List-then-watch of nodes and of the scheduled pods into the service's cache."""
    return [
        Reflector(transport, NODES, _store("Node", name_of, service.on_node)),
        Reflector(transport, replace(PODS, field_selector=SCHEDULED_PODS), _store("Pod", uid_of, service.on_pod)),
    ]


async def serve(
    service: ExtenderService,
    transport: Transport,
    *,
    host: str,
    port: int,
    tls: ssl.SSLContext | None,
    started: Callable[[int], None] | None = None,
) -> None:
    """Follow the API and answer kube-scheduler until cancelled."""
    following = reflectors(service, transport)
    watches = [asyncio.ensure_future(reflector.run()) for reflector in following]
    app = make_app(service, ready=lambda: all(reflector.synced for reflector in following))
    runner = web.AppRunner(app, access_log=None)
    try:
        await runner.setup()
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        await site.start()
        sockets = getattr(site._server, "sockets", None) or ()
        bound_port = int(sockets[0].getsockname()[1]) if sockets else port
        log.info("extender serving on %s://%s:%d", "https" if tls else "http", host, bound_port)
        if started is not None:
            started(bound_port)
        await asyncio.Event().wait()
    finally:
        for watch in watches:
            watch.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
        await runner.cleanup()
