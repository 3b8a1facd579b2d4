"""``import-config`` round trip: each profile of the real-world KubeSchedulerConfigurations in
tests/data/kube-scheduler-config, run by the real kube-scheduler v1.36.3, and the
SchedulerProfile ``import-config`` made of it, run by ``simulate``, agree on fixed-seed
parity scenarios: feasibility, filter reasons, every plugin's weighted score per node.

The parity harness (``bench/parity``) runs its own dev cluster and its own kube-scheduler with
the profile under test (schedulerName ``parity-scheduler``), never the shared one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.parity_harness.cli import report
from bench.parity_harness.harness import Harness, Summary
from bench.parity_harness.kube import ClusterUnavailable
from bench.parity_harness.profile import ProfilePair
from scheduler_core.importconfig import UPSTREAM_GATED_DEFAULTS, convert
from scheduler_core.runtime.registry import default_registry

pytestmark = pytest.mark.e2e

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "kube-scheduler-config"
FIRST_SEED = 101
SCENARIOS = 3  # per profile; python bench/parity.py runs more


def _pairs() -> list[Any]:
    registry = default_registry()
    params = []
    for path in sorted(CONFIGS.glob("*.yaml")):
        config = yaml.safe_load(path.read_text())
        imported = convert(
            config, namespace="crd-scheduler", registry=registry, source=path.name, take_over_default_scheduler=True
        )
        for i, (upstream, ours) in enumerate(zip(config.get("profiles") or [{}], imported.objects, strict=True)):
            upstream = _without_plugins_we_lack(upstream)
            if "percentageOfNodesToScore" not in upstream and "percentageOfNodesToScore" in config:
                upstream["percentageOfNodesToScore"] = config["percentageOfNodesToScore"]
            pair = ProfilePair(upstream, ours["spec"])
            params.append(pytest.param(pair, id=f"{path.stem}-{i}-{ours['metadata']['name']}"))
    return params


def _without_plugins_we_lack(profile: dict[str, Any]) -> dict[str, Any]:
    """kube-scheduler's side of the comparison: its gated default plugins this build lacks are
    disabled (``import-config`` warns of them: our defaults are upstream's without them)."""
    registry = default_registry()
    plugins = dict(profile.get("plugins") or {})
    multi_point = dict(plugins.get("multiPoint") or {})
    missing = [{"name": n} for n in UPSTREAM_GATED_DEFAULTS if n not in registry]
    multi_point["disabled"] = [*(multi_point.get("disabled") or []), *missing]
    return {**profile, "plugins": {**plugins, "multiPoint": multi_point}}


@pytest.mark.parametrize("pair", _pairs())
def test_imported_profile_schedules_as_kube_scheduler_does(pair: ProfilePair) -> None:
    try:
        with Harness(pair=pair) as harness:
            summary = Summary([harness.run(FIRST_SEED + i) for i in range(SCENARIOS)])
    except ClusterUnavailable as error:
        if not error.toolchain_missing or os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"e2e: no dev cluster: {error}")
    lines = report(summary, show=20, seconds=0.0, out=None)
    assert summary.agreed == SCENARIOS, "\n".join(lines)
