"""The fluent builders produce the manifests the API would hold (``tests/wrappers.py``)."""

from __future__ import annotations

from collections.abc import Callable

from scheduler_core.clock import FakeClock
from scheduler_core.framework import CPU, HostPort, Toleration
from scheduler_core.runtime.registry import Registry
from tests.wrappers import NodeWrapper, PodWrapper, make_node, make_pod, selector


def test_pod_wrapper_builds_every_field_it_names() -> None:
    pod = (
        make_pod()
        .name("web")
        .namespace("team-a")
        .uid("u1")
        .label("app", "web")
        .priority(10)
        .req(cpu="500m", memory="1Gi")
        .req({"example.com/gpu": "1"})
        .init_req(sidecar=True, cpu="100m")
        .host_port(8080)
        .toleration("dedicated", "gpu", "NoSchedule")
        .node_affinity_in("zone", "a", "b")
        .pod_anti_affinity("zone", selector(match_labels={"app": "db"}))
        .spread_constraint(1, "zone", {"app": "web"})
        .scheduling_gates("wait")
        .info()
    )
    assert (pod.key, pod.uid, pod.labels, pod.priority) == ("team-a/web", "u1", {"app": "web"}, 10)
    # Requests: the sum of containers; a sidecar init container adds to them.
    assert pod.requests.milli_cpu == 600 and pod.requests.scalar_resources == {"example.com/gpu": 1}
    assert pod.host_ports == (HostPort("0.0.0.0", "TCP", 8080),)
    assert pod.tolerations == (Toleration("dedicated", "Equal", "gpu", "NoSchedule"),)
    assert pod.has_required_anti_affinity and pod.scheduling_gates == ("wait",)
    assert pod.pod["spec"]["topologySpreadConstraints"][0]["maxSkew"] == 1


def test_obj_is_a_copy_and_defaults_give_one_container() -> None:
    wrapper = make_pod().name("p")
    first = wrapper.obj()
    first["metadata"]["name"] = "changed"
    assert wrapper.obj()["metadata"]["name"] == "p"
    assert [c["name"] for c in wrapper.obj()["spec"]["containers"]] == ["c0"]
    assert wrapper.obj()["spec"]["schedulerName"] == "crd-scheduler"


def test_pod_wrapper_sets_resource_version_init_containers_and_claims() -> None:
    init = [{"name": "i", "image": "busybox", "restartPolicy": "Always"}]
    pod = (
        make_pod()
        .resource_version("7")
        .init_containers(init)
        .resource_claim("gpu", claim="my-claim")
        .resource_claim("dev", template="one")
        .obj()
    )
    assert pod["metadata"]["resourceVersion"] == "7"
    (container,) = make_pod().container(image="pause:3.10", pre_stop_sleep=5).obj()["spec"]["containers"]
    assert container == {"name": "c0", "image": "pause:3.10", "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}
    assert pod["spec"]["initContainers"] == init and pod["spec"]["initContainers"] is not init
    assert pod["spec"]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimName": "my-claim"},
        {"name": "dev", "resourceClaimTemplateName": "one"},
    ]


def test_node_wrapper_sets_capacity_allocatable_taints_and_pods() -> None:
    pod = make_pod().req(cpu="1").node("n1").info()
    node = make_node().name("n1").capacity(cpu="8", ephemeral_storage="10Gi").taint("k", "v").label("zone", "a")
    info = node.info(pod)
    assert info.allocatable.milli_cpu == 8000 and info.allocatable.ephemeral_storage == 10 * 2**30
    assert info.labels == {"zone": "a", "kubernetes.io/hostname": "n1"}
    assert [str(t) for t in info.taints] == ["k=v:NoSchedule"]
    assert info.requested.get(CPU) == 1000


def test_conftest_fixtures(
    clock: FakeClock,
    in_tree_registry: Registry,
    pod_wrapper: Callable[[], PodWrapper],
    node_wrapper: Callable[[], NodeWrapper],
) -> None:
    clock.advance(5)
    assert clock.now() == 5
    assert "NodeResourcesFit" in in_tree_registry and "SampleNodeLabel" not in in_tree_registry
    assert pod_wrapper().name("x").obj()["metadata"]["name"] == "x"
    assert node_wrapper().name("y").obj()["metadata"]["name"] == "y"
