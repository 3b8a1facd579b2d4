"""The structured-parameters allocator against upstream's table cases.

Ids name the case in ``k8s.io/dynamic-resource-allocation@v0.36.3/structured/internal/
allocatortesting/allocator_testing.go`` (``TestAllocator``).
"""

from __future__ import annotations

import gc
import weakref
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler_core.plugins.dynamicresources.allocator import AllocationError, Allocator, SelectorResults, _Allocation
from scheduler_core.plugins.dynamicresources.capacity import AllocatedState

DRIVER = "driver-a"
NODE = "node-1"
CLASS = {
    "metadata": {"name": "class-a"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def dev(name: str, **attrs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if attrs:
        out["attributes"] = {k: ({"int": v} if isinstance(v, int) else {"string": v}) for k, v in attrs.items()}
    return out


def slice_(
    name: str,
    *devices: dict[str, Any],
    pool: str = "pool-1",
    node: str | None = NODE,
    generation: int = 1,
    count: int = 1,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
        "devices": list(devices),
        **spec,
    }
    if (
        node is not None
        and "allNodes" not in spec
        and "nodeSelector" not in spec
        and "perDeviceNodeSelection" not in spec
    ):
        body["nodeName"] = node
    return {"metadata": {"name": name}, "spec": body}


def claim(*requests: dict[str, Any], constraints: list[Any] | None = None, name: str = "claim-0") -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": devices}}


def req(
    name: str = "req-0",
    count: int | None = None,
    mode: str | None = None,
    selector: str | None = None,
    admin: bool = False,
    cls: str = "class-a",
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls}
    if count is not None:
        exactly["count"] = count
    if mode:
        exactly["allocationMode"] = mode
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    if admin:
        exactly["adminAccess"] = True
    return {"name": name, "exactly": exactly}


def run(
    slices: list[Any], claims: list[Any], allocated: set[Any] | None = None, labels: dict[str, str] | None = None
) -> list[list[str]] | None:
    allocator = Allocator({"class-a": CLASS}, slices, allocated or set())
    result = allocator.allocate(labels or {}, NODE, claims)
    if result is None:
        return None
    return [[f"{r['request']}={r['pool']}/{r['device']}" for r in a["devices"]["results"]] for a in result]


CASES = [
    pytest.param([slice_("s", dev("d1"))], [claim(req())], [["req-0=pool-1/d1"]], id="simple"),
    pytest.param([slice_("s", dev("d1"))], [claim(req(count=2))], None, id="not-enough-suitable-devices"),
    pytest.param([slice_("s", dev("d1"), dev("d2"))], [claim(req(count=2))], [["req-0=pool-1/d1", "req-0=pool-1/d2"]],
                 id="small-and-large"),
    pytest.param([slice_("s", dev("d1"), dev("d2"))], [claim(req(name="a")), claim(req(name="b"), name="claim-1")],
                 [["a=pool-1/d1"], ["b=pool-1/d2"]], id="small-and-large-backtrack-claims (two claims)"),
    pytest.param([slice_("s", dev("d1"), dev("d2"))], [claim(req(mode="All"))],
                 [["req-0=pool-1/d1", "req-0=pool-1/d2"]], id="all-devices-many"),
    pytest.param([slice_("s", dev("d1"), dev("d2"))], [claim(req(mode="All"))], None,
                 id="all-devices-some-allocated"),  # with d1 allocated below
    pytest.param([slice_("s", dev("d1"))], [claim(req())], None, id="already-allocated-devices"),
    pytest.param([slice_("s", dev("d1"))], [claim(req(admin=True))], [["req-0=pool-1/d1"]], id="admin-access-enabled"),
    pytest.param([slice_("s", dev("d1", model="x"), dev("d2", model="y"))],
                 [claim(req(selector='device.attributes["driver-a"].model == "y"'))], [["req-0=pool-1/d2"]],
                 id="prioritized-list-subrequests-with-expressions (a request selector)"),
    pytest.param([slice_("s", dev("d1", numa=1), dev("d2", numa=2), dev("d3", numa=2))],
                 [claim(req(name="a"), req(name="b"), constraints=[{"matchAttribute": "driver-a/numa"}])],
                 [["a=pool-1/d2", "b=pool-1/d3"]], id="with-constraint-for-request-retry"),
    pytest.param([slice_("s", dev("d1", numa=1), dev("d2", numa=2))],
                 [claim(req(name="a"), req(name="b"), constraints=[{"matchAttribute": "driver-a/numa"}])], None,
                 id="with-constraint-not-matching-int-attribute"),
    pytest.param([slice_("s", dev("d1"), node="other-node")], [claim(req())], None, id="other-node"),
    pytest.param([slice_("s", dev("d1"), allNodes=True)], [claim(req())], [["req-0=pool-1/d1"]],
                 id="network-attached-device"),
    pytest.param([slice_("s1", dev("d1"), generation=1), slice_("s2", dev("d2"), generation=2)], [claim(req())],
                 [["req-0=pool-1/d2"]], id="obsolete-slice"),
    pytest.param([slice_("s1", dev("d1"), count=2)], [claim(req())], None,
                 id="all-devices-of-the-incomplete-pool (count mode: pool skipped)"),
    pytest.param([slice_("s", dev("small", mem=1), dev("big", mem=2))],
                 [claim({"name": "req-0", "firstAvailable": [
                     {"name": "sub-big", "deviceClassName": "class-a",
                      "selectors": [{"cel": {"expression": 'device.attributes["driver-a"].mem == 2'}}]},
                     {"name": "sub-any", "deviceClassName": "class-a"}]})],
                 [["req-0/sub-big=pool-1/big"]], id="prioritized-list-multi-request (first subrequest fits)"),
    pytest.param([slice_("s", dev("small", mem=1))],
                 [claim({"name": "req-0", "firstAvailable": [
                     {"name": "sub-big", "deviceClassName": "class-a",
                      "selectors": [{"cel": {"expression": 'device.attributes["driver-a"].mem == 2'}}]},
                     {"name": "sub-any", "deviceClassName": "class-a"}]})],
                 [["req-0/sub-any=pool-1/small"]], id="prioritized-list-first-unavailable"),
]  # fmt: skip


@pytest.mark.parametrize(("slices", "claims", "expected"), CASES)
def test_allocate_as_upstream(
    slices: list[Any], claims: list[Any], expected: Any, request: pytest.FixtureRequest
) -> None:
    allocated = {(DRIVER, "pool-1", "d1")} if "already-allocated" in request.node.name or "admin" in request.node.name \
        else set()  # fmt: skip
    if "all-devices-some-allocated" in request.node.name:
        allocated = {(DRIVER, "pool-1", "d1")}
        # validateDeviceRequest counts every selectable device; one in use makes All fail.
        assert run(slices, claims, allocated) is None
        return
    assert run(slices, claims, allocated) == expected


def test_tainted_devices_as_upstream() -> None:
    taint = {"key": "example.com/broken", "value": "yes", "effect": "NoSchedule"}
    slices = [slice_("s", {"name": "d1", "taints": [taint]}, {"name": "d2", "taints": [taint]})]
    assert run(slices, [claim(req())]) is None  # "tainted-two-devices"
    tolerating = req()
    tolerating["exactly"]["tolerations"] = [{"key": "example.com/broken", "operator": "Exists"}]
    assert run(slices, [claim(tolerating)]) == [["req-0=pool-1/d1"]]  # "tainted-two-devices-tolerated"
    no_effect = [slice_("s", {"name": "d1", "taints": [{**taint, "effect": "None"}]})]
    assert run(no_effect, [claim(req())]) == [["req-0=pool-1/d1"]]  # "tainted-no-effect"


def counters_slices() -> list[Any]:
    """A partitionable GPU: 8 memory units shared by a whole device and two halves."""
    shared = {"metadata": {"name": "counters"}, "spec": {"driver": DRIVER, "nodeName": NODE,
              "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
              "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}]}}  # fmt: skip

    def part(name: str, memory: str) -> dict[str, Any]:
        return {"name": name, "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}]}

    devices = slice_("devices", part("whole", "8Gi"), part("half-0", "4Gi"), part("half-1", "4Gi"), count=2)
    return [shared, devices]


def test_partitionable_devices_share_counters() -> None:
    # allocator_testing.go "partitionable-devices-*": the whole device uses all counters.
    assert run(counters_slices(), [claim(req(count=2))]) == [["req-0=pool-1/half-0", "req-0=pool-1/half-1"]]
    # The first claim's "whole" leaves no memory for the second: backtracking takes the halves.
    assert run(counters_slices(), [claim(req()), claim(req(), name="c2")]) == [
        ["req-0=pool-1/half-0"],
        ["req-0=pool-1/half-1"],
    ]
    assert run(counters_slices(), [claim(req())]) == [["req-0=pool-1/whole"]]
    assert run(counters_slices(), [claim(req(count=3))]) is None


def test_counters_of_allocated_devices_are_used() -> None:
    slices = counters_slices()
    allocator = Allocator({"class-a": CLASS}, slices, {(DRIVER, "pool-1", "whole")})
    assert allocator.allocate({}, NODE, [claim(req())]) is None


def two_gpu_slices() -> list[Any]:
    """Two counter sets of 8 memory units: gpu-0 with a whole device and two halves, gpu-1 whole."""
    sets = [{"name": gpu, "counters": {"memory": {"value": "8Gi"}}} for gpu in ("gpu-0", "gpu-1")]
    pool = {"name": "pool-1", "generation": 1, "resourceSliceCount": 2}
    shared = {"metadata": {"name": "counters"},
              "spec": {"driver": DRIVER, "nodeName": NODE, "pool": pool, "sharedCounters": sets}}  # fmt: skip

    def part(name: str, gpu: str, memory: str) -> dict[str, Any]:
        return {"name": name, "consumesCounters": [{"counterSet": gpu, "counters": {"memory": {"value": memory}}}]}

    devices = slice_("devices", part("half-0", "gpu-0", "4Gi"), part("whole-0", "gpu-0", "8Gi"),
                     part("whole-1", "gpu-1", "8Gi"), count=2)  # fmt: skip
    return [shared, devices]


@pytest.mark.parametrize(
    ("allocated", "expected"),
    [
        # gpu-0 used up exactly: its devices no longer fit, gpu-1's does.
        pytest.param({"whole-0"}, [["req-0=pool-1/whole-1"]], id="one-set-used-up"),
        # gpu-0 overdrawn (12 of 8 units): upstream checks every counter of the pool for each
        # device (checkAvailableCounters), so nothing in the pool fits, not even gpu-1's device.
        pytest.param({"whole-0", "half-0"}, None, id="one-set-overdrawn"),
    ],
)
def test_counters_are_checked_over_the_whole_pool(allocated: set[str], expected: list[list[str]] | None) -> None:
    allocator = Allocator({"class-a": CLASS}, two_gpu_slices(), {(DRIVER, "pool-1", d) for d in allocated})
    result = allocator.allocate({}, NODE, [claim(req())])
    assert (None if result is None else [[f"{r['request']}={r['pool']}/{r['device']}" for r in
            a["devices"]["results"]] for a in result]) == expected  # fmt: skip


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        pytest.param([claim(req(cls="missing"))], "could not retrieve device class missing", id="unknown-class"),
        pytest.param([claim(req(count=33))], "exact count 33 is too large", id="too-many-devices-single-request"),
        pytest.param([claim(req(selector="1 +"))], "selector #0: CEL compile error", id="invalid-CEL-one-device"),
        pytest.param([claim(req(selector="device.attributes[\"driver-a\"].x > 0"))], "CEL runtime error",
                     id="invalid-CEL-one-device-class (runtime error)"),
        pytest.param([claim({"name": "r", "exactly": {"deviceClassName": "class-a", "allocationMode": "All"}})],
                     "currently being updated", id="all-devices-of-the-incomplete-pool"),
    ],
)  # fmt: skip
def test_errors_as_upstream(claims: list[Any], message: str) -> None:
    slices = [slice_("s", dev("d1"), count=2 if "being updated" in message else 1)]
    with pytest.raises(AllocationError, match=message):
        run(slices, claims)


@settings(max_examples=60, deadline=None)
@given(
    devices=st.integers(min_value=0, max_value=6),
    counts=st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=6),
)
def test_no_device_is_ever_allocated_twice(devices: int, counts: list[int]) -> None:
    slices = [slice_("s", *(dev(f"d{i}") for i in range(devices)))]
    taken: set[str] = set()
    for n, count in enumerate(counts):
        allocator = Allocator({"class-a": CLASS}, slices, {(DRIVER, "pool-1", d) for d in taken})
        result = allocator.allocate({}, NODE, [claim(req(count=count), name=f"c{n}")])
        if result is None:
            assert devices - len(taken) < count
            continue
        got = [r["device"] for r in result[0]["devices"]["results"]]
        assert len(got) == count and not taken & set(got) and len(set(got)) == count
        taken |= set(got)


def test_a_device_in_use_is_skipped_before_its_selectors_run() -> None:
    # allocateOne: "Checking for "in use" is cheap and thus gets done first." A selector that
    # would fail on the device in use (it lacks the attribute) is never evaluated on it.
    slices = [slice_("s", dev("d1"), dev("d2", x=1))]
    claims = [claim(req(selector='device.attributes["driver-a"].x == 1'))]
    assert run(slices, claims, allocated={(DRIVER, "pool-1", "d1")}) == [["req-0=pool-1/d2"]]
    with pytest.raises(AllocationError, match="CEL runtime error"):
        run(slices, claims)  # d1 free: its selector is evaluated, and fails


def test_one_allocator_answers_each_node_on_its_own() -> None:
    # The requests are validated once per cycle; the constraints' state is the node's own.
    slices = [
        slice_("s1", dev("a1", numa=1), dev("a2", numa=1), pool="p1", node="node-1"),
        slice_("s2", dev("b1", numa=2), dev("b2", numa=3), dev("b3", numa=2), pool="p2", node="node-2"),
    ]
    claims = [claim(req(name="a"), req(name="b"), constraints=[{"matchAttribute": "driver-a/numa"}])]
    allocator = Allocator({"class-a": CLASS}, slices, set())
    devices = [[r["device"] for r in a["devices"]["results"]] for a in allocator.allocate({}, "node-1", claims) or ()]
    assert devices == [["a1", "a2"]]
    devices = [[r["device"] for r in a["devices"]["results"]] for a in allocator.allocate({}, "node-2", claims) or ()]
    assert devices == [["b1", "b3"]]
    assert allocator.allocate({}, "node-3", claims) is None
    other = [claim(req(cls="missing"))]  # other claims: validated again, their error on every node
    for node in ("node-1", "node-2"):
        with pytest.raises(AllocationError, match="could not retrieve device class missing"):
            allocator.allocate({}, node, other)


def _device(i: int, x: int, tainted: bool, partition: bool) -> dict[str, Any]:
    device = dev(f"d{i}", x=x)
    if tainted:
        device["taints"] = [{"key": "example.com/broken", "effect": "NoSchedule"}]
    if partition:
        device["consumesCounters"] = [{"counterSet": "gpu", "counters": {"memory": {"value": "4Gi"}}}]
    return device


@settings(max_examples=80, deadline=None)
@given(
    devices=st.lists(st.tuples(st.integers(0, 1), st.booleans(), st.booleans(), st.booleans()), max_size=8),
    count=st.integers(min_value=1, max_value=4),
    selected=st.booleans(),
    tolerated=st.booleans(),
)
def test_one_request_is_taken_in_order_as_the_search_takes_it(
    devices: list[tuple[int, bool, bool, bool]], count: int, selected: bool, tolerated: bool
) -> None:
    """A claim of one request skips the recursive search (``_allocate_in_order``); whatever the
    devices (in use, tainted, not selected, consuming shared counters), it finds what the search
    finds."""
    shared = {"metadata": {"name": "a-counters"}, "spec": {"driver": DRIVER, "nodeName": NODE,
              "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 2},
              "sharedCounters": [{"name": "gpu", "counters": {"memory": {"value": "8Gi"}}}]}}  # fmt: skip
    slices = [shared, slice_("s", *(_device(i, *d[:3]) for i, d in enumerate(devices)), count=2)]
    allocated = {(DRIVER, "pool-1", f"d{i}") for i, d in enumerate(devices) if d[3]}
    request = req(count=count, selector='device.attributes["driver-a"].x == 1' if selected else None)
    if tolerated:
        request["exactly"]["tolerations"] = [{"key": "example.com/broken", "operator": "Exists"}]
    in_order = run(slices, [claim(request)], allocated)
    with patch.object(_Allocation, "_only_request", return_value=None):
        assert run(slices, [claim(request)], allocated) == in_order


def test_results_are_built_for_the_nodes_asked_only() -> None:
    slices = [slice_(f"s{n}", dev("d1"), pool=f"p{n}", node=f"node-{n}") for n in range(3)]
    allocator = Allocator({"class-a": CLASS}, slices, set())
    with patch.object(_Allocation, "_result", autospec=True, side_effect=_Allocation._result) as built:
        found = [allocator.find({}, f"node-{n}", [claim(req())]) for n in range(3)]
        assert built.call_count == 0
        assert found[1] is not None
        assert [r["pool"] for r in found[1].results()[0]["devices"]["results"]] == ["p1"]
        assert found[1].results() is found[1].results()
        assert built.call_count == 1


def partitionable_pools(pools: int) -> list[Any]:
    """Upstream's Partitionable workload (``dra/templates/resourceslice-partitionable-*.yaml``):
    per pool, a counter set of four and six devices, every node with the label targeted."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "node-with-dra", "operator": "In", "values": ["true"]}]}]}  # fmt: skip
    slices: list[Any] = []
    for n in range(pools):
        pool = {"name": f"resourceslice-{n}", "generation": 1, "resourceSliceCount": 2}
        counters = {f"counter{i}": {"value": "1"} for i in range(1, 5)}
        slices.append({"metadata": {"name": f"resourceslice-countersets-{n}"}, "spec": {
            "driver": DRIVER, "pool": pool, "nodeSelector": selector,
            "sharedCounters": [{"name": "counter-set", "counters": counters}]}})  # fmt: skip

        def part(name: str, *used: int, n: int = n) -> dict[str, Any]:
            return {"name": name, "attributes": {"dra.example.com/slice": {"int": n}},
                    "capacity": {"counters": {"value": str(len(used))}},
                    "consumesCounters": [{"counterSet": "counter-set",
                                          "counters": {f"counter{i}": {"value": "1"} for i in used}}]}  # fmt: skip

        devices = [part("device-2-counters-1", 1, 2), part("device-2-counters-2", 3, 4),
                   *(part(f"device-1-counter-{i}", i) for i in range(1, 5))]  # fmt: skip
        slices.append(
            {
                "metadata": {"name": f"resourceslice-devices-{n}"},
                "spec": {"driver": DRIVER, "pool": pool, "nodeSelector": selector, "devices": devices},
            }
        )
    return slices


def two_devices_of_one_slice() -> dict[str, Any]:
    """``resourceclaimtemplate-for-two-devices.yaml``'s claim."""
    return claim(req(count=2), constraints=[{"requests": ["req-0"], "matchAttribute": "dra.example.com/slice"}])


def test_nodes_the_same_slices_target_share_one_search() -> None:
    # Partitionable: each pool's first device allocated, so a claim's first device
    # (device-2-counters-2) leaves no second one in its pool; the search backtracks to the two
    # one-counter devices. Every labelled node has the same pools: one search answers them all,
    # each node with its own results. An unlabelled node has no pool.
    slices = partitionable_pools(3)
    allocated = {(DRIVER, f"resourceslice-{n}", "device-2-counters-1") for n in range(3)}
    allocator = Allocator({"class-a": CLASS}, slices, allocated)
    labels, claims = {"node-with-dra": "true"}, [two_devices_of_one_slice()]
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        found = [allocator.find(labels, f"node-{n}", list(claims)) for n in range(4)]
        assert allocator.find({}, "bare", list(claims)) is None
        assert searched.call_count == 2  # the labelled nodes once, the unlabelled one once
    for one in found:
        assert one is not None
        results = one.results()[0]["devices"]["results"]
        assert [(r["pool"], r["device"]) for r in results] == [
            ("resourceslice-0", "device-1-counter-3"),
            ("resourceslice-0", "device-1-counter-4"),
        ]
    first, second = found[0], found[1]
    assert first is not None and second is not None
    assert first.results() is not second.results()  # each node's own, built when asked
    other = claim(req(count=2), name="other")  # other claims: searched again
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        assert allocator.find(labels, "node-0", [other]) is not None
        assert searched.call_count == 1


def test_a_search_of_per_node_slices_answers_its_node_only() -> None:
    # nodeName slices: each node its own pools and selector; per-device node selection: the
    # same pools, but each device's own node decides.
    by_name = [slice_(f"s{n}", dev("d1"), pool=f"p{n}", node=f"node-{n}") for n in range(2)]
    allocator = Allocator({"class-a": CLASS}, by_name, set())
    for n in range(2):
        found = allocator.find({}, f"node-{n}", [claim(req())])
        assert found is not None
        allocation = found.results()[0]
        assert allocation["devices"]["results"][0]["pool"] == f"p{n}"
        assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [f"node-{n}"]
    per_device = [slice_("s", {"name": "d0", "nodeName": "node-0"}, {"name": "d1", "nodeName": "node-1"},
                         perDeviceNodeSelection=True)]  # fmt: skip
    allocator = Allocator({"class-a": CLASS}, per_device, set())
    for n in range(2):
        found = allocator.find({}, f"node-{n}", [claim(req())])
        assert found is not None
        allocation = found.results()[0]
        assert allocation["devices"]["results"][0]["device"] == f"d{n}"
        assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [f"node-{n}"]


def shared_and_node_pools(nodes: int, shared: int) -> list[Any]:
    """ConsumableCapacity's shape: pools that every labelled node's selector matches
    (``resourceslice-N``), and a pool of each node's own driver (createResourceDriver's
    ``nodeName`` slice, named after the node: it sorts after them)."""
    selector = {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "node-with-dra", "operator": "In", "values": ["true"]}]}]}  # fmt: skip
    slices = [slice_(f"resourceslice-{n}", dev("d"), pool=f"resourceslice-{n}", node=None, nodeSelector=selector)
              for n in range(shared)]  # fmt: skip
    slices += [slice_(f"own-{n}", dev("d"), pool=f"scheduler-perf-dra-{n}", node=f"scheduler-perf-dra-{n}")
               for n in range(nodes)]  # fmt: skip
    return slices


def test_nodes_with_pools_of_their_own_share_a_search_that_stays_in_the_common_pools() -> None:
    # Each node also has a pool of its own, after the common ones: a search that found its
    # devices before reaching it answers every node with the same common pools.
    labels = {"node-with-dra": "true"}
    slices = shared_and_node_pools(nodes=4, shared=3)
    allocator = Allocator({"class-a": CLASS}, slices, {(DRIVER, "resourceslice-0", "d")})
    claims = [claim(req(count=2))]  # the same objects for every node, as the plugin passes them
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        found = [allocator.find(labels, f"scheduler-perf-dra-{n}", claims) for n in range(4)]
        assert searched.call_count == 1
    for one in found:
        assert one is not None
        assert [(r["pool"], r["device"]) for r in one.results()[0]["devices"]["results"]] == [
            ("resourceslice-1", "d"),
            ("resourceslice-2", "d"),
        ]
    # Three devices: the search reaches each node's own pool, so it answers for its node only
    # (and, renamed, for the nodes whose own pools are alike: the last node's differs).
    slices[-1]["spec"]["devices"] = [dev("d", model="other")]
    allocator = Allocator({"class-a": CLASS}, slices, {(DRIVER, "resourceslice-0", "d")})
    claims = [claim(req(count=3))]
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        found = [allocator.find(labels, f"scheduler-perf-dra-{n}", claims) for n in range(4)]
        assert searched.call_count == 2
    for n, one in enumerate(found):
        assert one is not None
        assert [r["pool"] for r in one.results()[0]["devices"]["results"]] == [
            "resourceslice-1",
            "resourceslice-2",
            f"scheduler-perf-dra-{n}",
        ]
        selector = one.results()[0]["nodeSelector"]["nodeSelectorTerms"][0]
        assert selector["matchFields"][0]["values"] == [f"scheduler-perf-dra-{n}"]
    # Four: no node has them; each node's search reaches its own pool and fails.
    allocator = Allocator({"class-a": CLASS}, slices, {(DRIVER, "resourceslice-0", "d")})
    claims = [claim(req(count=4))]
    assert all(allocator.find(labels, f"scheduler-perf-dra-{n}", claims) is None for n in range(4))


def test_a_device_of_another_constraint_value_takes_no_counters() -> None:
    # Without an error at stake, the constraints are asked before the counters are taken: the
    # second device of each other pool is never counted (same answer, less work).
    slices = partitionable_pools(3)
    allocated = {(DRIVER, f"resourceslice-{n}", "device-2-counters-1") for n in range(3)}
    allocator = Allocator({"class-a": CLASS}, slices, allocated)
    with patch.object(_Allocation, "_take_counters", autospec=True, side_effect=_Allocation._take_counters) as taken:
        found = allocator.find({"node-with-dra": "true"}, NODE, [two_devices_of_one_slice()])
    assert found is not None
    assert {device["name"] for _, _, device in (call.args for call in taken.call_args_list)} <= {
        "device-2-counters-2",
        *(f"device-1-counter-{i}" for i in range(1, 5)),
    }
    # pool 0's five free devices for the first device, and for the second only pool 0's
    assert all(call.args[1].name == "resourceslice-0" for call in taken.call_args_list)


def test_selector_results_stay_right_when_cleared() -> None:
    slices = [slice_("s", *(dev(f"d{i}", x=i % 2) for i in range(6)))]
    results = SelectorResults()
    with patch.object(SelectorResults, "MAX_ENTRIES", 3):
        for _ in range(3):
            allocator = Allocator({"class-a": CLASS}, slices, set(), results)
            found = allocator.allocate({}, NODE, [claim(req(count=3, selector='device.attributes["driver-a"].x == 1'))])
            assert found is not None
            assert [r["device"] for r in found[0]["devices"]["results"]] == ["d1", "d3", "d5"]


def own_pools(nodes: int, devices: int, odd: int | None = None) -> list[Any]:
    """createResourceDriver's shape: each node one slice of its own (``nodeName``, a pool named
    after the node), with alike devices; node ``odd``'s devices differ in one attribute."""
    slices = []
    for n in range(nodes):
        devices_ = [dev(f"instance-{i}", model="H100" if n == odd else "A100", numa=i) for i in range(devices)]
        slices.append(slice_(f"s{n}", *devices_, pool=f"node-{n}", node=f"node-{n}"))
    return slices


def test_nodes_whose_own_slices_are_alike_share_a_search_per_devices_in_use() -> None:
    # One search per kind of node: the same devices, the same ones of them in use. Its answer
    # is renamed to each node's pool, devices and node selector.
    slices = own_pools(nodes=6, devices=3, odd=4)
    allocated = {(DRIVER, "node-0", "instance-0"), (DRIVER, "node-1", "instance-0")}
    allocator = Allocator({"class-a": CLASS}, slices, allocated)
    claims = [claim(req())]
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        found = [allocator.find({}, f"node-{n}", claims) for n in range(6)]
        assert searched.call_count == 3  # nodes 0-1, nodes 2, 3, 5, node 4 (other devices)
    for n, one in enumerate(found):
        assert one is not None
        allocation = one.results()[0]
        assert [(r["pool"], r["device"]) for r in allocation["devices"]["results"]] == [
            (f"node-{n}", "instance-1" if n < 2 else "instance-0")
        ]
        assert allocation["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [f"node-{n}"]
    # Three devices fit on the nodes with none in use only; "does not fit" is shared too.
    allocator = Allocator({"class-a": CLASS}, slices, allocated)
    claims = [claim(req(count=3))]
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        fits = [allocator.find({}, f"node-{n}", claims) is not None for n in range(6)]
        assert searched.call_count == 3
    assert fits == [False, False, True, True, True, True]
    # Another device in use on node 1: nodes 0 and 1 differ now.
    allocator = Allocator({"class-a": CLASS}, slices, allocated | {(DRIVER, "node-1", "instance-2")})
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        devices = [allocator.allocate({}, f"node-{n}", [claim(req(count=2))]) for n in range(2)]
        assert searched.call_count == 2
    assert [[r["device"] for r in d[0]["devices"]["results"]] for d in devices if d] == [["instance-1", "instance-2"]]
    assert devices[1] is None


def test_a_cycles_allocator_is_freed_by_reference_counting_once_dropped() -> None:
    # A cycle's allocator and its searches are freed as soon as nothing holds them, not left to
    # the cyclic collector: on ExtendedResource_50Classes 5000pods_500nodes they made 0.9 GiB
    # of garbage that waited for it. A Found is read after the allocator is gone.
    slices = own_pools(nodes=3, devices=3, odd=2)
    allocated = {(DRIVER, "node-0", "instance-0")}
    gc.disable()
    try:
        allocator = Allocator({"class-a": CLASS}, slices, allocated)
        found = [allocator.find({}, f"node-{n}", [claim(req(count=2))]) for n in range(3)]
        freed, search = weakref.ref(allocator), weakref.ref(found[0]._allocation)  # type: ignore[union-attr]
        del allocator
        assert freed() is None
        taken = [[(r["pool"], r["device"]) for r in f.results()[0]["devices"]["results"]] for f in found if f]
        del found
        assert search() is None
        assert taken == [
            [("node-0", "instance-1"), ("node-0", "instance-2")],
            [("node-1", "instance-0"), ("node-1", "instance-1")],  # none in use (node 2: another model)
            [("node-2", "instance-0"), ("node-2", "instance-1")],
        ]
    finally:
        gc.enable()


def test_shares_of_a_device_set_nodes_apart_by_what_they_consume() -> None:
    # Consumable capacity: a device shared by one claim, another by a claim that consumes
    # more, and a third node with no share. Three kinds of node, three searches.
    capacity = {"memory": {"value": "4"}}
    device = {"name": "gpu", "allowMultipleAllocations": True, "capacity": capacity}
    slices = [slice_(f"s{n}", device, pool=f"node-{n}", node=f"node-{n}") for n in range(4)]
    allocated = AllocatedState()
    for n, amount in ((0, "3"), (1, "1"), (3, "3")):
        allocated.add_allocation({"devices": {"results": [{"driver": DRIVER, "pool": f"node-{n}", "device": "gpu",
                                  "shareID": f"share-{n}", "consumedCapacity": {"memory": amount}}]}})  # fmt: skip
    request = req()
    request["exactly"]["capacity"] = {"requests": {"memory": "2"}}
    allocator = Allocator({"class-a": CLASS}, slices, allocated)
    claims = [claim(request)]
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        fits = [allocator.find({}, f"node-{n}", claims) is not None for n in range(4)]
        assert searched.call_count == 3  # nodes 0 and 3 alike
    assert fits == [False, True, True, False]


@settings(max_examples=80, deadline=None)
@given(
    kinds=st.lists(st.integers(0, 2), min_size=1, max_size=6),
    in_use=st.lists(st.sets(st.integers(0, 3), max_size=3), min_size=6, max_size=6),
    count=st.integers(min_value=1, max_value=4),
    numa=st.sampled_from([None, "match", "distinct"]),
    common=st.booleans(),
)
def test_alike_nodes_get_what_each_would_find_alone(
    kinds: list[int], in_use: list[set[int]], count: int, numa: str | None, common: bool
) -> None:
    """Whatever the nodes' own devices and which of them are in use (with pools every node
    shares, or without), one allocator for all nodes answers each node what a fresh allocator
    for that node alone answers."""
    slices = []
    for n, kind in enumerate(kinds):
        devices = [dev(f"d{i}", numa=(i + kind) % 2, model=("A", "A", "B")[kind]) for i in range(4)]
        slices.append(slice_(f"s{n}", *devices, pool=f"node-{n}", node=f"node-{n}"))
    if common:
        slices.append(slice_("shared", dev("d0", numa=0, model="A"), pool="a-shared", allNodes=True))
    allocated = {(DRIVER, f"node-{n}", f"d{i}") for n in range(len(kinds)) for i in in_use[n]}
    requests = [req(name="a", count=count)]
    constraints = None
    if numa is not None:
        requests.append(req(name="b"))
        constraints = [{("matchAttribute" if numa == "match" else "distinctAttribute"): "driver-a/numa"}]
    claims = [claim(*requests, constraints=constraints)]
    together = Allocator({"class-a": CLASS}, slices, allocated)
    for n in range(len(kinds)):
        alone = Allocator({"class-a": CLASS}, slices, allocated).allocate({}, f"node-{n}", claims)
        assert together.allocate({}, f"node-{n}", claims) == alone


def test_an_alike_node_raises_what_its_node_selector_raises() -> None:
    # The devices found include one of a common slice whose node selector has two terms
    # (createNodeSelector's error): the node whose search it was and the alike one both raise.
    two_terms = {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
            {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
        ]
    }
    slices = [*own_pools(nodes=2, devices=1), slice_("shared", dev("d0"), pool="a-shared", nodeSelector=two_terms)]
    allocator = Allocator({"class-a": CLASS}, slices, set())
    claims = [claim(req(count=2))]
    with patch.object(_Allocation, "run", autospec=True, side_effect=_Allocation.run) as searched:
        for n in range(2):
            with pytest.raises(AllocationError, match=r"^unsupported ResourceSlice\.NodeSelector with 2 terms$"):
                allocator.find({"a": "1"}, f"node-{n}", claims)
        assert searched.call_count == 1
