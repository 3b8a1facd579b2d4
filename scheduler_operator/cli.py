"""The ``crd-scheduler`` command line: a few verbs, each obvious.

``simulate`` reads manifests and runs the scheduler over an in-memory cluster; ``run`` will
start the operator. Exit codes: 0 done (a pod that does not fit is a result, not a failure),
2 bad input or usage (with one ``error: file: Kind ns/name: field: reason`` line per problem
on stderr, never a traceback), 3 not available in this build.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from scheduler_core.simulator import DEFAULT_HOME_NAMESPACE, InputError, load_files, render_json, render_table
from scheduler_core.simulator import simulate as run_simulation

HOME_NAMESPACE_ENV = "CRD_SCHEDULER_HOME_NAMESPACE"
EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_UNAVAILABLE = 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crd-scheduler",
        description="A Kubernetes scheduler whose profiles are custom resources.",
    )
    verbs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sim = verbs.add_parser(
        "simulate",
        help="schedule the pending pods of manifests on an in-memory cluster and explain each placement",
        description="Read Nodes, Pods, SchedulerProfiles, PluginConfigs (and PodDisruptionBudgets, "
        "PriorityClasses, Namespaces...) from manifests, run the scheduler until nothing is left to "
        "try, and report every pod a profile handles: node, scores per plugin, filter reasons.",
    )
    sim.add_argument(
        "-f", "--filename", action="append", required=True, metavar="FILE",
        help="manifest file (YAML or JSON, multi-document), directory of them, or - for stdin; repeatable",
    )  # fmt: skip
    sim.add_argument("-o", "--output", choices=("json", "table"), default="table", help="output format (table)")
    sim.add_argument(
        "--seed", type=int, default=0, metavar="N",
        help="seed of the random choice among equally scored nodes (0); the same seed gives the same placements",
    )  # fmt: skip
    sim.add_argument(
        "--home-namespace", default=DEFAULT_HOME_NAMESPACE, metavar="NS",
        help="namespace whose profiles apply cluster-wide; profiles without a namespace go there "
        f"({DEFAULT_HOME_NAMESPACE})",
    )  # fmt: skip
    sim.set_defaults(handler=_simulate)

    run = verbs.add_parser("run", help="run the operator (not built yet)")
    run.add_argument(
        "--home-namespace", default=os.environ.get(HOME_NAMESPACE_ENV) or DEFAULT_HOME_NAMESPACE, metavar="NS",
        help=f"namespace whose profiles apply cluster-wide (env {HOME_NAMESPACE_ENV}; {DEFAULT_HOME_NAMESPACE})",
    )  # fmt: skip
    run.set_defaults(handler=_run)
    return parser


def _simulate(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        cluster = load_files(args.filename, home_namespace=args.home_namespace)
        _warn(cluster.warnings)
        result = run_simulation(cluster, seed=args.seed, home_namespace=args.home_namespace)
    except InputError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _warn(result.warnings)
    try:
        print(render_json(result.pods) if args.output == "json" else render_table(result.pods), flush=True)
    except BrokenPipeError:  # `| head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    print("the operator is not built yet", file=sys.stderr)
    return EXIT_UNAVAILABLE


def _warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code
