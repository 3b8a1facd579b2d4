"""Upstream's own scheduler_perf, built from the pinned sources and run on this machine.

``build(folder)`` compiles ``go test -c k8s.io/kubernetes/test/integration/scheduler_perf/<folder>``
inside a scratch copy of ``hack/devcluster``'s Go module (the dev cluster's pin of
k8s.io/kubernetes v1.36.3 and its staging replaces; the copy lets ``go`` add the test-only
dependencies to its own go.sum without touching ours) into ``.devcluster/scheduler_perf/``.
``run(variant)`` runs the binary's ``BenchmarkPerfScheduling`` for one variant
(``-test.bench``, in the variant's folder as ``go test`` runs it; its own API server and
etcd: etcd must be on PATH, the dev cluster builds it in ``.devcluster/bin``), with
``-data-items-dir``, and reads the ``SchedulingThroughput`` data items it writes (``util.go``
``dataItems2JSONFile``). The benchmark's label filter is set to
the variant's own labels, so any variant can be run, not only ``performance`` ones.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.scheduler_perf.config import KUBERNETES_VERSION, SCHEDULER_PERF, Variant

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "hack" / "devcluster"
OUT = REPO / ".devcluster" / "scheduler_perf"
ETCD_DIR = REPO / ".devcluster" / "bin"


class UpstreamError(RuntimeError):
    pass


def binary(folder: str) -> Path:
    return OUT / (folder.replace("/", "_") + ".test")


def build(folder: str, *, force: bool = False) -> Path:
    target = binary(folder)
    if target.exists() and not force:
        return target
    OUT.mkdir(parents=True, exist_ok=True)
    package = f"k8s.io/kubernetes/{SCHEDULER_PERF}/{folder}"
    with tempfile.TemporaryDirectory(prefix="scheduler-perf-build-") as scratch:
        for name in ("go.mod", "go.sum"):
            shutil.copy(MODULE / name, Path(scratch) / name)
        env = {**os.environ, "GOFLAGS": "-mod=mod"}
        result = subprocess.run(
            ["go", "test", "-c", "-o", str(target), package],
            cwd=scratch, env=env, capture_output=True, text=True,
        )  # fmt: skip
    if result.returncode != 0:
        raise UpstreamError(f"go test -c {package} ({KUBERNETES_VERSION}) failed:\n{result.stderr[-4000:]}")
    return target


def _bench_pattern(variant: Variant) -> str:
    # testing's -bench matches each "/"-separated level with its own regexp.
    levels = ["BenchmarkPerfScheduling", variant.case, *variant.name.split("/")]
    return "/".join("^" + re.escape(level) + "$" for level in levels)


def run(variant: Variant, *, timeout: float = 3600) -> dict[str, Any]:
    """One run of the variant by upstream's benchmark; its SchedulingThroughput (pods/s:
    Average, Perc50...) and the other data items, by metric name."""
    test = build(variant.folder)
    if shutil.which("etcd") is None and not (ETCD_DIR / "etcd").exists():
        raise UpstreamError("etcd is not on PATH and .devcluster/bin/etcd is missing (scripts/dev-cluster build)")
    with tempfile.TemporaryDirectory(prefix="scheduler-perf-run-") as items:
        env = {**os.environ, "PATH": f"{ETCD_DIR}:{os.environ.get('PATH', '')}"}
        command = [
            str(test),
            "-test.run", "^$",
            "-test.bench", _bench_pattern(variant),
            "-test.benchtime", "1x",
            "-test.timeout", f"{int(timeout)}s",
            "-perf-scheduling-label-filter", ",".join(variant.labels) or "",
            "-data-items-dir", items,
        ]  # fmt: skip
        result = subprocess.run(
            command, cwd=variant.directory, env=env, capture_output=True, text=True, timeout=timeout + 60
        )
        data: list[dict[str, Any]] = []
        for path in sorted(Path(items).glob("*.json")):
            data.extend(json.loads(path.read_text()).get("dataItems") or [])
    below = below_threshold(result.stdout + result.stderr)
    failed = result.returncode != 0 and not (below and _only_threshold_failures(result.stdout + result.stderr))
    if failed or not data:
        raise UpstreamError(
            f"{test.name} {variant.full_name}: exit {result.returncode}, {len(data)} data items:\n"
            + (result.stdout[-3000:] + result.stderr[-3000:])
        )
    by_metric: dict[str, Any] = {}
    for item in data:
        by_metric.setdefault(item.get("labels", {}).get("Metric", "?"), []).append(item)
    throughput = by_metric.get("SchedulingThroughput", [])
    return {
        "variant": variant.full_name,
        "binary": str(test),
        "scheduling_throughput": [t.get("data") for t in throughput],
        "pods_per_second": throughput[0]["data"].get("Average") if throughput else None,
        "metrics": sorted(by_metric),
        # v1.36.3's default collector config has no pod_scheduling_sli histogram: the closest
        # latency it reports is the attempt's (per result label), and the whole duration.
        "attempt_duration_ms": [
            {"labels": i.get("labels"), "data": i.get("data")}
            for i in by_metric.get("scheduler_scheduling_attempt_duration_seconds", [])
        ],
        "scheduling_duration": [i.get("data") for i in by_metric.get("SchedulingDuration", [])],
        # Upstream fails the benchmark when a measured value misses the workload's threshold
        # (scheduler_perf.go applyThreshold, a tCtx.Errorf): the run and its data items stand.
        "below_upstream_threshold": below,
    }


# scheduler_perf.go applyThreshold: `%s: expected %q %q to be higher: got %f, want %f`
# (or "lower"), logged by executor.go stopCollectingMetrics as `op %d: %s`.
_THRESHOLD = re.compile(
    r'op \d+: (\S+): expected "([^"]+)" "([^"]+)" to be (higher|lower): got ([0-9.]+), want ([0-9.]+)'
)


def below_threshold(output: str) -> list[dict[str, Any]]:
    """Each threshold the run missed, from the benchmark's output."""
    return [
        {"name": m[1], "metric": m[2], "bucket": m[3], "expected": m[4], "got": float(m[5]), "want": float(m[6])}
        for m in _THRESHOLD.finditer(output)
    ]


def _only_threshold_failures(output: str) -> bool:
    """True when nothing but missed thresholds failed: every error line of the benchmark is one."""
    errors = [
        line
        for line in output.splitlines()
        if re.match(r"\s+\S+\.go:\d+: ", line) and (" op " in line or "rror" in line or "FAIL" in line)
    ]
    return not any(_THRESHOLD.search(line) is None for line in errors) and "panic:" not in output
