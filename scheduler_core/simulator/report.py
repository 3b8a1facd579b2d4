"""What ``simulate`` reports: the last scheduling attempt of each pod, as JSON or a table.

:class:`Recorder` is the scheduler's :class:`~scheduler_core.scheduler.Observer`: it keeps,
per pod, the outcome of its last attempt with the explanation the scheduler computed for it
(weighted scores per plugin and totals over the scored nodes; the reasons of every processed
node that a filter rejected). JSON shape, one entry per pod::

    {"namespace", "name", "schedulerName", "profile", "status", "node", "message",
     "scores": {node: {plugin: weighted score, ..., "total": int}},
     "filtered": {node: [reason, ...]},
     "gang": "..."}  # members of a PodGroup only: the gang's outcome (simulator.gangs)

``scores`` is empty when scoring was skipped (one feasible node, as upstream). The table is for
people: pod, status, node, the top three totals, and the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler_core.algorithm import ScheduleResult
from scheduler_core.framework import PodInfo
from scheduler_core.framework.diagnosis import Diagnosis
from scheduler_core.runtime.framework import Framework

SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
ERROR = "Error"
TOTAL = "total"
TOP_SCORES = 3


@dataclass(slots=True)
class PodReport:
    namespace: str
    name: str
    scheduler_name: str
    profile: str
    status: str
    node: str | None
    message: str
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    filtered: dict[str, list[str]] = field(default_factory=dict)
    attempts: int = 0
    gang: str = ""
    devices: dict[str, list[str]] = field(default_factory=dict)  # claim -> "driver/pool/device"

    def to_json(self) -> dict[str, Any]:
        gang: dict[str, Any] = {"gang": self.gang} if self.gang else {}
        if self.devices:
            gang["devices"] = self.devices
        return {
            "namespace": self.namespace,
            "name": self.name,
            "schedulerName": self.scheduler_name,
            "profile": self.profile,
            "status": self.status,
            "node": self.node,
            "message": self.message,
            "scores": self.scores,
            "filtered": self.filtered,
            **gang,
        }


class Recorder:
    """Keeps the last attempt per pod (by uid); nodes are listed in ``node_order``."""

    def __init__(self, node_order: Sequence[str] = ()) -> None:
        self._rank = {name: i for i, name in enumerate(node_order)}
        self.last: dict[str, PodReport] = {}
        self.first: dict[str, PodReport] = {}  # ``explain`` shows the first attempt (before preemption)

    def attempt(
        self,
        pod: PodInfo,
        fwk: Framework,
        *,
        status: str,
        node: str | None,
        message: str,
        result: ScheduleResult | None,
        diagnosis: Diagnosis | None,
    ) -> None:
        previous = self.last.get(pod.uid)
        report = self.last[pod.uid] = PodReport(
            namespace=pod.namespace,
            name=pod.name,
            scheduler_name=pod.scheduler_name,
            profile=fwk.profile_name,
            status=status,
            node=node,
            message=message,
            scores=self._scores(result),
            filtered=self._filtered(diagnosis),
            attempts=(previous.attempts if previous else 0) + 1,
        )
        self.first.setdefault(pod.uid, report)

    def _order(self, names: Sequence[str]) -> list[str]:
        return sorted(names, key=lambda n: (self._rank.get(n, len(self._rank)), n))

    def _scores(self, result: ScheduleResult | None) -> dict[str, dict[str, int]]:
        if result is None or result.scores is None:
            return {}
        outcome = result.scores
        per_node: dict[str, dict[str, int]] = {}
        for i, info in enumerate(result.scored_nodes):
            row = {name: int(weighted[i]) for name, weighted in zip(outcome.names, outcome.weighted, strict=True)}
            row[TOTAL] = int(outcome.totals[i])
            per_node[info.name] = row
        return {name: per_node[name] for name in self._order(list(per_node))}

    def _filtered(self, diagnosis: Diagnosis | None) -> dict[str, list[str]]:
        if diagnosis is None:
            return {}
        statuses = diagnosis.node_to_status
        return {name: list(statuses[name].reasons) for name in self._order(list(statuses))}


def render_json(reports: Sequence[PodReport]) -> str:
    return json.dumps({"pods": [r.to_json() for r in reports]}, indent=2)


def top_scores(scores: Mapping[str, Mapping[str, int]], limit: int = TOP_SCORES) -> list[tuple[str, int]]:
    """The highest totals, best first; equal totals keep the report's node order."""
    ranked = sorted(scores.items(), key=lambda item: -item[1][TOTAL])
    return [(name, row[TOTAL]) for name, row in ranked[:limit]]


def _reason(report: PodReport) -> str:
    if report.status != SCHEDULED:
        return report.gang or report.message
    if not report.scores:
        return "only feasible node"
    best = max(row[TOTAL] for row in report.scores.values())
    ties = sum(1 for row in report.scores.values() if row[TOTAL] == best)
    return f"highest score (tie among {ties} nodes, chosen at random)" if ties > 1 else "highest score"


def render_table(reports: Sequence[PodReport]) -> str:
    header = ("POD", "STATUS", "NODE", "TOP SCORES", "REASON")
    rows = [
        (
            f"{r.namespace}/{r.name}",
            r.status,
            r.node or "-",
            " ".join(f"{name}={total}" for name, total in top_scores(r.scores)) or "-",
            _reason(r),
        )
        for r in reports
    ]
    return "\n".join(columns([header, *rows]))


def columns(rows: Sequence[Sequence[str]], sep: str = "   ") -> list[str]:
    """The rows as lines of aligned columns (the text reports of simulate, what-if, explain)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [sep.join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
