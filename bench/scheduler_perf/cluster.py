"""Both schedulers on the dev cluster, for one upstream workload (``bench/cluster.py``'s machinery).

A :class:`WorkloadBench` is ``bench/cluster.py``'s :class:`~bench.cluster.Bench` whose Nodes
come from the variant's ``createNodes`` ops (upstream's node templates and prepare
strategies, plus the bench's run label) and whose measured pods are the variant's
``collectMetrics`` ``createPods`` op: upstream's pod template, ``schedulerName`` of the side
under test and a ``nodeSelector`` on the run label (so neither scheduler sees the other's
nodes). Everything else is ``Bench``'s: 16 creator threads, a watch timing each binding, the
operator and kube-scheduler in turn (stream mode: the scheduler runs while the pods are made;
backlog: it starts once all exist), CPU per bound pod, peak RSS, the control plane's CPU.

The pods of the ``createPods`` ops before the measured one (upstream's init pods) are placed
by the side under test before its measured pods, untimed (``Bench.place_init_pods``; in
backlog mode by a first run of that scheduler, stopped before the backlog is made), and each
side's pods are deleted after its turn, so both start from the same empty nodes.

That is the *simple* path, for variants whose ops are ``createNodes``, ``createNamespaces`` and
``createPods``. Any other variant takes the *ops* path (:class:`OpsRun`, stream only): for each
side in turn, its scheduler is started, then every op runs in upstream's order on the wall
clock as ``executor.go`` runs them (``createAny``/``updateAny`` of any kind through discovery,
``updateAny`` at ``updatePerSecond``, ``deletePods`` at ``deletePodsPerSecond`` or as one
DeleteCollection, in the background with ``skipWaitToCompletion``, ``churn`` in the background
until the last op, ``barrier``, ``sleep``, and the measured windows of ``collectMetrics`` and
``start``/``stopCollectingMetrics``); the scheduler is stopped and everything the side made is
deleted (pods with their finalizers dropped, namespaces, nodes, cluster-scoped objects), so
the other side starts from the same state. Pods get the side's ``schedulerName`` and a
``nodeSelector`` on the run label; every node the ops make carries that label. Templates are
read with the in-process mode's :func:`~bench.scheduler_perf.inprocess.load_template`.

Volumes, on both paths, as ``runners.go`` makes them: a ``createPods`` op with
``persistentVolumeTemplatePath`` gives each pod its own claim, pre-bound to its own volume
(both phases Bound; made before the pods, untimed), and a ``createNodes`` op with a
``nodeAllocatableStrategy`` gives each node its CSINode (attach limits, migrated plugins).
Both are deleted after each side's turn.

DRA on the ops path: ``createResourceDriver`` publishes dra.go's ResourceSlice for each of the
side's nodes matching its glob; DeviceClasses, claims and claim templates come from
``createAny``; the dev cluster's resourceclaim controller makes the pods' claims. A kind whose
API version the dev cluster does not serve is :class:`~bench.scheduler_perf.inprocess.Unsupported`
at run time, with the settings that serve it.

:func:`check` raises :class:`~bench.scheduler_perf.inprocess.Unsupported`, named by op, for
``createResourceClaims`` (no performance-config uses it). ``createPods`` with ``steadyState`` keeps
``count`` pods in being for ``duration`` as executor.go does. ``allocResourceClaims``
allocates the claims no pod references with DynamicResources' allocator, as the in-process
mode does, and PUTs each claim's status before the pods come (the same allocations on both
sides: the node order is seeded by the op's index).
"""

from __future__ import annotations

import contextlib
import copy
import fnmatch
import itertools
import json
import os
import random
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
import yaml
from kubernetes import client, dynamic
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from bench.cluster import (
    KUBE_SCHEDULER_CONFIGURATION,
    ROOT,
    TIMEOUT,
    Bench,
    CpuReading,
    apiserver_requests,
    control_plane_cpu,
    control_plane_spent,
    cpu_seconds_between,
    creation_seconds,
    dev_cluster,
    dev_cluster_pids,
    process_cpu,
    process_cpu_seconds,
    process_memory_mib,
    stop_operator,
    tcp_connections,
)
from bench.scheduler_perf.config import Variant
from bench.scheduler_perf.inprocess import (
    BASE_NODE_STATUS,
    BASE_POD_SPEC,
    HOSTNAME,
    WAIT_TIMEOUT,
    Unsupported,
    WorkloadFailed,
    allocate_claims,
    csinode_body,
    go_seconds,
    load_template,
    node_strategy,
    scheduled_condition,
    volume_pair,
)
from bench.workloads import dra_slice

SIMPLE_OPS = frozenset({"createNodes", "createNamespaces", "createPods"})
# Ops the cluster mode runs one after another on the wall clock, with the scheduler running
# throughout, as upstream's executor.go does (the "ops" path: stream only).
OPS = SIMPLE_OPS | {
    "createAny", "updateAny", "deletePods", "churn", "barrier", "sleep",
    "startCollectingMetrics", "stopCollectingMetrics", "createResourceDriver", "allocResourceClaims",
}  # fmt: skip
SERVED_VERSIONS = (
    "start it with CRD_SCHEDULER_DEVCLUSTER_RUNTIME_CONFIG=resource.k8s.io/v1beta2=true,resource.k8s.io/v1beta1=true,"
    "resource.k8s.io/v1alpha3=true, the versions upstream's test API server serves to DRA workloads"
    " (util.go mustSetupCluster), and the kind's alpha gate in CRD_SCHEDULER_DEVCLUSTER_FEATURE_GATES"
    " (DRADeviceTaintRules for DeviceTaintRule)"
)
PRIORITY_CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"
UNSUPPORTED_OPS = {
    "createResourceClaims": "no v1.36.3 performance-config uses it (dra.go createResourceClaimsOp)",
}


def check(variant: Variant) -> bool:
    """Raise :class:`Unsupported` (named by op, with the reason) for what the cluster mode cannot
    run; True when the variant needs the ops path (anything beyond createNodes/createPods, or
    namespaces the ops name), False for the simple path (stream and backlog modes)."""
    opcodes = [str(op["opcode"]) for op in variant.ops]
    for opcode in opcodes:
        if opcode in UNSUPPORTED_OPS:
            raise Unsupported(opcode, UNSUPPORTED_OPS[opcode])
    unknown = sorted(set(opcodes) - OPS)
    if unknown:
        raise Unsupported(",".join(unknown), "no cluster-mode implementation")
    if not any(op.get("collectMetrics") or op["opcode"] == "startCollectingMetrics" for op in variant.ops):
        raise Unsupported("createPods", "no op collects metrics")
    # The simple path puts every pod of a side in one namespace of its own: a variant whose ops
    # name namespaces (pod (anti-)affinity terms list them, namespaceSelectors match their
    # labels) runs on the ops path, which makes them as upstream does.
    named = any(op["opcode"] == "createNamespaces" or op.get("namespace") for op in variant.ops)
    return named or bool(set(opcodes) - SIMPLE_OPS)


MERGE_PATCH = "application/merge-patch+json"


def has_volumes(op: Mapping[str, Any]) -> bool:
    """A createPods op whose pods each get a bound PV/PVC pair (CreatePodWithPersistentVolume)."""
    return bool(op.get("persistentVolumeClaimTemplatePath"))


def claim_volume(pvc_name: str) -> list[dict[str, Any]]:
    """runners.go's pod volume list: the one claim, named ``vol``."""
    return [{"name": "vol", "persistentVolumeClaim": {"claimName": pvc_name}}]


def measured_op(variant: Variant) -> dict[str, Any]:
    """The simple path's measured ``createPods`` op (:class:`Unsupported` on the ops path)."""
    if check(variant):
        raise Unsupported("ops", "runs on the ops path (OpsRun), not as one measured createPods op")
    for op in variant.ops:
        if op["opcode"] == "createPods" and op.get("collectMetrics"):
            return dict(op)
    raise Unsupported("createPods", "no createPods op collects metrics")


class WorkloadBench(Bench):
    def __init__(self, kubeconfig: str, variant: Variant, creators: int = 16) -> None:
        self.variant = variant
        self.ops_path = check(variant)
        # Cluster-scoped objects made besides Nodes, deleted with them: PersistentVolumes and CSINodes.
        self.volumes: list[str] = []
        self.csinodes: list[str] = []
        self.priority_classes: set[str] = set()
        self._priority_lock = threading.Lock()
        # a node template's own name -> the run's name for that node (node-with-name.yaml's
        # scheduler-perf-node, which SchedulingDaemonset's pods select by metadata.name)
        self.renamed: dict[str, str] = {}
        if self.ops_path:  # every op runs per side (run_ops): nothing is shared
            super().__init__(kubeconfig, 0, 0, creators)
            self.node_ops, self.init_pods = [], []
            return
        self.measured = measured_op(variant)
        self.node_ops = [op for op in variant.ops if op["opcode"] == "createNodes"]
        nodes = sum(int(op.get("count", 0)) for op in self.node_ops)
        super().__init__(kubeconfig, nodes, int(self.measured.get("count", 0)), creators)
        self.pod_body = self._pod
        # (op, index within the op) of every init pod, in upstream's order.
        self.init_pods = [
            (op, i)
            for op in variant.ops[: next(n for n, o in enumerate(variant.ops) if o.get("collectMetrics"))]
            if op["opcode"] == "createPods"
            for i in range(int(op.get("count", 0)))
        ]
        self.init_count = len(self.init_pods)
        self.init_body = self._init_pod

    def _node(self, op: Mapping[str, Any], index: int, i: int, count: int) -> dict[str, Any]:
        if op.get("nodeTemplatePath"):
            node = load_template(op["nodeTemplatePath"], i, count)
        else:
            node = {"metadata": {}, "status": copy.deepcopy(BASE_NODE_STATUS)}
        name = f"bench-{self.run_id}-n{index:05d}"
        if (node.get("metadata") or {}).get("name"):
            self.renamed[str(node["metadata"]["name"])] = name
        node["metadata"] = {**node.get("metadata", {}), "name": name}
        node["metadata"].pop("generateName", None)
        labels = node["metadata"].setdefault("labels", {})
        labels.update({HOSTNAME: name, **self.label})
        strategy = node_strategy(op)
        if strategy is not None:
            strategy(node, i)
        node.pop("apiVersion", None)
        node.pop("kind", None)
        return node

    def create_nodes(self) -> None:
        bodies: list[tuple[Mapping[str, Any], dict[str, Any]]] = []
        for op in self.node_ops:
            count = int(op.get("count", 0))
            bodies.extend((op, self._node(op, len(bodies), i, count)) for i in range(count))

        def create(item: tuple[Mapping[str, Any], dict[str, Any]]) -> None:
            op, body = item
            self._post("/api/v1/nodes", body)
            self.nodes.append(body["metadata"]["name"])
            self.create_csinode(op, body["metadata"]["name"])

        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(create, bodies))

    # -- volumes (runners.go CreatePodWithPersistentVolume, NodeAllocatableStrategy) ------------
    def create_csinode(self, op: Mapping[str, Any], node: str) -> None:
        """The node's CSINode, for a createNodes op with a nodeAllocatableStrategy."""
        if op.get("nodeAllocatableStrategy"):
            self.request("POST", "/apis/storage.k8s.io/v1/csinodes", csinode_body(node, op["nodeAllocatableStrategy"]))
            self.csinodes.append(node)

    def make_volume(self, namespace: str, op: Mapping[str, Any], i: int, pvc_name: str, pv_name: str) -> None:
        """A claim and its volume, bound to each other with phase Bound, in upstream's order (the
        claim first). The volume's ``claimRef`` also names the claim's uid: without it the dev
        cluster's PV controller (upstream's scheduler_perf runs none) would call the claim
        misbound and mark it Lost, which both schedulers refuse. Made before the pods, outside
        the measured time, on both sides."""
        pvc, pv = volume_pair(op, namespace, i, pvc_name, pv_name)
        claims = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
        created = self.request("POST", claims, pvc)
        pv["spec"]["claimRef"]["uid"] = created["metadata"]["uid"]
        self.request("POST", "/api/v1/persistentvolumes", pv)
        self.volumes.append(pv_name)
        self.request("PATCH", f"/api/v1/persistentvolumes/{pv_name}/status", {"status": pv["status"]}, MERGE_PATCH)
        self.request("PATCH", f"{claims}/{pvc_name}/status", {"status": pvc["status"]}, MERGE_PATCH)

    def make_volumes(self, namespace: str, items: list[tuple[Mapping[str, Any], int, str, str]]) -> None:
        """:meth:`make_volume` for each (op, index, claim name, volume name), in parallel."""
        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(lambda item: self.make_volume(namespace, *item), items))

    def delete_volumes(self) -> None:
        """Delete the PersistentVolumes and CSINodes made, the PVs' pv-protection finalizer
        dropped (the claims are gone with their namespaces, or going)."""

        def delete(path: str) -> None:
            with contextlib.suppress(client.ApiException):
                self.request("DELETE", path)
            with contextlib.suppress(client.ApiException):
                self.request("PATCH", path, {"metadata": {"finalizers": None}}, MERGE_PATCH)

        paths = [f"/api/v1/persistentvolumes/{name}" for name in self.volumes]
        paths += [f"/apis/storage.k8s.io/v1/csinodes/{name}" for name in self.csinodes]
        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(delete, paths))
        self.volumes.clear()
        self.csinodes.clear()

    def _pod_volumes(self, namespace: str, items: list[tuple[Mapping[str, Any], int, str]]) -> None:
        """The volumes of the simple path's pods (op, index in the op, pod name) in ``namespace``:
        claim ``pvc-<pod>``, volume ``<namespace>-vol-<pod>``."""
        wanted = [(op, i, f"pvc-{pod}", f"{namespace}-vol-{pod}") for op, i, pod in items if has_volumes(op)]
        if wanted:
            self.make_volumes(namespace, wanted)

    def measure(self, namespace: str, scheduler_name: str, start: Callable[[], None] | None = None) -> dict[str, Any]:
        self._pod_volumes(namespace, [(self.measured, i, f"p{i:05d}") for i in range(self.pod_count)])
        return super().measure(namespace, scheduler_name, start)

    def place_init_pods(self, namespace: str, scheduler_name: str, timeout: float = TIMEOUT) -> None:
        self._pod_volumes(namespace, [(op, i, f"i{n:05d}") for n, (op, i) in enumerate(self.init_pods)])
        super().place_init_pods(namespace, scheduler_name, timeout)

    def cleanup(self) -> None:
        super().cleanup()
        self.delete_volumes()
        for name in self.priority_classes:
            with contextlib.suppress(client.ApiException):
                self.request("DELETE", f"{PRIORITY_CLASSES}/{name}")

    def priority_by_class(self, spec: dict[str, Any]) -> None:
        """A template's ``spec.priority`` (pod-high-priority.yaml: 10) given by a PriorityClass
        of that value instead. Upstream's test API server runs without the Priority admission
        plugin (util.go mustSetupCluster), the dev cluster with it, and it refuses a pod that
        sets the value itself (403). Both schedulers see the same priority."""
        value = spec.pop("priority", None)
        if value is None or spec.get("priorityClassName"):
            return
        name = f"bench-{self.run_id}-priority-{int(value)}"
        with self._priority_lock:
            if name not in self.priority_classes:
                body = {"metadata": {"name": name, "labels": dict(self.label)}, "value": int(value)}
                self.request("POST", PRIORITY_CLASSES, body)
                self.priority_classes.add(name)
        spec["priorityClassName"] = name

    def _pod(self, i: int, scheduler_name: str) -> dict[str, Any]:
        return self._from_template(self.measured, i, self.pod_count, f"p{i:05d}", scheduler_name)

    def _init_pod(self, n: int, scheduler_name: str) -> dict[str, Any]:
        op, i = self.init_pods[n]
        return self._from_template(op, i, int(op.get("count", 0)), f"i{n:05d}", scheduler_name)

    def _from_template(
        self, op: Mapping[str, Any], i: int, count: int, name: str, scheduler_name: str
    ) -> dict[str, Any]:
        path = op.get("podTemplatePath") or self.variant.default_pod_template
        pod = load_template(path, i, count) if path else {"spec": copy.deepcopy(BASE_POD_SPEC)}
        pod.pop("apiVersion", None)
        pod.pop("kind", None)
        meta = pod.setdefault("metadata", {})
        meta.pop("generateName", None)
        meta["name"] = name
        spec = pod.setdefault("spec", {})
        spec["schedulerName"] = scheduler_name
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **self.label}
        self._renamed_nodes(spec)
        self.priority_by_class(spec)
        if has_volumes(op):
            spec["volumes"] = claim_volume(f"pvc-{name}")
        return pod

    def _renamed_nodes(self, spec: dict[str, Any]) -> None:
        """A node the pod's affinity names (``matchFields`` on ``metadata.name``), by the name
        this run gave it: every node is named for the run, so the pods of a template-named node
        (SchedulingDaemonset's) still select it."""
        if not self.renamed:
            return
        affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        required = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
        preferences = affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        preferred = [p.get("preference") or {} for p in preferences]
        for term in [*(required or ()), *preferred]:
            for field in term.get("matchFields") or ():
                if field.get("key") == "metadata.name":
                    field["values"] = [self.renamed.get(v, v) for v in field.get("values") or ()]


@dataclass(slots=True)
class Window:
    """A measured window (``startCollectingMetrics`` .. ``stop``, or a ``collectMetrics`` op)."""

    name: str
    namespaces: frozenset[str]
    labels: Mapping[str, str]
    started: float
    cpu_before: CpuReading
    control_plane_before: dict[str, CpuReading] | None
    namespace_gets_before: float
    connections_before: frozenset[int]  # the scheduler's connections to the API server
    # When a collectMetrics createPods op had made its last pod: the window's
    # ``creation_seconds``, as ``bench/cluster.py``'s (what a stream run cannot beat).
    created: float | None = None
    made: int = 0  # the pods that op made


UNBOUND_SHOWN = 3  # pods a failed wait names, with why they are unbound


def unbound_summary(unbound: int, pods: list[Mapping[str, Any]]) -> str:
    """What a wait for bindings that timed out says of the pods still unbound: how many, and the
    first few (``pods``, as read) with their PodScheduled condition, as ``kubectl describe``
    shows it (``Unschedulable: 0/2 nodes are available: ...``), or that none was attempted."""
    shown = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        scheduled = scheduled_condition(pod)
        if scheduled is None:
            why = "no scheduling attempt recorded"
        else:
            why = ": ".join(str(part) for part in (scheduled.get("reason"), scheduled.get("message")) if part)
        shown.append(f"{meta.get('namespace')}/{meta.get('name')} ({why or 'PodScheduled without a reason'})")
    text = f"{unbound} pods unbound"
    return f"{text}, e.g. {'; '.join(shown)}" if shown else text


def _matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class OpsRun:
    """One side's run of every op of the variant in upstream's order, on the wall clock, with
    its scheduler running throughout (executor.go ``runWorkload``): ``createNodes``,
    ``createNamespaces``, ``createPods``, ``createAny``, ``updateAny`` (``updatePerSecond``),
    ``deletePods`` (``deletePodsPerSecond``, ``skipWaitToCompletion``: a background thread),
    ``churn`` (create/recreate: a background thread until the last op is done), ``barrier``,
    ``sleep`` and the measured windows. A watch over every pod of the run's namespaces stands for
    upstream's pod informer (barriers, the pods deletePods lists, binding times)."""

    def __init__(self, bench: WorkloadBench, side: str, scheduler_name: str, pid: int) -> None:
        self.bench, self.side, self.scheduler_name, self.pid = bench, side, scheduler_name, pid
        self.variant = bench.variant
        self.scheduled_per_namespace: dict[str, int] = {}  # executor.go numPodsScheduledPerNamespace
        self.namespaces: list[str] = []
        self.cluster_objects: list[str] = []  # API paths of cluster-scoped objects made (not Nodes)
        self.names = itertools.count()
        self.node_names: list[str] = []  # the Nodes createNodes made
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []
        # The pod informer: (namespace, name) -> [labels, bound time or None, attempted].
        self.pods: dict[tuple[str, str], list[Any]] = {}
        self.bindings: list[tuple[str, Mapping[str, str], float]] = []  # (namespace, labels, time)
        self.window: Window | None = None
        self.collections: list[dict[str, Any]] = []
        self.mapper = dynamic.DynamicClient(bench.api).resources  # type: ignore[no-untyped-call]

    # -- the pod informer ------------------------------------------------------------------------
    def _watch(self) -> None:
        core = self.bench.core
        while not self.stop.is_set():
            listed = json.loads(core.list_pod_for_all_namespaces(_preload_content=False).data)
            for pod in listed["items"]:
                self._seen(pod)
            rv = listed["metadata"]["resourceVersion"]
            while not self.stop.is_set():
                response = core.list_pod_for_all_namespaces(
                    watch=True, resource_version=rv, timeout_seconds=5, allow_watch_bookmarks=True,
                    _preload_content=False,
                )  # fmt: skip
                buffer, gone = b"", False
                for chunk in response.stream(65536):
                    buffer += chunk
                    *lines, buffer = buffer.split(b"\n")
                    for line in filter(None, lines):
                        event = json.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            gone = True
                            continue
                        rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                        if event["type"] == "DELETED":
                            meta = obj["metadata"]
                            self.pods.pop((meta["namespace"], meta["name"]), None)
                        elif event["type"] in ("ADDED", "MODIFIED"):
                            self._seen(obj)
                response.release_conn()
                if gone:
                    break

    def _seen(self, pod: Mapping[str, Any]) -> None:
        meta = pod["metadata"]
        if meta["namespace"] not in self.scheduled_per_namespace and meta["namespace"] not in self.namespaces:
            return
        key = (meta["namespace"], meta["name"])
        labels = meta.get("labels") or {}
        entry = self.pods.get(key)
        if entry is None or entry[3] != meta.get("uid"):
            entry = self.pods[key] = [labels, None, False, meta.get("uid")]
        entry[0] = labels
        if (pod.get("spec") or {}).get("nodeName"):
            entry[2] = True
            if entry[1] is None:
                bound_at = entry[1] = time.time()
                self.bindings.append((str(meta["namespace"]), labels, bound_at))
        elif scheduled_condition(pod) is not None:
            entry[2] = True  # util.go isAttempted

    def _count(self, namespace: str, labels: Mapping[str, str], attempted: bool = False) -> int:
        index = 2 if attempted else 1
        return sum(
            1
            for (ns, _), entry in list(self.pods.items())
            if ns == namespace and entry[index] and _matches(entry[0], labels)
        )

    def _wait(
        self, what: str, done: Callable[[], bool], timeout: float = WAIT_TIMEOUT, namespace: str | None = None
    ) -> None:
        """executor.go's waits: a poll, failing after 10 minutes (naming the pods of ``namespace``
        still unbound, and why)."""
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                unbound = f"; {self._unbound(namespace)}" if namespace is not None else ""
                raise WorkloadFailed(f"{self.side}: {what} not met in {timeout:.0f} s{unbound}")
            if self.errors:
                raise WorkloadFailed(f"{self.side}: {self.errors[0]}")
            time.sleep(0.05)

    def _unbound(self, namespace: str) -> str:
        keys = [key for key, entry in list(self.pods.items()) if key[0] == namespace and entry[1] is None]
        pods = []
        for ns, name in sorted(keys)[:UNBOUND_SHOWN]:
            # gone meanwhile, or the server does not answer: the count says enough
            with contextlib.suppress(client.ApiException, urllib3.exceptions.HTTPError):
                read = self.bench.core.read_namespaced_pod(name, ns, _preload_content=False, _request_timeout=10)
                pods.append(json.loads(read.data))
        return unbound_summary(len(keys), pods)

    # -- objects ---------------------------------------------------------------------------------
    def _path(self, obj: Mapping[str, Any], namespace: str) -> tuple[str, bool]:
        """The collection path of an object's kind (discovery: upstream's REST mapper), and
        whether it is namespaced."""
        api_version, kind = str(obj.get("apiVersion", "v1")), str(obj["kind"])
        try:
            resource = self.mapper.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            raise Unsupported(kind, f"{api_version} is not served by the dev cluster: {SERVED_VERSIONS}") from None
        group_version = str(resource.group_version)
        prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
        if resource.namespaced:
            return f"{prefix}/namespaces/{namespace or 'default'}/{resource.name}", True
        return f"{prefix}/{resource.name}", False

    def _pod(self, pod: dict[str, Any]) -> dict[str, Any]:
        """The side's schedulerName and the run's nodeSelector, as on the simple path. And what
        keeps an ``updateAny`` of a template valid: the dev cluster's ServiceAccount admission
        (upstream's test API server runs without it) would set ``serviceAccountName`` and mount
        a token volume at creation, which an update from the template would then drop (pod spec
        fields are immutable): both are given here, the token not mounted."""
        spec = pod.setdefault("spec", {})
        spec["schedulerName"] = self.scheduler_name
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("automountServiceAccountToken", False)
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **self.bench.label}
        self.bench.priority_by_class(spec)
        return pod

    def _node(self, node: dict[str, Any]) -> dict[str, Any]:
        """The run's label (the pods' nodeSelector) and the hostname label; a node without a
        name is named for the run and side, after its ``generateName``."""
        meta = node.setdefault("metadata", {})
        if not meta.get("name"):  # generateName kept as the prefix: createResourceDriver globs it
            prefix = meta.pop("generateName", None) or "bench-"
            meta["name"] = f"{prefix}{self.bench.run_id}-{self.side[0]}-n{next(self.names):05d}"
        meta["labels"] = {**(meta.get("labels") or {}), HOSTNAME: meta["name"], **self.bench.label}
        return node

    def _shaped(self, obj: dict[str, Any]) -> dict[str, Any]:
        kind = obj.get("kind")
        return self._pod(obj) if kind == "Pod" else self._node(obj) if kind == "Node" else obj

    def create(self, obj: dict[str, Any], namespace: str) -> str:
        path, namespaced = self._path(obj, namespace)
        created = self.bench.request("POST", path, self._shaped(obj))
        name = str(created["metadata"]["name"])
        if not namespaced and obj.get("kind") != "Node":
            self.cluster_objects.append(f"{path}/{name}")
        return name

    def ensure_namespace(self, name: str, body: dict[str, Any] | None = None) -> None:
        """executor.go createNamespaceIfNotPresent (and the default ServiceAccount pods need)."""
        if name in self.scheduled_per_namespace:
            return
        self.namespaces.append(name)
        body = copy.deepcopy(body) if body else {"metadata": {}}
        body.setdefault("metadata", {})["name"] = name
        try:
            self.bench.core.create_namespace(body)
        except client.ApiException as error:
            if error.status != 409:
                raise
        self.scheduled_per_namespace[name] = 0
        self._wait(f"namespace {name}'s default ServiceAccount", lambda: self._has_service_account(name), 60)

    def _has_service_account(self, namespace: str) -> bool:
        try:
            self.bench.core.read_namespaced_service_account("default", namespace)
            return True
        except client.ApiException:
            return False

    def _background(self, what: str, target: Callable[[], None]) -> None:
        def guarded() -> None:
            try:
                target()
            except Exception as error:  # reported: the run fails at its next wait
                self.errors.append(f"{what}: {type(error).__name__}: {error}")

        thread = threading.Thread(target=guarded, daemon=True, name=what)
        thread.start()
        self.threads.append(thread)

    # -- the run -----------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self._background("pod watch", self._watch)
        try:
            for index, op in enumerate(self.variant.ops):
                getattr(self, "op_" + str(op["opcode"]))(index, op)
                if self.errors:
                    raise WorkloadFailed(f"{self.side}: op {index} {op['opcode']}: {self.errors[0]}")
        finally:
            self.stop.set()  # upstream cancels the workload's context: churn and deletions stop
            for thread in self.threads:
                thread.join(30)
        bound = sum(c["bound"] for c in self.collections)
        seconds = sum(c["seconds"] for c in self.collections)
        cpu = sum(c["cpu_seconds"] for c in self.collections)
        result: dict[str, Any] = {"bound": bound, "collections": self.collections}
        if len(self.collections) == 1:
            result["pods_per_second"] = self.collections[0]["pods_per_second"]
            result["seconds"] = self.collections[0]["seconds"]
            if "creation_seconds" in self.collections[0]:
                result["creation_seconds"] = self.collections[0]["creation_seconds"]
        elif bound and seconds > 0:
            result["pods_per_second"] = round(bound / seconds, 1)
            result["seconds"] = round(seconds, 3)
        result["cpu_seconds_per_bound_pod"] = round(cpu / max(bound, 1), 5)
        spent = [c["control_plane_cpu_seconds"] for c in self.collections if "control_plane_cpu_seconds" in c]
        if spent and len(spent) == len(self.collections):
            result["control_plane_cpu_seconds"] = round(sum(spent), 2)
            for key in ("apiserver_cpu_seconds", "etcd_cpu_seconds"):
                result[key] = round(sum(c[key] for c in self.collections), 3)
        result["namespace_live_lookups"] = sum(c["namespace_live_lookups"] for c in self.collections)
        if self.collections:
            result["api_connections_opened"] = sum(c["api_connections_opened"] for c in self.collections)
            result["api_connections"] = self.collections[-1]["api_connections"]
        with contextlib.suppress(OSError):
            result["peak_rss_mib"] = process_memory_mib(self.pid, "VmHWM")
        return result

    def _start_window(self, name: str, namespaces: frozenset[str], labels: Mapping[str, str]) -> None:
        if self.window is not None:
            raise WorkloadFailed("metrics collection is overlapping")
        self.bench.warm_connections()  # as the other side found them (Bench.warm_connections)
        namespace_gets = self._namespace_gets()  # before the readings: the scrape costs CPU
        connections = tcp_connections(self.pid, self.bench.api_port)
        self.window = Window(
            name, namespaces, dict(labels), time.time(), process_cpu(self.pid),
            control_plane_cpu(self.bench.control_plane), namespace_gets, connections,
        )  # fmt: skip

    def _namespace_gets(self) -> float:
        """The API server's GETs of namespaces so far: NamespaceLifecycle's live lookups (see
        ``LIVE_LOOKUP_SECONDS``) are the only ones in a window."""
        return apiserver_requests(self.bench.api, "GET", "namespaces")

    def _stop_window(self) -> None:
        window = self.window
        if window is None:
            raise WorkloadFailed("missing startCollectingMetrics operation before stopping")
        stopped, cpu = time.time(), process_cpu(self.pid)
        control_plane = control_plane_cpu(self.bench.control_plane)
        connections = tcp_connections(self.pid, self.bench.api_port)
        self.window = None
        times = [
            t
            for ns, labels, t in list(self.bindings)
            if window.started <= t <= stopped
            and (not window.namespaces or ns in window.namespaces)
            and _matches(labels, window.labels)
        ]
        seconds = (max(times) if times else stopped) - window.started
        figures: dict[str, Any] = {
            "name": window.name, "bound": len(times), "seconds": round(seconds, 3),
            "started": round(window.started, 3), "stopped": round(stopped, 3),  # epoch seconds
            "pods_per_second": round(len(times) / seconds, 1) if times and seconds > 0 else 0.0,
            "cpu_seconds": round(cpu_seconds_between(window.cpu_before, cpu), 4),
            # Opened in the window and still open at its end; kube-scheduler multiplexes its
            # requests over HTTP/2, the operator sends one at a time on each HTTP/1.1 connection.
            "api_connections_opened": len(connections - window.connections_before),
            "api_connections": len(connections),
        }  # fmt: skip
        if control_plane is not None and window.control_plane_before is not None:
            spent = control_plane_spent(window.control_plane_before, control_plane)
            figures["control_plane_cpu_seconds"] = round(sum(spent.values()), 3)
            figures["apiserver_cpu_seconds"] = round(spent["kube-apiserver"], 3)
            figures["etcd_cpu_seconds"] = round(spent["etcd"], 3)
        if window.created is not None:
            created = window.created - window.started
            figures["creation_seconds"] = round(creation_seconds(created, seconds, window.made, len(times)), 3)
        figures["namespace_live_lookups"] = round(self._namespace_gets() - window.namespace_gets_before)
        self.collections.append(figures)

    # -- ops (executor.go runOp) ---------------------------------------------------------------------
    def op_createNodes(self, index: int, op: Mapping[str, Any]) -> None:
        count = int(op.get("count", 0))
        strategy = node_strategy(op)

        def body(i: int) -> dict[str, Any]:
            if op.get("nodeTemplatePath"):
                node = load_template(op["nodeTemplatePath"], i, count)
            else:
                node = {"apiVersion": "v1", "kind": "Node", "status": copy.deepcopy(BASE_NODE_STATUS)}
            node.setdefault("kind", "Node")
            node["metadata"] = dict(node.get("metadata") or {})
            self._node(node)
            if strategy is not None:
                strategy(node, i)
            return node

        def create(node: dict[str, Any]) -> None:
            self.bench.request("POST", "/api/v1/nodes", node)
            self.node_names.append(node["metadata"]["name"])
            self.bench.create_csinode(op, node["metadata"]["name"])

        bodies = [body(i) for i in range(count)]
        with ThreadPoolExecutor(self.bench.creators) as pool:
            list(pool.map(create, bodies))

    def op_createNamespaces(self, index: int, op: Mapping[str, Any]) -> None:
        base = load_template(op["namespaceTemplatePath"]) if op.get("namespaceTemplatePath") else None
        for i in range(int(op.get("count", 0))):
            self.ensure_namespace(f"{op['prefix']}-{i}", base)

    def op_createPods(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op.get("namespace") or f"namespace-{index}")
        self.ensure_namespace(namespace)
        path = op.get("podTemplatePath") or self.variant.default_pod_template
        count = int(op.get("count", 0))
        volumes = has_volumes(op)
        if volumes:  # claim pvc-<i>, as upstream; the volume's name also says the side
            pv = f"{namespace}-{self.side[0]}-vol-{{}}"
            self.bench.make_volumes(namespace, [(op, i, f"pvc-{i}", pv.format(i)) for i in range(count)])
        if op.get("collectMetrics"):
            self._start_window(namespace, frozenset({namespace}), {})

        def body(i: int) -> dict[str, Any]:
            pod = load_template(path, i, count) if path else {"spec": copy.deepcopy(BASE_POD_SPEC)}
            meta = pod.setdefault("metadata", {})
            if not meta.get("name") and not meta.get("generateName"):
                meta["generateName"] = "pod-"
            if volumes:
                pod.setdefault("spec", {})["volumes"] = claim_volume(f"pvc-{i}")
            return self._pod(pod)

        url = f"/api/v1/namespaces/{namespace}/pods"

        def create_batch() -> None:
            with ThreadPoolExecutor(self.bench.creators) as pool:
                list(pool.map(lambda i: self.bench.request("POST", url, body(i)), range(count)))

        if op.get("steadyState"):
            self._steady_state(index, namespace, count, go_seconds(op.get("duration", "0s")), create_batch)
        elif op.get("skipWaitToCompletion"):
            create_batch()
            self._created(op)
            self.scheduled_per_namespace[namespace] = self.scheduled_per_namespace.get(namespace, 0) + count
        else:
            create_batch()
            self._created(op)
            self._wait(f"op {index} createPods: {count} pods scheduled in {namespace}",
                       lambda: self._count(namespace, {}) >= count, namespace=namespace)  # fmt: skip
        if op.get("collectMetrics"):
            self._stop_window()

    def _created(self, op: Mapping[str, Any]) -> None:
        if op.get("collectMetrics") and self.window is not None:
            self.window.created = time.time()
            self.window.made = int(op.get("count", 0))

    def _steady_state(
        self, index: int, namespace: str, count: int, duration: float, create_batch: Callable[[], None]
    ) -> None:
        """executor.go createPodsSteadily: ``count`` pods; each time ``count`` more got bound,
        the namespace's pods are deleted (grace 0, background) and ``count`` new ones made, for
        ``duration``. Bindings are counted as the watch sees them happen, as upstream's handler
        counts each pod's move to a node, not the pods bound now (a deleted batch may not be
        gone from the watch yet). The window includes the making of the first batch, as
        upstream's (its timeout context covers the strategy's creates): bindings seen while it
        is made count, even when making it takes the whole duration (2,000 pods on this
        cluster take about 10 s)."""
        deadline, until = time.monotonic() + duration, time.time() + duration
        cursor, bound, batch = len(self.bindings), 0, 0
        create_batch()
        while time.monotonic() < deadline:
            if self.errors:
                raise WorkloadFailed(f"{self.side}: {self.errors[0]}")
            seen = self.bindings[cursor:]
            cursor += len(seen)
            batch += sum(1 for ns, _, _ in seen if ns == namespace)
            if batch < count:
                time.sleep(0.01)
                continue
            bound, batch = bound + batch, 0
            self.bench.request(
                "DELETE", f"/api/v1/namespaces/{namespace}/pods?gracePeriodSeconds=0&propagationPolicy=Background"
            )
            create_batch()
        batch += sum(1 for ns, _, at in self.bindings[cursor:] if ns == namespace and at <= until)
        if bound + batch == 0:
            raise WorkloadFailed(f"op {index} createPods: steadyState in {namespace}: no pod at all got scheduled")

    def op_createAny(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op.get("namespace") or "")
        if namespace:
            self.ensure_namespace(namespace)
        count = int(op["count"]) if op.get("count") is not None else 1
        for i in range(count):
            self.create(load_template(op["templatePath"], i, count), namespace)

    def op_createResourceDriver(self, index: int, op: Mapping[str, Any]) -> None:
        """dra.go createResourceDriverOp: one ResourceSlice per node whose name matches the glob
        (dra.go resourceSlice: a pool of its own, ``maxClaimsPerNode`` devices), deleted with the
        side's other cluster-scoped objects."""
        driver, capacity = str(op["driverName"]), int(op.get("maxClaimsPerNode", 0))
        nodes = [name for name in self.node_names if fnmatch.fnmatchcase(name, str(op["nodes"]))]
        with ThreadPoolExecutor(self.bench.creators) as pool:
            list(pool.map(lambda name: self.create(dra_slice(name, capacity, driver=driver), ""), nodes))

    def op_allocResourceClaims(self, index: int, op: Mapping[str, Any]) -> None:
        """dra.go allocResourceClaimsOp on the side's objects (:func:`allocate_claims`, the same
        node order for both sides), each allocation PUT to its claim's status before the pods
        come: neither scheduler does this work."""
        namespace = str(op.get("namespace") or "")
        api = "/apis/resource.k8s.io/v1"
        claims = self.bench.request("GET", f"{api}/namespaces/{namespace}/resourceclaims")["items"]
        classes = self.bench.request("GET", f"{api}/deviceclasses")["items"]
        slices = self.bench.request("GET", f"{api}/resourceslices")["items"]
        mine = set(self.node_names)
        nodes = [n for n in self.bench.request("GET", "/api/v1/nodes")["items"] if n["metadata"]["name"] in mine]
        rng = random.Random(index)
        for claim, allocation in allocate_claims(index, namespace, claims, classes, slices, nodes, rng):
            name = claim["metadata"]["name"]
            body = {**claim, "status": {**(claim.get("status") or {}), "allocation": allocation}}
            self.bench.request("PUT", f"{api}/namespaces/{namespace}/resourceclaims/{name}/status", body)

    def op_updateAny(self, index: int, op: Mapping[str, Any]) -> None:
        """update.go updateAny.run: Update (with the subresources) then UpdateStatus, one per
        tick of ``updatePerSecond`` when set; the op returns when all are done."""
        namespace = str(op.get("namespace") or "")
        if namespace:
            self.ensure_namespace(namespace)
        count = int(op["count"]) if op.get("count") is not None else 1
        rate = int(op.get("updatePerSecond") or 0)
        for i in range(count):
            if rate > 0:
                time.sleep(1.0 / rate)
            obj = self._shaped(load_template(op["templatePath"], i, count))
            path, _ = self._path(obj, namespace)
            url = f"{path}/{obj['metadata']['name']}?fieldValidation=Strict"
            subresources = list(op.get("subresources") or ())
            if subresources:
                url = f"{path}/{obj['metadata']['name']}/{'/'.join(subresources)}?fieldValidation=Strict"
            self.bench.request("PUT", url, obj)
            self.bench.request("PUT", f"{path}/{obj['metadata']['name']}/status?fieldValidation=Strict", obj)

    def op_deletePods(self, index: int, op: Mapping[str, Any]) -> None:
        namespace, labels = str(op["namespace"]), op.get("labelSelector") or {}
        victims = [
            name for (ns, name), entry in list(self.pods.items()) if ns == namespace and _matches(entry[0], labels)
        ]
        rate = int(op.get("deletePodsPerSecond") or 0)
        url = f"/api/v1/namespaces/{namespace}/pods"

        def delete() -> None:
            if rate > 0:
                for name in victims:
                    if self.stop.wait(1.0 / rate):
                        return
                    with contextlib.suppress(client.ApiException):  # upstream logs and goes on
                        self.bench.request("DELETE", f"{url}/{name}")
                return
            selector = ",".join(f"{k}={v}" for k, v in labels.items())
            self.bench.request("DELETE", f"{url}?labelSelector={selector}" if selector else url)

        if op.get("skipWaitToCompletion"):
            self._background(f"op {index} deletePods", delete)
        else:
            delete()

    def op_churn(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op.get("namespace") or f"namespace-{index}")
        self.ensure_namespace(namespace)
        templates = [load_template(path) for path in op["templatePaths"]]
        interval = int(op.get("intervalMilliseconds") or 500) / 1000
        number = int(op.get("number") or 0)
        recreate = op["mode"] == "recreate"

        def churn() -> None:
            live: list[list[str]] = [[""] * max(number, 1) for _ in templates]
            count = 0
            while not self.stop.wait(interval):
                if not recreate and number and count >= number:
                    return
                for i, template in enumerate(templates):
                    if not recreate:
                        with contextlib.suppress(client.ApiException):
                            self.create(copy.deepcopy(template), namespace)
                        continue
                    slot = count % number
                    if live[i][slot]:
                        path, _ = self._path(template, namespace)
                        with contextlib.suppress(client.ApiException):
                            self.bench.request("DELETE", f"{path}/{live[i][slot]}")
                        live[i][slot] = ""
                    else:
                        with contextlib.suppress(client.ApiException):
                            live[i][slot] = self.create(copy.deepcopy(template), namespace)
                count += 1

        self._background(f"op {index} churn", churn)

    def op_barrier(self, index: int, op: Mapping[str, Any]) -> None:
        namespaces = list(op.get("namespaces") or self.scheduled_per_namespace)
        for namespace in namespaces:
            if namespace not in self.scheduled_per_namespace:
                raise WorkloadFailed(f"op {index} barrier: unknown namespace {namespace}")
        labels = op.get("labelSelector") or {}
        attempted = op.get("stageRequirement") == "Attempted"
        stage = "attempted" if attempted else "scheduled"
        for namespace in namespaces:
            want = self.scheduled_per_namespace[namespace]

            def reached(ns: str = namespace, n: int = want) -> bool:
                return self._count(ns, labels, attempted) >= n

            self._wait(f"op {index} barrier: {want} pods {stage} in {namespace}", reached, namespace=namespace)
        if not attempted:
            if op.get("namespaces"):
                for namespace in namespaces:
                    self.scheduled_per_namespace.pop(namespace, None)
            else:
                self.scheduled_per_namespace.clear()

    def op_sleep(self, index: int, op: Mapping[str, Any]) -> None:
        time.sleep(go_seconds(op.get("duration", "0s")))

    def op_startCollectingMetrics(self, index: int, op: Mapping[str, Any]) -> None:
        self._start_window(
            str(op.get("name", "")), frozenset(op.get("namespaces") or ()), op.get("labelSelector") or {}
        )

    def op_stopCollectingMetrics(self, index: int, op: Mapping[str, Any]) -> None:
        self._stop_window()

    # -- after the side's turn ---------------------------------------------------------------------
    def _drop_claim_finalizers(self, namespace: str) -> None:
        """ResourceClaims an allocation left a finalizer on (``resource.kubernetes.io/delete-protection``):
        no driver runs here to lift it, and the namespace would stay Terminating."""
        path = f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims"
        with contextlib.suppress(client.ApiException):
            for claim in (self.bench.request("GET", path) or {}).get("items") or ():
                if claim["metadata"].get("finalizers"):
                    self.bench.request(
                        "PATCH", f"{path}/{claim['metadata']['name']}", {"metadata": {"finalizers": None}}, MERGE_PATCH
                    )

    def cleanup(self) -> None:
        """Delete everything the side made, so the other starts from the same empty cluster: its
        pods (finalizers dropped: nothing else would), namespaces, nodes and cluster-scoped
        objects, and wait until the namespaces are gone (their names are upstream's, reused)."""
        bench = self.bench
        for namespace in self.namespaces:
            with contextlib.suppress(client.ApiException):
                listed = json.loads(bench.core.list_namespaced_pod(namespace, _preload_content=False).data)
                for pod in listed["items"]:
                    if pod["metadata"].get("finalizers"):
                        bench.request(
                            "PATCH", f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}",
                            {"metadata": {"finalizers": None}}, "application/merge-patch+json",
                        )  # fmt: skip
            bench.clear(namespace)
            self._drop_claim_finalizers(namespace)
            with contextlib.suppress(client.ApiException):
                bench.core.delete_namespace(namespace)
        selector = ",".join(f"{k}={v}" for k, v in bench.label.items())
        with contextlib.suppress(client.ApiException):
            bench.core.delete_collection_node(label_selector=selector)
        for path in self.cluster_objects:
            with contextlib.suppress(client.ApiException):
                bench.request("DELETE", path)
        bench._wait_gone(self.namespaces)
        if self.namespaces:  # gone: the namespace controller's last DELETE came just before
            _deletions_marker(bench).write_text(str(time.time()))
        bench.delete_volumes()
        deadline = time.monotonic() + 60
        while bench.core.list_node(label_selector=selector, limit=1).items and time.monotonic() < deadline:
            time.sleep(0.2)


# For this long after a namespace is deleted, the API server's NamespaceLifecycle admission looks
# a namespace of that name up live (a GET through the API server, a quorum read of etcd) for
# every object created in it: v1.36.3 ``forceLiveLookupTTL``,
# staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go.
LIVE_LOOKUP_SECONDS = 30.0


def _deletions_marker(bench: Bench) -> Path:
    """A file beside the dev cluster's kubeconfig: when a bench (any process) last deleted a
    side's namespaces there. Both sides use upstream's namespace names, so without waiting the
    live lookups out, the side that comes second pays three more requests per pod in its window
    (for the pod's creation, its binding and its event), and the first side none."""
    return Path(bench.kubeconfig).with_name("bench-namespaces-deleted")


def wait_out_live_lookups(bench: Bench) -> None:
    with contextlib.suppress(OSError, ValueError):  # none deleted yet
        deleted = float(_deletions_marker(bench).read_text())
        time.sleep(max(0.0, min(deleted + LIVE_LOOKUP_SECONDS + 1.0 - time.time(), LIVE_LOOKUP_SECONDS + 1.0)))


def _ops_side(bench: WorkloadBench, side: str, log_dir: Path) -> dict[str, Any]:
    """One side on the ops path: its scheduler started (the operator leading, or kube-scheduler
    with the bench's configuration), every op run, the scheduler stopped, the side's objects
    deleted."""
    wait_out_live_lookups(bench)
    operator: subprocess.Popen[bytes] | None = None
    log = None
    log_path = log_dir / "crd-scheduler-ops.log"
    config_path = log_dir / "kube-scheduler.yaml"
    if side == "crd_scheduler":
        home, scheduler_name = bench.crd_profile("ops")
        log = log_path.open("w")
        env = {**os.environ, "KUBECONFIG": bench.kubeconfig, "PYTHONUNBUFFERED": "1"}
        argv = bench.operator_argv(home)
        operator = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    else:
        scheduler_name = "default-scheduler"
        config_path.write_text(yaml.safe_dump(KUBE_SCHEDULER_CONFIGURATION))
    run: OpsRun | None = None
    try:
        if operator is not None:
            bench._wait_log(log_path, "leading: scheduling", operator)
            pid = operator.pid
        else:
            dev_cluster("kube-scheduler", "up", "--config", str(config_path))
            time.sleep(3)  # its informers sync, as on the simple path
            pid = dev_cluster_pids()["kube-scheduler"]
        run = OpsRun(bench, side, scheduler_name, pid)
        result = run.run()
        with contextlib.suppress(OSError):
            result["scheduler_cpu_seconds"] = round(process_cpu_seconds(pid), 2)
        return result
    finally:
        if operator is not None:
            stop_operator(operator)
        else:
            dev_cluster("kube-scheduler", "down")
        if log is not None:
            log.close()
        if run is not None:
            run.cleanup()


SIDES = ("crd_scheduler", "kube_scheduler")


def run(
    variant: Variant, *, modes: dict[str, bool], log_dir: Path, creators: int = 16, first: str = SIDES[0]
) -> dict[str, Any]:
    """Both schedulers on the variant, per mode (``{"stream": False, "backlog": True}``),
    ``first`` (a name of ``SIDES``) first: the result's ``order`` says which ran when. What
    one side leaves warm for the other (the API server's caches, the bench's connections, which
    ``Bench.warm_connections`` levels) favours the second; ``python -m bench.suite`` alternates."""
    if first not in SIDES:
        raise ValueError(f"first: {first!r} is not one of {', '.join(SIDES)}")
    order = (first, *(side for side in SIDES if side != first))
    if check(variant) and "stream" not in modes:
        raise Unsupported("backlog", "the ops path interleaves its ops with scheduling: stream mode only")
    kubeconfig = dev_cluster("up")
    bench = WorkloadBench(kubeconfig, variant, creators)
    result: dict[str, Any] = {"workload": variant.full_name, "nodes": bench.node_count, "pods": bench.pod_count,
                              "init_pods": bench.init_count, "path": "ops" if bench.ops_path else "simple",
                              "order": list(order)}  # fmt: skip
    try:
        bench.install_crds()
        if bench.ops_path:  # the ops interleave with scheduling: stream only
            figures = result.setdefault("stream", {})
            for side in order:
                figures[side] = _ops_side(bench, side, log_dir)
            ours = figures["crd_scheduler"].get("pods_per_second")
            theirs = figures["kube_scheduler"].get("pods_per_second")
            if ours and theirs:
                figures["ratio"] = round(ours / theirs, 3)
            if "backlog" in modes:
                result["backlog_skipped"] = "the ops path runs the scheduler throughout (stream only)"
            return result
        bench.create_nodes()
        for mode, backlog in modes.items():
            figures = result.setdefault(mode, {})
            for side in order:
                runner = bench.crd_scheduler if side == "crd_scheduler" else bench.kube_scheduler
                figures[side] = runner(log_dir, backlog=backlog)
            ours = figures["crd_scheduler"].get("pods_per_second")
            theirs = figures["kube_scheduler"].get("pods_per_second")
            if ours and theirs:
                figures["ratio"] = round(ours / theirs, 3)
    finally:
        bench.cleanup()
    return result
