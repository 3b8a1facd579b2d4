"""The ``volumes`` feature: StorageClasses, PersistentVolumes, claims and CSINodes for a scenario.

Per scenario (names derived from its stem, so no object is shared with another scenario, and a
previous scenario's PVs never match a claim: each class is the scenario's own):

* three StorageClasses: ``<stem>-wffc`` (WaitForFirstConsumer, provisioned by the harness's CSI
  driver, sometimes with ``allowedTopologies`` on zones), ``<stem>-local`` (WaitForFirstConsumer,
  ``kubernetes.io/no-provisioner``: static PVs only) and ``<stem>-fast`` (Immediate);
* available static PVs in the two WaitForFirstConsumer classes, with node affinity on a hostname
  or a zone (or none) and a zone label (VolumeZone); sizes distinct within a class, because
  upstream's ``FindMatchingVolume`` keeps the smallest match and two PVs of one size would be
  chosen in the informer's (random) order;
* claims: pre-bound pairs (a claim with ``volumeName``, its PV's ``claimRef`` naming it, which the
  PV controller binds: uid, ``pv.kubernetes.io/bind-completed``, phase Bound), unbound
  WaitForFirstConsumer claims (VolumeBinding picks a static PV or provisions on the chosen node)
  and, rarely, an unbound Immediate claim (the pod is then unschedulable: "pod has unbound
  immediate PersistentVolumeClaims");
* CSINodes with an attach limit for the driver on some nodes (NodeVolumeLimits).

Existing pods use some claims (ReadWriteOncePod ones then conflict with the pending pod,
VolumeRestrictions; every CSI volume counts against its node's limit); the pending pod uses one
to three, and rarely a claim that does not exist. Nothing is left for the PV controller to
decide on its own: no unbound PV can match an Immediate claim, so what both schedulers see is
fixed once the controller has moved each PV to Available or Bound.

:func:`bindings` reads, after scheduling, what became of the pending pod's claims (the same on
both sides): the static PV a claim is bound to, or that it was provisioned for a selected node.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.parity_harness import vocabulary as v

Json = dict[str, Any]

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
PROVISIONED_PREFIX = "pvc-"  # external-provisioner names a PV after its claim's uid
ACCESS_MODES = ((v.READ_WRITE_ONCE, 6), (v.READ_WRITE_ONCE_POD, 3), (v.READ_WRITE_MANY, 1))


@dataclass
class Storage:
    classes: list[Json] = field(default_factory=list)
    claims: list[Json] = field(default_factory=list)
    volumes: list[Json] = field(default_factory=list)
    csi_nodes: list[Json] = field(default_factory=list)
    # ReadWriteOncePod claims an existing pod mounts: no second existing pod mounts them (the
    # API would let it, but a later attempt of a preemptor would then never bind).
    single_pod_claims: set[str] = field(default_factory=set)

    def manifests(self) -> list[Json]:
        return [*self.classes, *self.csi_nodes, *self.claims, *self.volumes]


def _gib(size: int) -> str:
    return f"{size}Gi"


def _access_mode(rng: random.Random) -> str:
    return rng.choices([m for m, _ in ACCESS_MODES], [w for _, w in ACCESS_MODES])[0]


def _class(name: str, provisioner: str, mode: str, stem: str, topologies: list[Json] | None = None) -> Json:
    sc: Json = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "labels": {v.SCENARIO: stem}},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        "reclaimPolicy": "Retain",
    }
    if topologies:
        sc["allowedTopologies"] = topologies
    return sc


def _node_affinity(rng: random.Random, nodes: list[Json]) -> tuple[Json | None, str | None]:
    """A PV's node affinity (hostname or zone, or none) and the zone it sits in, if any."""
    node = rng.choice(nodes)
    labels = node["metadata"]["labels"]
    zone = labels.get(v.ZONE) or rng.choice(v.ZONES)
    kind = rng.random()
    if kind < 0.4:
        term = {"key": v.HOSTNAME, "operator": "In", "values": [node["metadata"]["name"]]}
    elif kind < 0.75:
        term = {"key": v.ZONE, "operator": "In", "values": [zone]}
    else:
        return None, zone if rng.random() < 0.5 else None
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [term]}]}}, zone


def _volume(rng: random.Random, name: str, class_name: str, size: int, mode: str, nodes: list[Json], stem: str) -> Json:
    affinity, zone = _node_affinity(rng, nodes)
    labels = {v.SCENARIO: stem}
    if zone is not None:
        labels[v.ZONE] = zone
    spec: Json = {
        "capacity": {"storage": _gib(size)},
        "accessModes": [mode],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": class_name,
        "csi": {"driver": v.CSI_DRIVER, "volumeHandle": name},
    }
    if affinity is not None:
        spec["nodeAffinity"] = affinity
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels}, "spec": spec}


def _claim(name: str, namespace: str, class_name: str, size: int, mode: str, stem: str) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": {v.SCENARIO: stem}},
        "spec": {
            "accessModes": [mode],
            "resources": {"requests": {"storage": _gib(size)}},
            "storageClassName": class_name,
        },
    }


def generate(rng: random.Random, stem: str, namespace: str, nodes: list[Json]) -> Storage:
    storage = Storage()
    wffc, local, fast = f"{stem}-wffc", f"{stem}-local", f"{stem}-fast"
    topologies = None
    if rng.random() < 0.3:
        zones = rng.sample(v.ZONES, rng.choice((1, 2)))
        topologies = [{"matchLabelExpressions": [{"key": v.ZONE, "values": sorted(zones)}]}]
    storage.classes = [
        _class(wffc, v.CSI_DRIVER, "WaitForFirstConsumer", stem, topologies),
        _class(local, NO_PROVISIONER, "WaitForFirstConsumer", stem),
        _class(fast, v.CSI_DRIVER, "Immediate", stem),
    ]
    for class_name in (wffc, local):
        for i, size in enumerate(rng.sample(v.STORAGE_GIB, rng.choice((0, 1, 2, 3)))):
            name = f"{class_name}-pv{i}"
            storage.volumes.append(_volume(rng, name, class_name, size, _access_mode(rng), nodes, stem))
    for i in range(rng.choice((0, 1, 2, 3))):
        class_name, size, mode = rng.choice((fast, local, wffc)), rng.choice(v.STORAGE_GIB), _access_mode(rng)
        claim = _claim(f"{stem}-bound{i}", namespace, class_name, size, mode, stem)
        volume = _volume(rng, f"{stem}-bound{i}-pv", class_name, size, mode, nodes, stem)
        claim["spec"]["volumeName"] = volume["metadata"]["name"]
        volume["spec"]["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": f"{stem}-bound{i}",
        }
        storage.claims.append(claim)
        storage.volumes.append(volume)
    for i in range(rng.choice((0, 1, 2, 3))):
        class_name = rng.choice((wffc, wffc, local))
        storage.claims.append(
            _claim(f"{stem}-claim{i}", namespace, class_name, rng.choice(v.STORAGE_GIB), _access_mode(rng), stem)
        )
    if rng.random() < 0.1:
        storage.claims.append(_claim(f"{stem}-immediate", namespace, fast, 1, v.READ_WRITE_ONCE, stem))
    for node in nodes:
        if rng.random() < 0.5:
            name = node["metadata"]["name"]
            driver = {"name": v.CSI_DRIVER, "nodeID": name, "allocatable": {"count": rng.choice((1, 2, 3))}}
            storage.csi_nodes.append(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": name, "labels": {v.SCENARIO: stem}},
                    "spec": {"drivers": [driver]},
                }
            )
    return storage


def use_claims(rng: random.Random, spec: Json, storage: Storage, stem: str, *, pending: bool) -> None:
    """Mount some of the scenario's claims in a pod spec (the pending pod: one to three, rarely
    one that does not exist)."""
    names = [
        c["metadata"]["name"]
        for c in storage.claims
        if pending or c["metadata"]["name"] not in storage.single_pod_claims
    ]
    if pending:
        count = min(len(names), rng.choice((1, 1, 2, 3)))
    else:
        count = min(len(names), rng.choice((0, 0, 1, 2)))
    chosen = rng.sample(names, count)
    if pending and rng.random() < 0.05:
        chosen.append(f"{stem}-missing")
    if not pending:
        modes = {c["metadata"]["name"]: c["spec"]["accessModes"] for c in storage.claims}
        storage.single_pod_claims.update(name for name in chosen if modes[name] == [v.READ_WRITE_ONCE_POD])
    if chosen:
        volumes = spec.setdefault("volumes", [])
        for i, name in enumerate(chosen):
            volumes.append({"name": f"claim{i}", "persistentVolumeClaim": {"claimName": name}})


def claim_names(pod: Mapping[str, Any]) -> list[str]:
    return [
        vol["persistentVolumeClaim"]["claimName"]
        for vol in (pod.get("spec") or {}).get("volumes") or ()
        if vol.get("persistentVolumeClaim")
    ]


def bindings(pod: Mapping[str, Any], claims: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """What became of each of ``pod``'s claims: ``volume <PV>`` for a static PV,
    ``provisioned on <node>`` for a PV made for its selected node, ``unbound`` otherwise."""
    by_name = {(c.get("metadata") or {}).get("name"): c for c in claims}
    result: dict[str, str] = {}
    for name in claim_names(pod):
        claim = by_name.get(name)
        if claim is None:
            result[name] = "missing"
            continue
        volume = (claim.get("spec") or {}).get("volumeName") or ""
        selected = ((claim.get("metadata") or {}).get("annotations") or {}).get(ANN_SELECTED_NODE)
        if volume.startswith(PROVISIONED_PREFIX):
            result[name] = f"provisioned on {selected}"
        elif volume:
            result[name] = f"volume {volume}"
        else:
            result[name] = "unbound" if selected is None else f"selected {selected}, unbound"
    return result


def provisioned_volume(claim: Mapping[str, Any]) -> Json:
    """The PV the harness's CSI driver makes for a claim annotated with a selected node, as
    external-provisioner makes it (pre-bound to the claim; ``pvc-<claim uid>``); the PV
    controller then binds the two."""
    metadata = claim["metadata"]
    spec = claim["spec"]
    name = f"{PROVISIONED_PREFIX}{metadata['uid']}"
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "labels": dict(metadata.get("labels") or {}),
            "annotations": {"pv.kubernetes.io/provisioned-by": v.CSI_DRIVER},
        },
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": list(spec["accessModes"]),
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": spec["storageClassName"],
            "csi": {"driver": v.CSI_DRIVER, "volumeHandle": name},
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": metadata["namespace"],
                "name": metadata["name"],
                "uid": metadata["uid"],
            },
        },
    }
