"""NodePorts, SchedulingGates and ImageLocality inside the whole scheduler (``simulate`` with
the default profile), batch and per-node."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from scheduler_core.plugins.imagelocality import ImageLocality
from scheduler_core.plugins.imagelocality.image_locality import MB
from scheduler_core.plugins.nodeports import NodePorts
from scheduler_core.plugins.schedulinggates import SchedulingGates
from scheduler_core.runtime.registry import default_registry
from scheduler_core.simulator.manifests import load_texts
from scheduler_core.simulator.run import Simulation, simulate
from tests.wrappers import node, pod


def run(*objects: dict[str, Any], batch: bool = True) -> Simulation:
    registry: dict[str, Any] = dict(default_registry(with_out_of_tree=False))
    for plugin in (ImageLocality, NodePorts, SchedulingGates):
        registry[plugin.name] = plugin
    return simulate(load_texts([("cluster.yaml", yaml.safe_dump_all(objects))]), registry=registry, batch=batch)


@pytest.mark.parametrize("batch", [True, False])
def test_host_ports_gates_and_images(batch: bool) -> None:
    image = {"names": ["registry/app:latest"], "sizeBytes": 600 * MB}
    app = [{"name": "c", "image": "registry/app", "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    sim = run(
        node("plain"),
        node("cached", images=[image]),
        pod("web-1", containers=app),
        pod("web-2", containers=app),
        pod("web-3", containers=app),
        pod("held", schedulingGates=[{"name": "example.com/a"}, {"name": "example.com/b"}]),
        batch=batch,
    )
    by_name = {p.name: p for p in sim.pods}
    # The cached image wins the first pod (600 MB on 1 of 2 nodes: 100*(300-23)/(1000-23) = 28).
    assert by_name["web-1"].node == "cached"
    assert by_name["web-1"].scores["cached"]["ImageLocality"] == 28
    assert by_name["web-1"].scores["plain"]["ImageLocality"] == 0
    assert by_name["web-2"].node == "plain"
    assert by_name["web-3"].node is None
    assert by_name["web-3"].message.startswith(
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports."
    )
    assert by_name["held"].node is None
    assert by_name["held"].message == "Scheduling is blocked due to non-empty scheduling gates"
