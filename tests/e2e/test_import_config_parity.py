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

from bench.parity.cli import report
from bench.parity.harness import Harness, Summary
from bench.parity.kube import ClusterUnavailable
from bench.parity.profile import ProfilePair
from scheduler_core.importconfig import convert
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
        imported = convert(config, namespace="crd-scheduler", registry=registry, source=path.name)
        for i, (upstream, ours) in enumerate(zip(config.get("profiles") or [{}], imported.objects, strict=True)):
            upstream = dict(upstream)
            if "percentageOfNodesToScore" not in upstream and "percentageOfNodesToScore" in config:
                upstream["percentageOfNodesToScore"] = config["percentageOfNodesToScore"]
            pair = ProfilePair(upstream, ours["spec"])
            params.append(pytest.param(pair, id=f"{path.stem}-{i}-{ours['metadata']['name']}"))
    return params


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
