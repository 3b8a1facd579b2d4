"""Builders of upstream's interpodaffinity tests (``createPodWithAffinityTerms``, affinity terms,
``cache.NewSnapshot``) so that its table cases read the same here, and a plugin set up over a
snapshot and namespaces as ``SetupPluginWithInformers`` does. Pods are built with the kit's
``make_pod()`` (``tests.wrappers``, upstream's ``st.MakePod()`` with ``PodAffinityIn``/...)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import cast

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import Handle, NodeInfo, SnapshotLister
from scheduler_core.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from tests.wrappers import Json, node_infos

_uid = itertools.count(1)

# scoring_test.go: the namespaces known to the informer.
NAMESPACES: list[Json] = [
    {"metadata": {"name": "subteam1.team1", "labels": {"team": "team1"}}},
    {"metadata": {"name": "subteam2.team1", "labels": {"team": "team1"}}},
    {"metadata": {"name": "subteam1.team2", "labels": {"team": "team2"}}},
    {"metadata": {"name": "subteam2.team2", "labels": {"team": "team2"}}},
]


def term(
    label_selector: Json | None,
    topology_key: str = "",
    *,
    namespaces: Sequence[str] | None = None,
    namespace_selector: Json | None = None,
) -> Json:
    """A ``v1.PodAffinityTerm``."""
    result: Json = {"topologyKey": topology_key}
    if label_selector is not None:
        result["labelSelector"] = label_selector
    if namespaces is not None:
        result["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        result["namespaceSelector"] = namespace_selector
    return result


def weighted(weight: int, affinity_term: Json) -> Json:
    return {"weight": weight, "podAffinityTerm": affinity_term}


def affinity(
    *,
    required: Sequence[Json] | None = None,
    preferred: Sequence[Json] | None = None,
    anti_required: Sequence[Json] | None = None,
    anti_preferred: Sequence[Json] | None = None,
) -> Json:
    """A ``v1.Affinity`` with podAffinity/podAntiAffinity present when any of their lists is."""
    result: Json = {}
    if required is not None or preferred is not None:
        pod_affinity: Json = {}
        if required is not None:
            pod_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = list(required)
        if preferred is not None:
            pod_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = list(preferred)
        result["podAffinity"] = pod_affinity
    if anti_required is not None or anti_preferred is not None:
        anti: Json = {}
        if anti_required is not None:
            anti["requiredDuringSchedulingIgnoredDuringExecution"] = list(anti_required)
        if anti_preferred is not None:
            anti["preferredDuringSchedulingIgnoredDuringExecution"] = list(anti_preferred)
        result["podAntiAffinity"] = anti
    return result


class FakeHandle:
    """The part of the Handle InterPodAffinity uses: the snapshot and the namespaces."""

    def __init__(self, snapshot: Snapshot, namespaces: Sequence[Json] = ()) -> None:
        self.current = snapshot
        self.namespaces = list(namespaces)

    def snapshot(self) -> SnapshotLister:
        return self.current

    def objects(self, kind: str) -> list[Json]:
        return list(self.namespaces) if kind == "Namespace" else []


def setup(
    pods: Iterable[Json],
    nodes: Iterable[Json],
    *,
    namespaces: Sequence[Json] = NAMESPACES,
    args: InterPodAffinityArgs | None = None,
) -> tuple[InterPodAffinity, Snapshot]:
    snapshot = Snapshot(node_infos(nodes, pods))
    plugin = InterPodAffinity(args or InterPodAffinityArgs(), cast(Handle, FakeHandle(snapshot, namespaces)))
    return plugin, snapshot


def info_of(snapshot: Snapshot, name: str) -> NodeInfo:
    for info in snapshot.list():
        if info.name == name:
            return info
    raise KeyError(name)
