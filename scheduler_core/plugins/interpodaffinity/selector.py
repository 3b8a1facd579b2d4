"""Label selectors (``metav1.LabelSelector``) as the API machinery parses and matches them.

Upstream ``k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go`` ``LabelSelectorAsSelector`` and
``pkg/labels/selector.go`` (``NewRequirement``, ``Requirement.Matches``):

- a missing selector (``None``) selects nothing; ``{}`` selects everything;
- ``matchLabels`` entries are ``key == value``; ``matchExpressions`` operators are In, NotIn
  (non-empty values), Exists, DoesNotExist (no values); requirements are ANDed;
- parse errors carry upstream's messages (``values[0][key]: Invalid value: ...``), so a pod
  whose terms do not parse fails PreFilter with the text kube-scheduler prints.

Pod-affinity terms need nothing else (no Gt/Lt, no fields); if a shared
``plugins/labelselector`` module appears, this one folds into it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduler_core.plugins.nodeaffinity import validation as v

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
_EQUALS = "="  # matchLabels entries (selection.Equals)


class SelectorError(ValueError):
    """A label selector that does not parse; the message is upstream's."""


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        op = self.operator
        if op in (IN, _EQUALS):
            return value is not None and value in self.values
        if op == NOT_IN:
            return value is None or value not in self.values
        if op == EXISTS:
            return value is not None
        return value is None  # DoesNotExist


@dataclass(frozen=True, slots=True)
class Selector:
    """A parsed selector; ``nothing`` is ``labels.Nothing()``, no requirements ``Everything()``."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        for requirement in self.requirements:  # noqa: SIM110 - a hot path: no generator
            if not requirement.matches(labels):
                return False
        return True

    def empty(self) -> bool:
        """``Selector.Empty()``: true for Everything, false for Nothing."""
        return not self.nothing and not self.requirements


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def parse(raw: Mapping[str, Any] | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``; raises :class:`SelectorError`."""
    if raw is None:
        return NOTHING
    match_labels: Mapping[str, Any] = raw.get("matchLabels") or {}
    expressions: Sequence[Mapping[str, Any]] = raw.get("matchExpressions") or ()
    if not match_labels and not expressions:
        return EVERYTHING
    requirements = [_requirement(str(key), _EQUALS, [str(value)]) for key, value in match_labels.items()]
    for expression in expressions:
        operator = str(expression.get("operator", ""))
        if operator not in (IN, NOT_IN, EXISTS, DOES_NOT_EXIST):
            raise SelectorError(f"{v.go_quote(operator)} is not a valid label selector operator")
        raw_values = expression.get("values")
        values = None if raw_values is None else [str(x) for x in raw_values]
        requirements.append(_requirement(str(expression.get("key", "")), operator, values))
    return Selector(tuple(requirements))


def _requirement(key: str, operator: str, values: list[str] | None) -> Requirement:
    """``labels.NewRequirement`` with an empty field path."""
    errors: list[str] = []
    key_errors = v.label_key_errors(key)
    if key_errors:
        errors.append(v.invalid("key", v.go_quote(key), "; ".join(key_errors)))
    count = len(values or ())
    if operator in (IN, NOT_IN) and count == 0:
        errors.append(
            v.invalid("values", v.go_string_slice(values), "for 'in', 'notin' operators, values set can't be empty")
        )
    elif operator == _EQUALS and count != 1:
        errors.append(
            v.invalid("values", v.go_string_slice(values), "exact-match compatibility requires one single value")
        )
    elif operator in (EXISTS, DOES_NOT_EXIST) and count != 0:
        errors.append(
            v.invalid("values", v.go_string_slice(values), "values set must be empty for exists and does not exist")
        )
    for i, value in enumerate(values or ()):
        value_errors = v.label_value_errors(value)
        if value_errors:
            errors.append(v.invalid(f"values[{i}][{key}]", v.go_quote(value), "; ".join(value_errors)))
    if errors:
        raise SelectorError(v.aggregate(errors))
    return Requirement(key, operator, frozenset(values or ()))
