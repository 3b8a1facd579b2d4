"""An index of the snapshot's pods, so a cycle does not walk every pod of the cluster.

Upstream walks all nodes (or those with affinity pods) in every PreFilter and PreScore, 16
goroutines wide. In Python that costs tens to hundreds of milliseconds on a large cluster, for
every pod. The sums upstream builds only depend on two things, which this index keeps up to
date between cycles:

- the existing pods' own terms, resolved to the topology pair of their node
  (``term -> {pair: how many pods}``), for required anti-affinity (PreFilter), required
  affinity and weighted preferred terms (PreScore). A cycle matches each *distinct* term
  against the incoming pod once and adds its pairs;
- the pods grouped by (namespace, labels), the only things a term looks at, each group with
  its count per node. A cycle matches the incoming pod's terms against each *group* once and
  adds the group's counts per topology value.

Staleness: the index is refreshed at the start of each use from the NodeInfos' generations
(every pod added or removed, and every node update, bumps its node's generation), and a new
node list (nodes added or removed) drops the entries of nodes no longer listed. Results equal
the per-pod walks of :mod:`.filtering` and :mod:`.scoring` (tested on generated clusters).
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import TypeVar

import numpy as np

from scheduler_core.framework import IntArray, NodeInfo, PodInfo
from scheduler_core.framework.affinity import AffinityTerm, WeightedAffinityTerm, matches_all, pod_terms
from scheduler_core.framework.labels import EQUALS, IN
from scheduler_core.framework.types import next_generation
from scheduler_core.plugins.interpodaffinity.scoring import ScoreSink

TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]
GroupKey = tuple[str, frozenset[tuple[str, str]]]
_GENERATION = operator.attrgetter("generation")
_SEQUENCE = operator.attrgetter("sequence")
K = TypeVar("K")
T = TypeVar("T")


def group_key(pod: PodInfo) -> GroupKey:
    key = pod.label_group
    if key is None:
        key = pod.label_group = (pod.namespace, frozenset(pod.labels.items()))
    return key


class _Group:
    """Pods with the same namespace and labels: a representative and the count per node."""

    __slots__ = ("by_node", "by_pair", "by_value", "rep", "sequence")

    def __init__(self, rep: PodInfo, sequence: int) -> None:
        self.rep = rep
        self.sequence = sequence  # its place in the index's groups (creation order)
        self.by_node: dict[NodeInfo, int] = {}
        # Per topology key: pod counts per label value of their nodes (built on demand).
        self.by_value: dict[str, dict[str, int]] = {}
        self.by_pair: dict[str, Counts] = {}  # the same, keyed by topology pair


@dataclass(slots=True)
class _NodeEntry:
    """What one node contributed to the index: its pods (by identity) and labels, at one
    generation of the NodeInfo."""

    generation: int
    labels: Mapping[str, str]
    removals: int  # the NodeInfo's removals at that generation
    pods: list[PodInfo] = field(default_factory=list)  # the NodeInfo's pods then, in order


def _bump(table: dict[K, int], key: K, change: int) -> None:
    count = table.get(key, 0) + change
    if count:
        table[key] = count
    else:
        table.pop(key, None)


def _bump_nested(tables: dict[T, dict[K, int]], outer: T, key: K, change: int) -> None:
    table = tables.get(outer)
    if table is None:
        table = tables[outer] = {}
    _bump(table, key, change)
    if not table:
        del tables[outer]


class PodIndex:
    """The index over one node list (a snapshot's), refreshed by :meth:`refresh`."""

    def __init__(self) -> None:
        self._infos: Sequence[NodeInfo] | None = None
        self._generations: IntArray = np.zeros(0, dtype=np.int64)
        self._mark = -1  # the generation counter's value at the last refresh
        self._entries: dict[NodeInfo, _NodeEntry] = {}
        self._groups: dict[GroupKey, _Group] = {}
        # The groups by each of their labels, so a term requiring a label value is matched
        # against the groups with it, not against every group (EventHandlingPodAdd: 1,000
        # groups of one pod each, a pending pod's term selecting one of them).
        self._groups_by_label: dict[tuple[str, str], dict[GroupKey, _Group]] = {}
        self._created = 0
        # Existing pods' terms -> {pair: pods} (PreFilter), and {value of the term's topology
        # key: pods} (PreScore); soft terms keyed with their signed weight.
        self._anti: dict[AffinityTerm, Counts] = {}
        self._hard: dict[AffinityTerm, dict[str, int]] = {}
        self._soft: dict[tuple[AffinityTerm, int], dict[str, int]] = {}

    # -- upkeep --------------------------------------------------------------------------

    def refresh(self, infos: Sequence[NodeInfo]) -> None:
        # Every change of a NodeInfo takes a new number from the one generation counter:
        # when the counter moved by just our own probe since the last refresh, nothing
        # changed (PreScore's refresh right after PreFilter's).
        probe = next_generation()
        mark, self._mark = self._mark, probe
        if infos is self._infos and probe == mark + 1:
            return
        # The generations are compared as arrays: a cycle changes a node or two of
        # thousands, and a loop in Python over every node, twice a cycle, cost more than
        # the rest of the plugin.
        generations = np.fromiter(map(_GENERATION, infos), dtype=np.int64, count=len(infos))
        if infos is self._infos:
            rows: Iterable[int] = np.flatnonzero(generations != self._generations).tolist()
        else:
            listed = set(infos)
            for gone in [info for info in self._entries if info not in listed]:
                self._remove_entry(gone, self._entries.pop(gone))
            self._infos = infos
            rows = range(len(infos))
        entries = self._entries
        for row in rows:
            info = infos[row]
            generation = int(generations[row])
            entry = entries.get(info)
            if entry is None:
                entry = entries[info] = _NodeEntry(generation, info.labels, info.removals)
                self._apply(info, entry, info.pods, 1)
                entry.pods = list(info.pods)
            elif entry.generation != generation:
                self._update(info, entry, generation)
        self._generations = generations

    def _update(self, info: NodeInfo, entry: _NodeEntry, generation: int) -> None:
        """Follow one node's change pod by pod: a binding adds one pod to a node that may hold
        thousands (``EventHandlingPodAdd``: two nodes), so the node is not rebuilt. The pods
        are compared by identity (an updated pod is a new PodInfo: removed, then added)."""
        entry.generation = generation
        removals, entry.removals = entry.removals, info.removals
        before, now = entry.pods, info.pods
        entry.pods = list(now)
        if info.labels is not entry.labels and info.labels != entry.labels:
            self._apply(info, entry, before, -1)
            entry.labels = info.labels
            self._apply(info, entry, now, 1)
            return
        if removals == info.removals:  # nothing taken off since: the pods past ours are new
            self._apply(info, entry, now[len(before) :], 1)
            return
        # NodeInfo takes a pod off by moving its last pod into its place, so the two lists
        # differ at a few places: found at C speed, then told apart by identity.
        shared = min(len(before), len(now))
        moved = list(compress(range(shared), map(operator.is_not, before, now)))
        was = {id(pod): pod for pod in [*map(before.__getitem__, moved), *before[shared:]]}
        came = [pod for pod in [*map(now.__getitem__, moved), *now[shared:]] if was.pop(id(pod), None) is None]
        if was:
            self._apply(info, entry, list(was.values()), -1)
        if came:
            self._apply(info, entry, came, 1)

    def _remove_entry(self, info: NodeInfo, entry: _NodeEntry) -> None:
        self._apply(info, entry, entry.pods, -1)

    def _apply(self, info: NodeInfo, entry: _NodeEntry, pods: Iterable[PodInfo], sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) ``pods`` of node ``info`` (at ``entry.labels``)."""
        labels = entry.labels
        groups = self._groups
        for pod in pods:
            key = group_key(pod)
            group = groups.get(key)
            if group is None:
                self._created += 1
                group = groups[key] = _Group(pod, self._created)
                for label in key[1]:
                    self._groups_by_label.setdefault(label, {})[key] = group
            # The group's counts per topology value follow the node's change in place: one
            # binding changes one node, and rebuilding them over every node of the group,
            # for every pod, was most of SchedulingPreferredPodAntiAffinity's cycle.
            for topology_key, values in group.by_value.items():
                value = labels.get(topology_key)
                if value is not None:
                    _bump(values, value, sign)
                    _bump(group.by_pair[topology_key], (topology_key, value), sign)
            total = group.by_node.get(info, 0) + sign
            if total:
                group.by_node[info] = total
            else:
                group.by_node.pop(info, None)
                if not group.by_node:
                    del groups[key]
                    for label in key[1]:
                        with_label = self._groups_by_label[label]
                        del with_label[key]
                        if not with_label:
                            del self._groups_by_label[label]
            if not pod.affinity or not labels or not pod.has_affinity:
                continue
            parsed = pod_terms(pod)
            for term in parsed.required_anti_affinity:
                value = labels.get(term.topology_key)
                if value is not None:
                    _bump_nested(self._anti, term, (term.topology_key, value), sign)
            for term in parsed.required_affinity:
                value = labels.get(term.topology_key)
                if value is not None:
                    _bump_nested(self._hard, term, value, sign)
            for weighted in parsed.preferred_affinity:
                value = labels.get(weighted.term.topology_key)
                if value is not None:
                    _bump_nested(self._soft, (weighted.term, weighted.weight), value, sign)
            for weighted in parsed.preferred_anti_affinity:
                value = labels.get(weighted.term.topology_key)
                if value is not None:
                    _bump_nested(self._soft, (weighted.term, -weighted.weight), value, sign)

    def _group_pairs(self, group: _Group, key: str) -> Counts:
        """:meth:`_group_values` keyed by topology pair, kept with it."""
        self._group_values(group, key)
        return group.by_pair[key]

    def _group_values(self, group: _Group, key: str) -> dict[str, int]:
        """The group's pods per value of topology ``key``: built on first use, then kept up to
        date by :meth:`_apply` (with the same counts keyed by pair)."""
        values = group.by_value.get(key)
        if values is None:
            values = {}
            for info, count in group.by_node.items():
                value = self._entries[info].labels.get(key)
                if value is not None:
                    values[value] = values.get(value, 0) + count
            group.by_value[key] = values
            group.by_pair[key] = {(key, value): count for value, count in values.items()}
        return values

    # -- PreFilter -----------------------------------------------------------------------

    def existing_anti_affinity_counts(self, pod: PodInfo, ns_labels: Mapping[str, str]) -> Counts:
        """Pairs where existing pods' required anti-affinity terms select ``pod``."""
        counts: Counts = {}
        for term, pairs in self._anti.items():
            if term.matches(pod, ns_labels):
                _merge(counts, pairs)
        return counts

    def incoming_affinity_counts(
        self, affinity_terms: Sequence[AffinityTerm], anti_affinity_terms: Sequence[AffinityTerm]
    ) -> tuple[Counts, Counts]:
        """Pairs of existing pods matching all ``affinity_terms`` (per term) and each of the
        ``anti_affinity_terms``."""
        affinity: Counts = {}
        anti: Counts = {}
        if not affinity_terms and not anti_affinity_terms:
            return affinity, anti
        for group in self._groups_selectable(affinity_terms, anti_affinity_terms):
            rep = group.rep
            if affinity_terms and matches_all(affinity_terms, rep):
                for term in affinity_terms:
                    _merge(affinity, self._group_pairs(group, term.topology_key))
            for term in anti_affinity_terms:
                if term.matches(rep, None):
                    _merge(anti, self._group_pairs(group, term.topology_key))
        return affinity, anti

    def _groups_selectable(
        self, affinity_terms: Sequence[AffinityTerm], anti_affinity_terms: Sequence[AffinityTerm]
    ) -> Iterable[_Group]:
        """The groups, in their order, that all ``affinity_terms`` or one of the
        ``anti_affinity_terms`` may select: per term (the affinity terms count as one, all
        required), those with a label value its selector requires, or every group when the
        selector requires none."""
        found: dict[GroupKey, _Group] = {}
        for terms in ([affinity_terms] if affinity_terms else []) + [[term] for term in anti_affinity_terms]:
            labels = _required_labels(terms)
            if labels is None:
                return self._groups.values()
            for label in labels:
                with_label = self._groups_by_label.get(label)
                if with_label:
                    found.update(with_label)
        return sorted(found.values(), key=_SEQUENCE)

    # -- PreScore ------------------------------------------------------------------------

    def existing_terms_scores(
        self, incoming: PodInfo, ns_labels: Mapping[str, str], hard_pod_affinity_weight: int, out: ScoreSink
    ) -> None:
        """The existing pods' required affinity (at the hard weight) and preferred terms that
        select ``incoming``."""
        if hard_pod_affinity_weight > 0:
            for term, values in self._hard.items():
                if term.matches(incoming, ns_labels):
                    out.add_values(term.topology_key, values, hard_pod_affinity_weight)
        for (term, weight), values in self._soft.items():
            if term.matches(incoming, ns_labels):
                out.add_values(term.topology_key, values, weight)

    def incoming_terms_scores(
        self,
        preferred: Iterable[WeightedAffinityTerm],
        preferred_anti: Iterable[WeightedAffinityTerm],
        out: ScoreSink,
    ) -> None:
        """The incoming pod's preferred terms (namespace selectors merged) over existing pods."""
        signed = [(w.term, w.weight) for w in preferred] + [(w.term, -w.weight) for w in preferred_anti]
        if not signed:
            return
        for group in self._groups.values():
            rep = group.rep
            for term, weight in signed:
                if term.matches(rep, None):
                    out.add_values(term.topology_key, self._group_values(group, term.topology_key), weight)


def _required_labels(terms: Sequence[AffinityTerm]) -> list[tuple[str, str]] | None:
    """Labels one of which a pod must have to be selected by all ``terms``: the values of the
    first requirement (``=`` or ``In``) of a term's selector that has one; ``[]`` when a
    selector selects nothing; None when no term requires a value."""
    for term in terms:
        if term.selector.nothing:
            return []
        for requirement in term.selector.requirements:
            if requirement.operator in (EQUALS, IN):
                return [(requirement.key, value) for value in requirement.values]
    return None


def _merge(counts: Counts, pairs: Mapping[TopologyPair, int]) -> None:
    """``counts += pairs``. Pairs are one per topology domain (thousands with a hostname key)
    and those of different terms or groups seldom overlap: disjoint ones are merged without a
    loop in Python, in the same order a loop would insert them."""
    if counts.keys().isdisjoint(pairs):
        counts.update(pairs)
        return
    for pair, count in pairs.items():
        counts[pair] = counts.get(pair, 0) + count
