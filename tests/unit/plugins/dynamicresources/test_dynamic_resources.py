"""DynamicResources inside the whole scheduler (``simulate``), and the in-memory claim writes.

Ids name upstream cases of ``pkg/scheduler/framework/plugins/dynamicresources/
dynamicresources_test.go`` where one exists.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework import PodInfo
from scheduler_core.framework.writes import PODS, RESOURCE_CLAIMS, STATUS
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_core.simulator.manifests import load_texts
from scheduler_core.simulator.run import Simulation, simulate
from scheduler_core.tenancy.scoped_api import ScopedClusterAPI

GPU_REQUEST = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
EXAMPLE = Path(__file__).parents[4] / "examples" / "dra" / "cluster.yaml"


def example_objects() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(EXAMPLE.read_text()))


def run(objects: list[dict[str, Any]]) -> Simulation:
    return simulate(load_texts([("cluster.yaml", yaml.safe_dump_all(objects))]))


def by_name(sim: Simulation) -> dict[str, Any]:
    return {r.name: r for r in sim.pods}


def test_the_example_allocates_distinct_devices_and_reports_them() -> None:
    reports = by_name(run(example_objects()))
    assert reports["trainer"].node == "node-b"  # firstAvailable's first subrequest scores 8
    assert reports["trainer"].devices == {"trainer-gpu": ["gpu.example.com/node-b/gpu-0"]}
    assert reports["worker-1"].devices == {"worker-1-gpu": ["gpu.example.com/node-a/gpu-0"]}
    assert reports["worker-2"].devices == {"worker-2-gpu": ["gpu.example.com/node-a/gpu-1"]}
    # more devices asked than exist: upstream's Filter reason
    assert reports["worker-3"].node is None
    assert "0/2 nodes are available: 2 cannot allocate all claims." in reports["worker-3"].message


def test_prebind_writes_allocation_reserved_for_and_finalizer() -> None:
    sim = run(example_objects())
    claim = next(c for c in sim.cluster.objects("ResourceClaim") if c["metadata"]["name"] == "worker-1-gpu")
    pod = sim.cluster.pod("default", "worker-1")
    assert pod is not None
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "worker-1", "uid": pod["metadata"]["uid"]}]
    assert claim["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}
    ]
    assert claim["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
        "node-a"
    ]
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    assert claim["metadata"]["ownerReferences"][0]["uid"] == pod["metadata"]["uid"]


def test_missing_device_class_is_unresolvable() -> None:
    objects = [o for o in example_objects() if o["kind"] != "DeviceClass"]
    reports = by_name(run(objects))
    assert "request gpu: device class gpu.example.com does not exist" in reports["worker-1"].message


def test_pod_with_a_claim_that_does_not_exist_waits_at_pre_enqueue() -> None:
    # dynamicresources_test.go "claim-missing" / PreEnqueue: the claim must exist.
    objects = example_objects()
    worker = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == "worker-1")
    worker["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "nowhere"}]
    reports = by_name(run(objects))
    assert reports["worker-1"].node is None
    assert "PreEnqueue plugin 'DynamicResources' holds the pod" in reports["worker-1"].message


def test_an_allocated_claim_restricts_the_pod_to_its_node() -> None:
    # dynamicresources_test.go "structured-claim-allocated... wrong node": allocated elsewhere.
    objects = example_objects()
    shared = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "shared", "namespace": "default"},
              "spec": {"devices": {"requests": [GPU_REQUEST]}}}  # fmt: skip
    objects.append(shared)
    for name in ("worker-1", "worker-2"):
        worker = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == name)
        worker["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    reports = by_name(run(objects))
    assert reports["worker-1"].node == reports["worker-2"].node  # the second pod shares the allocation


def test_claim_writes_check_the_resource_version_and_keep_the_spec() -> None:
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "c", "namespace": "default"}, "spec": {"devices": {}}}  # fmt: skip
    cluster = InMemoryCluster(objects={"ResourceClaim": [claim]})
    stored = next(iter(cluster.objects("ResourceClaim")))
    new = {**stored, "spec": {"changed": True}, "status": {"allocation": {"devices": {"results": []}}}}
    written, status = asyncio.run(cluster.update(RESOURCE_CLAIMS, new, subresource=STATUS))
    assert status is None and written is not None
    assert written["spec"] == {"devices": {}} and written["status"] == new["status"]
    _, conflict = asyncio.run(cluster.update(RESOURCE_CLAIMS, new, subresource=STATUS))  # stale resourceVersion
    assert conflict is not None and "the object has been modified" in conflict.message()


@pytest.mark.parametrize("subresource", [STATUS, ""])
def test_a_tenant_profile_cannot_write_another_namespaces_claim(subresource: str) -> None:
    claim = {"metadata": {"name": "c", "namespace": "team-b"}, "spec": {}, "status": {}}
    cluster = InMemoryCluster(objects={"ResourceClaim": [claim]})
    api = ScopedClusterAPI(cluster, namespace="team-a", profile="p", objects=cluster.objects)
    written, status = asyncio.run(api.update(RESOURCE_CLAIMS, claim, subresource=subresource))
    assert written is None and status is not None and "team-b/c refused" in status.message()
    own = {"metadata": {"name": "c", "namespace": "team-a"}}
    _, status = asyncio.run(api.update(RESOURCE_CLAIMS, own, subresource=subresource))
    assert status is not None and "refused" not in status.message()  # reaches the backend: not found


def test_pre_enqueue_of_a_pod_without_claims_reads_nothing() -> None:
    from scheduler_core.plugins.dynamicresources import DynamicResources

    class NoObjects:
        def objects(self, kind: str) -> Any:
            raise AssertionError("read " + kind)

        def shared(self, name: str, factory: Any) -> Any:
            return factory()

    plugin = DynamicResources(None, NoObjects())  # type: ignore[arg-type]
    assert plugin.pre_enqueue(PodInfo({"metadata": {"name": "p"}, "spec": {"containers": []}})) is None


@settings(max_examples=25, deadline=None)
@given(
    devices=st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=3),
    counts=st.lists(st.integers(min_value=1, max_value=2), min_size=1, max_size=6),
)
def test_no_device_is_ever_allocated_twice_by_the_scheduler(devices: list[int], counts: list[int]) -> None:
    objects: list[dict[str, Any]] = [o for o in example_objects() if o["kind"] == "DeviceClass"]
    for n, count in enumerate(devices):
        objects.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{n}"},
                        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "10"}}})  # fmt: skip
        objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"s{n}"},
                        "spec": {"driver": "gpu.example.com", "nodeName": f"n{n}",
                                 "pool": {"name": f"n{n}", "generation": 1, "resourceSliceCount": 1},
                                 "devices": [{"name": f"d{i}"} for i in range(count)]}})  # fmt: skip
    for i, count in enumerate(counts):
        request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "count": count}}
        objects.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                        "metadata": {"name": f"t{i}", "namespace": "default"},
                        "spec": {"spec": {"devices": {"requests": [request]}}}})  # fmt: skip
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "default"},
                        "spec": {"schedulerName": "crd-scheduler", "containers": [{"name": "c", "image": "i"}],
                                 "resourceClaims": [{"name": "gpu",
                                                     "resourceClaimTemplateName": f"t{i}"}]}})  # fmt: skip
    sim = run(objects)
    taken: list[str] = []
    for report in sim.pods:
        if report.node is None:
            assert not report.devices
            continue
        (got,) = report.devices.values()
        assert len(got) == counts[int(report.name[1:])]
        assert all(d.startswith(f"gpu.example.com/{report.node}/") for d in got)  # on the pod's node
        taken += got
    assert len(taken) == len(set(taken))
    # and no pod is left pending while some node still has enough free devices for it
    free = [count - sum(d.startswith(f"gpu.example.com/n{n}/") for d in taken) for n, count in enumerate(devices)]
    for report in sim.pods:
        if report.node is None:
            assert counts[int(report.name[1:])] > max(free)


def test_a_deleted_pod_frees_its_devices_as_the_resourceclaim_controller_does() -> None:
    objects = example_objects()
    shared = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
              "metadata": {"name": "shared", "namespace": "default"},
              "spec": {"devices": {"requests": [GPU_REQUEST]}}}  # fmt: skip
    objects.append(shared)
    worker = next(o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == "worker-2")
    worker["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "shared"}]
    sim = run(objects)
    for name in ("worker-1", "worker-2"):
        stored = sim.cluster.pod("default", name)
        assert stored is not None
        asyncio.run(sim.cluster.delete(PODS, stored))
    names = {c["metadata"]["name"]: c for c in sim.cluster.objects("ResourceClaim")}
    assert "worker-1-gpu" not in names  # generated for the pod: deleted with it
    assert names["shared"]["status"] == {}  # reserved by nobody: deallocated
    assert names["shared"]["metadata"]["finalizers"] == []
