"""``crd-scheduler explain POD [-n NS]``: one scheduling cycle of a live pod, read-only.

The snapshot (``live.take``) is scheduled in-process by ``scheduler_core.simulator.explain``
with the pod's live profile, resolved as the operator resolves it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from scheduler_core.simulator.explain import explain, render_text
from scheduler_core.simulator.html import render_explanation
from scheduler_operator.cli import live
from scheduler_operator.cli.output import EXIT_OK, emit, warn


def add_parser(verbs: Any) -> None:
    parser = verbs.add_parser(
        "explain",
        help="why a live pod goes where it goes, or stays pending (read-only)",
        description="Snapshot the live cluster (list calls only), run one scheduling cycle of POD with its live "
        "profile in-process, and print per-node filter reasons, per-plugin weighted scores of the top nodes, the "
        "chosen node or the FailedScheduling message, and what preemption would do. A bound pod is explained as "
        "if placed again now.",
    )
    parser.add_argument("pod", metavar="POD", help="the pod's name")
    parser.add_argument("-n", "--namespace", default="default", metavar="NS", help="the pod's namespace (default)")
    parser.add_argument("-o", "--output", choices=("text", "json", "html"), default="text", help="(text)")
    parser.add_argument("--top", type=_positive, default=5, metavar="N", help="nodes whose scores are shown (5)")
    live.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    cluster = live.take(args)
    if isinstance(cluster, int):
        return cluster
    explanation = explain(cluster, args.namespace, args.pod, seed=args.seed, home_namespace=args.home_namespace)
    warn(explanation.warnings)
    if args.output == "json":
        emit(json.dumps({"pods": [explanation.to_json()]}, indent=2))
    elif args.output == "html":
        emit(render_explanation(explanation))
    else:
        emit(render_text(explanation, top=args.top))
    return EXIT_OK


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value
