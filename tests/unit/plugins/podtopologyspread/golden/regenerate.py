"""Regenerate ``upstream_cases.json``: upstream's PodTopologySpread test inputs, run through
upstream's own plugin code.

The golden file is not hand-copied expectations: this script copies the v1.36 package
(``k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread``, from the Go module
cache that ``scripts/dev-cluster`` fills) into a scratch module, inserts one harness call at
the top of each table case of ``filtering_test.go`` and ``scoring_test.go``, and runs
``go test``. The harness (``zz_golden_test.go.txt``) runs PreFilter, Filter, AddPod/RemovePod,
PreScore, Score and NormalizeScore with v1.36's feature gates (NodeInclusionPolicy GA,
MatchLabelKeys on, queueing hints GA) and writes the inputs and results as JSON.

Usage: ``python tests/unit/plugins/podtopologyspread/golden/regenerate.py`` (needs Go and the
module cache; runs offline).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[4]
VERSION = "v1.36.3"

_L = "defaultingType: config.ListDefaulting"
HOOKS = {
    "TestPreFilterState": f"pod: tt.pod, nodes: tt.nodes, existingPods: tt.existingPods, objs: tt.objs, {_L}, "
    "defaultConstraints: tt.defaultConstraints",
    "TestPreFilterStateAddPod": f"pod: tt.preemptor, nodes: tt.nodes, existingPods: tt.existingPods, {_L}, "
    'update: &goldenUpdate{Op: "add", Pod: tt.addedPod, Node: tt.nodes[tt.nodeIdx].Name}',
    "TestPreFilterStateRemovePod": f"pod: tt.preemptor, nodes: tt.nodes, existingPods: tt.existingPods, {_L}, "
    'update: &goldenUpdate{Op: "remove", Node: tt.nodes[tt.nodeIdx].Name, Pod: func() *v1.Pod { '
    "if tt.deletedPodIdx >= 0 && tt.deletedPodIdx < len(tt.existingPods) { return tt.existingPods[tt.deletedPodIdx] }; "
    "return tt.deletedPod }()}",
    "TestSingleConstraint": f"pod: tt.pod, nodes: tt.nodes, existingPods: tt.existingPods, {_L}",
    "TestMultipleConstraints": f"pod: tt.pod, nodes: tt.nodes, existingPods: tt.existingPods, {_L}",
    "TestPreScoreSkip": "pod: tt.pod, nodes: tt.nodes, objs: tt.objs, defaultingType: tt.config.DefaultingType, "
    "defaultConstraints: tt.config.DefaultConstraints",
    "TestPreScoreStateEmptyNodes": "pod: tt.pod, nodes: tt.nodes, objs: tt.objs, "
    "defaultingType: tt.config.DefaultingType, defaultConstraints: tt.config.DefaultConstraints",
    "TestPodTopologySpreadScore": "pod: tt.pod, nodes: tt.nodes, failedNodes: tt.failedNodes, "
    "existingPods: tt.existingPods, objs: tt.objs, defaultingType: config.SystemDefaulting",
}


def patch(source: str) -> str:
    out: list[str] = []
    current = ""
    for line in source.splitlines():
        match = re.match(r"func (Test\w+)\(", line)
        if match:
            current = match.group(1)
        out.append(line)
        if current in HOOKS and line.strip() == "t.Run(tt.name, func(t *testing.T) {":
            out.append(f'\t\t\tgolden(t, goldenInput{{id: "{current}/" + tt.name, {HOOKS[current]}}})')
    return "\n".join(out) + "\n"


def main() -> None:
    gomodcache = subprocess.run(["go", "env", "GOMODCACHE"], check=True, capture_output=True, text=True).stdout.strip()
    package = (
        pathlib.Path(gomodcache) / f"k8s.io/kubernetes@{VERSION}/pkg/scheduler/framework/plugins/podtopologyspread"
    )
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        devcluster = REPO / "hack/devcluster"
        gomod = (devcluster / "go.mod").read_text()
        gomod = re.sub(r"^module .*$", "module ptsgolden", gomod, flags=re.M)
        gomod = re.sub(r"^tool \((.|\n)*?^\)\n", "", gomod, flags=re.M)
        gomod = gomod.replace(f"k8s.io/kubernetes {VERSION} // indirect", f"k8s.io/kubernetes {VERSION}")
        (root / "go.mod").write_text(gomod)
        shutil.copy(devcluster / "go.sum", root / "go.sum")
        pkg = root / "pts"
        pkg.mkdir()
        for src in package.glob("*.go"):
            text = src.read_text()
            (pkg / src.name).write_text(patch(text) if src.name.endswith("_test.go") else text)
        shutil.copy(HERE / "zz_golden_test.go.txt", pkg / "zz_golden_test.go")
        env = dict(
            os.environ, GOPROXY="off", GOFLAGS="-mod=mod", GOSUMDB="off", GOLDEN_OUT=str(HERE / "upstream_cases.json")
        )
        subprocess.run(["go", "test", "./pts/", "-count=1", "-run", "|".join(HOOKS)], cwd=root, env=env, check=True)
    compact(HERE / "upstream_cases.json")


_NODE_STATUS_NOISE = ("daemonEndpoints", "nodeInfo")
_FIXED_TIME = "2024-01-01T00:00:00Z"


def _prune(value: Any) -> Any:
    """Drop ``null`` fields and the node status fields the builders fill with zeroes, so the
    file stays small; empty maps and strings stay (``labelSelector: {}`` selects all). The
    builders' ``time.Now()`` deletion timestamps are pinned, so reruns give the same file."""
    if isinstance(value, dict):
        return {
            k: _FIXED_TIME if k == "deletionTimestamp" else _prune(v)
            for k, v in value.items()
            if v is not None and k not in _NODE_STATUS_NOISE
        }
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def compact(path: pathlib.Path) -> None:
    cases = json.loads(path.read_text())
    seen: dict[str, int] = {}
    for case in cases:
        n = seen[case["id"]] = seen.get(case["id"], 0) + 1
        if n > 1:
            case["id"] += f" #{n}"
        for paths in case.get("criticalPaths") or ():
            # Go's map order picks among tied domains; list ties by name.
            if paths[0][1] == paths[1][1]:
                paths.sort()
    lines = [json.dumps(_prune(case), sort_keys=True) for case in cases]
    path.write_text("[\n" + ",\n".join(lines) + "\n]\n")


if __name__ == "__main__":
    main()
