"""``crd-scheduler simulate`` as a user runs it: a subprocess, exit codes, stdout and stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PROFILE_API = "scheduling.crd-scheduler.io/v1alpha1"
HOME = "crd-scheduler"


def cli(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "scheduler_operator", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})},
    )  # fmt: skip


def write(path: Path, *objects: Any) -> str:
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return str(path)


@pytest.fixture(scope="module")
def example_json() -> dict[str, Any]:
    done = cli("simulate", "-f", "examples/cluster.yaml", "-o", "json", "--seed", "3")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize(
    ("flags", "files"),
    [
        pytest.param(["--example"], ["cluster.yaml"], id="cluster"),
        pytest.param(["--example", "--example", "profiles"], ["cluster.yaml", "profiles.yaml"], id="with-profiles"),
    ],
)
def test_the_bundled_example_is_the_readmes(flags: list[str], files: list[str], tmp_path: Path) -> None:
    # Run away from the tree: --example reads the copy inside the package, as from a wheel.
    bundled = cli("simulate", *flags, "-o", "json", "--seed", "3", cwd=tmp_path)
    from_files = cli("simulate", *(a for f in files for a in ("-f", str(EXAMPLES / f))), "-o", "json", "--seed", "3")
    assert bundled.returncode == 0, bundled.stderr
    assert json.loads(bundled.stdout) == json.loads(from_files.stdout)
    assert len(json.loads(bundled.stdout)["pods"]) >= 4


def test_example_json_has_the_exact_shape(example_json: dict[str, Any]) -> None:
    assert list(example_json) == ["pods"]
    keys = ["namespace", "name", "schedulerName", "profile", "status", "node", "message", "scores", "filtered"]
    for entry in example_json["pods"]:
        assert list(entry) == keys
        assert entry["status"] in ("Scheduled", "Unschedulable", "Error")
        assert entry["profile"] == "crd-scheduler/default"
        assert entry["schedulerName"] == "crd-scheduler"
        for node, row in entry["scores"].items():
            assert isinstance(node, str) and isinstance(row["total"], int)
            assert row["total"] == sum(v for k, v in row.items() if k != "total")
        for reasons in entry["filtered"].values():
            assert reasons and all(isinstance(r, str) for r in reasons)


def test_example_shows_spreading_taints_affinity_and_an_unschedulable_pod(example_json: dict[str, Any]) -> None:
    pods = {f"{p['namespace']}/{p['name']}": p for p in example_json["pods"]}
    assert list(pods) == [
        "default/web-1",
        "default/web-2",
        "default/web-3",
        "ml/train",
        "default/cache",
        "default/huge",
    ]
    assert len({pods[f"default/web-{i}"]["node"] for i in (1, 2, 3)}) == 3  # spread over three nodes
    assert all("node-c" in pods[f"default/web-{i}"]["filtered"] for i in (1, 2, 3))  # tainted GPU node
    assert (pods["ml/train"]["node"], pods["ml/train"]["scores"]) == ("node-c", {})  # the only feasible node
    assert pods["default/cache"]["node"] in ("node-a", "node-d")  # preferred ssd
    assert pods["default/cache"]["scores"]["node-a"]["NodeAffinity"] == 200
    huge = pods["default/huge"]
    assert (huge["status"], huge["node"]) == ("Unschedulable", None)
    assert huge["message"] == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu."
        " no new claims to deallocate, preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )


def test_example_table_and_profiles_change_placement() -> None:
    spread = cli("simulate", "-f", "examples/cluster.yaml")
    packed = cli("simulate", "-f", "examples/cluster.yaml", "-f", "examples/profiles.yaml", "-o", "table")
    assert spread.returncode == packed.returncode == 0
    header = spread.stdout.splitlines()[0].split()
    assert header == ["POD", "STATUS", "NODE", "TOP", "SCORES", "REASON"]
    web_nodes = {line.split()[2] for line in packed.stdout.splitlines() if line.startswith("default/web-")}
    assert web_nodes == {"node-b"}  # MostAllocated packs the replicas onto the busiest node
    assert "0/4 nodes are available" in spread.stdout


def test_same_seed_same_output() -> None:
    # The top-level examples only: the folders below are examples of their own (extender
    # plugins, gangs) with plugins or a QueueSort that do not mix with these profiles.
    files = [str(EXAMPLES / "cluster.yaml"), str(EXAMPLES / "profiles.yaml")]
    first = cli("simulate", "-f", files[0], "-f", files[1], "-o", "json", "--seed", "42")
    second = cli("simulate", "-f", files[0], "-f", files[1], "-o", "json", "--seed", "42")
    assert first.returncode == 0 and first.stdout == second.stdout


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [{"apiVersion": PROFILE_API, "kind": "SchedulerProfile", "metadata": {"name": "batch", "namespace": HOME},
              "spec": {"plugins": {"score": {"enabled": [{"name": "Foo"}]}}}}],
            "error: {file}: SchedulerProfile crd-scheduler/batch: spec.plugins.score.enabled[0].name: "
            "plugin 'Foo' does not exist",
            id="unknown-plugin",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
              "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}],
            "error: {file}: Pod default/web: spec.containers[0].resources.requests[cpu]: "
            'Invalid value: "lots": quantities must match',
            id="bad-quantity",
        ),
        pytest.param(
            [{"apiVersion": PROFILE_API, "kind": "PluginConfig", "metadata": {"name": "fit", "namespace": HOME},
              "spec": {"plugin": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Sometimes"}}}}],
            "error: {file}: PluginConfig crd-scheduler/fit: spec.args: plugin 'NodeResourcesFit': ",
            id="bad-plugin-args",
        ),
        pytest.param(
            [{"apiVersion": "v1", "metadata": {"name": "x"}}],
            "error: {file}: document 1: kind: Required value",
            id="no-kind",
        ),
        pytest.param(
            [{"apiVersion": "v1", "kind": "Node", "metadata": {}}],
            "error: {file}: Node (document 1): metadata.name: Required value",
            id="no-name",
        ),
    ],
)  # fmt: skip
def test_bad_input_exits_2_naming_object_field_and_reason(tmp_path: Path, objects: list[Any], expected: str) -> None:
    file = write(tmp_path / "bad.yaml", *objects)
    done = cli("simulate", "-f", file)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(expected.format(file=file)), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("kind: Pod\nmetadata: {name: x\n", "error: {file}: line 3, column 1: ", id="yaml-syntax"),
        pytest.param("- [unclosed\n", "error: {file}: line 2, column 1: ", id="yaml-unclosed-flow"),
    ],
)
def test_malformed_yaml_exits_2(tmp_path: Path, text: str, expected: str) -> None:
    file = tmp_path / "broken.yaml"
    file.write_text(text)
    done = cli("simulate", "-f", str(file))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(expected.format(file=file)) and "Traceback" not in done.stderr


def test_missing_file_exits_2(tmp_path: Path) -> None:
    done = cli("simulate", "-f", str(tmp_path / "nope.yaml"))
    assert done.returncode == 2
    assert done.stderr == f"error: {tmp_path / 'nope.yaml'}: No such file or directory\n"


def test_unschedulable_pod_is_not_an_error_and_ignored_kinds_are_warned_about(tmp_path: Path) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "status": {"capacity": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}  # fmt: skip
    container = {"name": "c", "resources": {"requests": {"cpu": "2"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "shop"},
           "spec": {"schedulerName": "crd-scheduler", "containers": [container]}}  # fmt: skip
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}
    file = write(tmp_path / "c.yaml", node, pod, deployment)
    done = cli("simulate", "-f", file, "-o", "json")
    assert done.returncode == 0
    assert done.stderr == f"warning: {file}: Deployment shop/web: kind Deployment is ignored by the scheduler\n"
    (entry,) = json.loads(done.stdout)["pods"]
    assert (entry["status"], entry["message"]) == (
        "Unschedulable",
        "0/1 nodes are available: 1 Insufficient cpu."
        " no new claims to deallocate, preemption: 0/1 nodes are available:"
        " 1 Preemption is not helpful for scheduling.",
    )
    assert entry["filtered"] == {"n1": ["Insufficient cpu"]}


def test_home_namespace_option_moves_the_built_in_profile(tmp_path: Path) -> None:
    done = cli("simulate", "-f", "examples/cluster.yaml", "-o", "json", "--home-namespace", "sched")
    assert done.returncode == 0
    assert {p["profile"] for p in json.loads(done.stdout)["pods"]} == {"sched/default"}


def test_usage_errors_exit_2() -> None:
    assert cli("simulate").returncode == 2  # -f is required
    assert cli("simulate", "-f", "examples/cluster.yaml", "-o", "yaml").returncode == 2
