"""kube-scheduler's side: one scenario on the API server, read back from the log and the extender.

One kube-scheduler (started once per run, with the parity profile and the extender) and one
namespace serve every scenario. For a scenario:

1. create its Nodes (status included: the Node create strategy keeps it), Services and bound
   Pods, and wait until the log shows kube-scheduler's cache holding them, and no longer holding
   the previous scenario's nodes (unique node names per scenario);
2. create the probe pods (:mod:`bench.parity_harness.probes`) and wait for each one's first attempt;
3. create the pending pod and wait for its first attempt to end (bound, or a FitError);
4. read the outcome: feasible nodes from the extender's call for the pending pod, weighted
   scores and totals from its V10 lines, reasons from the probes;
5. delete the scenario's pods, Services and Nodes (grace period 0: no kubelet would finish a
   graceful deletion), in the background while the next scenario is created.

With the ``volumes`` feature, step 1 first creates the StorageClasses, CSINodes and claims, then
the PVs (a pre-bound PV's ``claimRef`` gets its claim's uid), and waits until the PV controller
(kube-controller-manager's ``persistentvolume-binder``) has moved every PV to Available or Bound:
only an Available PV can be matched to a claim, and the PVs are read back then, as both
schedulers see them. While the pending pod is being bound the harness plays the CSI driver's
external-provisioner: a claim VolumeBinding's PreBind annotates with a selected node gets a PV
pre-bound to it, which the PV controller binds, so the PreBind completes and the pod binds; the
pod's claims are then read back (:func:`bench.parity_harness.volumes.bindings`). Claims and PVs
carry the ``kubernetes.io/pv[c]-protection`` finalizers (StorageObjectInUseProtection admission)
and no controller here removes them, so the cleanup patches them away.

With the ``gates`` feature a pending pod created with ``schedulingGates`` must be held by
SchedulingGates' PreEnqueue (its log line, and no attempt); the harness then removes the gates
and the scenario goes on as for any pod. Probes never carry the gates.

The objects as the API server stored them (server-only metadata removed) are returned as the
input for our side.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import sys
import time
import uuid
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from bench.parity_harness import dra, probes, reading, volumes
from bench.parity_harness import vocabulary as v
from bench.parity_harness.extender import Extender
from bench.parity_harness.generator import PENDING_POD, Scenario
from bench.parity_harness.klog import LogTail, SchedulerLog
from bench.parity_harness.kube import Api, ApiError, DevCluster, object_path
from bench.parity_harness.outcome import Outcome
from bench.parity_harness.profile import ProfilePair, kube_scheduler_config

Json = dict[str, Any]
VERBOSITY = 10
POLL_SECONDS = 0.005
PROVISION_EVERY_SECONDS = 0.1
PARALLEL_REQUESTS = 8
RUN_LABEL = "parity.example/run"
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")
# How long a preemptor must wait, its preemption over and its victims gone from kube-scheduler's
# cache, with no new attempt, before the harness takes it as parked (see _redeliver_deletions).
PARKED_AFTER_SECONDS = 2.0
REDELIVERED_SUFFIX = "-redelivered"


def _exclusive(path: Path) -> IO[str]:
    """Hold ``path`` locked until closed: two runs would restart each other's kube-scheduler
    and delete each other's nodes, so a second run waits for the first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stream = path.open("w")
    try:
        fcntl.flock(stream, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"parity: another run holds {path}; waiting for it", file=sys.stderr)
        fcntl.flock(stream, fcntl.LOCK_EX)
    return stream


def _phases(objects: list[Json]) -> list[str]:
    return [(o.get("status") or {}).get("phase", "") for o in objects]


def _expected(obj: Json, bound_by: str) -> str:
    """The phase the PV controller settles a PV (``claimRef``) or claim (``volumeName``) in."""
    if obj["spec"].get(bound_by):
        return "Bound"
    return "Available" if obj["kind"] == "PersistentVolume" else "Pending"


def _holds(keys: set[str], key: str) -> Callable[[], bool]:
    return lambda: key in keys


class HarnessError(RuntimeError):
    """The scenario could not be run or read back (not a disagreement)."""


@dataclass
class UpstreamResult:
    outcome: Outcome
    objects: list[Json]  # as stored by the API server, for the simulator
    anomalies: list[str] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)  # seconds per step, cleanup excluded
    gated_pod: Json | None = None  # the pending pod as created, while its scheduling gates held it


class _Phases:
    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self._last = time.monotonic()

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self.phases[name] = now - self._last
        self._last = now


def stored(obj: Json) -> Json:
    """An object as the API server stored it, minus what only the server tracks."""
    metadata = obj.get("metadata") or {}
    for key in SERVER_FIELDS:
        metadata.pop(key, None)
    if obj.get("kind") == "Service":
        obj.pop("status", None)
    return obj


class KubeScheduler:
    """The real kube-scheduler on the harness's dev cluster, ready to run scenarios."""

    def __init__(
        self,
        cluster: DevCluster,
        api: Api,
        registered: Collection[str],
        workdir: Path,
        *,
        timeout: float = 60.0,
        pair: ProfilePair | None = None,
    ) -> None:
        self.pair = pair
        self.cluster = cluster
        self.api = api
        self.registered = registered
        self.workdir = workdir
        self.timeout = timeout
        self.namespace = f"parity-{uuid.uuid4().hex[:6]}"
        self.extender = Extender()
        self._tail: LogTail | None = None
        self._pool = ThreadPoolExecutor(PARALLEL_REQUESTS, thread_name_prefix="parity-api")
        self._cleaning: Future[None] | None = None
        self._lock: IO[str] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self._lock = _exclusive(self.cluster.state / "harness.lock")
        self._remove_leftovers()
        for manifest in v.priority_classes():
            try:
                self.api.create(manifest)
            except ApiError as error:
                if error.status != 409:
                    raise
        namespace = {"name": self.namespace, "labels": {RUN_LABEL: "true"}}
        self.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": namespace})
        self._until(self._service_account_ready, "the namespace's default ServiceAccount")
        self.extender.start()
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "kube-scheduler.json"
        config.write_text(json.dumps(kube_scheduler_config(self.registered, self.extender.url, self.pair), indent=2))
        self._tail = LogTail(self.cluster.kube_scheduler_up(config, VERBOSITY))

    def stop(self) -> None:
        try:
            self._finish_cleaning()
            self._pool.shutdown()
            self.cluster.kube_scheduler_down()
        finally:
            self.extender.stop()
            with contextlib.suppress(ApiError):
                self.api.request("DELETE", f"/api/v1/namespaces/{self.namespace}")
            if self._lock is not None:
                self._lock.close()

    def _remove_leftovers(self) -> None:
        """Nodes of an interrupted run would be considered by every scenario; its namespace and
        cluster-scoped storage and DRA objects are litter (and would collide with its seeds')."""
        self.api.delete_collection("/api/v1/nodes", v.SCENARIO)
        for path in (
            "/apis/storage.k8s.io/v1/storageclasses",
            "/apis/storage.k8s.io/v1/csinodes",
            "/apis/resource.k8s.io/v1/deviceclasses",
            "/apis/resource.k8s.io/v1/resourceslices",
        ):
            self.api.delete_collection(path, v.SCENARIO)
        volumes_left = self.api.request("GET", "/api/v1/persistentvolumes", query={"labelSelector": v.SCENARIO})
        for pv in volumes_left["items"]:
            self._force_delete({"apiVersion": "v1", "kind": "PersistentVolume", **pv})
        for namespace in self.api.request("GET", "/api/v1/namespaces", query={"labelSelector": RUN_LABEL})["items"]:
            with contextlib.suppress(ApiError):
                self.api.request("DELETE", f"/api/v1/namespaces/{namespace['metadata']['name']}")

    def _service_account_ready(self) -> bool:
        try:
            self.api.request("GET", f"/api/v1/namespaces/{self.namespace}/serviceaccounts/default")
        except ApiError:
            return False
        return True

    # -- one scenario ----------------------------------------------------------------------------
    def run(self, scenario: Scenario) -> UpstreamResult:
        if scenario.namespace != self.namespace:
            raise HarnessError(f"scenario namespace {scenario.namespace!r} is not the run's {self.namespace!r}")
        stem = scenario.pending["metadata"]["labels"][v.SCENARIO]
        clock = _Phases()
        try:
            objects = self._create_cluster(scenario, stem)
            clock.mark("cluster")
            names = scenario.node_names
            ungated = probes.ungated(scenario.pending)
            node_probes = [probes.node_probe(ungated, f"{stem}-probe-{i}", n) for i, n in enumerate(names)]
            spreading = probes.spreads_when_filtering(scenario.pending)
            pod_probe = probes.pod_probe(ungated, f"{stem}-probe-all") if spreading else None
            all_probes = [*node_probes, *([pod_probe] if pod_probe else [])]
            self._create_all(all_probes)
            self._wait_attempts([self._key(p) for p in all_probes])
            clock.mark("probes")
            pending = stored(self.api.create(scenario.pending))
            gated_pod, gated = None, None
            if pending["spec"].get("schedulingGates"):
                gated_pod, gated = pending, self._held_by_gates(pending)
                pending = stored(self.api.merge_patch(object_path(pending), {"spec": {"schedulingGates": None}}))
            self._wait_attempts([self._key(pending)], provision=stem if scenario.storage.claims else None)
            clock.mark("pending pod")
            outcome, anomalies = self._outcome(scenario, pending, node_probes, pod_probe)
            outcome.gated = gated
            claims: list[Json] = []
            if scenario.devices.templates:
                pending, claims = self._with_claim(pending, outcome)
            if outcome.node is None and "preemption" in scenario.features and self._nominated(pending):
                anomalies += self._after_preemption(scenario, pending, outcome)
            if outcome.node is not None and scenario.storage.claims:
                outcome.bindings = volumes.bindings(pending, self._claims(stem))
            return UpstreamResult(outcome, [*objects, *claims, pending], anomalies, clock.phases, gated_pod)
        finally:
            # Deleting takes as long as creating: it runs while the next scenario is created,
            # which waits until kube-scheduler has seen these nodes go.
            self._cleaning = self._pool.submit(self._clean, scenario, stem)

    def _create_all(self, manifests: list[Json]) -> list[Json]:
        """Create in parallel (no order matters to the API server); the stored objects, in order."""
        return [stored(obj) for obj in self._pool.map(self.api.create, manifests)]

    def _create_storage(self, storage: volumes.Storage, stem: str) -> list[Json]:
        """Classes and CSINodes, then the PVs, then (once the PV controller has seen every PV) the
        claims: a claim naming a PV the controller does not know yet would be marked Lost. The
        classes and CSINodes as stored."""
        created = self._create_all([*storage.classes, *storage.csi_nodes])
        if storage.volumes:
            self._create_all(storage.volumes)
            self._until(
                lambda: _phases(self._volumes(stem)) == ["Available"] * len(storage.volumes),
                "the PV controller to make every new PV Available",
            )
        self._create_all(storage.claims)
        return created

    def _claims(self, stem: str) -> list[Json]:
        path = f"/api/v1/namespaces/{self.namespace}/persistentvolumeclaims"
        items: list[Json] = self.api.request("GET", path, query={"labelSelector": f"{v.SCENARIO}={stem}"})["items"]
        return [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", **item} for item in items]

    def _volumes(self, stem: str) -> list[Json]:
        query = {"labelSelector": f"{v.SCENARIO}={stem}"}
        items: list[Json] = self.api.request("GET", "/api/v1/persistentvolumes", query=query)["items"]
        return [{"apiVersion": "v1", "kind": "PersistentVolume", **item} for item in items]

    def _settled_storage(self, storage: volumes.Storage, stem: str, others: list[Json]) -> list[Json]:
        """The scenario's claims and PVs once the PV controller has given every PV its phase,
        after ``others`` (its classes and CSINodes)."""
        if not storage.volumes and not storage.claims:
            return others
        found: list[Json] = []
        claimed: list[Json] = []

        def settled() -> bool:
            found[:], claimed[:] = self._volumes(stem), self._claims(stem)
            return _phases(found) == [_expected(pv, "claimRef") for pv in found] and _phases(claimed) == [
                _expected(claim, "volumeName") for claim in claimed
            ]

        self._until(
            settled,
            lambda: (
                "the PV controller to make every PV Available or Bound, and pre-bound claims Bound (now "
                f"{ {o['metadata']['name']: o.get('status', {}).get('phase') for o in [*found, *claimed]} })"
            ),
        )
        by_name = {pv["metadata"]["name"]: pv for pv in found}
        claims = {c["metadata"]["name"]: c for c in claimed}
        return [
            *others,
            *(stored(claims[c["metadata"]["name"]]) for c in storage.claims),
            *(stored(by_name[pv["metadata"]["name"]]) for pv in storage.volumes),
        ]

    def _provision(self, stem: str, done: set[str]) -> None:
        """external-provisioner for the harness's CSI driver: a PV for each claim annotated with a
        selected node (VolumeBinding's PreBind), pre-bound to it."""
        for claim in self._claims(stem):
            annotations = claim["metadata"].get("annotations") or {}
            name = claim["metadata"]["name"]
            if volumes.ANN_SELECTED_NODE not in annotations or claim["spec"].get("volumeName") or name in done:
                continue
            try:
                self.api.create(volumes.provisioned_volume(claim))
            except ApiError as error:
                if error.status != 409:
                    raise
            done.add(name)

    def _with_claim(self, pending: Json, outcome: Outcome) -> tuple[Json, list[Json]]:
        """The pending pod with the claim the resourceclaim controller made for it (its
        ``status.resourceClaimStatuses``, the uid its claim's owner reference names), the claim as
        the controller made it, and the devices allocated to it when the pod was bound."""
        live = self.api.request("GET", object_path(pending))
        name = dra.claim_name(live)
        special = dra.extended_claim_name(live)
        claims = {n: self._resource_claim(n) for n in (name, special) if n is not None}
        if outcome.node is not None:
            outcome.allocation = dra.allocation(live, claims.values())
        if name is None:
            return pending, []
        claim = claims[name]
        with_status = {**pending, "metadata": {**pending["metadata"], "uid": live["metadata"]["uid"]}}
        with_status["status"] = {
            **pending.get("status", {}),
            "resourceClaimStatuses": live["status"]["resourceClaimStatuses"],
        }
        return with_status, [dra.unallocated(stored(claim))]

    def _resource_claim(self, name: str) -> Json:
        path = f"/apis/resource.k8s.io/v1/namespaces/{self.namespace}/resourceclaims/{name}"
        return {"apiVersion": dra.RESOURCE_API, "kind": "ResourceClaim", **self.api.request("GET", path)}

    def _nominated(self, pending: Json) -> bool:
        """Whether the pod's failed first attempt nominated a node (its PostFilter preempted)."""
        log = self._log()
        key = self._key(pending)
        self._until(lambda: key in log.nominated, f"the status update after {key}'s first attempt")
        return bool(log.nominated[key])

    def _after_preemption(self, scenario: Scenario, pending: Json, outcome: Outcome) -> list[str]:
        """The first attempt nominated a node: the nominated node, the pods deleted, and where a
        later attempt bound the pod. The anomalies met on the way."""
        log = self._log()
        key = self._key(pending)
        anomalies: list[str] = []

        def bound() -> str | None:
            return next((a.bound_node for a in log.attempts.get(key, ()) if a.bound_node), None)

        stem = pending["metadata"]["labels"][v.SCENARIO]
        provisioner = self._provisioner(stem if scenario.storage.claims else None)
        parked = self._parked_watch(key, [self._key(p) for p in scenario.pods])

        def settled() -> bool:
            """Bound, or a later attempt found preemption no help (with the victims gone: while
            they terminate, preemption is "not eligible due to a terminating pod")."""
            provisioner()
            later = log.attempts.get(key, [])[1:]
            if not later and not anomalies and parked():
                anomalies.append(self._redeliver_deletions(key, scenario.pods))
            return bound() is not None or any(
                a.fit_error is not None and "preemption:" in a.fit_error and "terminating" not in a.fit_error
                for a in later
            )

        self._until(settled, f"{key} to preempt, then bind or give up")
        outcome.nominated, outcome.final_node = log.nominated[key], bound()
        query = {"labelSelector": f"{v.SCENARIO}={stem}"}
        items = self.api.request("GET", f"/api/v1/namespaces/{self.namespace}/pods", query=query)["items"]
        alive = {p["metadata"]["name"] for p in items if not p["metadata"].get("deletionTimestamp")}
        outcome.victims = sorted(p["metadata"]["name"] for p in scenario.pods if p["metadata"]["name"] not in alive)
        return anomalies

    def _parked_watch(self, key: str, existing: list[str]) -> Callable[[], bool]:
        """A check: whether kube-scheduler has parked the preemptor ``key`` (see
        :meth:`_redeliver_deletions`): DefaultPreemption's PreEnqueue held it, its preemption is
        over, and with its victims (``existing`` pods) gone from the cache for
        :data:`PARKED_AFTER_SECONDS` it has had no new attempt."""
        log = self._log()
        last: list[Any] = [None, time.monotonic()]

        def parked() -> bool:
            state = (key in log.preempted, sum(1 for pod in existing if pod in log.deleted_pods))
            if state != last[0]:
                last[:] = [state, time.monotonic()]
            held = "DefaultPreemption" in log.gated.get(key, ())
            return held and state[0] and state[1] > 0 and time.monotonic() - last[1] > PARKED_AFTER_SECONDS

        return parked

    def _redeliver_deletions(self, key: str, existing: list[Json]) -> str:
        """Give a parked preemptor the victim deletion kube-scheduler v1.36.3 swallowed; the anomaly.

        Its asynchronous preemption deletes every victim but the last in parallel, and keeps the
        preemptor out of the queue until the last one is gone (DefaultPreemption's PreEnqueue,
        framework/preemption/executor.go IsPodRunningPreemption). A deletion that would have
        requeued the preemptor (a victim holding its host port, say) but arrives before that is
        consumed with the preemptor held ("waiting for the preemption for this pod to be
        finished"); when the later deletions do not interest the plugins that rejected it
        (NodePorts for a victim without the port), nothing requeues it again: a pod held by a
        PreEnqueue plugin is moved only by that plugin's events (Pod/Delete), so not even the
        unschedulable pods' periodic flush retries it (backend/queue/scheduling_queue.go
        movePodsToActiveOrBackoffQueue). Upstream knows the family: kubernetes/kubernetes#141694,
        and #142294 activates the preemptor when its preemption ends.

        The next attempt, the one compared, is what kube-scheduler would have done: the harness
        delivers the lost event again, a copy of each deleted victim created on its node and
        deleted, one after the other, until the preemptor is attempted. Each copy is gone from
        the cache before that attempt (kube-scheduler removes a deleted pod from its cache before
        it requeues pods for the deletion, eventhandlers.go deletePodFromCache)."""
        log = self._log()
        deleted = [pod for pod in existing if self._key(pod) in log.deleted_pods]
        copies: list[str] = []
        for victim in deleted:
            if len(log.attempts.get(key, ())) > 1:
                break
            copy = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    **{k: victim["metadata"][k] for k in ("namespace", "labels")},
                    "name": f"{victim['metadata']['name']}{REDELIVERED_SUFFIX}",
                },
                "spec": victim["spec"],
            }
            copy_key = self._key(copy)
            self.api.create(copy)
            self._until(_holds(log.scheduled_pods, copy_key), f"kube-scheduler's cache to add {copy_key}")
            self._delete_now(object_path(copy))
            self._until(_holds(log.deleted_pods, copy_key), f"kube-scheduler's cache to delete {copy_key}")
            copies.append(copy["metadata"]["name"])
        return (
            f"{key}: kube-scheduler parked the preemptor after its preemption (kubernetes#141694 family); "
            f"victim deletions re-delivered with {', '.join(copies) or 'no copy'}"
        )

    def _start_pods(self, pods: list[Json], manifests: list[Json]) -> list[Json]:
        """Give the pods the ``status.startTime`` their manifests ask for (the API server drops a
        created pod's status), and wait until kube-scheduler's cache has seen them so."""
        started = [m for m in manifests if (m.get("status") or {}).get("startTime")]
        if not started:
            return pods

        def patch(manifest: Json) -> Json:
            path = f"{object_path(manifest)}/status"
            return stored(self.api.merge_patch(path, {"status": {"startTime": manifest["status"]["startTime"]}}))

        patched = {p["metadata"]["name"]: p for p in self._pool.map(patch, started)}
        log = self._log()
        keys = {self._key(p) for p in started}
        self._until(lambda: keys <= log.updated_pods, "kube-scheduler's cache to see the pods' start times")
        return [patched.get(p["metadata"]["name"], p) for p in pods]

    def _held_by_gates(self, pending: Json) -> bool:
        """Whether SchedulingGates' PreEnqueue held the pod, with no scheduling attempt."""
        log = self._log()
        key = self._key(pending)
        self._until(
            lambda: "SchedulingGates" in log.gated.get(key, ()) or log.first(key) is not None,
            f"SchedulingGates' PreEnqueue or an attempt for {key}",
        )
        return log.first(key) is None

    def _create_cluster(self, scenario: Scenario, stem: str) -> list[Json]:
        for node in scenario.nodes:
            node["metadata"]["labels"][v.SCENARIO] = stem
        for service in scenario.services:
            service["metadata"].setdefault("labels", {})[v.SCENARIO] = stem
        self._finish_cleaning()
        classes = [*self._create_storage(scenario.storage, stem), *self._create_all(scenario.devices.manifests())]
        created = self._create_all([*scenario.nodes, *scenario.services, *scenario.pods])
        first_pod = len(scenario.nodes) + len(scenario.services)
        created[first_pod:] = self._start_pods(created[first_pod:], scenario.pods)
        objects = [*scenario.priority_classes(), *self._settled_storage(scenario.storage, stem, classes), *created]
        log = self._log()
        wanted = set(scenario.node_names)
        bound = {self._key(p) for p in scenario.pods}
        # The scheduler must hold exactly this scenario's nodes: any other (a previous scenario's
        # still being deleted, or one not made by the harness) would take part in the cycle.
        self._until(
            lambda: log.nodes == wanted and bound <= log.scheduled_pods,
            lambda: (
                f"kube-scheduler's cache to hold exactly the scenario's nodes and pods (it holds nodes "
                f"{sorted(log.nodes - wanted)} too, misses {sorted(wanted - log.nodes)} and pods "
                f"{sorted(bound - log.scheduled_pods)})"
            ),
        )
        return objects

    def _finish_cleaning(self) -> None:
        cleaning, self._cleaning = self._cleaning, None
        if cleaning is not None:
            cleaning.result()

    def _clean(self, scenario: Scenario, stem: str) -> None:
        selector = f"{v.SCENARIO}={stem}"
        base = f"/api/v1/namespaces/{self.namespace}"
        self.api.delete_collection(f"{base}/pods", selector)
        storage = scenario.storage
        if storage.claims or storage.volumes:
            # No pvc-protection or pv-protection controller runs: drop their finalizers first.
            list(self._pool.map(self._force_delete, [*self._claims(stem), *self._volumes(stem)]))
        if scenario.devices.templates:
            # PreBind's resource.kubernetes.io/delete-protection finalizer stays on the claims.
            path = f"/apis/resource.k8s.io/v1/namespaces/{self.namespace}/resourceclaims"
            found = self.api.request("GET", path, query={"labelSelector": selector})["items"]
            if scenario.devices.extended:
                # The special claims the scheduler made carry no scenario label: the pod's name.
                every = self.api.request("GET", path)["items"]
                found += [c for c in every if dra.is_special_claim_of(c, f"{stem}-{PENDING_POD}")]
            claims = [{"apiVersion": dra.RESOURCE_API, "kind": "ResourceClaim", **claim} for claim in found]
            list(self._pool.map(self._force_delete, claims))
        for obj in [*storage.classes, *storage.csi_nodes, *scenario.devices.manifests()]:
            self._delete(object_path(obj))
        for service in scenario.services:
            try:
                self.api.request("DELETE", f"{base}/services/{service['metadata']['name']}")
            except ApiError as error:
                if error.status != 404:
                    raise
        self.api.delete_collection("/api/v1/nodes", selector)

    def _force_delete(self, obj: Json) -> None:
        path = object_path(obj)
        try:
            self.api.merge_patch(path, {"metadata": {"finalizers": None}})
        except ApiError as error:
            if error.status != 404:
                raise
        self._delete(path)

    def _delete_now(self, path: str) -> None:
        """Delete with grace period 0 (a bound pod is otherwise left terminating: no kubelet)."""
        self.api.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})

    def _delete(self, path: str) -> None:
        try:
            self.api.request("DELETE", path)
        except ApiError as error:
            if error.status != 404:
                raise

    # -- reading kube-scheduler ------------------------------------------------------------------
    def _outcome(
        self, scenario: Scenario, pending: Json, node_probes: list[Json], pod_probe: Json | None
    ) -> tuple[Outcome, list[str]]:
        log = self._log()
        key = self._key(pending)
        main = log.first(key)
        if main is None:
            raise HarnessError(f"{key}: no attempt in kube-scheduler's log")
        seen = reading.Observed(
            pod=key,
            nodes=scenario.node_names,
            main=main,
            passed=self.extender.first_call(key),
            node_probes=[log.first(self._key(p)) for p in node_probes],
            pod_probe=log.first(self._key(pod_probe)) if pod_probe else None,
            spreading=pod_probe is not None,
        )
        return reading.read(seen)

    def _wait_attempts(self, keys: list[str], *, provision: str | None = None) -> None:
        """Until each pod's first attempt ended; with ``provision`` (a scenario's stem), play the
        provisioner of that scenario's claims meanwhile."""
        log = self._log()
        provisioner = self._provisioner(provision)

        def done() -> bool:
            provisioner()
            return all((a := log.first(k)) is not None and a.finished for k in keys)

        self._until(done, f"first scheduling attempts of {', '.join(keys)}")

    def _provisioner(self, stem: str | None) -> Callable[[], None]:
        """A step to call while waiting: every so often, provision the scenario's claims."""
        provisioned: set[str] = set()
        last = [0.0]

        def step() -> None:
            if stem is not None and time.monotonic() - last[0] > PROVISION_EVERY_SECONDS:
                last[0] = time.monotonic()
                self._provision(stem, provisioned)

        return step

    def _log(self) -> SchedulerLog:
        if self._tail is None:
            raise HarnessError("kube-scheduler is not started")
        return self._tail.log

    def _until(self, check: Callable[[], bool], what: str | Callable[[], str]) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            if self._tail is not None:
                self._tail.poll()
            if check():
                return
            if time.monotonic() > deadline:
                raise HarnessError(f"timed out waiting for {what if isinstance(what, str) else what()}")
            time.sleep(POLL_SECONDS)

    @staticmethod
    def _key(pod: Json) -> str:
        return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
