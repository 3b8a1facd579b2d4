"""The options and the snapshot shared by the verbs that read a live cluster (read-only).

``explain`` and ``simulate --from-cluster`` take credentials as kubectl does and the operator's
home namespace (whose profiles apply cluster-wide). The snapshot is taken here, once; a failure
to reach the server or to read its objects is a clear ``error:`` line, never a traceback.

The snapshot's modules (``cli.snapshot``, the transport, the ``kubernetes`` package) are imported
by :func:`take`, not with this module: the parser of every verb is built from here, and a verb
that reads no cluster (``simulate`` from files) starts without them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from scheduler_core.simulator import DEFAULT_HOME_NAMESPACE, Cluster
from scheduler_operator.io.kube import ApiError

HOME_NAMESPACE_ENV = "CRD_SCHEDULER_HOME_NAMESPACE"
EXIT_UNREACHABLE = 4


def add_home_namespace(parser: argparse.ArgumentParser, what: str) -> None:
    """``--home-namespace``: ``what`` it is; by default from the environment, as the operator's."""
    parser.add_argument(
        "--home-namespace", default=os.environ.get(HOME_NAMESPACE_ENV) or DEFAULT_HOME_NAMESPACE, metavar="NS",
        help=f"{what} (env {HOME_NAMESPACE_ENV}; {DEFAULT_HOME_NAMESPACE})",
    )  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", default=None, metavar="FILE", help="kubeconfig (KUBECONFIG, ~/.kube/config)")
    parser.add_argument("--context", default=None, metavar="NAME", help="kubeconfig context (the current one)")
    add_home_namespace(parser, "the operator's home namespace, whose profiles apply cluster-wide")
    parser.add_argument(
        "--seed", type=int, default=0, metavar="N", help="seed of the random choice among equally scored nodes (0)"
    )


def take(args: argparse.Namespace) -> Cluster | int:
    """The snapshot, or the exit code after saying why there is none (objects the manifest
    checks refuse raise ``InputError``, which ``command.main`` reports)."""
    from kubernetes import config

    from scheduler_operator.cli import snapshot

    try:
        credentials = snapshot.credentials(args.kubeconfig, args.context)
    except (config.ConfigException, OSError) as exc:
        print(f"error: credentials: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    try:
        return asyncio.run(snapshot.take(credentials, home_namespace=args.home_namespace))
    except (ApiError, OSError) as exc:  # OSError: kube.CONNECTION_ERRORS, a lost connection, a time-out, TLS
        detail = f"{exc.status} {exc.reason}" if isinstance(exc, ApiError) else exc
        print(f"error: {credentials.server}: {detail}", file=sys.stderr)
        return EXIT_UNREACHABLE
