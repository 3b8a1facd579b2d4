"""The operator's HTTP endpoints: ``GET /metrics``, ``/healthz`` and ``/readyz``.

kube-scheduler serves these on its secure port (10259, HTTPS with delegated authentication
and authorization). Ours are plain HTTP on ``--bind-address``:``--port`` (default
``0.0.0.0:10251``, the port of kube-scheduler's insecure endpoint before v1.23): the kubelet's
probes and a Prometheus scrape inside the cluster need no credentials, and the answers
reveal nothing a namespace-scoped reader could not list (counts and durations, no pod
names). Put it behind a NetworkPolicy or ``--bind-address 127.0.0.1`` plus a proxy
sidecar to restrict it; ``--port 0`` turns it off.

One aiohttp server, on the operator's event loop: a loop blocked by a long synchronous
cycle does not answer, which the kubelet's probe timeout reads as a failure, as it should.
A port already in use is logged and the operator runs on without the endpoints (the
probes then fail visibly) rather than exiting before it can schedule.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from aiohttp import web

from scheduler_core.metrics.registry import CONTENT_TYPE, Registry
from scheduler_operator.health import HealthState, report

log = logging.getLogger(__name__)

DEFAULT_BIND_ADDRESS = "0.0.0.0"
DEFAULT_PORT = 10251


def make_app(registry: Registry, health: HealthState) -> web.Application:
    async def metrics(request: web.Request) -> web.Response:
        return web.Response(body=registry.render().encode(), headers={"Content-Type": CONTENT_TYPE})

    async def healthz(request: web.Request) -> web.Response:
        return _answer(*report("healthz", health.liveness()))

    async def readyz(request: web.Request) -> web.Response:
        return _answer(*report("readyz", health.readiness()))

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/livez", healthz)
    app.router.add_get("/readyz", readyz)
    return app


def _answer(ok: bool, body: str) -> web.Response:
    # Upstream's healthz answers 500 on a failed check (apiserver/pkg/server/healthz).
    status = HTTPStatus.OK if ok else HTTPStatus.INTERNAL_SERVER_ERROR
    return web.Response(status=status, text=body, headers={"X-Content-Type-Options": "nosniff"})


class Server:
    """The endpoints' server; ``start`` then ``stop``."""

    def __init__(self, app: web.Application, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)

    async def start(self) -> bool:
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError as error:
            log.error("cannot serve /metrics, /healthz, /readyz on %s:%d: %s", self.host, self.port, error)
            return False
        log.info("serving /metrics, /healthz and /readyz on http://%s:%d", self.host, self.port)
        return True

    async def stop(self) -> None:
        await self._runner.cleanup()
