"""Consumable capacity: devices that several claims share, each taking part of a capacity.

Upstream: KEP-5075, gate ``DRAConsumableCapacity`` (beta, on by default in v1.36), in
``k8s.io/dynamic-resource-allocation@v0.36.3/structured``: ``internal/incubating/consumable_capacity.go``
(a request's capacity against a device's), ``schedulerapi/types.go`` (``AllocatedState``,
``ConsumedCapacityCollection``) and the scheduler's ``foreachAllocatedDevice``
(``pkg/scheduler/framework/plugins/dynamicresources/allocateddevices.go``).

A device with ``allowMultipleAllocations: true`` is never "in use": each allocation of it is a
share, with a ``shareID`` and the ``consumedCapacity`` its request takes, and the device fits
a request while the capacity already consumed (by stored or in-flight allocations, the
:class:`AllocatedState`'s ``capacity``, plus what this search is allocating) and the request's
own stay within each capacity's value. A request's amount follows the capacity's
``requestPolicy``: no amount takes the policy's ``default`` (else the whole value), an amount
is rounded up to ``validRange`` (``min``, then a multiple of ``step`` above it) or to the next
of ``validValues``, and an amount the policy does not allow (over ``max``, off the step, not
among the values) does not fit. Devices without ``allowMultipleAllocations`` go through the
same check (a request for a capacity the device does not have does not fit) but record no share.

Quantities are exact fractions; the ``consumedCapacity`` written in a result is the Quantity's
canonical string, in the format (binary or decimal suffix) of the quantity it came from, as the
API server would serialize upstream's ``resource.Quantity``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduler_core.framework import Manifest
from scheduler_core.framework.quantity import BINARY_SI, format_of, int64_ceil, parse_quantity
from scheduler_core.framework.quantity import canonical as quantity_string

DeviceID = tuple[str, str, str]  # driver, pool, device
SharedDeviceID = tuple[str, str, str, str]  # driver, pool, device, shareID
Consumed = dict[str, Fraction]  # capacity name -> amount


class AllocatedState(set[DeviceID]):
    """``AllocatedState``: the devices allocated to one claim each (the set itself, what
    ``ListAllAllocatedDevices`` answers), the shares of devices that allow multiple allocations
    (``AllocatedSharedDeviceIDs``), and the capacity their shares consume, summed per device
    (``AggregatedCapacity``). A plain set of devices is a state without shares."""

    __slots__ = ("capacity", "shared", "shared_devices")

    def __init__(self, devices: Iterable[DeviceID] = ()) -> None:
        super().__init__(devices)
        self.shared: set[SharedDeviceID] = set()
        self.shared_devices: set[DeviceID] = set()  # the devices of ``shared``, for ``holds``
        self.capacity: dict[DeviceID, Consumed] = {}

    def add_allocation(self, allocation: Manifest) -> None:
        """``foreachAllocatedDevice`` with consumable capacity on: a result with a ``shareID``
        is a share (its ``consumedCapacity``, if any, added to the device's), any other one
        not for admin access a device of its own."""
        self.update(dedicated_devices(allocation))
        self.add_shares(allocation)

    def add_shares(self, allocation: Manifest) -> None:
        """The shares of an allocation, without its dedicated devices."""
        for result in _results(allocation):
            share = result.get("shareID")
            if share is None or result.get("adminAccess"):
                continue
            device = (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
            self.shared.add((*device, str(share)))
            self.shared_devices.add(device)
            consumed = result.get("consumedCapacity")
            if consumed is not None:
                add(self.capacity.setdefault(device, {}), _parsed(consumed))

    def holds(self, device: DeviceID) -> bool:
        """``IsDeviceAllocated``: allocated whole, or shared, or with consumed capacity."""
        return device in self or device in self.capacity or device in self.shared_devices


def _results(allocation: Manifest) -> Iterable[Manifest]:
    return (allocation.get("devices") or {}).get("results") or ()


def has_shares(allocation: Manifest) -> bool:
    """Whether an allocation holds a share of a device (a result with a ``shareID``)."""
    return any(result.get("shareID") is not None for result in _results(allocation))


def dedicated_devices(allocation: Manifest) -> list[DeviceID]:
    """The devices an allocation holds whole: neither shares nor for admin access."""
    return [
        (result.get("driver", ""), result.get("pool", ""), result.get("device", ""))
        for result in _results(allocation)
        if result.get("shareID") is None and not result.get("adminAccess")
    ]


def state_of(allocated: set[DeviceID]) -> AllocatedState:
    return allocated if isinstance(allocated, AllocatedState) else AllocatedState(allocated)


def _parsed(consumed: Mapping[str, Any]) -> Consumed:
    return {name: parse_quantity(str(value)) for name, value in consumed.items()}


def add(into: Consumed, amounts: Mapping[str, Fraction]) -> None:
    """``ConsumedCapacity.Add``."""
    for name, amount in amounts.items():
        into[name] = into.get(name, Fraction(0)) + amount


# -- a request against a device's capacities (``consumable_capacity.go``) -----------------------------
@dataclass(frozen=True, slots=True)
class Quantity:
    value: Fraction
    format: str  # BinarySI, DecimalSI or DecimalExponent: how the API server writes it back


def quantity(text: Any) -> Quantity:
    return Quantity(parse_quantity(str(text)), format_of(str(text)))


@dataclass(frozen=True, slots=True)
class Policy:
    """A capacity's ``requestPolicy``."""

    default: Quantity | None
    minimum: Quantity | None
    maximum: Fraction | None
    step: Fraction | None
    valid_values: tuple[Quantity, ...] | None
    has_range: bool


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: Quantity
    policy: Policy | None


def device_capacities(device: Manifest) -> dict[str, DeviceCapacity]:
    capacities = {}
    for name, capacity in (device.get("capacity") or {}).items():
        raw = (capacity or {}).get("requestPolicy")
        policy = None
        if raw is not None:
            valid_range = raw.get("validRange")
            values = raw.get("validValues")
            policy = Policy(
                default=quantity(raw["default"]) if raw.get("default") is not None else None,
                minimum=quantity(valid_range["min"]) if (valid_range or {}).get("min") is not None else None,
                maximum=parse_quantity(str(valid_range["max"])) if (valid_range or {}).get("max") is not None else None,
                step=parse_quantity(str(valid_range["step"])) if (valid_range or {}).get("step") is not None else None,
                valid_values=tuple(quantity(v) for v in values) if values is not None else None,
                has_range=valid_range is not None,
            )
        capacities[str(name)] = DeviceCapacity(quantity((capacity or {}).get("value", "0")), policy)
    return capacities


def request_capacities(spec: Manifest) -> dict[str, Quantity] | None:
    """A request's ``capacity.requests``, or None when it has none."""
    capacity = spec.get("capacity")
    if capacity is None:
        return None
    return {str(name): quantity(value) for name, value in (capacity.get("requests") or {}).items()}


def consumed_by(
    requests: Mapping[str, Quantity] | None, capacities: Mapping[str, DeviceCapacity]
) -> dict[str, Quantity]:
    """``GetConsumedCapacityFromRequest``: what a request takes of each of the device's capacities."""
    return {name: _consumed(requests.get(name) if requests else None, c) for name, c in capacities.items()}


def fits(
    current: Mapping[str, Fraction] | None,
    requests: Mapping[str, Quantity] | None,
    capacities: Mapping[str, DeviceCapacity],
    allocating: Mapping[str, Fraction] | None,
) -> bool:
    """``CmpRequestOverCapacity``: whether the request's amounts are allowed by each capacity's
    policy and fit with what is consumed (``current``) and being allocated (``allocating``).
    A request for a capacity the device does not define does not fit (upstream's error, which
    every caller takes as "skip the device")."""
    if requests and any(name not in capacities for name in requests):
        return False
    for name, capacity in capacities.items():
        consumed = _consumed(requests.get(name) if requests else None, capacity)
        if violates_policy(consumed, capacity.policy):
            return False
        total = consumed.value
        if current is not None:
            total += current.get(name, 0)
        if allocating is not None:
            total += allocating.get(name, 0)
        if total > capacity.value.value:
            return False
    return True


def _consumed(requested: Quantity | None, capacity: DeviceCapacity) -> Quantity:
    """``calculateConsumedCapacity``."""
    policy = capacity.policy
    if requested is None:  # fillEmptyRequest
        return policy.default if policy is not None and policy.default is not None else capacity.value
    if policy is None:
        return requested
    if policy.has_range and policy.minimum is not None:
        return _round_up_range(requested, policy)
    if policy.valid_values is not None:
        for value in policy.valid_values:  # sorted ascending, as validation requires
            if requested.value <= value.value:
                return value
    return requested


def _round_up_range(requested: Quantity, policy: Policy) -> Quantity:
    """``roundUpRange``: below ``min`` is ``min``; with a ``step``, the next multiple of it
    above ``min``, computed on the integer values (``Quantity.Value`` rounds up)."""
    assert policy.minimum is not None
    if requested.value < policy.minimum.value:
        return policy.minimum
    if policy.step is None:
        return requested
    minimum, step = int64_ceil(policy.minimum.value), int64_ceil(policy.step)
    added = int64_ceil(requested.value) - minimum
    n = _go_div(added, step)
    if _go_mod(added, step):
        n += 1
    return Quantity(Fraction(minimum + step * n), BINARY_SI)  # resource.NewQuantity(val, BinarySI)


def violates_policy(requested: Quantity, policy: Policy | None) -> bool:
    """``violatesPolicy``. Upstream compares with the default as Go structs (same value in the
    same form); numbers equal in another form then go on to the range or value checks, which a
    default that passed validation passes too, so comparing values answers the same."""
    if policy is None:
        return False
    if policy.default is not None and requested.value == policy.default.value:
        return False
    if policy.has_range:
        if policy.maximum is not None and requested.value > policy.maximum:
            return True
        if policy.step is not None:
            minimum = int64_ceil(policy.minimum.value) if policy.minimum is not None else 0
            return _go_mod(int64_ceil(requested.value) - minimum, int64_ceil(policy.step)) != 0
        return False
    if policy.valid_values:
        return all(requested.value != v.value for v in policy.valid_values)
    return False


def _go_div(a: int, b: int) -> int:
    if b == 0:
        return 0  # a zero step panics upstream; validation refuses it
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _go_mod(a: int, b: int) -> int:
    return a - b * _go_div(a, b) if b else 0


def canonical(q: Quantity) -> str:
    return quantity_string(q.value, q.format)
