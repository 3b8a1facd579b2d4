"""Ginkgo's JSON report of e2e.test, read spec by spec, and the side-by-side table.

A report lists every spec of the suite; those the focus filtered out are ``skipped`` with no
message, those a spec skipped itself at run time (``e2eskipper``: too few nodes, ...) carry
one. Only specs that ran, or skipped themselves, make rows. The claim checked per row: where
kube-scheduler passes, crd-scheduler passes too and takes at most 1.5x its time plus 10 s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SLOWER_FACTOR = 1.5
SLOWER_GRACE_SECONDS = 10.0
REFERENCE = "kube-scheduler"
CANDIDATE = "crd-scheduler"


@dataclass(frozen=True)
class Outcome:
    state: str  # passed, failed, skipped, ... (ginkgo's names; "interrupted", "timedout", "panicked")
    seconds: float
    message: str = ""


def spec_name(spec: dict[str, Any]) -> str:
    texts = [*(spec.get("ContainerHierarchyTexts") or []), spec.get("LeafNodeText") or ""]
    return " ".join(text for text in texts if text)


def outcomes(report_path: Path) -> dict[str, Outcome]:
    """Spec name -> outcome, for the specs of ``report_path`` that ran or skipped themselves."""
    found: dict[str, Outcome] = {}
    for suite in json.loads(report_path.read_text()):
        for spec in suite.get("SpecReports") or []:
            state = str(spec.get("State", "")).lower()
            message = str((spec.get("Failure") or {}).get("Message", "")).strip()
            if state == "skipped" and not message:
                continue  # filtered out by the focus/skip
            if spec.get("LeafNodeType") not in ("It", None) and state == "passed":
                continue  # suite setup and reporting nodes that passed
            name = spec_name(spec) or str(spec.get("LeafNodeType"))
            found[name] = Outcome(
                state, float(spec.get("RunTime", 0)) / 1e9, message.splitlines()[0] if message else ""
            )
    return found


def violations(reference: Outcome | None, candidate: Outcome | None) -> list[str]:
    """Why this row breaks the claim (empty: it holds)."""
    if reference is None or reference.state != "passed":
        return []
    if candidate is None or candidate.state != "passed":
        return [f"{CANDIDATE} {candidate.state if candidate else 'missing'} where {REFERENCE} passed"]
    limit = SLOWER_FACTOR * reference.seconds + SLOWER_GRACE_SECONDS
    if candidate.seconds > limit:
        return [f"{CANDIDATE} took {candidate.seconds:.0f} s > {limit:.0f} s"]
    return []


def _cell(outcome: Outcome | None) -> str:
    return f"{outcome.state} {outcome.seconds:.0f} s" if outcome else "-"


def table(results: dict[str, dict[str, Outcome]]) -> tuple[str, list[str]]:
    """Markdown, spec by spec, one column per scheduler; and the rows that break the claim."""
    schedulers = list(results)
    names = sorted({name for per in results.values() for name in per})
    lines = [
        "| spec | " + " | ".join(schedulers) + " |",
        "|---|" + "---|" * len(schedulers),
    ]
    broken: list[str] = []
    for name in names:
        cells = [_cell(results[s].get(name)) for s in schedulers]
        why = violations(results.get(REFERENCE, {}).get(name), results.get(CANDIDATE, {}).get(name))
        if REFERENCE in results and CANDIDATE in results and why:
            broken.append(f"{name}: {'; '.join(why)}")
        lines.append(f"| {name.replace('|', '/')}{' **(!)**' if why else ''} | " + " | ".join(cells) + " |")
    lines.append("")
    for scheduler in schedulers:
        counts: dict[str, int] = {}
        for outcome in results[scheduler].values():
            counts[outcome.state] = counts.get(outcome.state, 0) + 1
        total = sum(o.seconds for o in results[scheduler].values())
        summary = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        lines.append(f"- {scheduler}: {summary}; {total / 60:.1f} min in specs")
    return "\n".join(lines) + "\n", broken
