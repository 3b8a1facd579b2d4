"""The sample out-of-tree plugin (``tests/sample_plugin``), pip-installed by ``make install``,
is found through the real ``crd_scheduler.plugins`` entry-point group and used from a
SchedulerProfile by ``crd-scheduler simulate`` run as a user runs it."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.integration.test_simulate_cli import HOME, PROFILE_API, cli, write
from tests.wrappers import node, pod

SAMPLE = "SampleNodeLabel"
KEY = "sample.crd-scheduler.io/pool"


PROFILE: dict[str, Any] = {
    "apiVersion": PROFILE_API,
    "kind": "SchedulerProfile",
    "metadata": {"name": "sample", "namespace": HOME},
    "spec": {
        "schedulerName": "crd-scheduler",
        "plugins": {"multiPoint": {"enabled": [{"name": SAMPLE, "weight": 50}]}},
        "pluginConfig": [{"name": SAMPLE, "args": {"preferredValues": ["silver", "gold"]}}],
    },
}


def test_the_sample_plugin_is_installed_through_the_entry_point_group() -> None:
    entries = {e.name: e.value for e in metadata.entry_points(group="crd_scheduler.plugins")}
    assert entries.get(SAMPLE) == "crd_scheduler_sample.node_label:NodeLabel"


def test_simulate_uses_the_out_of_tree_plugin_from_a_scheduler_profile(tmp_path: Path) -> None:
    manifests = write(
        tmp_path / "cluster.yaml",
        node("gold-1", memory="8Gi", labels={KEY: "gold"}),
        node("silver-1", memory="8Gi", labels={KEY: "silver"}),
        node("plain-1", memory="8Gi"),
        pod("web-1", cpu="100m", memory="64Mi"),
        pod("web-2", cpu="100m", memory="64Mi"),
        PROFILE,
    )
    done = cli("simulate", "-f", manifests, "-o", "json")
    assert done.returncode == 0, done.stderr
    pods = {p["name"]: p for p in json.loads(done.stdout)["pods"]}
    for name in ("web-1", "web-2"):
        entry = pods[name]
        assert entry["profile"] == f"{HOME}/sample"
        # Its Filter keeps the unlabelled node out; its Score (weight 50) prefers silver.
        assert entry["node"] == "silver-1"
        assert entry["filtered"] == {"plain-1": [f"node(s) didn't have the label {KEY}"]}
        assert entry["scores"]["silver-1"][SAMPLE] == 100 * 50
        assert entry["scores"]["gold-1"][SAMPLE] == 50 * 50


def test_bad_args_for_the_out_of_tree_plugin_name_the_plugin_and_field(tmp_path: Path) -> None:
    bad = {**PROFILE, "spec": {**PROFILE["spec"], "pluginConfig": [{"name": SAMPLE, "args": {"key": ""}}]}}
    manifests = write(tmp_path / "bad.yaml", node("n", memory="8Gi", labels={KEY: "gold"}), bad)
    done = cli("simulate", "-f", manifests)
    assert done.returncode == 2
    assert f"SchedulerProfile {HOME}/sample: spec.pluginConfig[0].args.key: plugin '{SAMPLE}'" in done.stderr
