"""``python -m bench.timeline`` on an audit log of the real dev cluster's API server.

The file is one run of PartitionableBacktracking ``fast`` on both schedulers
(``CRD_SCHEDULER_DEVCLUSTER_AUDIT_LOG``, 2026-11-30), pod bodies and credential ids left out.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from bench import timeline

LOG = Path(__file__).resolve().parents[2] / "data" / "bench" / "audit-partitionable-backtracking.jsonl"


def pods() -> list[timeline.PodTimeline]:
    with LOG.open() as lines:
        return timeline.read(lines)


def test_each_pod_has_its_claims_and_its_schedulers_writes_in_order() -> None:
    ours, theirs = pods()
    assert (ours.name, theirs.name) == ("test-drabbx98", "test-drantg4s")
    bound = [
        (w.actor, w.verb, w.resource)
        for w in ours.writes[: [w.resource for w in ours.writes].index("pods/binding") + 1]
    ]
    assert bound == [
        ("controller:resource-claim-controller", "patch", "pods/status"),  # the claim's name in the pod
        ("crd-scheduler", "patch", "pods/status"),  # the nomination, before PreBind's work
        ("crd-scheduler", "update", "resourceclaims"),
        ("crd-scheduler", "update", "resourceclaims/status"),
        ("crd-scheduler", "create", "pods/binding"),
    ]
    assert [w.actor for w in theirs.writes[1:5]] == ["kube-scheduler"] * 4
    assert all(w.received >= theirs.created for w in theirs.writes)
    assert [w.received for w in ours.writes] == sorted(w.received for w in ours.writes)


def test_phases_add_up_to_the_total_and_medians_are_per_scheduler() -> None:
    for pod in pods():
        phases = pod.phases()
        assert phases is not None
        assert phases["ready"] + phases["reaction"] + phases["writes"] == pytest.approx(phases["total"])
    assert timeline.summary(pods()) == {
        "crd-scheduler": {"pods": 1, "ready_ms": 31.3, "reaction_ms": 11.7, "writes_ms": 27.3, "total_ms": 70.3},
        "kube-scheduler": {"pods": 1, "ready_ms": 17.1, "reaction_ms": 8.6, "writes_ms": 20.0, "total_ms": 45.6},
    }


def test_a_pod_without_binding_has_no_phases(tmp_path: Path) -> None:
    lines = [line for line in LOG.read_text().splitlines() if '"subresource":"binding"' not in line]
    assert all(pod.phases() is None for pod in timeline.read(lines))
    assert timeline.summary(timeline.read(lines)) == {}


def test_the_command_names_a_file_it_cannot_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "audit.log"
    bad.write_text("not json\n")
    assert timeline.main([str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"{bad}: cannot read an audit log:")
    assert timeline.main([str(LOG), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kube-scheduler"]["pods"] == 1


def test_the_dev_cluster_audits_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # hack/devcluster: CRD_SCHEDULER_DEVCLUSTER_AUDIT_LOG is kept in run/features.json at start,
    # and kube-apiserver then gets the policy and the log (the run above came from it).
    root = Path(__file__).resolve().parents[3] / "hack" / "devcluster"
    monkeypatch.syspath_prepend(str(root))
    cluster: Any = importlib.import_module("devcluster.cluster")
    layout: Any = importlib.import_module("devcluster.layout")

    lay = layout.Layout(root=tmp_path, bin=tmp_path / "bin")
    lay.run.mkdir()
    assert cluster._audit_flags(lay) == []
    lay.features.write_text(json.dumps({"auditLog": str(tmp_path / "audit.log")}))
    flags = cluster._audit_flags(lay)
    assert flags == [
        f"--audit-policy-file={lay.audit_policy}",
        f"--audit-log-path={tmp_path / 'audit.log'}",
        "--audit-log-mode=blocking",
    ]
    policy = json.loads(lay.audit_policy.read_text())
    assert policy["rules"][-1] == {"level": "None"}  # nothing else is logged
    assert {"group": "resource.k8s.io"} in policy["rules"][-2]["resources"]


def test_a_name_created_again_is_a_new_pod() -> None:
    # scheduler_perf names some workloads' pods (test-dra-0...): each run creates them again.
    lines = LOG.read_text().replace("test-drantg4s", "test-drabbx98").splitlines()
    first, second = timeline.read(lines)
    assert first.name == second.name == "test-drabbx98" and first.created < second.created
    assert {w.actor for w in first.writes} - {"client"} <= {
        "crd-scheduler",
        "controller:resource-claim-controller",
        "controller:generic-garbage-collector",
    }
    assert timeline.summary([first, second]) == timeline.summary(pods())
