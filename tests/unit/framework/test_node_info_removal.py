"""NodeInfo.remove_pod as upstream's RemovePod (framework/types.go): the removed pod's place takes
the last pod; a pod not on the node is reported, nothing changes."""

from __future__ import annotations

from scheduler_core.framework import NodeInfo
from tests.wrappers import node, pod_info


def test_the_last_pod_takes_the_removed_ones_place_and_the_sums_follow() -> None:
    info = NodeInfo(node("n"))
    pods = [pod_info(name, uid=f"uid-{name}", node_name="n", cpu="100m") for name in "abcd"]
    for pod in pods:
        info.add_pod(pod)
    assert info.remove_pod(pod_info("b", uid="uid-b")) is True  # another version of b: found by UID
    assert [p.name for p in info.pods] == ["a", "d", "c"]
    assert info.remove_pod(pods[3]) is True
    assert [p.name for p in info.pods] == ["a", "c"]
    assert info.remove_pod(pod_info("x", uid="uid-x")) is False
    assert [p.name for p in info.pods] == ["a", "c"] and info.requested.milli_cpu == 200
