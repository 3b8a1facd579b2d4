"""Batch and per-node forms agree exactly, end to end (DESIGN.md "Speed").

Random clusters (capacities, labels, taints, cordons, existing pods) and pods (requests,
tolerations, node selectors, required and preferred node affinity, node names) are
simulated twice with the same seed: once with the plugins' batch forms over the columnar
snapshot, once per node only. Every placement, per-plugin score and filter reason must match.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_core.simulator.manifests import load_texts
from scheduler_core.simulator.report import render_json
from scheduler_core.simulator.run import simulate
from tests.wrappers import node, pod

ZONES = ["a", "b", "c"]
TAINTS = [
    {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "maint", "value": "", "effect": "NoExecute"},
]
TOLERATIONS = [
    {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Exists"},
    {"operator": "Exists"},
]


@st.composite
def nodes(draw: st.DrawFn) -> list[dict[str, Any]]:
    count = draw(st.integers(2, 12))
    result = []
    for i in range(count):
        result.append(
            node(
                f"n{i}",
                cpu=str(draw(st.sampled_from([1, 2, 4, 8]))),
                memory=f"{draw(st.sampled_from([2, 4, 16]))}Gi",
                pods=draw(st.sampled_from([3, 10, 110])),
                labels={"zone": draw(st.sampled_from(ZONES)), "tier": draw(st.sampled_from(["x", "y", "10", "20"]))},
                taints=draw(st.lists(st.sampled_from(TAINTS), max_size=2, unique_by=lambda t: t["key"])),
                unschedulable=draw(st.booleans()) and i % 4 == 3,
            )
        )
    return result


@st.composite
def pods(draw: st.DrawFn, node_count: int) -> list[dict[str, Any]]:
    result = []
    for i in range(draw(st.integers(1, 12))):
        kwargs: dict[str, Any] = {
            "cpu": draw(st.sampled_from([None, "100m", "500m", "1", "3"])),
            "memory": draw(st.sampled_from([None, "256Mi", "1Gi", "3Gi"])),
            "tolerations": draw(st.lists(st.sampled_from(TOLERATIONS), max_size=2)),
        }
        if draw(st.booleans()):
            kwargs["node_selector"] = {"zone": draw(st.sampled_from(ZONES))}
        affinity: dict[str, Any] = {}
        if draw(st.booleans()):
            op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
            expr: dict[str, Any] = {"key": "tier", "operator": op}
            if op in ("In", "NotIn"):
                expr["values"] = draw(st.lists(st.sampled_from(["x", "y", "10"]), min_size=1, max_size=2))
            elif op in ("Gt", "Lt"):
                expr["values"] = [draw(st.sampled_from(["5", "15"]))]
            affinity["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}
            }
        if draw(st.booleans()):
            affinity.setdefault("nodeAffinity", {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {
                    "weight": draw(st.integers(1, 100)),
                    "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": [z]}]},
                }
                for z in draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=2, unique=True))
            ]
        if affinity:
            kwargs["affinity"] = affinity
        if draw(st.integers(0, 9)) == 0:
            kwargs["node_name"] = f"n{draw(st.integers(0, node_count))}"
        manifest = pod(f"p{i}", uid=f"p{i}", **kwargs)
        if "node_name" in kwargs:  # a pending pod that asks for a node: NodeName's PreFilter narrows
            manifest["spec"]["nodeName"] = None
            manifest["spec"]["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": [kwargs["node_name"]]}
                                ]
                            }
                        ]
                    }
                }
            }
        result.append(manifest)
    return result


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    node_list = draw(nodes())
    pod_list = draw(pods(len(node_list)))
    strategy = draw(st.sampled_from(["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]))
    return node_list, pod_list, strategy


def _profile(strategy: str) -> dict[str, Any]:
    args: dict[str, Any] = {"scoringStrategy": {"type": strategy}}
    if strategy == "RequestedToCapacityRatio":
        args["scoringStrategy"]["requestedToCapacityRatio"] = {
            "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
        }
    return {
        "apiVersion": "scheduling.crd-scheduler.io/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "p", "namespace": "crd-scheduler"},
        "spec": {"schedulerName": "crd-scheduler", "pluginConfig": [{"name": "NodeResourcesFit", "args": args}]},
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_batch_and_per_node_agree(cluster: tuple[list[dict[str, Any]], list[dict[str, Any]], str]) -> None:
    node_list, pod_list, strategy = cluster
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [*node_list, *pod_list, _profile(strategy)]})
    loaded = load_texts([("generated.json", text)])
    batch = render_json(simulate(loaded, seed=7, batch=True).pods)
    per_node = render_json(simulate(load_texts([("generated.json", text)]), seed=7, batch=False).pods)
    assert batch == per_node


def test_batch_and_per_node_agree_on_a_shared_allocated_claim() -> None:
    """DynamicResources' batch Filter (a pod whose claims are all allocated) against its
    per-node Filter, end to end: pods sharing a claim allocated on node-a go there; one that its
    node selector keeps on node-b is refused with the claim's reason, and PostFilter leaves the
    claim alone (reserved by the others)."""
    from pathlib import Path

    example = (Path(__file__).parents[3] / "examples/dra/cluster.yaml").read_text()
    on_a = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}]}
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-1"}
    shared = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "shared", "namespace": "default", "uid": "uid-shared"},
              "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
              "status": {"allocation": {"devices": {"results": [result]}, "nodeSelector": on_a}}}  # fmt: skip
    users = []
    for i in range(4):
        user = pod(f"user-{i}", node_selector={"kubernetes.io/hostname": "node-b"} if i == 3 else None)
        user["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
        user["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
        users.append(user)
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": [shared, *users]})

    def run(batch: bool) -> str:
        return render_json(
            simulate(load_texts([("dra.yaml", example), ("shared.json", text)]), seed=3, batch=batch).pods
        )

    batch, per_node = run(True), run(False)
    assert batch == per_node
    placed = {p["name"]: p for p in json.loads(batch)["pods"]}
    assert [placed[f"user-{i}"].get("node") for i in range(4)] == ["node-a", "node-a", "node-a", None]
    assert placed["user-3"]["filtered"] == {
        "node-a": ["node(s) didn't match Pod's node affinity/selector"],
        "node-b": ["resourceclaim not available on the node"],
    }, placed["user-3"]
