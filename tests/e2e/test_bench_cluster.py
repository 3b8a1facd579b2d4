"""``python -m bench.suite --mode cluster`` on the dev cluster: upstream's init pods placed by
each side before its measured pods, and each side's pods gone before the other's turn."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.scheduler_perf import cluster, config

pytestmark = pytest.mark.usefixtures("cluster")


def _variant(name: str, variant: str, **params: int) -> config.Variant:
    (case,) = [c for c in config.load(config.scheduler_perf_root()) if c.name == name]
    (chosen,) = [v for v in case.variants if v.name == variant]
    return config.with_params(chosen, params)


def test_each_side_places_the_init_pods_before_its_measured_ones(tmp_path: Path) -> None:
    # SchedulingPodAntiAffinity/500Nodes, shrunk: one pod per node (hostname anti-affinity).
    variant = _variant("SchedulingPodAntiAffinity", "500Nodes", initNodes=8, initPods=3, measurePods=4)
    result = cluster.run(variant, modes={"stream": False, "backlog": True}, log_dir=tmp_path)
    assert result["init_pods"] == 3
    for mode in ("stream", "backlog"):
        ours, theirs = result[mode]["crd_scheduler"], result[mode]["kube_scheduler"]
        assert (ours["bound"], theirs["bound"]) == (4, 4), result
        # The operator's log holds 3 + 4 bindings: the init pods were its own.
        assert ours["bound_by_operator"] == 4, result
