"""scripts/conformance: ginkgo's JSON report read spec by spec, and the claim the table checks
(crd-scheduler passes where kube-scheduler does, within 1.5x its time plus 10 s)."""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _load(name: str) -> ModuleType:
    """The harness's modules (hack/conformance, beside hack/devcluster: scripts, not the package)."""
    for folder in ("devcluster", "conformance"):
        if str(ROOT / "hack" / folder) not in sys.path:
            sys.path.append(str(ROOT / "hack" / folder))
    return importlib.import_module(f"conformance.{name}")


report: Any = _load("report")
selections: Any = _load("selections")

PREDICATES = "[sig-scheduling] SchedulerPredicates [Serial]"


def _spec(leaf: str, state: str, seconds: float, message: str = "", kind: str = "It") -> dict[str, Any]:
    return {
        "ContainerHierarchyTexts": [PREDICATES],
        "LeafNodeText": leaf,
        "LeafNodeType": kind,
        "State": state,
        "RunTime": int(seconds * 1e9),
        "Failure": {"Message": message} if message else {},
    }


def _write(tmp_path: Path, name: str, specs: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps([{"SuiteDescription": "Kubernetes e2e suite", "SpecReports": specs}]))
    return path


def test_rows_are_the_specs_that_ran_or_skipped_themselves(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "kube",
        [
            _spec("validates that NodeSelector is respected if matching [Conformance]", "passed", 12.4),
            _spec("some [sig-storage] spec the focus left out", "skipped", 0),
            _spec("needs 2 zones", "skipped", 0.1, "Requires at least 2 zones\nmore"),
            _spec("", "passed", 3, kind="SynchronizedBeforeSuite"),
            _spec("", "failed", 3, "nodes not ready", kind="SynchronizedBeforeSuite"),
        ],
    )
    found = report.outcomes(path)
    assert found == {
        f"{PREDICATES} validates that NodeSelector is respected if matching [Conformance]": report.Outcome(
            "passed", 12.4
        ),
        f"{PREDICATES} needs 2 zones": report.Outcome("skipped", 0.1, "Requires at least 2 zones"),
        PREDICATES: report.Outcome("failed", 3.0, "nodes not ready"),
    }


@pytest.mark.parametrize(
    ("kube", "crd", "broken"),
    [
        pytest.param(("passed", 20.0), ("passed", 40.0), "", id="within-1.5x-plus-10s"),
        pytest.param(("passed", 20.0), ("passed", 40.5), "took 40 s > 40 s", id="slower"),
        pytest.param(("passed", 20.0), ("failed", 5.0), "crd-scheduler failed where kube-scheduler passed", id="fails"),
        pytest.param(("failed", 20.0), ("failed", 90.0), "", id="both-fail"),
        pytest.param(("passed", 1.0), None, "crd-scheduler missing", id="missing"),
    ],
)
def test_the_claim_per_row(kube: tuple[str, float], crd: tuple[str, float] | None, broken: str) -> None:
    results = {
        "kube-scheduler": {"spec": report.Outcome(*kube)},
        "crd-scheduler": {"spec": report.Outcome(*crd)} if crd else {},
    }
    text, rows = report.table(results)
    assert [line for line in text.splitlines() if line.startswith("| spec")]
    if broken:
        assert len(rows) == 1 and broken in rows[0]
        assert "**(!)**" in text
    else:
        assert rows == []


def test_workloads_leave_out_what_kwok_cannot_serve() -> None:
    workloads = selections.SELECTIONS["workloads"]
    skip = re.compile(workloads.skip_regex())
    focus = re.compile(workloads.focus)
    served = "[sig-apps] ReplicaSet Replicaset should have a working scale subresource [Conformance]"
    unserved = "[sig-apps] ReplicaSet should serve a basic image on each replica with a public image [Conformance]"
    assert focus.search(served) and not skip.search(served)
    assert focus.search(unserved) and skip.search(unserved)
    assert all(reason for reason in workloads.unserved.values())


def test_the_scheduling_selections() -> None:
    conformance = selections.SELECTIONS["scheduling-conformance"]
    spec = "[sig-scheduling] SchedulerPreemption [Serial] validates basic preemption works [Conformance]"
    assert re.search(conformance.focus, spec) and not re.search(conformance.skip_regex(), spec)
    gated = "[sig-scheduling] SchedulerPreemption [Serial] validates ... [Feature:SchedulerAsyncPreemption]"
    assert re.search(selections.SELECTIONS["scheduling"].skip_regex(), gated)
    assert re.search(selections.SELECTIONS["gated"].focus, gated)


def test_gated_runs_on_nodes_the_async_preemption_spec_can_poll_within_its_victims_prestop() -> None:
    """The spec polls 10 victims and 5 high-priority pods per node one by one, a second or more
    each, all within the victims' 79 s preStop sleep (test/e2e/scheduling/preemption.go)."""
    assert selections.SELECTIONS["gated"].nodes * (10 + 5) <= 79 - 30  # room for a loaded machine
    assert selections.SELECTIONS["scheduling"].nodes == 10
