"""Headless Debian Chromium driven over the DevTools protocol (websocket-client, already a
dependency of the kubernetes client): load a page, collect console errors and uncaught
exceptions, evaluate DOM queries, take a screenshot. Nothing is fetched from the network:
the flags turn off every background request, and the pages are local files.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import websocket

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1400,1000",
)  # fmt: skip
START_TIMEOUT = 30.0


def available() -> bool:
    return Path(CHROMIUM).exists() or shutil.which("chromium") is not None


class Browser:
    """One Chromium with a fresh profile; one page (the first target)."""

    def __init__(self) -> None:
        self._profile = tempfile.mkdtemp(prefix="crd-scheduler-chromium-")
        self._process: subprocess.Popen[bytes] | None = None
        self._ws: Any = None
        self._id = 0
        self.console_errors: list[str] = []

    def __enter__(self) -> Browser:
        binary = CHROMIUM if Path(CHROMIUM).exists() else str(shutil.which("chromium"))
        self._process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        port = self._port()
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t.get("type") == "page")
        self._ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if self._ws is not None:
            self._ws.close()
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _port(self) -> int:
        active = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if active.exists() and active.read_text().strip():
                return int(active.read_text().splitlines()[0])
            assert self._process is not None and self._process.poll() is None, "chromium exited at start"
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command; events that arrive meanwhile are recorded; return its result."""
        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == self._id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.console_errors.append(json.dumps(params.get("exceptionDetails", {}))[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.console_errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.console_errors.append(params["entry"].get("text", ""))
        elif method == "Page.loadEventFired":
            self._loaded = True

    def open(self, path: Path) -> None:
        self._loaded = False
        self.send("Page.navigate", url=path.resolve().as_uri())
        deadline = time.monotonic() + START_TIMEOUT
        while not self._loaded:
            assert time.monotonic() < deadline, "the page did not load"
            self._event(json.loads(self._ws.recv()))

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self) -> bytes:
        """The full page as PNG."""
        metrics = self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)["data"]
        return base64.b64decode(data)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
