"""The compact explanation a profile with ``explain: Annotate`` records on each pod it binds.

Computed in the scheduling cycle from what the cycle already has (the weighted scores of the
scored nodes and, since such a profile asks for it, the filter diagnosis), and handed to the
backend before the binding cycle: the operator puts it in the Binding's annotations, which the
API server copies onto the pod in the same write (``pkg/registry/core/pod/storage/storage.go``,
``BindingREST.setPodNodeAndMetadata``), so it costs no extra round-trip and is written exactly
once per pod, as the binding is. Shape (JSON, no spaces)::

    {"node": "n1", "total": 463, "scores": {"NodeResourcesFit": 90, ...},
     "runnerUp": {"node": "n2", "total": 458}, "feasible": 3, "evaluated": 4,
     "filtered": {"Insufficient cpu": 1}}

``scores``/``runnerUp`` are absent when scoring was skipped (one feasible node), ``filtered``
when no node was filtered. At most ``MAX_REASONS`` reasons are kept (the most frequent), so the
annotation stays small whatever the cluster.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scheduler_core.algorithm import ScheduleResult

ANNOTATION = "scheduling.crd-scheduler.io/explanation"
ANNOTATE = "Annotate"
MAX_REASONS = 10


def summarize(result: ScheduleResult) -> str:
    host = result.suggested_host
    data: dict[str, Any] = {"node": host}
    outcome = result.scores
    if outcome is not None and result.scored_nodes:
        names: list[str] = [info.name for info in result.scored_nodes]
        i = names.index(host)
        data["total"] = int(outcome.totals[i])
        data["scores"] = {
            name: int(weighted[i]) for name, weighted in zip(outcome.names, outcome.weighted, strict=True)
        }
        others = [j for j in range(len(names)) if j != i]
        if others:
            j = max(others, key=lambda k: int(outcome.totals[k]))
            data["runnerUp"] = {"node": names[j], "total": int(outcome.totals[j])}
    data["feasible"] = result.feasible_nodes
    data["evaluated"] = result.evaluated_nodes
    if result.diagnosis is not None:
        counts: Counter[str] = Counter()
        for status in result.diagnosis.node_to_status.values():
            counts.update(status.reasons)
        if counts:
            data["filtered"] = dict(counts.most_common(MAX_REASONS))
    return json.dumps(data, separators=(",", ":"))
