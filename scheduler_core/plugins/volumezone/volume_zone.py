"""VolumeZone: keep pods in the zone and region of their bound PersistentVolumes.

Upstream: ``pkg/scheduler/framework/plugins/volumezone/volume_zone.go`` (v1.36). PreFilter
reads, for each ``persistentVolumeClaim`` volume, the claim's bound PV and its topology labels
(``topology.kubernetes.io/zone``/``region`` and their ``failure-domain.beta`` forms; a value may
list several zones joined by ``__``); unbound WaitForFirstConsumer claims are skipped (their
PV is chosen later, by VolumeBinding). A pod with no such PV skips the plugin. Filter passes a
node without any topology label (a single-zone cluster) and otherwise needs, per PV label, the
node's label (the beta key falls back to the GA key) to be one of the PV's values; a mismatch
is UnschedulableAndUnresolvable.

Missing objects are UnschedulableAndUnresolvable with the listers' messages (a missing class is
``storageclass.storage.k8s.io "x" not found``, as the informer lister words it; upstream's unit
test uses a fake lister that says ``storageclasses``). The "VolumeBindingMode not set" error
cannot happen here: a class without a mode binds Immediate, as the API server defaults it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Status,
)
from scheduler_core.framework.storage import (
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    Manifest,
    NotFound,
    StorageView,
    binding_mode,
    claim_class,
    labels_of,
    manifest_of,
    name_of,
    namespace_of,
    pod_volumes,
    pvc_claim_names,
    spec,
    storage_view,
)
from scheduler_core.plugins import names

NAME = names.VOLUME_ZONE
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_CONFLICT = "node(s) had no available volume zone"

LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
)
_TO_GA = {LABEL_FAILURE_DOMAIN_BETA_REGION: LABEL_TOPOLOGY_REGION, LABEL_FAILURE_DOMAIN_BETA_ZONE: LABEL_TOPOLOGY_ZONE}
LABEL_MULTI_ZONE_DELIMITER = "__"


@dataclass(frozen=True, slots=True)
class PVTopology:
    pv_name: str
    key: str
    values: frozenset[str]


@dataclass(frozen=True, slots=True)
class _StateData:
    topologies: tuple[PVTopology, ...]

    def clone(self) -> _StateData:
        return self


def label_zones_to_set(value: str) -> frozenset[str] | None:
    """``LabelZonesToSet``: ``__``-separated zones, trimmed; None when one is empty."""
    zones = [zone.strip() for zone in value.split(LABEL_MULTI_ZONE_DELIMITER)]
    if any(not zone for zone in zones):
        return None
    return frozenset(zones)


def pv_topologies(pv: Manifest) -> list[PVTopology]:
    """``getPVTopologies``: the PV's topology labels (unparsable values are ignored)."""
    labels = labels_of(pv)
    result = []
    for key in TOPOLOGY_LABELS:
        if key in labels:
            zones = label_zones_to_set(str(labels[key]))
            if zones is not None:
                result.append(PVTopology(name_of(pv), key, zones))
    return result


class VolumeZone:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
                self._is_schedulable_after_storage_class_added,
            ),
            # With queueing hints (GA) upstream drops UpdateNodeTaint here.
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add_update), self._is_schedulable_after_pvc_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, add_update), self._is_schedulable_after_pv_change
            ),
        ]

    def _is_schedulable_after_pvc_change(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        if old is not None:
            manifest_of(old, "PersistentVolumeClaim")
        pvc = None if new is None else manifest_of(new, "PersistentVolumeClaim")
        if pvc is not None and namespace_of(pvc) == pod.namespace and name_of(pvc) in pvc_claim_names(pod):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def _is_schedulable_after_storage_class_added(
        self, pod: PodInfo, old: EventObject, new: EventObject
    ) -> QueueingHint:
        sc = manifest_of(new, "StorageClass")
        # A new class without a mode binds Immediate (API defaulting).
        return QueueingHint.QUEUE if binding_mode(sc) == BINDING_WAIT_FOR_FIRST_CONSUMER else QueueingHint.SKIP

    def _is_schedulable_after_pv_change(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        modified = manifest_of(new, "PersistentVolume")
        if old is None:
            return QueueingHint.QUEUE
        original = manifest_of(old, "PersistentVolume")
        changed = pv_topologies(original) != pv_topologies(modified)
        return QueueingHint.QUEUE if changed else QueueingHint.SKIP

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        claims = pvc_claim_names(pod)
        if not claims:
            return None, Status.skip()
        topologies, status = _topologies_of(storage_view(state, self._handle), pod, claims)
        if status is not None:
            return None, status
        if not topologies:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _StateData(tuple(topologies)))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod_volumes(pod):
            return None
        try:
            topologies: Sequence[PVTopology] = state.read_as(PRE_FILTER_STATE_KEY, _StateData).topologies
        except KeyError:
            # Upstream falls back to computing the topologies here.
            computed, status = _topologies_of(storage_view(state, self._handle), pod, pvc_claim_names(pod))
            if status is not None:
                return status
            topologies = computed
        labels = node.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None  # a node without zone labels: a single-zone cluster
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_TO_GA.get(topology.key, topology.key))
            if value is None or value not in topology.values:
                return Status.unresolvable(ERR_REASON_CONFLICT)
        return None


def _topologies_of(view: StorageView, pod: PodInfo, claims: Sequence[str]) -> tuple[list[PVTopology], Status | None]:
    """``getPVbyPod``."""
    topologies: list[PVTopology] = []
    for claim in claims:
        if not claim:
            return [], Status.unresolvable("PersistentVolumeClaim had no name")
        try:
            pvc = view.pvc(pod.namespace, claim)
            pv_name = str(spec(pvc).get("volumeName") or "")
            if not pv_name:
                class_name = claim_class(pvc)
                if not class_name:
                    return [], Status.unresolvable("PersistentVolumeClaim had no pv name and storageClass name")
                if binding_mode(view.storage_class(class_name)) == BINDING_WAIT_FOR_FIRST_CONSUMER:
                    continue  # not bound yet: VolumeBinding chooses the PV
                return [], Status.unresolvable("PersistentVolume had no name")
            topologies.extend(pv_topologies(view.pv(pv_name)))
        except NotFound as error:
            return [], Status.unresolvable(str(error))
    return topologies, None
