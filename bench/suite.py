"""Upstream's scheduler_perf workloads, in three modes, from the pinned v1.36.3 files (issue 25).

    python -m bench.suite --mode inprocess                  # every case, its smallest variant
    python -m bench.suite --mode inprocess --variant default --case SchedulingBasic
    python -m bench.suite --mode upstream --case SchedulingBasic --variant 500Nodes
    python -m bench.suite --mode cluster --case SchedulingBasic           # default variant
    python -m bench.suite --readme                          # rewrite bench/README.md's table

``--variant`` picks per case: ``smallest`` (sum of its params; the correctness sweep),
``default`` (the smallest with 500 nodes or more: the cluster mode's default), or a variant name.
``--labels performance,short`` keeps only variants upstream's label filter would run
(``-perf-scheduling-label-filter``). Each mode writes one JSON line per variant to stdout
and the whole run to ``bench/results/scheduler_perf/<mode>.json`` (kept in git; a run of some
cases replaces only theirs, each result stamped with its date, commit and load); ``--readme``
renders those results into the table between the markers of bench/README.md, keeping the cells
of earlier passes that no saved result replaces. Any case that cannot run says why (the op it
lacks, or what failed); none is skipped silently.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.scheduler_perf import config, inprocess

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "scheduler_perf"
README = ROOT / "bench" / "README.md"
BEGIN, END = "<!-- scheduler_perf table: begin -->", "<!-- scheduler_perf table: end -->"


# --cluster-order: which scheduler each cluster run starts with
ORDERS = ("alternate", "ours-first", "theirs-first")
SIDES = ("crd_scheduler", "kube_scheduler")  # as bench.scheduler_perf.cluster's, without its imports


def first_side(order: str, repeat: int) -> str:
    """The side (``bench.scheduler_perf.cluster.SIDES``) that run ``repeat`` (from 0) starts with."""
    ours_first = order == "ours-first" or (order == "alternate" and repeat % 2 == 0)
    return "crd_scheduler" if ours_first else "kube_scheduler"


def pick(case: config.TestCase, how: str) -> config.Variant | None:
    if how == "smallest":
        return config.smallest(case)
    if how == "default":
        return config.default_variant(case)
    return next((v for v in case.variants if v.name == how), None)


_CLUSTER_SETTINGS = {
    "CRD_SCHEDULER_DEVCLUSTER_RUNTIME_CONFIG": "runtime config",
    "CRD_SCHEDULER_DEVCLUSTER_FEATURE_GATES": "feature gates",
    "CRD_SCHEDULER_DEVCLUSTER_AUDIT_LOG": "audit log",  # the API server writes a line per write
}


def environment() -> dict[str, Any]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    record: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        # A `git archive` snapshot has no .git: say which commit it is in BENCH_COMMIT.
        "commit": commit.stdout.strip() or os.environ.get("BENCH_COMMIT", "?"),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    # A dev cluster serving more than the defaults (the DRA cases' v1beta2 kinds) says so.
    settings = [f"{what} {os.environ[name]}" for name, what in _CLUSTER_SETTINGS.items() if os.environ.get(name)]
    if settings:
        record["note"] = "dev cluster " + ", ".join(settings)
    return record


def run_one(mode: str, variant: config.Variant, args: argparse.Namespace) -> dict[str, Any]:
    base = {"case": variant.case, "variant": variant.name, "folder": variant.folder, "labels": list(variant.labels)}
    try:
        if mode == "inprocess":
            runs = []
            for repeat in range(args.repeat):
                counters = inprocess.Counters()
                result = asyncio.run(inprocess.run_variant(variant, seed=args.seed + repeat, counters=counters))
                result["attempts"] = counters.attempts
                runs.append(result)
            return {**base, "status": "ran", **_median_run(runs)}
        if mode == "upstream":
            from bench.scheduler_perf import upstream

            runs = [upstream.run(variant) for _ in range(args.repeat)]
            values = sorted(r["pods_per_second"] for r in runs if r["pods_per_second"] is not None)
            return {**base, "status": "ran", "runs": runs,
                    "pods_per_second": values[len(values) // 2] if values else None}  # fmt: skip
        from bench.scheduler_perf import cluster

        modes = (
            {"stream": False, "backlog": True}
            if args.cluster_mode == "both"
            else {args.cluster_mode: args.cluster_mode == "backlog"}
        )
        with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
            log_dir = Path(args.log_dir or tmp)
            log_dir.mkdir(parents=True, exist_ok=True)
            for _ in range(args.warmup):  # not measured: what a first run pays the cluster, both sides
                cluster.run(variant, modes=modes, log_dir=log_dir)
            runs = [
                cluster.run(variant, modes=modes, log_dir=log_dir, first=first_side(args.cluster_order, repeat))
                for repeat in range(args.repeat)
            ]
            return {**base, "status": "ran", **_median_cluster_run(runs), "warmup_runs": args.warmup}
    except inprocess.Unsupported as exc:
        return {**base, "status": "unsupported", "op": exc.op, "reason": exc.reason}
    except (Exception, SystemExit) as exc:  # the sweep goes on; the reason is reported (bench.cluster exits)
        if args.traceback:
            traceback.print_exc()
        return {**base, "status": "failed", "reason": f"{type(exc).__name__}: {exc}"[:600]}


def _number(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median pods/s of its first collection, and every run's pods/s."""

    def rate(run: dict[str, Any]) -> float:
        collections = run.get("collections") or []
        return float(collections[0]["pods_per_second"]) if collections else 0.0

    ordered = sorted(runs, key=rate)
    median = dict(ordered[len(ordered) // 2])
    median["pods_per_second_runs"] = [rate(r) for r in runs]
    return median


def _median_cluster_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median ratio (stream's where there is one, else backlog's), and every
    run's ratio and CPU per bound pod (ours, theirs) per mode."""
    modes = [mode for mode in ("stream", "backlog") if any(mode in run for run in runs)]

    def ratio(run: dict[str, Any], mode: str) -> float:
        return float((run.get(mode) or {}).get("ratio") or 0.0)

    def cpu(run: dict[str, Any], mode: str) -> list[float | None]:
        figures = run.get(mode) or {}
        sides = ("crd_scheduler", "kube_scheduler")
        return [(figures.get(side) or {}).get("cpu_seconds_per_bound_pod") for side in sides]

    ordered = sorted(runs, key=lambda run: ratio(run, modes[0]) if modes else 0.0)
    median = dict(ordered[len(ordered) // 2])
    median["ratio_runs"] = {mode: [ratio(run, mode) for run in runs] for mode in modes}
    median["cpu_per_bound_pod_runs"] = {mode: [cpu(run, mode) for run in runs] for mode in modes}
    if all(run.get("order") for run in runs):  # results from before --cluster-order have none
        median["first_side_runs"] = firsts = [run["order"][0] for run in runs]
        _balance(median, runs, firsts, modes, ratio)
    return median


def _balance(
    median: dict[str, Any],
    runs: list[dict[str, Any]],
    firsts: list[str],
    modes: list[str],
    ratio: Callable[[dict[str, Any], str], float],
) -> None:
    """Per mode, the geometric mean of the ratios of the runs each side went first in (the table
    shows the two's geometric mean: the order-balanced ratio). Going first is worth about 10 %
    (bench/README.md, nineteenth pass), and three runs alternated put ours first twice."""
    by_side: dict[str, dict[str, float]] = {}
    for mode in modes:
        means = {}
        for side in SIDES:
            figures = [ratio(run, mode) for run, first in zip(runs, firsts, strict=True) if first == side]
            if figures and all(f > 0 for f in figures):
                means[side] = round(statistics.geometric_mean(figures), 3)
        if len(means) == len(SIDES):
            by_side[mode] = means
    if by_side:
        median["ratio_by_first_side"] = by_side


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("inprocess", "cluster", "upstream"), default="inprocess")
    parser.add_argument("--case", action="append", default=[], help="test case name (repeatable); default: all")
    parser.add_argument("--folder", action="append", default=[], help="scheduler_perf folder, e.g. misc (repeatable)")
    parser.add_argument(
        "--variant", default=None, help="smallest | default | NAME (default: smallest in-process, default otherwise)"
    )
    parser.add_argument(
        "--labels", default="", help="upstream label filter, e.g. performance,short or integration-test,-performance"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per variant; the median is reported (3 for figures)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--set", action="append", default=[], metavar="PARAM=N", help="override a param of the chosen variant"
    )
    parser.add_argument("--cluster-mode", choices=("stream", "backlog", "both"), default="both")
    parser.add_argument(
        "--cluster-order", choices=ORDERS, default="alternate",
        help="cluster mode: which scheduler runs first in each run (alternate: ours in the 1st, 3rd, ...)",
    )  # fmt: skip
    parser.add_argument(
        "--warmup", type=int, default=0,
        help="cluster mode: unmeasured runs of both schedulers first (1 for the one-to-ten-pod cases)",
    )  # fmt: skip
    parser.add_argument("--log-dir", default=None, help="cluster mode: keep the schedulers' logs there")
    parser.add_argument(
        "--scheduler-perf", default=None, help="the scheduler_perf folder (default: the Go module cache's)"
    )
    parser.add_argument("--list", action="store_true", help="list the cases and variants, run nothing")
    parser.add_argument("--readme", action="store_true", help="rewrite bench/README.md's table from the saved results")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/scheduler_perf/<mode>.json")
    parser.add_argument("--traceback", action="store_true")
    args = parser.parse_args(argv)

    if args.readme and not (args.case or args.folder or args.list or args.variant):
        from bench.scheduler_perf import table

        table.write_readme(README, RESULTS, BEGIN, END)
        return 0
    root = config.scheduler_perf_root(args.scheduler_perf)
    cases = [
        c
        for c in config.load(root)
        if (not args.case or c.name in args.case) and (not args.folder or c.folder in args.folder)
    ]
    if args.case and not cases:
        parser.error(f"no test case named {args.case} in {root}")
    how = args.variant or ("smallest" if args.mode == "inprocess" else "default")
    if args.list:
        for case in cases:
            for v in case.variants:
                mark = "*" if v is pick(case, how) else " "
                gates = dict(v.feature_gates)
                print(f"{mark} {case.folder:28} {v.full_name:70} labels={','.join(v.labels)} gates={gates}")
        return 0
    selectors = [s for s in args.labels.split(",") if s]
    out: list[dict[str, Any]] = []
    for case in cases:
        variant = pick(case, how)
        if variant is not None and args.set:
            variant = config.with_params(variant, {k: _number(v) for k, v in (s.split("=", 1) for s in args.set)})
        if variant is None:
            out.append(
                {
                    "case": case.name,
                    "variant": how,
                    "folder": case.folder,
                    "status": "failed",
                    "reason": f"no variant {how}",
                }
            )
        elif selectors and not config.enabled(selectors, variant.labels):
            reason = f"labels {list(variant.labels)} do not pass {args.labels}"
            base = {"case": case.name, "variant": variant.name, "folder": case.folder, "labels": list(variant.labels)}
            out.append({**base, "status": "filtered", "reason": reason})
        else:
            # Each result says when and where it ran: the table keeps results of many runs.
            out.append({**run_one(args.mode, variant, args), "environment": environment()})
        print(json.dumps(out[-1]), flush=True)
    summary = {
        status: sum(1 for r in out if r["status"] == status) for status in ("ran", "unsupported", "failed", "filtered")
    }
    print(json.dumps({"mode": args.mode, "variants": how, "labels": args.labels, **summary}), flush=True)
    if not args.no_save:
        RESULTS.mkdir(parents=True, exist_ok=True)
        record = {"mode": args.mode, "variants": how, "labels": args.labels, "environment": environment(),
                  "summary": summary, "results": out}  # fmt: skip
        path = RESULTS / f"{args.mode}.json"
        if path.exists() and (args.case or args.folder):
            # A partial run updates the saved one case by case.
            previous = json.loads(path.read_text())
            names = {x["case"] for x in out}
            kept = [r for r in previous.get("results", []) if r["case"] not in names]
            record["results"] = kept + out
            if kept and previous.get("variants") != how:
                record["variants"] = f"{previous.get('variants')}; {how} for {', '.join(sorted(names))}"
            record["summary"] = {s: sum(1 for r in record["results"] if r["status"] == s) for s in summary}
        path.write_text(json.dumps(record, indent=1))
    if args.readme:
        from bench.scheduler_perf import table

        table.write_readme(README, RESULTS, BEGIN, END)
    return 0 if summary["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
