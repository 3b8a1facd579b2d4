"""Fluent pod and node builders, in the style of upstream's ``st.MakePod()`` / ``st.MakeNode()``
(``pkg/scheduler/testing/wrappers.go``, k8s.io/kubernetes v1.36.3).

``make_pod().name("p").req(cpu="1", memory="1Gi").label("app", "web").obj()`` is a Pod
manifest as the API would hold it; ``.info()`` parses it into a :class:`PodInfo`. Likewise
``make_node().name("n").capacity(cpu="4", memory="8Gi").label("zone", "a").info()``. Every
method returns the wrapper, so a table row reads as one expression. Defaults match
:mod:`tests.builders`: namespace ``default``, schedulerName ``crd-scheduler``, a unique uid, and
a node labelled with its hostname.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any, Self

from scheduler_core.framework import NodeInfo, PodInfo

_uid = itertools.count(1)


class PodWrapper:
    """Builds a Pod manifest step by step (upstream ``PodWrapper``)."""

    def __init__(self) -> None:
        self._pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": f"wrapper-uid-{next(_uid)}"},
            "spec": {"schedulerName": "crd-scheduler", "containers": []},
        }

    @property
    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = self._pod["metadata"]
        return meta

    @property
    def _spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = self._pod["spec"]
        return spec

    # -- metadata ------------------------------------------------------------------------
    def name(self, name: str) -> Self:
        self._meta["name"] = name
        return self

    def namespace(self, namespace: str) -> Self:
        self._meta["namespace"] = namespace
        return self

    def uid(self, uid: str) -> Self:
        self._meta["uid"] = uid
        return self

    def label(self, key: str, value: str) -> Self:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: dict[str, str]) -> Self:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def terminating(self) -> Self:
        self._meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return self

    # -- spec ----------------------------------------------------------------------------
    def scheduler_name(self, name: str) -> Self:
        self._spec["schedulerName"] = name
        return self

    def node(self, node_name: str) -> Self:
        """``spec.nodeName``: the pod is bound (upstream ``Node``)."""
        self._spec["nodeName"] = node_name
        return self

    def nominated_node_name(self, node_name: str) -> Self:
        self._pod.setdefault("status", {})["nominatedNodeName"] = node_name
        return self

    def priority(self, priority: int) -> Self:
        self._spec["priority"] = priority
        return self

    def priority_class(self, name: str) -> Self:
        self._spec["priorityClassName"] = name
        return self

    def spec(self, **fields: Any) -> Self:
        """Other ``spec`` fields as the API spells them (``preemptionPolicy="Never"``)."""
        self._spec.update(fields)
        return self

    def node_selector(self, selector: dict[str, str]) -> Self:
        self._spec["nodeSelector"] = dict(selector)
        return self

    def container(self, extra: dict[str, str] | None = None, *, image: str = "pause", **requests: str) -> Self:
        """One more container, with ``requests`` (upstream ``Containers``/``Req``)."""
        container: dict[str, Any] = {"name": f"c{len(self._spec['containers'])}", "image": image}
        if requests or extra:
            container["resources"] = {"requests": _resources(requests, extra)}
        self._spec["containers"].append(container)
        return self

    def req(self, extra: dict[str, str] | None = None, **requests: str) -> Self:
        """A container requesting ``requests`` (``cpu="1"``, ``ephemeral_storage="1Gi"``) and
        ``extra`` (``{"nvidia.com/gpu": "1"}``) (upstream ``Req``)."""
        return self.container(extra, **requests)

    def init_req(self, *, sidecar: bool = False, **requests: str) -> Self:
        """An init container (a restartable sidecar with ``sidecar=True``) (upstream ``InitReq``)."""
        container: dict[str, Any] = {"name": f"init{len(self._spec.get('initContainers', ()))}", "image": "pause"}
        if requests:
            container["resources"] = {"requests": _resources(requests)}
        if sidecar:
            container["restartPolicy"] = "Always"
        self._spec.setdefault("initContainers", []).append(container)
        return self

    def overhead(self, **resources: str) -> Self:
        self._spec["overhead"] = _resources(resources)
        return self

    def host_port(self, port: int, *, protocol: str = "TCP", host_ip: str = "") -> Self:
        """A container with one host port (upstream ``HostPort``)."""
        entry: dict[str, Any] = {"containerPort": port, "hostPort": port, "protocol": protocol}
        if host_ip:
            entry["hostIP"] = host_ip
        self._spec["containers"].append(
            {"name": f"c{len(self._spec['containers'])}", "image": "pause", "ports": [entry]}
        )
        return self

    def toleration(self, key: str, value: str = "", effect: str = "", operator: str = "Equal") -> Self:
        entry = {"key": key, "operator": operator, "value": value, "effect": effect}
        self._spec.setdefault("tolerations", []).append({k: v for k, v in entry.items() if v})
        return self

    def scheduling_gates(self, *names: str) -> Self:
        self._spec["schedulingGates"] = [{"name": n} for n in names]
        return self

    def node_affinity_in(self, key: str, *values: str) -> Self:
        """A required node-affinity term ``key In values`` (upstream ``NodeAffinityIn``)."""
        terms = (
            self._spec.setdefault("affinity", {})
            .setdefault("nodeAffinity", {})
            .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {"nodeSelectorTerms": []})
        )
        terms["nodeSelectorTerms"].append(
            {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
        )
        return self

    def pod_affinity(self, topology_key: str, match_labels: dict[str, str], *, anti: bool = False) -> Self:
        """A required pod (anti-)affinity term (upstream ``PodAffinityExists``/``PodAntiAffinity``)."""
        kind = "podAntiAffinity" if anti else "podAffinity"
        terms = (
            self._spec.setdefault("affinity", {})
            .setdefault(kind, {})
            .setdefault("requiredDuringSchedulingIgnoredDuringExecution", [])
        )
        terms.append({"topologyKey": topology_key, "labelSelector": {"matchLabels": dict(match_labels)}})
        return self

    def spread_constraint(
        self,
        max_skew: int,
        topology_key: str,
        match_labels: dict[str, str],
        *,
        when_unsatisfiable: str = "DoNotSchedule",
    ) -> Self:
        """A topology spread constraint (upstream ``SpreadConstraint``)."""
        self._spec.setdefault("topologySpreadConstraints", []).append(
            {
                "maxSkew": max_skew,
                "topologyKey": topology_key,
                "whenUnsatisfiable": when_unsatisfiable,
                "labelSelector": {"matchLabels": dict(match_labels)},
            }
        )
        return self

    # -- results -------------------------------------------------------------------------
    def obj(self) -> dict[str, Any]:
        """The manifest (a copy: the wrapper can go on building)."""
        pod = copy.deepcopy(self._pod)
        if not pod["spec"]["containers"]:
            pod["spec"]["containers"] = [{"name": "c0", "image": "pause"}]
        return pod

    def info(self) -> PodInfo:
        return PodInfo(self.obj())


class NodeWrapper:
    """Builds a Node manifest step by step (upstream ``NodeWrapper``)."""

    def __init__(self) -> None:
        self._node: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n", "labels": {}},
            "spec": {},
            "status": {
                "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
            },
        }

    def name(self, name: str) -> Self:
        self._node["metadata"]["name"] = name
        return self

    def label(self, key: str, value: str) -> Self:
        self._node["metadata"]["labels"][key] = value
        return self

    def capacity(self, extra: dict[str, str] | None = None, **resources: str) -> Self:
        """Capacity and allocatable (upstream ``Capacity``); unnamed resources keep defaults."""
        for field in ("capacity", "allocatable"):
            self._node["status"][field].update(_resources(resources, extra))
        return self

    def allocatable(self, extra: dict[str, str] | None = None, **resources: str) -> Self:
        self._node["status"]["allocatable"].update(_resources(resources, extra))
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._node["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def unschedulable(self) -> Self:
        self._node["spec"]["unschedulable"] = True
        return self

    def image(self, name: str, size_bytes: int) -> Self:
        self._node["status"].setdefault("images", []).append({"names": [name], "sizeBytes": size_bytes})
        return self

    def obj(self) -> dict[str, Any]:
        node = copy.deepcopy(self._node)
        node["metadata"]["labels"].setdefault("kubernetes.io/hostname", node["metadata"]["name"])
        return node

    def info(self, *pods: PodInfo) -> NodeInfo:
        """A NodeInfo of the node with ``pods`` on it."""
        info = NodeInfo(self.obj())
        for pod in pods:
            info.add_pod(pod)
        return info


def make_pod() -> PodWrapper:
    return PodWrapper()


def make_node() -> NodeWrapper:
    return NodeWrapper()


def _resources(named: dict[str, str], extra: dict[str, str] | None = None) -> dict[str, str]:
    """Keyword names as resource names (``ephemeral_storage`` is ``ephemeral-storage``), plus
    ``extra`` for names no keyword can spell (``{"nvidia.com/gpu": "1"}``)."""
    return {**{k.replace("_", "-"): v for k, v in named.items()}, **(extra or {})}
