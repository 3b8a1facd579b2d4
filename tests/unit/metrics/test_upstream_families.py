"""Our registry against kube-scheduler v1.36.3's metric families, as generated from the pinned
source by ``hack/upstream_metrics.py`` into ``upstream_families.json``.

Every upstream family is either served with upstream's name, type, labels (in upstream's
order), buckets and help (stability prefix included), or listed in ``NOT_SERVED`` with the
reason, and that reason is in the table of ``docs/observability.md``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from scheduler_core.metrics.registry import Histogram
from scheduler_core.metrics.scheduler_metrics import NOT_SERVED, SchedulerMetrics
from tests.unit.scheduling.support import make_scheduler

ROOT = Path(__file__).resolve().parents[3]
JSON = Path(__file__).with_name("upstream_families.json")
UPSTREAM: list[dict[str, Any]] = json.loads(JSON.read_text())["families"]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("upstream_metrics", ROOT / "hack" / "upstream_metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_json_is_what_the_pinned_source_gives() -> None:
    generator = _generator()
    root = generator.module_dir()
    if root is None:
        pytest.skip("k8s.io/kubernetes@v1.36.3 is not in the Go module cache (scripts/dev-cluster build)")
    assert generator.render(generator.generate(root)) == JSON.read_text(), "run python hack/upstream_metrics.py"


def test_the_json_holds_the_families_we_know_of() -> None:
    names = {f["name"] for f in UPSTREAM}
    always = {f["name"] for f in UPSTREAM if f["feature_gate"] is None}
    assert len(names) == len(UPSTREAM) == 37
    assert "scheduler_pending_pods" in always and "scheduler_inflight_events" not in always
    assert len([n for n in always if not n.startswith("scheduler_volume_")]) == 22  # metricsList


def _registry() -> dict[str, Any]:
    metrics = SchedulerMetrics()
    make_scheduler({}, metrics=metrics)  # the scheduler and its queue register their collected gauges
    return {name: metrics.registry.get(name) for name in metrics.registry.names()}


@pytest.mark.parametrize("upstream", UPSTREAM, ids=[f["name"] for f in UPSTREAM])
def test_each_upstream_family_is_served_as_upstream_or_said_why_not(upstream: dict[str, Any]) -> None:
    name = upstream["name"]
    families = _registry()
    if name in NOT_SERVED:
        assert name not in families
        assert NOT_SERVED[name]
        return
    assert name in families, f"{name} is neither served nor in NOT_SERVED"
    family = families[name]
    assert family.kind == upstream["type"]
    assert list(family.labelnames) == upstream["labels"]
    assert family.help == f"[{upstream['stability']}] {upstream['help']}"
    if upstream["type"] == "histogram":
        assert isinstance(family, Histogram)
        assert list(family.bounds) == upstream["buckets"]


def test_not_served_names_only_upstream_families_and_the_docs_say_why() -> None:
    assert set(NOT_SERVED) <= {f["name"] for f in UPSTREAM}
    docs = (ROOT / "docs" / "observability.md").read_text()
    for name in NOT_SERVED:
        assert f"`{name}`" in docs, f"docs/observability.md does not say why {name} is not served"


def test_our_own_families_are_ours() -> None:
    ours = {name for name in _registry() if not name.startswith("scheduler_")}
    assert ours == {
        "crd_scheduler_build_info",
        "crd_scheduler_profile_reloads_total",
        "crd_scheduler_profile_reload_duration_seconds",
        "crd_scheduler_profile_serving",
        "crd_scheduler_profile_refused",
        "crd_scheduler_held_pods",
    }
