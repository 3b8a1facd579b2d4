"""The test kit: pod and node builders in the style of upstream's ``st.MakePod()`` /
``st.MakeNode()`` (``pkg/scheduler/testing/wrappers.go``, k8s.io/kubernetes v1.36.3).

``make_pod().name("p").req(cpu="1", memory="1Gi").label("app", "web").obj()`` is a Pod
manifest as the API would hold it; ``.info()`` parses it into a :class:`PodInfo`. Likewise
``make_node().name("n").capacity(cpu="4", memory="8Gi").label("zone", "a").info()``. Every
method returns the wrapper, so a table row reads as one expression. Defaults: namespace
``default``, schedulerName ``crd-scheduler``, a unique uid, and a node labelled with its
hostname.

:func:`pod`, :func:`node`, :func:`pod_info` and :func:`node_info` are the same builders with
keywords (``pod("p", cpu="1", labels={...})``), for a table row that names a few fields; and
:func:`expr` / :func:`selector` build the label selectors the affinity methods take.

This is the one kit (``tests/builders.py`` and interpodaffinity's ``MakePod`` were folded in):
a test that needs a field the kit lacks adds a method here rather than a builder of its own.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping
from typing import Any, Self

from scheduler_core.framework import NodeInfo, PodInfo
from scheduler_core.names import DEFAULT_SCHEDULER_NAME

Json = dict[str, Any]
_uid = itertools.count(1)

# Pod (anti-)affinity kinds (upstream ``st.PodAffinityWithRequiredReq`` / ``...PreferredReq``).
REQUIRED = "required"
PREFERRED = "preferred"


def expr(key: str, operator: str, *values: str) -> Json:
    """A label selector requirement (``metav1.LabelSelectorRequirement``)."""
    requirement: Json = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    return requirement


def selector(*expressions: Json, match_labels: Mapping[str, str] | None = None) -> Json:
    """A ``metav1.LabelSelector`` of ``expressions`` and ``match_labels``."""
    result: Json = {}
    if expressions:
        result["matchExpressions"] = list(expressions)
    if match_labels is not None:
        result["matchLabels"] = dict(match_labels)
    return result


class PodWrapper:
    """Builds a Pod manifest step by step (upstream ``PodWrapper``)."""

    def __init__(self) -> None:
        self._pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "default", "uid": f"uid-{next(_uid)}"},
            "spec": {"schedulerName": DEFAULT_SCHEDULER_NAME, "containers": []},
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

    def resource_version(self, version: str) -> Self:
        self._meta["resourceVersion"] = version
        return self

    def label(self, key: str, value: str) -> Self:
        self._meta.setdefault("labels", {})[key] = value
        return self

    def labels(self, labels: Mapping[str, str]) -> Self:
        self._meta.setdefault("labels", {}).update(labels)
        return self

    def terminating(self) -> Self:
        self._meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        return self

    def owner(self, kind: str, name: str, *, api_version: str = "apps/v1", controller: bool = True) -> Self:
        """One more owner reference (upstream ``OwnerReference``)."""
        ref = {"apiVersion": api_version, "kind": kind, "name": name, "controller": controller}
        self._meta.setdefault("ownerReferences", []).append(ref)
        return self

    def owner_references(self, refs: list[Json]) -> Self:
        """``metadata.ownerReferences`` as given."""
        self._meta["ownerReferences"] = copy.deepcopy(refs)
        return self

    def as_written(self) -> Self:
        """Without the fields the API server defaults (namespace, uid, schedulerName): the
        manifest as a user writes it, for tests of that defaulting."""
        for key in ("namespace", "uid"):
            self._meta.pop(key, None)
        self._spec.pop("schedulerName", None)
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

    def status(self, **fields: Any) -> Self:
        """``status`` fields as the API spells them (``conditions=[...]``, ``startTime=...``)."""
        self._pod.setdefault("status", {}).update(copy.deepcopy(fields))
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

    def container(
        self,
        extra: Mapping[str, str] | None = None,
        *,
        image: str = "pause",
        host_ports: tuple[int, ...] | list[int] = (),
        pre_stop_sleep: int | None = None,
        **requests: str,
    ) -> Self:
        """One more container, with ``requests``, TCP ``host_ports`` and a preStop hook that
        sleeps ``pre_stop_sleep`` seconds (upstream ``Containers``/``Req``)."""
        container: dict[str, Any] = {"name": f"c{len(self._spec['containers'])}", "image": image}
        if requests or extra:
            container["resources"] = {"requests": _resources(requests, extra)}
        if host_ports:
            container["ports"] = [{"containerPort": p, "hostPort": p} for p in host_ports]
        if pre_stop_sleep is not None:
            container["lifecycle"] = {"preStop": {"sleep": {"seconds": pre_stop_sleep}}}
        self._spec["containers"].append(container)
        return self

    def containers(self, containers: list[Json]) -> Self:
        """``spec.containers`` as given, for fields no other method sets."""
        self._spec["containers"] = copy.deepcopy(containers)
        return self

    def init_containers(self, containers: list[Json]) -> Self:
        """``spec.initContainers`` as given."""
        self._spec["initContainers"] = copy.deepcopy(containers)
        return self

    def resource_claim(self, name: str, *, claim: str = "", template: str = "") -> Self:
        """One more ``spec.resourceClaims`` entry, naming a ResourceClaim or a template
        (upstream ``PodResourceClaims``)."""
        entry: Json = {"name": name}
        if claim:
            entry["resourceClaimName"] = claim
        if template:
            entry["resourceClaimTemplateName"] = template
        self._spec.setdefault("resourceClaims", []).append(entry)
        return self

    def req(self, extra: Mapping[str, str] | None = None, **requests: str) -> Self:
        """A container requesting ``requests`` (``cpu="1"``, ``ephemeral_storage="1Gi"``) and
        ``extra`` (``{"nvidia.com/gpu": "1"}``) (upstream ``Req``)."""
        return self.container(_resources(requests, extra))

    def reqs(self, *requests: Mapping[str, str]) -> Self:
        """One container per mapping of ``requests`` (upstream ``Req`` called for each)."""
        for each in requests:
            self.req(each)
        return self

    def init_req(self, extra: Mapping[str, str] | None = None, *, sidecar: bool = False, **requests: str) -> Self:
        """An init container (a restartable sidecar with ``sidecar=True``) (upstream ``InitReq``)."""
        return self.init_container(_resources(requests, extra), sidecar=sidecar)

    def init_container(
        self,
        extra: Mapping[str, str] | None = None,
        *,
        image: str = "pause",
        sidecar: bool = False,
        host_ports: tuple[int, ...] = (),
        **requests: str,
    ) -> Self:
        """One more init container, of ``image``, with ``requests`` and ``extra`` ones and TCP
        ``host_ports``."""
        container: dict[str, Any] = {"name": f"init{len(self._spec.get('initContainers', ()))}", "image": image}
        if requests or extra:
            container["resources"] = {"requests": _resources(requests, extra)}
        if host_ports:
            container["ports"] = [{"containerPort": p, "hostPort": p, "protocol": "TCP"} for p in host_ports]
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

    def host_ports(self, *infos: str) -> Self:
        """A container with the host ports ``"PROTOCOL/IP/PORT"`` (upstream nodeports' ``newPod``;
        empty fields stay empty, for the API server's defaults)."""
        ports = []
        for info in infos:
            protocol, ip, port = info.split("/")
            ports.append({"containerPort": int(port), "hostIP": ip, "hostPort": int(port), "protocol": protocol})
        return self.containers([*self._spec["containers"], {"name": "ports", "image": "pause", "ports": ports}])

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

    def affinity(self, affinity: Json) -> Self:
        """``spec.affinity`` as given (a copy)."""
        self._spec["affinity"] = copy.deepcopy(affinity)
        return self

    def pod_affinity(self, topology_key: str, label_selector: Json | None, kind: str = REQUIRED) -> Self:
        """A pod affinity term, required or preferred with weight 1 (upstream ``PodAffinity``)."""
        return self._affinity_term("podAffinity", topology_key, label_selector, kind)

    def pod_anti_affinity(self, topology_key: str, label_selector: Json | None, kind: str = REQUIRED) -> Self:
        """A pod anti-affinity term (upstream ``PodAntiAffinity``)."""
        return self._affinity_term("podAntiAffinity", topology_key, label_selector, kind)

    def pod_affinity_in(self, key: str, topology_key: str, values: list[str], kind: str = REQUIRED) -> Self:
        return self.pod_affinity(topology_key, selector(expr(key, "In", *values)), kind)

    def pod_affinity_not_in(self, key: str, topology_key: str, values: list[str], kind: str = REQUIRED) -> Self:
        return self.pod_affinity(topology_key, selector(expr(key, "NotIn", *values)), kind)

    def pod_affinity_exists(self, key: str, topology_key: str, kind: str = REQUIRED) -> Self:
        return self.pod_affinity(topology_key, selector(expr(key, "Exists")), kind)

    def pod_anti_affinity_in(self, key: str, topology_key: str, values: list[str], kind: str = REQUIRED) -> Self:
        return self.pod_anti_affinity(topology_key, selector(expr(key, "In", *values)), kind)

    def pod_anti_affinity_not_in(self, key: str, topology_key: str, values: list[str], kind: str = REQUIRED) -> Self:
        return self.pod_anti_affinity(topology_key, selector(expr(key, "NotIn", *values)), kind)

    def pod_anti_affinity_exists(self, key: str, topology_key: str, kind: str = REQUIRED) -> Self:
        return self.pod_anti_affinity(topology_key, selector(expr(key, "Exists")), kind)

    def _affinity_term(self, group: str, topology_key: str, label_selector: Json | None, kind: str) -> Self:
        term: Json = {"topologyKey": topology_key}
        if label_selector is not None:
            term["labelSelector"] = label_selector
        terms = self._spec.setdefault("affinity", {}).setdefault(group, {})
        if kind == REQUIRED:
            terms.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        else:
            terms.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": 1, "podAffinityTerm": term}
            )
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
        self._hostname_label = True
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

    def no_hostname_label(self) -> Self:
        """No implicit ``kubernetes.io/hostname`` label: the node has exactly the labels set
        (as upstream's ``st.MakeNode()``, for tests where a missing topology key matters)."""
        self._hostname_label = False
        return self

    def label(self, key: str, value: str) -> Self:
        self._node["metadata"]["labels"][key] = value
        return self

    def capacity(self, extra: Mapping[str, str] | None = None, **resources: str) -> Self:
        """Capacity and allocatable (upstream ``Capacity``); unnamed resources keep defaults."""
        for field in ("capacity", "allocatable"):
            self._node["status"][field].update(_resources(resources, extra))
        return self

    def capacity_only(self, extra: Mapping[str, str] | None = None, **resources: str) -> Self:
        """Capacity and allocatable of exactly these resources, no defaults (upstream
        ``st.MakeNode().Capacity(...)``: a resource not named is not there)."""
        for field in ("capacity", "allocatable"):
            self._node["status"][field] = _resources(resources, extra)
        return self

    def allocatable(self, extra: Mapping[str, str] | None = None, **resources: str) -> Self:
        self._node["status"]["allocatable"].update(_resources(resources, extra))
        return self

    def labels(self, labels: Mapping[str, str]) -> Self:
        self._node["metadata"]["labels"].update(labels)
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._node["spec"].setdefault("taints", []).append({"key": key, "value": value, "effect": effect})
        return self

    def taints(self, taints: list[Json]) -> Self:
        """``spec.taints`` as given (fields such as ``timeAdded`` included)."""
        self._node["spec"]["taints"] = copy.deepcopy(taints)
        return self

    def unschedulable(self) -> Self:
        self._node["spec"]["unschedulable"] = True
        return self

    def image(self, name: str, size_bytes: int) -> Self:
        self._node["status"].setdefault("images", []).append({"names": [name], "sizeBytes": size_bytes})
        return self

    def images(self, images: list[Json]) -> Self:
        """``status.images`` as given (several names per image, say)."""
        self._node["status"]["images"] = copy.deepcopy(images)
        return self

    def obj(self) -> dict[str, Any]:
        node = copy.deepcopy(self._node)
        if self._hostname_label:
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


def pod(
    name: str = "p",
    namespace: str = "default",
    *,
    cpu: str | None = None,
    memory: str | None = None,
    requests: Mapping[str, str] | None = None,
    containers: list[Json] | None = None,
    init_containers: list[Json] | None = None,
    labels: Mapping[str, str] | None = None,
    node_name: str | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: Json | None = None,
    tolerations: list[Json] | None = None,
    priority: int | None = None,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    overhead: dict[str, str] | None = None,
    host_ports: list[int] | None = None,
    uid: str | None = None,
    owner_references: list[Json] | None = None,
    terminating: bool = False,
    nominated_node_name: str | None = None,
    status: Json | None = None,
    **spec_extra: Any,
) -> Json:
    """:func:`make_pod` with keywords: ``cpu``/``memory``/``requests`` and ``host_ports`` go to
    one container (unless ``containers`` are given); ``uid``, ``labels``, ``owner_references``
    and ``terminating`` to the metadata, ``nominated_node_name`` and ``status`` (``startTime``,
    ``conditions``...) to the status; other keywords are ``spec`` fields."""
    wrapper = make_pod().name(name).namespace(namespace).scheduler_name(scheduler_name)
    if uid:
        wrapper.uid(uid)
    if labels:
        wrapper.labels(labels)
    if owner_references:
        wrapper.owner_references(owner_references)
    if terminating:
        wrapper.terminating()
    if nominated_node_name:
        wrapper.nominated_node_name(nominated_node_name)
    if status:
        wrapper.status(**status)
    if containers is None:
        named = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
        wrapper.container({**(requests or {}), **named}, host_ports=host_ports or ())
    else:
        wrapper.containers(containers)
    fields: Json = {
        "initContainers": init_containers,
        "nodeName": node_name,
        "nodeSelector": node_selector,
        "affinity": affinity,
        "tolerations": tolerations,
        "overhead": overhead,
    }
    wrapper.spec(**{k: v for k, v in fields.items() if v}, **spec_extra)
    if priority is not None:
        wrapper.priority(priority)
    return wrapper.obj()


def pods_on(*node_names: str, labels: Mapping[str, str] | None = None, namespace: str = "default") -> list[Json]:
    """One pod per entry of ``node_names``, bound to that node: ``p0``, ``p1``... with ``labels``."""
    return [pod(f"p{i}", namespace, labels=labels, node_name=n) for i, n in enumerate(node_names)]


def pod_info(name: str = "p", namespace: str = "default", **kwargs: Any) -> PodInfo:
    return PodInfo(pod(name, namespace, **kwargs))


def node(
    name: str = "n",
    *,
    cpu: str = "4",
    memory: str = "32Gi",
    pods: str | int = "110",
    extra: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: list[Json] | None = None,
    unschedulable: bool = False,
    images: list[Json] | None = None,
    hostname_label: bool = True,
) -> Json:
    """:func:`make_node` with keywords: allocatable (and capacity) ``cpu``, ``memory``, ``pods``
    and ``extra`` resources; ``hostname_label=False`` for a node with exactly ``labels``."""
    wrapper = make_node().name(name).capacity(extra, cpu=cpu, memory=memory, pods=str(pods))
    if not hostname_label:
        wrapper.no_hostname_label()
    if labels:
        wrapper.labels(labels)
    if taints:
        wrapper.taints(taints)
    if unschedulable:
        wrapper.unschedulable()
    if images:
        wrapper.images(images)
    return wrapper.obj()


def node_info(name: str = "n", *, pods_on_node: list[Json] | None = None, **kwargs: Any) -> NodeInfo:
    return make_node_info(node(name, **kwargs), pods_on_node or ())


def make_node_info(node: Json, pods: Iterable[Json | PodInfo] = ()) -> NodeInfo:
    """A NodeInfo of the ``node`` manifest with the ``pods`` (manifests, or PodInfos kept as
    they are) on it."""
    info = NodeInfo(node)
    for p in pods:
        info.add_pod(p if isinstance(p, PodInfo) else PodInfo(p))
    return info


def node_infos(nodes: Iterable[Json], pods: Iterable[Json] = ()) -> list[NodeInfo]:
    """A snapshot's NodeInfos (upstream ``cache.NewSnapshot(pods, nodes)``): one per node, each
    pod on the node its ``spec.nodeName`` names; a pod on a node name without a Node still gets
    a NodeInfo (without a node, so without labels), an unassigned pod none."""
    infos: dict[str, NodeInfo] = {}
    for manifest in nodes:
        info = NodeInfo(manifest)
        infos[info.name] = info
    for manifest in pods:
        node_name = (manifest.get("spec") or {}).get("nodeName")
        if node_name:
            infos.setdefault(node_name, NodeInfo()).add_pod(PodInfo(manifest))
    return list(infos.values())


def _resources(named: Mapping[str, str], extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Keyword names as resource names (``ephemeral_storage`` is ``ephemeral-storage``), plus
    ``extra`` for names no keyword can spell (``{"nvidia.com/gpu": "1"}``)."""
    return {**{k.replace("_", "-"): v for k, v in named.items()}, **(extra or {})}
