"""The claim index kept up to date from the stored claims gives what a scan of every claim gives.

The reference is the scan DynamicResources made per pod before the index (the claims by
namespace and name, the last of a key winning; ``ListAllAllocatedDevices`` over them), run on
random sequences of store writes, including input no store makes (duplicate keys and uids).
A pod's special claim of extended resources is looked up among its own (by controller uid) as
it was among every claim.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework import PodInfo
from scheduler_core.framework.dra import DeviceID, ResourceClaim, allocated_devices
from scheduler_core.plugins.dynamicresources import extended
from scheduler_core.plugins.dynamicresources.claim_index import ClaimIndex


def reference(claims: list[dict[str, Any]], in_flight: dict[str, Any]) -> tuple[dict[Any, Any], set[DeviceID]]:
    """The claims by key (as views, compared by their objects) and the allocated devices."""
    by_key = {c.key: c for c in map(ResourceClaim, claims)}
    allocated: set[DeviceID] = set()
    for claim in by_key.values():  # in the store's order, as the scan went
        if claim.allocation:
            in_flight.pop(claim.uid, None)  # PreBind's write landed
            allocated.update(allocated_devices(claim.allocation))
        elif claim.uid in in_flight:
            allocated.update(allocated_devices(in_flight[claim.uid]))
    for gone in set(in_flight) - {c.uid for c in by_key.values()}:
        del in_flight[gone]
    return by_key, allocated


def found(pod: PodInfo, claims: Any) -> Any:
    claim = extended.find_claim(pod, claims)
    return None if claim is None else claim.manifest


def allocation(devices: list[tuple[int, bool]]) -> dict[str, Any]:
    results = [{"driver": "d", "pool": "p", "device": f"dev-{n}", **({"adminAccess": True} if admin else {})}
               for n, admin in devices]  # fmt: skip
    return {"devices": {"results": results}}


def claim(name: int, uid: int, devices: list[tuple[int, bool]] | None) -> dict[str, Any]:
    status = {"allocation": allocation(devices)} if devices is not None else {}
    meta: dict[str, Any] = {"name": f"c{name}", "namespace": "ns", "uid": f"u{uid}"}
    if name % 3:  # an extended-resource claim of pod p0 or p1 (or of neither: not controller)
        meta["annotations"] = {"resource.kubernetes.io/extended-resource-claim": "true"}
        meta["ownerReferences"] = [{"name": f"p{uid % 2}", "uid": f"pod-{uid % 2}", "controller": uid % 5 != 4}]
    return {"metadata": meta, "status": status}


PODS = [PodInfo({"metadata": {"name": f"p{i}", "namespace": "ns", "uid": f"pod-{i}"}}) for i in range(2)]


DEVICES = st.none() | st.lists(st.tuples(st.integers(0, 5), st.booleans()), max_size=3)
STEP = st.one_of(
    st.tuples(st.just("create"), st.integers(0, 2), st.integers(0, 2), DEVICES),
    st.tuples(st.just("write"), st.integers(0, 20), st.integers(0, 7), DEVICES),  # a new version
    st.tuples(st.just("delete"), st.integers(0, 20), st.integers(0, 7), DEVICES),
    st.tuples(st.just("same"), st.integers(0, 20), st.integers(0, 7), DEVICES),  # an equal copy
    st.tuples(st.just("reserve"), st.integers(0, 20), st.integers(0, 7), DEVICES),  # in flight
    st.tuples(st.just("shuffle"), st.integers(0, 20), st.integers(0, 7), DEVICES),
    st.tuples(st.just("twice"), st.integers(0, 20), st.integers(0, 7), DEVICES),  # the same object again
)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(STEP, max_size=25), unique=st.booleans())
def test_the_index_agrees_with_a_scan_of_every_claim(steps: list[Any], unique: bool) -> None:
    store: list[dict[str, Any]] = []
    index = ClaimIndex()
    in_flight: dict[str, Any] = {}
    expected_in_flight: dict[str, Any] = {}
    for serial, (op, n, m, devices) in enumerate(steps):
        at = n % len(store) if store else None
        if op == "create":
            # a store: a new name and uid; otherwise, maybe a key or uid seen before
            store.append(claim(serial, serial, devices) if unique else claim(n, m, devices))
        elif op == "write" and at is not None:
            store[at] = {**store[at], "status": {"allocation": allocation(devices)} if devices is not None else {}}
        elif op == "delete" and at is not None:
            del store[at]
        elif op == "same" and at is not None:
            store[at] = copy.deepcopy(store[at])
        elif op == "reserve":
            uid = ResourceClaim(store[at]).uid if at is not None and n % 3 else f"u{m}"
            in_flight[uid] = expected_in_flight[uid] = allocation(devices or [])
        elif op == "twice" and at is not None and not unique:
            store.insert(n % (len(store) + 1), store[at])
        elif op == "shuffle" and store:
            store = store[n % len(store) :] + store[: n % len(store)]
        index.refresh(list(store))
        by_key, allocated = reference(store, expected_in_flight)
        assert {k: c.manifest for k, c in index.by_key.items()} == {k: c.manifest for k, c in by_key.items()}
        for pod in PODS:
            assert found(pod, index.extended_claims(pod.uid)) is found(pod, by_key.values())
        assert index.allocated_devices(in_flight) == allocated
        assert in_flight == expected_in_flight


def test_an_unchanged_store_is_not_read_again() -> None:
    claims = [claim(i, i, [(i, False)]) for i in range(3)]
    index = ClaimIndex()
    index.refresh(claims)
    index.refresh([*claims, claim(3, 3, None)])
    assert set(index.by_key) == {("ns", f"c{i}") for i in range(4)}
    assert index.allocated_devices({}) == {("d", "p", f"dev-{i}") for i in range(3)}


def test_an_unseen_special_claim_keeps_its_in_flight_devices_until_the_store_shows_it() -> None:
    """A special claim PreBind created (or a simulated one) that the store does not show yet stays
    in flight and counted; once the store shows it, it leaves ``unseen`` (the fast path and the
    duplicate-key path alike)."""
    for duplicate in (False, True):
        index = ClaimIndex()
        stored = [claim(1, 1, None)] + ([claim(1, 9, None)] if duplicate else [])
        in_flight = {"u2": allocation([(3, False)]), "u4": allocation([(4, False)])}
        unseen = {"u2"}
        index.refresh(stored)
        assert index.allocated_devices(in_flight, unseen) == {("d", "p", "dev-3")}
        assert set(in_flight) == {"u2"}  # u4's claim is gone and was never unseen
        assert unseen == {"u2"}
        index.refresh([*stored, claim(2, 2, [(3, False)])])
        assert index.allocated_devices(in_flight, unseen) == {("d", "p", "dev-3")}
        assert in_flight == {}  # the stored allocation now counts
        assert unseen == set()


def test_a_replaced_claim_keeps_its_place_among_the_pods_extended_claims() -> None:
    """Two extended-resource claims of one pod; the first is replaced by a new version, which
    keeps its place in the store: the lookup still finds it first, as the scan does (the index
    once answered in its key table's order, where a replaced claim moves to the end)."""
    first, second = claim(1, 1, None), claim(4, 3, None)  # both controlled by pod p1
    index = ClaimIndex()
    index.refresh([first, second])
    newer = copy.deepcopy(first)
    index.refresh([newer, second])
    assert found(PODS[1], index.extended_claims("pod-1")) is newer
    assert found(PODS[1], map(ResourceClaim, [newer, second])) is newer
