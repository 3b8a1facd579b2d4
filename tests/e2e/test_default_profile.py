"""Our default profile against the real kube-scheduler v1.36.3's: the plugin list and weights
that ``kube-scheduler --write-config-to`` dumps (its defaulted KubeSchedulerConfiguration, the
same object ``/configz`` serves) with the default feature gates. They are equal: the same
plugins, in the same order, with the same weights (DynamicResources and NodeDeclaredFeatures
included).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from scheduler_core.defaults import default_plugins
from scheduler_core.plugins.registry import UPSTREAM_DEFAULT_PLUGINS
from scheduler_core.runtime.registry import default_registry
from tests.e2e import Cluster

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def _kube_scheduler() -> Path:
    """The dev cluster's kube-scheduler binary (hack/devcluster layout)."""
    explicit = os.environ.get("CRD_SCHEDULER_DEVCLUSTER_BIN")
    root = Path(os.environ.get("CRD_SCHEDULER_DEVCLUSTER_DIR") or REPO / ".devcluster")
    binary = (Path(explicit) if explicit else root / "bin") / "kube-scheduler"
    if not binary.exists():
        reason = f"no kube-scheduler binary at {binary} (scripts/dev-cluster build)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"e2e: {reason}", pytrace=False)
        pytest.skip(f"e2e: {reason}")
    return binary


def upstream_default_plugins(cluster: Cluster, tmp_path: Path) -> list[tuple[str, int | None]]:
    dump = tmp_path / "kube-scheduler-config.yaml"
    # --secure-port=0: kube-scheduler opens its serving port before it writes the dump, and
    # fails when anything holds 10259 (an operator or a kube-scheduler of another test).
    done = subprocess.run(
        [str(_kube_scheduler()), f"--kubeconfig={cluster.kubeconfig}", "--secure-port=0", f"--write-config-to={dump}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    config = yaml.safe_load(dump.read_text())
    (profile,) = config["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    enabled = profile["plugins"]["multiPoint"]["enabled"]
    return [(p["name"], p.get("weight") or None) for p in enabled]  # weight 0: the plugin does not score


def test_default_profile_is_upstreams(cluster: Cluster, tmp_path: Path) -> None:
    upstream = upstream_default_plugins(cluster, tmp_path)
    ours = [(p.name, p.weight) for p in default_plugins(default_registry(with_out_of_tree=False)).enabled]

    assert ours == upstream  # same plugins, order and weights
    assert ("DynamicResources", 2) in ours
    assert list(UPSTREAM_DEFAULT_PLUGINS) == upstream  # the recorded list is upstream's, in full
