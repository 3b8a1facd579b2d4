"""``extender serve`` over real HTTP on loopback: our plugins answering kube-scheduler's calls.

The service's API is the simulator's in-memory cluster (the backend twin, not a mock); requests
are the JSON kube-scheduler v1.36.3 sends (extender/v1 types, Go field names).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import ClientSession, web

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.extender.service import ExtenderService, to_extender_score
from scheduler_core.framework.writes import PODS, RESOURCE_CLAIMS, STATUS, Verb, Write
from scheduler_core.runtime.registry import Registry, default_registry
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_operator.control.extender_server import KubeBinder, make_app
from tests.promtext import parse
from tests.unit.extender.label_plugins import PROFILE, REFUSE_LABEL, SCORE_LABEL, RefuseLabel, ScoreByLabel
from tests.wrappers import node, pod

NODES = [
    node("n1", labels={SCORE_LABEL: "30"}),
    node("n2", labels={REFUSE_LABEL: "x"}),
    node("n3", labels={SCORE_LABEL: "55"}),
]


def _registry() -> Registry:
    registry = Registry(default_registry(with_out_of_tree=False))
    registry.register("RefuseLabel", RefuseLabel)
    registry.register("ScoreByLabel", ScoreByLabel)
    return registry


class Server:
    def __init__(self, service: ExtenderService, cluster: InMemoryCluster, url: str, session: ClientSession) -> None:
        self.service, self.cluster, self.url, self.session = service, cluster, url, session

    async def post(self, verb: str, body: Any) -> tuple[int, Any]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with self.session.post(f"{self.url}/{verb}", data=data) as resp:
            text = await resp.text()
            return resp.status, json.loads(text) if resp.content_type == "application/json" else text


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    pending = pod("p", uid="u-p")
    cluster = InMemoryCluster(nodes=NODES, pods=[pending])
    registry = _registry()
    service = ExtenderService(
        SchedulerProfileSpec.model_validate(PROFILE), registry, default_plugins(registry), api=cluster
    )
    for n in NODES:
        service.on_node("ADDED", n)
    runner = web.AppRunner(make_app(service))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    async with ClientSession() as session:
        yield Server(service, cluster, f"http://127.0.0.1:{port}", session)
    await runner.cleanup()


async def test_filter_names_only_refuses_the_labelled_node_as_unresolvable(server: Server) -> None:
    status, answer = await server.post("filter", {"Pod": pod("p"), "Nodes": None, "NodeNames": ["n1", "n2", "n3"]})
    assert status == 200
    assert answer == {
        "NodeNames": ["n1", "n3"],
        "Nodes": None,
        "FailedNodes": {},
        "FailedAndUnresolvableNodes": {"n2": f"node(s) had label {REFUSE_LABEL}"},
        "Error": "",
    }


async def test_filter_full_objects_answers_with_node_objects(server: Server) -> None:
    status, answer = await server.post("filter", {"Pod": pod("p"), "Nodes": {"items": NODES}, "NodeNames": None})
    assert status == 200 and answer["NodeNames"] is None
    assert [n["metadata"]["name"] for n in answer["Nodes"]["items"]] == ["n1", "n3"]


async def test_a_node_not_in_the_cache_fails_in_names_only_mode(server: Server) -> None:
    _, answer = await server.post("filter", {"Pod": pod("p"), "NodeNames": ["ghost"]})
    assert answer["FailedNodes"] == {"ghost": "node is not in the extender's cache"}


async def test_prioritize_maps_plugin_scores_to_the_extender_range(server: Server) -> None:
    status, answer = await server.post("prioritize", {"Pod": pod("p"), "NodeNames": ["n1", "n3"]})
    assert status == 200
    assert answer == [{"Host": "n1", "Score": 3}, {"Host": "n3", "Score": 6}]  # 30 -> 3, 55 -> 5.5 -> 6


@pytest.mark.parametrize(
    ("total", "top", "score"),
    [
        pytest.param(0, 100, 0, id="zero"),
        pytest.param(100, 100, 10, id="max"),
        pytest.param(54, 100, 5, id="rounds-down"),
        pytest.param(55, 100, 6, id="half-rounds-up"),
        pytest.param(150, 300, 5, id="weighted"),
    ],
)
def test_to_extender_score(total: int, top: int, score: int) -> None:
    assert to_extender_score(total, top) == score


async def test_bind_binds_through_the_api(server: Server) -> None:
    body = {"PodName": "p", "PodNamespace": "default", "PodUID": "u-p", "Node": "n3"}
    assert await server.post("bind", body) == (200, {"Error": ""})
    stored = server.cluster.pod("default", "p")
    assert stored is not None and stored["spec"]["nodeName"] == "n3"
    status, answer = await server.post("bind", body)  # already bound: the binding's error comes back
    assert status == 200 and "already assigned" in answer["Error"]


async def test_preempt_keeps_the_candidates_where_the_pod_fits_without_its_victims(server: Server) -> None:
    victim = pod("v", uid="u-v", node_name="n1", cpu="1")
    server.service.on_pod("ADDED", victim)
    body = {
        "Pod": pod("p"),
        "NodeNameToMetaVictims": {
            "n1": {"Pods": [{"UID": "u-v"}], "NumPDBViolations": 0},
            "n2": {"Pods": [{"UID": "u-none"}], "NumPDBViolations": 1},
        },
    }
    status, answer = await server.post("preempt", body)
    assert status == 200
    assert answer == {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "u-v"}], "NumPDBViolations": 0}}}


@pytest.mark.parametrize(
    ("verb", "body", "reason"),
    [
        pytest.param("filter", b"{not json", "filter: the body is not JSON: ", id="not-json"),
        pytest.param("filter", {"NodeNames": ["n1"]}, "filter: Pod: an object is required", id="no-pod"),
        pytest.param("prioritize", {"Pod": pod("p"), "NodeNames": "n1"}, "prioritize: NodeNames: a list of node "
                     "names is required", id="names-not-a-list"),
        pytest.param("filter", {"Pod": pod("p")}, "filter: NodeNames or Nodes.items is required", id="no-nodes"),
        pytest.param("bind", {"PodName": "p"}, "bind: PodNamespace: a non-empty string is required", id="bind-fields"),
        pytest.param("preempt", {"Pod": pod("p"), "NodeNameToMetaVictims": []}, "preempt: NodeNameToMetaVictims or "
                     "NodeNameToVictims must be an object", id="victims-not-a-map"),
        pytest.param("filter", [1, 2], "filter: Pod: an object is required", id="array-body"),
    ],
)  # fmt: skip
async def test_bad_requests_get_400_with_a_reason_and_no_traceback(
    server: Server, verb: str, body: Any, reason: str
) -> None:
    status, text = await server.post(verb, body)
    assert status == 400
    assert text.startswith(reason) and "Traceback" not in text


async def test_healthz_and_metrics(server: Server) -> None:
    await server.post("filter", {"Pod": pod("p"), "NodeNames": ["n1"]})
    await server.post("filter", b"x")
    async with server.session.get(f"{server.url}/healthz") as resp:
        assert resp.status == 200
    async with server.session.get(f"{server.url}/metrics") as resp:
        text = await resp.text()
    families = parse(text)
    assert families["crd_scheduler_extender_requests_total"].value(verb="filter", code="200") == 1
    assert families["crd_scheduler_extender_requests_total"].value(verb="filter", code="400") == 1
    assert families["crd_scheduler_extender_request_duration_seconds"].value("_count", verb="filter") == 2
    assert families["crd_scheduler_extender_cache_nodes"].value() == 3


@pytest.mark.parametrize(
    "names_only", [pytest.param(True, id="nodeCacheCapable"), pytest.param(False, id="full-nodes")]
)
async def test_our_scheduler_calling_our_extender_places_pods_where_the_plugins_say(
    server: Server, names_only: bool
) -> None:
    from scheduler_core.simulator.manifests import load_texts
    from scheduler_core.simulator.run import simulate_async

    extender = {
        "urlPrefix": server.url,
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "weight": 5,
        "nodeCacheCapable": names_only,
    }
    profile = {
        "apiVersion": "scheduling.crd-scheduler.io/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "default", "namespace": "crd-scheduler"},
        "spec": {"extenders": [extender]},
    }
    text = "\n---\n".join(json.dumps(o) for o in (*NODES, pod("a"), pod("b"), profile))
    result = await simulate_async(load_texts([("in.yaml", text)], home_namespace="crd-scheduler"))
    assert [(r.name, r.node) for r in result.pods] == [("a", "n3"), ("b", "n3")]
    assert result.pods[0].scores["n3"][server.url] == 6 * 5 * 10


@pytest.mark.parametrize(
    ("call", "what"),
    [
        pytest.param(
            Write(Verb.DELETE, PODS, {"metadata": {"name": "v", "namespace": "ns"}}, reason="x"),
            "delete of pods v",
            id="preempt",
        ),
        pytest.param(
            Write(Verb.UPDATE, RESOURCE_CLAIMS, {"metadata": {"name": "c"}}, subresource=STATUS),
            "update of resourceclaims.resource.k8s.io/status c",
            id="claim",
        ),
    ],
)
async def test_the_extenders_binder_refuses_every_other_write_in_one_place(call: Write, what: str) -> None:
    """kube-scheduler runs its own PreBind plugins and preemption: the extender only binds."""
    stored, status = await KubeBinder().write(call)
    assert stored is None and status is not None
    assert status.message() == f"the extender only binds pods: {what} refused"
