"""Command line of ``scripts/dev-cluster``; stdout carries only paths or JSON, stderr the story."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import build, cluster, kwok, layout, reaper, scheduler
from .errors import EXIT_FAILED, DevClusterError
from .layout import Layout
from .ui import say, tail

_EPILOG = """\
commands:
  build [--force] [WHAT] build the binaries into .devcluster/bin (only when go.mod/go.sum changed):
                         WHAT is all (default), control-plane, or helm (hack/helm/go.mod); on
                         demand only: kwok (hack/kwok/go.mod), e2e (e2e.test, hack/e2e/go.mod),
                         kstatus and kubectl (hack/kstatus/go.mod)
  up [--for-pid PID]     start (or reuse) the cluster; prints the admin kubeconfig path last.
                         With --for-pid, PID is registered as a user, and a cluster started that
                         way stops when its last user is released (test sessions, xdist workers)
  up --controllers LIST  also run these kube-controller-manager controllers (a cluster it starts;
                         a running one without them is refused): replicaset, replicationcontroller,
                         disruption, deployment, job, statefulset, daemonset (never nodelifecycle)
  up --kwok-nodes N [--zones Z]   then `nodes N` (below)
  nodes N [--zones Z] [--reset]   exactly N Ready fake nodes kwok-node-0.. (kwok, built on demand,
                         started against the running cluster), zones zone-0..Z-1 (default 2);
                         --reset deletes them all first (a run's status patches stay on a node);
                         prints their names as JSON
  release PID            unregister user PID (stops a cluster started for users when none is left)
  down [--keep-logs]     stop everything this script started and delete its data
  status [--json]        what runs, where it listens, the kubeconfigs; exit 1 when not running
  kubeconfig [--operator]   print the admin (or unprivileged operator) kubeconfig path
  logs [COMPONENT]       last lines of each component's log (kwok's and kwok-reaper's when they ran)
  kwok-reaper            (internal; started with kwok) delete the deleted pods of kwok's nodes as a
                         kubelet would: after their preStop sleep, with their UID as a precondition
  kube-scheduler up [--config FILE] [--v N]   (re)start the real kube-scheduler; prints its log path
  kube-scheduler down

exit codes: 0 ok, 1 failure, 3 no Go toolchain to build with (callers may skip)
"""


_LOGGED = (*layout.BINARIES, layout.KWOK, layout.KWOK_REAPER)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dev-cluster",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A loopback-only Kubernetes control plane built from Go modules, for tests.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build_parser = commands.add_parser("build")
    build_parser.add_argument("--force", action="store_true")
    build_parser.add_argument(
        "what", nargs="?", choices=("all", "control-plane", "helm", "kwok", "e2e", "kstatus", "kubectl"), default="all"
    )
    up = commands.add_parser("up")
    up.add_argument("--for-pid", type=int, help="register a user (see release)")
    up.add_argument("--controllers", default="", help="more controllers, comma-separated (see below)")
    up.add_argument("--kwok-nodes", type=int, metavar="N", help="N fake nodes run by kwok (see nodes)")
    up.add_argument("--zones", type=int, default=2)
    nodes = commands.add_parser("nodes")
    nodes.add_argument("count", type=int)
    nodes.add_argument("--zones", type=int, default=2)
    nodes.add_argument("--reset", action="store_true", help="delete every kwok node first")
    commands.add_parser("release").add_argument("pid", type=int)
    commands.add_parser("down").add_argument("--keep-logs", action="store_true", help="copy logs to .devcluster/logs")
    commands.add_parser("status").add_argument("--json", action="store_true")
    commands.add_parser("kubeconfig").add_argument("--operator", action="store_true")
    commands.add_parser("logs").add_argument("component", nargs="?", choices=_LOGGED)
    commands.add_parser("kwok-reaper")
    kube_scheduler = commands.add_parser("kube-scheduler").add_subparsers(dest="action", required=True)
    start = kube_scheduler.add_parser("up")
    start.add_argument("--config", type=Path, help="a KubeSchedulerConfiguration (YAML or JSON)")
    start.add_argument("--v", type=int, dest="verbosity", help="klog verbosity")
    kube_scheduler.add_parser("down")
    return parser


def _print_status(lay: Layout, as_json: bool) -> int:
    report = cluster.status(lay)
    if as_json:
        print(json.dumps(report, indent=2))
        return 0 if report["running"] else EXIT_FAILED
    if not report["processes"]:
        print("dev cluster: not running")
        return EXIT_FAILED
    print(f"dev cluster: {'running' if report['running'] else 'PARTIAL (run `down`)'} at {report['server']}")
    for proc in report["processes"]:
        ports = [f"{s['address']}:{s['port']}" for s in report["listeners"] if s["pid"] == proc["pid"]]
        state = "running" if proc["alive"] else "DEAD"
        print(f"  {proc['name']:<24} pid {proc['pid']:<8} {state:<8} listening {', '.join(ports) or '-'}")
    print("  listeners: " + ("loopback only" if report["loopback_only"] else "NON-LOOPBACK ADDRESS IN USE"))
    print(f"  admin kubeconfig:    {report['kubeconfig']}")
    print(f"  operator kubeconfig: {report['operator_kubeconfig']}  (user {report['operator_user']}, RBAC-only rights)")
    return 0 if report["running"] and report["loopback_only"] else EXIT_FAILED


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    lay = Layout.from_env()
    try:
        if args.command == "build":
            if args.what in ("all", "control-plane"):
                build.ensure_built(lay, force=args.force)
            if args.what in ("all", "helm"):
                build.ensure_helm(lay, force=args.force)
            if args.what in (build.KWOK, build.KSTATUS, build.KUBECTL):
                build.ensure_tool(lay, args.what, force=args.force)
            if args.what == "e2e":
                build.ensure_built(lay)  # the suite's build reuses the control plane's compiled packages
                build.ensure_tool(lay, build.E2E, force=args.force)
            print(lay.bin)
        elif args.command == "up":
            kubeconfig = cluster.up(lay, for_pid=args.for_pid, controllers=cluster.parse_controllers(args.controllers))
            if args.kwok_nodes is not None:
                kwok.nodes(lay, args.kwok_nodes, zones=args.zones)
            print(kubeconfig)
        elif args.command == "nodes":
            print(json.dumps(kwok.nodes(lay, args.count, zones=args.zones, reset=args.reset)))
        elif args.command == "release":
            if cluster.release(lay, args.pid):
                say("no user left: cluster stopped")
        elif args.command == "down":
            scheduler.down(lay)
            cluster.down(lay, keep_logs=args.keep_logs)
        elif args.command == "status":
            return _print_status(lay, args.json)
        elif args.command == "kubeconfig":
            path = lay.operator_kubeconfig if args.operator else lay.admin_kubeconfig
            if not path.exists():
                raise DevClusterError("the dev cluster is not running: run `scripts/dev-cluster up`")
            print(path)
        elif args.command == "logs":
            ran = [name for name in _LOGGED if name in layout.BINARIES or lay.log(name).exists()]
            for name in [args.component] if args.component else ran:
                print(f"--- {lay.log(name)}\n{tail(lay.log(name))}")
        elif args.command == "kwok-reaper":
            reaper.run(kwok.admin_api(lay))
        elif args.action == "up":
            print(scheduler.up(lay, args.config, args.verbosity))
        else:
            scheduler.down(lay)
    except DevClusterError as error:
        print(f"dev-cluster: error: {error}", file=sys.stderr)
        return error.exit_code
    return 0
