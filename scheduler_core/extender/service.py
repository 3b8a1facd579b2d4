"""Our framework as an extender of a stock kube-scheduler: what ``crd-scheduler extender serve`` answers.

The other direction of :mod:`scheduler_core.extender.client`: kube-scheduler POSTs
``k8s.io/kube-scheduler/extender/v1`` JSON (:mod:`wire`) and this service answers with a
profile's plugins, any registered plugin included (out-of-tree Python plugins too), over its own
cache of nodes and assigned pods, which the server keeps current by watching the API (so
``nodeCacheCapable: true`` works: names are resolved here).

- ``filter``: PreFilter, then every Filter plugin on each node sent (all of them: kube-scheduler
  already chose which to send). An Unschedulable node goes to ``FailedNodes``, an
  UnschedulableAndUnresolvable one to ``FailedAndUnresolvableNodes`` (so kube-scheduler's
  preemption skips it); an Error status is the answer's ``Error``. The answer has the request's
  shape: ``NodeNames`` for names, ``Nodes`` for whole Node objects.
- ``prioritize``: PreFilter, PreScore and Score over the nodes sent, weighted as in the profile,
  then mapped onto the extender range: ``round(total * 10 / (100 * sum of weights))``. Precision
  lost: 101 levels per plugin become 11, so nodes whose weighted totals differ by less than a
  tenth of the range may tie (kube-scheduler multiplies the 0..10 back by ``weight * 10``).
- ``preempt``: for each candidate node, the victims are removed from a copy of the node (PreFilter
  RemovePod extensions told) and the node is kept when the pod then passes every Filter plugin;
  the answer is ``NodeNameToMetaVictims`` as upstream expects.
- ``bind``: the pod is bound through the API (pods/binding with the UID as precondition).

Bad requests raise :class:`BadRequest` with a reason that the server answers as 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scheduler_core.cache import Cache
from scheduler_core.config import PluginSet, SchedulerProfileSpec
from scheduler_core.extender import wire
from scheduler_core.extender.wire import MAX_EXTENDER_PRIORITY, Json
from scheduler_core.framework import (
    MAX_NODE_SCORE,
    ClusterAPI,
    Code,
    CycleState,
    Manifest,
    NodeInfo,
    PodInfo,
    Status,
    manifest,
)
from scheduler_core.runtime.build import ProfileError, build_profile
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.handle import FrameworkHandle

NOT_IN_CACHE = "node is not in the extender's cache"


class BadRequest(ValueError):
    """A request the service cannot read; ``str()`` is the reason the server answers with 400."""


def _object(body: Any, name: str) -> Manifest:
    value = wire.field(body, name) if isinstance(body, dict) else None
    if not isinstance(value, dict):
        raise BadRequest(f"{name}: an object is required")
    return value


def _pod(body: Any) -> PodInfo:
    pod = _object(body, "Pod")
    if not isinstance(pod.get("metadata"), dict) or not isinstance(pod.get("spec"), dict):
        raise BadRequest("Pod: metadata and spec are required")
    try:
        return PodInfo(pod)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise BadRequest(f"Pod: {exc}") from None


class ExtenderService:
    def __init__(
        self,
        spec: SchedulerProfileSpec,
        registry: Manifest,
        default_multi_point: PluginSet,
        *,
        api: ClusterAPI,
        profile_name: str = "extender",
    ) -> None:
        """Build the profile's framework (raises ProfileError as a profile build does)."""
        if spec.extenders:
            raise ProfileError([("extenders", "a profile served as an extender may not call extenders")])
        self.cache = Cache()
        self.api = api
        handle = FrameworkHandle(profile_name, snapshot=self.cache.update_snapshot, api=api)
        built = build_profile(spec, registry, handle, default_multi_point)
        self.framework = Framework(
            profile_name=profile_name,
            scheduler_name=spec.scheduler_name,
            percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score,
            built=built,
            handle=handle,
        )
        self._assigned: dict[str, PodInfo] = {}  # uid -> assigned pod in the cache

    # -- the cache, fed by the watch -------------------------------------------------------------
    def on_node(self, event: str, node: Manifest) -> None:
        name = str(manifest.meta(node).get("name", ""))
        if event == "DELETED":
            if self.cache.get_node(name) is not None:
                self.cache.remove_node(name)
        elif self.cache.get_node(name) is None:
            self.cache.add_node(node)
        else:
            self.cache.update_node(None, node)

    def on_pod(self, event: str, pod: Manifest) -> None:
        info = PodInfo(pod)
        old = self._assigned.pop(info.uid, None)
        if old is not None:
            self.cache.remove_pod(old)
        terminal = info.phase in ("Succeeded", "Failed")
        if event != "DELETED" and info.node_name and not terminal:
            self.cache.add_pod(info)
            self._assigned[info.uid] = info

    # -- verbs ------------------------------------------------------------------------------------
    def _nodes(self, body: Any) -> tuple[list[str], dict[str, Manifest]]:
        """Names in request order, and the Node objects sent (full-object mode)."""
        obj = body if isinstance(body, dict) else {}
        names = wire.field(obj, "NodeNames")
        if names is not None:
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise BadRequest("NodeNames: a list of node names is required")
            return list(names), {}
        nodes = wire.field(obj, "Nodes")
        items = wire.field(nodes, "items") if isinstance(nodes, dict) else None
        if not isinstance(items, list) or not all(isinstance(n, dict) for n in items):
            raise BadRequest("NodeNames or Nodes.items is required")
        sent = {str(manifest.meta(n).get("name", "")): n for n in items}
        return list(sent), sent

    def _node_info(self, name: str, sent: Mapping[str, Manifest]) -> NodeInfo | None:
        info = self.cache.update_snapshot().get(name)
        if info is None and name in sent:
            info = NodeInfo(sent[name])  # not watched yet: the object as sent, without its pods
        return info

    def filter(self, body: Any) -> Json:
        pod = _pod(body)
        names, sent = self._nodes(body)
        fwk = self.framework
        state = CycleState()
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        passed: list[str] = []
        snapshot = self.cache.update_snapshot()
        pre = fwk.run_pre_filter(state, pod, snapshot.list())
        if pre.status is not None and pre.status.code is not Code.SUCCESS and not pre.status.is_rejected():
            return {"NodeNames": None, "Nodes": None, "Error": pre.status.message()}
        allowed = pre.result.node_names if pre.result is not None else None
        # The batch masks over the cache's columns decide most nodes at once, as in a scheduling
        # cycle; the per-node Filter runs for what they cannot decide and for the reasons.
        mask = fwk.run_filter_batch(state, pod, snapshot.columns) if pre.status is None else None
        per_node = pre.status is None and fwk.has_per_node_filters(state)
        for name in names:
            status: Status | None
            cached = snapshot.get(name)
            info = cached if cached is not None else self._node_info(name, sent)
            if pre.status is not None and pre.status.code is not Code.SUCCESS:
                status = pre.status
            elif info is None:
                status = Status.unschedulable(NOT_IN_CACHE)
            elif allowed is not None and name not in allowed:
                status = Status.unresolvable(
                    f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(pre.plugins_with_nodes))}]"
                )
            elif cached is not None and (mask is None or mask[cached.row]):
                passes = not per_node or fwk.run_filter_per_node_only(state, pod, cached)
                status = None if passes else fwk.run_filter(state, pod, cached)
            else:
                status = fwk.run_filter(state, pod, info)
            if status is None or status.code is Code.SUCCESS:
                passed.append(name)
            elif status.code is Code.ERROR:
                return {"NodeNames": None, "Nodes": None, "Error": status.message()}
            elif status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                unresolvable[name] = status.message()
            else:
                failed[name] = status.message()
        result: Json = {"FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable, "Error": ""}
        if sent:
            result.update(NodeNames=None, Nodes={"metadata": {}, "items": [sent[n] for n in passed]})
        else:
            result.update(NodeNames=passed, Nodes=None)
        return result

    def prioritize(self, body: Any) -> list[Json]:
        pod = _pod(body)
        names, _ = self._nodes(body)
        fwk = self.framework
        snapshot = self.cache.update_snapshot()
        known = [info for info in (snapshot.get(n) for n in names) if info is not None]
        scores = dict.fromkeys(names, 0)
        if known and fwk.score_plugins:
            state = CycleState()
            fwk.run_pre_filter(state, pod, snapshot.list())
            status = fwk.run_pre_score(state, pod, known)
            if status is not None:
                raise ServiceError(status.message())
            rows = np.array([info.row for info in known], np.int64)
            outcome, status = fwk.run_score(state, pod, known, snapshot.columns, rows)
            if status is not None or outcome is None:
                raise ServiceError(status.message() if status is not None else "score failed")
            top = MAX_NODE_SCORE * sum(fwk.score_weights[n] for n in outcome.names) or 1
            for info, total in zip(known, outcome.totals.tolist(), strict=True):
                scores[info.name] = to_extender_score(int(total), top)
        return [{"Host": name, "Score": score} for name, score in scores.items()]

    def preempt(self, body: Any) -> Json:
        pod = _pod(body)
        obj = body if isinstance(body, dict) else {}
        fwk = self.framework
        snapshot = self.cache.update_snapshot()
        candidates = _victim_uids(obj)
        state = CycleState()
        fwk.run_pre_filter(state, pod, snapshot.list())
        kept: dict[str, Json] = {}
        for node_name, (uids, violations) in candidates.items():
            info = snapshot.get(node_name)
            if info is None:
                continue
            node = info.clone()
            node_state = state.clone()
            victims = [p for p in node.pods if p.uid in uids]
            for victim in victims:
                node.remove_pod(victim)
                fwk.run_pre_filter_extension_remove_pod(node_state, pod, victim, node)
            if fwk.run_filter(node_state, pod, node) is None:
                kept[node_name] = {"Pods": [{"UID": uid} for uid in uids], "NumPDBViolations": violations}
        return {"NodeNameToMetaVictims": kept}

    async def bind(self, body: Any) -> Json:
        obj = body if isinstance(body, dict) else {}
        fields = {}
        for name in ("PodName", "PodNamespace", "PodUID", "Node"):
            value = wire.field(obj, name)
            if not isinstance(value, str) or not value:
                raise BadRequest(f"{name}: a non-empty string is required")
            fields[name] = value
        meta = {"name": fields["PodName"], "namespace": fields["PodNamespace"], "uid": fields["PodUID"]}
        status = await self.api.bind(PodInfo({"metadata": meta, "spec": {}}), fields["Node"])
        return {"Error": status.message() if status is not None else ""}


class ServiceError(RuntimeError):
    """A plugin failed while answering (a 500 with the plugin's message)."""


def to_extender_score(total: int, top: int) -> int:
    """A weighted plugin total (0..top) on the extender scale 0..10, rounded half up."""
    scaled = (2 * total * MAX_EXTENDER_PRIORITY + top) // (2 * top)
    return max(0, min(MAX_EXTENDER_PRIORITY, scaled))


def _victim_uids(body: Manifest) -> dict[str, tuple[set[str], int]]:
    """Candidates of ExtenderPreemptionArgs, in either form, as victim UIDs per node."""
    meta = wire.field(body, "NodeNameToMetaVictims")
    full = wire.field(body, "NodeNameToVictims")
    source = meta if meta is not None else full
    if source is None:
        return {}
    if not isinstance(source, dict):
        raise BadRequest("NodeNameToMetaVictims or NodeNameToVictims must be an object")
    result: dict[str, tuple[set[str], int]] = {}
    for node, victims in source.items():
        if not isinstance(victims, dict):
            raise BadRequest(f"victims of node {node!r} must be an object")
        pods = wire.field(victims, "Pods") or []
        if not isinstance(pods, list):
            raise BadRequest(f"victims of node {node!r}: Pods must be a list")
        uids: set[str] = set()
        for p in pods:
            if not isinstance(p, dict):
                raise BadRequest(f"victims of node {node!r}: a pod must be an object")
            uid = wire.field(p, "UID") if meta is not None else manifest.meta(p).get("uid")
            uids.add(str(uid or ""))
        count = wire.field(victims, "NumPDBViolations") or 0
        result[node] = (uids, int(count) if isinstance(count, int | float) else 0)
    return result
