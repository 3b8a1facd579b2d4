"""Builders shaped as upstream's ``st.MakePod()`` / ``st.MakeNode()``, and a small Handle."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import CycleState, Handle, NodeInfo, NodeScore, PodInfo, SnapshotLister, Status
from scheduler_core.plugins.podtopologyspread import PodTopologySpread, PodTopologySpreadArgs

Json = dict[str, Any]

FOO_SELECTOR: Json = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR_SELECTOR: Json = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def spread(
    max_skew: int,
    key: str,
    when: str,
    selector: Json | None,
    *,
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: list[str] | None = None,
) -> Json:
    """``st.MakePod().SpreadConstraint(maxSkew, key, when, selector, minDomains, affinity, taints, keys)``."""
    c: Json = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if node_affinity_policy is not None:
        c["nodeAffinityPolicy"] = node_affinity_policy
    if node_taints_policy is not None:
        c["nodeTaintsPolicy"] = node_taints_policy
    if match_label_keys is not None:
        c["matchLabelKeys"] = match_label_keys
    return c


class FakeHandle:
    """The part of the Handle PodTopologySpread uses: the snapshot and other objects by kind."""

    def __init__(self, snapshot: Snapshot, objects: Mapping[str, Sequence[Json]] | None = None) -> None:
        self._snapshot = snapshot
        self._objects = dict(objects or {})

    def snapshot(self) -> SnapshotLister:
        return self._snapshot

    def objects(self, kind: str) -> Iterable[Any]:
        return list(self._objects.get(kind, ()))


def build_snapshot(nodes: Iterable[Json], pods: Iterable[Json] = ()) -> Snapshot:
    infos = [NodeInfo(n) for n in nodes]
    by_name: dict[str, NodeInfo] = {info.name: info for info in infos}
    for p in pods:
        target = by_name.get((p.get("spec") or {}).get("nodeName") or "")
        if target is not None:
            target.add_pod(PodInfo(p))
    return Snapshot(infos)


def make_plugin(
    snapshot: Snapshot,
    *,
    args: PodTopologySpreadArgs | Json | None = None,
    objects: Mapping[str, Sequence[Json]] | None = None,
) -> PodTopologySpread:
    if args is None:
        args = PodTopologySpreadArgs(defaulting_type="List")
    elif not isinstance(args, PodTopologySpreadArgs):
        args = PodTopologySpreadArgs.model_validate(args)
    return PodTopologySpread(args, cast(Handle, FakeHandle(snapshot, objects)))


def code_of(status: Status | None) -> str:
    return "Success" if status is None else status.code.upstream_name


def run_filter(plugin: PodTopologySpread, pod: PodInfo, snapshot: Snapshot) -> dict[str, Status | None]:
    """PreFilter over the snapshot, then Filter on each node; PreFilter must succeed."""
    state = CycleState()
    _, status = plugin.pre_filter(state, pod, snapshot.list())
    assert status is None, status
    return {info.name: plugin.filter(state, pod, info) for info in snapshot.list()}


def run_score(plugin: PodTopologySpread, pod: PodInfo, snapshot: Snapshot, candidates: Sequence[str]) -> dict[str, int]:
    """PreScore over the candidates, Score and NormalizeScore; PreScore must succeed."""
    state = CycleState()
    infos = [info for name in candidates if (info := snapshot.get(name)) is not None]
    status = plugin.pre_score(state, pod, infos)
    assert status is None, status
    scores = []
    for info in infos:
        score, status = plugin.score(state, pod, info)
        assert status is None, status
        scores.append(NodeScore(info.name, score))
    assert plugin.normalize_score(state, pod, scores) is None
    return {s.name: s.score for s in scores}


def rows_of(snapshot: Snapshot, names: Sequence[str]) -> np.ndarray:
    return np.array([info.row for name in names if (info := snapshot.get(name)) is not None], dtype=np.int64)
