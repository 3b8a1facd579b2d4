"""The in-memory cluster's PV and PVC writes, with the PV controller and a provisioner behind them.

VolumeBinding's PreBind writes a PV's ``claimRef`` (a static binding) or a claim's
``volume.kubernetes.io/selected-node`` annotation (a claim to provision) and waits for
kube-controller-manager's ``persistentvolume-binder`` and an external provisioner to finish.
In ``simulate`` nobody else runs, so :class:`VolumeStore` plays their parts at once, within the
write:

* a PV pre-bound to a claim is bound: the PV's phase becomes ``Bound``; the claim gets
  ``spec.volumeName``, the ``pv.kubernetes.io/bind-completed`` and
  ``pv.kubernetes.io/bound-by-controller`` annotations and a ``Bound`` status with the PV's
  capacity and access modes (``pkg/controller/volume/persistentvolume/pv_controller.go``
  ``bind``);
* a claim annotated with a selected node whose StorageClass names a provisioner (other than
  ``kubernetes.io/no-provisioner``) gets a new PV ``pvc-<claim uid>`` of the requested size,
  the class's reclaim policy (``Delete`` by default) and the claim's access and volume modes,
  pre-bound to the claim and annotated ``pv.kubernetes.io/provisioned-by``, as
  external-provisioner creates it; the PV controller then binds both as above. The PV carries
  no node affinity (a real CSI driver would add its topology).

Writes follow the API server (:mod:`.apiserver`): a ``resourceVersion`` that is not the stored
one is a conflict with its message; a patch merges; every write gives the object a new
resourceVersion. Objects loaded without a uid or resourceVersion get one, as the API server
gives them on create.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from scheduler_core.framework import Manifest, manifest
from scheduler_core.framework.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    NOT_SUPPORTED_PROVISIONER,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_BOUND,
    access_modes,
    claim_class,
    name_of,
    namespace_of,
    spec,
)
from scheduler_core.framework.writes import Write, Written
from scheduler_core.simulator import apiserver
from scheduler_core.simulator.defaulting import generated_uid
from scheduler_core.simulator.objects import ObjectTable

ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
Object = dict[str, Any]


class VolumeStore:
    """PVs and PVCs (and the StorageClasses they name) of the in-memory cluster, shared with it."""

    def __init__(self, objects: dict[str, ObjectTable]) -> None:
        self._objects = objects
        self._versions = itertools.count(1)
        for kind in (PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM):
            objects[kind] = ObjectTable(kind, [self._created(kind, obj) for obj in objects.get(kind, ())])

    def _created(self, kind: str, obj: Object) -> Object:
        new = copy.deepcopy(obj)
        metadata = new.setdefault("metadata", {})
        namespace = namespace_of(new) if kind == PERSISTENT_VOLUME_CLAIM else ""
        metadata.setdefault("uid", generated_uid(kind, namespace, name_of(new)))
        metadata.setdefault("resourceVersion", str(next(self._versions)))
        return new

    def create(self, kind: str, obj: Manifest) -> Object:
        """Add a PV or PVC as the API server creates it (uid, resourceVersion)."""
        return self._store(kind, self._created(kind, dict(obj)))

    # -- reads -------------------------------------------------------------------------------------
    def find(self, kind: str, name: str, namespace: str = "") -> Object | None:
        table = self._objects.get(kind)
        return table.get(namespace, name) if table is not None else None

    def _store(self, kind: str, new: Object) -> Object:
        """Replace (or add) ``new`` under a fresh resourceVersion; the old dict is not mutated."""
        new["metadata"] = {**new.get("metadata", {}), "resourceVersion": str(next(self._versions))}
        self._objects[kind].put(new)
        return new

    # -- the ClusterAPI writes ---------------------------------------------------------------------
    def patch(self, call: Write) -> Written:
        """A patch of a PV (VolumeBinding's ``claimRef``) or a PVC (its selected-node annotation),
        then what the PV controller and the provisioner do about it."""
        kind = call.resource.kind
        stored = self.find(kind, call.name, call.namespace or "default")
        problem = apiserver.check(call, stored)
        if problem is not None or stored is None:
            return None, problem
        written = self._store(kind, apiserver.merge_patch(stored, call.obj))
        if kind == PERSISTENT_VOLUME:
            self._sync_volume(written)
        else:
            self._provision(written)
        return written, None

    # -- the controllers ---------------------------------------------------------------------------
    def _provision(self, claim: Object) -> None:
        """external-provisioner: a PV for a claim whose class has a provisioner."""
        if spec(claim).get("volumeName"):
            return
        sc = self.find(STORAGE_CLASS, claim_class(claim))
        provisioner = str((sc or {}).get("provisioner") or "")
        if sc is None or not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            return
        metadata = manifest.meta(claim)
        name = f"pvc-{metadata.get('uid')}"
        claim_spec = spec(claim)
        pv: Object = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "uid": generated_uid(PERSISTENT_VOLUME, "", name),
                "annotations": {ANN_PROVISIONED_BY: provisioner},
            },
            "spec": {
                "capacity": {"storage": ((claim_spec.get("resources") or {}).get("requests") or {}).get("storage")},
                "accessModes": access_modes(claim),
                "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
                "storageClassName": claim_class(claim),
                "volumeMode": claim_spec.get("volumeMode") or "Filesystem",
                "csi": {"driver": provisioner, "volumeHandle": name},
                "claimRef": _claim_ref(claim),
            },
            "status": {"phase": "Pending"},
        }
        self._sync_volume(self._store(PERSISTENT_VOLUME, pv))

    def _sync_volume(self, pv: Object) -> None:
        """The PV controller's ``syncVolume`` for a PV pre-bound to a claim: bind both."""
        ref = spec(pv).get("claimRef") or {}
        claim = self.find(PERSISTENT_VOLUME_CLAIM, ref.get("name") or "", ref.get("namespace") or "default")
        if claim is None or (ref.get("uid") and ref.get("uid") != manifest.meta(claim).get("uid")):
            return
        if spec(claim).get("volumeName") not in (None, "", name_of(pv)):
            return  # the claim is bound to another PV
        bound_pv = copy.deepcopy(pv)
        bound_pv.setdefault("spec", {})["claimRef"] = _claim_ref(claim)
        bound_pv["status"] = {"phase": VOLUME_BOUND}
        self._store(PERSISTENT_VOLUME, bound_pv)
        bound_claim = copy.deepcopy(claim)
        bound_claim.setdefault("spec", {})["volumeName"] = name_of(pv)
        annotations = _annotations(bound_claim)
        annotations[ANN_BIND_COMPLETED] = "yes"
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        bound_claim["status"] = {
            "phase": VOLUME_BOUND,
            "accessModes": access_modes(pv),
            "capacity": dict(spec(pv).get("capacity") or {}),
        }
        self._store(PERSISTENT_VOLUME_CLAIM, bound_claim)


def _annotations(obj: Object) -> dict[str, str]:
    metadata = obj.setdefault("metadata", {})
    annotations: dict[str, str] = metadata.setdefault("annotations", {})
    return annotations


def _claim_ref(claim: Manifest) -> dict[str, Any]:
    metadata = manifest.meta(claim)
    return {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": namespace_of(claim),
        "name": name_of(claim),
        "uid": metadata.get("uid") or "",
        "resourceVersion": metadata.get("resourceVersion") or "",
    }
