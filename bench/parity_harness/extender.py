"""A filter extender for kube-scheduler: it records which nodes passed the filter plugins.

kube-scheduler calls an extender's filter verb after its filter plugins, with the nodes that
passed them all (``nodeCacheCapable``: names only) — exactly the feasible set, which its log
does not print when one node or none is feasible. For ordinary pods the extender passes every
node on. Probe pods (annotated :data:`PROBE_ANNOTATION`) exist only to make kube-scheduler
report filter reasons: the extender rejects every node that reaches it, as unresolvable so that
no PostFilter acts, with :data:`PASSED_MESSAGE`, and the probe stays pending without changing
the cluster. Request and answer shapes: k8s.io/kube-scheduler v0.36.3 ``extender/v1/types.go``
(``ExtenderArgs``, ``ExtenderFilterResult``; Go field names, no JSON tags).

The same server answers the ``extenders`` feature's scenario extenders under other paths
(:func:`scenario_answer`), for kube-scheduler and for our side alike.
"""

from __future__ import annotations

import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.parity_harness.vocabulary import EXTENDER_SCORE, SCENARIO

PROBE_ANNOTATION = "parity.crd-scheduler.io/probe"
PASSED_MESSAGE = "parity-probe: passed the filters"
# The names-only scenario extender's rejections (failedNodes, failedAndUnresolvableNodes).
BUSY_MESSAGE = "parity-extender: node busy"
NEVER_MESSAGE = "parity-extender: node never fits"


def _hash(*parts: str) -> int:
    return zlib.crc32("/".join(parts).encode())


def _scenario_of(pod: dict[str, Any]) -> str:
    """The scenario's stem, shared by the pending pod and its probes (so they are answered alike)."""
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(SCENARIO, ""))


def _sent_names(args: dict[str, Any]) -> list[str]:
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in (args.get("Nodes") or {}).get("items") or ()]


def scenario_answer(path: str, args: dict[str, Any]) -> tuple[int, Any]:
    """The ``extenders`` feature's extenders (bench/parity_harness/profile.py ``scenario_extenders``):
    answers depend only on the scenario, the node (name or labels), never on timing."""
    stem = _scenario_of(args.get("Pod") or {})
    if path.startswith("/failing/"):
        return 500, {}
    if path == "/names/filter":
        names = _sent_names(args)
        busy = {n: BUSY_MESSAGE for n in names if _hash(stem, n) % 5 == 0}
        never = {n: NEVER_MESSAGE for n in names if _hash(stem, n) % 5 == 1}
        passed = [n for n in names if n not in busy and n not in never]
        return 200, {"NodeNames": passed, "FailedNodes": busy, "FailedAndUnresolvableNodes": never}
    if path == "/names/prioritize":
        return 200, [{"Host": n, "Score": _hash(stem, n, "score") % 11} for n in _sent_names(args)]
    if path == "/full/prioritize":
        items = (args.get("Nodes") or {}).get("items") or ()
        return 200, [
            {"Host": n["metadata"]["name"], "Score": int((n["metadata"].get("labels") or {}).get(EXTENDER_SCORE, "0"))}
            for n in items
        ]
    return 404, {}


class Extender:
    """An HTTP server on 127.0.0.1 (a free port); ``calls[pod key]`` lists the node names of each call."""

    def __init__(self) -> None:
        self.calls: dict[str, list[list[str]]] = {}
        self._lock = threading.Lock()
        extender = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                args = json.loads(self.rfile.read(length))
                code, answer = (
                    (200, extender.filter(args)) if self.path == "/filter" else scenario_answer(self.path, args)
                )
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="parity-extender", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def first_call(self, pod: str) -> list[str] | None:
        with self._lock:
            calls = self.calls.get(pod)
            return list(calls[0]) if calls else None

    def filter(self, args: dict[str, Any]) -> dict[str, Any]:
        metadata = (args.get("Pod") or {}).get("metadata") or {}
        names = list(args.get("NodeNames") or [])
        with self._lock:
            self.calls.setdefault(f"{metadata.get('namespace')}/{metadata.get('name')}", []).append(names)
        if PROBE_ANNOTATION in (metadata.get("annotations") or {}):
            return {"NodeNames": [], "FailedAndUnresolvableNodes": dict.fromkeys(names, PASSED_MESSAGE)}
        return {"NodeNames": names}
