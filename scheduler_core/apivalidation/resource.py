"""ResourceClaim, ResourceClaimTemplate, DeviceClass and ResourceSlice rules, for the fields
DynamicResources reads (``pkg/apis/resource/validation/validation.go``, v1.36.3), after the API
server's defaulting (``allocationMode`` ExactCount, ``count`` 1).

CEL selectors are compiled here with the scheduler's CEL environment
(:mod:`scheduler_core.framework.device_cel`): too long, not compiling, or over the cost limit
is refused with ``validateCELSelector``'s words.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from scheduler_core.apivalidation import meta
from scheduler_core.apivalidation.resources import is_extended
from scheduler_core.framework import content, field, manifest
from scheduler_core.framework.device_cel import CELError, CostError, compile_selector
from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.quantity import canonical, format_of, int64_ceil, parse_quantity

Errors = list[field.Error]

# k8s.io/api@v0.36.3 resource/v1/types.go
DEVICE_REQUESTS_MAX_SIZE = 32
DEVICE_CONSTRAINTS_MAX_SIZE = 32
DEVICE_CONFIG_MAX_SIZE = 32
DEVICE_SELECTORS_MAX_SIZE = 32
FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE = 8
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
RESOURCE_SLICE_MAX_DEVICES = 128
RESOURCE_SLICE_MAX_COUNTER_SETS = 8
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS = 10
ALLOCATION_MODES = ("All", "ExactCount")
NODE_SELECTION = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"


def resource_claim(obj: Manifest) -> Errors:
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=True)
    return errs + _device_claim(manifest.spec(obj).get("devices") or {}, field.child("spec", "devices"))


def resource_claim_template(obj: Manifest) -> Errors:
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=True)
    spec = manifest.spec(manifest.spec(obj)).get("devices") or {}
    return errs + _device_claim(spec, field.child("spec", "spec", "devices"))


def device_class(obj: Manifest) -> Errors:
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=False)
    spec: Manifest = manifest.spec(obj)
    errs += _selectors(spec.get("selectors"), field.child("spec", "selectors"))
    name = spec.get("extendedResourceName")
    if name is not None and not (isinstance(name, str) and is_extended(name)):
        errs.append(
            field.invalid(field.child("spec", "extendedResourceName"), name, "must be a valid extended resource name")
        )
    return errs


def resource_slice(obj: Manifest) -> Errors:
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=False)
    spec: Manifest = manifest.spec(obj)
    path = "spec"
    if not spec.get("driver"):
        errs.append(field.required(field.child(path, "driver"), ""))
    pool: Manifest = spec.get("pool") or {}
    if not pool.get("name"):
        errs.append(field.required(field.child(path, "pool", "name"), ""))
    if int(pool.get("resourceSliceCount") or 0) <= 0:
        errs.append(field.invalid(field.child(path, "pool", "resourceSliceCount"), pool.get("resourceSliceCount") or 0,
                                  "must be greater than zero"))  # fmt: skip
    if int(pool.get("generation") or 0) < 0:
        errs.append(field.invalid(field.child(path, "pool", "generation"), pool.get("generation"),
                                  "must be greater than or equal to zero"))  # fmt: skip
    chosen = [f"`{k}`" for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
              if spec.get(k) not in (None, "", False)]  # fmt: skip
    for flag in ("allNodes", "perDeviceNodeSelection"):
        if spec.get(flag) is False:
            errs.append(field.invalid(field.child(path, flag), False, "must be either unset or set to true"))
    if spec.get("nodeName") == "":
        errs.append(
            field.invalid(field.child(path, "nodeName"), "", "must be either unset or set to a non-empty string")
        )
    if spec.get("nodeSelector") is not None and len((spec["nodeSelector"] or {}).get("nodeSelectorTerms") or ()) != 1:
        errs.append(field.invalid(field.child(path, "nodeSelector", "nodeSelectorTerms"),
                                  (spec["nodeSelector"] or {}).get("nodeSelectorTerms"),
                                  "must have exactly one node selector term"))  # fmt: skip
    if not chosen:
        errs.append(field.required(path, NODE_SELECTION))
    elif len(chosen) > 1:
        errs.append(
            field.invalid(path, "{" + ", ".join(chosen) + "}", NODE_SELECTION + ", but multiple fields are set")
        )
    if spec.get("sharedCounters") is not None and spec.get("devices") is not None:
        errs.append(field.invalid(path, "", "only one of `sharedCounters` or `devices` is allowed"))
    errs += _named_set(spec.get("devices"), RESOURCE_SLICE_MAX_DEVICES, field.child(path, "devices"), _device)
    errs += _named_set(spec.get("sharedCounters"), RESOURCE_SLICE_MAX_COUNTER_SETS,
                       field.child(path, "sharedCounters"), _no_rules)  # fmt: skip
    return errs


def _no_rules(item: Manifest, path: str) -> Errors:
    return []


def _device(device: Manifest, path: str) -> Errors:
    """``validateDevice``'s capacity rules: a ``requestPolicy`` only where the device allows
    multiple allocations (``validateSingleAllocatableDeviceCapacity``), and then one that fits
    the capacity's value (``validateMultiAllocatableDeviceCapacity``)."""
    errs: Errors = []
    multi = device.get("allowMultipleAllocations") is True
    capacities = device.get("capacity") or {}
    for name in sorted(capacities):
        capacity = capacities[name] or {}
        policy = capacity.get("requestPolicy")
        if policy is None:
            continue
        ppath = field.child(field.key(field.child(path, "capacity"), name), "requestPolicy")
        if not multi:
            errs.append(field.forbidden(ppath, "allowMultipleAllocations must be true"))
        else:
            errs += _request_policy(_quantity(capacity.get("value", "0")), policy, ppath)
    return errs


Quantity = tuple[Fraction, str]  # the value and its canonical string (``Quantity.String``)


def _quantity(text: Any) -> Quantity:
    value = parse_quantity(str(text))
    return value, canonical(value, format_of(str(text)))


def _request_policy(capacity: Quantity, policy: Manifest, path: str) -> Errors:
    """``validateRequestPolicy``."""
    values, valid_range = policy.get("validValues") or [], policy.get("validRange")
    if values and valid_range is not None:
        return [field.forbidden(path, 'exactly one policy can be specified, cannot specify "validValues" and '
                                      '"validRange" at the same time')]  # fmt: skip
    if not values and valid_range is None:
        return []
    kind = "validValues" if values else "validRange"
    if policy.get("default") is None:
        return [field.required(field.child(path, "default"), f"required when {kind} is defined")]
    default = _quantity(policy["default"])
    if values:
        return _valid_values(default, capacity, [_quantity(v) for v in values], field.child(path, "validValues"))
    return _valid_range(default, capacity, valid_range or {}, field.child(path, "validRange"))


def _valid_values(default: Quantity, capacity: Quantity, values: list[Quantity], path: str) -> Errors:
    """``validateRequestPolicyValidValues``: sorted, at most 10, distinct, within the capacity,
    the default among them."""
    errs = [
        field.invalid(field.index(path, i + 1), values[i + 1][1], "values must be sorted in ascending order")
        for i in range(len(values) - 1)
        if values[i][0] > values[i + 1][0]
    ]
    if len(values) > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS:
        errs.append(field.too_many(path, len(values), CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS))
    else:
        for i, option in enumerate(values):
            if option[0] > capacity[0]:
                errs.append(field.invalid(field.index(path, i), option[1],
                                          f"option is larger than capacity value: {capacity[1]}"))  # fmt: skip
        seen: set[str] = set()
        for i, option in enumerate(values):
            key = str(int64_ceil(option[0]))  # quantityKey: Value()
            if key in seen:
                errs.append(field.duplicate(field.index(path, i), key))
            seen.add(key)
    if (
        not any(option[0] == default[0] for option in values)
        or len(values) > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS
    ):
        errs.append(field.invalid(path, default[1], "default value is not valid according to the requestPolicy"))
    return errs


def _valid_range(default: Quantity, capacity: Quantity, valid_range: Manifest, path: str) -> Errors:
    """``validateRequestPolicyRange``."""
    if valid_range.get("min") is None:
        return [field.required(field.child(path, "min"), "required when validRange is defined")]
    low = _quantity(valid_range["min"])
    errs: Errors = []
    if low[0] > capacity[0]:
        errs.append(
            field.invalid(field.child(path, "min"), low[1], f"min is larger than capacity value: {capacity[1]}")
        )
    if default[0] < low[0]:
        errs.append(field.invalid(field.child(path, "min"), default[1], f"default is less than min: {low[1]}"))
    high = _quantity(valid_range["max"]) if valid_range.get("max") is not None else None
    if high is not None:
        if low[0] > high[0]:
            errs.append(field.invalid(field.child(path, "max"), low[1], f"min is larger than max: {high[1]}"))
        if high[0] > capacity[0]:
            errs.append(field.invalid(field.child(path, "max"), high[1],
                                      f"max is larger than capacity value: {capacity[1]}"))  # fmt: skip
        if default[0] > high[0]:
            errs.append(field.invalid(field.child(path, "max"), default[1], f"default is more than max: {high[1]}"))
    if valid_range.get("step") is not None:
        step = _quantity(valid_range["step"])
        spath = field.child(path, "step")
        added = low[0] + step[0]
        if added > capacity[0]:
            # Quantity.Add keeps the receiver's (min's) format
            one_step = canonical(added, format_of(str(valid_range["min"])))
            errs.append(field.invalid(spath, step[1],
                                      f"one step {one_step} is larger than capacity value: {capacity[1]}"))  # fmt: skip
        errs += _step(default, low, step, spath)
        if high is not None:
            errs += _step(high, low, step, spath)
    return errs


def _step(value: Quantity, low: Quantity, step: Quantity, path: str) -> Errors:
    """``validateRequestPolicyRangeStep``: on the integer values (``Value`` rounds up)."""
    added = int64_ceil(value[0]) - int64_ceil(low[0])
    divisor = int64_ceil(step[0])
    if divisor and added - divisor * int(added / divisor) != 0:  # Go's %, truncating
        return [field.invalid(path, value[1], f"value is not a multiple of a given step ({step[1]}) from ({low[1]})")]
    return []


def _named_set(items: Any, max_size: int, path: str, rules: Callable[[Manifest, str], Errors]) -> Errors:
    """``validateSet`` keyed by ``name``: at most ``max_size``, names required and unique."""
    errs: Errors = []
    items = items or []
    if len(items) > max_size:
        errs.append(field.too_many(path, len(items), max_size))
    seen: set[str] = set()
    for i, item in enumerate(items):
        item = item or {}
        ipath = field.index(path, i)
        name = item.get("name") or ""
        if not name:
            errs.append(field.required(field.child(ipath, "name"), ""))
        elif name in seen:
            errs.append(field.duplicate(ipath, name))
        seen.add(name)
        errs += rules(item, ipath)
    return errs


def _device_claim(devices: Manifest, path: str) -> Errors:
    errs = _named_set(devices.get("requests"), DEVICE_REQUESTS_MAX_SIZE, field.child(path, "requests"), _request)
    names = {r.get("name") for r in devices.get("requests") or () if r}
    names |= {f"{r.get('name')}/{s.get('name')}" for r in devices.get("requests") or () if r
              for s in r.get("firstAvailable") or () if s}  # fmt: skip
    constraints = devices.get("constraints") or []
    cpath = field.child(path, "constraints")
    if len(constraints) > DEVICE_CONSTRAINTS_MAX_SIZE:
        errs.append(field.too_many(cpath, len(constraints), DEVICE_CONSTRAINTS_MAX_SIZE))
    for i, constraint in enumerate(constraints):
        constraint = constraint or {}
        ipath = field.index(cpath, i)
        for j, name in enumerate(constraint.get("requests") or ()):
            if name not in names:
                errs.append(field.invalid(field.index(field.child(ipath, "requests"), j), name,
                                          "must be the name of a request in the claim or the name of a request and "
                                          "a subrequest separated by '/'"))  # fmt: skip
        attribute = constraint.get("matchAttribute")
        if attribute is None and constraint.get("distinctAttribute") is None:
            errs.append(field.required(ipath, 'exactly one of "matchAttribute" or "distinctAttribute" is required, '
                                              "but multiple fields are set"))  # fmt: skip
        elif attribute is not None and "/" not in attribute:
            errs.append(field.invalid(field.child(ipath, "matchAttribute"), attribute,
                                      "a fully qualified name must be a domain and a name "
                                      "separated by a slash"))  # fmt: skip
    config = devices.get("config") or []
    if len(config) > DEVICE_CONFIG_MAX_SIZE:
        errs.append(field.too_many(field.child(path, "config"), len(config), DEVICE_CONFIG_MAX_SIZE))
    return errs


def _request(request: Manifest, path: str) -> Errors:
    exactly, first = request.get("exactly"), request.get("firstAvailable") or []
    if exactly is None and not first:
        return [field.required(path, "exactly one of `exactly` or `firstAvailable` is required")]
    if exactly is not None and first:
        return [
            field.invalid(
                path, None, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"
            )
        ]
    if exactly is not None:
        return _exact(exactly, field.child(path, "exactly"))
    return _named_set(first, FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE, field.child(path, "firstAvailable"), _exact)


def _exact(request: Manifest, path: str) -> Errors:
    errs: Errors = []
    if not request.get("deviceClassName"):
        errs.append(field.required(field.child(path, "deviceClassName"), ""))
    errs += _selectors(request.get("selectors"), field.child(path, "selectors"))
    mode = request.get("allocationMode") or "ExactCount"
    count = int(request.get("count") or 0)
    if mode == "All":
        if count != 0:
            errs.append(
                field.invalid(field.child(path, "count"), count, "must not be specified when allocationMode is 'All'")
            )
    elif mode == "ExactCount":
        if count < 0:  # 0 (unset) is defaulted to 1
            errs.append(field.invalid(field.child(path, "count"), count, "must be greater than zero"))
    else:
        errs.append(field.not_supported(field.child(path, "allocationMode"), mode, ALLOCATION_MODES))
    return errs


def _selectors(selectors: Any, path: str) -> Errors:
    errs: Errors = []
    selectors = selectors or []
    if len(selectors) > DEVICE_SELECTORS_MAX_SIZE:
        errs.append(field.too_many(path, len(selectors), DEVICE_SELECTORS_MAX_SIZE))
    for i, selector in enumerate(selectors):
        cel = (selector or {}).get("cel")
        ipath = field.index(path, i)
        if cel is None:
            errs.append(field.required(field.child(ipath, "cel"), ""))
            continue
        expression = cel.get("expression") or ""
        if not expression:
            errs.append(field.required(field.child(ipath, "cel", "expression"), ""))
        elif len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
            errs.append(field.too_long(field.child(ipath, "cel", "expression"), CEL_SELECTOR_EXPRESSION_MAX_LENGTH))
        else:
            errs += _compiles(expression, field.child(ipath, "cel", "expression"))
    return errs


def _compiles(expression: str, path: str) -> Errors:
    try:
        compile_selector(expression)
    except CostError as error:
        return [field.forbidden(path, str(error))]
    except CELError as error:
        return [field.invalid(path, expression, str(error))]
    return []
