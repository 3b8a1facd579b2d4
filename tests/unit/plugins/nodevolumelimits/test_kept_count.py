"""NodeVolumeLimits keeps what a node's pods count across cycles; it must never serve a count
the cluster no longer has: a claim bound, a volume changed, a claim deleted, a pod removed.

The plugin reads an in-memory cluster through a FrameworkHandle, as the scheduler wires it, so
the backend's change counters are the real ones. Each check is answered by a plugin that lived
through the earlier cycles and compared with a new one, which counts from scratch."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework import CycleState, NodeInfo, PodInfo, Status
from scheduler_core.plugins.nodevolumelimits import NodeVolumeLimits
from scheduler_core.plugins.nodevolumelimits.csi import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.simulator import InMemoryCluster
from tests.unit.plugins.volumebinding.support import claim_volume, csi_node, pv, pvc, storage_class
from tests.wrappers import make_node_info, node, pod_info

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
NODE = "n1"
EXCEEDED = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)


def csi_pv(name: str, driver: str = EBS) -> dict[str, Any]:
    return pv(name, source={"csi": {"driver": driver, "volumeHandle": name}})


def cluster_of(*objects: dict[str, Any], limit: int = 2) -> InMemoryCluster:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in [*objects, csi_node(NODE, {EBS: limit, GCE: limit})]:
        by_kind.setdefault(str(obj["kind"]), []).append(obj)
    return InMemoryCluster(nodes=[node(NODE)], objects=by_kind)


def plugin_over(cluster: InMemoryCluster, *, counted: bool = True) -> NodeVolumeLimits:
    handle = FrameworkHandle(
        "t",
        snapshot=lambda: None,  # type: ignore[arg-type, return-value]
        api=cluster,
        objects=cluster.objects,
        lookup=cluster.lookup,
        objects_version=cluster.objects_version if counted else None,
    )
    return NodeVolumeLimits(None, handle)


def cycle(plugin: NodeVolumeLimits, the_pod: PodInfo, info: NodeInfo) -> Status | None:
    state = CycleState()
    _, status = plugin.pre_filter(state, the_pod, [info])
    assert status is None
    return plugin.filter(state, the_pod, info)


def user(name: str, *claims: str) -> PodInfo:
    return pod_info(name, uid=f"uid-{name}", volumes=[claim_volume(c, f"v{i}") for i, c in enumerate(claims)])


NEW_POD = user("new", "c-new")


def two_bound_claims() -> InMemoryCluster:
    """c1 and c2 bound to CSI volumes v1 and v2; the new pod's c-new to v-new."""
    names = ("1", "2", "-new")
    return cluster_of(*(csi_pv(f"v{n}") for n in names), *(pvc(f"c{n}", None, volume_name=f"v{n}") for n in names))


def test_a_claim_bound_between_cycles_counts() -> None:
    """c2 has no class and no volume: not counted, so the new pod fits (1 + 1 <= 2). Once c2
    is bound to a CSI volume, the node holds two volumes and the new pod no longer fits."""
    cluster = cluster_of(csi_pv("v1"), csi_pv("v-new"), pvc("c1", None, volume_name="v1"), pvc("c2", None),
                         pvc("c-new", None, volume_name="v-new"))  # fmt: skip
    info = make_node_info(node(NODE), [user("a", "c1"), user("b", "c2")])
    plugin = plugin_over(cluster)
    assert cycle(plugin, NEW_POD, info) is None
    cluster.create_object("PersistentVolume", csi_pv("v2"))
    cluster.replace_object("PersistentVolumeClaim", pvc("c2", None, volume_name="v2"))
    assert cycle(plugin, NEW_POD, info) == EXCEEDED
    assert cycle(plugin_over(cluster), NEW_POD, info) == EXCEEDED


def test_a_volume_moved_to_another_driver_stops_counting() -> None:
    cluster = two_bound_claims()
    info = make_node_info(node(NODE), [user("a", "c1"), user("b", "c2")])
    plugin = plugin_over(cluster)
    assert cycle(plugin, NEW_POD, info) == EXCEEDED
    cluster.replace_object("PersistentVolume", csi_pv("v2", GCE))
    assert cycle(plugin, NEW_POD, info) is None


def test_a_deleted_claim_stops_counting() -> None:
    cluster = two_bound_claims()
    info = make_node_info(node(NODE), [user("a", "c1"), user("b", "c2")])
    plugin = plugin_over(cluster)
    assert cycle(plugin, NEW_POD, info) == EXCEEDED
    cluster.delete_object("PersistentVolumeClaim", "default", "c2")
    assert cycle(plugin, NEW_POD, info) is None


def test_a_pod_removed_from_the_node_stops_counting_and_one_added_counts() -> None:
    cluster = two_bound_claims()
    b = user("b", "c2")
    info = make_node_info(node(NODE), [user("a", "c1"), b])
    plugin = plugin_over(cluster)
    assert cycle(plugin, NEW_POD, info) == EXCEEDED
    assert info.remove_pod(b)
    assert cycle(plugin, NEW_POD, info) is None
    info.add_pod(user("b2", "c2"))
    assert cycle(plugin, NEW_POD, info) == EXCEEDED


def test_a_class_given_a_provisioner_counts_an_unbound_claim() -> None:
    cluster = cluster_of(csi_pv("v1"), csi_pv("v-new"), storage_class("sc", provisioner="other.csi"),
                         pvc("c1", None, volume_name="v1"), pvc("c2", "sc"),
                         pvc("c-new", None, volume_name="v-new"))  # fmt: skip
    info = make_node_info(node(NODE), [user("a", "c1"), user("b", "c2")])
    plugin = plugin_over(cluster)
    assert cycle(plugin, NEW_POD, info) is None
    cluster.replace_object("StorageClass", storage_class("sc", provisioner=EBS))
    assert cycle(plugin, NEW_POD, info) == EXCEEDED


# -- any sequence of changes ----------------------------------------------------------------------
CLAIMS = ["c0", "c1", "c2", "c3"]
VOLUMES = ["v0", "v1", "v2", "v3"]
POD_CLAIMS = [("c0",), ("c1",), ("c2", "c3"), ("c0", "c1"), ("c3",)]

change = st.one_of(
    st.tuples(st.just("bind"), st.sampled_from(CLAIMS), st.sampled_from(VOLUMES)),
    st.tuples(st.just("unbind"), st.sampled_from(CLAIMS), st.just("")),
    st.tuples(st.just("delete-claim"), st.sampled_from(CLAIMS), st.just("")),
    st.tuples(st.just("driver"), st.sampled_from(VOLUMES), st.sampled_from([EBS, GCE])),
    st.tuples(st.just("delete-volume"), st.sampled_from(VOLUMES), st.just("")),
    st.tuples(st.just("provisioner"), st.just("sc"), st.sampled_from([EBS, GCE, ""])),
    st.tuples(st.just("add-pod"), st.sampled_from(range(len(POD_CLAIMS))).map(str), st.just("")),
    st.tuples(st.just("remove-pod"), st.sampled_from(range(len(POD_CLAIMS))).map(str), st.just("")),
)


def apply(cluster: InMemoryCluster, info: NodeInfo, step: tuple[str, str, str], added: list[int]) -> None:
    what, name, arg = step
    if what == "bind":
        cluster.delete_object("PersistentVolumeClaim", "default", name)
        cluster.create_object("PersistentVolumeClaim", pvc(name, "sc", volume_name=arg))
    elif what == "unbind":
        cluster.delete_object("PersistentVolumeClaim", "default", name)
        cluster.create_object("PersistentVolumeClaim", pvc(name, "sc"))
    elif what == "delete-claim":
        cluster.delete_object("PersistentVolumeClaim", "default", name)
    elif what == "driver":
        cluster.delete_object("PersistentVolume", "", name)
        cluster.create_object("PersistentVolume", csi_pv(name, arg))
    elif what == "delete-volume":
        cluster.delete_object("PersistentVolume", "", name)
    elif what == "provisioner":
        cluster.delete_object("StorageClass", "", name)
        cluster.create_object("StorageClass", storage_class(name, provisioner=arg))
    else:
        index = int(name)
        the_pod = user(f"p{index}-{len(added)}", *POD_CLAIMS[index])
        if what == "add-pod":
            info.add_pod(the_pod)
            added.append(index)
        else:
            for existing in list(info.pods):
                if existing.name.startswith(f"p{index}-"):
                    info.remove_pod(existing)
                    break


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(change, max_size=12), limit=st.integers(1, 3))
def test_the_kept_count_answers_as_a_count_from_scratch(steps: list[tuple[str, str, str]], limit: int) -> None:
    cluster = cluster_of(*(csi_pv(v) for v in VOLUMES), csi_pv("v-new"), storage_class("sc", provisioner=EBS),
                         *(pvc(c, "sc", volume_name=v) for c, v in zip(CLAIMS, VOLUMES, strict=True)),
                         pvc("c-new", None, volume_name="v-new"), limit=limit)  # fmt: skip
    info = make_node_info(node(NODE), [user("a", "c0"), user("b", "c1", "c2")])
    kept = plugin_over(cluster)
    added: list[int] = []
    for step in steps:
        apply(cluster, info, step, added)
        assert cycle(kept, NEW_POD, info) == cycle(plugin_over(cluster, counted=False), NEW_POD, info), step


def test_a_backend_without_counters_keeps_nothing() -> None:
    cluster = cluster_of(csi_pv("v1"), csi_pv("v-new"), pvc("c1", None, volume_name="v1"), pvc("c2", None),
                         pvc("c-new", None, volume_name="v-new"))  # fmt: skip
    info = make_node_info(node(NODE), [user("a", "c1"), user("b", "c2")])
    plugin = plugin_over(cluster, counted=False)
    assert cycle(plugin, NEW_POD, info) is None
    cluster.create_object("PersistentVolume", csi_pv("v2"))
    cluster.replace_object("PersistentVolumeClaim", pvc("c2", None, volume_name="v2"))
    assert cycle(plugin, NEW_POD, info) == EXCEEDED
