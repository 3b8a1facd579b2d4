"""Probe pods: how the harness gets filter reasons node by node out of kube-scheduler.

kube-scheduler reports filter reasons only as a histogram over all nodes (the FitError message).
A *node probe* is the pending pod plus a required node-affinity ``matchFields`` on
``metadata.name`` for one node N (added to every term, so NodeAffinity's PreFilter narrows the
cycle to N; the other nodes get the absent-nodes status "node(s) didn't satisfy plugin(s)
[NodeAffinity]"): its histogram holds N's reasons alone. The extender rejects whatever passes
the filters with :data:`~bench.parity_harness.extender.PASSED_MESSAGE`, so a probe never binds.

Narrowing the nodes changes nothing for per-node filters, nor for InterPodAffinity (it reads
the pod's pod affinity and the pods on nodes, not node affinity), but it does change
PodTopologySpread's ``DoNotSchedule`` constraints: with the default ``nodeAffinityPolicy:
Honor`` they count only nodes that pass the pod's node affinity. For a pod with such
constraints, a probe's verdict is kept only when it names a reason of a filter that runs before
PodTopologySpread (those see N alone whatever the other nodes hold); the other nodes' reasons
are taken together from a *pod probe* (the pending pod unchanged but for the annotation), as a
multiset.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from bench.parity_harness.extender import BUSY_MESSAGE, NEVER_MESSAGE, PASSED_MESSAGE, PROBE_ANNOTATION
from bench.parity_harness.fiterror import FitError
from bench.parity_harness.vocabulary import PREEMPTOR_CLASS, PROBE_PREEMPTOR_CLASS

Json = dict[str, Any]

# kubernetes v1.36.3 pkg/scheduler/framework/plugins: podtopologyspread/plugin.go and
# interpodaffinity/filtering.go; their verdicts depend on which other nodes are in the cycle.
CROSS_NODE_REASONS = frozenset(
    {
        "node(s) didn't match pod topology spread constraints",
        "node(s) didn't match pod topology spread constraints (missing required label)",
        "node(s) didn't match pod affinity rules",
        "node(s) didn't match pod anti-affinity rules",
        "node(s) didn't satisfy existing pods anti-affinity rules",
    }
)
# Filters that run after PodTopologySpread and InterPodAffinity in the default profile's order
# (v1.36.3 pkg/scheduler/apis/config/v1/default_plugins.go appends DynamicResources after
# InterPodAffinity), and the filter extenders, which see only the nodes every plugin passed
# (schedule_one.go findNodesThatPassExtenders): a node probe that fails one of these passed the
# spreading filters only because the probe narrowed the cycle to that node, so for a spreading pod
# its verdict says nothing of the full cycle (DynamicResources' Filter reasons, dynamicresources.go
# and, for DRA-backed extended resources, extendeddynamicresources.go filterExtendedResources).
AFTER_CROSS_NODE_REASONS = frozenset(
    {
        "cannot allocate all claims",
        "resourceclaim not available on the node",
        "cannot fit resource",
        BUSY_MESSAGE,
        NEVER_MESSAGE,
    }
)
ABSENT_FROM_CYCLE = "node(s) didn't satisfy plugin(s) [NodeAffinity]"  # schedule_one.go, PreFilterResult


def _probe(pending: Json, name: str) -> Json:
    probe = copy.deepcopy(pending)
    metadata = probe["metadata"]
    metadata["name"] = name
    metadata["annotations"] = {**(metadata.get("annotations") or {}), PROBE_ANNOTATION: "true"}
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        metadata.pop(key, None)
    probe.pop("status", None)
    if probe["spec"].get("priorityClassName") == PREEMPTOR_CLASS[0]:
        probe["spec"]["priorityClassName"] = PROBE_PREEMPTOR_CLASS[0]  # a probe must never preempt
    return probe


def pod_probe(pending: Json, name: str) -> Json:
    return _probe(pending, name)


def node_probe(pending: Json, name: str, node: str) -> Json:
    probe = _probe(pending, name)
    field = {"key": "metadata.name", "operator": "In", "values": [node]}
    affinity = probe["spec"].setdefault("affinity", {}).setdefault("nodeAffinity", {})
    required = affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    for term in terms:
        term["matchFields"] = [*term.get("matchFields", ()), field]
    required["nodeSelectorTerms"] = terms
    return probe


def spreads_when_filtering(pod: Json) -> bool:
    """True when the pod has a DoNotSchedule topology spread constraint."""
    constraints = (pod.get("spec") or {}).get("topologySpreadConstraints") or ()
    return any(c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule" for c in constraints)


def node_verdict(fit: FitError, node_count: int) -> list[str] | None:
    """The probed node's reasons from its probe's FitError; None when it passed every filter."""
    if fit.pre_filter is not None:
        return [fit.pre_filter]
    reasons = Counter(fit.reasons)
    absent = node_count - 1
    if absent:
        if reasons[ABSENT_FROM_CYCLE] != absent:
            raise ValueError(f"node probe: expected {absent} nodes outside the cycle, got {dict(fit.reasons)}")
        del reasons[ABSENT_FROM_CYCLE]
    if PASSED_MESSAGE in reasons:
        return None
    if any(count != 1 for count in reasons.values()):
        raise ValueError(f"node probe: one node cannot count a reason twice: {dict(fit.reasons)}")
    return sorted(reasons)


def isolation_safe(verdict: list[str] | None) -> bool:
    """Whether a node probe's verdict holds for the unnarrowed pod when it spreads (see module doc)."""
    return verdict is not None and not (set(verdict) & (CROSS_NODE_REASONS | AFTER_CROSS_NODE_REASONS))


def ungated(pending: Json) -> Json:
    """The pending pod without its scheduling gates (probes must be attempted)."""
    if not (pending.get("spec") or {}).get("schedulingGates"):
        return pending
    pod = copy.deepcopy(pending)
    del pod["spec"]["schedulingGates"]
    return pod
