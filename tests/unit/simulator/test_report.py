"""The report: last attempt per pod, JSON shape, and the table for people."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from scheduler_core.algorithm import ScheduleResult
from scheduler_core.framework import NodeInfo, PodInfo, Status
from scheduler_core.framework.diagnosis import Diagnosis
from scheduler_core.runtime.framework import Framework, ScoreOutcome
from scheduler_core.simulator import PodReport, Recorder, render_json, render_table
from scheduler_core.simulator.report import top_scores
from tests.wrappers import node, pod

FWK = cast(Framework, SimpleNamespace(profile_name="crd-scheduler/default"))


def _result(host: str, names: list[str], weighted: list[list[int]], nodes: list[str]) -> ScheduleResult:
    arrays = [np.array(w, np.int64) for w in weighted]
    totals = np.sum(arrays, axis=0) if arrays else np.ones(len(nodes), np.int64)
    outcome = ScoreOutcome(names, arrays, totals)
    return ScheduleResult(host, len(nodes), len(nodes), outcome, [NodeInfo(node(n)) for n in nodes])


def test_recorder_keeps_weighted_scores_totals_and_filter_reasons_in_node_order() -> None:
    recorder = Recorder(node_order=["a", "b", "c", "t"])
    diagnosis = Diagnosis(node_to_status={"t": Status.unschedulable("node(s) had untolerated taint(s)")})
    result = _result("b", ["TaintToleration", "NodeResourcesFit"], [[300, 300, 300], [10, 75, 40]], ["c", "b", "a"])
    result.diagnosis = diagnosis
    info = PodInfo(pod("web", uid="w"))
    recorder.attempt(info, FWK, status="Scheduled", node="b", message="ok", result=result, diagnosis=diagnosis)
    report = recorder.last["w"]
    assert list(report.scores) == ["a", "b", "c"]
    assert report.scores["b"] == {"TaintToleration": 300, "NodeResourcesFit": 75, "total": 375}
    assert report.scores["a"]["total"] == 340
    assert report.filtered == {"t": ["node(s) had untolerated taint(s)"]}
    assert (report.profile, report.status, report.node, report.attempts) == (
        "crd-scheduler/default",
        "Scheduled",
        "b",
        1,
    )


def test_recorder_keeps_only_the_last_attempt() -> None:
    recorder = Recorder()
    info = PodInfo(pod("web", uid="w"))
    d1 = Diagnosis(node_to_status={"a": Status.unschedulable("Insufficient cpu")})
    recorder.attempt(info, FWK, status="Unschedulable", node=None, message="first", result=None, diagnosis=d1)
    recorder.attempt(info, FWK, status="Scheduled", node="a", message="second",
                     result=ScheduleResult("a", 1, 1), diagnosis=None)  # fmt: skip
    report = recorder.last["w"]
    assert (report.status, report.message, report.scores, report.filtered, report.attempts) == (
        "Scheduled", "second", {}, {}, 2,
    )  # fmt: skip


def test_json_shape_is_exact() -> None:
    report = PodReport(
        "default", "web", "crd-scheduler", "crd-scheduler/default", "Unschedulable", None,
        "0/1 nodes are available: 1 Insufficient cpu.", {}, {"a": ["Insufficient cpu"]},
    )  # fmt: skip
    assert json.loads(render_json([report])) == {
        "pods": [
            {
                "namespace": "default",
                "name": "web",
                "schedulerName": "crd-scheduler",
                "profile": "crd-scheduler/default",
                "status": "Unschedulable",
                "node": None,
                "message": "0/1 nodes are available: 1 Insufficient cpu.",
                "scores": {},
                "filtered": {"a": ["Insufficient cpu"]},
            }
        ]
    }


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        pytest.param({}, [], id="none"),
        pytest.param({"a": {"total": 5}, "b": {"total": 9}}, [("b", 9), ("a", 5)], id="best-first"),
        pytest.param(
            {"a": {"total": 1}, "b": {"total": 3}, "c": {"total": 3}, "d": {"total": 2}},
            [("b", 3), ("c", 3), ("d", 2)],
            id="ties-keep-order-top-three",
        ),
    ],
)
def test_top_scores(scores: dict[str, dict[str, int]], expected: list[tuple[str, int]]) -> None:
    assert top_scores(scores) == expected


def test_table_has_pod_status_node_top_scores_and_reason() -> None:
    reports = [
        PodReport("default", "web-1", "crd-scheduler", "p", "Scheduled", "a", "assigned",
                  {"a": {"X": 10, "total": 10}, "b": {"X": 7, "total": 7}}),
        PodReport("default", "solo", "crd-scheduler", "p", "Scheduled", "a", "assigned"),
        PodReport("ml", "tie", "crd-scheduler", "p", "Scheduled", "b", "…", {"a": {"total": 4}, "b": {"total": 4}}),
        PodReport("default", "huge", "crd-scheduler", "p", "Unschedulable", None,
                  "0/2 nodes are available: 2 Insufficient cpu."),
    ]  # fmt: skip
    lines = render_table(reports).splitlines()
    assert lines[0].split() == ["POD", "STATUS", "NODE", "TOP", "SCORES", "REASON"]
    assert lines[1].split() == ["default/web-1", "Scheduled", "a", "a=10", "b=7", "highest", "score"]
    assert lines[2].split() == ["default/solo", "Scheduled", "a", "-", "only", "feasible", "node"]
    assert lines[3].endswith("highest score (tie among 2 nodes, chosen at random)")
    assert lines[4].split()[:4] == ["default/huge", "Unschedulable", "-", "-"]
    assert lines[4].endswith("0/2 nodes are available: 2 Insufficient cpu.")
    # Columns line up: every row's NODE starts where the header's does.
    column = lines[0].index("NODE")
    assert all(line[column - 1] == " " and line[column] != " " for line in lines)
