"""The pod lifecycle in the cache: Assume, FinishBinding, Add, Forget, Expire, Update, Remove.

Upstream: ``pkg/scheduler/backend/cache/cache.go`` and its ``cache_test.go``
(TestAssumePodScheduled, TestExpirePod, TestAddPodWillConfirm, TestAddPodWillReplaceAssumed,
TestAddPodAfterExpiration, TestUpdatePod, TestRemovePod, TestForgetPod).
After every step the node aggregates and the columns rows are recomputed and compared, and
the snapshot must stay the same object: no pod operation is a structural change.
"""

from __future__ import annotations

import pytest

from scheduler_core.cache import Cache, CacheError
from tests import wrappers
from tests.unit.cache.steps import Step, check_consistent, new_cache, pod_spec, run

GI = 1024**3
MI = 1024**2
# Pod -> (requested milli-CPU, requested memory, non-zero milli-CPU, non-zero memory).
AGGREGATES = {"p": (500, GI, 500, GI), "q": (0, 0, 100, 200 * MI)}


def where(cache: Cache, pod: str) -> str:
    """``assumed@n1``, ``added@n1`` or ``absent``."""
    cached = cache.get_pod(wrappers.pod_info(pod, **pod_spec(pod)))
    if cached is None:
        return "absent"
    return f"{'assumed' if cache.is_assumed_pod(cached) else 'added'}@{cached.node_name}"


def expected_aggregates(states: dict[str, str], node: str) -> tuple[int, int, int, int]:
    on_node = [AGGREGATES[p] for p, s in states.items() if s != "absent" and s.split("@")[1] == node]
    return (
        sum(a[0] for a in on_node),
        sum(a[1] for a in on_node),
        sum(a[2] for a in on_node),
        sum(a[3] for a in on_node),
    )


LIFECYCLE = [
    pytest.param(
        0.0,
        [(("assume", "p", "n1"), "assumed@n1"), (("add", "p", "n1"), "added@n1")],
        id="assume-add-confirms",
    ),
    pytest.param(0.0, [(("assume", "p", "n1"), "assumed@n1"), (("forget", "p", "n1"), "absent")], id="assume-forget"),
    pytest.param(
        0.0,
        [(("assume", "p", "n1"), "assumed@n1"), (("add", "p", "n2"), "added@n2")],
        id="add-on-another-node-moves-assumed-pod",
    ),
    pytest.param(
        0.0,
        [(("assume", "p", "n1"), "assumed@n1"), (("tick", 1e9), "assumed@n1")],
        id="assumed-pods-never-expire",  # v1.36.3 pkg/scheduler/backend/cache/cache.go has no expiry
    ),
    pytest.param(
        0.0, [(("assume", "p", "n1"), "assumed@n1"), (("remove", "p", "n1"), "absent")], id="remove-assumed-pod"
    ),
    pytest.param(0.0, [(("add", "p", "n1"), "added@n1"), (("remove", "p", "n1"), "absent")], id="add-remove"),
    pytest.param(
        0.0,
        [(("add", "p", "n1"), "added@n1"), (("remove", "p", ""), "absent")],
        id="remove-with-empty-node-name-uses-cached-node",
    ),
    pytest.param(
        0.0,
        [(("add", "q", "n2"), "added@n2"), (("remove", "q", "n2"), "absent")],
        id="pod-without-requests-counts-non-zero-defaults",
    ),
]


@pytest.mark.parametrize(("unused", "steps"), LIFECYCLE)
def test_lifecycle(unused: float, steps: list[tuple[Step, str]]) -> None:
    cache, clock = new_cache("n1", "n2")
    snapshot = cache.update_snapshot()
    pod = steps[0][0][1]
    for step, expected in steps:
        run(cache, clock, step)
        assert where(cache, pod) == expected, step
        assert cache.update_snapshot() is snapshot
        check_consistent(cache, snapshot)
        for node in ("n1", "n2"):
            info = snapshot.get(node)
            assert info is not None
            got = (
                info.requested.milli_cpu,
                info.requested.memory,
                info.non_zero_requested.milli_cpu,
                info.non_zero_requested.memory,
            )
            assert got == expected_aggregates({pod: expected}, node), (step, node)
        assert cache.pod_count() == (0 if expected == "absent" else 1)


def test_add_replaces_the_assumed_copy_with_the_cluster_pod() -> None:
    cache, _ = new_cache("n1")
    cache.assume_pod(wrappers.pod_info("p", **pod_spec("p")).with_node("n1"))
    bound = wrappers.pod_info("p", node_name="n1", **pod_spec("p", labels={"bound": "yes"}))
    cache.add_pod(bound)
    assert cache.get_pod(bound) is bound
    info = cache.get_node("n1")
    assert info is not None
    assert info.pods == [bound]
    assert not cache.is_assumed_pod(bound)


def test_update_pod_changes_requests_in_place() -> None:
    cache, clock = new_cache("n1")
    snapshot = cache.update_snapshot()
    run(cache, clock, ("add", "p", "n1"))
    run(cache, clock, ("update", "p", "n1", "2"))
    info = snapshot.get("n1")
    assert info is not None
    assert info.requested.milli_cpu == 2000
    assert int(snapshot.columns.req_cpu[info.row]) == 2000
    assert cache.pod_count() == 1
    check_consistent(cache, snapshot)


def test_scalar_resources_and_host_ports_follow_the_pod() -> None:
    cache, clock = new_cache("n1")
    snapshot = cache.update_snapshot()
    run(cache, clock, ("assume", "g", "n1"))
    info = snapshot.get("n1")
    assert info is not None
    assert info.requested.scalar_resources["example.com/gpu"] == 2
    assert int(snapshot.columns.requested("example.com/gpu")[info.row]) == 2
    assert len(info.used_ports) == 1
    check_consistent(cache, snapshot)
    run(cache, clock, ("forget", "g", "n1"))
    assert int(snapshot.columns.requested("example.com/gpu")[info.row]) == 0
    assert info.used_ports == {}
    check_consistent(cache, snapshot)


ERRORS = [
    pytest.param(
        [("assume", "p", "n1")],
        ("assume", "p", "n1"),
        r"^pod uid-p\(default/p\) is in the cache, so can't be assumed$",
        id="assume-twice",
    ),
    pytest.param(
        [("add", "p", "n1")],
        ("assume", "p", "n1"),
        r"^pod uid-p\(default/p\) is in the cache, so can't be assumed$",
        id="assume-an-added-pod",
    ),
    pytest.param(
        [("add", "p", "n1")],
        ("forget", "p", "n1"),
        r"^pod uid-p\(default/p\) wasn't assumed so cannot be forgotten$",
        id="forget-an-added-pod",
    ),
    pytest.param(
        [],
        ("forget", "p", "n1"),
        r"^pod uid-p\(default/p\) wasn't assumed so cannot be forgotten$",
        id="forget-unknown",
    ),
    pytest.param(
        [("assume", "p", "n1")],
        ("forget", "p", "n2"),
        r"^pod uid-p\(default/p\) was assumed on n2 but assigned to n1$",
        id="forget-on-another-node",
    ),
    pytest.param(
        [("add", "p", "n1")],
        ("add", "p", "n1"),
        r"^pod uid-p\(default/p\) was already in added state$",
        id="add-twice",
    ),
    pytest.param(
        [],
        ("update", "p", "n1", "1"),
        r"^pod uid-p\(default/p\) is not added to scheduler cache, so cannot be updated$",
        id="update-unknown",
    ),
    pytest.param(
        [("assume", "p", "n1")],
        ("update", "p", "n1", "1"),
        r"^assumed pod uid-p\(default/p\) should not be updated$",
        id="update-assumed",
    ),
    pytest.param(
        [("add", "p", "n1")],
        ("update", "p", "n2", "1"),
        r"^pod uid-p\(default/p\) updated on a different node \(n2\) than previously added to \(n1\); "
        r"scheduler cache is corrupted$",
        id="update-onto-another-node",
    ),
    pytest.param(
        [],
        ("remove", "p", "n1"),
        r"^pod uid-p\(default/p\) is not found in scheduler cache, so cannot be removed from it$",
        id="remove-unknown",
    ),
    pytest.param(
        [("add", "p", "n1")],
        ("remove", "p", "n2"),
        r"^pod uid-p\(default/p\) was added to n1 but removed from n2; scheduler cache is corrupted$",
        id="remove-on-another-node",
    ),
    pytest.param([], ("add", "p", ""), r"^pod uid-p\(default/p\) has no node name", id="add-unassigned-pod"),
    pytest.param([], ("node-", "nx"), r"^node nx is not found$", id="remove-unknown-node"),
    pytest.param(
        [("add", "p", "n1"), ("node-", "n1")], ("node-", "n1"), r"^node n1 is not found$", id="remove-removed-node"
    ),
    pytest.param([("add", "p", "n9")], ("node-", "n9"), r"^node n9 is not found$", id="remove-placeholder-node"),
]


@pytest.mark.parametrize(("setup", "step", "message"), ERRORS)
def test_errors_leave_the_cache_unchanged(setup: list[Step], step: Step, message: str) -> None:
    cache, clock = new_cache("n1", "n2")
    for s in setup:
        run(cache, clock, s)
    before = cache.dump()
    with pytest.raises(CacheError, match=message):
        run(cache, clock, step)
    assert cache.dump() == before


def test_assume_requires_a_node_name() -> None:
    cache, _ = new_cache("n1")
    with pytest.raises(CacheError, match=r"^pod uid-p\(default/p\) has no node name"):
        cache.assume_pod(wrappers.pod_info("p", **pod_spec("p")))
    assert cache.pod_count() == 0
