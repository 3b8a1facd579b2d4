"""API-server validation of the fields the scheduler reads, before any defaulting.

A cluster never holds a pod whose quantity is ``lots`` or whose taint has no effect; the API
server refuses it. ``simulate`` refuses it too, at load time, so a bad manifest is an input
error naming the field rather than a crash mid-cycle. Only what the scheduler reads is
checked (metadata, containers' resources and ports, overhead, node selector, tolerations,
priority; node labels, taints, capacity and allocatable). Messages follow
``k8s.io/apimachinery/pkg/util/validation/field`` (``Required value``, ``Unsupported
value: ...``) and ``pkg/apis/core/validation/validation.go`` (resource requirements,
tolerations, taints).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from scheduler_core.framework import QuantityError, parse_quantity

REQUIRED = "Required value"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
TOLERATION_OPERATORS = ("Equal", "Exists")


def _quote(value: object) -> str:
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def not_supported(value: object, supported: Sequence[str]) -> str:
    return f"Unsupported value: {_quote(value)}: supported values: " + ", ".join(_quote(s) for s in supported)


def _type_name(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}.get(
        type(value), type(value).__name__
    )


class Checker:
    """Collects ``(field path, reason)`` problems of one object."""

    def __init__(self) -> None:
        self.problems: list[tuple[str, str]] = []

    def add(self, path: str, reason: str) -> None:
        self.problems.append((path, reason))

    def mapping(self, value: object, path: str, *, required: bool = False) -> Mapping[str, Any]:
        if value is None:
            if required:
                self.add(path, REQUIRED)
            return {}
        if not isinstance(value, Mapping):
            self.add(path, f"must be an object, got {_type_name(value)}")
            return {}
        return value

    def sequence(self, value: object, path: str) -> Sequence[Any]:
        if value is None:
            return ()
        if not isinstance(value, list):
            self.add(path, f"must be an array, got {_type_name(value)}")
            return ()
        return value

    def string(self, value: object, path: str, *, required: bool = False) -> str:
        if value is None or value == "":
            if required:
                self.add(path, REQUIRED)
            return ""
        if not isinstance(value, str):
            self.add(path, f"must be a string, got {_type_name(value)} {value!r}")
            return ""
        return value

    def string_map(self, value: object, path: str) -> None:
        for key, item in self.mapping(value, path).items():
            if not isinstance(key, str):
                self.add(path, f"keys must be strings, got {key!r}")
            elif not isinstance(item, str):
                self.add(f"{path}.{key}", f"must be a string, got {_type_name(item)} {item!r}")

    def integer(self, value: object, path: str) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            self.add(path, f"must be an integer, got {_type_name(value)} {value!r}")

    def resource_list(self, value: object, path: str) -> dict[str, Fraction]:
        """Parse every quantity; negative ones are refused (``ValidateResourceQuantityValue``)."""
        parsed: dict[str, Fraction] = {}
        for name, quantity in self.mapping(value, path).items():
            field = f"{path}.{name}"
            try:
                amount = parse_quantity(quantity)
            except (QuantityError, TypeError, ValueError) as exc:
                self.add(field, str(exc) if isinstance(exc, QuantityError) else f"not a quantity: {quantity!r}")
                continue
            if amount < 0:
                self.add(field, f"Invalid value: {_quote(quantity)}: must be greater than or equal to 0")
                continue
            parsed[str(name)] = amount
        return parsed


def check_metadata(c: Checker, meta: Mapping[str, Any]) -> None:
    c.string(meta.get("name"), "metadata.name", required=True)
    c.string(meta.get("namespace"), "metadata.namespace")
    c.string(meta.get("uid"), "metadata.uid")
    c.string_map(meta.get("labels"), "metadata.labels")
    c.string_map(meta.get("annotations"), "metadata.annotations")


def check_pod(pod: Mapping[str, Any]) -> list[tuple[str, str]]:
    c = Checker()
    check_metadata(c, c.mapping(pod.get("metadata"), "metadata"))
    spec = c.mapping(pod.get("spec"), "spec", required=True)
    if isinstance(pod.get("spec"), Mapping) and not spec.get("containers"):
        c.add("spec.containers", REQUIRED)
    for field in ("initContainers", "containers"):
        for i, container in enumerate(c.sequence(spec.get(field), f"spec.{field}")):
            _check_container(c, container, f"spec.{field}[{i}]")
    c.resource_list(spec.get("overhead"), "spec.overhead")
    c.string_map(spec.get("nodeSelector"), "spec.nodeSelector")
    c.mapping(spec.get("affinity"), "spec.affinity")
    for i, toleration in enumerate(c.sequence(spec.get("tolerations"), "spec.tolerations")):
        _check_toleration(c, toleration, f"spec.tolerations[{i}]")
    for i, gate in enumerate(c.sequence(spec.get("schedulingGates"), "spec.schedulingGates")):
        path = f"spec.schedulingGates[{i}]"
        c.string(c.mapping(gate, path).get("name"), f"{path}.name", required=True)
    c.string(spec.get("nodeName"), "spec.nodeName")
    c.string(spec.get("schedulerName"), "spec.schedulerName")
    c.string(spec.get("priorityClassName"), "spec.priorityClassName")
    c.integer(spec.get("priority"), "spec.priority")
    c.mapping(pod.get("status"), "status")
    return c.problems


def _check_container(c: Checker, raw: object, path: str) -> None:
    container = c.mapping(raw, path)
    resources = c.mapping(container.get("resources"), f"{path}.resources")
    requests = c.resource_list(resources.get("requests"), f"{path}.resources.requests")
    limits = c.resource_list(resources.get("limits"), f"{path}.resources.limits")
    for name, request in requests.items():
        limit = limits.get(name)
        if limit is not None and request > limit:
            raw_request = resources["requests"][name]
            raw_limit = resources["limits"][name]
            c.add(
                f"{path}.resources.requests.{name}",
                f"Invalid value: {_quote(raw_request)}: must be less than or equal to {name} limit of {raw_limit}",
            )
    for i, port in enumerate(c.sequence(container.get("ports"), f"{path}.ports")):
        port_map = c.mapping(port, f"{path}.ports[{i}]")
        c.integer(port_map.get("hostPort"), f"{path}.ports[{i}].hostPort")
        c.integer(port_map.get("containerPort"), f"{path}.ports[{i}].containerPort")


def _check_toleration(c: Checker, raw: object, path: str) -> None:
    """Upstream ``ValidateTolerations``."""
    toleration = c.mapping(raw, path)
    key = c.string(toleration.get("key"), f"{path}.key")
    operator = c.string(toleration.get("operator"), f"{path}.operator")
    value = c.string(toleration.get("value"), f"{path}.value")
    effect = c.string(toleration.get("effect"), f"{path}.effect")
    c.integer(toleration.get("tolerationSeconds"), f"{path}.tolerationSeconds")
    if not key and operator != "Exists":
        c.add(
            f"{path}.operator",
            f"Invalid value: {_quote(operator)}: operator must be Exists when `key` is empty, "
            'which means "match all values and all keys"',
        )
    if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
        reason = "effect must be 'NoExecute' when `tolerationSeconds` is set"
        c.add(f"{path}.effect", f"Invalid value: {_quote(effect)}: {reason}")
    if operator == "Exists" and value:
        c.add(f"{path}.operator", f"Invalid value: {_quote(value)}: value must be empty when `operator` is 'Exists'")
    elif operator not in ("", *TOLERATION_OPERATORS):
        c.add(f"{path}.operator", not_supported(operator, TOLERATION_OPERATORS))
    if effect and effect not in TAINT_EFFECTS:
        c.add(f"{path}.effect", not_supported(effect, TAINT_EFFECTS))


def check_node(node: Mapping[str, Any]) -> list[tuple[str, str]]:
    c = Checker()
    check_metadata(c, c.mapping(node.get("metadata"), "metadata"))
    spec = c.mapping(node.get("spec"), "spec")
    for i, raw in enumerate(c.sequence(spec.get("taints"), "spec.taints")):
        path = f"spec.taints[{i}]"
        taint = c.mapping(raw, path)
        c.string(taint.get("key"), f"{path}.key", required=True)
        c.string(taint.get("value"), f"{path}.value")
        effect = c.string(taint.get("effect"), f"{path}.effect", required=True)
        if effect and effect not in TAINT_EFFECTS:
            c.add(f"{path}.effect", not_supported(effect, TAINT_EFFECTS))
    if spec.get("unschedulable") is not None and not isinstance(spec.get("unschedulable"), bool):
        c.add("spec.unschedulable", f"must be a boolean, got {spec.get('unschedulable')!r}")
    status = c.mapping(node.get("status"), "status")
    c.resource_list(status.get("capacity"), "status.capacity")
    c.resource_list(status.get("allocatable"), "status.allocatable")
    c.sequence(status.get("images"), "status.images")
    c.sequence(status.get("conditions"), "status.conditions")
    return c.problems
