"""The ``crd-scheduler`` command line: a few verbs, each obvious.

``simulate`` reads manifests and runs the scheduler over an in-memory cluster; ``validate``
checks SchedulerProfiles and PluginConfigs with the operator's rules; ``run`` starts
the operator (``scheduler_operator.control.app``). Exit codes: 0 done (a pod that does not fit
is a result, not a failure),
2 bad input or usage (with one ``error: file: Kind ns/name: field: reason`` line per problem
on stderr, never a traceback), 4 a live cluster not reachable (``cli.live``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from scheduler_core import version
from scheduler_core.simulator import DEFAULT_HOME_NAMESPACE, InputError, load_files, render_json, render_table
from scheduler_core.simulator import simulate as run_simulation
from scheduler_core.simulator.html import render_simulation
from scheduler_core.simulator.usage import node_usage
from scheduler_core.simulator.validate import validate_files
from scheduler_operator.cli import explain_cmd, import_cmd, logs, whatif_cmd
from scheduler_operator.cli.live import add_home_namespace
from scheduler_operator.cli.output import EXIT_BAD_INPUT, EXIT_OK, emit, errors, warn
from scheduler_operator.control.options import (
    DEFAULT_LIVENESS,
    ElectionConfig,
    Options,
    SecureServingOptions,
    ServingOptions,
    WebhookOptions,
    default_identity,
    seconds,
)
from scheduler_operator.io.calls import (
    DEFAULT_BURST,
    DEFAULT_CRITICAL_LIMIT,
    DEFAULT_QPS,
    DEFAULT_REPORTS_LIMIT,
    lane_limits,
)
from scheduler_operator.io.kube import KubeconfigSource
from scheduler_operator.resources import DEFAULT_LEASE_NAME

DEFAULT_LISTEN = "127.0.0.1:8888"
EXAMPLES = ("cluster", "profiles")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crd-scheduler",
        description="A Kubernetes scheduler whose profiles are custom resources.",
    )
    parser.add_argument("--version", action="version", version=version.describe())
    verbs = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ver = verbs.add_parser(
        "version",
        help="print the version, and the kube-scheduler version whose behaviour this one matches",
        description="Print crd-scheduler's version, the kube-scheduler release whose scores, filter reasons, "
        "messages and metrics it matches, and the Python version.",
    )
    ver.add_argument("-o", "--output", choices=("text", "json"), default="text", help="output format (text)")
    ver.set_defaults(handler=_version)

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
    sim.add_argument(
        "--example", action="append", nargs="?", const="cluster", choices=EXAMPLES, default=[], metavar="NAME",
        help="add a manifest that ships with the package, as -f does: cluster (the default; the README's "
        "example: nodes and pending pods) or profiles (two SchedulerProfiles for it); repeatable",
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

    check = verbs.add_parser(
        "validate",
        help="check SchedulerProfiles and PluginConfigs with the operator's rules, offline (for GitOps CI)",
        description="Read SchedulerProfiles and PluginConfigs from files or directories (recursively; other "
        "kinds are passed over) and check them as the API server and the operator would. Exit 0 when all are "
        "valid, 2 with one line per problem otherwise.",
    )
    check.add_argument(
        "-f", "--filename", action="append", required=True, metavar="PATH",
        help="manifest file (YAML or JSON), directory (searched recursively), or - for stdin; repeatable",
    )  # fmt: skip
    check.add_argument(
        "-o", "--output", choices=("text", "github"), default="text",
        help="text (one line per problem) or github (workflow annotations for pull requests)",
    )  # fmt: skip
    check.add_argument(
        "--home-namespace", default=DEFAULT_HOME_NAMESPACE, metavar="NS",
        help=f"the operator's home namespace; objects without a namespace go there ({DEFAULT_HOME_NAMESPACE})",
    )  # fmt: skip
    check.add_argument(
        "--allow-empty", action="store_true",
        help="exit 0 when the files hold no SchedulerProfile or PluginConfig (by default that is an error: "
        "a wrong path must not pass CI)",
    )  # fmt: skip
    check.set_defaults(handler=_validate)

    run = verbs.add_parser(
        "run",
        help="run the operator: watch SchedulerProfiles, PluginConfigs, nodes and pods; schedule while leading",
        description="Run the operator with the credentials a Kubernetes client finds (in-cluster service account, "
        "else KUBECONFIG). Every replica keeps its caches warm; the holder of the Lease schedules.",
    )
    add_home_namespace(run, "namespace whose profiles apply cluster-wide, and of the Lease")
    run.add_argument(
        "--kubeconfig", default=None, metavar="FILE",
        help="kubeconfig file, as kubectl's flag (default: in-cluster service account, else KUBECONFIG)",
    )  # fmt: skip
    run.add_argument("--context", default=None, metavar="NAME", help="kubeconfig context (the current one)")
    run.add_argument("--lease-name", default=DEFAULT_LEASE_NAME, metavar="N", help=f"the Lease ({DEFAULT_LEASE_NAME})")
    run.add_argument(
        "--identity", default=None, metavar="ID",
        help="this replica's name in the Lease (env POD_NAME, else hostname_uuid)",
    )  # fmt: skip
    run.add_argument(
        "--liveness", default=DEFAULT_LIVENESS, metavar="URL",
        help="Kopf's own liveness endpoint, e.g. http://127.0.0.1:8080/healthz (off unless given; /healthz on "
        "--port supersedes it)",
    )  # fmt: skip
    _serving_flags(run)
    election = ElectionConfig()
    for flag, default, what in (
        ("--lease-duration", election.lease_duration, "how long a lease lasts unrenewed"),
        ("--renew-deadline", election.renew_deadline, "how long the leader retries renewing before it stops"),
        ("--retry-period", election.retry_period, "time between two tries to acquire or renew"),
    ):
        run.add_argument(flag, type=seconds, default=default, metavar="DURATION", help=f"{what} ({default:g}s)")
    run.add_argument(
        "--max-in-flight", type=int, default=DEFAULT_CRITICAL_LIMIT, metavar="N",
        help=f"API requests in flight for binding and preemption ({DEFAULT_CRITICAL_LIMIT}), and again for reports "
        f"(at most {DEFAULT_REPORTS_LIMIT})",
    )  # fmt: skip
    run.add_argument(
        "--kube-api-qps", type=float, default=DEFAULT_QPS, metavar="QPS",
        help=f"client-side requests per second to the API server, as kube-scheduler's clientConnection.qps "
        f"({DEFAULT_QPS:g}; 0 or less: no limit)",
    )  # fmt: skip
    run.add_argument(
        "--kube-api-burst", type=int, default=DEFAULT_BURST, metavar="N",
        help=f"requests allowed at once above the QPS, as clientConnection.burst ({DEFAULT_BURST})",
    )  # fmt: skip
    hook = run.add_argument_group("admission webhook (off unless --webhook-port is given)")
    hook.add_argument("--webhook-port", type=int, default=None, metavar="PORT", help="serve the webhook on this port")
    hook.add_argument("--webhook-addr", default="0.0.0.0", metavar="ADDR", help="listen address (0.0.0.0)")
    hook.add_argument("--webhook-cert", metavar="FILE", help="TLS certificate (PEM), e.g. cert-manager's tls.crt")
    hook.add_argument("--webhook-key", metavar="FILE", help="its private key (PEM)")
    hook.add_argument(
        "--webhook-managed", metavar="NAME", default=None,
        help="let Kopf create and keep the ValidatingWebhookConfiguration NAME (needs RBAC for it)",
    )  # fmt: skip
    _logging_flags(run)
    run.set_defaults(handler=_run)

    extender = verbs.add_parser(
        "extender",
        help="serve a profile's plugins as an HTTP extender of a stock kube-scheduler",
        description="Extender mode (docs/extenders.md).",
    )
    extender_verbs = extender.add_subparsers(dest="extender_command", required=True, metavar="VERB")
    serve = extender_verbs.add_parser(
        "serve",
        help="answer kube-scheduler's filter, prioritize, preempt and bind calls with a profile's plugins",
        description="Answer POST /filter, /prioritize, /preempt and /bind (k8s.io/kube-scheduler/extender/v1) "
        "with the plugins of a SchedulerProfile, over a cache that watches nodes and pods (credentials as "
        "Kubernetes clients find them). GET /healthz and /metrics.",
    )
    serve.add_argument(
        "--profile", required=True, metavar="FILE",
        help="a SchedulerProfile manifest (or its bare spec), YAML or JSON",
    )  # fmt: skip
    serve.add_argument("--listen", default=DEFAULT_LISTEN, metavar="ADDR", help=f"HOST:PORT ({DEFAULT_LISTEN})")
    serve.add_argument("--tls-cert", default=None, metavar="FILE", help="serve HTTPS with this certificate (PEM)")
    serve.add_argument("--tls-key", default=None, metavar="FILE", help="the certificate's key (PEM)")
    _logging_flags(serve)
    serve.set_defaults(handler=_extender_serve)
    return parser


def _simulate(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.from_cluster:
        return whatif_cmd.run(args)
    files = [*(str(_example(name)) for name in args.example), *args.filename]
    if not files:
        print("error: simulate: -f/--filename is required (or --example, or --from-cluster)", file=sys.stderr)
        return EXIT_BAD_INPUT
    cluster = load_files(files, home_namespace=args.home_namespace)
    warn(cluster.warnings)
    result = run_simulation(cluster, seed=args.seed, home_namespace=args.home_namespace)
    warn(result.warnings)
    if args.output == "html":
        text = render_simulation(result.pods, node_usage(cluster.nodes, result))
    else:
        text = render_json(result.pods) if args.output == "json" else render_table(result.pods)
    emit(text)
    return EXIT_OK


def _logging_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("logging (scheduler_operator.cli.logs)")
    group.add_argument(
        "--log-format", choices=logs.FORMATS, default="text",
        help="text, or json: one object per line with ts, level, msg and the pod, node and profile (text)",
    )  # fmt: skip
    group.add_argument(
        "-v", "--v", dest="verbosity", type=int, default=None, metavar="N",
        help="upstream's verbosity: 0-3 INFO, 4 and more DEBUG",
    )  # fmt: skip
    group.add_argument(
        "--log-level", default=None, choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="a level, over -v (INFO)"
    )


def _serving_flags(run: argparse.ArgumentParser) -> None:
    """kube-scheduler's secure serving and delegated authn/authz flags (scheduler_operator.control.serving)."""
    secure, plain = SecureServingOptions(), ServingOptions()
    group = run.add_argument_group("/metrics, /healthz, /livez and /readyz (docs/observability.md)")
    group.add_argument(
        "--bind-address", default=secure.bind_address, metavar="ADDR",
        help=f"address of the endpoints ({secure.bind_address})",
    )  # fmt: skip
    group.add_argument(
        "--secure-port", type=int, default=secure.port, metavar="PORT",
        help=f"HTTPS port, with delegated authentication and authorization ({secure.port}; 0: not served)",
    )  # fmt: skip
    group.add_argument(
        "--port", type=int, default=plain.port, metavar="PORT",
        help="plain-HTTP port, NO authentication: only when asked for (0, the default: not served)",
    )  # fmt: skip
    group.add_argument("--tls-cert-file", default=None, metavar="FILE", help="the serving certificate (PEM)")
    group.add_argument("--tls-private-key-file", default=None, metavar="FILE", help="its key (PEM)")
    group.add_argument(
        "--cert-dir", default=None, metavar="DIR",
        help="where the self-signed pair is kept when no --tls-cert-file is given (default: in memory)",
    )  # fmt: skip
    group.add_argument(
        "--authorization-always-allow-paths", default=",".join(secure.always_allow_paths), metavar="PATHS",
        help=f"paths served without authorization, comma-separated ({','.join(secure.always_allow_paths)})",
    )  # fmt: skip
    for flag, default in (
        ("--authentication-token-webhook-cache-ttl", secure.token_cache_ttl),
        ("--authorization-webhook-cache-authorized-ttl", secure.authorized_ttl),
        ("--authorization-webhook-cache-unauthorized-ttl", secure.unauthorized_ttl),
    ):
        group.add_argument(flag, type=seconds, default=default, metavar="DURATION", help=f"({default:g}s)")


def _serving_options(args: argparse.Namespace) -> tuple[ServingOptions | None, SecureServingOptions | None]:
    """The listeners asked for (raises ValueError naming the flag)."""
    for flag, port in (("--port", args.port), ("--secure-port", args.secure_port)):
        if not 0 <= port <= 65535:
            raise ValueError(f"{flag} {port} is not a TCP port (0 to 65535)")
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise ValueError("--tls-cert-file and --tls-private-key-file go together")
    plain = ServingOptions(args.bind_address, args.port) if args.port else None
    secure = None
    if args.secure_port:
        paths = tuple(p.strip() for p in args.authorization_always_allow_paths.split(",") if p.strip())
        secure = SecureServingOptions(
            args.bind_address, args.secure_port, args.tls_cert_file, args.tls_private_key_file, args.cert_dir,
            paths, args.authentication_token_webhook_cache_ttl, args.authorization_webhook_cache_authorized_ttl,
            args.authorization_webhook_cache_unauthorized_ttl,
        )  # fmt: skip
    return plain, secure


def _example(name: str) -> Path:
    """A bundled example (``scheduler_operator/examples``; ``examples/`` links to them)."""
    return Path(str(importlib.resources.files("scheduler_operator") / "examples" / f"{name}.yaml"))


def _version(args: argparse.Namespace) -> int:
    if args.output == "json":
        facts = {
            "version": version.VERSION,
            "kubernetesVersion": version.KUBERNETES_VERSION,
            "pythonVersion": version.PYTHON_VERSION,
        }
        print(json.dumps(facts, indent=2))
    else:
        print(version.describe())
    return EXIT_OK


def _validate(args: argparse.Namespace) -> int:
    from scheduler_operator.cli import annotations

    cluster, problems = validate_files(args.filename, home_namespace=args.home_namespace)
    for problem in problems:
        print(annotations.github(problem) if args.output == "github" else str(problem), flush=True)
    if problems:
        return EXIT_BAD_INPUT
    found = f"{len(cluster.profiles)} SchedulerProfile(s), {len(cluster.plugin_configs)} PluginConfig(s)"
    if not cluster.profiles and not cluster.plugin_configs and not args.allow_empty:
        where = ", ".join(args.filename)
        print(f"error: {where}: no SchedulerProfile or PluginConfig found (--allow-empty to accept)", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"{found}: valid", file=sys.stderr)
    return EXIT_OK


def _run(args: argparse.Namespace) -> int:
    import asyncio

    from scheduler_operator.control import app

    logs.configure(args.log_format, logs.level_of(args.verbosity, args.log_level))
    for noisy in ("kopf.objects", "kopf.activities.probe", "aiohttp.access"):  # a line per event or probe
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        election = ElectionConfig(args.lease_duration, args.renew_deadline, args.retry_period)
        webhook = None
        if args.webhook_port is not None:
            if not args.webhook_cert or not args.webhook_key:
                raise ValueError("--webhook-port needs --webhook-cert and --webhook-key")
            webhook = WebhookOptions(
                args.webhook_port, args.webhook_cert, args.webhook_key, args.webhook_addr, managed=args.webhook_managed
            )
        plain, secure = _serving_options(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    critical_limit, reports_limit = lane_limits(args.max_in_flight)
    options = Options(
        serving=plain,
        secure_serving=secure,
        webhook=webhook,
        home_namespace=args.home_namespace,
        lease_name=args.lease_name,
        identity=args.identity or default_identity(),
        liveness=args.liveness or None,
        election=election,
        critical_limit=critical_limit,
        reports_limit=reports_limit,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        kubeconfig=KubeconfigSource(args.kubeconfig, args.context),
    )
    asyncio.run(app.run(options))
    return EXIT_OK


def _extender_serve(args: argparse.Namespace) -> int:
    import asyncio

    from scheduler_operator.cli import extender_cli

    logs.configure(args.log_format, logs.level_of(args.verbosity, args.log_level))
    try:
        service, host, port, tls = extender_cli.prepare(args.profile, args.listen, args.tls_cert, args.tls_key)
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(extender_cli.run(service, host, port, tls))
    except extender_cli.UsageError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run the verb; bad input it reads (``InputError``: a manifest, a profile, a live object)
    is one ``error:`` line per problem and exit 2, whichever verb met it."""
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except InputError as exc:
        return errors(exc)
    return code
