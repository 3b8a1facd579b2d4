"""A SchedulerProfile or PluginConfig checked against its CRD schema, as the API server does.

The CRD in ``crds/`` is generated from the models (:mod:`.crd`); the API server validates a
custom resource against its ``openAPIV3Schema`` before storing it: required fields, JSON
types (a YAML ``yes`` is a boolean, not an integer weight), bounds and lengths; with
``kubectl``'s strict field validation an undeclared field is refused too. Messages follow
``k8s.io/apiextensions-apiserver`` (kube-openapi ``validate``), e.g.
``spec.plugins.score.enabled[0].weight: Invalid value: "boolean":
spec.plugins.score.enabled[0].weight in body must be of type integer: "boolean"``.

The pydantic models then parse a spec that passed; they are lax where the API server is not,
so this check comes first wherever a custom resource is read (``simulate``, ``validate``,
the admission webhook).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from scheduler_core.apivalidation import Problem, UnknownField, validate_custom_resource
from scheduler_core.config.crd import KINDS, custom_resource_definition
from scheduler_core.framework import field

_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


@functools.cache
def _schema(kind: str) -> Mapping[str, Any]:
    crd = next(custom_resource_definition(k) for k in KINDS if k.kind == kind)
    schema: Mapping[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def check(kind: str, obj: Mapping[str, Any]) -> list[Problem]:
    """apiVersion and metadata as for any object, then the CRD schema (status is not checked:
    it is the operator's to write)."""
    found: list[Problem] = validate_custom_resource(obj)
    schema = _schema(kind)
    for name in schema.get("required", ()):
        if obj.get(name) is None:
            found.append(field.required(name, ""))
    if obj.get("spec") is not None:
        _check(schema["properties"]["spec"], obj["spec"], "spec", found)
    return found


def _type_name(value: object) -> str:
    return "null" if value is None else _JSON_TYPES.get(type(value), type(value).__name__)


def _check(schema: Mapping[str, Any], value: object, path: str, found: list[Problem]) -> None:
    if value is None:
        if not schema.get("nullable"):
            found.append(field.invalid(path, "null", f'{path} in body must be of type {schema.get("type")}: "null"'))
        return
    expected = schema.get("type")
    actual = _type_name(value)
    if expected and actual != expected and not (expected == "number" and actual == "integer"):
        found.append(field.invalid(path, actual, f'{path} in body must be of type {expected}: "{actual}"'))
        return
    if isinstance(value, Mapping):
        _object(schema, value, path, found)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _check(schema.get("items") or {}, item, field.index(path, i), found)
    else:
        _scalar(schema, value, path, found)


def _object(schema: Mapping[str, Any], value: Mapping[str, Any], path: str, found: list[Problem]) -> None:
    properties = schema.get("properties") or {}
    for name in schema.get("required", ()):
        if name not in value:
            found.append(field.required(field.child(path, name), ""))
    additional = schema.get("additionalProperties")
    for name, item in value.items():
        child = field.child(path, str(name))
        if name in properties:
            _check(properties[name], item, child, found)
        elif isinstance(additional, Mapping):
            _check(additional, item, field.key(path, str(name)), found)
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            found.append(UnknownField(child))


def _scalar(schema: Mapping[str, Any], value: object, path: str, found: list[Problem]) -> None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            detail = f"{path} in body should be greater than or equal to {schema['minimum']}"
            found.append(field.invalid(path, value, detail))
        if "maximum" in schema and value > schema["maximum"]:
            detail = f"{path} in body should be less than or equal to {schema['maximum']}"
            found.append(field.invalid(path, value, detail))
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            detail = f"{path} in body should be at least {schema['minLength']} chars long"
            found.append(field.invalid(path, value, detail))
        if "enum" in schema and value not in schema["enum"]:
            found.append(field.not_supported(path, value, [str(e) for e in schema["enum"]]))
