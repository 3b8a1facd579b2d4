"""The structured-parameters allocator: which devices of a node's ResourceSlices satisfy claims.

Upstream: ``k8s.io/dynamic-resource-allocation@v0.36.3/structured/internal/incubating``
(``allocator_incubating.go``, ``pools_incubating.go``), the allocator v1.36.3 picks for its
default feature gates. Kept as upstream:

* pools (``GatherPools``): slices grouped by (driver, pool), only the newest generation, a
  pool whose slices are not all published is incomplete and skipped; slices match a node by
  ``nodeName``, ``allNodes``, ``nodeSelector``, or per device (``perDeviceNodeSelection``);
  slices with ``sharedCounters`` give the pool's counter sets; pools in (driver, pool) order,
  slices by name, devices in slice order;
* requests: ``exactly`` with ``count`` or ``allocationMode: All``, ``firstAvailable``
  subrequests tried in order, class selectors then request selectors (CEL,
  :mod:`scheduler_core.framework.device_cel`), ``adminAccess`` (may take an allocated
  device), ``matchAttribute`` and ``distinctAttribute`` (devices of differing values)
  constraints, shared counters of partitionable devices, device taints (``NoSchedule`` and
  ``NoExecute`` untolerated keep a device out);
* consumable capacity (gate ``DRAConsumableCapacity``, on in v1.36; :mod:`.capacity`): a device
  with ``allowMultipleAllocations`` is shared, each share taking the capacity its request asks
  (rounded by the capacity's ``requestPolicy``) within what stored and in-flight shares already
  consume (an :class:`~.capacity.AllocatedState` given for ``allocated``), its shared counters
  taken by the first share only; every device's capacities are checked against a request's
  ``capacity.requests``;
* the depth-first search with backtracking (``allocateOne``), and the result: one entry per
  device (a share with its ``shareID`` and ``consumedCapacity``), class then claim configs,
  the node selector (``createNodeSelector``).

Not modelled (beta features off the path of plain claims): binding conditions (devices that
have them are tried last, as upstream, but PreBind does not wait for them).

``allocate`` answers the allocation results (one per claim), ``None`` when the claims do not fit
on the node, or raises :class:`AllocationError` (upstream's error; Filter makes it an Error).
``find`` answers the same as a :class:`Found`, whose results are built when first asked for:
Filter runs on every node, but only the chosen node's results are read (and, with a
``firstAvailable`` request, every feasible node's for Score).
"""

from __future__ import annotations

import uuid
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from operator import is_
from typing import Any

from scheduler_core.framework import Manifest, manifest
from scheduler_core.framework.device_cel import CELError, compile_selector
from scheduler_core.framework.node_selector import SelectorError, parse_node_selector
from scheduler_core.framework.quantity import parse_quantity
from scheduler_core.plugins.dynamicresources import capacity
from scheduler_core.plugins.dynamicresources.capacity import AllocatedState, DeviceCapacity, Quantity

ALLOCATION_RESULTS_MAX_SIZE = 32  # k8s.io/api resource/v1 types.go
DeviceID = tuple[str, str, str]  # driver, pool, device
Object = Manifest


class AllocationError(Exception):
    """An error of the allocation itself (not "does not fit"): upstream's message."""


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    slices: list[Object] = field(default_factory=list)  # device slices targeting the node
    # per slice, its devices with their ids, made once per pool (the search reads them per node)
    devices: list[list[tuple[DeviceID, Object]]] = field(default_factory=list)
    counters: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    incomplete: bool = False
    invalid: bool = False
    binding_conditions: bool = False
    # a device with capacities or allowMultipleAllocations: then the in-order fast path leaves
    # the pool to the search
    capacity: bool = False
    ids: frozenset[DeviceID] = frozenset()  # its devices' ids


@dataclass(slots=True)
class _Request:
    name: str  # "req" or "req/sub"
    base: str
    sub: str
    spec: Object
    klass: Object | None
    admin: bool
    count: int
    all_devices: list[tuple[Pool, Object, Object]] | None = None  # for allocationMode All
    capacities: dict[str, Quantity] | None = None  # ``capacity.requests``
    capacity_key: Hashable = None  # the same amounts, hashable
    # the class's and the request's CEL expressions: the key of their combined result per device
    selectors: tuple[Any, ...] = ()


@dataclass(slots=True)
class _Result:
    request: str
    device_id: DeviceID
    device: Object
    slice: Object
    admin: bool
    # a share of a device that allows multiple allocations: what it consumes (its shareID is
    # made with the result)
    consumed: dict[str, Quantity] | None = None


def node_matches(labels: Mapping[str, str], node_name: str, name: str, all_nodes: bool, selector: Any) -> bool:
    """``NodeMatches``: one of nodeName, allNodes, nodeSelector decides."""
    if name:
        return name == node_name
    if all_nodes:
        return True
    if selector is not None:
        try:
            return parse_node_selector(selector).match_or_error(labels, node_name)
        except SelectorError as error:
            raise AllocationError(f"failed to parse node selector: {error}") from None
    return False


class SliceIndex:
    """The cycle's ResourceSlices indexed once, so each node's pools are gathered without
    reading every slice again: slices by ``nodeName``, the others grouped by what decides
    whether they target a node (shared counters and ``allNodes`` always, equal
    ``nodeSelector``\\ s together, per-device selection one slice at a time), each group tested
    once per node, and the number of slices published per pool generation (upstream
    ``checkSlicesInPool``). Nodes that the same slices target share one list of pools (its
    identity lets a cycle search it once for all of them: :meth:`Allocator.find`). The plugin
    keeps one index while the stored slices are the same objects (:meth:`reuse`), and with it
    each node's pools, gathered once per node labels, and each device's capacities and counter
    consumption, parsed once."""

    def __init__(self, slices: Sequence[Object]) -> None:
        self.slices = list(slices)  # held, so the ids in ``reuse`` stay theirs
        self._pools: dict[str, tuple[Mapping[str, str], NodePools]] = {}
        self._shared: dict[tuple[str, tuple[int, ...]], NodePools] = {}
        self._capacities: dict[int, dict[str, DeviceCapacity]] = {}  # by id of a device of these slices
        self._consumptions: dict[int, list[tuple[str, str, Fraction | int]]] = {}  # likewise
        self._fits_alone: dict[Hashable, dict[int, bool]] = {}
        self._shapes: dict[str, int] = {}  # what a pool of a node's own is, but for its name
        self.by_node: dict[str, list[Object]] = {}
        # (how a node is matched, its slices): None always, ("selector", nodeSelector), or
        # ("device", None) for a slice with perDeviceNodeSelection
        self.groups: list[tuple[tuple[str, Any] | None, list[Object]]] = []
        self.newest: dict[tuple[str, str], int] = {}
        self.published: dict[tuple[str, str, int], int] = {}
        self.by_pool: dict[tuple[str, str], list[Object]] = {}
        selectors: dict[str, int] = {}  # repr of a nodeSelector -> its group
        always: list[Object] = []
        for s in slices:
            spec = manifest.spec(s)
            pool = spec.get("pool") or {}
            key = (str(spec.get("driver") or ""), str(pool.get("name") or ""))
            generation = int(pool.get("generation") or 0)
            self.newest[key] = max(self.newest.get(key, 0), generation)
            self.published[(*key, generation)] = self.published.get((*key, generation), 0) + 1
            self.by_pool.setdefault(key, []).append(s)
            if spec.get("sharedCounters"):
                always.append(s)  # relevant to every node (GatherPools)
            elif spec.get("nodeName"):
                self.by_node.setdefault(str(spec["nodeName"]), []).append(s)
            elif spec.get("allNodes"):
                always.append(s)
            elif spec.get("nodeSelector") is not None:
                text = repr(spec["nodeSelector"])
                if text not in selectors:
                    selectors[text] = len(self.groups)
                    self.groups.append((("selector", spec["nodeSelector"]), []))
                self.groups[selectors[text]][1].append(s)
            elif spec.get("perDeviceNodeSelection"):
                self.groups.append((("device", None), [s]))
        if always:
            self.groups.insert(0, (None, always))

    def reuse(self, slices: Sequence[Object]) -> bool:
        """Whether ``slices`` are the very objects this index was built from."""
        return len(slices) == len(self.slices) and all(a is b for a, b in zip(slices, self.slices, strict=True))

    def capacities(self, device: Object) -> dict[str, DeviceCapacity]:
        """The device's capacities with their request policies, parsed once."""
        found = self._capacities.get(id(device))
        if found is None:
            found = self._capacities[id(device)] = capacity.device_capacities(device)
        return found

    def fits_alone(self, amounts: Hashable) -> dict[int, bool]:
        """Whether a request of these amounts (a ``capacity_key``) fits each device's
        capacities with nothing of the device consumed, by ``id`` of the device: the answer of
        ``CmpRequestOverCapacity`` for a device without shares, the same in every cycle."""
        found = self._fits_alone.get(amounts)
        if found is None:
            found = self._fits_alone[amounts] = {}
        return found

    def consumption(self, device: Object) -> list[tuple[str, str, Fraction | int]]:
        """What ``device`` consumes, per counter set and counter, summed, whole amounts as ints;
        parsed once."""
        found = self._consumptions.get(id(device))
        if found is None:
            summed: dict[tuple[str, str], Fraction] = {}
            for consumption in device.get("consumesCounters") or ():
                set_name = str(consumption.get("counterSet"))
                for name, counter in (consumption.get("counters") or {}).items():
                    value = parse_quantity(str(counter.get("value", "0")))
                    summed[set_name, name] = summed.get((set_name, name), Fraction(0)) + value
            found = self._consumptions[id(device)] = [(s, n, _exact(v)) for (s, n), v in summed.items()]
        return found

    def pools(self, labels: Mapping[str, str], node_name: str) -> NodePools:
        cached = self._pools.get(node_name)
        if cached is not None and cached[0] is labels:
            return cached[1]
        matched: list[int] = []
        for i, (test, group) in enumerate(self.groups):
            if test is None:
                relevant = True
            elif test[0] == "selector":
                relevant = node_matches(labels, node_name, "", False, test[1])
            else:
                devices = manifest.spec(group[0]).get("devices") or ()
                relevant = any(_device_on_node(d, labels, node_name) for d in devices)
            if relevant:
                matched.append(i)
        key = (node_name if node_name in self.by_node else "", tuple(matched))
        pools = self._shared.get(key)
        if pools is None:
            relevant_slices = [*self.by_node.get(node_name, ())]
            for i in matched:
                relevant_slices.extend(self.groups[i][1])
            per_device = any(self.groups[i][0] == ("device", None) for i in matched)
            pools = self._shared[key] = NodePools(gather_pools(self, relevant_slices), per_device)
            if key[0]:  # the node's own slices: the pools before the first of theirs are common
                own = {_pool_key(s) for s in self.by_node[node_name]}
                mine = [(p.driver, p.name) in own for p in pools]
                pools.common = key[1]
                pools.prefix = mine.index(True) if True in mine else len(pools)
                pools.own = [p for p, m in zip(pools, mine, strict=True) if m]
                layout = (self._shape(p) if m else (p.driver, p.name) for p, m in zip(pools, mine, strict=True))
                pools.layout = (key[1], tuple(layout))
        self._pools[node_name] = (labels, pools)
        return pools

    def _shape(self, pool: Pool) -> int:
        """A number for what a search reads of a node's own pool, all but its name and node:
        equal for pools whose slices have the same devices in the same order."""
        text = repr((
            pool.driver, pool.incomplete, pool.invalid, pool.binding_conditions, pool.capacity, pool.counters,
            [{k: v for k, v in manifest.spec(s).items() if k not in ("nodeName", "pool")} for s in pool.slices],
        ))  # fmt: skip
        return self._shapes.setdefault(text, len(self._shapes))


class NodePools(list[Pool]):
    """The pools with devices for a node, in upstream's order. ``per_device``: a slice of them
    selects its devices' nodes one by one (``perDeviceNodeSelection``), so a search of these
    pools answers for one node only. A node with slices of its own (``nodeName``) has pools
    no other node has; ``common`` then names the groups of slices it shares with others and
    ``prefix`` counts the pools before its first own one: those are built from the same slices
    on every node with the same ``common``. ``own`` lists those pools, and ``layout`` tells
    every pool apart but for the names of the node's own: nodes with the same layout and the
    same devices of their own pools in use get the same search, renamed."""

    __slots__ = ("common", "layout", "own", "per_device", "prefix")

    def __init__(self, pools: list[Pool], per_device: bool) -> None:
        super().__init__(pools)
        self.per_device = per_device
        self.common: tuple[int, ...] | None = None
        self.prefix = len(pools)
        self.own: list[Pool] = []
        self.layout: Hashable = None


def _pool_key(s: Object) -> tuple[str, str]:
    spec = manifest.spec(s)
    return str(spec.get("driver") or ""), str((spec.get("pool") or {}).get("name") or "")


def gather_pools(index: SliceIndex, slices: Sequence[Object]) -> list[Pool]:
    """``GatherPools`` over the slices that target the node: grouped by pool, only the newest
    generation, an incomplete pool marked, in upstream's order."""
    grouped: dict[tuple[str, str], list[Object]] = {}
    for s in slices:
        grouped.setdefault(_pool_key(s), []).append(s)
    pools: list[Pool] = []
    for key, group in grouped.items():
        generation = index.newest[key]
        current = [s for s in group if int((manifest.spec(s).get("pool") or {}).get("generation") or 0) == generation]
        if not current:
            continue  # only obsolete slices target this node
        count = int((manifest.spec(current[0]).get("pool") or {}).get("resourceSliceCount") or 0)
        if index.published.get((*key, generation), 0) != count:
            pools.append(Pool(key[0], key[1], incomplete=True))
            continue
        pools.append(_build_pool(key, current))
    pools.sort(key=lambda p: (p.binding_conditions, p.driver, p.name))
    return pools


def _device_on_node(device: Object, labels: Mapping[str, str], node_name: str) -> bool:
    return node_matches(
        labels, node_name, device.get("nodeName") or "", bool(device.get("allNodes")), device.get("nodeSelector")
    )


def _build_pool(key: tuple[str, str], slices: list[Object]) -> Pool:
    pool = Pool(key[0], key[1])
    seen: set[str] = set()
    for s in sorted(slices, key=manifest.name_of):
        spec = manifest.spec(s)
        for counter_set in spec.get("sharedCounters") or ():
            pool.counters[counter_set["name"]] = {
                n: parse_quantity(str(c.get("value", "0"))) for n, c in (counter_set.get("counters") or {}).items()
            }
        if spec.get("sharedCounters"):
            continue
        for device in spec.get("devices") or ():
            if device["name"] in seen:
                pool.invalid = True  # validateDeviceNames: duplicate device name
            seen.add(device["name"])
            pool.binding_conditions = pool.binding_conditions or bool(device.get("bindingConditions"))
            pool.capacity = pool.capacity or bool(device.get("capacity") or device.get("allowMultipleAllocations"))
        pool.slices.append(s)
        pool.devices.append([((pool.driver, pool.name, str(d["name"])), d) for d in spec.get("devices") or ()])
    pool.ids = frozenset(device_id for devices in pool.devices for device_id, _ in devices)
    return pool


class SelectorResults:
    """CEL results by (expression, device object, driver), kept across cycles by the plugin: a
    device's attributes do not change while the same ResourceSlice object is stored, and
    evaluating a selector costs more than the rest of a Filter call. Also the combined result of
    a request's selectors (class's and request's), keyed by the tuple of their expressions, so a
    device already judged for the same selectors costs one lookup. The device object is kept
    in the entry, so its ``id`` is not reused while the entry lives; bounded by clearing. One
    table per expression (or tuple of them), by ``id`` of the device: a search reads one
    request's table for every device it tries."""

    MAX_ENTRIES = 1 << 17

    def __init__(self) -> None:
        self._tables: dict[Hashable, dict[int, tuple[Object, str, bool]]] = {}
        self._entries = 0

    def table(self, expression: Hashable) -> dict[int, tuple[Object, str, bool]]:
        """The results of ``expression``: (device, driver, result) by ``id`` of the device."""
        found = self._tables.get(expression)
        if found is None:
            found = self._tables[expression] = {}
        return found

    def get(self, expression: Hashable, device: Object, driver: str) -> bool | None:
        entry = self.table(expression).get(id(device))
        return None if entry is None or entry[0] is not device or entry[1] != driver else entry[2]

    def put(self, expression: Hashable, device: Object, driver: str, result: bool) -> None:
        if self._entries >= self.MAX_ENTRIES:
            for table in self._tables.values():
                table.clear()  # the tables a search holds stay the ones kept
            self._entries = 0
        self.table(expression)[id(device)] = (device, driver, result)
        self._entries += 1


@dataclass(slots=True)
class _Prepared:
    """What ``validateDeviceRequest`` makes of the claims when it does not depend on the node
    (no ``allocationMode: All``): made once per cycle, or the error it raised."""

    claims: Sequence[Object]
    requests: list[list[list[_Request]]] | None = None
    constraints: list[list[dict[str, Any]]] | None = None
    error: AllocationError | None = None


class Allocator:
    """One per scheduling cycle (upstream ``NewAllocator`` in PreFilter): the slices, classes and
    devices in use are fixed; :meth:`allocate` runs per node. The claims' requests, the same on
    every node unless one asks for all devices, are validated on the first node only. What a
    search answers depends on the node only through its pools (and, with per-device node
    selection, each device's own node), so nodes that share a :class:`NodePools` share one
    search: upstream searches each node, and Partitionable 2000pods_100nodes (100 nodes that
    the same 2,000 pools target) searched each of them alike. So does what the allocated
    devices leave of each pool's shared counters, counted once per pool."""

    def __init__(
        self,
        classes: Mapping[str, Object],
        slices: SliceIndex | Sequence[Object],
        allocated: set[DeviceID] | AllocatedState,
        results: SelectorResults | None = None,
    ) -> None:
        self.cycle = cycle = _Cycle(classes, slices, allocated, results)
        self._slices, self._allocated = cycle.slices, cycle.allocated
        # id(pools) -> (pools, claims, what their search answered): held, so the id stays theirs
        self._searches: dict[int, tuple[NodePools, Sequence[Object], _Allocation | AllocationError | None]] = {}
        # NodePools.common -> (claims, what a search of those pools answered, the last pool it
        # looked at): the answer of every node whose own pools come after that one
        self._common: dict[tuple[int, ...], tuple[Sequence[Object], _Allocation | AllocationError | None, int]] = {}
        # Allocator._alike_key -> (claims, what a search of such a node answered)
        self._alike: dict[Hashable, tuple[Sequence[Object], _Allocation | None]] = {}

    def allocate(
        self, labels: Mapping[str, str], node_name: str, claims: Sequence[Object]
    ) -> list[dict[str, Any]] | None:
        found = self.find(labels, node_name, claims)
        return None if found is None else found.results()

    def find(self, labels: Mapping[str, str], node_name: str, claims: Sequence[Object]) -> Found | None:
        """The devices for ``claims`` on the node, or None when they do not fit."""
        pools = self._slices.pools(labels, node_name)
        if pools.per_device:
            allocation = _Allocation(self.cycle, labels, node_name, claims, pools)
            return Found(allocation, node_name) if allocation.run() else None
        known = self._searches.get(id(pools))
        if known is not None and known[0] is pools and _same(known[1], claims):
            outcome = known[2]
        else:
            outcome = self._search(labels, node_name, claims, pools)
            self._searches[id(pools)] = (pools, claims, outcome)
        if isinstance(outcome, AllocationError):
            raise AllocationError(*outcome.args)
        if outcome is None:
            return None
        if outcome.pools is not pools and outcome.pools.layout is not None:
            # an alike node's search (or one that stayed in the common pools: renamed alike,
            # its devices are at the same places in this node's pools)
            return Found(outcome, node_name, pools, labels)
        return Found(outcome, node_name)

    def _search(
        self, labels: Mapping[str, str], node_name: str, claims: Sequence[Object], pools: NodePools
    ) -> _Allocation | AllocationError | None:
        """What the search answers on a node that no other node shares its pools with: the
        answer of an earlier search that never reached the node's own pools, or of a node whose
        own pools are alike with the same devices in use, renamed; else its own search."""
        common = self._common.get(pools.common) if pools.common is not None else None
        if common is not None and common[2] < pools.prefix and _same(common[0], claims):
            return common[1]  # it never reached a pool of the node it searched for
        alike_key = self._alike_key(pools)
        alike = self._alike.get(alike_key) if alike_key is not None else None
        if alike is not None and _same(alike[0], claims):
            return alike[1]  # renamed to this node's pools by the Found
        allocation = _Allocation(self.cycle, labels, node_name, claims, pools)
        outcome: _Allocation | AllocationError | None
        try:
            outcome = allocation if allocation.run() else None
        except AllocationError as error:
            outcome = error
        if pools.common is not None and allocation.reach < pools.prefix:
            self._common[pools.common] = (claims, outcome, allocation.reach)
        # not an error (its message may name the node's pool), nor requests that depend on the
        # node's devices (allocationMode All: then nothing was prepared for the whole cycle)
        if (
            alike_key is not None
            and not isinstance(outcome, AllocationError)
            and self.cycle.prepared(claims) is not None
        ):
            self._alike[alike_key] = (claims, outcome)
        return outcome

    def _alike_key(self, pools: NodePools) -> Hashable:
        """What a search reads of a node with pools of its own, but for their names: the
        layout of its pools, and which devices of its own pools are in use (allocated whole,
        shared, and the capacity shares consume). None for a node without pools of its own.
        What a pool's counters have left needs no place here: every node sees every pool with
        counters (their slices target all nodes), so two nodes are alike only when such a pool
        is common to both, or their own under one name with the same devices: the same ids,
        the same allocated ones."""
        if pools.layout is None:
            return None
        state = self._allocated
        used: list[Hashable] = []
        for pool in pools.own:
            whole = pool.ids & state
            used.append(frozenset(device_id[2] for device_id in whole) if whole else ())
            if state.shared_devices or state.capacity:
                shared = pool.ids & state.shared_devices
                consumed = sorted(
                    (device_id[2], tuple(sorted(state.capacity[device_id].items())))
                    for device_id in pool.ids
                    if device_id in state.capacity
                )
                used.append((frozenset(device_id[2] for device_id in shared), tuple(consumed)))
        return pools.layout, tuple(used)


class _Cycle:
    """What every search of a cycle reads and shares: the slices, classes and devices in use, and
    what is worked out once for all nodes (the claims' preparation, which devices fit a request
    next to the stored shares, what each pool's counters have left). The searches
    (:class:`_Allocation`) hold it, not the :class:`Allocator` that holds them: a cycle's
    allocator and its searches are then no reference cycle, and are freed as soon as the cycle
    drops them (a cyclic collector left 0.9 GiB of them waiting on ExtendedResource_50Classes
    5000pods_500nodes)."""

    __slots__ = ("allocated", "available", "classes", "fits", "prepared_claims", "results", "short", "slices")

    def __init__(
        self,
        classes: Mapping[str, Object],
        slices: SliceIndex | Sequence[Object],
        allocated: set[DeviceID] | AllocatedState,
        results: SelectorResults | None,
    ) -> None:
        self.results = results if results is not None else SelectorResults()
        self.classes = classes
        self.slices = slices if isinstance(slices, SliceIndex) else SliceIndex(slices)
        # the devices allocated whole, with the shares of the others and their consumed capacity
        self.allocated = capacity.state_of(allocated)
        self.prepared_claims: _Prepared | None = None
        # whether a request's amounts fit a device next to the stored shares alone (nothing of
        # the device being allocated): the same on every node of the cycle
        self.fits: dict[tuple[DeviceID, Hashable], bool] = {}
        # what the allocated devices leave of each pool's counters, and the pools they overdrew
        self.available: dict[tuple[str, str], dict[str, dict[str, Fraction | int]]] = {}
        self.short: set[tuple[str, str]] = set()

    def available_counters(self, pool: Pool) -> dict[str, dict[str, Fraction | int]]:
        """What the allocated devices leave of the pool's counters (the pool marked short when
        they overdrew one): the same for every search of the cycle."""
        key = (pool.driver, pool.name)
        if key not in self.available:
            available = {name: {k: _exact(v) for k, v in counters.items()} for name, counters in pool.counters.items()}
            slices = self.slices
            generation = slices.newest.get(key, 0)
            for s in slices.by_pool.get(key, ()):
                if int((manifest.spec(s).get("pool") or {}).get("generation") or 0) != generation:
                    continue
                for device in manifest.spec(s).get("devices") or ():
                    if not self.allocated.holds((*key, device.get("name"))):
                        continue
                    for set_name, name, value in slices.consumption(device):
                        counter_set = available.get(set_name, {})
                        if name in counter_set:
                            counter_set[name] -= value
            self.available[key] = available
            if any(value < 0 for counters in available.values() for value in counters.values()):
                self.short.add(key)
        return self.available[key]

    def prepared(self, claims: Sequence[Object]) -> _Prepared | None:
        """The node-independent preparation of ``claims`` made earlier in this cycle, if any."""
        prepared = self.prepared_claims
        if prepared is None or len(prepared.claims) != len(claims) or not all(map(is_, prepared.claims, claims)):
            return None
        return prepared


class Found:
    """A search that succeeded: the allocation results (one per claim), built on first use. Its
    node selectors are built at once, as they may raise :class:`AllocationError`; the rest
    reads only what the search left, which nothing changes afterwards. ``pools``: the search
    was another node's, alike (:meth:`Allocator._alike_key`), and is renamed to these pools
    when read; whether its node selectors raise was asked once of the search itself, as the
    slices that decide it are alike."""

    __slots__ = ("_allocation", "_labels", "_node_name", "_pools", "_results", "_selectors")

    def __init__(
        self,
        allocation: _Allocation,
        node_name: str,
        pools: NodePools | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self._allocation = allocation
        self._node_name = node_name
        self._pools = pools
        self._labels = labels
        self._selectors: list[dict[str, Any] | None] | None = None
        if pools is None:
            self._selectors = [allocation._node_selector(i, node_name) for i in range(len(allocation.claims))]
        else:
            allocation.check_node_selectors()
        self._results: list[dict[str, Any]] | None = None

    def results(self) -> list[dict[str, Any]]:
        if self._results is None:
            allocation, selectors = self._allocation, self._selectors
            if self._pools is not None:
                allocation = allocation.renamed(self._labels or {}, self._node_name, self._pools)
                selectors = [allocation._node_selector(i, self._node_name) for i in range(len(allocation.claims))]
            assert selectors is not None
            self._results = [allocation._result(i, selectors[i]) for i in range(len(allocation.claims))]
        return self._results


def _asks_for_all(claims: Sequence[Object]) -> bool:
    for claim in claims:
        for request in (manifest.spec(claim).get("devices") or {}).get("requests") or ():
            for spec in [request.get("exactly") or {}, *(request.get("firstAvailable") or ())]:
                if spec.get("allocationMode") == "All":
                    return True
    return False


def _same(a: Sequence[Object], b: Sequence[Object]) -> bool:
    return len(a) == len(b) and all(map(is_, a, b))


class _Allocation:
    def __init__(
        self, cycle: _Cycle, labels: Mapping[str, str], node_name: str, claims: Sequence[Object], pools: NodePools
    ) -> None:
        self.cycle = cycle
        self.labels = labels
        self.node_name = node_name
        self.claims = claims
        self.pools = pools
        self.requests: list[list[list[_Request]]] = []  # claim -> request -> alternatives
        self.constraints: list[list[dict[str, Any]]] = []
        self.results: list[list[_Result]] = [[] for _ in claims]
        self.allocating: dict[DeviceID, set[int]] = {}
        # ``allocatingCapacity``: the capacity taken by this search's shares, per device
        self.allocating_capacity: dict[DeviceID, dict[str, Fraction]] = {}
        self.consumed: dict[tuple[str, str], dict[str, dict[str, Fraction | int]]] = {}  # pool -> set -> counter
        self._consumption = cycle.slices.consumption
        self.chosen: dict[tuple[int, int], int] = {}
        self.reach = -1  # the last of the pools the search looked at (:meth:`Allocator.find`)
        self._where: list[tuple[int, int, int]] | None = None  # :meth:`_places`
        self._selectors_raise: AllocationError | bool | None = False  # :meth:`check_node_selectors`

    def renamed(self, labels: Mapping[str, str], node_name: str, pools: NodePools) -> _Allocation:
        """This search's answer for another node whose pools have the same layout and the same
        devices in use: each result the device at the same place in that node's pools."""
        other = _Allocation(self.cycle, labels, node_name, self.claims, pools)
        other.requests, other.constraints, other.chosen = self.requests, self.constraints, self.chosen
        places = iter(self._places())  # the results' places, claim after claim
        for taken, results in zip(other.results, self.results, strict=True):
            for r, (pool_index, slice_index, device_index) in zip(results, places, strict=False):
                pool = pools[pool_index]
                device_id, device = pool.devices[slice_index][device_index]
                taken.append(_Result(r.request, device_id, device, pool.slices[slice_index], r.admin, r.consumed))
        return other

    def check_node_selectors(self) -> None:
        """Raise what building this search's node selectors raises (asked once)."""
        if self._selectors_raise is False:
            self._selectors_raise = None
            try:
                for i in range(len(self.claims)):
                    self._node_selector(i, self.node_name)
            except AllocationError as error:
                self._selectors_raise = error
        if isinstance(self._selectors_raise, AllocationError):
            raise AllocationError(*self._selectors_raise.args)

    def _places(self) -> list[tuple[int, int, int]]:
        """Where each result's device is in the node's pools (pool, slice, device), in order."""
        if self._where is None:
            index = {(p.driver, p.name): i for i, p in enumerate(self.pools)}
            self._where = []
            for results in self.results:
                for r in results:
                    pool_index = index[r.device_id[:2]]
                    pool = self.pools[pool_index]
                    slice_index = next(i for i, s in enumerate(pool.slices) if s is r.slice)
                    device_index = next(i for i, (_, d) in enumerate(pool.devices[slice_index]) if d is r.device)
                    self._where.append((pool_index, slice_index, device_index))
        return self._where

    # -- preparing the requests (``validateDeviceRequest``) ------------------------------------------
    def run(self) -> bool:
        prepared = self.cycle.prepared(self.claims)
        if prepared is None:
            if _asks_for_all(self.claims):  # the requests depend on the node's devices
                self.reach = len(self.pools)
                self._prepare()
            else:
                prepared = _Prepared(self.claims)
                try:
                    self._prepare()
                except AllocationError as error:
                    prepared.error = error
                prepared.requests, prepared.constraints = self.requests, self.constraints
                self.cycle.prepared_claims = prepared
        if prepared is not None:
            if prepared.error is not None:
                raise AllocationError(*prepared.error.args)
            assert prepared.requests is not None and prepared.constraints is not None
            self.requests = prepared.requests  # never changed by the search
            # constraints hold the search's state: a fresh copy per node
            self.constraints = [
                [{**c, "value": None, "count": 0, "attributes": {}} for c in cs] for cs in prepared.constraints
            ]
        if any(p.invalid for p in self.pools):
            self.reach = len(self.pools)
            if not self._has_valid_device_pool():
                raise AllocationError("invalid resource pools were encountered")
        request = self._only_request()
        found = self._allocate_in_order(request) if request is not None else None
        return self._allocate_claim(0) if found is None else found

    def _prepare(self) -> None:
        for claim in self.claims:
            devices = manifest.spec(claim).get("devices") or {}
            alternatives: list[list[_Request]] = []
            minimum = 0
            for request in devices.get("requests") or ():
                if request.get("exactly") is not None:
                    req = self._request(claim, request["name"], request["name"], "", request["exactly"])
                    alternatives.append([req])
                    minimum += req.count
                elif request.get("firstAvailable"):
                    subs = [
                        self._request(claim, f"{request['name']}/{sub['name']}", request["name"], sub["name"], sub)
                        for sub in request["firstAvailable"]
                    ]
                    alternatives.append(subs)
                    minimum += min(s.count for s in subs)
                else:
                    raise AllocationError(f"claim {_key(claim)}, request {request.get('name')}: unknown request type")
            if minimum > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {_key(claim)}: number of requested devices {minimum} exceeds the claim limit of "
                    f"{ALLOCATION_RESULTS_MAX_SIZE}"
                )
            self.requests.append(alternatives)
            constraints: list[dict[str, Any]] = []
            for i, constraint in enumerate(devices.get("constraints") or ()):
                distinct = not constraint.get("matchAttribute")
                attribute = constraint.get("distinctAttribute") if distinct else constraint["matchAttribute"]
                if not attribute:
                    raise AllocationError(
                        f"claim {_key(claim)}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
                constraints.append({"requests": set(constraint.get("requests") or ()), "attribute": attribute,
                                    "distinct": distinct, "value": None, "count": 0, "attributes": {}})  # fmt: skip
            self.constraints.append(constraints)

    def _has_valid_device_pool(self) -> bool:
        return any(not p.invalid and not p.incomplete for p in self.pools)

    def _request(self, claim: Object, name: str, base: str, sub: str, spec: Object) -> _Request:
        class_name = spec.get("deviceClassName") or ""
        if not class_name:
            raise AllocationError(
                f"claim {_key(claim)}, request {name}: missing device class name (unsupported request type?)"
            )
        klass = self.cycle.classes.get(class_name)
        if klass is None:
            raise AllocationError(
                f"claim {_key(claim)}, request {name}: could not retrieve device class {class_name}: "
                f'deviceclass.resource.k8s.io "{class_name}" not found'
            )
        mode = spec.get("allocationMode") or "ExactCount"
        req = _Request(name, base, sub, spec, klass, bool(spec.get("adminAccess")), 1)
        req.capacities = capacity.request_capacities(spec)
        if req.capacities is not None:
            req.capacity_key = tuple(sorted((name, q.value) for name, q in req.capacities.items()))
        req.selectors = (_expressions(manifest.spec(klass).get("selectors")), _expressions(spec.get("selectors")))
        if mode == "ExactCount":
            req.count = int(spec.get("count") or 1)
            if req.count > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(f"claim {_key(claim)}, request {name}: exact count {req.count} is too large")
        elif mode == "All":
            req.all_devices = []
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {_key(claim)}, request {name}: asks for all devices, but resource pool "
                        f"{pool.driver}/{pool.name} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {_key(claim)}, request {name}: asks for all devices, but resource pool "
                        f"{pool.driver}/{pool.name} is currently invalid"
                    )
                for s, devices in zip(pool.slices, pool.devices, strict=True):
                    for device_id, device in devices:
                        if not self._selectable(len(self.requests), req, pool, s, device):
                            continue
                        if (pool.capacity or req.capacities is not None) and not self._fits(req, device_id, device):
                            continue
                        req.all_devices.append((pool, s, device))
            req.count = len(req.all_devices)
        else:
            raise AllocationError(f"claim {_key(claim)}, request {name}: unsupported count mode {mode}")
        return req

    # -- the search (``allocateOne``) ------------------------------------------------------------------
    def _only_request(self) -> _Request | None:
        """The request, when the claims make one request with one alternative, a count, no
        admin access, no capacity and no constraint: then no device taken limits which other can
        be, unless it consumes shared counters or capacity, and the search takes the first ones
        it can, in order."""
        if len(self.requests) != 1 or len(self.requests[0]) != 1 or self.constraints[0]:
            return None
        alternatives = self.requests[0][0]
        if len(alternatives) != 1 or alternatives[0].all_devices is not None or alternatives[0].admin:
            return None
        return alternatives[0] if alternatives[0].capacities is None else None

    def _allocate_in_order(self, request: _Request) -> bool | None:
        """What :meth:`_allocate_request` finds for the only request, without its recursion:
        the first ``count`` devices not in use, selected and not tainted, in the search's order;
        None (nothing taken) at a device consuming shared counters or in a pool with capacities,
        left to the search."""
        if request.count > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        self.chosen[(0, 0)] = 0
        if request.count <= 0:
            return True
        taken = self.results[0]
        allocated = self.cycle.allocated
        for pool_index, pool in enumerate(self.pools):
            self.reach = max(self.reach, pool_index)
            if pool.incomplete or pool.invalid:
                continue
            if pool.capacity:
                taken.clear()
                return None
            for s, devices in zip(pool.slices, pool.devices, strict=True):
                for device_id, device in devices:
                    if device_id in allocated:
                        continue
                    if not self._selectable(0, request, pool, s, device) or _taint_prevents(device, request.spec):
                        continue
                    if device.get("consumesCounters"):
                        taken.clear()
                        return None
                    taken.append(_Result(request.name, device_id, device, s, False))
                    if len(taken) == request.count:
                        return True
        return False

    def _allocate_claim(self, claim_index: int) -> bool:
        if claim_index >= len(self.claims):
            return True
        return self._allocate_request(claim_index, 0)

    def _allocate_request(self, claim_index: int, request_index: int) -> bool:
        alternatives = self.requests[claim_index]
        if request_index >= len(alternatives):
            return self._allocate_claim(claim_index + 1)
        for choice, request in enumerate(alternatives[request_index]):
            if len(self.results[claim_index]) + request.count > ALLOCATION_RESULTS_MAX_SIZE:
                continue
            self.chosen[(claim_index, request_index)] = choice
            if request.all_devices is not None:
                if request.all_devices and self._allocate_all(claim_index, request_index, request, 0):
                    return True
                continue
            if self._allocate_device(claim_index, request_index, request, 0, (0, 0, 0)):
                return True
        return False

    def _allocate_all(self, claim_index: int, request_index: int, request: _Request, n: int) -> bool:
        assert request.all_devices is not None
        if n >= len(request.all_devices):
            return self._allocate_request(claim_index, request_index + 1)
        pool, s, device = request.all_devices[n]
        undo = self._take(claim_index, request, pool, s, device, must=True)
        if undo is None:
            return False
        if self._allocate_all(claim_index, request_index, request, n + 1):
            return True
        undo()
        return False

    def _allocate_device(
        self, claim_index: int, request_index: int, request: _Request, n: int, start: tuple[int, int, int]
    ) -> bool:
        if n >= request.count:
            return self._allocate_request(claim_index, request_index + 1)
        allocated, allocating, admin = self.cycle.allocated, self.allocating, request.admin
        selected = self.cycle.results.table(request.selectors)
        constraints = self.constraints[claim_index]
        for pool_index in range(start[0], len(self.pools)):
            if pool_index > self.reach:
                self.reach = pool_index
            pool = self.pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            driver, fits = pool.driver, pool.capacity or request.capacities is not None
            slice_start = start[1] if pool_index == start[0] else 0
            for slice_index in range(slice_start, len(pool.slices)):
                s = pool.slices[slice_index]
                devices = pool.devices[slice_index]
                per_device = bool(manifest.spec(s).get("perDeviceNodeSelection"))
                device_start = start[2] if (pool_index, slice_index) == start[:2] else 0
                for device_index in range(device_start, len(devices)):
                    device_id, device = devices[device_index]
                    # "Checking for "in use" is cheap and thus gets done first." (allocateOne)
                    if admin:
                        if claim_index in allocating.get(device_id, ()):
                            continue
                    elif device_id in allocated or allocating.get(device_id):
                        continue
                    known = selected.get(id(device))  # _selectable, its kept result read here
                    if known is not None and known[0] is device and known[1] == driver and not per_device:
                        if not known[2]:
                            continue
                    elif not self._selectable(claim_index, request, pool, s, device):
                        continue
                    # what _take asks first, here without a call for each device of another
                    # constraint value (every check from here on only rejects, raising nothing)
                    if constraints and not all(_constraint_allows(c, request, device, driver) for c in constraints):
                        continue
                    if fits and not self._fits(request, device_id, device):
                        continue
                    undo = self._take(
                        claim_index, request, pool, s, device, must=False, device_id=device_id, vetted=True
                    )
                    if undo is None:
                        continue
                    nxt = (pool_index, slice_index, device_index + 1)
                    if self._allocate_device(claim_index, request_index, request, n + 1, nxt):
                        return True
                    undo()
        return False

    def _selectable(self, claim_index: int, request: _Request, pool: Pool, s: Object, device: Object) -> bool:
        """``isSelectable``: the class's selectors, the request's, then the device's own node
        (``perDeviceNodeSelection``). The selectors' combined result is kept across cycles."""
        results = self.cycle.results
        ok = results.get(request.selectors, device, pool.driver)
        if ok is None:
            class_selectors = manifest.spec(request.klass or {}).get("selectors")
            ok = self._selectors_match(claim_index, device, pool.driver, request.klass, class_selectors)
            ok = ok and self._selectors_match(claim_index, device, pool.driver, None, request.spec.get("selectors"))
            results.put(request.selectors, device, pool.driver, ok)
        if ok and manifest.spec(s).get("perDeviceNodeSelection"):
            ok = _device_on_node(device, self.labels, self.node_name)
        return ok

    def _selectors_match(
        self, claim_index: int, device: Object, driver: str, klass: Object | None, selectors: Any
    ) -> bool:
        results = self.cycle.results
        for i, selector in enumerate(selectors or ()):
            expression = (selector.get("cel") or {}).get("expression")
            if not expression:
                raise self._selector_error(claim_index, klass, i, "CEL expression empty (unsupported selector type?)")
            known = results.get(expression, device, driver)
            if known is not None:
                if not known:
                    return False
                continue
            try:
                program = compile_selector(expression)
            except CELError as error:
                raise self._selector_error(claim_index, klass, i, f"CEL compile error: {error}") from None
            try:
                matched = program.matches({**device, "driver": driver})
            except CELError as error:
                raise self._selector_error(claim_index, klass, i, f"CEL runtime error: {error}") from None
            results.put(expression, device, driver, matched)
            if not matched:
                return False
        return True

    def _selector_error(self, claim_index: int, klass: Object | None, index: int, what: str) -> AllocationError:
        where = f"class {manifest.name_of(klass)}" if klass is not None else f"claim {_key(self.claims[claim_index])}"
        return AllocationError(f"{where}: selector #{index}: {what}")

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.cycle.allocated or bool(self.allocating.get(device_id))

    def _take(
        self,
        claim_index: int,
        request: _Request,
        pool: Pool,
        s: Object,
        device: Object,
        *,
        must: bool,
        device_id: DeviceID | None = None,
        vetted: bool = False,
    ) -> Any:
        """``allocateDevice``: the undo function, or None when the device cannot be taken. A
        device that allows multiple allocations is not marked in use: the search takes a share
        of it, its capacity consumed, and its shared counters only by the first share. When a
        constraint failing is not an error (``must`` false), the constraints are asked first,
        without changing them: every check here only rejects, so the order changes nothing but
        the taking and giving back of counters for a device of another constraint's value
        (Partitionable's every other pool, for a claim's second device). ``vetted``: the caller
        asked those and whether the device is in use."""
        if device_id is None:
            device_id = (pool.driver, pool.name, str(device["name"]))
        if not vetted:
            if request.admin and claim_index in self.allocating.get(device_id, ()):
                return None
            if not request.admin and self._in_use(device_id):
                return None
            if not must:
                for constraint in self.constraints[claim_index]:
                    if not _constraint_allows(constraint, request, device, pool.driver):
                        return None
        if _taint_prevents(device, request.spec):
            return None
        multi = pool.capacity and bool(device.get("allowMultipleAllocations"))
        counters_taken = False
        if device.get("consumesCounters") and not (
            multi and (device_id in self.cycle.allocated.capacity or device_id in self.allocating_capacity)
        ):
            if not self._take_counters(pool, device):
                return None
            counters_taken = True
        added: list[dict[str, Any]] = []
        for constraint in self.constraints[claim_index]:
            if not _constraint_add(constraint, request, device, pool.driver):
                for c in added:
                    _constraint_remove(c)
                if counters_taken:
                    self._release_counters(pool, device)
                if must:
                    raise AllocationError(
                        f"claim {_key(self.claims[claim_index])}, request {request.name}: cannot add device "
                        f"{'/'.join(device_id)} because a claim constraint would not be satisfied"
                    )
                return None
            added.append(constraint)
        consumed: dict[str, Quantity] | None = None
        existed = False
        if pool.capacity or request.capacities is not None:
            if not self._fits(request, device_id, device):
                for c in added:
                    _constraint_remove(c)
                if counters_taken:
                    self._release_counters(pool, device)
                return None
            if multi:
                consumed = capacity.consumed_by(request.capacities, self.cycle.slices.capacities(device))
                existed = device_id in self.allocating_capacity
                entry = self.allocating_capacity.setdefault(device_id, {})
                for name, q in consumed.items():
                    entry[name] = entry.get(name, Fraction(0)) + q.value
        if not multi:
            self.allocating.setdefault(device_id, set()).add(claim_index)
        self.results[claim_index].append(_Result(request.name, device_id, device, s, request.admin, consumed))

        def undo() -> None:
            self.results[claim_index].pop()
            if consumed is not None:
                self._release_capacity(device_id, consumed, existed)
            else:
                self.allocating[device_id].discard(claim_index)
            for c in added:
                _constraint_remove(c)
            if counters_taken:
                self._release_counters(pool, device)

        return undo

    # -- consumable capacity (``CmpRequestOverCapacity``) ------------------------------------------------
    def _fits(self, request: _Request, device_id: DeviceID, device: Object) -> bool:
        allocating = self.allocating_capacity.get(device_id)
        consumed = self.cycle.allocated.capacity.get(device_id)
        capacities = self.cycle.slices.capacities(device)
        if allocating is not None:
            return capacity.fits(consumed, request.capacities, capacities, allocating)
        if consumed is None:  # the device's capacities and the request's amounts alone
            alone = self.cycle.slices.fits_alone(request.capacity_key)
            known = alone.get(id(device))
            if known is None:
                known = alone[id(device)] = capacity.fits(None, request.capacities, capacities, None)
            return known
        known = self.cycle.fits.get((device_id, request.capacity_key))
        if known is None:
            known = capacity.fits(consumed, request.capacities, capacities, None)
            self.cycle.fits[(device_id, request.capacity_key)] = known
        return known

    def _release_capacity(self, device_id: DeviceID, consumed: dict[str, Quantity], existed: bool) -> None:
        """``ConsumedCapacityCollection.Remove`` (an entry left at zero goes), keeping the entry
        of an earlier share: it marks the device as shared, so later shares skip its counters."""
        entry = self.allocating_capacity[device_id]
        for name, q in consumed.items():
            if name in entry:
                entry[name] -= q.value
        if not any(entry.values()):
            if existed:
                entry.clear()
            else:
                del self.allocating_capacity[device_id]

    # -- shared counters (``checkAvailableCounters``) ----------------------------------------------------
    def _take_counters(self, pool: Pool, device: Object) -> bool:
        """Upstream ``checkAvailableCounters``: the device's counters added to the pool's consumed
        ones, every counter of the pool checked against what is available, and the device's
        counters taken back if one is exceeded. Before this device every counter held (each take
        checked them all, and a release only lowers what is consumed), so only the counters this
        device consumes can fail now, or every one if the pool was short from the start (the
        allocated devices overdrew a counter: upstream treats that as none available). So those
        alone are checked, before anything is added: the same answer, and no add and take-back
        for each device that does not fit. Checking every counter, per device tried, was half of
        each Filter's time on Partitionable 2000pods_100nodes (2,000 slices)."""
        key = (pool.driver, pool.name)
        available = self.cycle.available_counters(pool)
        if key in self.cycle.short:
            return False
        consumed = self.consumed.setdefault(key, {})
        wanted = self._consumption(device)
        for set_name, name, value in wanted:
            limit = available.get(set_name, {}).get(name)
            if limit is not None and limit < consumed.get(set_name, {}).get(name, 0) + value:
                return False
        for set_name, name, value in wanted:
            counters = consumed.setdefault(set_name, {})
            counters[name] = counters.get(name, 0) + value
        return True

    def _release_counters(self, pool: Pool, device: Object) -> None:
        consumed = self.consumed[(pool.driver, pool.name)]
        for set_name, name, value in self._consumption(device):
            consumed[set_name][name] -= value

    # -- the result --------------------------------------------------------------------------------------
    def _result(self, claim_index: int, selector: dict[str, Any] | None) -> dict[str, Any]:
        claim = self.claims[claim_index]
        results = []
        for r in self.results[claim_index]:
            entry: dict[str, Any] = {"request": r.request, "driver": r.device_id[0], "pool": r.device_id[1],
                                     "device": r.device_id[2]}  # fmt: skip
            if r.admin:
                entry["adminAccess"] = True
            if r.consumed is not None:
                entry["shareID"] = str(uuid.uuid1())  # GenerateShareID: uuid.NewUUID
                if r.consumed:
                    entry["consumedCapacity"] = {
                        name: capacity.canonical(r.consumed[name]) for name in sorted(r.consumed)
                    }
            results.append(entry)
        config: list[dict[str, Any]] = []
        seen_classes: dict[str, list[dict[str, Any]]] = {}
        requests = (manifest.spec(claim).get("devices") or {}).get("requests") or ()
        for request_index, _ in enumerate(requests):
            chosen = self.requests[claim_index][request_index][self.chosen.get((claim_index, request_index), 0)]
            class_name = manifest.name_of(chosen.klass or {})
            if class_name in seen_classes:
                for entry in seen_classes[class_name]:
                    entry["requests"].append(chosen.name)
                continue
            seen_classes[class_name] = []
            for class_config in manifest.spec(chosen.klass or {}).get("config") or ():
                entry = {"source": "FromClass", "requests": [chosen.name], **_device_configuration(class_config)}
                seen_classes[class_name].append(entry)
                config.append(entry)
        for claim_config in (manifest.spec(claim).get("devices") or {}).get("config") or ():
            config.append({"source": "FromClaim", "requests": list(claim_config.get("requests") or []),
                           **_device_configuration(claim_config)})  # fmt: skip
        allocation: dict[str, Any] = {"devices": {"results": results}}
        if config:
            allocation["devices"]["config"] = config
        if selector is not None:
            allocation["nodeSelector"] = selector
        return allocation

    def _node_selector(self, claim_index: int, node_name: str) -> dict[str, Any] | None:
        fields: list[Any] = []
        expressions: list[Any] = []
        for r in self.results[claim_index]:
            spec = manifest.spec(r.slice)
            source = r.device if spec.get("perDeviceNodeSelection") else spec
            if source.get("nodeName"):
                return {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}  # fmt: skip
            terms = (source.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
            if len(terms) > 1:
                raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
            for raw in terms:
                term_fields, term_expressions = raw.get("matchFields") or (), raw.get("matchExpressions") or ()
                fields.extend(x for x in term_fields if x not in fields)
                expressions.extend(x for x in term_expressions if x not in expressions)
        if not fields and not expressions:
            return None
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


def _device_configuration(config: Object) -> dict[str, Any]:
    return {"opaque": config["opaque"]} if config.get("opaque") is not None else {}


def _expressions(selectors: Any) -> tuple[Any, ...]:
    return tuple((selector.get("cel") or {}).get("expression") for selector in selectors or ())


def _key(claim: Object) -> str:
    meta = manifest.meta(claim)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


# -- constraints (``matchAttributeConstraint``, ``distinctAttributeConstraint``) ------------------------
def _attribute(device: Object, driver: str, name: str) -> Any:
    domain, _, ident = name.partition("/")
    attributes = device.get("attributes") or {}
    value = attributes.get(name)
    if value is None and domain == driver:
        value = attributes.get(ident)
    if value is None:
        return None
    for kind in ("int", "bool", "string", "version"):
        if kind in value:
            return (kind, value[kind])
    return None


def _constraint_allows(constraint: dict[str, Any], request: _Request, device: Object, driver: str) -> bool:
    """Whether :func:`_constraint_add` would add the device, without adding it."""
    requests = constraint["requests"]
    if requests and request.base not in requests and request.name not in requests:
        return True
    value = _attribute(device, driver, constraint["attribute"])
    if value is None:
        return False
    if constraint["distinct"]:
        return not (constraint["count"] and value in constraint["attributes"].values())
    return not (constraint["count"] and constraint["value"] != value)


def _constraint_add(constraint: dict[str, Any], request: _Request, device: Object, driver: str) -> bool:
    if not _constraint_allows(constraint, request, device, driver):
        return False
    requests = constraint["requests"]
    if requests and request.base not in requests and request.name not in requests:
        constraint.setdefault("stack", []).append(False)
        return True
    value = _attribute(device, driver, constraint["attribute"])
    if constraint["distinct"]:
        # upstream keeps one value per (parent) request name: a request's second device
        # replaces its first one's value, and removing either forgets it
        constraint["attributes"][request.base] = value
        constraint["count"] += 1
        constraint.setdefault("stack", []).append(request.base)
        return True
    constraint.setdefault("stack", []).append(True)
    constraint["value"] = value
    constraint["count"] += 1
    return True


def _constraint_remove(constraint: dict[str, Any]) -> None:
    added = constraint["stack"].pop()
    if added is not False and constraint["distinct"]:
        constraint["attributes"].pop(added, None)
        constraint["count"] -= 1
    elif added:
        constraint["count"] -= 1
        if not constraint["count"]:
            constraint["value"] = None


# -- device taints (``taintPreventsAllocation``) --------------------------------------------------------
def _taint_prevents(device: Object, request: Object) -> bool:
    for taint in device.get("taints") or ():
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in request.get("tolerations") or ()):
            return True
    return False


def _tolerates(toleration: Object, taint: Object) -> bool:
    """``DeviceToleration.ToleratesTaint``: key (if set), effect (if set), then Exists or Equal."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    if toleration.get("operator") == "Exists":
        return True
    return bool(toleration.get("value", "") == taint.get("value", ""))  # Equal, the default


def _exact(value: Fraction) -> Fraction | int:
    """A whole quantity as an int: counters are mostly whole (bytes, units), and int arithmetic
    is several times cheaper than Fraction's in the counter checks of every device tried."""
    return value.numerator if value.denominator == 1 else value
