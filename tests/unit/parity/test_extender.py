"""The filter extender, over real HTTP on loopback."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from bench.parity_harness.extender import PASSED_MESSAGE, PROBE_ANNOTATION, Extender


def _filter(extender: Extender, pod: dict[str, Any], nodes: list[str]) -> Any:
    body = json.dumps({"Pod": pod, "Nodes": None, "NodeNames": nodes}).encode()
    request = urllib.request.Request(f"{extender.url}/filter", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def test_an_ordinary_pod_keeps_every_node_and_the_call_is_recorded(extender: Extender) -> None:
    pod = {"metadata": {"namespace": "ns", "name": "p"}}
    assert _filter(extender, pod, ["a", "b"]) == {"NodeNames": ["a", "b"]}
    _filter(extender, pod, ["b"])
    assert extender.first_call("ns/p") == ["a", "b"]
    assert extender.first_call("ns/other") is None


def test_a_probe_loses_every_node_for_good(extender: Extender) -> None:
    probe = {"metadata": {"namespace": "ns", "name": "q", "annotations": {PROBE_ANNOTATION: "true"}}}
    assert _filter(extender, probe, ["a"]) == {"NodeNames": [], "FailedAndUnresolvableNodes": {"a": PASSED_MESSAGE}}
    assert extender.first_call("ns/q") == ["a"]
