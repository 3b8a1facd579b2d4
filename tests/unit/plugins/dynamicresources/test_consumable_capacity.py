"""Consumable capacity (``DRAConsumableCapacity``) in the allocator, against upstream's cases.

Ids name the case in ``k8s.io/dynamic-resource-allocation@v0.36.3/structured/internal/
allocatortesting/allocator_testing.go`` (``TestAllocator``) or in
``internal/incubating/consumable_capacity_test.go``. Upstream's ``one``, ``two``, ``four`` are
``resource.NewQuantity(n, BinarySI)``; ``withCapacityRequestPolicyRange`` is a policy with
default 2 and range min 2, step 2, max 4; ``withCapacityRequestPolicyValidValues(d, ...)``
has default ``d`` and valid values ``d`` then the others.
"""

from __future__ import annotations

import uuid
from fractions import Fraction
from typing import Any

import pytest

from scheduler_core.plugins.dynamicresources.allocator import Allocator
from scheduler_core.plugins.dynamicresources.capacity import (
    AllocatedState,
    DeviceCapacity,
    Policy,
    Quantity,
    canonical,
    consumed_by,
    fits,
    quantity,
    violates_policy,
)

DRIVER, POOL, NODE = "driver-a", "pool-1", "node-1"
CAP = "capacity-0"
MATCH = "driver-a/attr"


def klass(multi: bool | None = None) -> dict[str, Any]:
    expression = f'device.driver == "{DRIVER}"'
    if multi is not None:
        expression += f" && device.allowMultipleAllocations == {str(multi).lower()}"
    return {"metadata": {"name": "class-a"}, "spec": {"selectors": [{"cel": {"expression": expression}}]}}


def dev(name: str, capacity: dict[str, Any] | None = None, multi: bool = False, **attrs: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if capacity:
        out["capacity"] = capacity
    if multi:
        out["allowMultipleAllocations"] = True
    if attrs:
        out["attributes"] = {k: {"string": v} for k, v in attrs.items()}
    return out


def value(v: str) -> dict[str, Any]:
    return {CAP: {"value": v}}


def range_policy(v: str) -> dict[str, Any]:
    """``withCapacityRequestPolicyRange``."""
    return {CAP: {"value": v, "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}}}}


def values_policy(v: str, default: str, *more: str) -> dict[str, Any]:
    """``withCapacityRequestPolicyValidValues``."""
    return {CAP: {"value": v, "requestPolicy": {"default": default, "validValues": [default, *more]}}}


def slice_(*devices: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "slice-1"},
        "spec": {"driver": DRIVER, "pool": {"name": POOL, "generation": 1, "resourceSliceCount": 1},
                 "nodeName": NODE, "devices": list(devices)},
    }  # fmt: skip


def req(name: str = "req-0", capacity: str | None = None, mode: str | None = None) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "class-a"}
    if capacity is not None:
        exactly["capacity"] = {"requests": {CAP: capacity}}
    if mode:
        exactly["allocationMode"] = mode
    return {"name": name, "exactly": exactly}


def claim(*requests: dict[str, Any], name: str = "claim-0", constraints: list[Any] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": devices}}


def run(
    devices: list[dict[str, Any]],
    claims: list[dict[str, Any]],
    multi: bool | None = True,
    allocated: AllocatedState | None = None,
) -> list[list[str]] | None:
    """Each claim's results as ``request=device`` with ``+share`` and the consumed capacity."""
    allocator = Allocator(
        {"class-a": klass(multi)}, [slice_(*devices)], AllocatedState() if allocated is None else allocated
    )
    found = allocator.allocate({}, NODE, claims)
    if found is None:
        return None
    out = []
    for allocation in found:
        entries = []
        for r in allocation["devices"]["results"]:
            text = f"{r['request']}={r['device']}"
            if "shareID" in r:
                assert uuid.UUID(r["shareID"])
                text += "+share"
            if "consumedCapacity" in r:
                text += " " + ",".join(f"{k}:{v}" for k, v in r["consumedCapacity"].items())
            entries.append(text)
        out.append(entries)
    return out


def in_use(**consumed: str) -> AllocatedState:
    """``allocatedCapacityDevices``: device name -> capacity-0 consumed by stored shares."""
    state = AllocatedState()
    for device, amount in consumed.items():
        state.add_allocation({"devices": {"results": [
            {"request": "r", "driver": DRIVER, "pool": POOL, "device": device, "shareID": str(uuid.uuid4()),
             "consumedCapacity": {CAP: amount}}]}})  # fmt: skip
    return state


CASES = [
    pytest.param([dev("device-1", multi=True)], [claim(req()), claim(req(), name="claim-1")], True,
                 [["req-0=device-1+share"], ["req-0=device-1+share"]],
                 id="consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request"),
    pytest.param([dev("device-1", value("1"), multi=True), dev("device-2", value("1"), multi=True)],
                 [claim(req()), claim(req(), name="claim-1")], True,
                 [["req-0=device-1+share capacity-0:1"], ["req-0=device-2+share capacity-0:1"]],
                 id="consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request"),
    pytest.param([dev("device-1", value("2"), multi=True)], [claim(req()), claim(req(), name="claim-1")], True, None,
                 id="consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block"),
    pytest.param([dev("device-1", value("2"), multi=True)],
                 [claim(req(capacity="1")), claim(req(capacity="1"), name="claim-1")], True,
                 [["req-0=device-1+share capacity-0:1"], ["req-0=device-1+share capacity-0:1"]],
                 id="consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request"),
    pytest.param([dev("device-1", range_policy("4"), multi=True)], [claim(req()), claim(req(), name="claim-1")], True,
                 [["req-0=device-1+share capacity-0:2"], ["req-0=device-1+share capacity-0:2"]],
                 id="consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request"),
    pytest.param([dev("device-1", values_policy("1", "0"), multi=True)], [claim(req()), claim(req(), name="claim-1")],
                 True, [["req-0=device-1+share capacity-0:0"], ["req-0=device-1+share capacity-0:0"]],
                 id="consumable-capacity-multi-allocatable-device-with-zero-request-policy"),
    pytest.param([dev("device-1", values_policy("1", "0"), multi=True)], [claim(req(capacity="1"))], True, None,
                 id="consumable-capacity-multi-allocatable-device-violates-zero-request-policy"),
    pytest.param([dev("device-1", range_policy("4"), multi=True)],
                 [claim(req(capacity="1")), claim(req(capacity="1"), name="claim-1")], True,
                 [["req-0=device-1+share capacity-0:2"], ["req-0=device-1+share capacity-0:2"]],
                 id="consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request"),
    pytest.param([dev("device-1", range_policy("4"), multi=True)], [claim(req(capacity="3"))], True,
                 [["req-0=device-1+share capacity-0:4"]],
                 id="consumable-capacity-multi-allocatable-device-with-range-policy-step"),
    pytest.param([dev("device-1", values_policy("4", "1", "2"), multi=True)], [claim(req(capacity="2"))], True,
                 [["req-0=device-1+share capacity-0:2"]],
                 id="consumable-capacity-multi-allocatable-device-with-valid-values-policy"),
    pytest.param([dev("device-1", values_policy("3", "1", "3"), multi=True)], [claim(req(capacity="2"))], True,
                 [["req-0=device-1+share capacity-0:3"]],
                 id="consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up"),
    pytest.param([dev("device-1", range_policy("2"), multi=True)],
                 [claim(req(capacity="1")), claim(req(capacity="2"), name="claim-1")], True, None,
                 id="consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request"),
    pytest.param([dev("device-1", range_policy("10"), multi=True)], [claim(req(capacity="6"))], True, None,
                 id="consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy"),
    pytest.param([dev("device-1", value("2"), multi=True), dev("device-2", multi=True)],
                 [claim(req(capacity="2", mode="All"))], True, [["req-0=device-1+share capacity-0:2"]],
                 id="consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity"),
    pytest.param([dev("device-1", value("2"), multi=True), dev("device-2", value("1"), multi=True)],
                 [claim(req(capacity="2", mode="All"))], True, [["req-0=device-1+share capacity-0:2"]],
                 id="consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity"),
    pytest.param([dev("device-1", value("2"), multi=True), dev("device-2", value("1"), multi=True)],
                 [claim(req(capacity="1"), req("req-1", capacity="1", mode="All"))], None,
                 [["req-0=device-1+share capacity-0:1", "req-1=device-1+share capacity-0:1",
                   "req-1=device-2+share capacity-0:1"]],
                 id="consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient"),
    pytest.param([dev("device-1", value("1"), multi=True), dev("device-2", value("1"), multi=True)],
                 [claim(req(capacity="1"), req("req-1", capacity="1", mode="All"))], None, None,
                 id="consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient"),
    pytest.param([dev("device-1", value("1"))], [claim(req(capacity="1"))], False, [["req-0=device-1"]],
                 id="consumable-capacity-dedicated-device-with-consumable-capacity-request"),
    pytest.param([dev("device-1", range_policy("2"))], [claim(req(capacity="1")), claim(req(capacity="1"), name="c1")],
                 False, None, id="consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request"),
    pytest.param([dev("device-1", value("1"), multi=True)], [claim(req(capacity="1"))], False, None,
                 id="allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector"),
    pytest.param([dev("device-2", range_policy("2"), multi=True, attr="v1"),
                  dev("device-1", range_policy("4"), multi=True, attr="v2")],
                 [claim(req(capacity="2"), req("req-1", capacity="2"), constraints=[{"matchAttribute": MATCH}]),
                  claim(req(capacity="2"), name="claim-1")], None,
                 [["req-0=device-1+share capacity-0:2", "req-1=device-1+share capacity-0:2"],
                  ["req-0=device-2+share capacity-0:2"]],
                 id="consumable-capacity-with-multi-allocatable-device-backtrack"),
]  # fmt: skip


@pytest.mark.parametrize(("devices", "claims", "multi", "expected"), CASES)
def test_allocate_as_upstream(
    devices: list[Any], claims: list[Any], multi: bool | None, expected: list[list[str]] | None
) -> None:
    assert run(devices, claims, multi) == expected


@pytest.mark.parametrize(
    ("devices", "amount", "expected"),
    [
        pytest.param([dev("device-1", range_policy("2"), multi=True, attr="v")], "1", None,
                     id="distinct-constraint-one-multi-allocatable-device-with-distinct-constraint"),
        pytest.param([dev("device-1", range_policy("4"), multi=True, attr="v1"),
                      dev("device-2", range_policy("4"), multi=True, attr="v2")], "2",
                     [["req-0=device-1+share capacity-0:2", "req-1=device-2+share capacity-0:2"]],
                     id="distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint"),
    ],
)  # fmt: skip
def test_distinct_attribute_constraint(devices: list[Any], amount: str, expected: Any) -> None:
    claims = [claim(req(capacity=amount), req("req-1", capacity=amount), constraints=[{"distinctAttribute": MATCH}])]
    assert run(devices, claims) == expected


def test_a_distinct_attribute_is_kept_per_request_name_as_upstream() -> None:
    """``distinctAttributeConstraint`` keeps one value per request name: a request's second
    device replaces the first one's value, so a later request may take the first one's value."""
    devices = [dev(f"d{i}", attr=v) for i, v in enumerate(["a", "b", "a"])]
    claims = [claim({"name": "two", "exactly": {"deviceClassName": "class-a", "count": 2}}, req("one"),
                    constraints=[{"distinctAttribute": MATCH}])]  # fmt: skip
    assert run(devices, claims, None) == [["two=d0", "two=d1", "one=d2"]]


def test_a_request_for_a_capacity_the_device_lacks_does_not_fit() -> None:
    # consumable-capacity-multi-allocatable-device-with-missing-capacity-request (and its mode All)
    device = dev("device-1", {"capacity-1": {"value": "1"}}, multi=True)
    assert run([device], [claim(req(capacity="1"))]) is None
    assert run([device], [claim(req(capacity="1", mode="All"))]) is None


def test_a_subrequest_that_fits_is_chosen() -> None:
    """consumable-capacity-multi-allocatable-device-with-subrequest."""
    sub = [
        {"name": "subreq-0", "deviceClassName": "class-a", "capacity": {"requests": {CAP: "4"}}},
        {"name": "subreq-1", "deviceClassName": "class-a", "capacity": {"requests": {CAP: "2"}}},
        {"name": "subreq-1", "deviceClassName": "class-a"},
    ]
    claims = [claim({"name": "req-0", "firstAvailable": sub})]
    assert run([dev("device-1", range_policy("2"), multi=True)], claims) == [
        ["req-0/subreq-1=device-1+share capacity-0:2"]
    ]


@pytest.mark.parametrize(
    ("devices", "consumed", "claims", "multi", "expected"),
    [
        pytest.param([dev("device-1", range_policy("4"), multi=True)], {"device-1": "2"}, [claim(req(capacity="2"))],
                     True, [["req-0=device-1+share capacity-0:2"]],
                     id="consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining"),
        pytest.param([dev("device-1", range_policy("2"), multi=True), dev("device-2", range_policy("2"), multi=True)],
                     {"device-1": "2"}, [claim(req(capacity="2"))], True, [["req-0=device-2+share capacity-0:2"]],
                     id="consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device"),
        pytest.param([dev("device-1", range_policy("2"), multi=True)], {"device-1": "2"}, [claim(req(capacity="2"))],
                     True, None,
                     id="consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity"),
        pytest.param([dev("device-1", value("2"), multi=True), dev("device-2", value("1"), multi=True)],
                     {"device-1": "1"}, [claim(req(capacity="1", mode="All"))], None,
                     [["req-0=device-1+share capacity-0:1", "req-0=device-2+share capacity-0:1"]],
                     id="consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient"),
        pytest.param([dev("device-1", value("1"), multi=True), dev("device-2", value("1"), multi=True)],
                     {"device-1": "1"}, [claim(req(capacity="1", mode="All"))], None,
                     [["req-0=device-2+share capacity-0:1"]],
                     id="consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient"),
        pytest.param([dev("device-1", range_policy("2"))], {"device-1": "1"}, [claim(req(capacity="1"))], True, None,
                     id="allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable"),
    ],
)  # fmt: skip
def test_capacity_consumed_by_stored_shares(
    devices: list[Any], consumed: dict[str, str], claims: list[Any], multi: bool | None, expected: Any
) -> None:
    assert run(devices, claims, multi, in_use(**consumed)) == expected


def test_a_device_allocated_whole_is_not_shared() -> None:
    """allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated."""
    state = AllocatedState({(DRIVER, POOL, "device-1")})
    assert run([dev("device-1", range_policy("2"), multi=True)], [claim(req(capacity="1"))], True, state) is None


def test_a_plain_set_of_devices_is_a_state_without_shares() -> None:
    assert run([dev("device-1", range_policy("4"), multi=True)], [claim(req(capacity="2"))], True, None) == [
        ["req-0=device-1+share capacity-0:2"]
    ]
    allocator = Allocator({"class-a": klass(True)}, [slice_(dev("device-1", multi=True))], {(DRIVER, POOL, "device-1")})
    assert allocator.allocate({}, NODE, [claim(req())]) is None


def test_the_allocated_state_reads_shares_as_the_scheduler_does() -> None:
    """``foreachAllocatedDevice``: a result with a shareID is a share, admin access takes nothing."""
    state = AllocatedState()
    state.add_allocation({"devices": {"results": [
        {"request": "a", "driver": DRIVER, "pool": POOL, "device": "d1", "shareID": "s1",
         "consumedCapacity": {CAP: "1Gi"}},
        {"request": "b", "driver": DRIVER, "pool": POOL, "device": "d1", "shareID": "s2",
         "consumedCapacity": {CAP: "512Mi"}},
        {"request": "c", "driver": DRIVER, "pool": POOL, "device": "d2", "shareID": "s3"},
        {"request": "d", "driver": DRIVER, "pool": POOL, "device": "d3"},
        {"request": "e", "driver": DRIVER, "pool": POOL, "device": "d4", "adminAccess": True},
    ]}})  # fmt: skip
    assert set(state) == {(DRIVER, POOL, "d3")}
    assert state.shared == {(DRIVER, POOL, "d1", "s1"), (DRIVER, POOL, "d1", "s2"), (DRIVER, POOL, "d2", "s3")}
    assert state.capacity == {(DRIVER, POOL, "d1"): {CAP: Fraction(3 * 2**29)}}
    assert [state.holds((DRIVER, POOL, d)) for d in ("d1", "d2", "d3", "d4")] == [True, True, True, False]


def test_shared_counters_are_consumed_by_the_first_share_only() -> None:
    """allow-multiple-allocations-with-shared-device-counter-cross-cycle: a device already
    shared (capacity in use) takes no more of its counters."""
    counters = {
        "metadata": {"name": "counters"},
        "spec": {"driver": DRIVER, "pool": {"name": POOL, "generation": 1, "resourceSliceCount": 2},
                 "nodeName": NODE, "sharedCounters": [{"name": "set", "counters": {"mem": {"value": "1"}}}]},
    }  # fmt: skip
    device = dev("device-1", value("4"), multi=True)
    device["consumesCounters"] = [{"counterSet": "set", "counters": {"mem": {"value": "1"}}}]
    devices = slice_(device)
    devices["spec"]["pool"]["resourceSliceCount"] = 2
    slices = [counters, devices]
    two = [claim(req(capacity="1")), claim(req(capacity="1"), name="claim-1")]
    allocator = Allocator({"class-a": klass(True)}, slices, AllocatedState())
    assert allocator.allocate({}, NODE, two) is not None
    # the device's counters are taken once its share is stored, and a new share still fits
    allocator = Allocator({"class-a": klass(True)}, slices, in_use(**{"device-1": "1"}))
    assert allocator.allocate({}, NODE, [claim(req(capacity="1"))]) is not None


# -- consumable_capacity_test.go ------------------------------------------------------------------------
def _policy(default: str | None = None, lo: str | None = None, hi: str | None = None, step: str | None = None,
            values: list[str] | None = None, has_range: bool | None = None) -> Policy:  # fmt: skip
    return Policy(
        default=quantity(default) if default else None,
        minimum=quantity(lo) if lo else None,
        maximum=quantity(hi).value if hi else None,
        step=quantity(step).value if step else None,
        valid_values=tuple(quantity(v) for v in values) if values is not None else None,
        has_range=bool(lo or hi or step) if has_range is None else has_range,
    )


def test_get_consumed_capacity_from_request() -> None:
    capacities = {
        "capacity-0": DeviceCapacity(quantity("2"), _policy(default="2", lo="1")),
        "capacity-1": DeviceCapacity(quantity("2"), _policy(default="1", lo="1")),
        "dummy": DeviceCapacity(quantity("1"), None),
    }
    consumed = consumed_by({"capacity-0": quantity("1"), "dummy": quantity("1")}, capacities)
    assert {name: q.value for name, q in consumed.items()} == {"capacity-0": 1, "capacity-1": 1, "dummy": 1}


@pytest.mark.parametrize(
    ("requested", "capacity", "policy", "expected"),
    [
        pytest.param(None, "1", _policy(), "1", id="empty"),
        pytest.param(None, "2", _policy(default="1", lo="1"), "1", id="min in range"),
        pytest.param(None, "2", _policy(default="1", values=["1"]), "1", id="default in set"),
        pytest.param("2", "2", _policy(default="1", lo="1"), "2", id="more than min in range"),
        pytest.param("1", "2", _policy(default="1", lo="2"), "2", id="less than min in range"),
        pytest.param("2", "3", _policy(default="1", lo="1", step="2"), "3", id="with step (round up)"),
        pytest.param("2", "2", _policy(default="1", lo="1", step="1"), "2", id="with step (no remaining)"),
        pytest.param("2", "3", _policy(default="1", values=["1", "2", "3"]), "2", id="valid value in set"),
        pytest.param("2", "3", _policy(default="1", values=["1", "3"]), "3", id="set (round up)"),
        pytest.param("3", "3", _policy(default="1", values=["1", "2"]), "3", id="larger than set"),
    ],
)
def test_calculate_consumed_capacity(requested: str | None, capacity: str, policy: Policy, expected: str) -> None:
    requests = {CAP: quantity(requested)} if requested is not None else None
    assert (
        consumed_by(requests, {CAP: DeviceCapacity(quantity(capacity), policy)})[CAP].value == quantity(expected).value
    )


@pytest.mark.parametrize(
    ("requested", "policy", "violates"),
    [
        pytest.param("1", None, False, id="no constraint"),
        pytest.param("1", _policy(default="1", lo="1", hi="2"), False, id="less than maximum"),
        pytest.param("2", _policy(default="1", lo="1", hi="1"), True, id="more than maximum"),
        pytest.param("1", _policy(default="1", values=["1"]), False, id="in set"),
        pytest.param("2", _policy(default="1", values=["1"]), True, id="not in set"),
    ],
)
def test_violate_capacity_request_policy(requested: str, policy: Policy | None, violates: bool) -> None:
    assert violates_policy(quantity(requested), policy) is violates


def test_a_request_fits_with_what_is_consumed_and_being_allocated() -> None:
    capacities = {CAP: DeviceCapacity(quantity("4"), None)}
    requests = {CAP: quantity("2")}
    assert fits({CAP: Fraction(1)}, requests, capacities, {CAP: Fraction(1)})
    assert not fits({CAP: Fraction(1)}, requests, capacities, {CAP: Fraction(2)})
    assert not fits(None, {"other": quantity("1")}, capacities, None)


@pytest.mark.parametrize(
    ("q", "text"),
    [
        pytest.param(Quantity(Fraction(80 * 2**30), "BinarySI"), "80Gi", id="binary"),
        pytest.param(Quantity(Fraction(40 * 2**30), "BinarySI"), "40Gi", id="binary-half"),
        pytest.param(Quantity(Fraction(3), "BinarySI"), "3", id="binary-small-is-decimal"),
        pytest.param(Quantity(Fraction(1536), "BinarySI"), "1536", id="binary-not-a-power"),
        pytest.param(Quantity(Fraction(3, 2), "BinarySI"), "1500m", id="binary-fraction-is-decimal"),
        pytest.param(Quantity(Fraction(2000), "DecimalSI"), "2k", id="decimal"),
        pytest.param(Quantity(Fraction(1500), "DecimalSI"), "1500", id="decimal-not-a-thousand"),
        pytest.param(Quantity(Fraction(1, 10), "DecimalSI"), "100m", id="decimal-milli"),
        pytest.param(Quantity(Fraction(10**21), "DecimalSI"), "1e21", id="decimal-past-exa"),
        pytest.param(Quantity(Fraction(1000), "DecimalExponent"), "1e3", id="exponent"),
        pytest.param(Quantity(Fraction(0), "BinarySI"), "0", id="zero"),
    ],
)
def test_consumed_capacity_is_written_as_the_api_server_writes_a_quantity(q: Quantity, text: str) -> None:
    assert canonical(q) == text


# -- the plugin: shares of stored claims --------------------------------------------------------------
SHARED_CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: shared}
spec:
  selectors:
  - cel: {expression: 'device.driver == "driver-a" && device.allowMultipleAllocations == true'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1}
spec:
  driver: driver-a
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: nic
    allowMultipleAllocations: true
    capacity:
      bandwidth: {value: 80Gi, requestPolicy: {default: 1Gi, validRange: {min: 1Gi}}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: half, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: bw
        exactly: {deviceClassName: shared, capacity: {requests: {bandwidth: 40Gi}}}
"""


def shared_pod(name: str) -> str:
    return f"""
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  schedulerName: crd-scheduler
  containers: [{{name: main, image: x}}]
  resourceClaims: [{{name: bw, resourceClaimTemplateName: half}}]
"""


def test_pods_of_separate_claims_share_a_device_up_to_its_capacity() -> None:
    """Each pod's claim takes a share of 40Gi of the one 80Gi device, in a cycle of its own:
    the shares stored or in flight count against the capacity, not as the device in use."""
    from scheduler_core.simulator.manifests import load_texts
    from scheduler_core.simulator.run import simulate

    text = SHARED_CLUSTER + "".join(shared_pod(f"pod-{i}") for i in range(3))
    sim = simulate(load_texts([("cluster.yaml", text)]))
    reports = {r.name: r for r in sim.pods}
    assert [reports[f"pod-{i}"].node for i in range(3)] == ["node-1", "node-1", None]
    assert "cannot allocate all claims" in reports["pod-2"].message
    results = [
        c["status"]["allocation"]["devices"]["results"]
        for c in sim.cluster.objects("ResourceClaim")
        if (c.get("status") or {}).get("allocation")
    ]
    assert [[{k: v for k, v in r.items() if k != "shareID"} for r in rs] for rs in results] == [
        [{"request": "bw", "driver": "driver-a", "pool": "node-1", "device": "nic",
          "consumedCapacity": {"bandwidth": "40Gi"}}]
    ] * 2  # fmt: skip
    shares = {r["shareID"] for rs in results for r in rs}
    assert len(shares) == 2 and all(uuid.UUID(s) for s in shares)


def test_the_claim_index_gathers_shares_apart_from_devices() -> None:
    from scheduler_core.plugins.dynamicresources.claim_index import ClaimIndex

    def stored(name: str, *results: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "default", "uid": name},
                "status": {"allocation": {"devices": {"results": list(results)}}}}  # fmt: skip

    def result(device: str, **more: Any) -> dict[str, Any]:
        return {"request": "r", "driver": DRIVER, "pool": POOL, "device": device, **more}

    index = ClaimIndex()
    a = stored("a", result("d1", shareID="s1", consumedCapacity={CAP: "1"}), result("d2"))
    b = stored("b", result("d1", shareID="s2", consumedCapacity={CAP: "2"}))
    c = {"metadata": {"name": "c", "namespace": "default", "uid": "c"}}  # allocated in flight
    index.refresh([a, b, c])
    in_flight: dict[str, Any] = {
        "c": {"devices": {"results": [result("d1", shareID="s3", consumedCapacity={CAP: "4"})]}}
    }
    state = index.allocated_devices(in_flight)
    assert isinstance(state, AllocatedState)
    assert set(state) == {(DRIVER, POOL, "d2")}
    assert state.capacity == {(DRIVER, POOL, "d1"): {CAP: Fraction(7)}}
    assert {s[3] for s in state.shared} == {"s1", "s2", "s3"}
    index.refresh([b, c])  # a's allocation is gone: its device and its share with it
    state = index.allocated_devices({})
    assert set(state) == set()
    assert state.capacity == {(DRIVER, POOL, "d1"): {CAP: Fraction(2)}}
