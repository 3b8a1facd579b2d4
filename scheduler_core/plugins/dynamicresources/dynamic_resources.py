"""DynamicResources: place pods where their ResourceClaims can be allocated, and allocate them.

Upstream: ``pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go`` (v1.36.3);
the allocation itself is :mod:`.allocator`, CEL is :mod:`scheduler_core.framework.device_cel`.
Messages are upstream's.

* PreEnqueue: every claim of the pod must exist (a template's claim is named by the pod's
  ``status.resourceClaimStatuses``) and not be deleting.
* PreFilter: skipped for a pod without claims; a claim allocated and reserved by others is
  "resourceclaim in use"; a missing DeviceClass is UnschedulableAndUnresolvable; an allocated
  claim's node selector restricts the nodes; unallocated claims get an allocator over the
  ResourceSlices, the DeviceClasses and every device already allocated or in flight.
* Filter: the claims' devices on this node; "cannot allocate all claims" when they do not fit.
* PreScore/Score: skipped unless claims are allocated in this cycle; then, with the
  prioritized list (GA), ``8 - i`` per claim whose ``firstAvailable`` subrequest ``i`` was
  chosen (``computeScore``), normalized to 0..100.
* Reserve/Unreserve: the chosen allocation is kept in memory as in flight, in the scheduler's
  :class:`ClaimTracker` (upstream ``SignalClaimPendingAllocation``), so the next pod, of any
  profile, never gets the same device before PreBind
  lands; Unreserve drops it and removes the pod from ``reservedFor`` of allocated claims.
* PreBind: each claim not yet reserved for the pod gets the finalizer, ``status.allocation``
  and the pod in ``status.reservedFor``, through the ClusterAPI (``bindClaim``: a PUT of the
  claim, then of its status; a conflict is retried on the claim as stored now, as
  ``retry.RetryOnConflict``).
* PostFilter: an allocated claim unavailable on every node and reserved by nobody else is
  deallocated, so the next attempt can allocate it elsewhere.

* Extended resources backed by DRA (``DRAExtendedResource``, beta, on; :mod:`.extended`): the
  pod's special claim comes last in the cycle's claims; PreFilter finds or makes it, Filter
  gives it the node's device requests, Reserve keeps its allocation in flight like any other,
  PreBind creates it before allocating it and then writes the pod's
  ``status.extendedResourceClaimStatus``, Unreserve deletes a claim PreBind created, and
  PostFilter deletes one left from an earlier cycle.

Not built: pod-group claims, binding conditions and node-allocatable
resources.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler_core.framework import (
    ActionType,
    BoolArray,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    EventResource,
    Handle,
    IntArray,
    Manifest,
    NodeColumns,
    NodeInfo,
    NodeToStatus,
    PodInfo,
    PostFilterResult,
    PreBindPreFlightResult,
    PreFilterResult,
    QueueingHint,
    Status,
    device_cel,
    manifest,
)
from scheduler_core.framework.dra import (
    RESOURCE_CLAIM,
    RESOURCE_SLICE,
    DeviceID,
    ResourceClaim,
)
from scheduler_core.framework.extended_resources import (
    DeviceClassResolver,
    is_dra_extended_resource_name,
    stored_classes,
)
from scheduler_core.framework.helpers import DefaultNormalizeScore
from scheduler_core.framework.node_selector import SelectorError, parse_node_selector
from scheduler_core.framework.writes import (
    RESOURCE_CLAIMS,
    STATUS,
    ClusterAPI,
    Precondition,
    Written,
    is_conflict,
    patch_pod_status,
)
from scheduler_core.plugins import names
from scheduler_core.plugins.dynamicresources import extended
from scheduler_core.plugins.dynamicresources.allocator import (
    AllocationError,
    Allocator,
    Found,
    SelectorResults,
    SliceIndex,
)
from scheduler_core.plugins.dynamicresources.claim_index import ClaimIndex

log = logging.getLogger(__name__)

NAME = names.DYNAMIC_RESOURCES
STATE_KEY = NAME
FINALIZER = "resource.kubernetes.io/delete-protection"  # k8s.io/api resource/v1 types.go
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8  # k8s.io/api resource/v1 types.go
# client-go retry.DefaultRetry (util/retry/util.go): 5 steps, 10 ms apart, jitter 0.1
_CONFLICT_RETRIES = 5
_CONFLICT_WAIT = 0.01
_CONFLICT_JITTER = 0.1

# Reasons, as dynamicresources.go writes them.
ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
ERR_NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
ERR_STILL_NOT_SCHEDULABLE = "still not schedulable"
DEALLOCATED = "deallocation of ResourceClaim completed"
DELETED = "deletion of ResourceClaim completed"


class ClaimProblem(Exception):
    """Why a pod's claims cannot be used now (upstream ``foreachPodResourceClaim`` errors)."""


@dataclass(slots=True)
class _StateData:
    claims: list[ResourceClaim] = field(default_factory=list)  # the user's, then the special one if any
    user_claims: int = 0
    scalars: dict[str, int] = field(default_factory=dict)  # the pod's, when DRA backs one of them
    classes: DeviceClassResolver | None = None
    node_claims: dict[str, extended.NodeClaim] = field(default_factory=dict)  # Filter's, by node
    # Filter's special claim (or the reason) by what a node offers of the pod's scalars: nodes
    # alike share one claim object, so the allocator validates its requests once per cycle
    extended_by_offer: dict[tuple[int | None, ...], extended.NodeClaim | str] = field(default_factory=dict)
    available_on: dict[int, Any] = field(default_factory=dict)  # claim index -> node selector
    allocator: Allocator | None = None
    node_allocations: dict[str, Found] = field(default_factory=dict)  # Filter's, by node
    allocations: dict[int, dict[str, Any]] = field(default_factory=dict)  # claim index -> Reserve's pick
    unavailable: set[int] = field(default_factory=set)

    def clone(self) -> _StateData:
        return self  # as upstream: what-if evaluations share the cycle's Filter results

    def chosen(self, node_name: str) -> None:
        """Reserve's node is chosen: let go of the allocator and of what Filter kept for the other
        nodes. PreBind reads the chosen node's special claim only, and the state lives until the
        pod is bound: on a cluster that binds slower than the scheduler decides, thousands of
        pods wait with theirs (each with a search per node of the cycle)."""
        self.allocator = None
        self.node_allocations = {}
        node_claim = self.node_claims.get(node_name)
        self.node_claims = {node_name: node_claim} if node_claim is not None else {}
        self.extended_by_offer = {}

    def to_allocate(self) -> list[int]:
        return [i for i, c in enumerate(self.claims) if not c.allocation]

    @property
    def extended_index(self) -> int | None:
        """The special claim's index (it comes last), or None."""
        return self.user_claims if len(self.claims) > self.user_claims else None


def claim_name(pod: Manifest, pod_claim: Manifest) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the claim's name and whether it must be owned by the pod."""
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"]), False
    meta = manifest.meta(pod)
    where = f'pod "{meta.get("namespace") or "default"}/{meta.get("name")}"'
    if pod_claim.get("resourceClaimTemplateName"):
        for status in manifest.status(pod).get("resourceClaimStatuses") or ():
            if status.get("name") == pod_claim.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name else None), True
        raise ClaimProblem(f"{where}: ResourceClaim not created yet")
    raise ClaimProblem(f'{where}, spec.resourceClaim "{pod_claim.get("name")}": none of the supported fields are set')


class ClaimTracker:
    """What every profile's DynamicResources shares (``Handle.shared``; upstream's claim tracker in
    the ``SharedDRAManager``): in-flight allocations by claim uid, Reserve's picks until the
    store shows PreBind's write, so no two profiles, and no framework rebuilt by a hot reload,
    hand out the same device; the claims as stored, indexed (:class:`ClaimIndex`); and the caches
    of slices and CEL results."""

    def __init__(self) -> None:
        self.in_flight: dict[str, dict[str, Any]] = {}
        # uids of special claims in flight that the store may not show yet: in memory only,
        # or created by PreBind before the watch brings them (upstream polls its assume cache,
        # waitForExtendedClaimInAssumeCache); their allocations stay in flight meanwhile.
        self.unseen: set[str] = set()
        self.claims = ClaimIndex()
        self.selector_results = SelectorResults()
        self.slice_index = SliceIndex(())


@dataclass(frozen=True, slots=True)
class _ClaimChange:
    """A claim event as the queueing hint reads it (the objects kept to recognise the event)."""

    old: Manifest | None
    new: Manifest
    uid: str
    deallocated: bool
    status_changed: bool


class DynamicResources(DefaultNormalizeScore):
    name = NAME
    args_model = None

    def __init__(self, args: object, handle: Handle) -> None:
        self._handle = handle
        self._tracker = handle.shared(NAME, ClaimTracker)
        self._last_change: _ClaimChange | None = None
        device_cel.warm_up()

    @property
    def in_flight(self) -> dict[str, dict[str, Any]]:
        return self._tracker.in_flight

    # -- the objects ----------------------------------------------------------------------------------
    def _claims_by_key(self) -> Mapping[tuple[str, str], ResourceClaim]:
        """The stored claims by (namespace, name), read again only when the store says they
        changed (a backend that cannot say, None, is read every time): a claim event runs the
        hints of every pending pod, and each must cost what upstream's lister Get does."""
        claims = self._tracker.claims
        version = self._handle.objects_version(RESOURCE_CLAIM)
        if version is None or version != claims.version:
            claims.refresh(self._handle.objects(RESOURCE_CLAIM))
            claims.version = version
        return claims.by_key

    def pod_claims(
        self, pod: PodInfo, stored: Mapping[tuple[str, str], ResourceClaim] | None = None
    ) -> list[ResourceClaim]:
        """``foreachPodResourceClaim``: the pod's claims, or :class:`ClaimProblem`."""
        stored = self._claims_by_key() if stored is None else stored
        claims = []
        for pod_claim in manifest.spec(pod.pod).get("resourceClaims") or ():
            name, must_check_owner = claim_name(pod.pod, pod_claim)
            if name is None:
                continue
            claim = stored.get((pod.namespace, name))
            if claim is None:
                raise ClaimProblem(f'could not find ResourceClaim "{pod.namespace}/{name}"')
            if claim.deleting:
                raise ClaimProblem(f'resourceclaim "{name}" is being deleted')
            if must_check_owner and not claim.controlled_by(pod.uid):
                raise ClaimProblem(
                    f"ResourceClaim {pod.namespace}/{name} was not created for Pod {pod.namespace}/{pod.name} "
                    "(Pod is not owner)"
                )
            claims.append(claim)
        return claims

    def _allocated_devices(self) -> set[DeviceID]:
        """``ListAllAllocatedDevices``: devices of every allocation, stored or in flight (admin
        access ones excepted), from the claims as last read by :meth:`_claims_by_key`."""
        return self._tracker.claims.allocated_devices(self.in_flight, self._tracker.unseen)

    # -- EventsToRegister ---------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        # With queueing hints (GA) upstream drops UpdateNodeTaint from the node events.
        node = ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_ALLOCATABLE
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, node)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, add_update), self.is_schedulable_after_claim_change
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, add_update)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_SLICE, add_update)),
        ]  # fmt: skip

    def is_schedulable_after_claim_change(
        self, pod: PodInfo, old: Manifest | None, new: Manifest | None
    ) -> QueueingHint:
        if not isinstance(new, Mapping):
            return QueueingHint.QUEUE
        change = self._claim_change(old, new)
        if not change.deallocated and not change.status_changed:
            return QueueingHint.SKIP  # every answer below would be Skip
        try:
            uses = any(c.uid == change.uid for c in self.pod_claims(pod))
        except ClaimProblem:
            return QueueingHint.SKIP
        if change.deallocated:
            return QueueingHint.QUEUE  # a deallocated claim frees devices for any pod
        return QueueingHint.QUEUE if uses else QueueingHint.SKIP

    def _claim_change(self, old: Manifest | None, new: Manifest) -> _ClaimChange:
        """What an event's claims say, read once per event: the hint runs for every pending pod
        with the same two objects (a store replaces an object it changes, never edits it)."""
        last = self._last_change
        if last is not None and last.new is new and last.old is old:
            return last
        modified = ResourceClaim(new)
        original = ResourceClaim(old) if isinstance(old, Mapping) else None
        last = self._last_change = _ClaimChange(
            old,
            new,
            modified.uid,
            deallocated=original is not None and bool(original.allocation) and not modified.allocation,
            # apiequality.Semantic.DeepEqual of the statuses: a struct in Go, so absent reads as empty
            status_changed=original is None or original.status != modified.status,
        )
        return last

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        modified = PodInfo.of(new)
        if modified.uid != pod.uid:
            return QueueingHint.SKIP
        try:
            self.pod_claims(modified)
        except ClaimProblem:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    # -- PreEnqueue -----------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        if not manifest.spec(pod.pod).get("resourceClaims"):
            return None
        try:
            self.pod_claims(pod)
        except ClaimProblem as problem:
            return Status.unresolvable(str(problem))
        return None

    # -- PreFilter ---------------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        data = _StateData()
        state.write(STATE_KEY, data)
        has_claims = bool(manifest.spec(pod.pod).get("resourceClaims"))
        scalars = pod.requests.scalar_resources
        may_be_extended = any(q and is_dra_extended_resource_name(n) for n, q in scalars.items())
        if not has_claims and not may_be_extended:
            return None, Status.skip()
        device_classes = stored_classes(self._handle)
        if may_be_extended:
            resolver = device_classes.resolver
            data.scalars = extended.dra_backed_requests(pod, resolver)
            data.classes = resolver if data.scalars else None
        if not has_claims and not data.scalars:
            return None, Status.skip()  # its extended resources are all device plugins'
        stored = self._claims_by_key()
        try:
            data.claims = self.pod_claims(pod, stored) if has_claims else []
        except ClaimProblem as problem:
            return None, Status.unresolvable(str(problem))
        data.user_claims = len(data.claims)
        if data.scalars:
            # preFilterExtendedResources: the special claim goes last, from an earlier cycle or new
            found = extended.find_claim(pod, self._tracker.claims.extended_claims(pod.uid))
            data.claims.append(found if found is not None else extended.special_claim(pod))
        if not data.claims:
            return None, Status.skip()
        classes = device_classes.by_name
        for index, claim in enumerate(data.claims):
            allocation = claim.allocation
            if allocation:
                # "resourceclaim in use" cannot happen: CanBeReserved is always true in v1.36.
                if allocation.get("nodeSelector"):
                    try:
                        data.available_on[index] = parse_node_selector(allocation["nodeSelector"])
                    except SelectorError as error:
                        return None, Status.as_error(str(error))
                continue
            if claim.uid in self.in_flight:
                return None, Status.unresolvable(
                    f"resource claim {claim.namespace}/{claim.name} is in the process of being allocated"
                )
            if index == data.extended_index:
                continue  # its requests come in Filter; one from an earlier cycle is refused there
            for request in claim.requests or ():
                if request.get("exactly") is not None:
                    status = _validate_class(classes, request["exactly"].get("deviceClassName"), request["name"])
                elif request.get("firstAvailable"):
                    status = None
                    for sub in request["firstAvailable"]:
                        qualified = f"{request['name']}/{sub['name']}"
                        status = status or _validate_class(classes, sub.get("deviceClassName"), qualified)
                else:
                    status = Status.unresolvable(
                        f"resource claim {claim.namespace}/{claim.name}, request {request.get('name')}: "
                        "unknown request type"
                    )
                if status is not None:
                    return None, status
        if data.to_allocate():
            allocated = self._allocated_devices()
            slices = list(self._handle.objects(RESOURCE_SLICE))
            tracker = self._tracker
            if not tracker.slice_index.reuse(slices):
                tracker.slice_index = SliceIndex(slices)
            data.allocator = Allocator(classes, tracker.slice_index, allocated, tracker.selector_results)
        return None, None

    # -- Filter ------------------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        data = _state(state)
        if data is None:
            return Status.as_error("not found")
        if not data.claims:
            return None
        node_claim = self._filter_extended(data, pod, node)
        if isinstance(node_claim, Status):
            return node_claim
        if node_claim.claim is None and not data.user_claims:
            return None  # only extended resources, all from device plugins here: Fit checked them
        unavailable = [i for i, sel in data.available_on.items() if not sel.match(node.labels, node.name)]
        result: Found | None = None
        if data.allocator is not None:
            to_allocate = [
                node_claim.claim
                if i == data.extended_index and node_claim.claim is not None
                else data.claims[i].manifest
                for i in data.to_allocate()
            ]
            try:
                result = data.allocator.find(node.labels, node.name, to_allocate)
            except AllocationError as error:
                return Status.as_error(str(error))
            if result is None:
                return Status.unresolvable(ERR_CANNOT_ALLOCATE)
        if unavailable:
            data.unavailable.update(unavailable)
            return Status.unresolvable(ERR_NOT_AVAILABLE)
        if result is not None:
            data.node_allocations[node.name] = result
            data.node_claims[node.name] = node_claim
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns) -> BoolArray | None:
        """Filter over the columns when the pod's claims are all allocated and none is the
        special claim: then :meth:`filter` only asks whether each claim is available on the
        node, and the mask is that of the claims' node selectors. Pods sharing an allocated
        claim (SchedulingWithResourceClaim) otherwise matched it node by node in Python. Any
        other cycle runs per node. A node the mask rejects gets :meth:`filter`'s status (and
        PostFilter its unavailable claims) from the diagnosis, which calls it."""
        data = _state(state)
        if data is None or not data.claims or data.allocator is not None or data.extended_index is not None:
            return None
        mask = np.ones(columns.size, dtype=np.bool_)
        for selector in data.available_on.values():
            mask &= selector.mask(columns)
        return mask

    def _filter_extended(self, data: _StateData, pod: PodInfo, node: NodeInfo) -> extended.NodeClaim | Status:
        index = data.extended_index
        if index is None or data.classes is None:
            return extended.NodeClaim(None)
        allocatable = node.allocatable.scalar_resources
        # node_claim reads the node only through these: whether it offers each of the pod's
        # scalars, and how many
        offer = tuple(map(allocatable.get, data.scalars))
        found = data.extended_by_offer.get(offer)
        if found is None:
            found = extended.node_claim(
                data.claims[index], data.user_claims, pod.pod, data.scalars, allocatable, data.classes
            )
            data.extended_by_offer[offer] = found
        return Status.unresolvable(found) if isinstance(found, str) else found

    # -- PostFilter ------------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status | None]:
        data = _state(state)
        if data is None:
            return None, Status.as_error("not found")
        if not data.claims:
            return None, Status.unschedulable(ERR_NO_CLAIMS_TO_DEALLOCATE)
        special = data.claims[data.extended_index] if data.extended_index is not None else None
        for index in sorted(data.unavailable):
            claim = data.claims[index]
            if index == data.extended_index:
                if not extended.is_special(claim):
                    break  # deleted below
                continue
            reserved = claim.reserved_for
            if not reserved or (len(reserved) == 1 and reserved[0].get("uid") == pod.uid):
                new = copy.deepcopy(dict(claim.manifest))
                status = new.setdefault("status", {})
                for key in ("reservedFor", "allocation", "devices"):
                    status.pop(key, None)
                self._handle.start_task(self._write_status(new))
                return None, Status.unschedulable(DEALLOCATED)
        if special is not None and not extended.is_special(special):
            # the pod's claim from an earlier cycle: deleted, so that the next attempt starts anew
            self._handle.start_task(self._delete_quietly(special))
            return None, Status.unschedulable(DELETED)
        return None, Status.unschedulable(ERR_STILL_NOT_SCHEDULABLE)

    async def _write_status(self, claim: Manifest) -> None:
        await self._handle.api.update(RESOURCE_CLAIMS, claim, subresource=STATUS)

    # -- PreScore / Score --------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status | None:
        # Upstream has no PreScore; its Score answers 0 on every node when no claim is allocated
        # in this cycle, which normalizes to 0: skipping gives the same totals without a call per node.
        data = _state(state)
        return Status.skip() if data is None or data.allocator is None else None

    # -- Score --------------------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[int, Status | None]:
        data = _state(state)
        if data is None:
            return 0, Status.as_error("not found")
        found = data.node_allocations.get(node.name)
        if not data.claims or found is None:
            return 0, None
        return compute_score(data.claims, found.results()), None

    def score_batch(self, state: CycleState, pod: PodInfo, columns: NodeColumns, rows: IntArray) -> IntArray | None:
        """Without a ``firstAvailable`` request no claim adds to any node's score: every node's is 0,
        in one array rather than a call per node (None: score per node)."""
        data = _state(state)
        if data is None or any(claim.has_first_available for claim in data.claims):
            return None
        return np.zeros(len(rows), np.int64)

    # -- Reserve / Unreserve -----------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = _state(state)
        if data is None:
            return Status.as_error("not found")
        indices = data.to_allocate()
        if not data.claims or not indices or data.allocator is None:
            return None
        found = data.node_allocations.get(node_name)
        allocations = found.results() if found is not None else None
        data.chosen(node_name)
        if not allocations:
            if all(i == data.extended_index for i in indices):
                return None  # only the special claim, and the node's device plugins serve it all
            return Status.as_error("claim allocation not found for node")
        if len(allocations) != len(indices):
            return Status.as_error(
                f"internal error, have {len(allocations)} allocations, {len(indices)} claims to allocate, "
                f"want {len(indices)} claims"
            )
        for index, allocation in zip(indices, allocations, strict=True):
            data.allocations[index] = allocation
            uid = data.claims[index].uid
            self.in_flight[uid] = allocation
            if index == data.extended_index:
                self._tracker.unseen.add(uid)
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        data = _state(state)
        if data is None or not data.claims:
            return
        for claim in data.claims:
            self.in_flight.pop(claim.uid, None)
        stored = self._claims_by_key()
        for claim in data.claims[: data.user_claims]:
            current = stored.get(claim.key)
            if current and current.allocation and current.is_reserved_for(pod.uid):
                new = copy.deepcopy(dict(current.manifest))
                new["status"]["reservedFor"] = [r for r in new["status"]["reservedFor"] if r.get("uid") != pod.uid]
                self._handle.start_task(self._write_status(new))
        index = data.extended_index
        if index is not None:
            special = data.claims[index]
            self._tracker.unseen.discard(special.uid)
            if not extended.is_special(special):  # PreBind created it: delete it, not to orphan it
                self._handle.start_task(self._delete_quietly(special))

    async def _delete_quietly(self, claim: ResourceClaim) -> None:
        """Unreserve's and PostFilter's delete: a failure is logged (upstream logs it too); the
        claim is found again at the pod's next attempt, or goes with the pod."""
        error = await self._delete_claim(claim)
        if error is not None:
            log.warning("delete of resourceclaim %s/%s failed: %s", claim.namespace, claim.name, error)

    async def _delete_claim(self, claim: ResourceClaim) -> str | None:
        """``deleteClaim``: drop the delete-protection finalizer (retried on conflicts), then
        delete; the error, or None."""
        api = self._handle.api
        key = claim.key
        current = claim.manifest
        failed = ""
        for attempt in range(_CONFLICT_RETRIES):
            if attempt:
                fresh, problem = await _read_after_conflict(api, current)
                if fresh is None:
                    return f"get resourceclaim {key[0]}/{key[1]}: {problem.message() if problem else ''}"
                current = fresh
            finalizers = list(manifest.meta(current).get("finalizers") or ())
            if FINALIZER in finalizers:
                finalizers.remove(FINALIZER)
            new = copy.deepcopy(dict(current))
            new["metadata"] = {**new["metadata"], "finalizers": finalizers}
            updated, status = await api.update(RESOURCE_CLAIMS, new)
            if status is None:
                break
            failed = f"update resourceclaim {key[0]}/{key[1]}: {status.message()}"
            if not is_conflict(status):
                return failed
        else:
            return failed  # the last conflict, as RetryOnConflict returns it
        deleted = updated or current
        uid = manifest.uid_of(deleted)
        _, status = await api.delete(RESOURCE_CLAIMS, deleted, precondition=Precondition(uid=uid) if uid else None)
        return status.message() if status is not None else None

    # -- PreBind ------------------------------------------------------------------------------------------
    def pre_bind_pre_flight(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[PreBindPreFlightResult | None, Status | None]:
        """Upstream ``PreBindPreFlight``: PreBind has work when the pod has claims (it may run
        beside the other parallel PreBind plugins)."""
        data = _state(state)
        if data is None:
            return PARALLEL, Status.as_error("not found")
        return PARALLEL, (None if data.claims else Status.skip())

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        data = _state(state)
        if data is None:
            return Status.as_error("not found")
        for index, claim in enumerate(data.claims):
            if claim.is_reserved_for(pod.uid):
                continue
            allocation = data.allocations.get(index)
            if index == data.extended_index:
                if allocation is None and claim.requests is None:
                    continue  # the node's device plugins serve every extended resource
                error = await self._create_extended(data, index, pod, node_name)
                if error is not None:
                    return Status.as_error(error)
                claim = data.claims[index]
            bound, error = await self._bind_claim(claim, allocation, pod)
            if error is not None:
                return Status.as_error(error)
            if bound is not None:
                data.claims[index] = bound
            if index == data.extended_index:
                error = await self._write_pod_status(data, pod, node_name)
                if error is not None:
                    return Status.as_error(error)
        return None

    async def _create_extended(self, data: _StateData, index: int, pod: PodInfo, node_name: str) -> str | None:
        """``createExtendedResourceClaimInAPI``: the node's variant of the special claim, created
        with a generated name; it replaces the in-memory one (and its in-flight allocation)."""
        claim = data.claims[index]
        if not extended.is_special(claim):
            return None
        node_claim = data.node_claims.get(node_name)
        if node_claim is None or node_claim.claim is None:
            return f"extended resource claim not found for node {node_name}"
        body = copy.deepcopy(node_claim.claim)
        body.pop("status", None)
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k not in ("name", "uid")}
        created, status = await self._handle.api.create(RESOURCE_CLAIMS, body)
        stand_in = claim.uid
        allocation = self.in_flight.pop(stand_in, None)
        self._tracker.unseen.discard(stand_in)
        if status is not None or created is None:
            return f"create claim for extended resources {pod.namespace}/: {status.message() if status else ''}"
        view = ResourceClaim(created)
        if allocation is not None:
            self.in_flight[view.uid] = allocation
            self._tracker.unseen.add(view.uid)
        data.claims[index] = view
        return None

    async def _write_pod_status(self, data: _StateData, pod: PodInfo, node_name: str) -> str | None:
        """``patchPodExtendedResourceClaimStatus``: the pod's ``status.extendedResourceClaimStatus``."""
        node_claim = data.node_claims.get(node_name)
        mappings = list(node_claim.mappings) if node_claim is not None else []
        if not mappings:
            return (
                f"nil or empty request mappings, no update of pod {pod.namespace}/{pod.name} "
                "ExtendedResourceClaimStatus"
            )
        claim = data.claims[data.user_claims]
        value = {"requestMappings": mappings, "resourceClaimName": claim.name}
        status = await patch_pod_status(self._handle.api, pod, {"extendedResourceClaimStatus": value})
        if status is not None:
            return f"update pod {pod.namespace}/{pod.name} ExtendedResourceClaimStatus: {status.message()}"
        return None

    async def _bind_claim(
        self, claim: ResourceClaim, allocation: dict[str, Any] | None, pod: PodInfo
    ) -> tuple[ResourceClaim | None, str | None]:
        """``bindClaim``: finalizer, allocation and reservation, retried on conflicts."""
        api = self._handle.api
        uid = claim.uid
        key = f"{claim.namespace}/{claim.name}"
        current = claim
        done = False
        failed = ""
        try:
            for attempt in range(_CONFLICT_RETRIES):
                if attempt:
                    fresh, problem = await _read_after_conflict(api, current.manifest)
                    if fresh is None:
                        return None, f"get updated claim {key} after conflict: {problem.message() if problem else ''}"
                    current = ResourceClaim(fresh)
                if current.deleting:
                    return None, f"claim {key} got deleted in the meantime"
                new = copy.deepcopy(dict(current.manifest))
                if allocation is not None:
                    if current.allocation:
                        return None, f"claim {key} got allocated elsewhere in the meantime"
                    if FINALIZER not in current.finalizers:
                        new["metadata"] = {**new["metadata"], "finalizers": [*current.finalizers, FINALIZER]}
                        updated, status = await api.update(RESOURCE_CLAIMS, new)
                        if status is not None or updated is None:
                            failed = f"add finalizer to claim {key}: {status.message() if status else ''}"
                            if status is not None and is_conflict(status):
                                continue
                            return None, failed
                        new = copy.deepcopy(updated)
                    new.setdefault("status", {})["allocation"] = allocation
                reference = {"resource": "pods", "name": pod.name, "uid": pod.uid}
                new.setdefault("status", {})["reservedFor"] = [*(new["status"].get("reservedFor") or ()), reference]
                updated, status = await api.update(RESOURCE_CLAIMS, new, subresource=STATUS)
                if status is None and updated is not None:
                    written = ResourceClaim(updated)
                    if written.allocation:  # upstream AssumeClaimAfterAPICall: in flight until the store shows it
                        self.in_flight[uid] = dict(written.allocation)
                    done = True
                    return written, None
                what = "add allocation and reservation to" if allocation is not None else "add reservation to"
                failed = f"{what} claim {key}: {status.message() if status else ''}"
                if status is not None and is_conflict(status):
                    continue
                return None, failed
            return None, failed  # the last conflict, as RetryOnConflict returns it
        finally:
            if not done:
                self.in_flight.pop(uid, None)


async def _read_after_conflict(api: ClusterAPI, claim: Manifest) -> Written:
    """What client-go's ``retry.RetryOnConflict`` loops do before trying again, as upstream's
    ``bindClaim`` and ``deleteClaim`` use it: wait (``retry.DefaultRetry``), then read the claim
    from the API itself, not from the store, which may not have heard of the write that won."""
    await asyncio.sleep(_CONFLICT_WAIT * (1 + _CONFLICT_JITTER * random.random()))
    return await api.get(RESOURCE_CLAIMS, claim)


def compute_score(claims: Sequence[ResourceClaim], allocations: Sequence[Manifest]) -> int:
    """``computeScore``: ``8 - i`` for each claim whose ``firstAvailable`` subrequest ``i`` was chosen."""
    score = 0
    pending = iter(allocations)
    for claim in claims:
        allocation = claim.allocation or next(pending, None) or {}
        chosen = {
            r.get("request")
            for r in (allocation.get("devices") or {}).get("results") or ()
            if "/" in str(r.get("request"))
        }
        for request in claim.requests or ():
            for i, sub in enumerate(request.get("firstAvailable") or ()):
                if f"{request['name']}/{sub['name']}" in chosen:
                    score += FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE - i
    return score


def _validate_class(classes: Manifest, class_name: str | None, request: str) -> Status | None:
    if not class_name:
        return Status.as_error(f"request {request}: unsupported request type")
    if class_name not in classes:
        return Status.unresolvable(f"request {request}: device class {class_name} does not exist")
    return None


PARALLEL = PreBindPreFlightResult(allow_parallel=True)


def _state(state: CycleState) -> _StateData | None:
    return state.read_optional(STATE_KEY, _StateData)
