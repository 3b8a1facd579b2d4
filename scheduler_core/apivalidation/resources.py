"""Resource names and quantities (``pkg/apis/core/validation/validation.go``:
``validateResourceRequirements``, ``ValidateResourceQuantityValue``; ``pkg/apis/core/helper``).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from scheduler_core.framework import content, field, parse_quantity

Errors = list[field.Error]
_STANDARD_CONTAINER = frozenset({"cpu", "memory", "ephemeral-storage"})
_INTEGER = frozenset({"pods", "services", "replicationcontrollers", "resourcequotas", "secrets", "configmaps",
                      "persistentvolumeclaims", "services.nodeports", "services.loadbalancers"})  # fmt: skip


def is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_native(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended(name: str) -> bool:
    if is_native(name) or name.startswith("requests."):
        return False
    return not content.qualified_name("requests." + name)


def overcommit_allowed(name: str) -> bool:
    return is_native(name) and not is_hugepages(name)


def container_resource_name(name: str, path: str) -> Errors:
    """``validateContainerResourceName``."""
    errs = [field.invalid(path, name, msg) for msg in content.qualified_name(name)]
    if "/" not in name:
        if name not in _STANDARD_CONTAINER and not is_hugepages(name):
            errs.append(field.invalid(path, name, "must be a standard resource for containers"))
    elif not is_native(name) and not is_extended(name):
        errs.append(field.invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def quantity_value(name: str, raw: object, amount: Fraction, path: str) -> Errors:
    """``ValidateResourceQuantityValue``: non-negative; whole for integer resources."""
    if amount < 0:
        return [field.invalid(path, str(raw), "must be greater than or equal to 0")]
    if (name in _INTEGER or is_extended(name)) and amount.denominator != 1:
        return [field.invalid(path, str(raw), "must be an integer")]
    return []


def resource_list(
    values: Mapping[str, object] | None, path: str, *, container: bool
) -> tuple[Errors, dict[str, Fraction]]:
    errs: Errors = []
    parsed: dict[str, Fraction] = {}
    for name, raw in (values or {}).items():
        kpath = field.key(path, name)
        if container:
            errs += container_resource_name(name, kpath)
        amount = parse_quantity(raw)  # decode checked that it parses
        found = quantity_value(name, raw, amount, kpath)
        errs += found
        if not found:
            parsed[name] = amount
    return errs, parsed


def requirements(resources: Mapping[str, object] | None, path: str) -> Errors:
    """``validateResourceRequirements`` for a container."""
    resources = resources or {}
    lim_path, req_path = field.child(path, "limits"), field.child(path, "requests")
    limits_raw = resources.get("limits") or {}
    requests_raw = resources.get("requests") or {}
    assert isinstance(limits_raw, Mapping) and isinstance(requests_raw, Mapping)
    errs, limits = resource_list(limits_raw, lim_path, container=True)
    req_errs, requests = resource_list(requests_raw, req_path, container=True)
    errs += req_errs
    for name, request in requests.items():
        limit = limits.get(name)
        raw = str(requests_raw[name])
        if name in limits_raw and limit is not None:
            if request != limit and not overcommit_allowed(name):
                errs.append(field.invalid(req_path, raw, f"must be equal to {name} limit of {limits_raw[name]}"))
            elif request > limit:
                errs.append(
                    field.invalid(req_path, raw, f"must be less than or equal to {name} limit of {limits_raw[name]}")
                )
        elif name not in limits_raw and not overcommit_allowed(name):
            errs.append(field.required(lim_path, "Limit must be set for non overcommitable resources"))
    return errs
