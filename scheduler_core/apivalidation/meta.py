"""ObjectMeta, labels and label selectors (``apimachinery/pkg/api/validation/objectmeta.go``,
``apimachinery/pkg/apis/meta/v1/validation/validation.go``). Inputs have passed
:mod:`.decode`, so types are right; absent fields are None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from scheduler_core.framework import content, field

Errors = list[field.Error]
NameCheck = Callable[[str], list[str]]


def object_meta(meta: Mapping[str, Any] | None, name_check: NameCheck, *, namespaced: bool) -> Errors:
    """``ValidateObjectMeta``: name required and valid (no generateName in a manifest here)."""
    path = "metadata"
    meta = meta or {}
    errs: Errors = []
    name = meta.get("name") or ""
    if not name:
        errs.append(field.required(field.child(path, "name"), "name or generateName is required"))
    else:
        errs += [field.invalid(field.child(path, "name"), name, msg) for msg in name_check(name)]
    namespace = meta.get("namespace") or ""
    if namespaced and namespace:
        errs += [field.invalid(field.child(path, "namespace"), namespace, m) for m in content.dns1123_label(namespace)]
    elif not namespaced and namespace:
        errs.append(field.forbidden(field.child(path, "namespace"), "not allowed on this type"))
    errs += labels(meta.get("labels"), field.child(path, "labels"))
    errs += annotation_keys(meta.get("annotations"), field.child(path, "annotations"))
    return errs


def labels(values: Mapping[str, str] | None, path: str) -> Errors:
    """``ValidateLabels``: qualified keys, label values."""
    errs: Errors = []
    for k, v in (values or {}).items():
        errs += [field.invalid(path, k, msg) for msg in content.qualified_name(k)]
        errs += [field.invalid(path, v, msg) for msg in content.label_value(v or "")]
    return errs


def annotation_keys(values: Mapping[str, str] | None, path: str) -> Errors:
    errs: Errors = []
    for k in values or {}:
        errs += [field.invalid(path, k, msg) for msg in content.qualified_name(k.lower())]
    return errs


def label_name(value: str, path: str) -> Errors:
    """``ValidateLabelName``."""
    return [field.invalid(path, value, msg) for msg in content.qualified_name(value)]


def label_selector(selector: Mapping[str, Any] | None, path: str) -> Errors:
    """``ValidateLabelSelector`` (no unknown operators, no invalid values)."""
    if selector is None:
        return []
    errs = labels(selector.get("matchLabels"), field.child(path, "matchLabels"))
    for i, req in enumerate(selector.get("matchExpressions") or ()):
        req = req or {}
        rpath = field.index(field.child(path, "matchExpressions"), i)
        operator, values = req.get("operator") or "", req.get("values") or []
        errs += requirement_operator(operator, values, rpath)
        errs += label_name(req.get("key") or "", field.child(rpath, "key"))
        for j, value in enumerate(values):
            vpath = field.index(field.child(rpath, "values"), j)
            errs += [field.invalid(vpath, value, msg) for msg in content.label_value(value or "")]
    return errs


def requirement_operator(operator: str, values: Sequence[Any], path: str, *, numeric: bool = False) -> Errors:
    """A selector requirement's operator and how many values it has; ``numeric``: a node
    selector's, which also knows ``Gt`` and ``Lt``."""
    vpath = field.child(path, "values")
    if operator in ("In", "NotIn"):
        return [] if values else [field.required(vpath, "must be specified when `operator` is 'In' or 'NotIn'")]
    if operator in ("Exists", "DoesNotExist"):
        detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
        return [field.forbidden(vpath, detail)] if values else []
    if numeric and operator in ("Gt", "Lt"):
        detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
        return [] if len(values) == 1 else [field.required(vpath, detail)]
    return [field.invalid(field.child(path, "operator"), operator, "not a valid selector operator")]
