"""Node selectors: parsed once, matched per node or over all nodes at once.

The one implementation of ``v1.NodeSelector`` semantics in the scheduler, used by
NodeAffinity and by PodTopologySpread's ``nodeAffinityPolicy``. It follows upstream
``k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go`` with
``labels.Requirement`` (``k8s.io/apimachinery/pkg/labels/selector.go``):

- terms are ORed, a term's requirements ANDed; a term with neither ``matchExpressions``
  nor ``matchFields`` selects nothing, as does a selector without terms;
- ``matchExpressions`` operators In, NotIn, Exists, DoesNotExist, Gt, Lt (Gt/Lt compare
  ``strconv.ParseInt`` values; a node label that is not an int64 does not match);
- ``matchFields`` operators In/NotIn with exactly one value; the only node field is
  ``metadata.name`` (another key reads as ""), and a node without a name skips them;
- a term that fails to parse selects nothing; the other terms still count ("lazy
  errors"): the error only surfaces where upstream reports it.

Every matcher has a per-node form (``match(labels, name)``) and a vectorized form
(``mask(columns)``) over :class:`~scheduler_core.framework.NodeColumns`; both agree.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler_core.framework import content, field, gomath
from scheduler_core.framework.columns import BoolArray, IntArray, NodeColumns
from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.types import PodInfo

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"
_OPERATORS = (IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT)
_FIELD_OPERATORS = (IN, NOT_IN)
NODE_NAME_FIELD = "metadata.name"


class SelectorError(ValueError):
    """A node selector that does not parse; the message is upstream's aggregate."""


_NAME_ROWS: weakref.WeakKeyDictionary[NodeColumns, tuple[int, dict[str, int], tuple[int, ...]]] = (
    weakref.WeakKeyDictionary()
)


def name_rows(columns: NodeColumns) -> tuple[dict[str, int], tuple[int, ...]]:
    """The row of each node name, and the rows of unnamed nodes; rebuilt when the columns'
    nodes change (pods coming and going do not rename nodes)."""
    cached = _NAME_ROWS.get(columns)
    if cached is None or cached[0] != columns.version:
        rows = {name: row for row, name in enumerate(columns.names)}
        unnamed = tuple(row for row, name in enumerate(columns.names) if not name)
        cached = (columns.version, rows, unnamed)
        _NAME_ROWS[columns] = cached
    return cached[1], cached[2]


@dataclass(frozen=True, slots=True)
class LabelRequirement:
    """One ``labels.Requirement`` (``matchExpressions`` entry, or a ``nodeSelector`` pair)."""

    key: str
    operator: str
    values: tuple[str, ...]
    bound: int = 0  # the parsed value of Gt/Lt

    def match(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        op = self.operator
        if op == IN:
            return value is not None and value in self.values
        if op == NOT_IN:
            return value is None or value not in self.values
        if op == EXISTS:
            return value is not None
        if op == DOES_NOT_EXIST:
            return value is None
        if value is None:
            return False
        number = gomath.parse_go_int(value)
        if number is None:
            return False
        return number > self.bound if op == GT else number < self.bound

    def mask(self, columns: NodeColumns) -> BoolArray:
        column = columns.label(self.key)
        op = self.operator
        if op == IN:
            return column.mask_in(self.values)
        if op == NOT_IN:
            return ~column.mask_in(self.values)
        if op == EXISTS:
            return column.present()
        if op == DOES_NOT_EXIST:
            return ~column.present()
        # Gt/Lt: parse each distinct label value once; the last slot is "absent" (code -1).
        lut = np.zeros(len(column.vocab) + 1, dtype=np.bool_)
        for value, code in column.vocab.items():
            number = gomath.parse_go_int(value)
            if number is not None and (number > self.bound if op == GT else number < self.bound):
                lut[code] = True
        return lut[column.codes]


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One ``matchFields`` entry: ``key == value`` (In) or ``key != value`` (NotIn)."""

    key: str
    value: str
    equal: bool

    def match(self, name: str) -> bool:
        node_field = name if self.key == NODE_NAME_FIELD else ""
        return (node_field == self.value) is self.equal

    def mask(self, columns: NodeColumns) -> BoolArray:
        if self.key != NODE_NAME_FIELD:
            return np.full(columns.size, (self.value == "") is self.equal, dtype=np.bool_)
        hits = np.zeros(columns.size, dtype=np.bool_)
        row = name_rows(columns)[0].get(self.value)
        if row is not None:
            hits[row] = True
        return hits if self.equal else ~hits


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """A parsed ``v1.NodeSelectorTerm``; ``None`` means the term has no such list."""

    labels: tuple[LabelRequirement, ...] | None
    fields: tuple[FieldRequirement, ...] | None
    errors: tuple[field.Error, ...] = ()

    def match(self, labels: Mapping[str, str], name: str) -> bool:
        if self.errors:
            return False
        if self.labels is not None and not all(r.match(labels) for r in self.labels):
            return False
        # Upstream matches fields only against a non-empty field set (a named node).
        return self.fields is None or not name or all(f.match(name) for f in self.fields)

    def mask(self, columns: NodeColumns) -> BoolArray:
        if self.errors:
            return np.zeros(columns.size, dtype=np.bool_)
        result = np.ones(columns.size, dtype=np.bool_)
        for requirement in self.labels or ():
            result &= requirement.mask(columns)
        if self.fields is not None:
            fields = np.ones(columns.size, dtype=np.bool_)
            for field in self.fields:
                fields &= field.mask(columns)
            unnamed = name_rows(columns)[1]
            if unnamed:
                fields[list(unnamed)] = True
            result &= fields
        return result


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """A parsed ``v1.NodeSelector`` (upstream ``LazyErrorNodeSelector``)."""

    terms: tuple[NodeSelectorTerm, ...]

    @property
    def errors(self) -> field.ErrorList:
        return [error for term in self.terms for error in term.errors]

    def match(self, labels: Mapping[str, str], name: str) -> bool:
        return any(term.match(labels, name) for term in self.terms)

    def match_or_error(self, labels: Mapping[str, str], name: str) -> bool:
        """As ``LazyErrorNodeSelector.Match``: parse errors are raised when no term matched."""
        if self.match(labels, name):
            return True
        if self.errors:
            raise SelectorError(field.aggregate(self.errors))
        return False

    def mask(self, columns: NodeColumns) -> BoolArray:
        result = np.zeros(columns.size, dtype=np.bool_)
        for term in self.terms:
            if not term.errors:
                result |= term.mask(columns)
        return result


@dataclass(frozen=True, slots=True)
class PreferredTerms:
    """Parsed ``[]v1.PreferredSchedulingTerm``: score = sum of the weights of matching terms."""

    terms: tuple[tuple[NodeSelectorTerm, int], ...]

    def score(self, labels: Mapping[str, str], name: str) -> int:
        return sum(weight for term, weight in self.terms if term.match(labels, name))

    def scores(self, columns: NodeColumns) -> IntArray:
        total = np.zeros(columns.size, dtype=np.int64)
        for term, weight in self.terms:
            total += term.mask(columns).astype(np.int64) * weight
        return total


# PodInfo.node_affinity_preferred when the pod has no preferred terms.
_NO_PREFERRED_TERMS = PreferredTerms(())


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """A pod's ``nodeSelector`` and required node affinity, both of which must match."""

    node_selector: tuple[LabelRequirement, ...] | None
    affinity: NodeSelector | None

    def match(self, labels: Mapping[str, str], name: str) -> bool:
        """Parse errors count as no match (Filter ignores them)."""
        if self.node_selector is not None and not all(r.match(labels) for r in self.node_selector):
            return False
        return self.affinity is None or self.affinity.match(labels, name)

    def match_or_error(self, labels: Mapping[str, str], name: str) -> bool:
        if self.node_selector is not None and not all(r.match(labels) for r in self.node_selector):
            return False
        return self.affinity is None or self.affinity.match_or_error(labels, name)

    def mask(self, columns: NodeColumns) -> BoolArray:
        result = np.ones(columns.size, dtype=np.bool_)
        for requirement in self.node_selector or ():
            result &= requirement.mask(columns)
        if self.affinity is not None:
            result &= self.affinity.mask(columns)
        return result


# -- parsing -------------------------------------------------------------------------------


def _values(raw: Manifest) -> list[str] | None:
    values = raw.get("values")
    return None if values is None else [str(x) for x in values]


def _label_requirement(raw: Manifest, path: str) -> tuple[LabelRequirement | None, field.ErrorList]:
    """``nodeSelectorRequirementsAsSelector`` for one entry, then ``labels.NewRequirement``."""
    key = str(raw.get("key") or "")
    op = str(raw.get("operator") or "")
    if op not in _OPERATORS:
        return None, [field.not_supported(field.child(path, "operator"), op, _OPERATORS)]
    raw_values = _values(raw)
    values = raw_values or []
    errs: field.ErrorList = []
    key_errs = content.qualified_name(key)
    if key_errs:
        errs.append(field.invalid(field.child(path, "key"), key, "; ".join(key_errs)))
    values_path = field.child(path, "values")
    bound = 0
    bad_values = field.go_string_slice(raw_values)

    def invalid_values(detail: str) -> field.Error:
        return field.invalid(values_path, bad_values, detail)

    if op in (IN, NOT_IN) and not values:
        errs.append(invalid_values("for 'in', 'notin' operators, values set can't be empty"))
    elif op in (EXISTS, DOES_NOT_EXIST) and values:
        errs.append(invalid_values("values set must be empty for exists and does not exist"))
    elif op in (GT, LT):
        if len(values) != 1:
            errs.append(invalid_values("for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, value in enumerate(values):
            number = gomath.parse_go_int(value)
            if number is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errs.append(field.invalid(field.index(values_path, i), value, detail))
            else:
                bound = number
    for i, value in enumerate(values):
        value_errs = content.label_value(value)
        if value_errs:
            errs.append(field.invalid(field.key(field.index(values_path, i), key), value, "; ".join(value_errs)))
    if errs:
        return None, errs
    return LabelRequirement(key, op, tuple(values), bound), []


def _field_requirement(raw: Manifest, path: str) -> tuple[FieldRequirement | None, field.ErrorList]:
    """``nodeSelectorRequirementsAsFieldSelector`` for one entry."""
    op = str(raw.get("operator") or "")
    if op not in _FIELD_OPERATORS:
        return None, [field.not_supported(field.child(path, "operator"), op, _FIELD_OPERATORS)]
    raw_values = _values(raw)
    if raw_values is None or len(raw_values) != 1:
        bad_values = field.go_string_slice(raw_values)
        return None, [field.invalid(field.child(path, "values"), bad_values, "must have one element")]
    return FieldRequirement(str(raw.get("key") or ""), raw_values[0], op == IN), []


def is_empty_term(raw: Manifest) -> bool:
    return not raw.get("matchExpressions") and not raw.get("matchFields")


def parse_term(raw: Manifest, path: str) -> NodeSelectorTerm:
    """``newNodeSelectorTerm``: errors are kept on the term."""
    errs: field.ErrorList = []
    labels: list[LabelRequirement] | None = None
    fields: list[FieldRequirement] | None = None
    if raw.get("matchExpressions"):
        labels = []
        for i, expr in enumerate(raw["matchExpressions"]):
            requirement, expr_errs = _label_requirement(expr, field.index(field.child(path, "matchExpressions"), i))
            errs.extend(expr_errs)
            if requirement is not None:
                labels.append(requirement)
    if raw.get("matchFields"):
        fields = []
        for i, expr in enumerate(raw["matchFields"]):
            expr_path = field.index(field.child(path, "matchFields"), i)
            field_requirement, field_errs = _field_requirement(expr, expr_path)
            errs.extend(field_errs)
            if field_requirement is not None:
                fields.append(field_requirement)
    return NodeSelectorTerm(
        None if labels is None else tuple(labels), None if fields is None else tuple(fields), tuple(errs)
    )


def parse_node_selector(raw: Manifest, path: str = "") -> NodeSelector:
    """``NewLazyErrorNodeSelector``: empty terms are dropped, bad terms kept with their errors."""
    terms_path = field.child(path, "nodeSelectorTerms")
    return NodeSelector(
        tuple(
            parse_term(term, field.index(terms_path, i))
            for i, term in enumerate(raw.get("nodeSelectorTerms") or ())
            if term and not is_empty_term(term)
        )
    )


def parse_preferred_terms(raw: Sequence[Manifest], path: str = "") -> PreferredTerms:
    """``NewPreferredSchedulingTerms``: zero-weight and empty terms are skipped; any parse
    error fails the whole list (raises :class:`SelectorError`)."""
    terms: list[tuple[NodeSelectorTerm, int]] = []
    errs: field.ErrorList = []
    for i, item in enumerate(raw):
        item = item or {}
        weight = int(item.get("weight") or 0)
        preference = item.get("preference") or {}
        if weight == 0 or is_empty_term(preference):
            continue
        term = parse_term(preference, field.index(path, i))
        if term.errors:
            errs.extend(term.errors)
        else:
            terms.append((term, weight))
    if errs:
        raise SelectorError(field.aggregate(errs))
    return PreferredTerms(tuple(terms))


def _node_affinity(pod: PodInfo) -> Manifest:
    return pod.affinity.get("nodeAffinity") or {}


def required_node_affinity(pod: PodInfo) -> RequiredNodeAffinity:
    """``GetRequiredNodeAffinity(pod)``, memoised on the pod."""
    memo = pod.node_affinity_required
    if memo is not None:
        return memo
    node_selector = None
    if pod.node_selector:
        node_selector = tuple(LabelRequirement(str(k), IN, (str(val),)) for k, val in pod.node_selector.items())
    required = _node_affinity(pod).get("requiredDuringSchedulingIgnoredDuringExecution")
    affinity = None if required is None else parse_node_selector(required)
    result = RequiredNodeAffinity(node_selector, affinity)
    pod.node_affinity_required = result
    return result


def preferred_node_affinity(pod: PodInfo) -> PreferredTerms | None:
    """The pod's preferred terms (``None`` when the field is absent); raises
    :class:`SelectorError` when they do not parse. Memoised on the pod."""
    memo = pod.node_affinity_preferred
    if memo is None:
        preferred = _node_affinity(pod).get("preferredDuringSchedulingIgnoredDuringExecution")
        try:
            memo = _NO_PREFERRED_TERMS if preferred is None else parse_preferred_terms(preferred)
        except SelectorError as error:
            memo = str(error)
        pod.node_affinity_preferred = memo
    if isinstance(memo, str):
        raise SelectorError(memo)
    return None if memo is _NO_PREFERRED_TERMS else memo
