"""Scheduling with extenders, end to end in ``simulate`` (the operator's scheduler loop) against a
real HTTP extender on loopback.

Upstream: pkg/scheduler/schedule_one.go (findNodesThatPassExtenders, prioritizeNodes,
extendersBinding) and pkg/scheduler/framework/preemption/preemption.go (callExtenders), v1.36.3.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import yaml
from aiohttp import web

from scheduler_core.simulator.errors import InputError
from scheduler_core.simulator.manifests import load_texts
from scheduler_core.simulator.run import Simulation, simulate_async
from tests.unit.extender.peer import Peer, names
from tests.wrappers import node, pod

HOME = "crd-scheduler"


@pytest.fixture
async def peer() -> AsyncIterator[Peer]:
    server = await Peer().start()
    yield server
    await server.stop()


def _profile(*extenders: dict[str, Any], namespace: str = HOME) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.crd-scheduler.io/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "default", "namespace": namespace},
        "spec": {"extenders": list(extenders)},
    }


async def _simulate(*objects: dict[str, Any]) -> Simulation:
    cluster = load_texts([("test.yaml", yaml.safe_dump_all(objects))], home_namespace=HOME)
    return await simulate_async(cluster, home_namespace=HOME)


NODES = [node("n1"), node("n2"), node("n3")]


async def test_a_filter_extender_runs_after_the_plugins_on_the_feasible_nodes_only(peer: Peer) -> None:
    peer.answers["filter"] = lambda b: {"NodeNames": [n for n in names(b) if n != "n2"], "FailedNodes": {"n2": "no"}}
    cordoned = node("n3", unschedulable=True)
    extender = {"urlPrefix": peer.url, "filterVerb": "filter", "nodeCacheCapable": True}
    result = await _simulate(node("n1"), node("n2"), cordoned, pod("p"), _profile(extender))
    ((_, body),) = peer.calls
    assert body["NodeNames"] == ["n1", "n2"]  # n3 was rejected by NodeUnschedulable first
    (report,) = result.pods
    assert (report.status, report.node) == ("Scheduled", "n1")


async def test_extender_rejections_are_in_the_fit_error_with_their_codes(peer: Peer) -> None:
    peer.answers["filter"] = lambda b: {
        "NodeNames": [],
        "FailedNodes": {"n1": "busy", "n2": "busy"},
        "FailedAndUnresolvableNodes": {"n2": "wrong rack", "n3": "wrong rack"},
    }
    result = await _simulate(*NODES, pod("p"), _profile({"urlPrefix": peer.url, "filterVerb": "filter"}))
    (report,) = result.pods
    assert report.status == "Unschedulable"
    # failedAndUnresolvableNodes wins over failedNodes; only n1 (Unschedulable) is a preemption candidate.
    assert report.message.startswith("0/3 nodes are available: 1 busy, 2 wrong rack. no new claims to deallocate, "
                                      "preemption: 0/3 nodes are "
                                      "available: 1 No preemption victims found for incoming pod, 2 Preemption is "
                                      "not helpful for scheduling.")  # fmt: skip


async def test_plugin_and_extender_reasons_share_the_message(peer: Peer) -> None:
    peer.answers["filter"] = lambda b: {"NodeNames": [], "FailedAndUnresolvableNodes": dict.fromkeys(names(b), "no")}
    result = await _simulate(node("n1"), node("n2", unschedulable=True), pod("p"),
                             _profile({"urlPrefix": peer.url, "filterVerb": "filter"}))  # fmt: skip
    (report,) = result.pods
    assert report.message.startswith("0/2 nodes are available: 1 no, 1 node(s) were unschedulable.")


async def test_prioritize_adds_score_times_weight_times_ten_beside_the_plugins(peer: Peer) -> None:
    peer.answers["prioritize"] = lambda b: [{"Host": n, "Score": 7 if n == "n2" else 0} for n in names(b)]
    extender = {"urlPrefix": peer.url, "prioritizeVerb": "prioritize", "weight": 3}
    result = await _simulate(*NODES, pod("p", cpu="100m"), _profile(extender))
    (report,) = result.pods
    assert report.node == "n2"
    row = report.scores["n2"]
    assert row[peer.url] == 7 * 3 * 10
    assert row["total"] == sum(v for k, v in row.items() if k != "total")
    assert report.scores["n1"][peer.url] == 0


async def test_an_extender_without_interest_in_the_pod_is_not_called(peer: Peer) -> None:
    extender = {"urlPrefix": peer.url, "filterVerb": "filter", "managedResources": [{"name": "example.com/gpu"}]}
    result = await _simulate(*NODES, pod("p"), _profile(extender))
    assert peer.calls == []
    assert result.pods[0].status == "Scheduled"


def _down_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def test_an_ignorable_extender_that_is_down_is_skipped() -> None:
    url = _down_url()
    result = await _simulate(*NODES, pod("p"),
                             _profile({"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "p", "weight": 1,
                                       "ignorable": True}))  # fmt: skip
    assert result.pods[0].status == "Scheduled"


async def test_a_non_ignorable_extender_that_is_down_fails_the_cycle_with_upstreams_error() -> None:
    url = _down_url()
    port = url.rsplit(":", 1)[1]
    result = await _simulate(*NODES, pod("p"), _profile({"urlPrefix": url, "filterVerb": "filter"}))
    (report,) = result.pods
    assert report.status == "Error"
    assert report.message == f'Post "{url}/filter": dial tcp 127.0.0.1:{port}: connect: connection refused'
    events = [e for e in result.cluster.events if e.reason == "FailedScheduling"]
    assert events and events[-1].message == report.message
    assert result.cluster.pod("default", "p") is not None  # nothing lost: still pending


async def test_a_binder_extender_binds_instead_of_the_bind_plugins(peer: Peer) -> None:
    peer.answers["bind"] = lambda b: {}
    result = await _simulate(*NODES, pod("p", uid="u-p"), _profile({"urlPrefix": peer.url, "bindVerb": "bind"}))
    (report,) = result.pods
    assert report.status == "Scheduled"
    ((_, body),) = peer.calls
    assert body == {"PodName": "p", "PodNamespace": "default", "PodUID": "u-p", "Node": report.node}
    stored = result.cluster.pod("default", "p")
    assert stored is not None and stored["spec"]["nodeName"] == report.node


async def test_a_failing_binder_extender_fails_the_binding_and_the_pod_is_retried(peer: Peer) -> None:
    peer.answers["bind"] = lambda b: {"Error": "binding refused"}
    result = await _simulate(*NODES, pod("p"), _profile({"urlPrefix": peer.url, "bindVerb": "bind"}))
    (report,) = result.pods
    assert (report.status, report.message) == ("Error", "binding refused")
    assert peer.verbs().count("bind") > 1  # retried, never dropped


async def test_a_tenant_profile_may_not_call_extenders() -> None:
    with pytest.raises(InputError) as info:
        await _simulate(*NODES, pod("p", namespace="team-a"),
                        _profile({"urlPrefix": "http://e", "filterVerb": "f"}, namespace="team-a"))  # fmt: skip
    assert "tenant policy rule 'extenders': a profile in namespace 'team-a' may not call extender 'http://e'" in str(
        info.value
    )


async def test_an_invalid_extender_is_a_profile_error_naming_the_field() -> None:
    with pytest.raises(InputError) as info:
        await _simulate(*NODES, pod("p"), _profile({"urlPrefix": "http://e", "prioritizeVerb": "p"}))
    assert "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it" in str(info.value)


@pytest.mark.parametrize(
    "cache_capable", [pytest.param(True, id="meta-victims"), pytest.param(False, id="full-victims")]
)
async def test_a_preempting_extender_narrows_the_candidates(peer: Peer, cache_capable: bool) -> None:
    def keep_n2(body: dict[str, Any]) -> dict[str, Any]:
        if cache_capable:
            sent = body["NodeNameToMetaVictims"]
            assert body["NodeNameToVictims"] is None
            return {"NodeNameToMetaVictims": {"n2": sent["n2"]}}
        sent = body["NodeNameToVictims"]
        uids = [{"UID": p["metadata"]["uid"]} for p in sent["n2"]["Pods"]]
        return {"NodeNameToMetaVictims": {"n2": {"Pods": uids, "NumPDBViolations": 0}}}

    peer.answers["preempt"] = keep_n2
    low = [pod(f"low-{n}", cpu="1", priority=0, node_name=n, uid=f"u-low-{n}") for n in ("n1", "n2")]
    extender = {"urlPrefix": peer.url, "preemptVerb": "preempt", "nodeCacheCapable": cache_capable}
    result = await _simulate(
        node("n1", cpu="1"), node("n2", cpu="1"), *low, pod("high", cpu="1", priority=100), _profile(extender)
    )
    assert "preempt" in peer.verbs()
    assert [p["metadata"]["name"] for p, _ in result.cluster.deleted] == ["low-n2"]
    (report,) = result.pods
    assert (report.status, report.node) == ("Scheduled", "n2")


async def test_a_non_ignorable_preempting_extender_that_fails_ends_preemption_with_its_error(peer: Peer) -> None:
    peer.answers["preempt"] = lambda b: {"NodeNameToMetaVictims": {"n1": {"Pods": [], "NumPDBViolations": 0}}}
    low = pod("low", cpu="1", priority=0, node_name="n1")
    result = await _simulate(node("n1", cpu="1"), low, pod("high", cpu="1", priority=100),
                             _profile({"urlPrefix": peer.url, "preemptVerb": "preempt"}))  # fmt: skip
    assert result.cluster.deleted == []
    (report,) = result.pods
    assert report.status == "Unschedulable"
    # The plugin's error is the PostFilter message as is (RunPostFilterPlugins: fwk.AsStatus(s.AsError())).
    assert report.message == (
        '0/1 nodes are available: 1 Insufficient cpu. preemption: expected at least one victim pod on node "n1"'
    )


ZONE_A = {"topology.kubernetes.io/zone": "a"}
# The pending pod's required anti-affinity to the low-priority pod on n1 rejects both nodes of its
# zone; evicting that pod (the only victim, on n1) frees both, so the retry finds n1 and n2 feasible.
AVOIDS_X = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "topology.kubernetes.io/zone"}]}}  # fmt: skip


async def _preempt_then_retry(peer: Peer) -> Simulation:
    peer.answers["prioritize"] = lambda b: [{"Host": n, "Score": 10 if n == "n2" else 0} for n in names(b)]
    extender = {"urlPrefix": peer.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1,
                "nodeCacheCapable": True}  # fmt: skip
    low = pod("low", priority=0, node_name="n1", labels={"app": "x"})
    return await _simulate(node("n1", labels=ZONE_A), node("n2", labels=ZONE_A), low,
                           pod("high", priority=100, affinity=AVOIDS_X), _profile(extender))  # fmt: skip


async def test_a_preemptor_passing_its_nominated_node_through_the_filter_extenders_binds_there(peer: Peer) -> None:
    """schedule_one.go evaluateNominatedNode: the nominated node that passes the filter plugins
    goes alone through the filter extenders; passed, it is the only feasible node (no scoring),
    though the prioritizer would favour n2 (parity seed 548 of the 21-feature run)."""
    peer.answers["filter"] = lambda b: {"NodeNames": names(b)}
    result = await _preempt_then_retry(peer)
    assert [p["metadata"]["name"] for p, _ in result.cluster.deleted] == ["low"]
    (report,) = result.pods
    assert (report.status, report.node) == ("Scheduled", "n1")
    assert [names(b) for verb, b in peer.calls if verb == "filter"] == [["n1"]]
    assert "prioritize" not in peer.verbs()


async def test_a_nominated_node_the_filter_extenders_reject_sends_the_pod_to_the_full_search(peer: Peer) -> None:
    """schedule_one.go findNodesThatFitPod: after evaluateNominatedNode found nothing, every node
    is filtered and the feasible ones go through the extenders again."""
    peer.answers["filter"] = lambda b: {
        "NodeNames": [n for n in names(b) if n != "n1"],
        "FailedNodes": {"n1": "busy"} if "n1" in names(b) else {},
    }
    result = await _preempt_then_retry(peer)
    (report,) = result.pods
    assert (report.status, report.node) == ("Scheduled", "n2")
    assert [names(b) for verb, b in peer.calls if verb == "filter"] == [["n1"], ["n1", "n2"]]


async def _slow(peer: Peer) -> dict[str, Any]:
    await peer.hang.wait()
    return {}


FAULTS: dict[str, tuple[Callable[[Peer], Callable[[Any], Any]], str]] = {
    "slow": (lambda peer: lambda b: _slow(peer), 'Post "{url}/filter": context deadline exceeded '
             "(Client.Timeout exceeded while awaiting headers)"),
    "garbage": (lambda peer: lambda b: web.Response(text="garbage"),
                "invalid character 'g' looking for beginning of value"),
    "http-500": (lambda peer: lambda b: web.Response(status=500),
                 "failed filter with extender at URL {url}/filter, code 500"),
}  # fmt: skip


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("ignorable", [pytest.param(True, id="ignorable"), pytest.param(False, id="not-ignorable")])
async def test_faults_ignorable_binds_not_ignorable_fails_with_upstreams_message(
    peer: Peer, fault: str, ignorable: bool
) -> None:
    make, message = FAULTS[fault]
    peer.answers["filter"] = make(peer)
    extender = {"urlPrefix": peer.url, "filterVerb": "filter", "httpTimeout": "200ms", "ignorable": ignorable}
    result = await _simulate(*NODES, pod("p"), _profile(extender))
    (report,) = result.pods
    if ignorable:
        assert report.status == "Scheduled"
    else:
        assert (report.status, report.message) == ("Error", message.format(url=peer.url))
        assert result.cluster.pod("default", "p") is not None  # still there, still pending: retried
