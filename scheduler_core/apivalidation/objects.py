"""Node, PersistentVolume(Claim), PriorityClass, PodDisruptionBudget and Namespace rules, for
the fields the scheduler reads (``pkg/apis/core/validation``, ``pkg/apis/scheduling/validation``,
``pkg/apis/policy/validation``, v1.36.3).
"""

from __future__ import annotations

from scheduler_core.apivalidation import meta, resources
from scheduler_core.apivalidation.pod import TAINT_EFFECTS, node_selector_term
from scheduler_core.framework import content, field, manifest
from scheduler_core.framework.manifest import Manifest

Errors = list[field.Error]
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000  # pkg/apis/scheduling/types.go
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2_000_001_000, "system-cluster-critical": 2_000_000_000}
PERCENT = content.regex_error(
    "a valid percent string must be a numeric string followed by an ending '%'", "[0-9]+%", "1%", "93%"
)


def node(obj: Manifest) -> Errors:
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=False)
    spec: Manifest = manifest.spec(obj)
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(spec.get("taints") or ()):
        taint = taint or {}
        tpath = field.index(field.child("spec", "taints"), i)
        key, value, effect = taint.get("key") or "", taint.get("value") or "", taint.get("effect") or ""
        errs += meta.label_name(key, field.child(tpath, "key"))
        if value:
            msgs = content.label_value(value)
            if msgs:
                errs.append(field.invalid(field.child(tpath, "value"), value, ";".join(msgs)))
        if not effect:
            errs.append(field.required(field.child(tpath, "effect"), ""))
        elif effect not in TAINT_EFFECTS:
            errs.append(field.not_supported(field.child(tpath, "effect"), effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            errs.append(field.duplicate(tpath, taint))
        seen.add((key, effect))
    status: Manifest = manifest.status(obj)
    for key in ("capacity", "allocatable"):
        found, _ = resources.resource_list(status.get(key), field.child("status", key), container=False)
        errs += found
    return errs


def persistent_volume(obj: Manifest) -> Errors:
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=False)
    spec: Manifest = manifest.spec(obj)
    errs += _access_modes(spec, "spec")
    capacity = spec.get("capacity") or {}
    if not capacity:
        errs.append(field.required(field.child("spec", "capacity"), ""))
    elif "storage" not in capacity or len(capacity) > 1:
        errs.append(field.not_supported(field.child("spec", "capacity"), capacity, ["storage"]))
    found, _ = resources.resource_list(capacity, field.child("spec", "capacity"), container=False)
    errs += found
    affinity = (spec.get("nodeAffinity") or {}).get("required")
    if affinity is not None:
        tpath = field.child("spec", "nodeAffinity", "required", "nodeSelectorTerms")
        terms = affinity.get("nodeSelectorTerms") or []
        if not terms:
            errs.append(field.required(tpath, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errs += node_selector_term(term or {}, field.index(tpath, i), allow_invalid_values=False)
    return errs


def persistent_volume_claim(obj: Manifest) -> Errors:
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=True)
    spec: Manifest = manifest.spec(obj)
    errs += _access_modes(spec, "spec")
    requests = (spec.get("resources") or {}).get("requests") or {}
    rpath = field.child("spec", "resources", "requests")
    if "storage" not in requests:
        errs.append(field.required(field.key(field.child("spec", "resources"), "storage"), ""))
    found, _ = resources.resource_list(requests, rpath, container=False)
    return errs + found


def _access_modes(spec: Manifest, path: str) -> Errors:
    modes = spec.get("accessModes") or []
    mpath = field.child(path, "accessModes")
    if not modes:
        return [field.required(mpath, "at least 1 access mode is required")]
    return [field.not_supported(mpath, m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]


def priority_class(obj: Manifest) -> Errors:
    """``ValidatePriorityClass``."""
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=False)
    name = manifest.meta(obj).get("name") or ""
    value = obj.get("value") or 0
    if name.startswith("system-"):
        if SYSTEM_PRIORITY_CLASSES.get(name) != value:
            reason = (
                f"{name} is not a known system priority class"
                if name not in SYSTEM_PRIORITY_CLASSES
                else f"value of {name} PriorityClass must be {SYSTEM_PRIORITY_CLASSES[name]}"
            )
            detail = f"priority class names with 'system-' prefix are reserved for system use only. error: {reason}"
            errs.append(field.forbidden(field.child("metadata", "name"), detail))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        errs.append(field.forbidden("value", detail))
    policy = obj.get("preemptionPolicy")
    if policy is not None and policy not in PREEMPTION_POLICIES:
        errs.append(field.not_supported("preemptionPolicy", policy, PREEMPTION_POLICIES))
    return errs


def pod_disruption_budget(obj: Manifest) -> Errors:
    """``ValidatePodDisruptionBudgetSpec``."""
    errs = meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=True)
    spec: Manifest = manifest.spec(obj)
    if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
        errs.append(field.invalid("spec", spec, "minAvailable and maxUnavailable cannot be both set"))
    for key in ("minAvailable", "maxUnavailable"):
        value = spec.get(key)
        kpath = field.child("spec", key)
        if isinstance(value, int) and value < 0:
            errs.append(field.invalid(kpath, value, "must be greater than or equal to 0"))
        elif isinstance(value, str):
            number = value[:-1] if value.endswith("%") else ""
            if not number.isdigit():
                errs.append(field.invalid(kpath, value, PERCENT))
            elif int(number) > 100:
                errs.append(field.invalid(kpath, value, "must not be greater than 100%"))
    return errs + meta.label_selector(spec.get("selector"), field.child("spec", "selector"))


def namespace(obj: Manifest) -> Errors:
    return meta.object_meta(obj.get("metadata"), content.dns1123_label, namespaced=False)
