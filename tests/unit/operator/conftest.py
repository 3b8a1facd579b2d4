"""A loopback HTTP server that injects the answers the API server seldom gives, for the
operator's async HTTP layer and what it carries (``transport``, ``backend``, ``writer``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from scheduler_operator.io.transport import Credentials, Transport


class Injector:
    """Answers in turn: an int is that HTTP status, "drop" closes the connection, "hang" answers
    too late, a dict is a 200 JSON body."""

    def __init__(self) -> None:
        self.answers: list[Any] = []
        self.requests: list[str] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(f"{request.method} {request.path_qs}")
        answer = self.answers.pop(0)
        if answer == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if answer == "hang":
            await asyncio.sleep(2)  # past the client's read timeout (0.5 s)
        if isinstance(answer, int):
            headers = {"Retry-After": "1"} if answer == 429 else {}
            return web.json_response({"kind": "Status", "code": answer}, status=answer, headers=headers)
        return web.json_response(answer)


@pytest.fixture
async def server() -> AsyncIterator[tuple[Injector, Transport, list[float]]]:
    injector = Injector()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", injector.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    transport = Transport(
        Credentials(f"http://127.0.0.1:{port}", False, lambda: "Bearer t"), qps=0, burst=0,
        request_timeout=(1.0, 0.5), sleep=sleep,
    )  # fmt: skip
    yield injector, transport, slept
    await transport.close()
    await runner.cleanup()
