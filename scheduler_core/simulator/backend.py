"""The in-memory cluster: the simulator's twin of the API server and its informers.

It implements the scheduler's :class:`~scheduler_core.scheduler.Backend` and the plugins'
:class:`~scheduler_core.framework.ClusterAPI` over a store of plain objects. A write that the
API server would announce on a watch is fed back to the scheduler at once, as its informer
would: ``bind`` sets ``spec.nodeName`` (and the PodScheduled=True condition, as the binding
subresource does) then calls ``on_pod_update``. Every other write goes to ``write``, which hands
it to the store of its resource (a write no plugin of ours makes is refused):

* pods: a status patch (``nominatedNodeName``, ``extendedResourceClaimStatus`` validated as
  ``ValidatePodStatusUpdate``, conditions) calls ``on_pod_update``; a delete calls
  ``on_pod_delete`` and is recorded with its reason in :attr:`InMemoryCluster.deleted` (the
  DisruptionTarget condition the operator writes first is not stored);
* PVs and PVCs (VolumeBinding's PreBind patches): :class:`~scheduler_core.simulator.volumes.VolumeStore`,
  which also plays the PV controller and an external provisioner, so a claim ends bound (and a
  provisioned PV exists) within the write;
* ResourceClaims (DynamicResources: updates of claims and their status, creates and deletes):
  :class:`~scheduler_core.simulator.claims.ClaimStore`, which also plays the resourceclaim
  controller (claims of pods' ResourceClaimTemplates, ``status.resourceClaimStatuses``, the
  claims of a deleted pod); a claim written calls ``on_object_update("ResourceClaim", ...)``.

What a refused write answers is the API server's (:mod:`.apiserver`).

Status reports (``report_failure``: PodScheduled=False with reason and message, plus a
FailedScheduling event; ``report_scheduled``: a Scheduled event) are stored only: upstream's
scheduler ignores updates of a pending pod that change nothing but its status.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from scheduler_core.apivalidation import pod as apivalidation_pod
from scheduler_core.framework import ClusterAPI, Manifest, PodInfo, Status, field, manifest
from scheduler_core.framework.writes import (
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    PODS,
    RESOURCE_CLAIMS,
    STATUS,
    Resource,
    Verb,
    Write,
    Written,
)
from scheduler_core.simulator import apiserver
from scheduler_core.simulator.claims import ClaimStore
from scheduler_core.simulator.objects import ObjectTable
from scheduler_core.simulator.volumes import VolumeStore

POD_SCHEDULED = "PodScheduled"


class PodWatch(Protocol):
    """Who hears of pod and claim writes (the scheduler's event handlers)."""

    def on_pod_update(self, old: Manifest, new: Manifest) -> None: ...

    def on_pod_delete(self, pod: Manifest) -> None: ...

    def on_object_update(self, kind: str, old: Manifest, new: Manifest) -> None: ...


@dataclass(frozen=True, slots=True)
class Event:
    """A core/v1 Event, reduced to what a reader of the simulation needs."""

    type: str  # Normal | Warning
    reason: str
    namespace: str
    name: str
    message: str


class InMemoryCluster(ClusterAPI):
    def __init__(
        self,
        *,
        nodes: Iterable[Manifest] = (),
        pods: Iterable[Manifest] = (),
        objects: Mapping[str, Iterable[Manifest]] | None = None,
        copy_input: bool = True,
    ) -> None:
        """``copy_input=False`` stores the given objects as they are: for a snapshot nobody else
        holds (every write here makes a new version of an object, never changes one)."""

        def take(obj: dict[str, Any]) -> dict[str, Any]:
            return copy.deepcopy(obj) if copy_input else obj

        self.nodes: dict[str, dict[str, Any]] = {}
        for node in nodes:
            self.nodes[manifest.meta(node).get("name", "")] = take(dict(node))
        self.pods: dict[str, dict[str, Any]] = {}  # by uid
        for pod in pods:
            self.pods[manifest.meta(pod).get("uid") or PodInfo(pod).uid] = take(dict(pod))
        self._objects: dict[str, ObjectTable] = {
            kind: ObjectTable(kind, (dict(o) for o in objs)) for kind, objs in (objects or {}).items()
        }
        self.volumes = VolumeStore(self._objects)
        self.claims = ClaimStore(self._objects)
        for uid, pod in self.pods.items():
            if not manifest.spec(pod).get("nodeName"):
                self._make_pod_claims(uid, pod)
        self.events: list[Event] = []
        self.deleted: list[tuple[dict[str, Any], str]] = []  # (pod, reason)
        # uid -> the node its last failed attempt nominated it to (preemption's): kept after the
        # binding clears the pod's own status.nominatedNodeName, for explain.
        self.nominated_nodes: dict[str, str] = {}
        self._watch: PodWatch | None = None
        self._writes: dict[tuple[Verb, Resource, str], Callable[[Write], Written]] = {
            (Verb.PATCH, PODS, STATUS): self._patch_pod_status,
            (Verb.DELETE, PODS, ""): self._delete_pod,
            (Verb.PATCH, PERSISTENT_VOLUMES, ""): self.volumes.patch,
            (Verb.PATCH, PERSISTENT_VOLUME_CLAIMS, ""): self.volumes.patch,
            (Verb.GET, RESOURCE_CLAIMS, ""): self.claims.get,
            (Verb.CREATE, RESOURCE_CLAIMS, ""): self.claims.post,
            (Verb.UPDATE, RESOURCE_CLAIMS, ""): self.claims.put,
            (Verb.UPDATE, RESOURCE_CLAIMS, STATUS): self.claims.put_status,
            (Verb.DELETE, RESOURCE_CLAIMS, ""): self.claims.delete,
        }

    def watch(self, watcher: PodWatch) -> None:
        self._watch = watcher
        self.claims.on_update = lambda old, new: watcher.on_object_update("ResourceClaim", old, new)

    # -- Backend --------------------------------------------------------------------------
    @property
    def api(self) -> ClusterAPI:
        return self

    def objects(self, kind: str) -> Iterable[Any]:
        if kind == "Pod":
            return list(self.pods.values())
        if kind == "Node":
            return list(self.nodes.values())
        return list(self._objects.get(kind, ()))

    def lookup(self, kind: str, namespace: str, name: str) -> Any | None:
        if kind == "Pod":
            return self.pod(namespace, name)
        if kind == "Node":
            return self.nodes.get(name)
        table = self._objects.get(kind)
        return table.get(namespace, name) if table is not None else None

    def objects_version(self, kind: str) -> int | None:
        if kind in ("Pod", "Node"):
            return None  # not counted: the scheduler follows them by their events
        table = self._objects.get(kind)
        return table.version if table is not None else 0  # a table made later starts above 0

    def report_failure(self, pod: PodInfo, reason: str, message: str, nominated_node: str | None) -> None:
        stored = self.pods.get(pod.uid)
        if stored is not None:
            # A new version, as a status patch writes; the scheduler ignores status-only updates
            # of pending pods (its nominator was told directly), so none is fed back.
            new = _with_changes(stored)
            status = new["status"]
            _set_condition(status, {"type": POD_SCHEDULED, "status": "False", "reason": reason, "message": message})
            if nominated_node:
                status["nominatedNodeName"] = nominated_node
                self.nominated_nodes[pod.uid] = nominated_node
            elif nominated_node == "":
                status.pop("nominatedNodeName", None)
                self.nominated_nodes.pop(pod.uid, None)
            self.pods[pod.uid] = new
        self.events.append(Event("Warning", "FailedScheduling", pod.namespace, pod.name, message))

    def report_scheduled(self, pod: PodInfo, node_name: str) -> None:
        message = f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}"
        self.events.append(Event("Normal", "Scheduled", pod.namespace, pod.name, message))

    # -- ClusterAPI -----------------------------------------------------------------------
    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        stored = self.pods.get(pod.uid)
        if stored is None:
            return apiserver.not_found(PODS, pod.name)
        current = manifest.spec(stored).get("nodeName")
        if current:
            # The binding subresource's conflict (pkg/registry/core/pod/storage: assignPod).
            return apiserver.conflict(
                "pods/binding", pod.name, f'pod {pod.name} is already assigned to node "{current}"'
            )
        new = _with_changes(stored, spec={"nodeName": node_name})
        if annotations:  # the binding's annotations land on the pod, as the binding subresource does
            meta = dict(manifest.meta(new))
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
            new["metadata"] = meta
        _set_condition(new["status"], {"type": POD_SCHEDULED, "status": "True"})
        # The binding ends the nomination (ClearingNominatedNodeNameAfterBinding, beta and on
        # by default since v1.35: v1.36.3 pkg/registry/core/pod/storage/storage.go assignPod).
        new["status"].pop("nominatedNodeName", None)
        self.pods[pod.uid] = new
        if self._watch is not None:
            self._watch.on_pod_update(stored, new)
        return None

    async def bound_by_extender(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None) -> None:
        """A binder extender bound the pod (in its own cluster): record the placement here."""
        await self.bind(pod, node_name, annotations)

    async def write(self, call: Write) -> Written:
        """The write's answer from the store of its resource, which also plays the controllers
        acting on it (module doc)."""
        handler = self._writes.get((call.verb, call.resource, call.subresource))
        return handler(call) if handler is not None else (None, apiserver.not_allowed(call))

    def _stored_pod(self, call: Write) -> tuple[str, dict[str, Any]] | None:
        """The pod a write names and its key: by its UID precondition (the pods are kept by UID;
        a pod re-created under the name is not found), else by namespace and name."""
        uid = call.precondition.uid if call.precondition is not None else None
        if uid:
            stored = self.pods.get(uid)
            return None if stored is None else (uid, stored)
        wanted = (call.namespace or "default", call.name)
        for key, stored in self.pods.items():
            if (manifest.namespace_of(stored), manifest.name_of(stored)) == wanted:
                return key, stored
        return None

    def _patch_pod_status(self, call: Write) -> Written:
        """A pod status patch: nominatedNodeName set or cleared, extendedResourceClaimStatus
        (validated, ``ValidatePodStatusUpdate``), conditions merged by type; the watcher hears."""
        found = self._stored_pod(call)
        if found is None:
            return None, apiserver.not_found(PODS, call.name)
        key, stored = found
        patch = call.obj.get(STATUS) or {}
        claims = patch.get("extendedResourceClaimStatus")
        if claims is not None:
            problems = apivalidation_pod.extended_resource_claim_status(claims, manifest.spec(stored))
            if problems:
                return None, apiserver.invalid("Pod", call.name, field.aggregate(problems))
        new = _with_changes(stored)
        status = new["status"]
        for name, value in patch.items():
            if value is None:
                status.pop(name, None)
            elif name == "conditions":
                for condition in value:
                    _set_condition(status, dict(condition))
            else:
                status[name] = copy.deepcopy(value)
        self.pods[key] = new
        if self._watch is not None:
            self._watch.on_pod_update(stored, new)
        return new, None

    def _delete_pod(self, call: Write) -> Written:
        """A pod delete, recorded with its reason; the resourceclaim controller frees its claims."""
        found = self._stored_pod(call)
        if found is None:
            return None, apiserver.not_found(PODS, call.name)
        key, stored = found
        del self.pods[key]
        self.deleted.append((stored, call.reason))
        self.claims.release_pod(stored)
        if self._watch is not None:
            self._watch.on_pod_delete(stored)
        return stored, None

    # -- the resourceclaim controller ----------------------------------------------------------------
    def add_pod(self, pod: Manifest) -> dict[str, Any]:
        """Store a new pod as the API server creates it, after which the resourceclaim controller
        makes the claims of its templates; the pod as stored (for the scheduler's informer)."""
        uid = manifest.meta(pod).get("uid") or PodInfo(pod).uid
        self.pods[uid] = dict(pod)
        self._make_pod_claims(uid, self.pods[uid])
        return self.pods[uid]

    def _make_pod_claims(self, uid: str, pod: dict[str, Any]) -> None:
        statuses = self.claims.claims_for_pod(pod)
        if statuses:
            new = _with_changes(pod)
            new["status"]["resourceClaimStatuses"] = statuses
            self.pods[uid] = new

    # -- other kinds, as a client creates them (bench/scheduler_perf's createAny, updateAny) --
    def create_object(self, kind: str, obj: Manifest) -> dict[str, Any]:
        """Store an object of a kind other than Pod and Node; the stored object (PVs, PVCs and
        ResourceClaims get a uid and resourceVersion as their stores give them). The caller
        announces it (``on_object_add``), as the informer would."""
        if kind in ("PersistentVolume", "PersistentVolumeClaim"):
            return self.volumes.create(kind, obj)
        if kind == "ResourceClaim":
            return self.claims.create(obj)
        stored = dict(obj)
        self._table(kind).put(stored)
        return stored

    def _table(self, kind: str) -> ObjectTable:
        table = self._objects.get(kind)
        if table is None:
            table = self._objects[kind] = ObjectTable(kind)
        return table

    def replace_object(self, kind: str, obj: Manifest) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Replace the stored object with ``obj``'s namespace and name (an Update); (old, new),
        or None when there is none."""
        table = self._table(kind)
        old = table.get(*table.key(obj))
        if old is None:
            return None
        new = dict(obj)
        new["metadata"] = {**manifest.meta(old), **manifest.meta(obj)}
        table.put(new)
        return old, new

    def delete_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        table = self._objects.get(kind)
        return table.pop(namespace, name) if table is not None else None

    # -- reading back ---------------------------------------------------------------------
    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        for stored in self.pods.values():
            if manifest.name_of(stored) == name and manifest.namespace_of(stored) == namespace:
                return stored
        return None

    def events_for(self, namespace: str, name: str) -> list[Event]:
        return [e for e in self.events if e.namespace == namespace and e.name == name]


def _with_changes(stored: Manifest, spec: Manifest | None = None) -> dict[str, Any]:
    """A new version of a stored object: copies of its top level, spec and status (with
    ``spec`` changes applied), sharing everything deeper, which nobody mutates. A deep copy
    per binding would cost more than the scheduling cycle's own work."""
    new = dict(stored)
    new["spec"] = {**manifest.spec(stored), **(spec or {})}
    new["status"] = dict(manifest.status(stored))
    return new


def _set_condition(status: dict[str, Any], condition: dict[str, str]) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]]
    conditions.append(condition)
    status["conditions"] = conditions
