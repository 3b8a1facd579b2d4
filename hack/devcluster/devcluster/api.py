"""The few API calls the dev cluster makes itself (readiness, the operator's service account and
token, kwok's nodes) and the one watch (the pods, for ``reaper``)."""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

from .pki import Pair


class Client:
    def __init__(self, server: str, ca: Pair, client: Pair) -> None:
        self.server = server
        self._context = ssl.create_default_context(cafile=str(ca.cert))
        self._context.load_cert_chain(str(client.cert), str(client.key))

    def request(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        """``content_type``: e.g. ``application/strategic-merge-patch+json`` for a PATCH."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.server + path, data=data, method=method, headers={"Content-Type": content_type}
        )
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=10) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode(errors="replace")

    def watch(self, path: str, *, timeout: float) -> Iterator[dict[str, Any]]:
        """The events of a watch request (``path`` with ``watch=1``) as they come, one JSON object
        a line, until the server ends it; ``timeout`` bounds each wait for a line."""
        request = urllib.request.Request(self.server + path)
        with urllib.request.urlopen(request, context=self._context, timeout=timeout) as response:
            for line in response:
                yield json.loads(line)

    def ensure(self, path: str, body: dict[str, Any]) -> None:
        """Create ``body`` by POSTing to the collection ``path``; an existing object is fine."""
        status, answer = self.request("POST", path, body)
        if status not in (200, 201, 409):
            raise RuntimeError(f"POST {path} -> {status}: {answer}")


def wait_until(what: str, check: Callable[[], bool], *, timeout: float, alive: Callable[[], str | None]) -> None:
    """Poll ``check`` until true; give up early when ``alive`` names a process that died."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except OSError:
            pass  # not listening yet
        dead = alive()
        if dead:
            raise RuntimeError(f"{dead} exited while waiting for {what}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.25)
