"""bench/README.md's scheduler_perf table, rendered from the saved results of each mode.

One row per upstream test case: the in-process run (its variant, whether it ran or why not,
pods/s, p99 of the SLI latency, attempts, peak RSS), upstream's own benchmark on this machine
(pods/s of its SchedulingThroughput, and our in-process pods/s over it when both ran the same
variant), and the dev-cluster run (ratio per mode, CPU per bound pod and peak RSS of each
side). Each mode's line above the table says when, at which commit and under what load it ran.

The saved results (``bench/results/scheduler_perf/<mode>.json``, kept in git) replace the cells
of their cases and modes; every other cell, and the lines above the table that say when those
were measured, are kept from the table as it stands: figures of passes before the results were
kept exist only there. Rendering twice gives the same table.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

TIMING_NOTE = (
    "**Timing columns (pods/s, p99, ratios, CPU) are only valid from an idle machine**: a run whose "
    "load average (below) is above about 1 measured other people's work as much as ours. "
    "The status, attempts and bound-pod counts do not depend on load."
)

# A side whose last binding came within this share of its run's time after its last pod was
# created scheduled as fast as the pods came (``_creation_bound``).
CREATION_BOUND = 0.05


def _load(results: Path, mode: str) -> dict[str, Any] | None:
    path = results / f"{mode}.json"
    return json.loads(path.read_text()) if path.exists() else None


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _inprocess_cells(row: dict[str, Any] | None) -> list[str]:
    if row is None:
        return ["-", "not run", "-", "-", "-", "-"]
    status = row["status"]
    if status != "ran":
        why = row.get("op", "") + ": " if row.get("op") else ""
        return [
            row.get("variant", "-"),
            f"{status}: {why}{row.get('reason', '')}".replace("|", "/"),
            "-",
            "-",
            "-",
            "-",
        ]
    collection = (row.get("collections") or [{}])[0]
    bound = sum(c.get("bound", 0) for c in row.get("collections") or [])
    runs = row.get("pods_per_second_runs") or []
    spread = f" (runs {', '.join(_fmt(r) for r in runs)})" if len(runs) > 1 else ""
    return [
        row["variant"],
        f"ran ({bound} measured pods bound)",
        _fmt(collection.get("pods_per_second")) + spread,
        _fmt(collection.get("sli_p99_ms"), 2),
        _fmt(row.get("attempts")),
        _fmt(row.get("peak_rss_mb"), 0),
    ]


def _upstream_cells(row: dict[str, Any] | None, ours: dict[str, Any] | None) -> list[str]:
    if row is None:
        return ["-"]
    if row["status"] != "ran":
        return [f"{row['variant']}: {row['status']}".replace("|", "/")]
    theirs = row.get("pods_per_second")
    same = bool(ours and ours.get("status") == "ran" and ours.get("variant") == row["variant"])
    collection = ((ours or {}).get("collections") or [{}])[0] if same else {}
    mine = collection.get("pods_per_second")
    if theirs is None:
        return [_by_duration(row, collection)]
    cell = f"{row['variant']}: {_fmt(theirs)}"
    if mine:
        cell += f" (ours x{mine / theirs:.2f})"
    return [cell]


def _by_duration(row: dict[str, Any], ours: dict[str, Any]) -> str:
    """Upstream wrote no SchedulingThroughput: its collector samples once a second and a
    measured phase shorter than that has no sample (util.go throughputCollector.collect). Its
    SchedulingDuration (the phase, pod creation included) still gives the measured pods' mean
    rate, beside ours over the same pods (the same variant bound them all in-process)."""
    runs = row.get("runs") or []
    durations = sorted(d["Duration"] for run in runs for d in run.get("scheduling_duration") or [] if d.get("Duration"))
    text = f"{row['variant']}: no SchedulingThroughput"
    pods, mine = ours.get("bound"), ours.get("pods_per_second")
    if not durations or not pods:
        return text
    duration = durations[len(durations) // 2]
    theirs = pods / duration
    text += f" (a {duration:.2f} s phase); {pods} pods ÷ SchedulingDuration: {_fmt(theirs)}"
    return text + (f" (ours x{mine / theirs:.2f})" if mine else "")


def _upstream_ratio(cell: str) -> str:
    """A kept upstream cell (``variant: pods/s (ours xR)``) beside a new in-process run: R
    compared upstream with an earlier run of ours, perhaps on another machine, so it goes;
    the standard is a ratio of runs on the same machine (run ``--mode upstream`` again)."""
    match = re.match(r"(\S+): ([0-9.]+) \(ours x[0-9.]+\)(.*)$", cell)
    if match is None:
        return cell
    return f"{match.group(1)}: {match.group(2)} (an earlier pass's; not compared with this run){match.group(3)}"


def _creation_bound(ours: dict[str, Any], theirs: dict[str, Any]) -> str:
    """Why a stream ratio under 1.0 says little, when it does: in stream mode the bench creates
    the pods while the scheduler runs, and a scheduler that binds each pod as it comes finishes
    just after the last one is created. Then both sides measured the creation rate, not their
    own (``bench/cluster.py``, ``creation_seconds``)."""
    lags = []
    for side in (ours, theirs):
        seconds, creating = side.get("seconds"), side.get("creation_seconds")
        if seconds is None or creating is None:
            return "under 1.0: the median run has no creation time"
        lags.append((seconds - creating, seconds))
    text = f"last binding {lags[0][0]:.2f} / {lags[1][0]:.2f} s after the last pod created"
    if all(lag <= CREATION_BOUND * seconds for lag, seconds in lags):
        return f"under 1.0, creation-bound: {text}"
    return f"under 1.0: {text}"


def _cluster_cells(row: dict[str, Any] | None) -> list[str]:
    if row is None:
        return ["-", "-", "-"]
    if row["status"] != "ran":
        return [f"{row['variant']}: {row['status']}: {row.get('reason', '')}".replace("|", "/")[:120], "-", "-"]
    ratios, cpu, rss = [], [], []
    for mode in ("stream", "backlog"):
        figures = row.get(mode)
        if not figures:
            continue
        runs = (row.get("ratio_runs") or {}).get(mode) or []
        spread = f" (runs {', '.join(_fmt(r, 2) for r in runs)})" if len(runs) > 1 else ""
        ours, theirs = figures.get("crd_scheduler") or {}, figures.get("kube_scheduler") or {}
        ratio = figures.get("ratio")
        why = f"; {_creation_bound(ours, theirs)}" if mode == "stream" and ratio is not None and ratio < 1.0 else ""
        ratios.append(f"{mode} {_fmt(ratio, 2)}{spread}{why}")
        ours_cpu, theirs_cpu = ours.get("cpu_seconds_per_bound_pod"), theirs.get("cpu_seconds_per_bound_pod")
        cpu.append(f"{_fmt(ours_cpu and ours_cpu * 1000, 2)} / {_fmt(theirs_cpu and theirs_cpu * 1000, 2)}")
        pairs = [p for p in (row.get("cpu_per_bound_pod_runs") or {}).get(mode) or [] if None not in p]
        if len(pairs) > 1:
            each = ", ".join(f"{a * 1000:.2f} / {b * 1000:.2f}" for a, b in pairs)
            cpu[-1] += f" (runs {each}; ours lower in {sum(a < b for a, b in pairs)} of {len(pairs)})"
        rss.append(f"{_fmt(ours.get('peak_rss_mib'), 0)} / {_fmt(theirs.get('peak_rss_mib'), 0)}")
    env = row.get("environment") or {}
    when = f" ({env['date']}, at `{env['commit']}`)" if env.get("date") else ""
    return [f"{row['variant']}{when}: " + ", ".join(ratios) + _order(row), "; ".join(cpu), "; ".join(rss)]


def _order(row: dict[str, Any]) -> str:
    """Which scheduler went first in each run, and the unmeasured runs before them (the
    results of ``--cluster-order`` and ``--warmup``; older results have neither: ours went first)."""
    firsts = row.get("first_side_runs") or []
    if not firsts:
        return ""
    names = ", ".join("ours" if side == "crd_scheduler" else "theirs" for side in firsts)
    warmup = row.get("warmup_runs") or 0
    text = f"; first: {names}" + (f"; after {warmup} warm-up run{'s' if warmup > 1 else ''}" if warmup else "")
    by_side = row.get("ratio_by_first_side") or {}
    for mode in ("stream", "backlog"):  # the first mode there is, as the ratio shown first
        if mode in by_side:
            ours, theirs = by_side[mode]["crd_scheduler"], by_side[mode]["kube_scheduler"]
            balanced = statistics.geometric_mean((ours, theirs))
            label = "" if mode == "stream" else f" {mode}"
            text += f"; order-balanced{label} {balanced:.2f} (ours first {ours:.2f}, theirs first {theirs:.2f})"
            break
    return text


# Column groups of a row after its folder and case: the in-process run, upstream's, the cluster's.
GROUPS = (("inprocess", 6), ("upstream", 1), ("cluster", 3))
WIDTH = 2 + sum(n for _, n in GROUPS)  # cells of a row
UPSTREAM = 2 + GROUPS[0][1]  # the upstream cell's place in a row
HEADER = (
    "| folder | case | in-process variant | in-process | pods/s | SLI p99 ms | attempts | peak RSS MiB "
    "| upstream same machine: variant: pods/s | cluster: variant: ratio "
    "| cluster CPU ms per bound pod (ours / theirs) "
    "| cluster peak RSS MiB (ours / theirs) |"
)
SAVED = "saved results"


def _previous(table: str) -> tuple[dict[str, list[str]], list[str]]:
    """The rows (by case) and the mode lines of the table as it stands, to keep what no saved
    result replaces: earlier passes' figures are in the table, not in any file."""
    rows: dict[str, list[str]] = {}
    lines: list[str] = []
    for line in table.splitlines():
        if line.startswith("| ") and not line.startswith("| folder |"):
            cells = line.strip()[2:-2].split(" | ")
            if len(cells) == WIDTH:
                rows[cells[1]] = cells
        elif line.startswith("- ") and not line.startswith(tuple(f"- {mode}, {SAVED}" for mode, _ in GROUPS)):
            lines.append(line)
    return rows, lines


def _saved_line(mode: str, run: dict[str, Any]) -> list[str]:
    """One line per commit (and dev-cluster note) of a mode's saved results: when, under what
    load, and which cases."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    env = run.get("environment", {})  # the last save's: only for results without their own
    for row in run.get("results", []):
        own = {**(row.get("environment") or env), "case": row["case"]}
        groups.setdefault((str(own.get("commit")), str(own.get("cpus")), own.get("note") or ""), []).append(own)
    lines = []
    for (commit, cpus, note), rows in sorted(groups.items()):
        dates = sorted({str(r.get("date")) for r in rows})
        when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        loads = [r.get("load_average") for r in rows]
        ones = sorted(x[0] for x in loads if isinstance(x, list) and x)
        load = f"1-min {ones[0]}-{ones[-1]}" if len(ones) == len(loads) else "; ".join(sorted({str(x) for x in loads}))
        cases = ", ".join(sorted(r["case"] for r in rows))
        lines.append(
            f"- {mode}, {SAVED} (`bench/results/scheduler_perf/{mode}.json`): {when}, commit `{commit}`, "
            f"load average {load} on {cpus} CPUs{f' ({note})' if note else ''}: {cases}"
        )
    return lines


def render(results: Path, previous: str = "") -> str:
    """The table from each mode's saved results; a case's cells of a mode with no saved result
    for it are kept from ``previous`` (the table as it stands), with the lines saying when
    those were measured."""
    runs = {mode: _load(results, mode) for mode in ("inprocess", "upstream", "cluster")}
    by_mode = {mode: {r["case"]: r for r in (run or {}).get("results", [])} for mode, run in runs.items()}
    kept_rows, kept_lines = _previous(previous)
    cases: dict[str, str] = {case: cells[0] for case, cells in kept_rows.items()}
    for rows in by_mode.values():
        for case, row in rows.items():
            cases.setdefault(case, row.get("folder", ""))
    lines = [TIMING_NOTE, ""]
    lines += kept_lines
    for mode, run in runs.items():
        if run is not None:
            lines += _saved_line(mode, run)
        elif not any(line.startswith(f"- {mode}:") for line in kept_lines):
            lines.append(f"- {mode}: no saved run (`python -m bench.suite --mode {mode}`)")
    lines += ["", HEADER, "|---" * WIDTH + "|"]
    for case, folder in sorted(cases.items(), key=lambda item: (item[1], item[0])):
        ours = by_mode["inprocess"].get(case)
        fresh = {
            "inprocess": _inprocess_cells(ours),
            "upstream": _upstream_cells(by_mode["upstream"].get(case), ours),
            "cluster": _cluster_cells(by_mode["cluster"].get(case)),
        }
        old = kept_rows.get(case)
        cells = [folder, case]
        start = 2
        for mode, width in GROUPS:
            cells += old[start : start + width] if old is not None and case not in by_mode[mode] else fresh[mode]
            start += width
        if old is not None and ours is not None and case not in by_mode["upstream"]:
            cells[UPSTREAM] = _upstream_ratio(cells[UPSTREAM])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_readme(readme: Path, results: Path, begin: str, end: str) -> None:
    text = readme.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{readme}: the markers {begin!r} and {end!r} are missing")
    head, rest = text.split(begin, 1)
    table, tail = rest.split(end, 1)
    readme.write_text(f"{head}{begin}\n{render(results, table)}\n{end}{tail}")
