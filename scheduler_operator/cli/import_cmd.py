"""``crd-scheduler import-config KUBE_SCHEDULER_CONFIG.yaml``: migrate from kube-scheduler.

Prints the SchedulerProfiles (``scheduler_core.importconfig``) as multi-document YAML for
``kubectl apply -f -`` or a GitOps repository; every field without an equivalent is a
``warning:`` line on stderr. The profiles are built as the operator would build them before
anything is printed: what would not serve is an error, not a surprise after applying.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from scheduler_core.importconfig import ConfigImportError, convert
from scheduler_core.runtime.registry import default_registry
from scheduler_core.simulator import load_lists, simulate
from scheduler_operator.cli.live import add_home_namespace
from scheduler_operator.cli.output import EXIT_BAD_INPUT, EXIT_OK, emit, warn


def add_parser(verbs: Any) -> None:
    parser = verbs.add_parser(
        "import-config",
        help="turn a kube-scheduler KubeSchedulerConfiguration (v1) into SchedulerProfiles",
        description="Print one SchedulerProfile per profile of the configuration (plugins, pluginConfig, "
        "percentageOfNodesToScore), in the home namespace, ready for kubectl apply. Anything without an "
        "equivalent is a warning on stderr.",
    )
    parser.add_argument("config", metavar="KUBE_SCHEDULER_CONFIG", help="the configuration file, or - for stdin")
    add_home_namespace(parser, "namespace of the profiles: the operator's home, where they apply cluster-wide")
    parser.add_argument(
        "--take-over-default-scheduler", action="store_true",
        help="keep a profile for default-scheduler (kube-scheduler's name, of every pod that names no scheduler) "
        "under that name; without it the profile serves crd-scheduler instead. Only once kube-scheduler is off "
        "(docs/deploy.md: As the cluster's only scheduler)",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        text = sys.stdin.read() if args.config == "-" else Path(args.config).read_text(encoding="utf-8")
        config = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        print(f"error: {args.config}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    registry = default_registry()
    try:
        imported = convert(
            config,
            namespace=args.home_namespace,
            registry=registry,
            source=args.config,
            take_over_default_scheduler=args.take_over_default_scheduler,
        )
        built = load_lists(args.config, {"SchedulerProfile": imported.objects}, home_namespace=args.home_namespace)
        simulate(built, home_namespace=args.home_namespace, registry=registry)  # builds every profile, or says why
    except ConfigImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    warn(imported.warnings)
    emit(yaml.safe_dump_all(imported.objects, sort_keys=False).rstrip())
    return EXIT_OK
