"""How much of a scheduling cycle could run in parallel: the measured serial fraction (issue 25).

    python -m bench.serial_fraction --case SchedulingBasic --variant 5000Nodes_10000Pods
    python -m bench.serial_fraction --case SchedulingPodAntiAffinity --variant 5000Nodes_2000Pods

Upstream runs three parts of a cycle over the nodes with 16 goroutines
(``pkg/scheduler/framework/parallelize/parallelism.go``, ``DefaultParallelism``): the Filter
pass (``schedule_one.go`` ``findNodesThatPassFilters``), the Score plugins per node
(``runtime/framework.go`` ``RunScorePlugins``), and the per-node loops that InterPodAffinity
and PodTopologySpread run inside PreFilter and PreScore. Everything else — the queue, the
snapshot update, PreFilter/PreScore's other work, selectHost, assume, Reserve, Permit, the
binding cycle and event handling — runs on one goroutine per pod.

This runs one of upstream's scheduler_perf variants in-process (``bench.scheduler_perf``)
with the scheduler's own duration metrics timed in *CPU time of the thread*
(``time.thread_time``), so the shares do not depend on what else the machine runs. It prints
the CPU seconds of each extension point and the two fractions Amdahl's law needs:

- ``parallel_filter_score``: Filter + Score over everything the scheduler spent (attempts and
  event handling) — what node-chunked Filter/Score workers could share;
- ``parallel_upper_bound``: the same plus all of PreFilter and PreScore, an upper bound (only
  their per-node loops are parallel upstream);

and the speed-up ``1 / ((1 - p) + p / n)`` each would give with n = 2, 4 and 16 workers that
cost nothing to hand work to, which no Python worker pool achieves.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.scheduler_perf import config, inprocess
from scheduler_core.metrics import scheduler_metrics as sm
from scheduler_core.metrics.registry import Registry


class _CpuTimedMetrics(sm.SchedulerMetrics):
    """The scheduler's metrics, with durations in CPU seconds of the running thread."""

    def __init__(self, registry: Registry | None = None, *, timer: Callable[[], float] = time.thread_time) -> None:
        super().__init__(registry, timer=timer)


def _sums(histogram: Any, label: int | None = None) -> dict[str, float]:
    out: dict[str, float] = {}
    for values, child in histogram.children():
        key = values[label] if label is not None else ""
        out[key] = out.get(key, 0.0) + child.sum
    return out


def amdahl(parallel: float, workers: int) -> float:
    return 1.0 / ((1.0 - parallel) + parallel / workers)


def measure(case: str, variant_name: str, seed: int = 0) -> dict[str, Any]:
    cases = [c for c in config.load(config.scheduler_perf_root()) if c.name == case]
    if not cases:
        raise SystemExit(f"no scheduler_perf test case named {case!r}")
    variant = next((v for v in cases[0].variants if v.name == variant_name), None)
    if variant is None:
        raise SystemExit(f"{case} has no variant {variant_name!r}: {[v.name for v in cases[0].variants]}")
    original = sm.SchedulerMetrics
    sm.SchedulerMetrics = _CpuTimedMetrics  # type: ignore[misc]
    try:
        executor = inprocess.Executor(variant, seed)
    finally:
        sm.SchedulerMetrics = original  # type: ignore[misc]
    metrics = executor.scheduler.metrics
    cpu_before = time.thread_time()
    asyncio.run(executor.run())
    cpu_run = time.thread_time() - cpu_before
    points = _sums(metrics.extension_point_duration, label=0)
    attempts = sum(_sums(metrics.attempt_duration).values())
    events = sum(_sums(metrics.event_handling_duration).values())
    scheduler_cpu = attempts + events
    filter_score = points.get("Filter", 0.0) + points.get("Score", 0.0)
    upper = filter_score + points.get("PreFilter", 0.0) + points.get("PreScore", 0.0)
    p, q = filter_score / scheduler_cpu, upper / scheduler_cpu
    return {
        "workload": variant.full_name,
        "cpu_seconds": {
            "run": round(cpu_run, 3),
            "attempts": round(attempts, 3),
            "event_handling": round(events, 3),
            "extension_points": {k: round(v, 3) for k, v in sorted(points.items(), key=lambda kv: -kv[1])},
        },
        "parallel_filter_score": round(p, 3),
        "parallel_upper_bound": round(q, 3),
        "amdahl_speedup": {
            f"{n}_workers": {"filter_score": round(amdahl(p, n), 2), "upper_bound": round(amdahl(q, n), 2)}
            for n in (2, 4, 16)
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", required=True)
    parser.add_argument("--variant", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.case, args.variant, args.seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
