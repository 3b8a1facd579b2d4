"""Builders of storage objects and a Handle serving them, for the volume plugins' tests
(the shapes of upstream ``volumebinding/test_utils.go``: makePV, makePVC, makePod, makeNode)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scheduler_core.cache.snapshot import Snapshot
from scheduler_core.framework import NodeInfo, SnapshotLister
from scheduler_core.framework.storage import scan

Obj = dict[str, Any]
HOSTNAME = "kubernetes.io/hostname"

_uid = itertools.count(1)


class StorageHandle:
    """The part of the Handle the volume plugins use: objects by kind and the snapshot."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), nodes: Sequence[NodeInfo] = ()) -> None:
        self.by_kind: dict[str, list[Mapping[str, Any]]] = {}
        for obj in objects:
            self.by_kind.setdefault(str(obj["kind"]), []).append(obj)
        self._snapshot = Snapshot(list(nodes))
        self.calls: list[str] = []
        self.tenant_namespace: str | None = None

    def objects(self, kind: str) -> list[Mapping[str, Any]]:
        self.calls.append(kind)
        return list(self.by_kind.get(kind, ()))

    def lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return scan(self.by_kind.get(kind, ()), namespace, name)  # a Get, not a List: not in calls

    def objects_version(self, kind: str) -> int | None:
        return None  # tests edit by_kind in place: uncounted, so plugins keep nothing across cycles

    def snapshot(self) -> SnapshotLister:
        return self._snapshot


def storage_class(
    name: str,
    mode: str | None = "WaitForFirstConsumer",
    provisioner: str = "",
    allowed_topologies: list[dict[str, Any]] | None = None,
) -> Obj:
    sc: Obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name}}
    if mode is not None:
        sc["volumeBindingMode"] = mode
    if provisioner:
        sc["provisioner"] = provisioner
    if allowed_topologies is not None:
        sc["allowedTopologies"] = allowed_topologies
    return sc


def pv(
    name: str,
    class_name: str = "",
    *,
    capacity: str | None = None,
    phase: str | None = None,
    node_affinity: Mapping[str, list[str]] | None = None,
    labels: Mapping[str, str] | None = None,
    claim_ref: Mapping[str, str] | None = None,
    access_modes: list[str] | None = None,
    csi: Mapping[str, str] | None = None,
    source: Mapping[str, Any] | None = None,
    version: str | None = None,
) -> Obj:
    """``makePV(name, class)`` with its ``with*`` options."""
    spec: Obj = {"storageClassName": class_name}
    if capacity is not None:
        spec["capacity"] = {"storage": capacity}
    if node_affinity is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": k, "operator": "In", "values": v} for k, v in node_affinity.items()]}
                ]
            }
        }
    if claim_ref is not None:
        spec["claimRef"] = dict(claim_ref)
    if access_modes is not None:
        spec["accessModes"] = access_modes
    if csi is not None:
        spec["csi"] = dict(csi)
    spec.update(source or {})
    meta: Obj = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    if version is not None:
        meta["resourceVersion"] = version
    obj: Obj = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def pvc(
    name: str,
    class_name: str | None = "",
    *,
    namespace: str = "default",
    bound_pv: str | None = None,
    volume_name: str | None = None,
    request: str | None = None,
    phase: str | None = None,
    access_modes: list[str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner_uid: str | None = None,
    deleting: bool = False,
) -> Obj:
    """``makePVC(name, class)``; ``bound_pv`` is ``withBoundPV`` (volume name + bind-completed)."""
    spec: Obj = {}
    if class_name is not None:
        spec["storageClassName"] = class_name
    meta: Obj = {"name": name, "namespace": namespace, "uid": f"pvc-uid-{next(_uid)}"}
    anns = dict(annotations or {})
    if bound_pv is not None:
        spec["volumeName"] = bound_pv
        anns["pv.kubernetes.io/bind-completed"] = "true"
    if volume_name is not None:
        spec["volumeName"] = volume_name
    if request is not None:
        spec["resources"] = {"requests": {"storage": request}}
    if access_modes is not None:
        spec["accessModes"] = access_modes
    if anns:
        meta["annotations"] = anns
    if owner_uid is not None:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": owner_uid, "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    obj: Obj = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}
    if phase is not None:
        obj["status"] = {"phase": phase}
    return obj


def csi_node(name: str, drivers: Mapping[str, int | None] | None = None, migrated: str | None = None) -> Obj:
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name},
        "spec": {
            "drivers": [
                {"name": d, "nodeID": name, **({"allocatable": {"count": c}} if c is not None else {})}
                for d, c in (drivers or {}).items()
            ]
        },
    }
    if migrated is not None:
        obj["metadata"]["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": migrated}
    return obj


def csi_driver(name: str, storage_capacity: bool | None = None) -> Obj:
    spec: Obj = {}
    if storage_capacity is not None:
        spec["storageCapacity"] = storage_capacity
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def capacity(
    name: str, class_name: str, node_labels: Mapping[str, str] | None, cap: str = "", max_size: str = ""
) -> Obj:
    """``makeCapacity``: a CSIStorageCapacity whose node topology selects ``node_labels``."""
    obj: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "default"},
        "storageClassName": class_name,
        "nodeTopology": {"matchLabels": dict(node_labels)} if node_labels is not None else {},
    }
    if cap:
        obj["capacity"] = cap
    if max_size:
        obj["maximumVolumeSize"] = max_size
    return obj


def claim_volume(claim: str, name: str = "") -> Obj:
    return {"name": name or claim, "persistentVolumeClaim": {"claimName": claim}}
