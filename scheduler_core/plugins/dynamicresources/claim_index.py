"""The ResourceClaims as stored, indexed, and the devices their allocations hold.

Upstream's DynamicResources looks a pod's claims up by name in the informer's lister and keeps
the devices of every allocation in an informer-fed cache (``allocateddevices.go``, read by
``ListAllAllocatedDevices``), so a scheduling cycle costs the same whatever the number of
claims. Our plugin reads claims through ``Handle.objects``, the stored objects without events;
:class:`ClaimIndex` keeps the same index up to date from it. A store never changes a stored
object, it replaces it, in its place, and appends new ones (the simulator's
:class:`~scheduler_core.simulator.claims.ClaimStore`, the operator's informer ``Store``), so the
claims that changed since the last look are found by comparing identities place by place (in C,
``map(operator.is_, ...)``), or, when the list got shorter, by set operations on ``id``\\ s (the
index holds every object it indexed, so an ``id`` is not reused while it is indexed). Only the
changed claims are read again, each into a :class:`~scheduler_core.framework.dra.ResourceClaim`
view, which the plugin then reads for as long as the object is stored.

A store has one claim per namespace and name and one per uid. Input that breaks that (a
hand-built list) is indexed as :meth:`DynamicResources._claims_by_key` always did, the last
claim of a key winning, and its allocated devices are computed from every claim each time.

Shares of devices that allow multiple allocations (results with a ``shareID``) are not devices
in use: :meth:`ClaimIndex.allocated_devices` answers the
:class:`~scheduler_core.plugins.dynamicresources.capacity.AllocatedState` that upstream's
``GatherAllocatedState`` does, the devices held whole, the shares and the capacity they consume;
only claims that hold shares are read again for it.

The special claims of extended resources backed by DRA are indexed by the pod that controls
them, so PreFilter finds a pod's claim from an earlier cycle (``findExtendedResourceClaim``)
without reading every claim.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import is_
from typing import Any

from scheduler_core.framework import Manifest
from scheduler_core.framework.dra import DeviceID, ResourceClaim
from scheduler_core.plugins.dynamicresources.capacity import AllocatedState, dedicated_devices, has_shares


class ClaimIndex:
    """The claims by (namespace, name) and by uid, as views made once per stored object, and
    the count of stored allocations per device; :meth:`refresh` with the stored claims before
    reading."""

    def __init__(self) -> None:
        self._claims: list[Manifest] = []  # as last refreshed, in store order
        # id of a stored object -> its view and the uids of its extended-resource controllers
        self._by_id: dict[int, tuple[ResourceClaim, tuple[str, ...]]] = {}
        self._extended: dict[str, list[ResourceClaim]] = {}  # controller uid -> extended-resource claims
        self.by_key: dict[tuple[str, str], ResourceClaim] = {}
        self.by_uid: dict[str, ResourceClaim] = {}
        self.version: int | None = None  # the store's objects_version the index was refreshed at
        self._allocated: dict[DeviceID, int] = {}  # device -> stored allocations holding it whole
        self._shares: dict[int, Manifest] = {}  # id of a stored object -> its allocation with shares
        self._distinct = True  # no object listed twice
        self._unique = True  # one claim per key and per uid
        # id of an in-flight allocation -> it, its devices held whole, whether it holds shares:
        # read once, not every cycle (hundreds wait for the watch while bindings queue)
        self._in_flight_read: dict[int, tuple[Manifest, list[DeviceID], bool]] = {}

    def refresh(self, claims: Iterable[Manifest]) -> None:
        """Bring the index to ``claims`` (all stored claims, in the store's order)."""
        current = list(claims)
        old = self._claims
        if self._distinct and len(current) >= len(old):
            # A store keeps an object's place when it replaces it and appends new ones, so the
            # changes are the places whose object is not the same one (compared in C), and the
            # tail. Correct for any order while no object is listed twice.
            same = list(map(is_, current, old))
            changed: list[int] = []
            try:
                while True:
                    changed.append(same.index(False, changed[-1] + 1 if changed else 0))
            except ValueError:
                pass
            removed = [old[i] for i in changed]
            added = [current[i] for i in changed]
            added.extend(current[len(old) :])
        else:
            ids = dict(zip(map(id, current), current, strict=True))
            added = [ids[i] for i in ids.keys() - self._by_id.keys()]
            removed = [self._by_id[i][0].manifest for i in self._by_id.keys() - ids.keys()]
        self._claims = current
        for obj in removed:
            claim, owners = self._by_id.pop(id(obj))
            for owner in owners:
                left_claims = [c for c in self._extended[owner] if c is not claim]
                if left_claims:
                    self._extended[owner] = left_claims
                else:
                    del self._extended[owner]
            if self.by_key.get(claim.key) is claim:
                del self.by_key[claim.key]
            if self.by_uid.get(claim.uid) is claim:
                del self.by_uid[claim.uid]
            devices = claim.devices
            if self._shares.pop(id(obj), None) is not None:
                devices = dedicated_devices(claim.allocation or {})
            for device in devices:
                left = self._allocated[device] - 1
                if left:
                    self._allocated[device] = left
                else:
                    del self._allocated[device]
        for obj in added:
            if id(obj) in self._by_id:
                continue  # listed twice
            claim = ResourceClaim(obj)
            owners = claim.controllers if claim.is_extended_resource_claim else ()
            self._by_id[id(obj)] = (claim, owners)
            for owner in owners:
                self._extended.setdefault(owner, []).append(claim)
            self.by_key[claim.key] = claim
            self.by_uid[claim.uid] = claim
            devices = claim.devices
            if claim.allocation and has_shares(claim.allocation):
                self._shares[id(obj)] = claim.allocation
                devices = dedicated_devices(claim.allocation)
            for device in devices:
                self._allocated[device] = self._allocated.get(device, 0) + 1
        self._distinct = len(self._by_id) == len(current)
        self._unique = len(self.by_key) == len(self._by_id) == len(self.by_uid)
        if not self._unique:  # the last of each key wins, as a dict built in store order
            views = [self._by_id[id(c)][0] for c in current]
            self.by_key = {c.key: c for c in views}
            self.by_uid = {c.uid: c for c in views}

    def extended_claims(self, pod_uid: str) -> Iterable[ResourceClaim]:
        """The claims annotated as extended-resource claims whose controller has ``pod_uid``, in
        the store's order, where ``findExtendedResourceClaim`` looks (with duplicate keys or
        uids: every claim of :attr:`by_key`). Not :attr:`by_key`'s order: a claim replaced
        keeps its place in the store but moves to the end of :attr:`by_key`."""
        found = self._extended.get(pod_uid, [])
        if not self._unique:
            return self.by_key.values()
        if len(found) <= 1:
            return found
        ids = {id(c.manifest) for c in found}
        return [self._by_id[id(c)][0] for c in self._claims if id(c) in ids]

    def allocated_devices(self, in_flight: dict[str, Any], unseen: set[str] | None = None) -> AllocatedState:
        """``GatherAllocatedState``: the devices and shares of every allocation, stored or in flight.
        An in-flight allocation whose claim now shows one as stored (PreBind's write landed),
        or whose claim is gone, is dropped from ``in_flight``, unless the claim is in ``unseen``
        (a special claim the store does not show yet); an ``unseen`` claim the store now shows
        leaves ``unseen``."""
        unseen = unseen if unseen is not None else set()
        if not self._unique:
            return self._allocated_devices_slowly(in_flight, unseen)
        for uid in list(in_flight):
            claim = self.by_uid.get(uid)
            if claim is None:
                if uid not in unseen:
                    del in_flight[uid]
            elif claim.allocation:
                del in_flight[uid]
        unseen.difference_update([uid for uid in unseen if uid in self.by_uid])
        allocated = AllocatedState(self._allocated)
        for allocation in self._shares.values():
            allocated.add_shares(allocation)
        read, kept = self._in_flight_read, {}
        for allocation in in_flight.values():
            seen = read.get(id(allocation))
            if seen is None or seen[0] is not allocation:
                seen = (allocation, dedicated_devices(allocation), has_shares(allocation))
            kept[id(allocation)] = seen
            allocated.update(seen[1])
            if seen[2]:
                allocated.add_shares(allocation)
        self._in_flight_read = kept
        return allocated

    def _allocated_devices_slowly(self, in_flight: dict[str, Any], unseen: set[str]) -> AllocatedState:
        """The same over every claim in store order, for input with duplicate keys or uids."""
        allocated = AllocatedState()
        stored = set()
        for claim in self.by_key.values():
            uid = claim.uid
            stored.add(uid)
            allocation = claim.allocation
            if allocation:
                in_flight.pop(uid, None)
            else:
                allocation = in_flight.get(uid)
            if allocation:
                allocated.add_allocation(allocation)
        unseen -= stored
        for uid in [uid for uid in in_flight if uid not in stored]:
            if uid in unseen:
                allocated.add_allocation(in_flight[uid])
            else:
                del in_flight[uid]
        return allocated
