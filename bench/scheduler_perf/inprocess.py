"""Upstream's scheduler_perf ops, run in-process: our scheduler over the in-memory cluster.

The executor follows ``executor.go`` (``WorkloadExecutor.runOp``) op by op; the in-memory
cluster stands for the API server and its informers (every write is announced to the scheduler
at once, as ``bench/run.py`` does), the default profile serves ``default-scheduler`` (the name
upstream's templates leave to defaulting), and API-server defaulting applies to every pod and
node (``scheduler_core.simulator.defaulting``). What differs, and why:

* Time. Upstream creates pods with 30 client goroutines while its scheduler runs; here the
  pods of an op are created first, then the scheduler runs until the op's wait is satisfied
  (``waitUntilPodsScheduledInNamespace``) or nothing is left to try. Background ops
  (``churn``, ``deletePods`` with ``deletePodsPerSecond`` and ``skipWaitToCompletion``,
  ``updateAny`` with ``updatePerSecond``, ``createPods`` with ``steadyState``) are tickers on
  the wall clock, fired between scheduling cycles; ``sleep`` runs the scheduler and the tickers
  for its duration.
* Metrics. Per collection (a ``collectMetrics`` op, or ``start``/``stopCollectingMetrics``):
  pods bound in the collected namespaces (label selector applied), pods/s over the collection
  (bindings over the time from its start to its last binding, where upstream averages 1 s
  samples: ``util.go`` ``throughputCollector``), the SLI latency from a pod's first attempt
  to its binding (``scheduler_pod_scheduling_sli_duration_seconds``) and creation to binding,
  each as p50/p90/p99.
* Feature gates. Our scheduler has none: it runs one behaviour (queueing hints on, the DRA
  features it implements). A variant's gates are reported with the result.
* Ops we cannot run raise :class:`Unsupported` with the op and the reason; the suite lists them.
"""

from __future__ import annotations

import copy
import fnmatch
import itertools
import random
import resource
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from bench.scheduler_perf.config import Variant
from bench.scheduler_perf.gotemplate import render
from bench.workloads import dra_slice
from scheduler_core.clock import FakeClock
from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import DEFAULT_PROFILE_NAME, default_plugins, default_profile_spec
from scheduler_core.framework import QueuedPodInfo
from scheduler_core.framework.writes import RESOURCE_CLAIMS, STATUS, Verb, Write
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_core.simulator.defaulting import PriorityClasses, default_node, default_pod, generated_uid

Obj = dict[str, Any]
UPSTREAM_SCHEDULER_NAME = "default-scheduler"
HOSTNAME = "kubernetes.io/hostname"
# util.go makeBaseNode: 110 pods, 4 CPU, 32Gi, Ready.
BASE_NODE_STATUS: Obj = {
    "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
    "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"},
    "phase": "Running",
    "conditions": [{"type": "Ready", "status": "True"}],
}
# test/utils/runners.go MakePodSpec: one pause container, 100m CPU and 500Mi, requests = limits.
BASE_POD_SPEC: Obj = {
    "containers": [
        {
            "name": "pause",
            "image": "registry.k8s.io/pause:3.10.1",
            "ports": [{"containerPort": 80}],
            "resources": {
                "limits": {"cpu": "100m", "memory": "500Mi"},
                "requests": {"cpu": "100m", "memory": "500Mi"},
            },
        }
    ]
}
SCHEDULING_GATED: Obj = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "SchedulingGated",
    "message": "Scheduling is blocked due to non-empty scheduling gates",
}
DELETION_TIMESTAMP = "2026-01-01T00:00:00Z"


def scheduled_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The pod's PodScheduled condition (util.go isAttempted looks for it), or None."""
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return next((c for c in conditions if c.get("type") == "PodScheduled"), None)


MAX_ATTEMPTS = 20
WAIT_TIMEOUT = 600.0  # executor.go waits: 10 minutes


class Unsupported(Exception):
    """An op or template the in-process mode cannot run, with the reason."""

    def __init__(self, op: str, reason: str) -> None:
        super().__init__(f"{op}: {reason}")
        self.op = op
        self.reason = reason


class WorkloadFailed(Exception):
    """The workload ran but did not do what upstream's executor requires (a wait not met)."""


def percentile(sorted_values: list[float], q: float) -> float:
    """Upstream's rank: ``values[ceil(n*q)-1]`` (util.go collect)."""
    if not sorted_values:
        return 0.0
    index = max(0, min(len(sorted_values) - 1, -(-int(len(sorted_values) * q * 100) // 100) - 1))
    return sorted_values[index]


@dataclass(slots=True)
class Collection:
    name: str
    namespaces: frozenset[str]
    labels: Mapping[str, str]
    started: float
    first_binding: float | None = None
    last_binding: float | None = None
    bound: int = 0
    client_seconds: float = 0.0  # the bench's own work (templates, objects) while collecting
    sli: list[float] = field(default_factory=list)
    e2e: list[float] = field(default_factory=list)

    def result(self, stopped: float) -> dict[str, Any]:
        end = self.last_binding if self.last_binding is not None else stopped
        wall = end - self.started
        seconds = wall - self.client_seconds
        sli = sorted(self.sli)
        e2e = sorted(self.e2e)
        return {
            "name": self.name,
            "namespaces": sorted(self.namespaces),
            "bound": self.bound,
            "seconds": round(seconds, 4),
            "wall_seconds": round(wall, 4),
            "pods_per_second": round(self.bound / seconds, 1) if seconds > 0 and self.bound else 0.0,
            **{f"sli_p{q}_ms": round(percentile(sli, q / 100) * 1000, 3) for q in (50, 90, 99)},
            **{f"e2e_p{q}_ms": round(percentile(e2e, q / 100) * 1000, 3) for q in (50, 90, 99)},
        }


@dataclass(slots=True)
class Ticker:
    """A background op: ``fire`` every ``interval`` seconds until it returns False."""

    interval: float
    due: float
    fire: Callable[[], bool]


class Executor:
    def __init__(self, variant: Variant, seed: int = 0, counters: Counters | None = None) -> None:
        self.variant = variant
        self.cluster = InMemoryCluster()
        registry = default_registry()
        self.scheduler = Scheduler(
            self.cluster,
            registry=registry,
            default_multi_point=default_plugins(registry),
            clock=FakeClock(),
            rng=random.Random(seed),
        )
        self.cluster.watch(self.scheduler)
        self.scheduler.apply_profile(
            ProfileKey(self.scheduler.profiles.home_namespace, DEFAULT_PROFILE_NAME), self._profile(registry)
        )
        self.rng = random.Random(seed)
        self.counters = counters
        self.priority_classes = PriorityClasses(())
        self.scheduled_per_namespace: dict[str, int] = {}  # executor.go numPodsScheduledPerNamespace
        self.next_node_index = 0
        self.names = itertools.count()
        self.created: dict[str, float] = {}
        self.first_attempt: dict[str, float] = {}
        self.attempted: set[str] = set()
        self.collection: Collection | None = None
        self.results: list[dict[str, Any]] = []
        self.tickers: list[Ticker] = []
        self.notes: list[str] = []
        self._wait_started: float | None = None  # fake time a wait began (leftover flushes)
        self._install_hooks()

    # -- the scheduler -------------------------------------------------------------------------
    def _profile(self, registry: Mapping[str, Any]) -> SchedulerProfileSpec:
        if self.variant.scheduler_config is None:
            return default_profile_spec().model_copy(update={"scheduler_name": UPSTREAM_SCHEDULER_NAME})
        from scheduler_core import importconfig  # only a case with schedulerConfigPath needs it

        source = self.variant.scheduler_config
        imported = importconfig.convert(
            yaml.safe_load(Path(source).read_text()), namespace="bench", registry=registry, source=source,
            take_over_default_scheduler=True,
        )  # fmt: skip
        if len(imported.objects) != 1:
            raise Unsupported("schedulerConfigPath", f"{source}: {len(imported.objects)} profiles; one is supported")
        return SchedulerProfileSpec.model_validate(imported.objects[0]["spec"])

    def _install_hooks(self) -> None:
        schedule_one = self.scheduler.schedule_one
        report_scheduled = self.cluster.report_scheduled

        async def timed_schedule_one(qpi: QueuedPodInfo) -> None:
            uid = qpi.pod_info.uid
            self.first_attempt.setdefault(uid, time.perf_counter())
            self.attempted.add(uid)
            if self.counters is not None:
                self.counters.attempts += 1
            await schedule_one(qpi)
            self._fire_tickers()

        def timed_report(pod: Any, node_name: str) -> None:
            now = time.perf_counter()
            collection = self.collection
            if collection is not None and pod.namespace in collection.namespaces:
                labels = pod.labels
                if all(labels.get(k) == v for k, v in collection.labels.items()):
                    collection.bound += 1
                    if collection.first_binding is None:
                        collection.first_binding = now
                    collection.last_binding = now
                    if pod.uid in self.first_attempt:
                        collection.sli.append(now - self.first_attempt[pod.uid])
                    if pod.uid in self.created:
                        collection.e2e.append(now - self.created[pod.uid])
            report_scheduled(pod, node_name)

        self.scheduler.schedule_one = timed_schedule_one  # type: ignore[method-assign]
        self.cluster.report_scheduled = timed_report  # type: ignore[method-assign]

    def _fire_tickers(self) -> None:
        if not self.tickers:
            return
        now = time.perf_counter()
        for ticker in list(self.tickers):
            while ticker.due <= now:
                if not ticker.fire():
                    self.tickers.remove(ticker)
                    break
                ticker.due += ticker.interval

    async def _schedule(self, until: Callable[[], bool] | None = None, deadline: float | None = None) -> None:
        """Run the scheduler until ``until()`` holds (or nothing is left to try, with no ticker
        to change that), or until ``deadline`` on the wall clock."""
        while True:
            await self.scheduler.run_until_idle(max_attempts_per_pod=MAX_ATTEMPTS)
            now = time.perf_counter()
            if deadline is not None and now >= deadline:
                return
            if until is not None and until():
                return
            if until is not None and not self.tickers and self._flush_leftover():
                continue
            if not self.tickers:
                if deadline is None:
                    return
                time.sleep(max(0.0, deadline - now))
                continue
            wake = min(t.due for t in self.tickers)
            if deadline is not None:
                wake = min(wake, deadline)
            time.sleep(max(0.0, wake - now))
            self._fire_tickers()

    def _flush_leftover(self) -> bool:
        """Idle with a wait unmet: do what upstream's scheduler does meanwhile, within the 10
        minutes its waits allow (``waitUntilPodsScheduledInNamespace``): every 30 s it flushes
        pods unschedulable for ``podMaxInUnschedulablePodsDuration`` (5 min) back to the
        queue. On the fake clock, at once; said in the notes, since upstream spends those
        minutes of wall time."""
        queue = self.scheduler.queue
        when = queue.next_unschedulable_timeout()
        clock = self.scheduler.clock
        if when is None or not isinstance(clock, FakeClock):
            return False
        if self._wait_started is None:
            self._wait_started = clock.now()
        if when - self._wait_started > WAIT_TIMEOUT:
            return False
        clock.set(max(when, clock.now()))
        queue.flush_unschedulable_leftover()
        self.notes.append(
            f"unschedulable pods flushed after {when - self._wait_started:.0f} s of fake time"
            " (upstream: its 5-minute leftover flush)"
        )
        return True

    # -- objects ---------------------------------------------------------------------------------
    def _name(self, meta: Obj, fallback_prefix: str) -> str:
        name = meta.get("name")
        if not name:
            name = f"{meta.get('generateName') or fallback_prefix}{next(self.names):05d}"
            meta["name"] = name
            meta.pop("generateName", None)
        return str(name)

    def create_node(self, node: Obj) -> Obj:
        meta = node.setdefault("metadata", {})
        name = self._name(meta, "node-")
        meta.setdefault("labels", {})[HOSTNAME] = name
        meta.setdefault("uid", generated_uid("Node", "", name))
        node = default_node(node)
        self.cluster.nodes[name] = node
        self.scheduler.on_node_add(node)
        return node

    def update_node(self, node: Obj) -> None:
        started = time.perf_counter()
        name = node["metadata"]["name"]
        old = self.cluster.nodes.get(name)
        if old is None:
            raise WorkloadFailed(f"updateAny: node {name} not found")
        node["metadata"] = {**old["metadata"], **node["metadata"]}
        node = default_node(node)
        self.cluster.nodes[name] = node
        self._client(started)
        self.scheduler.on_node_update(old, node)

    def _client(self, started: float) -> None:
        """Time since ``started`` was the bench's (the API client's and server's) work, which
        upstream does in other goroutines and processes: not the scheduler's."""
        if self.collection is not None:
            self.collection.client_seconds += time.perf_counter() - started

    def create_pod(self, pod: Obj, namespace: str) -> Obj:
        started = time.perf_counter()
        meta = pod.setdefault("metadata", {})
        meta["namespace"] = namespace
        name = self._name(meta, "pod-")
        meta["uid"] = generated_uid("Pod", namespace, name)
        pod.setdefault("spec", {}).setdefault("schedulerName", UPSTREAM_SCHEDULER_NAME)
        pod, problems = default_pod(pod, self.priority_classes)
        if pod["spec"].get("schedulingGates"):
            # pkg/registry/core/pod/strategy.go applySchedulingGatedCondition: the API server
            # marks a pod created with gates PodScheduled=False, SchedulingGated.
            pod.setdefault("status", {}).setdefault("conditions", []).append(SCHEDULING_GATED)
        if problems:
            raise WorkloadFailed(f"pod {namespace}/{name}: {problems}")
        stored = self.cluster.add_pod(pod)
        self._client(started)
        self.created[meta["uid"]] = time.perf_counter()
        self.scheduler.on_pod_add(stored)
        return stored

    def update_pod(self, pod: Obj, namespace: str) -> None:
        started = time.perf_counter()
        name = pod["metadata"]["name"]
        old = self.cluster.pod(namespace, name)
        if old is None:
            raise WorkloadFailed(f"updateAny: pod {namespace}/{name} not found")
        new = copy.deepcopy(pod)
        new["metadata"] = {**old["metadata"], **new.get("metadata", {}), "namespace": namespace}
        if "labels" not in pod.get("metadata", {}):
            new["metadata"].pop("labels", None)  # an Update replaces the labels
        new.setdefault("spec", {}).setdefault("schedulerName", UPSTREAM_SCHEDULER_NAME)
        new["status"] = pod.get("status") or old.get("status") or {}
        new, _ = default_pod(new, self.priority_classes)
        self.cluster.pods[new["metadata"]["uid"]] = new
        # The lookup by name (a scan of every pod), the copy and the defaulting are the API
        # server's work, as in create_pod: not the scheduler's.
        self._client(started)
        self.scheduler.on_pod_update(old, new)

    def delete_pod(self, pod: Mapping[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        stored = self.cluster.pods.get(uid)
        if stored is None or stored["metadata"].get("deletionTimestamp"):
            return
        if stored["metadata"].get("finalizers"):
            # A pod with finalizers is only marked (an update event); it stays until they go.
            new = {**stored, "metadata": {**stored["metadata"], "deletionTimestamp": DELETION_TIMESTAMP}}
            self.cluster.pods[uid] = new
            self.scheduler.on_pod_update(stored, new)
            return
        del self.cluster.pods[uid]
        self.cluster.claims.release_pod(stored)
        self.scheduler.on_pod_delete(stored)

    def create_any(self, obj: Obj, namespace: str, where: str) -> None:
        kind = str(obj.get("kind", ""))
        if kind == "Node":
            self.create_node(obj)
            return
        if kind == "Pod":
            self.create_pod(obj, namespace or "default")
            return
        meta = obj.setdefault("metadata", {})
        if namespace:
            meta["namespace"] = namespace
        self._name(meta, f"{kind.lower()}-")
        stored = self.cluster.create_object(kind, obj)
        self.scheduler.on_object_add(kind, stored)

    def update_any(self, obj: Obj, namespace: str) -> None:
        kind = str(obj.get("kind", ""))
        if kind == "Node":
            self.update_node(obj)
        elif kind == "Pod":
            self.update_pod(obj, namespace)
        else:
            if namespace:
                obj.setdefault("metadata", {})["namespace"] = namespace
            replaced = self.cluster.replace_object(kind, obj)
            if replaced is None:
                raise WorkloadFailed(f"updateAny: {kind} {obj.get('metadata', {}).get('name')} not found")
            self.scheduler.on_object_update(kind, *replaced)

    def ensure_namespace(self, namespace: str) -> None:
        """executor.go createNamespaceIfNotPresent."""
        if namespace not in self.scheduled_per_namespace:
            self._namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            self.scheduled_per_namespace[namespace] = 0

    def _namespace(self, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        if any((o.get("metadata") or {}).get("name") == name for o in self.cluster.objects("Namespace")):
            return
        stored = self.cluster.create_object("Namespace", obj)
        self.scheduler.on_object_add("Namespace", stored)

    # -- reading the cluster ----------------------------------------------------------------------
    def pods_in(self, namespace: str, labels: Mapping[str, str] | None = None) -> list[Obj]:
        out = []
        for pod in self.cluster.pods.values():
            meta = pod.get("metadata") or {}
            if meta.get("namespace") != namespace:
                continue
            if labels and any((meta.get("labels") or {}).get(k) != v for k, v in labels.items()):
                continue
            out.append(pod)
        return out

    def scheduled_in(self, namespace: str, labels: Mapping[str, str] | None = None) -> int:
        return sum(1 for p in self.pods_in(namespace, labels) if (p.get("spec") or {}).get("nodeName"))

    def attempted_in(self, namespace: str, labels: Mapping[str, str] | None = None) -> int:
        """util.go getScheduledPods: scheduled, or with a PodScheduled condition (isAttempted)."""
        return sum(
            1
            for p in self.pods_in(namespace, labels)
            if (p.get("spec") or {}).get("nodeName") or scheduled_condition(p) is not None
        )

    # -- templates ---------------------------------------------------------------------------------
    def _rendered(self, path: str, index: int, count: int) -> Obj:
        """:meth:`template`, its time the bench's own (updateAny's objects, as createPods')."""
        started = time.perf_counter()
        obj = self.template(path, index, count)
        self._client(started)
        return obj

    def template(self, path: str, index: int = 0, count: int = 1) -> Obj:
        return load_template(path, index, count)

    # -- ops ---------------------------------------------------------------------------------------
    async def run(self) -> list[dict[str, Any]]:
        for index, op in enumerate(self.variant.ops):
            handler = getattr(self, "op_" + str(op["opcode"]), None)
            if handler is None:
                raise Unsupported(str(op["opcode"]), "no in-process implementation")
            await handler(index, op)
        self.tickers.clear()
        return self.results

    async def op_createNodes(self, index: int, op: Mapping[str, Any]) -> None:
        count = int(op.get("count", 0))
        strategy = node_strategy(op)
        created = []
        for i in range(count):
            if op.get("nodeTemplatePath"):
                node = self.template(op["nodeTemplatePath"], i, count)
            else:
                node = {"metadata": {"generateName": f"node-{index}-"}, "status": copy.deepcopy(BASE_NODE_STATUS)}
            node.setdefault("apiVersion", "v1")
            node.setdefault("kind", "Node")
            meta = node.setdefault("metadata", {})
            self._name(meta, f"node-{index}-")
            meta.setdefault("labels", {})[HOSTNAME] = meta["name"]
            if strategy is not None:
                strategy(node, i)
            created.append(node)
        hook = NODE_UPDATE_HOOKS.get(self.variant.folder)
        for node in created:
            if hook is not None:
                hook(self.variant, node)
            self.create_node(node)
            if op.get("nodeAllocatableStrategy"):
                self._csinode(node, op["nodeAllocatableStrategy"])
        self.next_node_index += count

    def _csinode(self, node: Obj, spec: Mapping[str, Any]) -> None:
        stored = self.cluster.create_object("CSINode", csinode_body(node["metadata"]["name"], spec))
        self.scheduler.on_object_add("CSINode", stored)

    async def op_createNamespaces(self, index: int, op: Mapping[str, Any]) -> None:
        base: Obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {}}
        if op.get("namespaceTemplatePath"):
            base = self.template(op["namespaceTemplatePath"])
        for i in range(int(op.get("count", 0))):
            ns = copy.deepcopy(base)
            name = f"{op['prefix']}-{i}"
            ns.setdefault("metadata", {})["name"] = name
            self._namespace(ns)
            self.scheduled_per_namespace.setdefault(name, 0)

    async def op_createPods(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op.get("namespace") or f"namespace-{index}")
        self.ensure_namespace(namespace)
        path = op.get("podTemplatePath") or self.variant.default_pod_template
        count = int(op.get("count", 0))
        if op.get("collectMetrics"):
            self._start_collecting(namespace, frozenset({namespace}), {})
        if op.get("steadyState"):
            await self._steady_state(namespace, path, op)
        else:
            self._create_pods(namespace, path, count, op)
            if op.get("skipWaitToCompletion"):
                self.scheduled_per_namespace[namespace] = self.scheduled_per_namespace.get(namespace, 0) + count
            else:
                self._wait_started = None
                await self._schedule(until=lambda: self.scheduled_in(namespace) >= count)
                if self.scheduled_in(namespace) < count:
                    raise WorkloadFailed(
                        f"op {index} createPods: {self.scheduled_in(namespace)} of {count} pods scheduled"
                        f" in {namespace}"
                    )
        if op.get("collectMetrics"):
            self._stop_collecting()

    def _create_pods(self, namespace: str, path: str | None, count: int, op: Mapping[str, Any]) -> None:
        volumes = op.get("persistentVolumeClaimTemplatePath")
        for i in range(count):
            started = time.perf_counter()
            pod = (
                self.template(path, i, count)
                if path
                else {"metadata": {"generateName": "pod-"}, "spec": copy.deepcopy(BASE_POD_SPEC)}
            )
            if volumes:
                self._pod_volume(pod, namespace, i, op)
            self._client(started)
            self.create_pod(pod, namespace)

    def _pod_volume(self, pod: Obj, namespace: str, i: int, op: Mapping[str, Any]) -> None:
        pvc_name = f"pvc-{i}"
        pvc, pv = volume_pair(op, namespace, i, pvc_name, f"{namespace}-vol-{i}")
        for kind, obj in (("PersistentVolumeClaim", pvc), ("PersistentVolume", pv)):
            stored = self.cluster.create_object(kind, obj)
            self.scheduler.on_object_add(kind, stored)
        spec = pod.setdefault("spec", {})
        spec["volumes"] = [{"name": pvc_name, "persistentVolumeClaim": {"claimName": pvc_name}}]

    async def _steady_state(self, namespace: str, path: str | None, op: Mapping[str, Any]) -> None:
        """executor.go createPodsSteadily: keep ``count`` pods; each time ``count`` more got
        scheduled, delete the namespace's pods and create ``count`` new ones, for ``duration``."""
        count = int(op.get("count", 0))
        duration = go_seconds(op.get("duration", "0s"))
        deadline = time.perf_counter() + duration
        self._create_pods(namespace, path, count, op)
        scheduled = 0
        while time.perf_counter() < deadline:
            await self._schedule(until=lambda: self.scheduled_in(namespace) >= count, deadline=deadline)
            now_scheduled = self.scheduled_in(namespace)
            if now_scheduled < count:
                if time.perf_counter() < deadline and not self.scheduler.pending_binding():
                    break  # stuck: nothing will schedule the rest
                continue
            scheduled += now_scheduled
            for pod in self.pods_in(namespace):
                self.delete_pod(pod)
            self._create_pods(namespace, path, count, op)
        if scheduled == 0 and self.scheduled_in(namespace) == 0:
            raise WorkloadFailed(f"steadyState in {namespace}: no pod at all got scheduled")

    async def op_createPodSets(self, index: int, op: Mapping[str, Any]) -> None:
        raise Unsupported("createPodSets", "unrolled by the loader; reaching it is a bug")

    async def op_deletePods(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op["namespace"])
        labels = op.get("labelSelector") or {}
        victims = self.pods_in(namespace, labels)
        rate = int(op.get("deletePodsPerSecond") or 0)
        if rate <= 0:
            if op.get("skipWaitToCompletion"):
                self.notes.append(
                    f"op {index} deletePods: deleted at once (upstream: a DeleteCollection in the background)"
                )
            for pod in victims:
                self.delete_pod(pod)
            return
        queue = list(victims)

        def fire() -> bool:
            if not queue:
                return False
            self.delete_pod(queue.pop(0))
            return bool(queue)

        ticker = Ticker(1.0 / rate, time.perf_counter() + 1.0 / rate, fire)
        if op.get("skipWaitToCompletion"):
            self.tickers.append(ticker)
        else:
            self.tickers.append(ticker)
            await self._schedule(until=lambda: not queue)
            while queue:  # the scheduler is idle: keep deleting at the rate
                time.sleep(max(0.0, ticker.due - time.perf_counter()))
                self._fire_tickers()
            self.tickers = [t for t in self.tickers if t is not ticker]

    async def op_churn(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op.get("namespace") or f"namespace-{index}")
        self._namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        templates = [self.template(p) for p in op["templatePaths"]]
        interval = int(op.get("intervalMilliseconds") or 500) / 1000
        number = int(op.get("number") or 0)
        mode = op["mode"]
        live: list[list[Obj | None]] = [[None] * max(number, 1) for _ in templates]
        ticks = itertools.count()

        def create(template: Obj) -> Obj:
            obj = copy.deepcopy(template)
            kind = obj.get("kind")
            if kind == "Node":
                return self.create_node(obj)
            if kind == "Pod":
                return self.create_pod(obj, namespace)
            self.create_any(obj, namespace, "churn")
            return obj

        def delete(obj: Obj) -> None:
            kind = obj.get("kind")
            meta = obj["metadata"]
            if kind == "Node":
                node = self.cluster.nodes.pop(meta["name"], None)
                if node is not None:
                    self.scheduler.on_node_delete(node)
            elif kind == "Pod":
                self.delete_pod(obj)
            else:
                gone = self.cluster.delete_object(str(kind), str(meta.get("namespace") or ""), str(meta["name"]))
                if gone is not None:
                    self.scheduler.on_object_delete(str(kind), gone)

        def fire() -> bool:
            tick = next(ticks)
            if mode == "create":
                if number and tick >= number:
                    return False
                for template in templates:
                    create(template)
                return True
            slot = tick % number
            for i, template in enumerate(templates):
                current = live[i][slot]
                if current is None:
                    live[i][slot] = create(template)
                else:
                    delete(current)
                    live[i][slot] = None
            return True

        self.tickers.append(Ticker(interval, time.perf_counter() + interval, fire))

    async def op_barrier(self, index: int, op: Mapping[str, Any]) -> None:
        namespaces = list(op.get("namespaces") or self.scheduled_per_namespace)
        labels = op.get("labelSelector") or {}
        for namespace in namespaces:
            if namespace not in self.scheduled_per_namespace:
                raise WorkloadFailed(f"op {index} barrier: unknown namespace {namespace}")
        attempted = op.get("stageRequirement") == "Attempted"
        count = self.attempted_in if attempted else self.scheduled_in

        def done() -> bool:
            return all(count(ns, labels) >= self.scheduled_per_namespace[ns] for ns in namespaces)

        self._wait_started = None
        await self._schedule(until=done)
        if not done():
            short = {ns: (count(ns, labels), self.scheduled_per_namespace[ns]) for ns in namespaces}
            raise WorkloadFailed(f"op {index} barrier ({'Attempted' if attempted else 'Scheduled'}): have/want {short}")
        if not attempted:
            for namespace in namespaces:
                self.scheduled_per_namespace.pop(namespace, None)
            if not op.get("namespaces"):
                self.scheduled_per_namespace.clear()

    async def op_sleep(self, index: int, op: Mapping[str, Any]) -> None:
        await self._schedule(deadline=time.perf_counter() + go_seconds(op.get("duration", "0s")))

    async def op_startCollectingMetrics(self, index: int, op: Mapping[str, Any]) -> None:
        self._start_collecting(
            str(op.get("name", "")), frozenset(op.get("namespaces") or ()), op.get("labelSelector") or {}
        )

    async def op_stopCollectingMetrics(self, index: int, op: Mapping[str, Any]) -> None:
        self._stop_collecting()

    def _start_collecting(self, name: str, namespaces: frozenset[str], labels: Mapping[str, str]) -> None:
        if self.collection is not None:
            raise WorkloadFailed("metrics collection is overlapping")
        self.collection = Collection(name, namespaces, dict(labels), time.perf_counter())

    def _stop_collecting(self) -> None:
        if self.collection is None:
            raise WorkloadFailed("missing startCollectingMetrics operation before stopping")
        self.results.append(self.collection.result(time.perf_counter()))
        self.collection = None

    async def op_createAny(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op.get("namespace") or "")
        if namespace:
            self.ensure_namespace(namespace)
        count = int(op["count"]) if op.get("count") is not None else 1
        for i in range(count):
            self.create_any(self.template(op["templatePath"], i, count), namespace, op["templatePath"])

    async def op_updateAny(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op.get("namespace") or "")
        if namespace:
            self.ensure_namespace(namespace)
        count = int(op["count"]) if op.get("count") is not None else 1
        rate = int(op.get("updatePerSecond") or 0)
        path = op["templatePath"]
        if rate <= 0:
            for i in range(count):
                self.update_any(self._rendered(path, i, count), namespace)
            return
        # update.go: one update per tick, the op returns when all are done (the scheduler runs
        # meanwhile).
        indices = iter(range(count))
        remaining = [count]

        def fire() -> bool:
            i = next(indices, None)
            if i is None:
                return False
            self.update_any(self._rendered(path, i, count), namespace)
            remaining[0] -= 1
            return remaining[0] > 0

        ticker = Ticker(1.0 / rate, time.perf_counter() + 1.0 / rate, fire)
        self.tickers.append(ticker)
        while remaining[0] > 0:
            await self._schedule(until=lambda: remaining[0] == 0)
            if remaining[0] > 0:
                time.sleep(max(0.0, ticker.due - time.perf_counter()))
                self._fire_tickers()
        self.tickers = [t for t in self.tickers if t is not ticker]

    async def op_createResourceClaims(self, index: int, op: Mapping[str, Any]) -> None:
        namespace = str(op["namespace"])
        self.ensure_namespace(namespace)
        template = yaml.safe_load(Path(op["templatePath"]).read_text())
        for _ in range(int(op.get("count", 0))):
            claim = copy.deepcopy(template)
            claim.setdefault("metadata", {})["namespace"] = namespace
            self._name(claim["metadata"], "claim-")
            stored = self.cluster.create_object("ResourceClaim", claim)
            self.scheduler.on_object_add("ResourceClaim", stored)

    async def op_createResourceDriver(self, index: int, op: Mapping[str, Any]) -> None:
        """dra.go createResourceDriverOp: one ResourceSlice per node whose name matches the glob."""
        for name in sorted(self.cluster.nodes):
            if fnmatch.fnmatchcase(name, str(op["nodes"])):
                stored = self.cluster.create_object(
                    "ResourceSlice", dra_slice(name, int(op.get("maxClaimsPerNode", 0)), driver=str(op["driverName"]))
                )
                self.scheduler.on_object_add("ResourceSlice", stored)

    async def op_allocResourceClaims(self, index: int, op: Mapping[str, Any]) -> None:
        """dra.go allocResourceClaimsOp (:func:`allocate_claims`), each allocation written to
        its claim's status."""
        namespace = str(op.get("namespace") or "")
        claims = list(self.cluster.objects("ResourceClaim"))
        classes = list(self.cluster.objects("DeviceClass"))
        slices = list(self.cluster.objects("ResourceSlice"))
        nodes = list(self.cluster.nodes.values())
        for claim, allocation in allocate_claims(index, namespace, claims, classes, slices, nodes, self.rng):
            status = {**(claim.get("status") or {}), "allocation": allocation}
            write = Write(Verb.UPDATE, RESOURCE_CLAIMS, {**claim, "status": status}, subresource=STATUS)
            stored, problem = self.cluster.claims.put_status(write)
            if problem is not None or stored is None:
                raise WorkloadFailed(f"op {index} allocResourceClaims: update claim status: {problem}")
            self.scheduler.on_object_update("ResourceClaim", claim, stored)


def allocate_claims(
    index: int,
    namespace: str,
    claims: list[Obj],
    classes: list[Obj],
    slices: list[Obj],
    nodes: list[Obj],
    rng: random.Random,
) -> Iterator[tuple[Obj, Obj]]:
    """dra.go allocResourceClaimsOp: each unallocated claim of ``namespace`` with its allocation,
    as upstream makes them with a fresh ``structured.NewAllocator`` per claim over the devices
    already allocated, trying the nodes in random order (here DynamicResources' own allocator,
    outside a scheduling cycle: the bench's use, not the plugin's; the seeded generator). The
    caller writes each allocation before asking for the next."""
    from scheduler_core.framework.dra import allocated_devices as devices_of
    from scheduler_core.plugins.dynamicresources.allocator import (
        AllocationError,
        Allocator,
        SelectorResults,
        SliceIndex,
    )

    pending = [
        claim
        for claim in claims
        if (claim.get("metadata") or {}).get("namespace") == namespace
        and not (claim.get("status") or {}).get("allocation")
    ]
    by_name = {(c.get("metadata") or {}).get("name") or "": c for c in classes}
    allocated = {d for c in claims for d in devices_of((c.get("status") or {}).get("allocation") or {})}
    nodes = list(nodes)
    # The slices and classes do not change while the op runs: indexed once (each node's pools
    # and the selectors' answers with them), not once per claim (Partitionable: 2,000 claims
    # over 4,000 slices took minutes to set up); each claim's allocator sees the devices so far.
    index_of_slices, results = SliceIndex(slices), SelectorResults()
    for i, claim in enumerate(pending):
        allocator = Allocator(by_name, index_of_slices, allocated, results)
        rng.shuffle(nodes)
        for node in nodes:
            meta = node["metadata"]
            try:
                result = allocator.allocate(meta.get("labels") or {}, meta["name"], [claim])
            except AllocationError as error:
                raise WorkloadFailed(f"op {index} allocResourceClaims: allocate claim: {error}") from error
            if result:
                yield claim, result[0]
                allocated.update(devices_of(result[0]))
                break
        else:
            raise WorkloadFailed(f"op {index} allocResourceClaims: could not allocate claim {i} out of {len(pending)}")


class Counters:
    """Deterministic work counts, for comparisons that must not depend on machine load."""

    def __init__(self) -> None:
        self.attempts = 0


_SOURCES: dict[str, str] = {}
_PARSED: dict[str, bytes] = {}


def load_template(path: str, index: int = 0, count: int = 1) -> Obj:
    """A template file rendered for ``{Index, Count}`` and parsed (upstream:
    ``getSpecFromTextTemplateFile``). Parsed once per distinct rendering (libyaml), then
    copied: the client's cost must not weigh on the scheduler's figures."""
    source = _SOURCES.get(path)
    if source is None:
        source = _SOURCES[path] = Path(path).read_text()
    text = render(source, {"Index": index, "Count": count}, path) if "{{" in source else source
    parsed = _PARSED.get(text)
    if parsed is None:
        obj = yaml.load(text, Loader=yaml.CSafeLoader)
        if not isinstance(obj, dict):
            raise WorkloadFailed(f"{path}: not an object")
        parsed = _PARSED[text] = orjson.dumps(obj)
    copied = orjson.loads(parsed)
    assert isinstance(copied, dict)
    return copied


def go_seconds(value: object) -> float:
    """A Go duration string of the forms upstream's configs use (``10s``, ``0s``, ``500ms``, ``1m``)."""
    text = str(value)
    for suffix, factor in (("ms", 0.001), ("s", 1.0), ("m", 60.0), ("h", 3600.0)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * factor
    raise WorkloadFailed(f"unsupported duration {text!r}")


def csinode_body(name: str, spec: Mapping[str, Any]) -> Obj:
    """runners.go NodeAllocatableStrategy.createCSINode: node ``name``'s CSINode with each
    driver's allocatable and the migrated in-tree plugins annotation."""
    drivers = [
        {"name": driver, "nodeID": name, "allocatable": allocatable}
        for driver, allocatable in (spec.get("csiNodeAllocatable") or {}).items()
    ]
    annotation = ",".join(spec.get("migratedPlugins") or ())
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": annotation}},
        "spec": {"drivers": drivers},
    }


def volume_pair(op: Mapping[str, Any], namespace: str, i: int, pvc_name: str, pv_name: str) -> tuple[Obj, Obj]:
    """runners.go CreatePodWithPersistentVolume (bindVolume): the op's claim template as
    ``pvc_name`` in ``namespace``, bound to its volume template as ``pv_name`` (both phases
    Bound; the claim template carries ``pv.kubernetes.io/bind-completed``)."""
    pvc = yaml.safe_load(Path(op["persistentVolumeClaimTemplatePath"]).read_text())
    pv = yaml.safe_load(Path(op["persistentVolumeTemplatePath"]).read_text())
    pvc.setdefault("metadata", {}).update(name=pvc_name, namespace=namespace)
    pvc.setdefault("spec", {})["volumeName"] = pv_name
    pvc["status"] = {**(pvc.get("status") or {}), "phase": "Bound"}
    pv.setdefault("metadata", {})["name"] = pv_name
    source = pv.setdefault("spec", {})
    if source.get("csi") is not None:
        source["csi"]["volumeHandle"] = pv_name
    elif source.get("awsElasticBlockStore") is not None:
        source["awsElasticBlockStore"]["volumeID"] = f"vol-{i}"
    source["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": pvc_name, "apiVersion": "v1"}
    pv["status"] = {**(pv.get("status") or {}), "phase": "Bound"}
    return pvc, pv


def node_strategy(op: Mapping[str, Any]) -> Callable[[Obj, int], None] | None:
    """executor.go getNodePreparer: at most one strategy applies, in this order."""
    if op.get("nodeAllocatableStrategy"):
        spec = op["nodeAllocatableStrategy"]

        def allocatable(node: Obj, i: int) -> None:
            status = node.setdefault("status", {})
            alloc = status.setdefault("allocatable", dict(status.get("capacity") or {}))
            for name, value in (spec.get("nodeAllocatable") or {}).items():
                alloc[name] = value

        return allocatable
    if op.get("labelNodePrepareStrategy"):
        spec = op["labelNodePrepareStrategy"]
        values = list(spec["labelValues"])

        def label(node: Obj, i: int) -> None:
            # runners.go LabelNodePrepareStrategy: round robin over the values, in the order
            # upstream lists the nodes (by name: generated names make that random there).
            node["metadata"].setdefault("labels", {})[spec["labelKey"]] = values[i % len(values)]

        return label
    if op.get("uniqueNodeLabelStrategy"):
        key = op["uniqueNodeLabelStrategy"]["labelKey"]

        def unique(node: Obj, i: int) -> None:
            node["metadata"].setdefault("labels", {})[key] = f"{key}-{node['metadata']['name']}"

        return unique
    return None


def _declared_features(variant: Variant, node: Obj) -> None:
    """nodedeclaredfeatures/node_declared_features_test.go updateNodesWithDeclaredFeatures:
    with the gate on, every node declares Feature1..N (N = numNodeDeclaredFeatures)."""
    if not variant.feature_gates.get("NodeDeclaredFeatures"):
        return
    n = int(variant.params.get("numNodeDeclaredFeatures", 0))
    node.setdefault("status", {})["declaredFeatures"] = sorted(f"Feature{i}" for i in range(1, n + 1))


NODE_UPDATE_HOOKS: Mapping[str, Callable[[Variant, Obj], None]] = {"nodedeclaredfeatures": _declared_features}


async def run_variant(variant: Variant, seed: int = 0, counters: Counters | None = None) -> dict[str, Any]:
    executor = Executor(variant, seed, counters)
    started = time.perf_counter()
    results = await executor.run()
    pending = sum(1 for p in executor.cluster.pods.values() if not (p.get("spec") or {}).get("nodeName"))
    return {
        "workload": variant.full_name,
        "feature_gates": dict(variant.feature_gates),
        "nodes": len(executor.cluster.nodes),
        "pods": len(executor.cluster.pods),
        "pending_at_end": pending,
        "collections": results,
        "seconds_total": round(time.perf_counter() - started, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "notes": executor.notes,
    }
