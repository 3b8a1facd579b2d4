"""``explain: Annotate``: the pods a profile binds carry the compact explanation, once."""

from __future__ import annotations

import json

import pytest

from scheduler_core.explanation import ANNOTATION
from scheduler_core.simulator import simulate
from tests.unit.simulator.support import load, profile
from tests.wrappers import node, pod

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def _annotations(explain: str | None, *pods: dict[str, object]) -> dict[str, dict[str, str]]:
    spec = {"schedulerName": "crd-scheduler"} | ({"explain": explain} if explain else {})
    cluster = load(
        node("n1", cpu="2"), node("n2", cpu="4"), node("n3", cpu="8", taints=[TAINT]), node("n4", cpu="500m"),
        profile("default", **spec), *pods,
    )  # fmt: skip
    result = simulate(cluster)
    return {p["metadata"]["name"]: (p["metadata"].get("annotations") or {}) for p in result.cluster.pods.values()}


def test_annotate_records_scores_runner_up_and_filter_reasons() -> None:
    annotations = _annotations("Annotate", pod("web", cpu="1"))
    data = json.loads(annotations["web"][ANNOTATION])
    assert data["node"] == "n2"
    assert data["runnerUp"]["node"] == "n1" and data["runnerUp"]["total"] < data["total"]
    assert data["total"] == sum(data["scores"].values())
    assert set(data["scores"]) >= {"NodeResourcesFit", "TaintToleration"}
    assert data["filtered"] == {"node(s) had untolerated taint(s)": 1, "Insufficient cpu": 1}
    assert (data["feasible"], data["evaluated"]) == (2, 4)
    assert ", " not in annotations["web"][ANNOTATION] and ": " not in annotations["web"][ANNOTATION]  # compact


def test_one_feasible_node_has_no_scores() -> None:
    data = json.loads(_annotations("Annotate", pod("big", cpu="3"))["big"][ANNOTATION])
    assert data["node"] == "n2" and "scores" not in data and "runnerUp" not in data
    assert data["feasible"] == 1


@pytest.mark.parametrize("explain", [pytest.param(None, id="unset"), pytest.param("Off", id="off")])
def test_off_by_default(explain: str | None) -> None:
    assert _annotations(explain, pod("web", cpu="1"))["web"] == {}
