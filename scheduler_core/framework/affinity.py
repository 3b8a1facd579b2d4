"""Pod (anti-)affinity terms, parsed once per pod as upstream ``PodInfo`` holds them
(``PodInfo.affinity_terms``; shared by InterPodAffinity and the queue's cross-topology check).

Upstream ``k8s.io/kube-scheduler/framework/types.go`` (``AffinityTerm``, ``Matches``,
``GetAffinityTerms``, ``GetWeightedAffinityTerms``, ``getNamespacesFromPodAffinityTerm``) and
``pkg/scheduler/framework/types.go`` (``PodInfo.Update``: the four term lists and the aggregate
of their parse errors; a list with a term that does not parse is dropped whole).

A term selects pods in its ``namespaces``, or, when it has neither namespaces nor a
``namespaceSelector``, in the pod's own namespace; a ``namespaceSelector`` is matched against
the labels of the namespace it is asked about. For the pod being scheduled the plugin unrolls
its namespace selectors once per cycle (:func:`merge_namespaces`, upstream
``mergeAffinityTermNamespacesIfNotEmpty``), so its terms never need namespace labels.

``matchLabelKeys``/``mismatchLabelKeys`` are not read here: the API server merges them into
``labelSelector`` when the pod is created (``pkg/registry/core/pod/strategy.go``
``mutatePodAffinity``), and kube-scheduler only sees the merged selector.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from scheduler_core.framework import field, manifest
from scheduler_core.framework import labels as selector
from scheduler_core.framework.labels import Selector, SelectorError
from scheduler_core.framework.manifest import Manifest
from scheduler_core.framework.types import PodInfo

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class TermsError(ValueError):
    """A pod whose affinity terms do not parse (the message is upstream's aggregate)."""


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(self, pod: PodInfo, ns_labels: Mapping[str, str] | None) -> bool:
        """Whether ``pod`` (whose namespace has ``ns_labels``) is selected by this term."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(ns_labels or {}):
            return self.selector.matches(pod.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


@dataclass(frozen=True, slots=True)
class PodTerms:
    """The four term lists of a pod, and per-list parse errors (``None``: parsed)."""

    required_affinity: tuple[AffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()
    required_affinity_error: str | None = None
    required_anti_affinity_error: str | None = None
    preferred_affinity_error: str | None = None
    preferred_anti_affinity_error: str | None = None

    def error(self) -> str | None:
        """``PodInfo.Update``'s aggregate of the lists' errors, or ``None``."""
        errors = [
            f"{name}: {error}"
            for name, error in (
                ("requiredAffinityTerms", self.required_affinity_error),
                ("requiredAntiAffinityTerms", self.required_anti_affinity_error),
                ("preferredAffinityTerms", self.preferred_affinity_error),
                ("preferredAntiAffinityTerms", self.preferred_anti_affinity_error),
            )
            if error is not None
        ]
        if not errors:
            return None
        return field.aggregate(errors)

    def checked_required_affinity(self) -> tuple[AffinityTerm, ...]:
        if self.required_affinity_error is not None:
            raise TermsError(self.required_affinity_error)
        return self.required_affinity

    def checked_required_anti_affinity(self) -> tuple[AffinityTerm, ...]:
        if self.required_anti_affinity_error is not None:
            raise TermsError(self.required_anti_affinity_error)
        return self.required_anti_affinity


NO_TERMS = PodTerms()


def pod_terms(pod: PodInfo) -> PodTerms:
    """The pod's parsed terms, memoised on the PodInfo (affinity is immutable): a queueing
    hint asks for each pending pod's on every bound pod's event."""
    terms = pod.pod_terms
    if terms is None:
        terms = pod.pod_terms = _parse(pod) if pod.has_affinity else NO_TERMS
    return terms


def _parse(pod: PodInfo) -> PodTerms:
    affinity = pod.affinity.get("podAffinity") or {}
    anti = pod.affinity.get("podAntiAffinity") or {}
    required, required_error = _terms(pod, affinity.get(REQUIRED))
    required_anti, required_anti_error = _terms(pod, anti.get(REQUIRED))
    preferred, preferred_error = _weighted_terms(pod, affinity.get(PREFERRED))
    preferred_anti, preferred_anti_error = _weighted_terms(pod, anti.get(PREFERRED))
    return PodTerms(
        required,
        required_anti,
        preferred,
        preferred_anti,
        required_error,
        required_anti_error,
        preferred_error,
        preferred_anti_error,
    )


def _terms(pod: PodInfo, raw: Sequence[Manifest] | None) -> tuple[tuple[AffinityTerm, ...], str | None]:
    """``GetAffinityTerms``: all terms, or none and the first term's error."""
    try:
        return tuple(new_affinity_term(pod, term or {}) for term in raw or ()), None
    except SelectorError as error:
        return (), str(error)


def _weighted_terms(
    pod: PodInfo, raw: Sequence[Manifest] | None
) -> tuple[tuple[WeightedAffinityTerm, ...], str | None]:
    """``GetWeightedAffinityTerms``: all terms with their weights, or none and an error."""
    terms = []
    for weighted in raw or ():
        weighted = weighted or {}
        try:
            term = new_affinity_term(pod, weighted.get("podAffinityTerm") or {})
        except SelectorError as error:
            return (), str(error)
        terms.append(WeightedAffinityTerm(term, int(weighted.get("weight") or 0)))
    return tuple(terms), None


def new_affinity_term(pod: PodInfo, raw: Manifest) -> AffinityTerm:
    """``newAffinityTerm``: label selector, namespaces, namespace selector, topology key."""
    label_selector = selector.parse(raw.get("labelSelector"))
    namespaces = namespaces_from_term(pod, raw)
    namespace_selector = selector.parse(raw.get("namespaceSelector"))
    return AffinityTerm(namespaces, label_selector, str(raw.get("topologyKey") or ""), namespace_selector)


def namespaces_from_term(pod: PodInfo, raw: Manifest) -> frozenset[str]:
    """``getNamespacesFromPodAffinityTerm``: the listed namespaces, else (no namespaces and no
    namespace selector) the pod's own."""
    listed = raw.get("namespaces") or ()
    if not listed and raw.get("namespaceSelector") is None:
        return frozenset((pod.namespace,))
    return frozenset(str(ns) for ns in listed)


# -- namespaces ---------------------------------------------------------------------------------


def _meta(obj: Any) -> Manifest:
    return manifest.meta(obj) if isinstance(obj, Mapping) else {}


def namespace_labels(namespaces: Iterable[Any], name: str) -> Mapping[str, str]:
    """``GetNamespaceLabelsSnapshot``: the labels of namespace ``name``; none if it is unknown."""
    for namespace in namespaces:
        meta = _meta(namespace)
        if meta.get("name") == name:
            labels: Mapping[str, str] = meta.get("labels") or {}
            return labels
    return {}


def merge_namespaces(term: AffinityTerm, namespaces: Sequence[Any]) -> AffinityTerm:
    """``mergeAffinityTermNamespacesIfNotEmpty``: unroll a namespace selector into the names of
    the namespaces it selects (then select no more by labels); ``{}`` (all namespaces) stays."""
    ns_selector = term.namespace_selector
    if ns_selector.empty():
        return term
    if ns_selector.nothing:
        return term  # selects no namespace: nothing to add
    names = {
        str(_meta(ns).get("name") or "") for ns in namespaces if ns_selector.matches(_meta(ns).get("labels") or {})
    }
    return replace(term, namespaces=term.namespaces | names, namespace_selector=selector.NOTHING)


def merged_terms(terms: Sequence[AffinityTerm], namespaces: Sequence[Any]) -> tuple[AffinityTerm, ...]:
    return tuple(merge_namespaces(term, namespaces) for term in terms)


def merged_weighted_terms(
    terms: Sequence[WeightedAffinityTerm], namespaces: Sequence[Any]
) -> tuple[WeightedAffinityTerm, ...]:
    return tuple(WeightedAffinityTerm(merge_namespaces(w.term, namespaces), w.weight) for w in terms)


def needs_namespaces(terms: Iterable[AffinityTerm]) -> bool:
    """Whether merging these terms reads the namespace list."""
    return any(not t.namespace_selector.empty() and not t.namespace_selector.nothing for t in terms)


def matches_all(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """``podMatchesAllAffinityTerms``: no terms match nothing; namespace labels are not read
    (the incoming pod's selectors are merged into its namespaces)."""
    if not terms:
        return False
    for term in terms:  # noqa: SIM110 - a loop: no generator per call (a hint per pending pod)
        if not term.matches(pod, None):
            return False
    return True
