"""The ``crd-scheduler`` command line: a few verbs, each obvious.

``simulate`` reads manifests and runs the scheduler over an in-memory cluster; ``run`` starts
the operator (``scheduler_operator.app``). Exit codes: 0 done (a pod that does not fit is a result, not a failure),
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
from scheduler_core.simulator.html import render_simulation
from scheduler_core.simulator.usage import node_usage
from scheduler_operator import explain_cmd, import_cmd, whatif_cmd
from scheduler_operator.calls import DEFAULT_CRITICAL_LIMIT
from scheduler_operator.options import DEFAULT_LIVENESS, ElectionConfig, Options, default_identity
from scheduler_operator.output import emit, warn
from scheduler_operator.resources import DEFAULT_LEASE_NAME

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
        "-f", "--filename", action="append", default=[], metavar="FILE",
        help="manifest file (YAML or JSON, multi-document), directory of them, or - for stdin; repeatable "
        "(with --from-cluster: the candidate SchedulerProfiles and PluginConfigs)",
    )  # fmt: skip
    sim.add_argument("-o", "--output", choices=("json", "table", "html"), default="table", help="output format (table)")
    whatif_cmd.add_arguments(sim)
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
    explain_cmd.add_parser(verbs)
    import_cmd.add_parser(verbs)

    run = verbs.add_parser(
        "run",
        help="run the operator: watch SchedulerProfiles, PluginConfigs, nodes and pods; schedule while leading",
        description="Run the operator with the credentials a Kubernetes client finds (in-cluster service account, "
        "else KUBECONFIG). Every replica keeps its caches warm; the holder of the Lease schedules.",
    )
    run.add_argument(
        "--home-namespace", default=os.environ.get(HOME_NAMESPACE_ENV) or DEFAULT_HOME_NAMESPACE, metavar="NS",
        help=f"namespace whose profiles apply cluster-wide, and of the Lease (env {HOME_NAMESPACE_ENV}; "
        f"{DEFAULT_HOME_NAMESPACE})",
    )  # fmt: skip
    run.add_argument("--lease-name", default=DEFAULT_LEASE_NAME, metavar="N", help=f"the Lease ({DEFAULT_LEASE_NAME})")
    run.add_argument(
        "--identity", default=None, metavar="ID",
        help="this replica's name in the Lease (env POD_NAME, else hostname_uuid)",
    )  # fmt: skip
    run.add_argument(
        "--liveness", default=DEFAULT_LIVENESS, metavar="URL",
        help=f"Kopf's liveness endpoint ({DEFAULT_LIVENESS}; empty to disable)",
    )  # fmt: skip
    election = ElectionConfig()
    for flag, default, what in (
        ("--lease-duration", election.lease_duration, "how long a lease lasts unrenewed"),
        ("--renew-deadline", election.renew_deadline, "how long the leader retries renewing before it stops"),
        ("--retry-period", election.retry_period, "time between two tries to acquire or renew"),
    ):
        run.add_argument(flag, type=float, default=default, metavar="SECONDS", help=f"{what} ({default:g})")
    run.add_argument(
        "--max-in-flight", type=int, default=DEFAULT_CRITICAL_LIMIT, metavar="N",
        help=f"API requests in flight for binding, and again for reports ({DEFAULT_CRITICAL_LIMIT})",
    )  # fmt: skip
    run.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="(INFO)")
    run.set_defaults(handler=_run)
    return parser


def _simulate(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.from_cluster:
        return whatif_cmd.run(args)
    if not args.filename:
        print("error: simulate: -f/--filename is required (or --from-cluster)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        cluster = load_files(args.filename, home_namespace=args.home_namespace)
        _warn(cluster.warnings)
        result = run_simulation(cluster, seed=args.seed, home_namespace=args.home_namespace)
    except InputError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    _warn(result.warnings)
    if args.output == "html":
        text = render_simulation(result.pods, node_usage(cluster.nodes, result))
    else:
        text = render_json(result.pods) if args.output == "json" else render_table(result.pods)
    emit(text)
    return EXIT_OK



def _run(args: argparse.Namespace) -> int:
    import asyncio

    from scheduler_operator import app

    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("kopf.objects", "kopf.activities.probe", "aiohttp.access"):  # a line per event or probe
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        election = ElectionConfig(args.lease_duration, args.renew_deadline, args.retry_period)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    options = Options(
        home_namespace=args.home_namespace,
        lease_name=args.lease_name,
        identity=args.identity or default_identity(),
        liveness=args.liveness or None,
        election=election,
        critical_limit=args.max_in_flight,
        reports_limit=args.max_in_flight,
    )
    asyncio.run(app.run(options))
    return EXIT_OK


def _warn(warnings: Sequence[str]) -> None:
    warn(warnings)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code
