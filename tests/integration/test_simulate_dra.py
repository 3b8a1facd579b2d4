"""``crd-scheduler simulate`` and ``validate`` on the DRA example, as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.test_simulate_cli import cli, write


def test_simulate_runs_the_dra_example_and_shows_each_pods_devices() -> None:
    done = cli("simulate", "-f", "examples/dra/cluster.yaml", "-o", "json")
    assert done.returncode == 0, done.stderr
    pods = {p["name"]: p for p in json.loads(done.stdout)["pods"]}
    assert {name: p.get("devices") for name, p in pods.items()} == {
        "trainer": {"trainer-gpu": ["gpu.example.com/node-b/gpu-0"]},
        "worker-1": {"worker-1-gpu": ["gpu.example.com/node-a/gpu-0"]},
        "worker-2": {"worker-2-gpu": ["gpu.example.com/node-a/gpu-1"]},
        "worker-3": None,
    }
    assert pods["worker-3"]["message"].startswith("0/2 nodes are available: 2 cannot allocate all claims.")


def test_a_malformed_resource_slice_is_refused_naming_the_object_and_field(tmp_path: Path) -> None:
    bad = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"},
           "spec": {"driver": "d", "pool": {"name": "p", "generation": "one", "resourceSliceCount": 1}}}  # fmt: skip
    done = cli("simulate", "-f", write(tmp_path / "s.yaml", bad))
    assert done.returncode != 0
    assert "ResourceSlice s" in done.stderr and "spec.pool.generation" in done.stderr
