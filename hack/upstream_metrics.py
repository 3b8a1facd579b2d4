#!/usr/bin/env python3
"""Generate the list of kube-scheduler's metric families from the pinned upstream source.

    python hack/upstream_metrics.py            # rewrites tests/unit/metrics/upstream_families.json
    python hack/upstream_metrics.py --check    # exit 1 when the JSON is stale

Reads, in ``$(go env GOMODCACHE)/k8s.io/kubernetes@<version>`` (the dev cluster's build puts it
there): ``pkg/scheduler/metrics/metrics.go`` (``InitMetrics``: every ``metrics.NewCounter``/
``NewGauge``/``NewHistogram`` with its ``Subsystem``, ``Name``, ``Help``, ``StabilityLevel``,
``Buckets`` and label names; ``Register``: which are always registered, ``metricsList``, and
which only behind a feature gate), ``pkg/scheduler/framework/plugins/volumebinding/metrics/
metrics.go`` (registered by ``Register`` too), and ``pkg/features/kube_features.go`` for each
gate's default in that version. ``tests/unit/metrics/test_upstream_families.py`` checks the JSON
against the source (when the module cache has it) and our registry against the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

VERSION = "v1.36.3"
ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "tests" / "unit" / "metrics" / "upstream_families.json"
METRICS_GO = "pkg/scheduler/metrics/metrics.go"
VOLUME_METRICS_GO = "pkg/scheduler/framework/plugins/volumebinding/metrics/metrics.go"
FEATURES_GO = "pkg/features/kube_features.go"

_CONSTRUCTOR = re.compile(
    r"(?P<var>\w+)\s*=\s*metrics\.New(?P<kind>Counter|Gauge|Histogram)(?P<vec>Vec)?\(\s*"
    r"&metrics\.\w+Opts\{(?P<opts>.*?)\n\t*\}(?:,\s*(?:\[\]string\{(?P<labels>[^}]*)\}))?",
    re.S,
)
_FIELD = re.compile(r"^\s*(\w+):\s*(.+?),?\s*(?://.*)?$", re.M)
_CONST = re.compile(r"^\s*(?:const\s+)?(\w+)\s*=\s*\"([^\"]*)\"", re.M)
_BUCKETS = re.compile(r"metrics\.ExponentialBuckets\(([^,]+),\s*([^,]+),\s*(\d+)\)")


def module_dir(version: str = VERSION) -> Path | None:
    """The module cache's copy of k8s.io/kubernetes at ``version``, if there is one."""
    cache = os.environ.get("GOMODCACHE")
    if not cache:
        try:
            cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None
    path = Path(cache.strip()) / f"k8s.io/kubernetes@{version}"
    return path if (path / METRICS_GO).is_file() else None


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """``prometheus.ExponentialBuckets``: repeated multiplication, as Go computes it."""
    bounds, bound = [], start
    for _ in range(count):
        bounds.append(bound)
        bound *= factor
    return bounds


def _go_string(text: str) -> str:
    value = json.loads(text)  # a Go interpreted string literal reads as JSON here
    assert isinstance(value, str)
    return value


def families_in(source: str) -> dict[str, dict[str, Any]]:
    """Each ``metrics.New*`` in ``source``, keyed by the Go variable it is assigned to."""
    consts = dict(_CONST.findall(source))
    found: dict[str, dict[str, Any]] = {}
    for match in _CONSTRUCTOR.finditer(source):
        fields = dict(_FIELD.findall(match["opts"]))
        subsystem = fields.get("Subsystem", "")
        subsystem = _go_string(subsystem) if subsystem.startswith('"') else consts[subsystem]
        name = f"{subsystem}_{_go_string(fields['Name'])}" if subsystem else _go_string(fields["Name"])
        kind = match["kind"].lower()
        labels = re.findall(r"\"([^\"]+)\"", match["labels"] or "") if match["vec"] else []
        family: dict[str, Any] = {
            "name": name,
            "type": kind,
            "labels": labels,
            "help": _go_string(fields["Help"]),
            "stability": fields.get("StabilityLevel", "metrics.ALPHA").removeprefix("metrics."),
        }
        if kind == "histogram":
            buckets = _BUCKETS.search(fields["Buckets"])
            if buckets is None:
                raise SystemExit(f"{name}: buckets {fields['Buckets']!r} are not ExponentialBuckets")
            family["buckets"] = exponential_buckets(float(buckets[1]), float(buckets[2]), int(buckets[3]))
        found[match["var"]] = family
    return found


def gate_defaults(source: str, gates: set[str]) -> dict[str, bool]:
    """Each gate's default in the newest version its spec lists (kube_features.go)."""
    defaults = {}
    for gate in gates:
        block = re.search(rf"^\t{gate}: \{{\n(.*?)\n\t\}},", source, re.S | re.M)
        if block is None:
            raise SystemExit(f"feature gate {gate} not found in {FEATURES_GO}")
        defaults[gate] = re.findall(r"Default: (true|false)", block[1])[-1] == "true"
    return defaults


def generate(root: Path) -> dict[str, Any]:
    source = (root / METRICS_GO).read_text()
    by_var = families_in(source)
    always = re.search(r"metricsList = \[\]metrics\.Registerable\{(.*?)\}", source, re.S)
    register = re.search(r"func Register\(\) \{(.*?)\n\}", source, re.S)
    assert always is not None and register is not None, "metrics.go changed shape"
    registered: dict[str, str | None] = {var: None for var in re.findall(r"(\w+),", always[1])}
    for gate, names in re.findall(r"features\.(\w+)\) \{\s*RegisterMetrics\((.*?)\)\s*\}", register[1], re.S):
        for var in re.findall(r"\w+", names):
            registered[var] = gate
    volume = families_in((root / VOLUME_METRICS_GO).read_text())
    assert "volumebindingmetrics.RegisterVolumeSchedulingMetrics()" in register[1]
    gates = {gate for gate in registered.values() if gate}
    defaults = gate_defaults((root / FEATURES_GO).read_text(), gates)
    families = []
    for var, gate in registered.items():
        families.append({**by_var[var], "feature_gate": gate, "gate_default": defaults[gate] if gate else None})
    for family in volume.values():
        families.append({**family, "feature_gate": None, "gate_default": None})
    unregistered = sorted(set(by_var) - set(registered))
    if unregistered:
        raise SystemExit(f"defined in {METRICS_GO} but registered nowhere we read: {unregistered}")
    return {
        "version": VERSION,
        "sources": [METRICS_GO, VOLUME_METRICS_GO, FEATURES_GO],
        "families": sorted(families, key=lambda f: f["name"]),
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the checked-in JSON is stale")
    args = parser.parse_args(argv)
    root = module_dir()
    if root is None:
        print(f"k8s.io/kubernetes@{VERSION} is not in the Go module cache (scripts/dev-cluster build)", file=sys.stderr)
        return 2
    text = render(generate(root))
    if args.check:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run python hack/upstream_metrics.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
