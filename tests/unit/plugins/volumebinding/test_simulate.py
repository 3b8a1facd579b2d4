"""The volume plugins inside the whole scheduler (``simulate`` with the default profile):
pods with claims land where their volumes can be, the others never read storage objects."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from scheduler_core.plugins.nodevolumelimits import NodeVolumeLimits
from scheduler_core.plugins.volumebinding import VolumeBinding
from scheduler_core.plugins.volumerestrictions import VolumeRestrictions
from scheduler_core.plugins.volumezone import VolumeZone
from scheduler_core.runtime.registry import default_registry
from scheduler_core.simulator.manifests import load_texts
from scheduler_core.simulator.run import Simulation, simulate
from tests.unit.plugins.volumebinding.support import claim_volume, csi_node, pv, pvc, storage_class
from tests.wrappers import node, pod

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def registry() -> dict[str, Any]:
    reg: dict[str, Any] = dict(default_registry(with_out_of_tree=False))
    for plugin in (VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits):
        reg[plugin.name] = plugin
    return reg


def run(*objects: dict[str, Any], batch: bool = True) -> Simulation:
    return simulate(load_texts([("cluster.yaml", yaml.safe_dump_all(objects))]), registry=registry(), batch=batch)


def placements(sim: Simulation) -> dict[str, str | None]:
    return {p.name: p.node for p in sim.pods}


def local_pv(name: str, host: str, size: str = "1Gi") -> dict[str, Any]:
    return pv(name, "local", capacity=size, node_affinity={HOSTNAME: [host]}, access_modes=["ReadWriteOnce"])


LOCAL_SC = storage_class("local", provisioner="kubernetes.io/no-provisioner")


def local_claim(name: str) -> dict[str, Any]:
    return pvc(name, "local", request="1Gi", access_modes=["ReadWriteOnce"])


def test_local_volumes_place_pods_on_their_nodes_and_are_taken_once() -> None:
    sim = run(
        node("n1"),
        node("n2"),
        LOCAL_SC,
        local_pv("pv-n2", "n2"),
        local_claim("c1"),
        local_claim("c2"),
        pod("db1", volumes=[claim_volume("c1")]),
        pod("db2", volumes=[claim_volume("c2")]),
    )
    assert placements(sim) == {"db1": "n2", "db2": None}
    db2 = sim.pods[1]
    assert db2.message.startswith(
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind."
    )


def test_bound_claims_follow_their_volume_zone_and_node_affinity() -> None:
    zonal = pv("pv-a", "", capacity="1Gi", labels={ZONE: "a"}, phase="Bound", access_modes=["ReadWriteOnce"])
    affine = pv("pv-b", "", capacity="1Gi", node_affinity={ZONE: ["b"]}, phase="Bound", access_modes=["ReadWriteOnce"])
    sim = run(
        node("na", labels={ZONE: "a"}),
        node("nb", labels={ZONE: "b"}),
        zonal,
        affine,
        pvc("ca", "", bound_pv="pv-a", request="1Gi", access_modes=["ReadWriteOnce"]),
        pvc("cb", "", bound_pv="pv-b", request="1Gi", access_modes=["ReadWriteOnce"]),
        pod("in-a", volumes=[claim_volume("ca")]),
        pod("in-b", volumes=[claim_volume("cb")]),
        pod("nowhere", volumes=[claim_volume("ca"), claim_volume("cb")]),
    )
    assert placements(sim) == {"in-a": "na", "in-b": "nb", "nowhere": None}
    filtered = sim.pods[2].filtered
    assert filtered["na"] == ["node(s) didn't match PersistentVolume's node affinity"]
    assert filtered["nb"] == ["node(s) had no available volume zone"]


def test_missing_claim_and_rwop_conflict() -> None:
    sim = run(
        node("n1"),
        pvc("solo", "", bound_pv="pv-solo", request="1Gi", access_modes=["ReadWriteOncePod"]),
        pv("pv-solo", "", capacity="1Gi", phase="Bound", access_modes=["ReadWriteOnce"]),
        pod("first", volumes=[claim_volume("solo")]),
        pod("second", volumes=[claim_volume("solo")]),
        pod("orphan", volumes=[claim_volume("missing")]),
    )
    assert placements(sim) == {"first": "n1", "second": None, "orphan": None}
    assert "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode" in sim.pods[1].message
    assert 'persistentvolumeclaim "missing" not found' in sim.pods[2].message


def test_csi_attach_limits() -> None:
    def csi_pv(i: int) -> dict[str, Any]:
        csi = {"driver": "d.csi", "volumeHandle": f"h{i}"}
        return pv(f"pv{i}", "", capacity="1Gi", phase="Bound", access_modes=["ReadWriteOnce"], csi=csi)

    sim = run(
        node("n1"),
        csi_node("n1", {"d.csi": 2}),
        *(csi_pv(i) for i in range(3)),
        *(pvc(f"c{i}", "", bound_pv=f"pv{i}", request="1Gi", access_modes=["ReadWriteOnce"]) for i in range(3)),
        pod("a", volumes=[claim_volume("c0"), claim_volume("c1")]),
        pod("b", volumes=[claim_volume("c2")]),
    )
    assert placements(sim) == {"a": "n1", "b": None}
    assert sim.pods[1].message.startswith("0/1 nodes are available: 1 node(s) exceed max volume count.")


@pytest.mark.parametrize("batch", [True, False])
def test_pods_without_volumes_are_unaffected(batch: bool) -> None:
    sim = run(node("n1"), node("n2"), LOCAL_SC, pod("plain", cpu="1"), batch=batch)
    assert sim.pods[0].node in ("n1", "n2")
    assert sim.pods[0].filtered == {}


def test_simulate_binds_claims_as_the_pv_controller_and_a_provisioner_would() -> None:
    """PreBind writes through the in-memory cluster, which binds the static PV to its claim and
    provisions a PV for the WaitForFirstConsumer claim on the chosen node."""
    sim = run(
        node("n1"),
        LOCAL_SC,
        storage_class("fast", provisioner="csi.example.com"),
        local_pv("pv-n1", "n1"),
        local_claim("static"),
        pvc("dynamic", "fast", request="3Gi", access_modes=["ReadWriteOnce"]),
        pod("user", volumes=[claim_volume("static"), claim_volume("dynamic")]),
    )
    assert placements(sim) == {"user": "n1"}
    claims = {c["metadata"]["name"]: c for c in sim.cluster.objects("PersistentVolumeClaim")}
    volumes = {v["metadata"]["name"]: v for v in sim.cluster.objects("PersistentVolume")}
    assert claims["static"]["spec"]["volumeName"] == "pv-n1"
    assert volumes["pv-n1"]["spec"]["claimRef"]["name"] == "static"
    assert claims["dynamic"]["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "n1"
    provisioned = volumes[claims["dynamic"]["spec"]["volumeName"]]
    assert provisioned["spec"]["capacity"] == {"storage": "3Gi"}
    assert {c["status"]["phase"] for c in claims.values()} == {"Bound"}
    assert {v["status"]["phase"] for v in volumes.values()} == {"Bound"}
