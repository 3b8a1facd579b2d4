"""``kube-scheduler up|down``: the real kube-scheduler against the dev cluster, to compare with.

It runs as ``system:kube-scheduler`` (kubeconfig-scheduler, the bootstrap RBAC identity) unless
the given KubeSchedulerConfiguration names its own ``clientConnection.kubeconfig``. Leader
election is switched off when the configuration does not mention it, so a restart does not wait
for the previous lease to expire. Serving (health, metrics) is on 127.0.0.1 only.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from pathlib import Path
from typing import Any

from . import process
from .api import wait_until
from .cluster import gate_flags, healthy, tracked
from .errors import DevClusterError
from .layout import SCHEDULER, Layout
from .ui import say, tail

_DEFAULT_CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def _load(path: Path | None) -> dict[str, Any]:
    if path is None:
        return dict(_DEFAULT_CONFIG)
    text = path.read_text()
    try:
        import yaml  # optional: only this subcommand reads YAML, the rest is stdlib-only
    except ImportError:
        try:
            loaded = json.loads(text)
        except ValueError as error:
            raise DevClusterError(f"{path}: reading a YAML config needs PyYAML (pip install pyyaml)") from error
    else:
        loaded = yaml.safe_load(text)
    if not isinstance(loaded, dict) or loaded.get("kind") != "KubeSchedulerConfiguration":
        raise DevClusterError(f"{path} is not a KubeSchedulerConfiguration")
    return loaded


def _complete(config: dict[str, Any], lay: Layout) -> dict[str, Any]:
    connection = config.setdefault("clientConnection", {})
    connection.setdefault("kubeconfig", str(lay.kubeconfig_for(SCHEDULER)))
    config.setdefault("leaderElection", {"leaderElect": False})
    return config


def _folder(lay: Layout) -> Path:
    return lay.run / SCHEDULER


def _running(lay: Layout) -> process.Tracked | None:
    found = tracked(lay, (SCHEDULER,))
    return found[0] if found and found[0].alive else None


def up(lay: Layout, config_path: Path | None, verbosity: int | None) -> Path:
    if not healthy(lay):
        raise DevClusterError("the dev cluster is not running: run `scripts/dev-cluster up` first")
    folder = _folder(lay)
    folder.mkdir(exist_ok=True)
    config = folder / "config.json"  # JSON is YAML; kube-scheduler reads either
    config.write_text(json.dumps(_complete(_load(config_path), lay), indent=2) + "\n")
    port = process.free_ports(1)[0]
    kubeconfig = str(lay.kubeconfig_for(SCHEDULER))
    argv = [
        str(lay.binary(SCHEDULER)),
        f"--config={config}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={folder / 'serving'}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        *gate_flags(lay),  # the gates the cluster runs with (GangScheduling...)
    ]
    if verbosity is not None:
        argv.append(f"--v={verbosity}")
    previous = _running(lay)
    if previous is not None:
        say(f"restarting kube-scheduler (pid {previous.pid}) with {config_path or 'the default config'}")
        process.stop(previous, lay.pidfile(SCHEDULER))
    log = lay.log(SCHEDULER)
    log.unlink(missing_ok=True)
    started = process.start(SCHEDULER, argv, log=log, pidfile=lay.pidfile(SCHEDULER), cwd=folder)
    unverified = ssl._create_unverified_context()  # its serving cert is self-signed; this is a liveness probe

    def serving() -> bool:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", context=unverified, timeout=5) as answer:
            return bool(answer.status == 200)

    try:
        wait_until("kube-scheduler /healthz", serving, timeout=60, alive=lambda: None if started.alive else SCHEDULER)
    except (RuntimeError, TimeoutError) as error:
        raise DevClusterError(f"{error}; last lines of {log}:\n{tail(log)}") from error
    (folder / "port").write_text(f"{port}\n")
    say(f"kube-scheduler running (pid {started.pid}), health on https://127.0.0.1:{port}/healthz")
    return log


def down(lay: Layout) -> None:
    for item in tracked(lay, (SCHEDULER,)):
        if item.alive:
            say(f"stopping kube-scheduler (pid {item.pid})")
        process.stop(item, lay.pidfile(SCHEDULER))
