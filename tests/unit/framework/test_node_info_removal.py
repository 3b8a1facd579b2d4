"""NodeInfo.remove_pod as upstream's RemovePod (framework/types.go): the removed pod's place takes
the last pod; a pod not on the node is reported, nothing changes. NodeInfo.remove_pods, many at
once, ends where remove_pod in turn does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.framework import NodeInfo
from scheduler_core.framework.resource import Resource
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


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["0", "100m", "2", "9223372036854775807"]),
            st.sampled_from(["0", "1Mi", "8Gi"]),
            st.sampled_from([0, 1, 2]),
            st.sampled_from([None, [8080], [8080, 9090]]),
        ),
        min_size=1,
        max_size=8,
    ),
    st.data(),
)
def test_removing_pods_at_once_leaves_the_node_as_removing_them_in_turn(
    shapes: list[tuple[str, str, int, list[int] | None]], data: st.DataObject
) -> None:
    """NodeInfo.remove_pods (preemption's dry run) against remove_pod in turn: the same pods in
    the same order, the same sums (int64 wrap-around included) and ports."""
    base = NodeInfo(node("n", extra={"example.com/gpu": "4"}))
    pods = [
        pod_info(
            f"p{i}",
            uid=f"uid-{i}",
            node_name="n",
            requests={"cpu": cpu, "memory": memory, "example.com/gpu": str(gpus)},
            host_ports=ports,
        )
        for i, (cpu, memory, gpus, ports) in enumerate(shapes)
    ]
    for pod in pods:
        base.add_pod(pod)
    chosen = data.draw(st.lists(st.sampled_from(pods), unique_by=lambda p: p.uid))
    absent = pod_info("x", uid="uid-x")
    at_once, in_turn = base.clone(), base.clone()
    at_once.remove_pods([*chosen, absent])
    for pod in [*chosen, absent]:
        in_turn.remove_pod(pod)
    assert [p.uid for p in at_once.pods] == [p.uid for p in in_turn.pods]
    assert vars_of(at_once.requested) == vars_of(in_turn.requested)
    assert vars_of(at_once.non_zero_requested) == vars_of(in_turn.non_zero_requested)
    assert at_once.used_ports == in_turn.used_ports
    assert at_once.generation != base.generation or not chosen


def vars_of(resource: Resource) -> tuple[object, ...]:
    return (
        resource.milli_cpu,
        resource.memory,
        resource.ephemeral_storage,
        dict(resource.scalar_resources),
        resource.allowed_pod_number,
    )
