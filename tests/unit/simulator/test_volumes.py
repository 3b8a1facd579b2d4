"""The in-memory cluster's PV/PVC writes and the PV controller and provisioner it plays
(``scheduler_core.simulator.volumes``); the writes' contract with the real API server is in
tests/e2e/test_backend_contract.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler_core.framework.storage import ANN_SELECTED_NODE
from scheduler_core.plugins.volumebinding.prebind import claim_ref_write, selected_node_write
from scheduler_core.simulator.backend import InMemoryCluster
from tests.unit.plugins.volumebinding.support import pv, pvc, storage_class


def cluster(*objects: dict[str, Any]) -> InMemoryCluster:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    return InMemoryCluster(objects=by_kind)


def stored(c: InMemoryCluster, kind: str, name: str) -> dict[str, Any] | None:
    return next((o for o in c.objects(kind) if o["metadata"]["name"] == name), None)


def test_loaded_objects_get_a_uid_and_resource_version_as_created_by_the_api_server() -> None:
    c = cluster({"kind": "PersistentVolumeClaim", "metadata": {"name": "bare", "namespace": "default"}})
    claim = stored(c, "PersistentVolumeClaim", "bare")
    assert claim is not None and claim["metadata"]["uid"] and claim["metadata"]["resourceVersion"]


@pytest.mark.parametrize(
    ("sc", "provisioned"),
    [
        pytest.param(storage_class("dyn", provisioner="csi.example.com"), True, id="external-provisioner"),
        pytest.param(storage_class("dyn", provisioner="kubernetes.io/no-provisioner"), False, id="no-provisioner"),
        pytest.param(None, False, id="missing-class"),
    ],
)
def test_selected_node_provisions_only_for_a_class_with_a_provisioner(
    sc: dict[str, Any] | None, provisioned: bool
) -> None:
    objects = [pvc("claim", "dyn", request="5Gi", access_modes=["ReadWriteOnce"])]
    c = cluster(*objects, *([sc] if sc else []))
    claim = stored(c, "PersistentVolumeClaim", "claim")
    assert claim is not None
    written, status = asyncio.run(c.write(selected_node_write(claim, "node-1")))
    assert status is None and written is not None
    after = stored(c, "PersistentVolumeClaim", "claim")
    assert after is not None and after["metadata"]["annotations"][ANN_SELECTED_NODE] == "node-1"
    volumes = list(c.objects("PersistentVolume"))
    if not provisioned:
        assert volumes == [] and "volumeName" not in after["spec"]
        return
    (volume,) = volumes
    assert volume["metadata"]["name"] == f"pvc-{claim['metadata']['uid']}"
    assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
    assert (volume["spec"]["capacity"], volume["spec"]["accessModes"]) == ({"storage": "5Gi"}, ["ReadWriteOnce"])
    assert after["spec"]["volumeName"] == volume["metadata"]["name"]
    assert after["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "5Gi"}}


def test_claim_ref_to_a_claim_of_another_uid_is_not_bound() -> None:
    c = cluster(pvc("claim", "local"), pv("pv-1", "local", capacity="1Gi", phase="Available"))
    volume = stored(c, "PersistentVolume", "pv-1")
    assert volume is not None
    ref = {"namespace": "default", "name": "claim", "uid": "someone-else"}
    written, status = asyncio.run(c.write(claim_ref_write({**volume, "spec": {**volume["spec"], "claimRef": ref}})))
    assert status is None and written is not None
    claim = stored(c, "PersistentVolumeClaim", "claim")
    assert claim is not None and "volumeName" not in claim["spec"]
    assert stored(c, "PersistentVolume", "pv-1") == written  # the controller left it alone


def test_writing_a_missing_volume_is_not_found() -> None:
    _, status = asyncio.run(cluster().write(claim_ref_write({"metadata": {"name": "ghost"}})))
    assert status is not None and status.message() == 'persistentvolumes "ghost" not found'
