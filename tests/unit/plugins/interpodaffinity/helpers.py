"""Builders mirroring upstream's test wrappers (``pkg/scheduler/testing`` ``st.MakePod()``
with ``PodAffinityIn``/``PodAntiAffinityExists``/..., ``createPodWithAffinityTerms``,
``cache.NewSnapshot``) so that upstream's interpodaffinity table cases read the same here, and
a plugin set up over a snapshot and namespaces as ``SetupPluginWithInformers`` does."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import Handle, NodeInfo, PodInfo, SnapshotLister
from scheduler_core.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs

Json = dict[str, Any]
_uid = itertools.count(1)

REQUIRED = "required"
PREFERRED = "preferred"

# scoring_test.go: the namespaces known to the informer.
NAMESPACES: list[Json] = [
    {"metadata": {"name": "subteam1.team1", "labels": {"team": "team1"}}},
    {"metadata": {"name": "subteam2.team1", "labels": {"team": "team1"}}},
    {"metadata": {"name": "subteam1.team2", "labels": {"team": "team2"}}},
    {"metadata": {"name": "subteam2.team2", "labels": {"team": "team2"}}},
]


def expr(key: str, operator: str, *values: str) -> Json:
    requirement: Json = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def selector(*expressions: Json, match_labels: Mapping[str, str] | None = None) -> Json:
    result: Json = {}
    if expressions:
        result["matchExpressions"] = list(expressions)
    if match_labels is not None:
        result["matchLabels"] = dict(match_labels)
    return result


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


class MakePod:
    """``st.MakePod()``: a fluent pod builder; ``obj()`` gives the manifest."""

    def __init__(self) -> None:
        n = next(_uid)
        self._pod: Json = {"metadata": {"name": "", "namespace": "", "uid": f"uid{n}"}, "spec": {}}

    def name(self, name: str) -> MakePod:
        self._pod["metadata"]["name"] = name
        return self

    def uid(self, uid: str) -> MakePod:
        self._pod["metadata"]["uid"] = uid
        return self

    def namespace(self, namespace: str) -> MakePod:
        self._pod["metadata"]["namespace"] = namespace
        return self

    def label(self, key: str, value: str) -> MakePod:
        self._pod["metadata"].setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> MakePod:
        for key, value in labels.items():
            self.label(key, value)
        return self

    def node(self, node: str) -> MakePod:
        self._pod["spec"]["nodeName"] = node
        return self

    def nominated_node_name(self, node: str) -> MakePod:
        self._pod.setdefault("status", {})["nominatedNodeName"] = node
        return self

    def affinity(self, value: Json) -> MakePod:
        self._pod["spec"]["affinity"] = copy.deepcopy(value)
        return self

    def _add(self, kind: str, anti: bool, affinity_term: Json) -> MakePod:
        group = (
            self._pod["spec"].setdefault("affinity", {}).setdefault("podAntiAffinity" if anti else "podAffinity", {})
        )
        if kind == REQUIRED:
            group.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(affinity_term)
        else:
            group.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(weighted(1, affinity_term))
        return self

    def pod_affinity(self, topology_key: str, label_selector: Json | None, kind: str = REQUIRED) -> MakePod:
        return self._add(kind, False, term(label_selector, topology_key))

    def pod_anti_affinity(self, topology_key: str, label_selector: Json | None, kind: str = REQUIRED) -> MakePod:
        return self._add(kind, True, term(label_selector, topology_key))

    def pod_affinity_in(self, key: str, topology_key: str, values: Sequence[str], kind: str = REQUIRED) -> MakePod:
        return self.pod_affinity(topology_key, selector(expr(key, "In", *values)), kind)

    def pod_affinity_not_in(self, key: str, topology_key: str, values: Sequence[str], kind: str = REQUIRED) -> MakePod:
        return self.pod_affinity(topology_key, selector(expr(key, "NotIn", *values)), kind)

    def pod_affinity_exists(self, key: str, topology_key: str, kind: str = REQUIRED) -> MakePod:
        return self.pod_affinity(topology_key, selector(expr(key, "Exists")), kind)

    def pod_anti_affinity_in(self, key: str, topology_key: str, values: Sequence[str], kind: str = REQUIRED) -> MakePod:
        return self.pod_anti_affinity(topology_key, selector(expr(key, "In", *values)), kind)

    def pod_anti_affinity_not_in(
        self, key: str, topology_key: str, values: Sequence[str], kind: str = REQUIRED
    ) -> MakePod:
        return self.pod_anti_affinity(topology_key, selector(expr(key, "NotIn", *values)), kind)

    def pod_anti_affinity_exists(self, key: str, topology_key: str, kind: str = REQUIRED) -> MakePod:
        return self.pod_anti_affinity(topology_key, selector(expr(key, "Exists")), kind)

    def obj(self) -> Json:
        return copy.deepcopy(self._pod)


def pod_with_terms(
    namespace: str,
    node_name: str,
    labels: Mapping[str, str],
    affinity_terms: Sequence[Json] | None,
    anti_affinity_terms: Sequence[Json] | None,
) -> Json:
    """``createPodWithAffinityTerms`` (filtering_test.go): both groups present, maybe empty."""
    spec: Json = {
        "affinity": {
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": affinity_terms},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti_affinity_terms},
        }
    }
    if node_name:
        spec["nodeName"] = node_name
    meta: Json = {"name": "", "namespace": namespace, "uid": f"uid{next(_uid)}", "labels": dict(labels)}
    return {"metadata": meta, "spec": spec}


def plain_pod(
    node_name: str = "", labels: Mapping[str, str] | None = None, namespace: str = "", aff: Json | None = None
) -> Json:
    """``&v1.Pod{Spec: {NodeName, Affinity}, ObjectMeta: {Namespace, Labels}}``."""
    spec: Json = {}
    if node_name:
        spec["nodeName"] = node_name
    if aff is not None:
        spec["affinity"] = copy.deepcopy(aff)
    meta: Json = {"name": "", "namespace": namespace, "uid": f"uid{next(_uid)}"}
    if labels is not None:
        meta["labels"] = dict(labels)
    return {"metadata": meta, "spec": spec}


def make_node(name: str, labels: Mapping[str, str] | None = None) -> Json:
    """``v1.Node{ObjectMeta: {Name, Labels}}`` (no hostname label added)."""
    meta: Json = {"name": name}
    if labels is not None:
        meta["labels"] = dict(labels)
    return {"metadata": meta}


def node_infos(pods: Iterable[Json], nodes: Iterable[Json]) -> list[NodeInfo]:
    """``cache.NewSnapshot(pods, nodes)``: a pod on a node name without a Node still gets a
    NodeInfo (without a node, so without labels)."""
    infos: dict[str, NodeInfo] = {}
    for manifest in nodes:
        info = NodeInfo(manifest)
        infos[info.name] = info
    for manifest in pods:
        node_name = (manifest.get("spec") or {}).get("nodeName")
        if not node_name:
            continue
        if node_name not in infos:
            infos[node_name] = NodeInfo()
        infos[node_name].add_pod(PodInfo(manifest))
    return list(infos.values())


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
    snapshot = Snapshot(node_infos(pods, nodes))
    plugin = InterPodAffinity(args or InterPodAffinityArgs(), cast(Handle, FakeHandle(snapshot, namespaces)))
    return plugin, snapshot


def info_of(snapshot: Snapshot, name: str) -> NodeInfo:
    for info in snapshot.list():
        if info.name == name:
            return info
    raise KeyError(name)
