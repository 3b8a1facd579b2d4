"""``python bench/parity.py --scenarios N --seed S``: the agreement rate, on the last line.

Scenario i uses seed S+i, so ``--scenarios 1 --seed <seed>`` replays any one of them. Progress
goes to stderr; stdout carries the first disagreements (seed, node, plugin, ours vs theirs),
the harness errors, the timing, and last ``agreement: P% (agreed/total)``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench.parity_harness.features import BY_NAME, OPT_IN
from bench.parity_harness.harness import DEFAULT_WORKDIR, Harness, ScenarioResult, Summary
from bench.parity_harness.kube import DEFAULT_STATE, ClusterUnavailable

SHOWN_DISAGREEMENTS = 20


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="parity", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", type=int, default=100, help="how many scenarios (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the first scenario (default 1)")
    parser.add_argument(
        "--features",
        help=f"comma-separated subset of: {', '.join(BY_NAME)}; or 'all' for every one (default: all "
        f"available but the opt-in ones, {', '.join(sorted(OPT_IN))}, which change what a seed generates)",
    )
    parser.add_argument("--show", type=int, default=SHOWN_DISAGREEMENTS, help="disagreements to print (default 20)")
    parser.add_argument("--out", type=Path, default=DEFAULT_WORKDIR, help="where disagreeing scenarios are written")
    parser.add_argument("--cluster-dir", type=Path, default=DEFAULT_STATE, help="the harness's dev cluster state")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait on kube-scheduler per step")
    return parser


def _progress(result: ScenarioResult, index: int, total: int) -> None:
    if result.agrees:
        state = "ok"
    elif result.error:
        state = f"ERROR {result.error.splitlines()[0][:200]}"
    else:
        state = f"{len(result.disagreements)} disagreement(s)"
    print(
        f"[{index}/{total}] seed {result.seed}: {state} (kube-scheduler {result.upstream_seconds:.2f}s, "
        f"simulate {result.ours_seconds:.2f}s)",
        file=sys.stderr,
    )


def report(summary: Summary, *, show: int, seconds: float, out: Path | None) -> list[str]:
    lines: list[str] = []
    disagreements = summary.disagreements()
    for item in disagreements[:show]:
        lines.append(str(item))
    if len(disagreements) > show:
        lines.append(f"... and {len(disagreements) - show} more disagreements")
    for result in summary.results:
        if result.error:
            lines.append(f"seed {result.seed}: harness error: {result.error.splitlines()[0]}")
        for anomaly in result.anomalies:
            lines.append(f"seed {result.seed}: harness anomaly: {anomaly}")
    failed = [r.seed for r in summary.results if not r.agrees]
    if failed and out is not None:
        lines.append(f"disagreeing scenarios written to {out} (seeds {', '.join(map(str, failed[:50]))})")
    runs = [r for r in summary.results if r.error is None]
    if runs:
        upstream = sum(r.upstream_seconds for r in runs) / len(runs)
        simulated = sum(r.ours_seconds for r in runs) / len(runs)
        phases = {
            name: sum(r.upstream_phases.get(name, 0.0) for r in runs) / len(runs) for name in runs[0].upstream_phases
        }
        steps = ", ".join(f"{name} {value:.2f}s" for name, value in phases.items())
        lines.append(
            f"per scenario: {seconds / len(summary.results):.2f}s wall, kube-scheduler side {upstream:.2f}s "
            f"({steps}), simulate {simulated:.2f}s"
        )
    lines.append(summary.line())
    return lines


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    wanted = [f.strip() for f in args.features.split(",") if f.strip()] if args.features else None
    results: list[ScenarioResult] = []
    started = time.monotonic()
    try:
        with Harness(features=wanted, state=args.cluster_dir, workdir=args.out, timeout=args.timeout) as harness:
            print(f"plugins: {', '.join(harness.plugins)}", file=sys.stderr)
            print(f"features: {', '.join(sorted(harness.features))}", file=sys.stderr)
            for i in range(args.scenarios):
                result = harness.run(args.seed + i)
                results.append(result)
                _progress(result, i + 1, args.scenarios)
                if not result.agrees and result.simulate_input:
                    harness.save(result, args.out)
    except ClusterUnavailable as error:
        print(f"parity: {error}", file=sys.stderr)
        return 3 if error.toolchain_missing else 1
    except ValueError as error:  # bad --features
        print(f"parity: {error}", file=sys.stderr)
        return 2
    summary = Summary(results)
    for line in report(summary, show=args.show, seconds=time.monotonic() - started, out=args.out):
        print(line)
    return 0 if summary.agreed == len(results) else 1
