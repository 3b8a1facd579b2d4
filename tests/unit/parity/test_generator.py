"""The scenario generator: deterministic, valid for the API server, and feature-gated."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from bench.parity_harness import dra, probes, volumes
from bench.parity_harness import vocabulary as v
from bench.parity_harness.features import FEATURES
from bench.parity_harness.generator import ADDITIVE, MAX_NODES, MIN_NODES, generate
from bench.parity_harness.profile import SCHEDULER_NAME
from scheduler_core.framework.extended_resources import DEVICE_CLASS_PREFIX

ALL = frozenset(f.name for f in FEATURES)
SEEDS = range(150)


def _pods(scenario: Any) -> list[dict[str, Any]]:
    return [*scenario.pods, scenario.pending]


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod["spec"]["containers"], *pod["spec"].get("initContainers", ())]


def test_the_same_seed_gives_the_same_scenario() -> None:
    assert generate(7, ALL).manifests() == generate(7, ALL).manifests()
    assert generate(7, ALL).manifests() != generate(8, ALL).manifests()


def test_shape_names_and_the_pending_pod() -> None:
    for seed in SEEDS:
        scenario = generate(seed, ALL, namespace="ns", prefix="x")
        assert MIN_NODES <= len(scenario.nodes) <= MAX_NODES
        names = scenario.node_names
        assert names == [f"x-n{i}" for i in range(len(names))]
        assert all(n["metadata"]["labels"][v.HOSTNAME] == n["metadata"]["name"] for n in scenario.nodes)
        assert all(p["spec"]["nodeName"] in names for p in scenario.pods)
        pending = scenario.pending["spec"]
        assert "nodeName" not in pending
        assert pending["schedulerName"] == SCHEDULER_NAME
        assert pending["priorityClassName"] in {name for name, _ in (*v.PRIORITY_CLASSES, v.PREEMPTOR_CLASS)}
        assert all(
            p["metadata"]["namespace"] == "ns" and p["metadata"]["labels"][v.SCENARIO] == "x" for p in _pods(scenario)
        )


def _uses(scenario: Any) -> set[str]:
    """Which features a scenario's manifests show."""
    used = set()
    nodes, pods = scenario.nodes, _pods(scenario)
    if any(n["spec"].get("unschedulable") for n in nodes):
        used.add("unschedulable")
    tolerations = [t for t in scenario.pending["spec"].get("tolerations", ()) if t.get("key") != v.UNSCHEDULABLE_TAINT]
    if any(n["spec"].get("taints") for n in nodes) or tolerations:
        used.add("taints")
    pending = scenario.pending["spec"]
    if pending.get("nodeSelector") or "nodeAffinity" in pending.get("affinity", {}):
        used.add("node_affinity")
    requests = [c.get("resources", {}).get("requests", {}) for p in pods for c in _containers(p)]
    if any(v.EXTENDED_RESOURCE in r for r in requests):
        used.add("extended_resources")
    if any("ephemeral-storage" in r for r in requests):
        used.add("ephemeral_storage")
    if any(p["spec"].get("initContainers") for p in pods):
        used.add("init_containers")
    if any("resources" in p["spec"] for p in pods):
        used.add("pod_level_resources")
    if any(n["status"]["allocatable"]["pods"] != "110" for n in nodes):
        used.add("pod_count")
    if pending.get("topologySpreadConstraints"):
        used.add("topology_spread")
    if scenario.services:
        used.add("services")
    if any({"podAffinity", "podAntiAffinity"} & set(p["spec"].get("affinity", {})) for p in pods):
        used.add("pod_affinity")
    if any("images" in n["status"] for n in nodes):
        used.add("images")
    if any("ports" in c for p in pods for c in _containers(p)):
        used.add("host_ports")
    if any(vol.get("persistentVolumeClaim") is None for p in pods for vol in p["spec"].get("volumes", ())):
        used.add("disk_conflicts")
    if scenario.storage.classes:
        used.add("volumes")
    if scenario.pending["spec"].get("schedulingGates"):
        used.add("gates")
    if scenario.pending["spec"]["priorityClassName"] == v.PREEMPTOR_CLASS[0]:
        used.add("preemption")
    if scenario.pending["spec"].get("resourceClaims"):
        used.add("dra")
    if any(v.EXTENDER_RESOURCES["names"] in r for r in requests):
        used.add("extenders")
    if any(s["spec"].get("sharedCounters") for s in scenario.devices.slices):
        used.add(dra.PARTITIONABLE)
    if any(name.startswith(("dra.parity.example/", DEVICE_CLASS_PREFIX)) for r in requests for name in r):
        used.add(dra.EXTENDED)
    return used


@pytest.mark.parametrize("feature", sorted(ALL))
def test_a_feature_appears_only_when_enabled(feature: str) -> None:
    # The features widening dra need it.
    needs = {"dra"} if feature in ADDITIVE else set()
    with_it = Counter(f for seed in SEEDS for f in _uses(generate(seed, {feature, *needs})))
    assert with_it[feature] > 0, f"{feature} never used in {len(SEEDS)} scenarios"
    without = {f for seed in SEEDS for f in _uses(generate(seed, ALL - {feature}))}
    assert feature not in without


def test_a_feature_widening_dra_leaves_the_rest_of_each_scenario_as_it_was() -> None:
    """Additive features draw from sources of their own: with them, a seed's nodes, pods and
    DRA requests are those it had without them."""
    widened = 0
    for seed in SEEDS:
        before = generate(seed, ALL - ADDITIVE)
        after = generate(seed, ALL)
        assert after.features - ADDITIVE == before.features
        assert (after.nodes, after.pods, after.services) == (before.nodes, before.pods, before.services)
        if before.devices.templates:
            request = before.devices.templates[0]["spec"]["spec"]["devices"]["requests"][0]
            widened_request = after.devices.templates[0]["spec"]["spec"]["devices"]["requests"][0]
            assert widened_request.get("firstAvailable") == request.get("firstAvailable")
            widened += after.features != before.features
    assert widened


def test_partitionable_pools_are_two_slices_whose_devices_consume_their_counter_sets() -> None:
    checked = 0
    for seed in SEEDS:
        scenario = generate(seed, {"dra", dra.PARTITIONABLE})
        pools: dict[str, list[dict[str, Any]]] = {}
        for resource_slice in scenario.devices.slices:
            pools.setdefault(resource_slice["spec"]["pool"]["name"], []).append(resource_slice["spec"])
        for specs in pools.values():
            assert {s["pool"]["resourceSliceCount"] for s in specs} == {len(specs)}
            if len(specs) == 1:
                continue
            counters, devices = specs
            assert "devices" not in counters and "sharedCounters" not in devices  # one or the other
            sets = {c["name"]: c["counters"] for c in counters["sharedCounters"]}
            for device in devices["devices"]:
                (consumption,) = device["consumesCounters"]
                assert set(consumption["counters"]) == set(sets[consumption["counterSet"]])
                assert consumption["counters"]["memory"] == device["capacity"]["memory"]
            checked += 1
    assert checked


def test_dra_backed_extended_resources_are_requested_as_the_class_names_them() -> None:
    checked = 0
    for seed in SEEDS:
        scenario = generate(seed, {"dra", dra.EXTENDED})
        if not scenario.devices.extended:
            continue
        (device_class,) = scenario.devices.classes
        (name,) = scenario.devices.extended
        named = device_class["spec"].get("extendedResourceName")
        assert name == (named or f"{DEVICE_CLASS_PREFIX}{device_class['metadata']['name']}")
        resources = scenario.pending["spec"]["containers"][0]["resources"]
        assert resources["requests"][name] == resources["limits"][name] == str(scenario.devices.extended[name])
        assert bool(scenario.pending["spec"].get("resourceClaims")) == scenario.devices.claimed
        checked += 1
    assert checked


def test_without_features_only_requests_and_capacities_vary() -> None:
    assert {f for seed in SEEDS for f in _uses(generate(seed, frozenset()))} == set()


def test_fields_the_api_server_would_refuse_are_never_written() -> None:
    for seed in SEEDS:
        scenario = generate(seed, ALL)
        for node in scenario.nodes:
            taints = [(t["key"], t["effect"]) for t in node["spec"].get("taints", ())]
            assert len(taints) == len(set(taints)), "duplicate taint key and effect"
        for pod in _pods(scenario):
            ports = [
                (p["hostPort"], p["protocol"], p.get("hostIP", ""))
                for c in _containers(pod)
                for p in c.get("ports", ())
            ]
            assert len(ports) == len(set(ports)), "duplicate host port"
            for container in _containers(pod):
                resources = container.get("resources", {})
                if v.EXTENDED_RESOURCE in resources.get("requests", {}):
                    assert resources["limits"][v.EXTENDED_RESOURCE] == resources["requests"][v.EXTENDED_RESOURCE]
            spread = [
                (c["topologyKey"], c["whenUnsatisfiable"]) for c in pod["spec"].get("topologySpreadConstraints", ())
            ]
            assert len(spread) == len(set(spread)), "duplicate spread constraint"
            for constraint in pod["spec"].get("topologySpreadConstraints", ()):
                assert "minDomains" not in constraint or constraint["whenUnsatisfiable"] == "DoNotSchedule"


def test_pod_level_requests_cover_the_containers() -> None:
    def millis(value: str) -> int:
        return int(value.rstrip("m"))

    checked = 0
    for seed in SEEDS:
        for pod in _pods(generate(seed, {"pod_level_resources", "init_containers"})):
            pod_level = pod["spec"].get("resources", {}).get("requests", {})
            if "cpu" in pod_level:
                total = sum(
                    millis(c.get("resources", {}).get("requests", {}).get("cpu", "0m")) for c in _containers(pod)
                )
                assert millis(pod_level["cpu"]) >= total
                checked += 1
    assert checked


def test_volumes_are_valid_and_unambiguous() -> None:
    """Claims the pods use exist (but for the one meant to be missing); pre-bound pairs name each
    other; no unbound PV matches an Immediate claim (the PV controller would race the scheduler);
    PV sizes are distinct within a class (upstream picks the smallest match, in informer order
    among equals); ReadWriteOncePod is never combined with another mode (the API refuses it)."""
    checked = 0
    for seed in SEEDS:
        scenario = generate(seed, {"volumes"}, namespace="ns", prefix="x")
        storage = scenario.storage
        claims = {c["metadata"]["name"]: c for c in storage.claims}
        classes = {c["metadata"]["name"]: c for c in storage.classes}
        for pod in _pods(scenario):
            for name in volumes.claim_names(pod):
                assert name in claims or name == "x-missing"
        for pv in storage.volumes:
            ref = pv["spec"].get("claimRef")
            if ref is not None:
                assert claims[ref["name"]]["spec"]["volumeName"] == pv["metadata"]["name"]
            elif classes[pv["spec"]["storageClassName"]]["volumeBindingMode"] == "Immediate":
                pytest.fail(f"unbound PV {pv['metadata']['name']} in an Immediate class")
            assert len(pv["spec"]["accessModes"]) == 1
        unbound = [pv for pv in storage.volumes if "claimRef" not in pv["spec"]]
        sizes = [(pv["spec"]["storageClassName"], pv["spec"]["capacity"]["storage"]) for pv in unbound]
        assert len(sizes) == len(set(sizes))
        checked += len(storage.volumes)
    assert checked


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        pytest.param({"spec": {"volumeName": "x-wffc-pv0"}}, "volume x-wffc-pv0", id="static-pv"),
        pytest.param(
            {"spec": {"volumeName": "pvc-1234"}, "metadata": {"annotations": {volumes.ANN_SELECTED_NODE: "n1"}}},
            "provisioned on n1",
            id="provisioned-for-the-selected-node",
        ),
        pytest.param({"spec": {}}, "unbound", id="unbound"),
        pytest.param(
            {"spec": {}, "metadata": {"annotations": {volumes.ANN_SELECTED_NODE: "n1"}}},
            "selected n1, unbound",
            id="annotated-not-yet-provisioned",
        ),
    ],
)
def test_bindings_name_the_static_pv_or_the_provisioning_node(claim: dict[str, Any], expected: str) -> None:
    claim = {**claim, "metadata": {"name": "c", **claim.get("metadata", {})}}
    pod = {"spec": {"volumes": [{"name": "a", "persistentVolumeClaim": {"claimName": "c"}}]}}
    assert volumes.bindings(pod, [claim]) == {"c": expected}
    assert volumes.bindings(pod, []) == {"c": "missing"}


def test_preemption_gives_existing_pods_distinct_start_times() -> None:
    checked = 0
    for seed in SEEDS:
        scenario = generate(seed, {"preemption"})
        if "preemption" in scenario.features:
            starts = [p["status"]["startTime"] for p in scenario.pods]
            assert len(starts) == len(set(starts))
            checked += len(starts)
        assert all("status" not in p for p in generate(seed, frozenset()).pods)
    assert checked


def test_probes_of_a_gated_preemptor_are_neither_gated_nor_preempting() -> None:
    scenario = next(
        s
        for s in (generate(seed, {"gates", "preemption"}) for seed in SEEDS)
        if s.pending["spec"].get("schedulingGates") and s.pending["spec"]["priorityClassName"] == v.PREEMPTOR_CLASS[0]
    )
    probe = probes.node_probe(probes.ungated(scenario.pending), "probe", scenario.node_names[0])
    assert "schedulingGates" not in probe["spec"]
    assert probe["spec"]["priorityClassName"] == v.PROBE_PREEMPTOR_CLASS[0]
    assert scenario.pending["spec"]["schedulingGates"]  # the pending pod itself is untouched


def test_dra_claims_name_the_scenarios_class_and_template() -> None:
    checked = 0
    for seed in SEEDS:
        scenario = generate(seed, {"dra"}, namespace="ns", prefix="x")
        if "dra" not in scenario.features:
            continue
        (device_class,) = scenario.devices.classes
        (template,) = scenario.devices.templates
        assert scenario.pending["spec"]["resourceClaims"] == [
            {"name": dra.CLAIM, "resourceClaimTemplateName": template["metadata"]["name"]}
        ]
        assert scenario.pending["spec"]["containers"][0]["resources"]["claims"] == [{"name": dra.CLAIM}]
        (request,) = template["spec"]["spec"]["devices"]["requests"]
        classes = [request["exactly"]] if "exactly" in request else request["firstAvailable"]
        assert {c["deviceClassName"] for c in classes} == {device_class["metadata"]["name"]}
        for resource_slice in scenario.devices.slices:
            assert resource_slice["spec"]["pool"]["name"] == resource_slice["spec"]["nodeName"]
            names = [d["name"] for d in resource_slice["spec"]["devices"]]
            assert len(names) == len(set(names))
        assert all(not p["spec"].get("resourceClaims") for p in scenario.pods)
        checked += 1
    assert checked


def test_allocation_reads_the_claim_the_pod_status_names() -> None:
    pod = {"status": {"resourceClaimStatuses": [{"name": dra.CLAIM, "resourceClaimName": "p-gpus-x1"}]}}
    results = [{"request": "gpu", "driver": v.DRA_DRIVER, "pool": "n1", "device": d} for d in ("gpu-1", "gpu-0")]
    claim = {"metadata": {"name": "p-gpus-x1"}, "status": {"allocation": {"devices": {"results": results}}}}
    other = {"metadata": {"name": "other"}, "status": {"allocation": {"devices": {"results": results[:1]}}}}
    assert dra.allocation(pod, [other, claim]) == ["gpu n1/gpu-0", "gpu n1/gpu-1"]
    assert dra.allocation({}, [claim]) == []
    fresh = dra.unallocated({**claim, "metadata": {"name": "p-gpus-x1", "finalizers": ["f"]}})
    assert fresh == {"metadata": {"name": "p-gpus-x1"}}


def test_a_read_write_once_pod_claim_is_mounted_by_one_existing_pod_at_most() -> None:
    conflicts = 0
    for seed in SEEDS:
        scenario = generate(seed, {"volumes"})
        rwop = {
            c["metadata"]["name"] for c in scenario.storage.claims if c["spec"]["accessModes"] == ["ReadWriteOncePod"]
        }
        mounted = Counter(name for p in scenario.pods for name in volumes.claim_names(p) if name in rwop)
        assert all(count == 1 for count in mounted.values())
        conflicts += len(set(mounted) & set(volumes.claim_names(scenario.pending)))
    assert conflicts  # the pending pod still meets ReadWriteOncePod conflicts
