"""A real extender for tests: an aiohttp server on loopback whose answers a test sets per verb.

Not a mock of our code: the client under test speaks HTTP to it exactly as to any extender, and
it records what arrived on the wire (path and JSON body) for the tests to check.
"""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web

Answer = Callable[[dict[str, Any]], Awaitable[web.StreamResponse] | web.StreamResponse | Any]


class Peer:
    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self.answers: dict[str, Answer] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.hang = asyncio.Event()  # a handler awaiting this never answers (until the test ends)
        self._ssl = ssl_context
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        scheme = "https" if self._ssl is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    async def start(self) -> Peer:
        app = web.Application()
        app.router.add_post("/{verb}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, ssl_context=self._ssl)
        await site.start()
        server = site._server
        assert server is not None
        sockets: Any = getattr(server, "sockets")  # noqa: B009 (AbstractServer does not declare it)
        self.port = sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        self.hang.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        verb = request.match_info["verb"]
        body = await request.json()
        self.calls.append((verb, body))
        answer = self.answers.get(verb)
        if answer is None:
            return web.Response(status=404)
        result = answer(body)
        if asyncio.iscoroutine(result):
            result = await result
        if isinstance(result, web.StreamResponse):
            return result
        return web.Response(text=json.dumps(result), content_type="application/json")


def names(body: dict[str, Any]) -> list[str]:
    """The node names of an ExtenderArgs, whichever mode it was sent in."""
    if body.get("NodeNames") is not None:
        return list(body["NodeNames"])
    return [n["metadata"]["name"] for n in body["Nodes"]["items"]]


def label(body: dict[str, Any], node: str, key: str) -> str | None:
    for item in (body.get("Nodes") or {}).get("items") or ():
        if item["metadata"]["name"] == node:
            return (item["metadata"].get("labels") or {}).get(key)
    return None


def tls_pair(tmp: Path, name: str) -> dict[str, str]:
    """A CA and a certificate for 127.0.0.1 it signed: paths ``ca``, ``cert``, ``key`` and
    ``ca_data`` (base64 PEM, as tlsConfig.caData)."""
    folder = tmp / name
    folder.mkdir()

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
            "-days", "1", "-subj", f"/CN={name}-ca")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=127.0.0.1")
    (folder / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "tls.crt", "-days", "1", "-extfile", "san.ext")  # fmt: skip
    return {
        "ca": str(folder / "ca.crt"),
        "cert": str(folder / "tls.crt"),
        "key": str(folder / "tls.key"),
        "ca_data": base64.b64encode((folder / "ca.crt").read_bytes()).decode(),
    }
