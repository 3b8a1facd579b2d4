"""VolumeBinding: place pods where their PersistentVolumeClaims can be (or are) satisfied.

Upstream: ``pkg/scheduler/framework/plugins/volumebinding/volume_binding.go`` (v1.36); the
matching itself is in :mod:`.binder`.

* PreFilter: a pod without claims (``persistentVolumeClaim`` or generic ``ephemeral``
  volumes) is skipped without reading any object. A missing, lost or deleting claim is
  UnschedulableAndUnresolvable with the lister's message; an unbound claim with immediate
  binding is UnschedulableAndUnresolvable ("pod has unbound immediate PersistentVolumeClaims"):
  the PV controller, not the scheduler, binds those.
* Filter: the node must match every bound claim's PV node affinity and offer a PV or dynamic
  provisioning for every WaitForFirstConsumer claim; failures are UnschedulableAndUnresolvable
  with binder.go's reasons.
* PreScore/Score: upstream scores only with the alpha StorageCapacityScoring gate, off by
  default; PreScore always skips, so this plugin never scores (as upstream by default).
* Reserve/Unreserve: the chosen node's bindings are assumed in memory (see
  :mod:`.assume_cache`), so the next pods see the PVs as taken.
* PreBind: writes the PV ``claimRef`` of each static binding and the selected-node annotation
  of each claim to provision through the Handle's ClusterAPI, then waits (asynchronously) up to
  ``bindTimeoutSeconds`` for the PV controller and the provisioner to bind every claim (see
  :mod:`.prebind`). A failure fails PreBind: the pod is unreserved and requeued.

Events upstream also registers, not here because the framework has no such resources yet:
CSIDriver/Update and CSIStorageCapacity/Add|Update (their hints are
:func:`is_schedulable_after_csi_driver_change` and
:func:`is_schedulable_after_csi_storage_capacity_change`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.framework import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventResource,
    Handle,
    NodeInfo,
    PodInfo,
    PreBindPreFlightResult,
    PreFilterResult,
    QueueingHint,
    Status,
    manifest,
    value,
)
from scheduler_core.framework.storage import (
    CLAIM_LOST,
    MIGRATED_PLUGINS_ANNOTATION,
    Manifest,
    NotFound,
    StorageView,
    annotations_of,
    claim_name,
    claim_names,
    has_claims,
    manifest_of,
    meta,
    name_of,
    namespace_of,
    pod_volumes,
    spec,
    storage_view,
    volume_is_for_pod,
)
from scheduler_core.plugins import names
from scheduler_core.plugins.volumebinding.args import VolumeBindingArgs
from scheduler_core.plugins.volumebinding.binder import Binder, BinderError, PodVolumeClaims, PodVolumes
from scheduler_core.plugins.volumebinding.prebind import Waiting, bind_pod_volumes

NAME = names.VOLUME_BINDING
STATE_KEY = NAME

ERR_REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(slots=True)
class _StateData:
    view: StorageView | None = None
    claims: PodVolumeClaims | None = None
    pod_volumes_by_node: dict[str, PodVolumes] = field(default_factory=dict)
    has_static_bindings: bool = False
    all_bound: bool = False

    def clone(self) -> _StateData:
        # As upstream: Filter results are shared by what-if evaluations of the same cycle.
        return self


class VolumeBinding:
    name = NAME
    args_model = VolumeBindingArgs

    def __init__(self, args: VolumeBindingArgs | None, handle: Handle) -> None:
        self._args = args if args is not None else VolumeBindingArgs()
        self._handle = handle
        self.binder = Binder()
        self.waiting = Waiting()  # PreBind's clock and sleep (tests put fake time here)

    @property
    def bind_timeout_seconds(self) -> int:
        return self._args.bind_timeout_seconds

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, add_update), is_schedulable_after_storage_class_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, add_update), is_schedulable_after_pvc_change
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, add_update)),
            # With queueing hints (GA) upstream drops UpdateNodeTaint here.
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, add_update), is_schedulable_after_csi_node_change
            ),
        ]

    # -- PreFilter ---------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not has_claims(pod):
            state.write(STATE_KEY, _StateData())  # Reserve still runs and reads it
            return None, Status.skip()
        view = storage_view(state, self._handle)
        problem = _pod_claims_problem(view, pod)
        if problem is not None:
            return None, Status.unresolvable(problem)
        self.binder.expire(view)
        try:
            claims = self.binder.get_pod_volume_claims(view, pod)
        except BinderError as error:
            return None, Status.as_error(str(error))
        if claims.unbound_claims_immediate:
            return None, Status.unresolvable(ERR_REASON_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _StateData(view=view, claims=claims))
        return None, None

    # -- Filter --------------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data = _state(state)
        if data is None:
            return Status.as_error("not found")
        if data.claims is None or data.view is None:
            return None  # no claims: PreFilter skipped the plugin
        try:
            volumes, reasons = self.binder.find_pod_volumes(data.view, data.claims, node.name, node.labels)
        except BinderError as error:
            self._handle.metrics.volume_scheduling_stage_failed("predicate")  # binder.go FindPodVolumes
            return Status.as_error(str(error))
        if reasons:
            return Status.unresolvable(*reasons)
        data.pod_volumes_by_node[node.name] = volumes
        data.has_static_bindings = data.has_static_bindings or bool(volumes.static_bindings)
        return None

    # -- PreScore / Score --------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        # No scorer without the StorageCapacityScoring gate (alpha, off): Score never runs.
        return Status.skip()

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        return 0, None

    # -- Reserve / Unreserve -------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = _state(state)
        if data is None:
            return Status.as_error("not found")
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None or data.view is None:
            data.all_bound = True  # the pod references no claim
            return None
        try:
            data.all_bound = self.binder.assume_pod_volumes(data.view, pod, node_name, volumes)
        except BinderError as error:
            self._handle.metrics.volume_scheduling_stage_failed("assume")  # binder.go AssumePodVolumes
            return Status.as_error(str(error))
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = _state(state)
        if data is None:
            return
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    # -- PreBind -----------------------------------------------------------------------------------------
    def pre_bind_pre_flight(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[PreBindPreFlightResult | None, Status | None]:
        """Upstream ``PreBindPreFlight``: PreBind has work unless every claim is bound (it may
        run beside the other parallel PreBind plugins)."""
        data = _state(state)
        if data is None:
            return PARALLEL, Status.as_error("not found")
        if data.all_bound:
            return PARALLEL, Status.skip()
        if node_name not in data.pod_volumes_by_node:
            return PARALLEL, Status.as_error(f'no pod volume found for node "{node_name}"')
        return PARALLEL, None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = _state(state)
        if data is None:
            return Status.as_error("not found")
        if data.all_bound:
            return None
        volumes = data.pod_volumes_by_node.get(node_name)
        if volumes is None:
            return Status.as_error(f'no pod volume found for node "{node_name}"')
        error = await bind_pod_volumes(
            self._handle.api, self._handle, self.binder, pod, node_name, volumes,
            self._args.bind_timeout_seconds, self.waiting,
        )  # fmt: skip
        if error is None:
            return None
        self._handle.metrics.volume_scheduling_stage_failed("bind")  # binder.go BindPodVolumes
        return Status.as_error(error)


PARALLEL = PreBindPreFlightResult(allow_parallel=True)


def _state(state: CycleState) -> _StateData | None:
    return state.read_optional(STATE_KEY, _StateData)


def _pod_claims_problem(view: StorageView, pod: PodInfo) -> str | None:
    """``podHasPVCs``: why the pod's claims cannot be used, if they cannot."""
    for volume in pod_volumes(pod):
        name, ephemeral = claim_name(pod, volume)
        if name is None:
            continue
        try:
            pvc = view.pvc(pod.namespace, name)
        except NotFound as error:
            if ephemeral:
                return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'
            return str(error)
        if manifest.status(pvc).get("phase") == CLAIM_LOST:
            return (
                f'persistentvolumeclaim "{name_of(pvc)}" bound to non-existent persistentvolume '
                f'"{spec(pvc).get("volumeName") or ""}"'
            )
        if meta(pvc).get("deletionTimestamp") is not None:
            return f'persistentvolumeclaim "{name_of(pvc)}" is being deleted'
        if ephemeral:
            problem = volume_is_for_pod(pod, pvc)
            if problem is not None:
                return problem
    return None


# -- queueing hints ---------------------------------------------------------------------------------
def is_schedulable_after_csi_node_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    if old is None:
        return QueueingHint.QUEUE
    before, after = manifest_of(old, "CSINode"), manifest_of(new, "CSINode")
    if annotations_of(before).get(MIGRATED_PLUGINS_ANNOTATION) != annotations_of(after).get(
        MIGRATED_PLUGINS_ANNOTATION
    ):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pvc_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    if old is not None:
        manifest_of(old, "PersistentVolumeClaim")
    pvc = manifest_of(new, "PersistentVolumeClaim")
    if namespace_of(pvc) != pod.namespace:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if name_of(pvc) in claim_names(pod) else QueueingHint.SKIP


def is_schedulable_after_storage_class_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    after = manifest_of(new, "StorageClass")
    if old is None:
        return QueueingHint.QUEUE
    before = manifest_of(old, "StorageClass")
    # Only allowedTopologies may change in an update (volumeBindingMode is immutable).
    changed = (before.get("allowedTopologies") or None) != (after.get("allowedTopologies") or None)
    return QueueingHint.QUEUE if changed else QueueingHint.SKIP


def _volume_limit(capacity: Manifest) -> int | None:
    limit: Any = capacity.get("maximumVolumeSize")
    if limit is None:
        limit = capacity.get("capacity")
    return None if limit is None else value(limit)


def is_schedulable_after_csi_storage_capacity_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    after = manifest_of(new, "CSIStorageCapacity")
    if old is None:
        return QueueingHint.QUEUE
    old_limit, new_limit = _volume_limit(manifest_of(old, "CSIStorageCapacity")), _volume_limit(after)
    if new_limit is not None and (old_limit is None or new_limit > old_limit):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_csi_driver_change(pod: PodInfo, old: object, new: object) -> QueueingHint:
    before, after = manifest_of(old, "CSIDriver"), manifest_of(new, "CSIDriver")
    driver = name_of(after)
    for volume in pod_volumes(pod):
        csi = volume.get("csi")
        if csi is None or csi.get("driver") != driver:
            continue
        if spec(before).get("storageCapacity") is True and spec(after).get("storageCapacity") is not True:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP
