"""``scripts/conformance``: build, start a cluster of its own, run a selection of upstream's
e2e specs against one scheduler or both, write the reports and the side-by-side table.

The cluster is not the shared dev cluster: specs taint and relabel nodes, and the selections
need workload controllers and kwok nodes, so it lives in ``.devcluster/conformance`` (the
``gated`` selection in ``.devcluster/conformance-gated``, with its gates), sharing the built
binaries, and stops at the end unless ``--keep-cluster``. Per scheduler the kwok nodes are made
anew (a run's status patches stay on a node) with fresh fake system pods, the scheduler starts,
e2e.test runs, the scheduler stops. stdout: the table; stderr: the story.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from devcluster import build, cluster, kwok, layout, scheduler
from devcluster.errors import DevClusterError
from devcluster.layout import Layout
from devcluster.ui import say

from . import install, report
from .selections import CONTROLLERS, SELECTIONS, Selection

SCHEDULERS = ("kube-scheduler", "crd-scheduler")
_SUITE_TIMEOUT = "3h"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="conformance",
        description="Upstream's e2e specs (e2e.test) against kube-scheduler and crd-scheduler on kwok nodes.",
        epilog="selections:\n" + "\n".join(f"  {s.name:<24} {s.about}" for s in SELECTIONS.values()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--selection", required=True, choices=list(SELECTIONS))
    parser.add_argument("--scheduler", default="both", choices=[*SCHEDULERS, "both"])
    parser.add_argument("--nodes", type=int, help="kwok nodes (default: the selection's, 10; gated 3)")
    parser.add_argument("--zones", type=int, default=2, help="zones the nodes spread over (default 2)")
    parser.add_argument("--out", type=Path, help="reports folder (default .devcluster/conformance-reports/...)")
    parser.add_argument("--keep-cluster", action="store_true", help="leave the cluster running after")
    parser.add_argument("--focus", help="only the selection's specs that also match this regex")
    return parser


def cluster_layout(main: Layout, selection: Selection) -> Layout:
    name = "conformance-gated" if selection.feature_gates else "conformance"
    return Layout(root=main.root / name, bin=main.bin, external_bin=True)


def e2e_argv(binary: Path, lay: Layout, selection: Selection, out: Path, focus: str | None) -> list[str]:
    focus_regex = selection.focus if not focus else f"({selection.focus}).*({focus})|({focus}).*({selection.focus})"
    return [
        str(binary),
        "--provider=skeleton",
        f"--kubeconfig={lay.admin_kubeconfig}",
        f"--report-dir={out}",
        f"--ginkgo.focus={focus_regex}",
        f"--ginkgo.skip={selection.skip_regex()}",
        f"--ginkgo.json-report={out / 'report.json'}",
        f"--ginkgo.timeout={_SUITE_TIMEOUT}",
        "--ginkgo.no-color",
    ]


def run_one(name: str, main: Layout, lay: Layout, args: argparse.Namespace, selection: Selection, out: Path) -> float:
    """One scheduler's run of the selection; its wall time in seconds."""
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    nodes = kwok.nodes(lay, args.nodes, zones=args.zones, reset=True)
    ports = cluster.load_ports(lay)
    assert ports is not None
    admin = cluster.admin_client(lay, ports)
    install.system_pods(admin, nodes)
    argv = e2e_argv(main.bin / build.E2E, lay, selection, folder, args.focus)
    started = time.monotonic()
    if name == "kube-scheduler":
        scheduler.up(lay, None, None)
        try:
            _e2e(argv, folder)
        finally:
            scheduler.down(lay)
    else:
        scheduler.down(lay)
        with install.crd_scheduler(lay, admin, folder / "crd-scheduler.log"):
            _e2e(argv, folder)
    for name in (kwok.KWOK, kwok.REAPER):  # so far (they serve both schedulers): the cluster's go at its end
        if lay.log(name).is_file():
            shutil.copyfile(lay.log(name), folder / f"{name}.log")
    return time.monotonic() - started


def _e2e(argv: list[str], folder: Path) -> None:
    log = folder / "e2e.log"
    say(f"e2e.test running; log: {log}")
    with log.open("w") as handle:
        handle.write(" ".join(argv) + "\n")
        handle.flush()
        # Failed specs make it exit 1: the report says which; only a missing report is an error.
        subprocess.run(argv, stdout=handle, stderr=subprocess.STDOUT, cwd=folder, check=False)
    if not (folder / "report.json").is_file():
        raise DevClusterError(f"e2e.test wrote no report; see {log}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    selection = SELECTIONS[args.selection]
    args.nodes = selection.nodes if args.nodes is None else args.nodes
    names = SCHEDULERS if args.scheduler == "both" else (args.scheduler,)
    main_layout = Layout.from_env()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = (args.out or main_layout.root / "conformance-reports" / f"{selection.name}-{stamp}").resolve()
    try:
        build.ensure_built(main_layout)
        build.ensure_tool(main_layout, build.KWOK)
        build.ensure_tool(main_layout, build.E2E)
        lay = cluster_layout(main_layout, selection)
        os.environ[layout.FEATURE_GATES_ENV] = selection.feature_gates
        os.environ[layout.RUNTIME_CONFIG_ENV] = selection.runtime_config
        for_pid = None if args.keep_cluster else os.getpid()
        cluster.up(lay, for_pid=for_pid, controllers=(*CONTROLLERS.split(","), *selection.controllers))
        walls: dict[str, float] = {}
        try:
            for name in names:
                say(f"{selection.name} against {name}")
                walls[name] = run_one(name, main_layout, lay, args, selection, out)
        finally:
            if for_pid is not None:
                cluster.release(lay, for_pid)
        results = {name: report.outcomes(out / name / "report.json") for name in names}
        text, broken = report.table(results)
        text += "".join(f"- {name}: wall time {seconds / 60:.1f} min\n" for name, seconds in walls.items())
        (out / "table.md").write_text(text)
        print(text)
        say(f"reports in {out}")
    except DevClusterError as error:
        print(f"conformance: error: {error}", file=sys.stderr)
        return error.exit_code
    failed = [f"{n}: {spec}" for n in names for spec, o in results[n].items() if o.state not in ("passed", "skipped")]
    for line in broken:
        say(f"claim broken: {line}")
    if failed:
        say(f"{len(failed)} spec(s) did not pass: " + "; ".join(failed))
    return 1 if broken or failed else 0
