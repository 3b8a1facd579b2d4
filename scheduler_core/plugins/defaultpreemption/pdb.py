"""PodDisruptionBudgets as preemption reads them: which victims would violate one.

Upstream: ``filterPodsWithPDBViolation`` in
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`` (v1.36.3), over
``policy/v1`` PodDisruptionBudget manifests (``handle.objects("PodDisruptionBudget")``). A
budget's selector is ``metav1.LabelSelectorAsSelector``
(``apimachinery/pkg/apis/meta/v1/helpers.go``): a null selector and an empty one both match
nothing here, and a selector that does not parse (unknown operator, In/NotIn without values,
Exists/DoesNotExist with values, a bad key or value) matches nothing either.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.framework import PodInfo

_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _valid_key(key: str) -> bool:
    """``validation.IsQualifiedName`` (label keys)."""
    parts = key.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN_RE.match(prefix):
            return False
    name = parts[-1]
    return 0 < len(name) <= 63 and bool(_NAME_RE.match(name))


def _valid_value(value: str) -> bool:
    """``validation.IsValidLabelValue``."""
    return value == "" or (len(value) <= 63 and bool(_NAME_RE.match(value)))


@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == _IN:
            return self.key in labels and labels[self.key] in self.values
        if self.operator == _NOT_IN:
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == _EXISTS:
            return self.key in labels
        return self.key not in labels


def _requirement(key: str, operator: str, values: Sequence[str]) -> _Requirement | None:
    """``labels.NewRequirement``; None when it does not validate."""
    if not _valid_key(key) or not all(isinstance(v, str) and _valid_value(v) for v in values):
        return None
    if operator in (_IN, _NOT_IN) and not values:
        return None
    if operator in (_EXISTS, _DOES_NOT_EXIST) and values:
        return None
    return _Requirement(key, operator, frozenset(values))


def parse_selector(raw: Mapping[str, Any] | None) -> tuple[_Requirement, ...] | None:
    """A selector's requirements; None for a selector that matches nothing (null, empty or invalid)."""
    if not raw:
        return None
    match_labels: Mapping[str, Any] = raw.get("matchLabels") or {}
    expressions: Sequence[Mapping[str, Any]] = raw.get("matchExpressions") or ()
    if not match_labels and not expressions:
        return None  # labels.Everything(): Empty(), which the caller treats as matching nothing
    requirements: list[_Requirement] = []
    for key, value in match_labels.items():
        req = _requirement(str(key), _IN, [value] if isinstance(value, str) else [])
        if req is None:
            return None
        requirements.append(req)
    for expr in expressions:
        operator = expr.get("operator")
        if operator not in (_IN, _NOT_IN, _EXISTS, _DOES_NOT_EXIST):
            return None
        req = _requirement(str(expr.get("key") or ""), operator, list(expr.get("values") or ()))
        if req is None:
            return None
        requirements.append(req)
    return tuple(requirements)


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """What preemption needs of a budget: where it applies and how many disruptions it allows."""

    namespace: str
    selector: tuple[_Requirement, ...] | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @classmethod
    def from_manifest(cls, raw: Mapping[str, Any]) -> PodDisruptionBudget:
        meta = raw.get("metadata") or {}
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        return cls(
            namespace=meta.get("namespace") or "default",
            selector=parse_selector(spec.get("selector")),
            disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
            disrupted_pods=frozenset(status.get("disruptedPods") or {}),
        )

    def selects(self, pod: PodInfo) -> bool:
        if self.selector is None or pod.namespace != self.namespace:
            return False
        return all(r.matches(pod.labels) for r in self.selector)


def budgets(manifests: Iterable[Mapping[str, Any]]) -> list[PodDisruptionBudget]:
    return [PodDisruptionBudget.from_manifest(m) for m in manifests]


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` (in order) into those whose eviction would violate a budget and the others.

    Each matching budget's allowance is spent by every pod it selects, in order, unless the pod
    is already in its ``disruptedPods`` (the API server processed that eviction); a pod that
    drives any budget below zero is violating.
    """
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        # A pod with no labels matches no budget.
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if not pdb.selects(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating
