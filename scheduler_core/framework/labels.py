"""Label selectors (``metav1.LabelSelector`` / ``labels.Selector``), shared by plugins.

Upstream (k8s.io/apimachinery v0.36.3): ``pkg/apis/meta/v1/helpers.go``
``LabelSelectorAsSelector`` and ``pkg/labels`` (``NewRequirement``, ``Requirement.Matches``,
``internalSelector.Add``, ``SelectorFromSet``, ``Set.AsSelector``, ``Merge``):

- a missing selector (``None``) is ``labels.Nothing()``: it selects nothing, is not
  ``empty``, and adding requirements to it leaves it selecting nothing;
- ``{}`` (no ``matchLabels``, no ``matchExpressions``) is ``labels.Everything()``: it selects
  everything and is ``empty`` (PodTopologySpread counts no pods for an empty selector);
- ``matchLabels`` entries are ``key == value``; ``matchExpressions`` operators are In, NotIn
  (non-empty values), Exists, DoesNotExist (no values); requirements are ANDed;
- a selector that does not parse raises :class:`SelectorError` with upstream's message
  (``values: Invalid value: null: ...``, bad values rendered as ``field.Error`` renders them:
  strings quoted, lists as JSON).

Selectors are immutable and hashable, so plugins may key per-selector memos on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from scheduler_core.framework import content, field
from scheduler_core.framework.manifest import Manifest

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
EQUALS = "="  # matchLabels entries and label sets (selection.Equals)
OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST)


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
        if op in (EQUALS, IN):
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

    def add(self, requirements: Iterable[Requirement]) -> Selector:
        """``Selector.Add``: Nothing stays Nothing; requirements are kept sorted by key."""
        if self.nothing:
            return self
        return Selector(tuple(sorted((*self.requirements, *requirements), key=lambda r: r.key)))


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.SelectorFromSet`` / ``Set.AsSelector``: ``key == value`` for each pair; an
    empty set is Everything."""
    return Selector(tuple(Requirement(k, EQUALS, frozenset((val,))) for k, val in sorted(labels.items())))


def set_matches(selector_set: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """``labels.Set(selector_set).AsSelectorPreValidated().Matches(labels)``; ``{}`` matches all."""
    return all(labels.get(k) == val for k, val in selector_set.items())


def parse(raw: Manifest | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``; raises :class:`SelectorError`."""
    if raw is None:
        return NOTHING
    match_labels: Manifest = raw.get("matchLabels") or {}
    expressions: Sequence[Manifest] = raw.get("matchExpressions") or ()
    if not match_labels and not expressions:
        return EVERYTHING
    requirements = [requirement(str(key), EQUALS, [str(value)]) for key, value in match_labels.items()]
    for expression in expressions:
        operator = str(expression.get("operator", ""))
        if operator not in OPERATORS:
            raise SelectorError(f"{field.go_quote(operator)} is not a valid label selector operator")
        raw_values = expression.get("values")
        values = None if raw_values is None else [str(x) for x in raw_values]
        requirements.append(requirement(str(expression.get("key", "")), operator, values))
    return EVERYTHING.add(requirements)


def requirement(key: str, operator: str, values: Sequence[str] | None) -> Requirement:
    """``labels.NewRequirement`` with an empty field path; raises :class:`SelectorError`."""
    errors: field.ErrorList = []
    key_errors = content.qualified_name(key)
    if key_errors:
        errors.append(field.invalid("key", key, "; ".join(key_errors)))
    count = len(values or ())
    if operator in (IN, NOT_IN) and count == 0:
        errors.append(
            field.invalid("values", field.go_json(values), "for 'in', 'notin' operators, values set can't be empty")
        )
    elif operator == EQUALS and count != 1:
        errors.append(
            field.invalid("values", field.go_json(values), "exact-match compatibility requires one single value")
        )
    elif operator in (EXISTS, DOES_NOT_EXIST) and count != 0:
        errors.append(
            field.invalid("values", field.go_json(values), "values set must be empty for exists and does not exist")
        )
    for i, value in enumerate(values or ()):
        value_errors = content.label_value(value)
        if value_errors:
            errors.append(field.invalid(field.key(field.index("values", i), key), value, "; ".join(value_errors)))
    if errors:
        raise SelectorError(field.aggregate(errors))
    return Requirement(key, operator, frozenset(values or ()))
