"""``extender serve``'s cache follows the API through the operator's own reflectors and stores:
each kind's events reach the service as the watch event that made them. Listing and watching
themselves run on the real API server (tests/e2e/test_extenders.py)."""

from __future__ import annotations

from typing import Any

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.extender.service import ExtenderService
from scheduler_core.runtime.registry import Registry, default_registry
from scheduler_operator.control.extender_server import SCHEDULED_PODS, KubeBinder, reflectors
from scheduler_operator.io.transport import Credentials, Transport
from tests.unit.extender.label_plugins import PROFILE, RefuseLabel, ScoreByLabel
from tests.wrappers import node, pod


def _service() -> ExtenderService:
    registry = Registry(default_registry(with_out_of_tree=False))
    registry.register("RefuseLabel", RefuseLabel)
    registry.register("ScoreByLabel", ScoreByLabel)
    spec = SchedulerProfileSpec.model_validate(PROFILE)
    return ExtenderService(spec, registry, default_plugins(registry), api=KubeBinder())


def _versioned(obj: dict[str, Any], version: str) -> dict[str, Any]:
    obj["metadata"]["resourceVersion"] = version
    return obj


def test_watch_events_reach_the_extenders_cache_and_only_scheduled_pods_are_watched() -> None:
    service = _service()
    transport = Transport(Credentials("http://127.0.0.1:9", False, lambda: None))  # never called here
    nodes, pods = reflectors(service, transport)
    assert (nodes.resource.path, pods.resource.path) == ("/api/v1/nodes", "/api/v1/pods")
    assert pods.resource.field_selector == SCHEDULED_PODS

    for name in ("n1", "n2"):
        nodes.event({"type": "ADDED", "object": _versioned(node(name), "1")})
    pods.event({"type": "ADDED", "object": _versioned(pod("p", uid="u1", node_name="n1"), "2")})
    assert (service.cache.node_count(), service.cache.pod_count()) == (2, 1)

    relabelled = pod("p", uid="u1", node_name="n1", labels={"app": "web"})
    pods.event({"type": "MODIFIED", "object": _versioned(relabelled, "3")})
    nodes.event({"type": "DELETED", "object": _versioned(node("n2"), "4")})
    assert (service.cache.node_count(), service.cache.pod_count()) == (1, 1)

    pods.event({"type": "DELETED", "object": _versioned(pod("p", uid="u1", node_name="n1"), "5")})
    assert (service.cache.node_count(), service.cache.pod_count()) == (1, 0)
    assert (nodes.resource_version, pods.resource_version) == ("4", "5")
