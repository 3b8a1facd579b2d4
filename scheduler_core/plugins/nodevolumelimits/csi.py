"""NodeVolumeLimits: respect how many CSI volumes each driver may attach to a node.

Upstream: ``pkg/scheduler/framework/plugins/nodevolumelimits/csi.go`` (v1.36, ``CSILimits``).
A node's limits are its CSINode's ``spec.drivers[].allocatable.count``; a driver without a
count, or a node without a CSINode, has no limit. Filter counts, per driver, the unique volumes
(``<driver>/<volume handle>``) of the pods on the node and of the node's VolumeAttachments, adds
the pod's new ones, and rejects the node (Unschedulable: preemption may free attachments) when a
driver would exceed its limit.

A claim counts through its bound PV's CSI source (or the CSI driver an in-tree PV migrated to,
:mod:`.translation`); an unbound claim counts against its StorageClass's provisioner with a
per-claim handle. Inline in-tree volumes count when their plugin migrated. PreFilter skips pods
with no claim and no migratable inline volume, which is most pods.

What the pods on a node count is kept across cycles, per node, while the node holds the same
pods (its NodeInfo generation), the claims, volumes and classes are the same (the backend's
change counters, :meth:`StorageView.version`) and the node's CSINode reads the same for
migration; a pod's own count is reused when the node's pods change. A backend that does not
count changes gets the count made anew each time, as upstream.

The VolumeLimitScaling gate (alpha, off) is not implemented.
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from scheduler_core.framework import (
    ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    QueueingHint,
    Status,
)
from scheduler_core.framework.storage import (
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    Manifest,
    NotFound,
    StorageView,
    claim_class,
    claim_name,
    claim_names,
    manifest_of,
    name_of,
    namespace_of,
    pod_volumes,
    spec,
    storage_view,
    volume_is_for_pod,
)
from scheduler_core.plugins import names
from scheduler_core.plugins.nodevolumelimits import translation

NAME = names.NODE_VOLUME_LIMITS
STATE_KEY = "PreFilter" + NAME

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

Volumes = dict[str, str]  # unique volume name -> driver name


class _Fail(Exception):
    """A Filter outcome other than success, raised from deep in the counting."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


@dataclass(slots=True)
class _Counted:
    """``filterAttachableVolumes`` of each pod on a node: the union of their CSI volumes, or the
    first pod's failure in the node's order; ``per_driver`` counts ``volumes`` by driver. Valid
    for the NodeInfo ``generation`` and the ``stamp`` (storage change counters and the CSINode's
    migration key); ``by_pod`` (uid -> the pod object and its own count) serves the pods still
    on the node when the node's pods change."""

    generation: int
    stamp: Hashable
    by_pod: dict[str, tuple[Manifest, Volumes | Status]]
    volumes: Volumes | Status
    per_driver: dict[str, int]


@dataclass(slots=True)
class _State:
    view: StorageView
    # What the pods' counts read (claims, volumes, classes), as counted by the backend; None:
    # not counted, nothing is kept across cycles.
    versions: tuple[int, ...] | None = None
    attachments_by_node: dict[str, list[Manifest]] | None = None
    # The pod's own volumes (or the failure counting them) by what they depend on in a node:
    # translation.migration_key of its CSINode. Counted once per kind of node, not per node.
    new_volumes: dict[Hashable, Volumes | Status] = field(default_factory=dict)

    def clone(self) -> _State:
        return self  # derived from objects only; what-if evaluations may share it


def _counts(volume: Manifest) -> bool:
    return (
        volume.get("persistentVolumeClaim") is not None
        or volume.get("ephemeral") is not None
        or translation.is_inline_migratable(volume)
    )


def volume_limits(csi_node: Manifest | None) -> dict[str, int]:
    """``getVolumeLimits``: driver name -> allocatable count."""
    limits: dict[str, int] = {}
    if csi_node is None:
        return limits
    for driver in spec(csi_node).get("drivers") or ():
        count = (driver.get("allocatable") or {}).get("count")
        if count is not None:
            limits[str(driver.get("name") or "")] = int(count)
    return limits


def _volume_bound(pods: Sequence[PodInfo]) -> int | None:
    """The claims of ``pods`` (each counts at most once), or None when a volume could make the
    count fail: a claim without a name, an ephemeral claim, a migratable inline volume."""
    bound = 0
    for pod in pods:
        for volume in pod_volumes(pod):
            source = volume.get("persistentVolumeClaim")
            if source is not None and source.get("claimName"):
                bound += 1
            elif source is not None or volume.get("ephemeral") is not None or translation.plugin_for(volume):
                return None
    return bound


class NodeVolumeLimits:
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle
        # Handles of unbound claims must not collide with real volume handles (upstream
        # uses a random prefix per plugin instance too).
        self._random_volume_id_prefix = uuid.uuid4().hex
        # Caches, never decisions: node name -> (NodeInfo generation, _volume_bound), node
        # name -> (its CSINode object, the limits read from it), node name -> what its pods count.
        self._bounds: dict[str, tuple[int, int | None]] = {}
        self._limits: dict[str, tuple[Manifest, dict[str, int]]] = {}
        self._counted: dict[str, _Counted] = {}

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # Upstream also registers VolumeAttachment/Delete; the framework has no such resource.
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE), is_schedulable_after_csi_node_updated
            ),
            ClusterEventWithHint(ASSIGNED_POD_DELETE, is_schedulable_after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), is_schedulable_after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), is_schedulable_after_pvc_added
            ),
        ]

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not any(_counts(volume) for volume in pod_volumes(pod)):
            return None, Status.skip()
        state.write(STATE_KEY, _new_state(storage_view(state, self._handle)))
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod_volumes(pod):
            return None
        try:
            data = state.read_as(STATE_KEY, _State)
        except KeyError:
            data = _new_state(storage_view(state, self._handle))
        view = data.view
        csi_node = view.csi_node(node.name)
        key = translation.migration_key(csi_node)
        counted = data.new_volumes.get(key)
        if counted is None:
            try:
                counted = {}
                self._attachable_volumes(view, pod, csi_node, True, counted)
            except _Fail as failure:
                counted = failure.status
            data.new_volumes[key] = counted
        if isinstance(counted, Status):
            return counted
        if not counted:
            return None
        limits = self._volume_limits(node.name, csi_node)
        if not limits:
            return None
        stamp = None if data.versions is None else (data.versions, key)
        existing = self._counted.get(node.name) if stamp is not None else None
        if existing is None or existing.generation != node.generation or existing.stamp != stamp:
            if self._within_limits_at_most(data, node, counted, limits):
                return None
            existing = self._count_existing(view, node, csi_node, stamp, existing)
        attached = existing.volumes
        if isinstance(attached, Status):
            return attached
        new_count: dict[str, int] = {}
        for unique_name, driver in counted.items():
            if unique_name not in attached:  # a volume shared with a pod on the node counts once
                new_count[driver] = new_count.get(driver, 0) + 1
        attached_count = existing.per_driver
        attachments = self._node_attachments(data, node.name)
        if attachments:
            attached_count = dict(attached_count)
            for unique_name, driver in attachments.items():
                if unique_name not in attached:
                    attached_count[driver] = attached_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    # -- counting ------------------------------------------------------------------------------------
    def _volume_limits(self, node_name: str, csi_node: Manifest | None) -> Mapping[str, int]:
        """:func:`volume_limits`, kept per node while its CSINode is the same object."""
        if csi_node is None:
            return {}
        memo = self._limits.get(node_name)
        if memo is not None and memo[0] is csi_node:
            return memo[1]
        limits = volume_limits(csi_node)
        self._limits[node_name] = (csi_node, limits)
        return limits

    def _within_limits_at_most(self, data: _State, node: NodeInfo, new: Volumes, limits: Mapping[str, int]) -> bool:
        """Whether the node passes however its pods' volumes resolve: each volume of a pod on the
        node and each VolumeAttachment adds at most one to a driver's count, so when even that
        many plus the new volumes stay within every limit, the exact count cannot reject the
        node. Only when no pod on the node could fail the count (a claim without a name, an
        ephemeral claim, a migratable inline volume), so the outcome is the exact path's."""
        bound = self._volume_bound(node)
        if bound is None:
            return False
        bound += len(self._attachments_on(data, node.name))
        new_count: dict[str, int] = {}
        for driver in new.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and bound + count > limit:
                return False
        return True

    def _volume_bound(self, node: NodeInfo) -> int | None:
        """How many volumes the node's pods have that may count (claims), or None when one of
        them could fail the count; kept per node until the node's pods change (its generation)."""
        cached = self._bounds.get(node.name)
        if cached is not None and cached[0] == node.generation:
            return cached[1]
        bound = _volume_bound(node.pods)
        self._bounds[node.name] = (node.generation, bound)
        return bound

    def _count_existing(
        self,
        view: StorageView,
        node: NodeInfo,
        csi_node: Manifest | None,
        stamp: Hashable | None,
        previous: _Counted | None,
    ) -> _Counted:
        """The count of the pods on ``node`` (kept for the node when ``stamp`` is known), with
        each pod's own count reused from ``previous`` when made under the same stamp."""
        reuse = previous.by_pod if previous is not None and stamp is not None and previous.stamp == stamp else {}
        by_pod: dict[str, tuple[Manifest, Volumes | Status]] = {}
        volumes: Volumes = {}
        failed: Status | None = None
        for existing in node.pods:
            memo = reuse.get(existing.uid)
            if memo is None or memo[0] is not existing.pod:
                own: Volumes = {}
                try:
                    self._attachable_volumes(view, existing, csi_node, False, own)
                    memo = (existing.pod, own)
                except _Fail as failure:
                    memo = (existing.pod, failure.status)
            by_pod[existing.uid] = memo
            if isinstance(memo[1], Status):
                failed = memo[1]  # upstream stops at the first pod that fails
                break
            volumes.update(memo[1])
        per_driver: dict[str, int] = {}
        for driver in volumes.values():
            per_driver[driver] = per_driver.get(driver, 0) + 1
        counted = _Counted(node.generation, stamp, by_pod, volumes if failed is None else failed, per_driver)
        if stamp is not None:
            self._counted[node.name] = counted
        return counted

    def _attachable_volumes(
        self, view: StorageView, pod: PodInfo, csi_node: Manifest | None, new_pod: bool, result: Volumes
    ) -> None:
        """``filterAttachableVolumes``: add the pod's CSI volumes to ``result``."""
        for volume in pod_volumes(pod):
            claim, ephemeral = claim_name(pod, volume)
            if claim is None:
                self._inline_volume(volume, csi_node, result)
                continue
            if not claim:
                raise _Fail(Status.as_error("PersistentVolumeClaim had no name"))
            try:
                pvc = view.pvc(pod.namespace, claim)
            except NotFound as error:
                if new_pod:
                    # The pod cannot run without it: unresolvable until the claim exists.
                    raise _Fail(Status.unresolvable(f"looking up PVC {pod.namespace}/{claim}: {error}")) from None
                continue  # an existing pod's missing claim is not counted
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem is not None:
                    raise _Fail(Status.as_error(problem))
            driver, handle = self._csi_driver_info(view, csi_node, pvc)
            if driver and handle:
                result[f"{driver}/{handle}"] = driver

    def _inline_volume(self, volume: Manifest, csi_node: Manifest | None, result: Volumes) -> None:
        """``checkAttachableInlineVolume``."""
        plugin = translation.plugin_for(volume)
        if plugin is None or not translation.is_csi_migration_on(csi_node, plugin):
            return
        try:
            handle = translation.translate(plugin, volume, None)
        except translation.TranslationError as error:
            raise _Fail(
                Status.as_error(f"converting volume({volume.get('name') or ''}) from inline to csi: {error}")
            ) from None
        result[f"{plugin.driver_name}/{handle}"] = plugin.driver_name

    def _csi_driver_info(self, view: StorageView, csi_node: Manifest | None, pvc: Manifest) -> tuple[str, str]:
        """``getCSIDriverInfo``: the claim's driver and volume handle, ("", "") to not count it."""
        pv_name = str(spec(pvc).get("volumeName") or "")
        if not pv_name:
            return self._csi_driver_info_from_sc(view, csi_node, pvc)
        try:
            pv = view.pv(pv_name)
        except NotFound:
            # Deleted, or pre-bound to a PV not created yet: count by class.
            return self._csi_driver_info_from_sc(view, csi_node, pvc)
        csi = spec(pv).get("csi")
        if csi is not None:
            return str(csi.get("driver") or ""), str(csi.get("volumeHandle") or "")
        plugin = translation.plugin_for(spec(pv))
        if plugin is None or not translation.is_csi_migration_on(csi_node, plugin):
            return "", ""
        try:
            return plugin.driver_name, translation.translate(plugin, spec(pv), pv)
        except translation.TranslationError:
            return "", ""

    def _csi_driver_info_from_sc(self, view: StorageView, csi_node: Manifest | None, pvc: Manifest) -> tuple[str, str]:
        """``getCSIDriverInfoFromSC``: a claim not bound yet counts against its class's driver."""
        class_name = claim_class(pvc)
        if not class_name:
            return "", ""  # immediate binding: bound before scheduling, safe not to count
        try:
            sc = view.storage_class(class_name)
        except NotFound:
            return "", ""
        handle = f"{self._random_volume_id_prefix}-{namespace_of(pvc)}/{name_of(pvc)}"
        provisioner = str(sc.get("provisioner") or "")
        plugin = translation.plugin_by_name(provisioner)
        if plugin is not None:
            if not translation.is_csi_migration_on(csi_node, plugin):
                return "", ""
            return plugin.driver_name, handle
        return provisioner, handle

    @staticmethod
    def _attachments_on(data: _State, node_name: str) -> Sequence[Manifest]:
        if data.attachments_by_node is None:
            data.attachments_by_node = {}
            for va in data.view.all(VOLUME_ATTACHMENT):
                data.attachments_by_node.setdefault(str(spec(va).get("nodeName") or ""), []).append(va)
        return data.attachments_by_node.get(node_name, ())

    def _node_attachments(self, data: _State, node_name: str) -> Volumes:
        """``getNodeVolumeAttachmentInfo``: CSI volumes attached to the node."""
        result: Volumes = {}
        for va in self._attachments_on(data, node_name):
            va_spec = spec(va)
            attacher = str(va_spec.get("attacher") or "")
            pv_name = (va_spec.get("source") or {}).get("persistentVolumeName")
            if not attacher or pv_name is None:
                continue
            try:
                pv = data.view.pv(str(pv_name))
            except NotFound:
                continue
            csi = spec(pv).get("csi")
            if csi is None:
                continue
            result[f"{attacher}/{csi.get('volumeHandle') or ''}"] = attacher
        return result


def _new_state(view: StorageView) -> _State:
    return _State(view, view.version(PERSISTENT_VOLUME_CLAIM, PERSISTENT_VOLUME, STORAGE_CLASS))


# -- queueing hints -------------------------------------------------------------------------------------
def is_schedulable_after_pod_deleted(pod: PodInfo, old: object, new: object) -> QueueingHint:
    deleted = PodInfo.of(old)
    volumes = pod_volumes(deleted)
    if not volumes:
        return QueueingHint.SKIP
    if not deleted.node_name and not deleted.nominated_node_name:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if any(_counts(v) for v in volumes) else QueueingHint.SKIP


def is_schedulable_after_pvc_added(pod: PodInfo, old: object, new: object) -> QueueingHint:
    pvc = manifest_of(new, "PersistentVolumeClaim")
    if namespace_of(pvc) != pod.namespace:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if name_of(pvc) in claim_names(pod) else QueueingHint.SKIP


def is_schedulable_after_csi_node_updated(pod: PodInfo, old: object, new: object) -> QueueingHint:
    """Queue when some driver's attach limit grew."""
    old_limits = _driver_counts(manifest_of(old, "CSINode"))
    for driver, count in _driver_counts(manifest_of(new, "CSINode")).items():
        if count > old_limits.get(driver, 0):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _driver_counts(csi_node: Manifest) -> dict[str, int]:
    return {
        str(d.get("name") or ""): int((d.get("allocatable") or {}).get("count") or 0)
        for d in spec(csi_node).get("drivers") or ()
    }
