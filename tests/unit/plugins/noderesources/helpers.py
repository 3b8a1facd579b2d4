"""Builders mirroring upstream's test wrappers (``pkg/scheduler/testing`` ``st.MakePod()``,
``st.MakeNode()``, and noderesources' ``newResourcePod`` / ``makeNode``), so that upstream
table cases can be copied with their numbers, and a scorer that checks batch == per node."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from scheduler_core.framework import CycleState, IntArray, NodeColumns, NodeInfo, PodInfo, Status

_uid = itertools.count(1)
NOTHING = {"cpu": "0", "memory": "0"}


def container(requests: Mapping[str, str] | None = None, *, sidecar: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": f"c{next(_uid)}", "image": "pause"}
    if requests is not None:
        c["resources"] = {"requests": dict(requests)}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def st_pod(
    *reqs: Mapping[str, str],
    name: str | None = None,
    uid: str | None = None,
    node: str = "",
    nominated: str = "",
    init: Sequence[Mapping[str, str]] = (),
    sidecars: Sequence[Mapping[str, str]] = (),
    overhead: Mapping[str, str] | None = None,
    bare_containers: int = 0,
) -> dict[str, Any]:
    """``st.MakePod().Req(r1).Req(r2)...``: one container per request map.

    Upstream's bare ``st.MakePod()`` has no containers at all; the framework's pod parsing
    cannot take that yet, so it stands in as one container requesting cpu and memory 0
    explicitly, which requests (and non-zero requests) exactly the same: nothing."""
    n = next(_uid)
    containers = [container(r) for r in reqs] + [container() for _ in range(bare_containers)]
    spec: dict[str, Any] = {"containers": containers or [container(NOTHING)]}
    if init or sidecars:
        spec["initContainers"] = [container(r, sidecar=True) for r in sidecars] + [container(r) for r in init]
    if node:
        spec["nodeName"] = node
    if overhead:
        spec["overhead"] = dict(overhead)
    pod: dict[str, Any] = {
        "metadata": {"name": name or f"pod{n}", "namespace": "default", "uid": uid or f"uid{n}"},
        "spec": spec,
    }
    if nominated:
        pod["status"] = {"nominatedNodeName": nominated}
    return pod


def st_node(name: str = "", capacity: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``st.MakeNode().Name(name).Capacity(capacity)``: capacity = allocatable, 32 pods;
    without capacity the node has no allocatable at all."""
    status: dict[str, Any] = {}
    if capacity is not None:
        res = {"pods": "32", **capacity}
        status = {"capacity": res, "allocatable": dict(res)}
    return {"metadata": {"name": name or f"node{next(_uid)}"}, "status": status}


def make_node(name: str, milli_cpu: int, memory: int, extended: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Upstream ``makeNode`` (noderesources tests): no pods allocatable."""
    res = {name_: str(q) for name_, q in (extended or {}).items()}
    res.update({"cpu": f"{milli_cpu}m", "memory": str(memory)})
    return {"metadata": {"name": name}, "status": {"capacity": res, "allocatable": dict(res)}}


def usage(
    milli_cpu: int = 0, memory: int = 0, ephemeral: int = 0, scalars: Mapping[str, int] | None = None
) -> dict[str, str]:
    """A container's requests as upstream ``newResourcePod`` writes a ``framework.Resource``:
    cpu, memory, pods and ephemeral-storage always present (possibly 0)."""
    reqs = {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": "0", "ephemeral-storage": str(ephemeral)}
    reqs.update({name: str(q) for name, q in (scalars or {}).items()})
    return reqs


def resource_pod(*usages: Mapping[str, str], init: Sequence[Mapping[str, str]] = (), **kwargs: Any) -> dict[str, Any]:
    """Upstream ``newResourcePod`` (+ ``newResourceInitPod``)."""
    return st_pod(*usages, init=init, **kwargs)


def node_infos(nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]] = ()) -> list[NodeInfo]:
    """A snapshot: each pod lands on the node named by its ``spec.nodeName``."""
    infos = [NodeInfo(n) for n in nodes]
    by_name = {info.name: info for info in infos}
    for p in pods:
        if p["spec"].get("nodeName"):  # as upstream's snapshot, unassigned pods are on no node
            by_name[p["spec"]["nodeName"]].add_pod(PodInfo(p))
    return infos


class ScorePlugin(Protocol):
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]: ...

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None: ...


def scores(plugin: ScorePlugin, state: CycleState, pod: PodInfo, infos: Sequence[NodeInfo]) -> list[int]:
    """Per-node scores, after checking that score_batch over the columns gives the same."""
    columns = NodeColumns(infos)
    per_node = []
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status is None
        per_node.append(score)
    batch = plugin.score_batch(state, pod, columns, np.arange(len(infos), dtype=np.int64))
    assert batch is not None
    assert batch.tolist() == per_node
    return per_node
