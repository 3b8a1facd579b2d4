"""The in-memory cluster: the simulator's twin of the API server and its informers.

It implements the scheduler's :class:`~scheduler_core.scheduler.Backend` and the plugins'
:class:`~scheduler_core.framework.ClusterAPI` over a store of plain objects. A write that the
API server would announce on a watch is fed back to the scheduler at once, as its informer
would: ``bind`` sets ``spec.nodeName`` (and the PodScheduled=True condition, as the binding
subresource does) then calls ``on_pod_update``; ``delete_pod`` calls ``on_pod_delete``;
``set_nominated_node`` updates ``status.nominatedNodeName`` and calls ``on_pod_update``; a
claim written (PreBind, or the resourceclaim controller freeing a deleted pod's claims) calls
``on_object_update("ResourceClaim", ...)``.
``patch_pv_claim_ref`` and ``patch_pvc_selected_node`` (VolumeBinding's PreBind) go to
:class:`~scheduler_core.simulator.volumes.VolumeStore`, which also plays the PV controller and
an external provisioner, so a claim ends bound (and a provisioned PV exists) within the write.
``update_claim_status``, ``update_claim``, ``create_claim`` and ``delete_claim``
(DynamicResources) go to :class:`~scheduler_core.simulator.claims.ClaimStore`, which also plays
the resourceclaim controller (claims of pods' ResourceClaimTemplates,
``status.resourceClaimStatuses``); ``set_extended_resource_claim_status`` writes a pod's
``status.extendedResourceClaimStatus`` and calls ``on_pod_update``.

Status reports (``report_failure``: PodScheduled=False with reason and message, plus a
FailedScheduling event; ``report_scheduled``: a Scheduled event) are stored only: upstream's
scheduler ignores updates of a pending pod that change nothing but its status.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from scheduler_core.apivalidation import pod as apivalidation_pod
from scheduler_core.framework import ClusterAPI, Code, PodInfo, Status, field
from scheduler_core.simulator.claims import ClaimStore
from scheduler_core.simulator.volumes import VolumeStore

POD_SCHEDULED = "PodScheduled"


class PodWatch(Protocol):
    """Who hears of pod and claim writes (the scheduler's event handlers)."""

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None: ...

    def on_pod_delete(self, pod: Mapping[str, Any]) -> None: ...

    def on_object_update(self, kind: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class Event:
    """A core/v1 Event, reduced to what a reader of the simulation needs."""

    type: str  # Normal | Warning
    reason: str
    namespace: str
    name: str
    message: str


class InMemoryCluster:
    def __init__(
        self,
        *,
        nodes: Iterable[Mapping[str, Any]] = (),
        pods: Iterable[Mapping[str, Any]] = (),
        objects: Mapping[str, Iterable[Mapping[str, Any]]] | None = None,
        copy_input: bool = True,
    ) -> None:
        """``copy_input=False`` stores the given objects as they are: for a snapshot nobody else
        holds (every write here makes a new version of an object, never changes one)."""

        def take(obj: dict[str, Any]) -> dict[str, Any]:
            return copy.deepcopy(obj) if copy_input else obj

        self.nodes: dict[str, dict[str, Any]] = {}
        for node in nodes:
            self.nodes[(node.get("metadata") or {}).get("name", "")] = take(dict(node))
        self.pods: dict[str, dict[str, Any]] = {}  # by uid
        for pod in pods:
            self.pods[(pod.get("metadata") or {}).get("uid") or PodInfo(pod).uid] = take(dict(pod))
        self._objects = {kind: [dict(o) for o in objs] for kind, objs in (objects or {}).items()}
        self.volumes = VolumeStore(self._objects)
        self.claims = ClaimStore(self._objects)
        for uid, pod in self.pods.items():
            if not (pod.get("spec") or {}).get("nodeName"):
                self._make_pod_claims(uid, pod)
        self.events: list[Event] = []
        self.deleted: list[tuple[dict[str, Any], str]] = []  # (pod, reason)
        self._watch: PodWatch | None = None

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
            elif nominated_node == "":
                status.pop("nominatedNodeName", None)
            self.pods[pod.uid] = new
        self.events.append(Event("Warning", "FailedScheduling", pod.namespace, pod.name, message))

    def report_scheduled(self, pod: PodInfo, node_name: str) -> None:
        message = f"Successfully assigned {pod.namespace}/{pod.name} to {node_name}"
        self.events.append(Event("Normal", "Scheduled", pod.namespace, pod.name, message))

    # -- ClusterAPI -----------------------------------------------------------------------
    async def bind(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None = None) -> Status | None:
        stored = self.pods.get(pod.uid)
        if stored is None:
            return _not_found(pod)
        current = (stored.get("spec") or {}).get("nodeName")
        if current:
            # The binding subresource's conflict (pkg/registry/core/pod/storage: assignPod).
            return Status(
                Code.ERROR,
                f'Operation cannot be fulfilled on pods/binding "{pod.name}": '
                f'pod {pod.name} is already assigned to node "{current}"',
            )
        new = _with_changes(stored, spec={"nodeName": node_name})
        if annotations:  # the binding's annotations land on the pod, as the binding subresource does
            meta = dict(new.get("metadata") or {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **annotations}
            new["metadata"] = meta
        _set_condition(new["status"], {"type": POD_SCHEDULED, "status": "True"})
        self.pods[pod.uid] = new
        if self._watch is not None:
            self._watch.on_pod_update(stored, new)
        return None

    async def bound_by_extender(self, pod: PodInfo, node_name: str, annotations: Mapping[str, str] | None) -> None:
        """A binder extender bound the pod (in its own cluster): record the placement here."""
        await self.bind(pod, node_name, annotations)

    async def delete_pod(self, pod: PodInfo, reason: str) -> Status | None:
        stored = self.pods.pop(pod.uid, None)
        if stored is None:
            return None  # already gone: what a delete wanted
        self.deleted.append((stored, reason))
        self.claims.release_pod(stored)
        if self._watch is not None:
            self._watch.on_pod_delete(stored)
        return None

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> Status | None:
        stored = self.pods.get(pod.uid)
        if stored is None:
            return _not_found(pod)
        new = _with_changes(stored)
        status = new["status"]
        if node_name:
            status["nominatedNodeName"] = node_name
        else:
            status.pop("nominatedNodeName", None)
        self.pods[pod.uid] = new
        if self._watch is not None:
            self._watch.on_pod_update(stored, new)
        return None

    async def patch_pv_claim_ref(self, pv: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        return self.volumes.patch_pv_claim_ref(pv)

    async def patch_pvc_selected_node(
        self, pvc: Mapping[str, Any], node_name: str
    ) -> tuple[dict[str, Any] | None, Status | None]:
        return self.volumes.patch_pvc_selected_node(pvc, node_name)

    async def update_claim_status(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        return self.claims.update_status(claim)

    async def update_claim(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        return self.claims.update(claim)

    async def create_claim(self, claim: Mapping[str, Any]) -> tuple[dict[str, Any] | None, Status | None]:
        return self.claims.create_generated(claim)

    async def delete_claim(self, claim: Mapping[str, Any]) -> Status | None:
        return self.claims.delete(claim)

    async def set_extended_resource_claim_status(self, pod: PodInfo, value: Mapping[str, Any]) -> Status | None:
        stored = self.pods.get(pod.uid)
        if stored is None:
            return _not_found(pod)
        problems = apivalidation_pod.extended_resource_claim_status(value, stored.get("spec") or {})
        if problems:  # ValidatePodStatusUpdate
            return Status(Code.ERROR, f'Pod "{pod.name}" is invalid: {field.aggregate(problems)}')
        new = _with_changes(stored)
        new["status"]["extendedResourceClaimStatus"] = copy.deepcopy(dict(value))
        self.pods[pod.uid] = new
        if self._watch is not None:
            self._watch.on_pod_update(stored, new)
        return None

    # -- the resourceclaim controller ----------------------------------------------------------------
    def add_pod(self, pod: Mapping[str, Any]) -> dict[str, Any]:
        """Store a new pod as the API server creates it, after which the resourceclaim controller
        makes the claims of its templates; the pod as stored (for the scheduler's informer)."""
        uid = (pod.get("metadata") or {}).get("uid") or PodInfo(pod).uid
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
    def create_object(self, kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store an object of a kind other than Pod and Node; the stored object (PVs, PVCs and
        ResourceClaims get a uid and resourceVersion as their stores give them). The caller
        announces it (``on_object_add``), as the informer would."""
        if kind in ("PersistentVolume", "PersistentVolumeClaim"):
            self._objects.setdefault(kind, [])
            return self.volumes.create(kind, obj)
        if kind == "ResourceClaim":
            self._objects.setdefault(kind, [])
            return self.claims.create(obj)
        stored = dict(obj)
        self._objects.setdefault(kind, []).append(stored)
        return stored

    def replace_object(self, kind: str, obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """Replace the stored object with ``obj``'s namespace and name (an Update); (old, new),
        or None when there is none."""
        key = _key(obj)
        stored = self._objects.get(kind, [])
        for i, old in enumerate(stored):
            if _key(old) == key:
                new = dict(obj)
                new["metadata"] = {**(old.get("metadata") or {}), **(obj.get("metadata") or {})}
                stored[i] = new
                return old, new
        return None

    def delete_object(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        stored = self._objects.get(kind, [])
        for i, old in enumerate(stored):
            if _key(old) == (namespace, name):
                return stored.pop(i)
        return None

    # -- reading back ---------------------------------------------------------------------
    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        for stored in self.pods.values():
            meta = stored.get("metadata") or {}
            if meta.get("name") == name and (meta.get("namespace") or "default") == namespace:
                return stored
        return None

    def events_for(self, namespace: str, name: str) -> list[Event]:
        return [e for e in self.events if e.namespace == namespace and e.name == name]


def _with_changes(stored: Mapping[str, Any], spec: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A new version of a stored object: copies of its top level, spec and status (with
    ``spec`` changes applied), sharing everything deeper, which nobody mutates. A deep copy
    per binding would cost more than the scheduling cycle's own work."""
    new = dict(stored)
    new["spec"] = {**(stored.get("spec") or {}), **(spec or {})}
    new["status"] = dict(stored.get("status") or {})
    return new


def _not_found(pod: PodInfo) -> Status:
    return Status(Code.ERROR, f'pods "{pod.name}" not found')


def _set_condition(status: dict[str, Any], condition: dict[str, str]) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != condition["type"]]
    conditions.append(condition)
    status["conditions"] = conditions


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")
