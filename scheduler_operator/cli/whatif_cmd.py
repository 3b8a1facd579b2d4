"""``crd-scheduler simulate --from-cluster [-f CANDIDATE...] [--replace-all]``: what-if, read-only.

The live snapshot is scheduled under its own profiles and with the candidate SchedulerProfiles
and PluginConfigs of the files overlaid (``scheduler_core.simulator.whatif``).
"""

from __future__ import annotations

import argparse
import sys

from scheduler_core.simulator import Cluster, load_files
from scheduler_core.simulator.html import render_whatif
from scheduler_core.simulator.whatif import compare, render_json, render_table
from scheduler_operator.cli import live
from scheduler_operator.cli.output import EXIT_BAD_INPUT, EXIT_OK, emit, warn


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``simulate``'s what-if flags (its ``-f``, ``-o``, ``--seed``, ``--home-namespace`` are shared)."""
    parser.add_argument(
        "--from-cluster", action="store_true",
        help="what-if: snapshot the live cluster (read-only) and compare its profiles with the candidates of -f",
    )  # fmt: skip
    parser.add_argument(
        "--replace-all", action="store_true",
        help="with --from-cluster: place every pod a profile handles again, as if new (compares packing)",
    )  # fmt: skip
    parser.add_argument(
        "-n", "--namespace", default=None, metavar="NS",
        help="with --from-cluster: place and compare only this namespace's pods (all namespaces)",
    )  # fmt: skip
    parser.add_argument("--kubeconfig", default=None, metavar="FILE", help="with --from-cluster: kubeconfig")
    parser.add_argument("--context", default=None, metavar="NAME", help="with --from-cluster: kubeconfig context")


def run(args: argparse.Namespace) -> int:
    candidates = load_files(args.filename, home_namespace=args.home_namespace) if args.filename else Cluster()
    if candidates.nodes or candidates.pods:
        print("error: --from-cluster: -f files may hold only SchedulerProfiles and PluginConfigs", file=sys.stderr)
        return EXIT_BAD_INPUT
    cluster = live.take(args)
    if isinstance(cluster, int):
        return cluster
    result = compare(
        cluster, candidates, replace_all=args.replace_all, seed=args.seed, home_namespace=args.home_namespace,
        namespace=args.namespace,
    )  # fmt: skip
    warn(result.warnings)
    emit({"json": render_json, "html": render_whatif}.get(args.output, render_table)(result))
    return EXIT_OK
