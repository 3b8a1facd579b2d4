"""The volume binder: which of a pod's claims are bound, and how a node can satisfy the rest.

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/binder.go`` (v1.36) with
``FindMatchingVolume``/``CheckAccessModes``/``CheckVolumeModeMismatches``/``GetBindVolumeToClaim``
from ``k8s.io/component-helpers/storage/volume/pv_helpers.go``.

* :func:`get_pod_volume_claims` sorts the pod's claims into bound, unbound with delayed binding
  (WaitForFirstConsumer, no volume name yet) and unbound immediate (which the PV controller
  should already have bound), and lists the PVs of each delayed claim's class.
* :func:`find_pod_volumes` judges one node: bound claims need their PV's node affinity to
  match; delayed claims need an available matching PV (smallest that fits, its node affinity
  matching) or dynamic provisioning by their class (a provisioner other than
  ``kubernetes.io/no-provisioner``, allowed topologies matching, CSI storage capacity where
  the driver opts in); a claim with a selected node fits only that node.
* :meth:`Binder.assume_pod_volumes` and :meth:`Binder.revert_assumed_pod_volumes` are Reserve
  and Unreserve over the :class:`AssumeCache`.

Not carried over: translating in-tree PVs to CSI before the node-affinity check (CSI migration
rewrites the affinity of some in-tree PVs; here their own affinity is checked).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from scheduler_core.framework import PodInfo, manifest, value
from scheduler_core.framework import labels as label_selector
from scheduler_core.framework.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
    NOT_SUPPORTED_PROVISIONER,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    VOLUME_AVAILABLE,
    Manifest,
    NotFound,
    StorageView,
    access_modes,
    annotations_of,
    binding_mode,
    claim_class,
    claim_name,
    claim_request,
    is_pvc_fully_bound,
    is_volume_bound_to_claim,
    labels_of,
    match_topology_selector_terms,
    meta,
    name_of,
    namespace_of,
    pod_volumes,
    spec,
    volume_capacity,
    volume_class,
    volume_is_for_pod,
    volume_phase,
)
from scheduler_core.plugins.volumebinding.assume_cache import AssumeCache, pv_key, pvc_key, resource_version

# Conflict reasons, in the order FindPodVolumes reports them.
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

FILESYSTEM = "Filesystem"


class BinderError(Exception):
    """An internal error of the binder (upstream returns it as an Error status)."""


@dataclass(slots=True)
class PodVolumeClaims:
    bound_claims: list[Manifest] = field(default_factory=list)
    unbound_claims_delay_binding: list[Manifest] = field(default_factory=list)
    unbound_claims_immediate: list[Manifest] = field(default_factory=list)
    # Storage class name -> the PVs of that class (assumed versions included).
    unbound_volumes_delay_binding: dict[str, list[Manifest]] = field(default_factory=dict)
    # The PV of each bound claim (None: not found), read at the first Filter of the cycle
    bound_pvs: list[Manifest | None] | None = None


@dataclass(slots=True)
class BindingInfo:
    pv: Manifest
    pvc: Manifest


@dataclass(slots=True)
class DynamicProvision:
    pvc: Manifest
    node_capacity: Manifest | None = None


@dataclass(slots=True)
class PodVolumes:
    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[DynamicProvision] = field(default_factory=list)


class Binder:
    """The binder of one plugin instance: the assume caches outlive cycles, the view does not."""

    def __init__(self) -> None:
        self.pv_cache = AssumeCache(pv_key)
        self.pvc_cache = AssumeCache(pvc_key)

    # -- reads with assumptions applied ------------------------------------------------------
    def pvc(self, view: StorageView, namespace: str, name: str) -> Manifest:
        return self.pvc_cache.get(view.pvc(namespace, name))

    def pv(self, view: StorageView, name: str) -> Manifest:
        return self.pv_cache.get(view.pv(name))

    def list_pvs(self, view: StorageView, class_name: str) -> list[Manifest]:
        # Indexed by the stored object's class, which the scheduler never changes.
        return [self.pv_cache.get(pv) for pv in view.all(PERSISTENT_VOLUME) if volume_class(pv) == class_name]

    def expire(self, view: StorageView) -> None:
        if len(self.pv_cache):
            self.pv_cache.expire(view.all(PERSISTENT_VOLUME))
        if len(self.pvc_cache):
            self.pvc_cache.expire(view.all(PERSISTENT_VOLUME_CLAIM))

    # -- PreFilter -------------------------------------------------------------------------------
    def _is_volume_bound(self, view: StorageView, pod: PodInfo, volume: Manifest) -> tuple[bool, Manifest | None]:
        """``isVolumeBound``: (fully bound, the claim); non-claim volumes count as bound."""
        name, ephemeral = claim_name(pod, volume)
        if name is None:
            return True, None
        try:
            pvc = self.pvc(view, pod.namespace, name)
        except NotFound as error:
            raise BinderError(f'error getting PVC "{pod.namespace}/{name}": {error}') from None
        if ephemeral:
            problem = volume_is_for_pod(pod, pvc)
            if problem is not None:
                raise BinderError(problem)
        return is_pvc_fully_bound(pvc), pvc

    def get_pod_volume_claims(self, view: StorageView, pod: PodInfo) -> PodVolumeClaims:
        claims = PodVolumeClaims()
        for volume in pod_volumes(pod):
            bound, pvc = self._is_volume_bound(view, pod, volume)
            if pvc is None:
                continue
            if bound:
                claims.bound_claims.append(pvc)
            elif _is_delay_binding_mode(view, pvc) and not spec(pvc).get("volumeName"):
                claims.unbound_claims_delay_binding.append(pvc)
            else:
                # Immediate binding (or pre-bound): the PV controller binds these, not us.
                claims.unbound_claims_immediate.append(pvc)
        for pvc in claims.unbound_claims_delay_binding:
            class_name = claim_class(pvc)
            claims.unbound_volumes_delay_binding[class_name] = self.list_pvs(view, class_name)
        return claims

    # -- Filter ----------------------------------------------------------------------------------
    def find_pod_volumes(
        self, view: StorageView, claims: PodVolumeClaims, node_name: str, node_labels: Mapping[str, str]
    ) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: the node's bindings and provisions, and the conflict reasons."""
        volumes = PodVolumes()
        bound_satisfied = bound_pvs_found = unbound_satisfied = sufficient_storage = True
        if claims.bound_claims:
            bound_satisfied, bound_pvs_found = self._check_bound_claims(view, claims, node_labels)
        if claims.unbound_claims_delay_binding:
            unbound_satisfied, sufficient_storage = self._find_unbound(view, claims, node_name, node_labels, volumes)
        reasons = []
        if not bound_satisfied:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_satisfied:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not sufficient_storage:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not bound_pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return volumes, reasons

    def _find_unbound(
        self,
        view: StorageView,
        claims: PodVolumeClaims,
        node_name: str,
        node_labels: Mapping[str, str],
        volumes: PodVolumes,
    ) -> tuple[bool, bool]:
        to_match: list[Manifest] = []
        to_provision: list[Manifest] = []
        for claim in claims.unbound_claims_delay_binding:
            ann = annotations_of(claim)
            if ANN_SELECTED_NODE in ann:
                if ann[ANN_SELECTED_NODE] != node_name:
                    return False, True  # provisioning already started for another node
                to_provision.append(claim)
            else:
                to_match.append(claim)
        satisfied = sufficient = True
        if to_match:
            satisfied, volumes.static_bindings, unmatched = _find_matching_volumes(
                view, to_match, claims.unbound_volumes_delay_binding, node_labels
            )
            to_provision.extend(unmatched)
        if to_provision:
            satisfied, sufficient, volumes.dynamic_provisions = _check_volume_provisions(
                view, to_provision, node_labels
            )
        return satisfied, sufficient

    def _check_bound_claims(
        self, view: StorageView, claims: PodVolumeClaims, node_labels: Mapping[str, str]
    ) -> tuple[bool, bool]:
        """``checkBoundClaims``: (node affinity satisfied, all PVs found). The PVs are read once a
        cycle: neither the stored objects nor the assumptions change between its Filters."""
        if claims.bound_pvs is None:
            claims.bound_pvs = [
                self._pv_or_none(view, str(spec(pvc).get("volumeName") or "")) for pvc in claims.bound_claims
            ]
        for pv in claims.bound_pvs:
            if pv is None:
                return True, False
            if not view.check_node_affinity(pv, node_labels):
                return False, True
        return True, True

    def _pv_or_none(self, view: StorageView, name: str) -> Manifest | None:
        try:
            return self.pv(view, name)
        except NotFound:
            return None

    # -- Reserve / Unreserve -------------------------------------------------------------------
    def are_pod_volumes_bound(self, view: StorageView, pod: PodInfo) -> bool:
        for volume in pod_volumes(pod):
            try:
                bound, _ = self._is_volume_bound(view, pod, volume)
            except BinderError:
                return False
            if not bound:
                return False
        return True

    def assume_pod_volumes(self, view: StorageView, pod: PodInfo, node_name: str, volumes: PodVolumes) -> bool:
        """``AssumePodVolumes``: True when every claim is already bound (nothing to do). Raises
        BinderError when an object changed since it was read."""
        if self.are_pod_volumes_bound(view, pod):
            return True
        new_bindings: list[BindingInfo] = []
        for binding in volumes.static_bindings:
            new_pv, dirty = _bind_volume_to_claim(binding.pv, binding.pvc)
            if dirty:
                error = self.pv_cache.assume(new_pv, view.find(PERSISTENT_VOLUME, pv_key(new_pv)))
                if error is not None:
                    self.revert(new_bindings, [])
                    raise BinderError(error)
            new_bindings.append(BindingInfo(new_pv, binding.pvc))
        new_provisions: list[DynamicProvision] = []
        for provision in volumes.dynamic_provisions:
            claim = copy.deepcopy(dict(provision.pvc))
            _writable_annotations(claim)[ANN_SELECTED_NODE] = node_name
            stored = view.find(PERSISTENT_VOLUME_CLAIM, name_of(claim), namespace_of(claim))
            error = self.pvc_cache.assume(claim, stored)
            if error is not None:
                self.revert(new_bindings, new_provisions)
                raise BinderError(error)
            new_provisions.append(DynamicProvision(claim))
        volumes.static_bindings = new_bindings
        volumes.dynamic_provisions = new_provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        self.revert(volumes.static_bindings, volumes.dynamic_provisions)

    def revert(self, bindings: Sequence[BindingInfo], provisions: Sequence[DynamicProvision]) -> None:
        for binding in bindings:
            self.pv_cache.restore(binding.pv)
        for provision in provisions:
            self.pvc_cache.restore(provision.pvc)


def _is_delay_binding_mode(view: StorageView, pvc: Manifest) -> bool:
    """``IsDelayBindingMode``: a missing class means immediate binding."""
    class_name = claim_class(pvc)
    if not class_name:
        return False
    try:
        sc = view.storage_class(class_name)
    except NotFound:
        return False
    return binding_mode(sc) == BINDING_WAIT_FOR_FIRST_CONSUMER


def _find_matching_volumes(
    view: StorageView,
    claims: list[Manifest],
    pvs_by_class: Mapping[str, Sequence[Manifest]],
    node_labels: Mapping[str, str],
) -> tuple[bool, list[BindingInfo], list[Manifest]]:
    """``findMatchingVolumes``: claims in increasing size, each taking the smallest fitting PV."""
    chosen: set[str] = set()
    bindings: list[BindingInfo] = []
    unbound: list[Manifest] = []
    found = True
    for pvc in sorted(claims, key=claim_request):
        pv = find_matching_volume(view, pvc, pvs_by_class.get(claim_class(pvc), ()), node_labels, chosen)
        if pv is None:
            unbound.append(pvc)
            found = False
            continue
        chosen.add(name_of(pv))
        bindings.append(BindingInfo(pv, pvc))
    return found, bindings, unbound


def find_matching_volume(
    view: StorageView,
    claim: Manifest,
    volumes: Sequence[Manifest],
    node_labels: Mapping[str, str],
    excluded: set[str],
) -> Manifest | None:
    """``FindMatchingVolume`` on the scheduler path (a node, delayed binding, the
    VolumeAttributesClass gate on): a volume pre-bound to the claim wins when it fits the node;
    otherwise the smallest available volume of the claim's class that fits."""
    claim_spec = spec(claim)
    requested = claim_request(claim)
    requested_class = claim_class(claim)
    selector = None
    if claim_spec.get("selector") is not None:
        try:
            selector = label_selector.parse(claim_spec["selector"])
        except label_selector.SelectorError as error:
            raise BinderError(
                f"error creating internal label selector for claim: {namespace_of(claim)}/{name_of(claim)}: {error}"
            ) from None
    claim_mode = claim_spec.get("volumeMode") or FILESYSTEM
    claim_vac = claim_spec.get("volumeAttributesClassName") or ""
    smallest: Manifest | None = None
    smallest_qty = Fraction(0)
    for volume in volumes:
        volume_spec = spec(volume)
        if name_of(volume) in excluded:
            continue
        bound_to_claim = is_volume_bound_to_claim(volume, claim)
        if volume_spec.get("claimRef") and not bound_to_claim:
            continue
        qty = volume_capacity(volume)
        if qty < requested:
            continue
        if (volume_spec.get("volumeMode") or FILESYSTEM) != claim_mode:
            continue
        if (volume_spec.get("volumeAttributesClassName") or "") != claim_vac:
            continue
        if meta(volume).get("deletionTimestamp") is not None:
            continue
        affinity_ok = view.check_node_affinity(volume, node_labels)
        if bound_to_claim:
            return volume if affinity_ok else None
        if volume_phase(volume) != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(labels_of(volume)):
            continue
        if volume_class(volume) != requested_class or not affinity_ok:
            continue
        if not set(access_modes(claim)) <= set(access_modes(volume)):
            continue
        if smallest is None or smallest_qty > qty:
            smallest, smallest_qty = volume, qty
    return smallest


def _check_volume_provisions(
    view: StorageView, claims: Sequence[Manifest], node_labels: Mapping[str, str]
) -> tuple[bool, bool, list[DynamicProvision]]:
    """``checkVolumeProvisions``: (provisioning possible, storage sufficient, provisions)."""
    provisions: list[DynamicProvision] = []
    for claim in claims:
        class_name = claim_class(claim)
        if not class_name:
            raise BinderError(f'no class for claim "{namespace_of(claim)}/{name_of(claim)}"')
        try:
            sc = view.storage_class(class_name)
        except NotFound:
            raise BinderError(f'failed to find storage class "{class_name}"') from None
        provisioner = str(sc.get("provisioner") or "")
        if not provisioner or provisioner == NOT_SUPPORTED_PROVISIONER:
            return False, True, []
        if not match_topology_selector_terms(sc.get("allowedTopologies"), node_labels):
            return False, True, []
        sufficient, capacity = _has_enough_capacity(view, provisioner, claim, class_name, node_labels)
        if not sufficient:
            return True, False, []
        provisions.append(DynamicProvision(claim, capacity))
    return True, True, provisions


def _has_enough_capacity(
    view: StorageView, provisioner: str, claim: Manifest, class_name: str, node_labels: Mapping[str, str]
) -> tuple[bool, Manifest | None]:
    """``hasEnoughCapacity``: checked only for CSI drivers with ``storageCapacity: true``, against
    the CSIStorageCapacity objects of the class whose node topology selects the node."""
    requested = ((spec(claim).get("resources") or {}).get("requests") or {}).get("storage")
    if requested is None:
        return True, None
    driver = view.find(CSI_DRIVER, provisioner)
    if driver is None or spec(driver).get("storageCapacity") is not True:
        return True, None
    size = value(requested)
    for capacity in view.all(CSI_STORAGE_CAPACITY):
        if capacity.get("storageClassName") != class_name:
            continue
        limit = capacity.get("maximumVolumeSize")
        if limit is None:
            limit = capacity.get("capacity")
        if limit is None or value(limit) < size:
            continue
        if _node_has_access(capacity, node_labels):
            return True, capacity
    return False, None


def _node_has_access(capacity: Manifest, node_labels: Mapping[str, str]) -> bool:
    topology = capacity.get("nodeTopology")
    if topology is None:
        return False
    try:
        return label_selector.parse(topology).matches(node_labels)
    except label_selector.SelectorError:
        return False


def _bind_volume_to_claim(pv: Manifest, pvc: Manifest) -> tuple[Manifest, bool]:
    """``GetBindVolumeToClaim``: a copy of the PV pre-bound to the claim, and whether it changed."""
    set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    clone: dict[str, Any] = copy.deepcopy(dict(pv))
    dirty = False
    ref = spec(pv).get("claimRef")
    pvc_uid = meta(pvc).get("uid") or ""
    if (
        not ref
        or ref.get("name") != name_of(pvc)
        or (ref.get("namespace") or "default") != namespace_of(pvc)
        or (ref.get("uid") or "") != pvc_uid
    ):
        clone.setdefault("spec", {})["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace_of(pvc),
            "name": name_of(pvc),
            "uid": pvc_uid,
            "apiVersion": "v1",
            "resourceVersion": resource_version(pvc),
        }
        dirty = True
    clone_annotations = _writable_annotations(clone)
    if set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in clone_annotations:
        clone_annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    return clone, dirty


def _writable_annotations(obj: dict[str, Any]) -> dict[str, str]:
    """The annotations of a copied object, created when missing (``SetMetaDataAnnotation``)."""
    metadata = obj["metadata"] = dict(manifest.meta(obj))
    result: dict[str, str] = dict(metadata.get("annotations") or {})
    metadata["annotations"] = result
    return result
