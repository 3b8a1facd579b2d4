"""VolumeRestrictions: volumes that only one pod (or one node) may use at a time.

Upstream: ``pkg/scheduler/framework/plugins/volumerestrictions/volume_restrictions.go`` (v1.36).

* Disk conflicts, per node: the same GCE PD (unless every mount is read-only), AWS EBS volume,
  iSCSI IQN (unless all read-only) or Ceph RBD image (a shared monitor, same pool and image,
  unless all read-only) already used by a pod on the node: Unschedulable "node(s) had no
  available disk".
* ReadWriteOncePod claims, cluster-wide: a claim with that access mode already used by a pod
  on any node makes every node Unschedulable (preemption of that pod may help). PreFilter counts
  those users from the snapshot; AddPod/RemovePod keep the count right for what-if evaluations.

PreFilter reads the pod's claims (a missing one is UnschedulableAndUnresolvable) and skips the
plugin when the pod has neither kind of volume to check, which is the case for most pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scheduler_core.framework import (
    ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventObject,
    EventResource,
    Handle,
    Manifest,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Status,
)
from scheduler_core.framework.storage import (
    READ_WRITE_ONCE_POD,
    NotFound,
    access_modes,
    name_of,
    namespace_of,
    pod_volumes,
    pvc_claim_names,
    storage_view,
)
from scheduler_core.plugins import names

NAME = names.VOLUME_RESTRICTIONS
PRE_FILTER_STATE_KEY = "PreFilter" + NAME

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)

_DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")

Volume = Manifest


@dataclass(slots=True)
class _PreFilterState:
    # Names of the pod's claims with the ReadWriteOncePod access mode.
    read_write_once_pod_pvcs: frozenset[str]
    # How many references scheduled pods hold to those claims.
    conflicting_pvc_ref_count: int

    def clone(self) -> _PreFilterState:
        return _PreFilterState(self.read_write_once_pod_pvcs, self.conflicting_pvc_ref_count)

    def update_with_pod(self, pod: PodInfo, multiplier: int) -> None:
        self.conflicting_pvc_ref_count += multiplier * sum(
            1 for claim in pvc_claim_names(pod) if claim in self.read_write_once_pod_pvcs
        )


def needs_restrictions_check(volume: Volume) -> bool:
    return any(volume.get(source) is not None for source in _DISK_SOURCES)


def _read_only(source: Manifest) -> bool:
    return bool(source.get("readOnly"))


def is_volume_conflict(volume: Volume, pod: PodInfo) -> bool:
    """``isVolumeConflict``: whether ``volume`` conflicts with one of ``pod``'s volumes."""
    for existing in pod_volumes(pod):
        for source, conflicts in _CONFLICTS:
            mine, theirs = volume.get(source), existing.get(source)
            if mine is not None and theirs is not None and conflicts(mine, theirs):
                return True
    return False


def _same_gce_disk(a: Manifest, b: Manifest) -> bool:
    # Same GCE disk mounted by several pods conflicts unless all mount it read-only.
    return bool(a.get("pdName") == b.get("pdName") and not (_read_only(a) and _read_only(b)))


def _same_ebs_volume(a: Manifest, b: Manifest) -> bool:
    return bool(a.get("volumeID") == b.get("volumeID"))


def _same_iscsi_target(a: Manifest, b: Manifest) -> bool:
    # iSCSI volumes are RWO or ROX: one read-write mount of an IQN at most.
    return bool(a.get("iqn") == b.get("iqn") and not (_read_only(a) and _read_only(b)))


def _same_rbd_image(a: Manifest, b: Manifest) -> bool:
    # RBD's API defaults: pool "rbd" (SetDefaults_RBDVolumeSource).
    return (
        have_overlap(a.get("monitors") or (), b.get("monitors") or ())
        and (a.get("pool") or "rbd") == (b.get("pool") or "rbd")
        and a.get("image") == b.get("image")
        and not (_read_only(a) and _read_only(b))
    )


def have_overlap(a: Iterable[str], b: Iterable[str]) -> bool:
    return not set(a).isdisjoint(b)


_CONFLICTS = (
    ("gcePersistentDisk", _same_gce_disk),
    ("awsElasticBlockStore", _same_ebs_volume),
    ("iscsi", _same_iscsi_target),
    ("rbd", _same_rbd_image),
)


def satisfy_volume_conflicts(pod: PodInfo, pods_on_node: Sequence[PodInfo]) -> bool:
    for volume in pod_volumes(pod):
        if needs_restrictions_check(volume) and any(is_volume_conflict(volume, other) for other in pods_on_node):
            return False
    return True


class VolumeRestrictions:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With queueing hints (GA) upstream registers Node/Add only. Our queue splits upstream's
        # Pod resource into the unscheduled pod (Pod) and pods on nodes (AssignedPod).
        return [
            ClusterEventWithHint(ASSIGNED_POD_DELETE, self._is_schedulable_after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE), self._is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self._is_schedulable_after_pvc_added,
            ),
        ]

    def _is_schedulable_after_pvc_added(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        if not isinstance(new, Mapping):
            raise TypeError(
                f"unexpected objects in isSchedulableAfterPersistentVolumeClaimChange: {type(new).__name__}"
            )
        if namespace_of(new) != pod.namespace:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if name_of(new) in pvc_claim_names(pod) else QueueingHint.SKIP

    def _is_schedulable_after_pod_deleted(self, pod: PodInfo, old: EventObject, new: EventObject) -> QueueingHint:
        deleted = PodInfo.of(old)
        if deleted.namespace != pod.namespace:
            return QueueingHint.SKIP
        if not satisfy_volume_conflicts(pod, [deleted]):
            return QueueingHint.QUEUE
        # The deleted pod may have held a ReadWriteOncePod claim the pod needs (upstream does
        # not read the claim's access modes here, to keep hints cheap).
        if set(pvc_claim_names(pod)) & set(pvc_claim_names(deleted)):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    # -- PreFilter -----------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        volumes = pod_volumes(pod)
        if not volumes:
            return None, Status.skip()
        needs_check = any(needs_restrictions_check(v) for v in volumes)
        claims = pvc_claim_names(pod)
        rwop: set[str] = set()
        if claims:
            view = storage_view(state, self._handle)
            for claim in claims:
                try:
                    pvc = view.pvc(pod.namespace, claim)
                except NotFound as error:
                    return None, Status.unresolvable(str(error))
                if READ_WRITE_ONCE_POD in access_modes(pvc):
                    rwop.add(name_of(pvc))
        count = self._count_pvc_users(pod.namespace, rwop) if rwop else 0
        if not needs_check and count == 0:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(frozenset(rwop), count))
        return None, None

    def _count_pvc_users(self, namespace: str, claims: set[str]) -> int:
        """One per claim used by some pod on a node (``StorageInfos().IsPVCUsedByPods``)."""
        used = {
            claim
            for node in self._handle.snapshot().list()
            for other in node.pods
            if other.namespace == namespace
            for claim in pvc_claim_names(other)
            if claim in claims
        }
        return len(used)

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if data is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        data.update_with_pod(pod_to_add, 1)
        return None

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node: NodeInfo) -> Status | None:
        data = _pre_filter_state(state)
        if data is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        data.update_with_pod(pod_to_remove, -1)
        return None

    # -- Filter ------------------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not satisfy_volume_conflicts(pod, node.pods):
            return Status.unschedulable(ERR_REASON_DISK_CONFLICT)
        data = _pre_filter_state(state)
        if data is None:
            return Status.as_error(f'cannot read "{PRE_FILTER_STATE_KEY}" from cycleState')
        if data.conflicting_pvc_ref_count > 0:
            return Status.unschedulable(ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT)
        return None


def _pre_filter_state(state: CycleState) -> _PreFilterState | None:
    return state.read_optional(PRE_FILTER_STATE_KEY, _PreFilterState)
