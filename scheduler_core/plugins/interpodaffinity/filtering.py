"""InterPodAffinity's PreFilter, AddPod/RemovePod and Filter (upstream ``filtering.go``).

PreFilter counts, per topology pair (label key, value), three things over the snapshot (the
plugin gathers them from its :mod:`.index`; :func:`incoming_affinity_counts` is upstream's walk,
used for a node list other than the snapshot's):

- ``existing_anti_affinity``: existing pods whose required anti-affinity terms select the
  incoming pod;
- ``affinity``: existing pods matching *all* the incoming pod's required affinity terms (one
  count per term, at that term's topology pair);
- ``anti_affinity``: existing pods matching each of the incoming pod's required anti-affinity
  terms.

Filter then looks only at the node's labels: every affinity term's topology key must be on the
node with a positive count (unless no pod matches anywhere and the pod matches its own terms:
the first pod of a group), no anti-affinity term's pair may be counted, and no pair of the
node's labels may be counted by existing pods' anti-affinity. AddPod/RemovePod adjust the
counts for what-if evaluations (nominated pods, preemption victims). ``filter_batch`` does the
same over the snapshot's label columns.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler_core.framework import BoolArray, NodeColumns, NodeInfo, PodInfo
from scheduler_core.framework.affinity import AffinityTerm, matches_all, pod_terms

TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]


@dataclass(slots=True)
class PreFilterState:
    existing_anti_affinity_counts: Counts
    affinity_counts: Counts
    anti_affinity_counts: Counts
    pod: PodInfo
    # The incoming pod's required terms, with namespace selectors merged into namespaces.
    affinity_terms: tuple[AffinityTerm, ...]
    anti_affinity_terms: tuple[AffinityTerm, ...]
    # A copy of the labels of the incoming pod's namespace.
    namespace_labels: Mapping[str, str]
    # Whether the incoming pod matches all its own affinity terms (constant for the cycle).
    matches_own_affinity: bool

    def clone(self) -> PreFilterState:
        return PreFilterState(
            dict(self.existing_anti_affinity_counts),
            dict(self.affinity_counts),
            dict(self.anti_affinity_counts),
            self.pod,
            self.affinity_terms,
            self.anti_affinity_terms,
            self.namespace_labels,
            self.matches_own_affinity,
        )

    def update_with_pod(self, pod: PodInfo, node_labels: Mapping[str, str], multiplier: int) -> None:
        """``updateWithPod``: account for ``pod`` appearing (+1) or leaving (-1) the node."""
        update_with_anti_affinity_terms(
            self.existing_anti_affinity_counts,
            pod_terms(pod).required_anti_affinity,
            self.pod,
            self.namespace_labels,
            node_labels,
            multiplier,
        )
        if matches_all(self.affinity_terms, pod):
            for term in self.affinity_terms:
                _update(self.affinity_counts, node_labels, term.topology_key, multiplier)
        # The incoming pod's terms have their namespace selectors merged: no namespace labels.
        update_with_anti_affinity_terms(
            self.anti_affinity_counts, self.anti_affinity_terms, pod, None, node_labels, multiplier
        )


def _update(counts: Counts, node_labels: Mapping[str, str], key: str, value: int) -> None:
    topology_value = node_labels.get(key)
    if topology_value is not None:
        pair = (key, topology_value)
        count = counts.get(pair, 0) + value
        # The value may be negative: drop a pair that is down to zero.
        if count:
            counts[pair] = count
        else:
            counts.pop(pair, None)


def update_with_anti_affinity_terms(
    counts: Counts,
    terms: Sequence[AffinityTerm],
    pod: PodInfo,
    ns_labels: Mapping[str, str] | None,
    node_labels: Mapping[str, str],
    value: int,
) -> None:
    for term in terms:
        if term.matches(pod, ns_labels):
            _update(counts, node_labels, term.topology_key, value)


def incoming_affinity_counts(
    affinity_terms: Sequence[AffinityTerm], anti_affinity_terms: Sequence[AffinityTerm], nodes: Sequence[NodeInfo]
) -> tuple[Counts, Counts]:
    """``getIncomingAffinityAntiAffinityCounts``: pairs of existing pods that match all the
    incoming pod's affinity terms (one count per term), and each of its anti-affinity terms."""
    affinity: Counts = {}
    anti: Counts = {}
    if not affinity_terms and not anti_affinity_terms:
        return affinity, anti
    for node in nodes:
        labels = node.labels
        for existing in node.pods:
            if affinity_terms and matches_all(affinity_terms, existing):
                for term in affinity_terms:
                    topology_value = labels.get(term.topology_key)
                    if topology_value is not None:
                        pair = (term.topology_key, topology_value)
                        affinity[pair] = affinity.get(pair, 0) + 1
            for term in anti_affinity_terms:
                if term.matches(existing, None):
                    topology_value = labels.get(term.topology_key)
                    if topology_value is not None:
                        pair = (term.topology_key, topology_value)
                        anti[pair] = anti.get(pair, 0) + 1
    return affinity, anti


# -- Filter -----------------------------------------------------------------------------------


def satisfies_pod_affinity(state: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    """``satisfyPodAffinity``: all topology keys on the node, each with a matching pod there."""
    pods_exist = True
    counts = state.affinity_counts
    for term in state.affinity_terms:
        topology_value = node_labels.get(term.topology_key)
        if topology_value is None:
            return False  # all topology labels must exist on the node
        if counts.get((term.topology_key, topology_value), 0) <= 0:
            pods_exist = False
    if not pods_exist:
        # The first pod of a group with affinity to itself: no pod matches anywhere, the pod
        # matches its own terms, and the node has all the topology keys.
        return not counts and state.matches_own_affinity
    return True


def satisfies_pod_anti_affinity(state: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    """``satisfyPodAntiAffinity``: no pod the incoming pod repels in the node's domains."""
    counts = state.anti_affinity_counts
    if counts:
        for term in state.anti_affinity_terms:
            topology_value = node_labels.get(term.topology_key)
            if topology_value is not None and counts.get((term.topology_key, topology_value), 0) > 0:
                return False
    return True


def satisfies_existing_pods_anti_affinity(state: PreFilterState, node_labels: Mapping[str, str]) -> bool:
    """``satisfyExistingPodsAntiAffinity``: no pair of the node's labels is repelled."""
    counts = state.existing_anti_affinity_counts
    if counts:
        for pair in node_labels.items():
            if counts.get(pair, 0) > 0:
                return False
    return True


# -- Filter over the columns ------------------------------------------------------------------


_KEY = operator.itemgetter(0)
_VALUE = operator.itemgetter(1)


def _by_key(counts: Counts) -> dict[str, Counts]:
    """The pairs of ``counts`` per topology key. Counts hold one pair per topology domain
    (thousands with ``kubernetes.io/hostname``) and usually a single key: that case is found
    and returned without a loop in Python."""
    keys = set(map(_KEY, counts))
    if len(keys) <= 1:
        return {keys.pop(): counts} if keys else {}
    grouped: dict[str, Counts] = {}
    for pair, count in counts.items():
        grouped.setdefault(pair[0], {})[pair] = count
    return grouped


def _positive(columns: NodeColumns, key: str, pairs: Counts) -> BoolArray:
    """Per row: the node has label ``key`` with a value counted positive in ``pairs`` (the
    pairs of that key)."""
    column = columns.label(key)
    vocab = column.vocab
    absent = len(vocab)
    lut = np.zeros(absent + 1, dtype=np.bool_)  # the last slot: label absent (code -1)
    if pairs:
        values: Iterable[str] = (
            map(_VALUE, pairs) if min(pairs.values()) > 0 else [p[1] for p, c in pairs.items() if c > 0]
        )
        # Values no node has map to the absent slot, which is cleared after.
        lut[np.fromiter(map(vocab.get, values, itertools.repeat(absent)), dtype=np.intp)] = True
        lut[absent] = False
    return lut[column.codes]


def filter_mask(state: PreFilterState, columns: NodeColumns) -> BoolArray:
    """Filter over every row of ``columns`` at once (True: the node passes)."""
    size = columns.size
    passes = np.ones(size, dtype=np.bool_)
    if state.affinity_terms:
        affinity = _by_key(state.affinity_counts)
        first_of_group = not state.affinity_counts and state.matches_own_affinity
        for term in state.affinity_terms:
            key = term.topology_key
            if first_of_group:
                passes &= columns.label(key).codes >= 0  # only the topology keys must exist
            else:
                passes &= _positive(columns, key, affinity.get(key, {}))
    if state.anti_affinity_counts:
        anti = _by_key(state.anti_affinity_counts)
        for term in state.anti_affinity_terms:
            passes &= ~_positive(columns, term.topology_key, anti.get(term.topology_key, {}))
    for key, values in _by_key(state.existing_anti_affinity_counts).items():
        passes &= ~_positive(columns, key, values)
    return passes
