"""``python -m bench.suite --mode cluster`` on the dev cluster: upstream's init pods placed by
each side before its measured pods, and each side's pods gone before the other's turn; on the
ops path (createAny, updateAny, deletePods, churn, barrier, sleep, measured windows) every op
run per side, and the side's namespaces and nodes gone after its turn."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bench.scheduler_perf import cluster, config
from bench.scheduler_perf.inprocess import Unsupported, WorkloadFailed
from tests.e2e import eventually

pytestmark = pytest.mark.usefixtures("cluster")


def _variant(name: str, variant: str, **params: int) -> config.Variant:
    (case,) = [c for c in config.load(config.scheduler_perf_root()) if c.name == name]
    (chosen,) = [v for v in case.variants if v.name == variant]
    return config.with_params(chosen, params)


def test_each_side_places_the_init_pods_before_its_measured_ones(tmp_path: Path) -> None:
    # SchedulingNodeAffinity/500Nodes, shrunk: its pods' required node affinity on the zone label
    # the nodes' labelNodePrepareStrategy sets.
    variant = _variant("SchedulingNodeAffinity", "500Nodes", initNodes=8, initPods=3, measurePods=4)
    result = cluster.run(variant, modes={"stream": False, "backlog": True}, log_dir=tmp_path)
    assert result["init_pods"] == 3
    for mode in ("stream", "backlog"):
        ours, theirs = result[mode]["crd_scheduler"], result[mode]["kube_scheduler"]
        assert (ours["bound"], theirs["bound"]) == (4, 4), result
        # The operator's log holds 3 + 4 bindings: the init pods were its own.
        assert ours["bound_by_operator"] == 4, result


def test_pods_find_a_template_named_node_by_the_name_the_run_gave_it(tmp_path: Path) -> None:
    # SchedulingDaemonset: node-with-name.yaml's scheduler-perf-node, and pods whose required
    # node affinity names it (matchFields metadata.name). Every node is named for the run; the
    # pods stayed pending ("didn't satisfy plugin(s) [NodeAffinity]") on both sides.
    variant = _variant("SchedulingDaemonset", "5Nodes_QueueingHintsEnabled", initNodes=2, measurePods=3)
    result = cluster.run(variant, modes={"stream": False}, log_dir=tmp_path)
    ours, theirs = result["stream"]["crd_scheduler"], result["stream"]["kube_scheduler"]
    assert (ours["bound"], theirs["bound"]) == (3, 3), result


def test_pod_affinity_terms_that_list_namespaces_are_run_in_those_namespaces(tmp_path: Path) -> None:
    # SchedulingPodAffinity: init pods in sched-0, measured ones in sched-1, each requiring a
    # color=blue pod of sched-0 or sched-1 in its zone. In a namespace of the bench's own no pod
    # could ever match (not even the first, itself), and neither scheduler would bind one.
    variant = _variant("SchedulingPodAffinity", "500Nodes", initNodes=3, initPods=2, measurePods=3)
    result = _ops_run_binds(variant, tmp_path, 3)
    # Its window opens with a collectMetrics createPods op: the window says when its last pod
    # was made, which a stream run's time cannot beat (the table's "creation-bound").
    for side in ("crd_scheduler", "kube_scheduler"):
        figures = result["stream"][side]
        assert 0 < figures["creation_seconds"] <= figures["seconds"], result
        # Both sides use upstream's namespace names, and the first deleted its namespaces just
        # before the second came. For 30 s after that, the API server looked each namespace up
        # live (a GET) for every pod, binding and event made in it: three more requests per
        # pod, only for the side that came second. Neither side's window has one now.
        assert figures["namespace_live_lookups"] == 0, result
        # The control plane's CPU over the window, and the API server's and etcd's apart.
        spent = figures["apiserver_cpu_seconds"] + figures["etcd_cpu_seconds"]
        assert figures["apiserver_cpu_seconds"] > 0, result
        assert spent == pytest.approx(figures["control_plane_cpu_seconds"], abs=0.01), result
        # The scheduler's connections to the API server at the window's end
        # (``bench.cluster.tcp_connections``): its watches' or its HTTP/2 one at least.
        assert figures["api_connections"] >= 1, result


def _window_pods(variant: config.Variant) -> int:
    """The pods the ops create inside the variant's measured window, in its namespaces."""
    ops = variant.ops
    start = next(i for i, op in enumerate(ops) if op["opcode"] == "startCollectingMetrics")
    stop = next(i for i, op in enumerate(ops) if op["opcode"] == "stopCollectingMetrics")
    namespaces = set(ops[start].get("namespaces") or ())
    return sum(
        int(op["count"])
        for op in ops[start:stop]
        if op["opcode"] == "createPods" and (not namespaces or op.get("namespace") in namespaces)
    )


def _both_bound(result: dict[str, Any], want: int) -> None:
    assert result["path"] == "ops", result
    for side in ("crd_scheduler", "kube_scheduler"):
        figures = result["stream"][side]
        assert figures["bound"] == want, result
        assert figures["pods_per_second"] > 0, result


def _ops_run_binds(variant: config.Variant, tmp_path: Path, want: int) -> dict[str, Any]:
    """A stream run on the ops path in which both sides bind ``want`` pods and leave nothing behind."""
    result = cluster.run(variant, modes={"stream": False}, log_dir=tmp_path)
    _both_bound(result, want)
    assert _leftovers(variant) == ([], [])
    return result


def _leftovers(variant: config.Variant) -> tuple[list[str], list[str]]:
    """Namespaces the variant's ops name, and bench nodes, still in the cluster after a run
    (and no PersistentVolume nor CSINode the bench made)."""
    from kubernetes import client as k8s
    from kubernetes import config as kubeconfig

    from bench.cluster import dev_cluster

    core: Any = k8s.CoreV1Api(kubeconfig.new_client_from_config(dev_cluster("up")))  # type: ignore[no-untyped-call]
    named = {str(op["namespace"]) for op in variant.ops if op.get("namespace")}
    namespaces = [ns.metadata.name for ns in core.list_namespace().items if ns.metadata.name in named]
    nodes = [n.metadata.name for n in core.list_node(label_selector="bench-run").items]
    storage: Any = k8s.StorageV1Api(core.api_client)
    assert [pv.metadata.name for pv in core.list_persistent_volume().items if "-vol-" in pv.metadata.name] == []
    assert [c.metadata.name for c in storage.list_csi_node().items if c.metadata.name.startswith("bench-")] == []
    resource: Any = k8s.ResourceV1Api(core.api_client)
    assert [r.metadata.name for r in resource.list_resource_slice().items] == []
    assert [r.metadata.name for r in resource.list_device_class().items] == []
    return namespaces, nodes


def test_dra_slices_classes_and_claim_templates_on_both_sides(tmp_path: Path) -> None:
    # SchedulingWithResourceClaimTemplate: createResourceDriver publishes a ResourceSlice for each
    # node named scheduler-perf-dra-* (the node template's generateName kept as the prefix), then
    # the DeviceClass, the claim template and pods whose claims the dev cluster's resourceclaim
    # controller makes. Without the slices no pod binds ("cannot allocate all claims").
    variant = _variant(
        "SchedulingWithResourceClaimTemplate", "5000pods_500nodes_QueueingHintsEnabled",
        nodesWithDRA=2, initPods=2, measurePods=3,
    )  # fmt: skip
    _ops_run_binds(variant, tmp_path, 3)


def test_a_resource_version_the_dev_cluster_does_not_serve_is_named(tmp_path: Path) -> None:
    # ExtendedResource's DeviceClass is resource.k8s.io/v1beta2, which upstream's test API server
    # serves to DRA workloads and a default dev cluster does not.
    variant = _variant("ExtendedResource", "fast")
    unserved = re.escape("resource.k8s.io/v1beta2 is not served by the dev cluster")
    with pytest.raises(Unsupported, match=unserved) as raised:
        cluster.run(variant, modes={"stream": False}, log_dir=tmp_path)
    assert raised.value.op == "DeviceClass"
    assert "CRD_SCHEDULER_DEVCLUSTER_RUNTIME_CONFIG=resource.k8s.io/v1beta2=true" in raised.value.reason
    assert _leftovers(variant) == ([], [])


def test_volume_workloads_bind_each_pod_to_its_own_claim_on_both_sides(tmp_path: Path) -> None:
    # SchedulingCSIPVs: each pod mounts claim pvc-<pod>, pre-bound to its CSI volume, and every
    # node has a CSINode (attach limit 39). Without the pair a pod stays pending: its claim is
    # not found (VolumeBinding's PreFilter).
    variant = _variant("SchedulingCSIPVs", "500Nodes", initNodes=3, initPods=3, measurePods=4)
    result = cluster.run(variant, modes={"stream": False, "backlog": True}, log_dir=tmp_path)
    assert result["path"] == "simple", result
    for mode in ("stream", "backlog"):
        ours, theirs = result[mode]["crd_scheduler"], result[mode]["kube_scheduler"]
        assert (ours["bound"], theirs["bound"]) == (4, 4), result
    assert _leftovers(variant) == ([], [])


def test_volume_limits_on_the_ops_path(tmp_path: Path) -> None:
    # EventHandlingPodDelete: blockers with CSI volumes on nodes whose CSINode allows 20, the
    # measured pods blocked until the blockers are deleted at 100/s.
    variant = _variant("EventHandlingPodDelete", "2Nodes_20Pods")
    _ops_run_binds(variant, tmp_path, _window_pods(variant))


def test_create_any_builds_the_service_default_spreading_reads(tmp_path: Path) -> None:
    # DefaultTopologySpreading: createAny (a Service in service-ns) before the measured pods.
    variant = _variant("DefaultTopologySpreading", "500Nodes", initNodes=4, initPods=4, measurePods=4)
    result = cluster.run(variant, modes={"stream": False, "backlog": True}, log_dir=tmp_path)
    _both_bound(result, 4)
    assert "backlog_skipped" in result
    assert _leftovers(variant) == ([], [])


def test_collecting_barriers_and_rate_limited_node_updates(tmp_path: Path) -> None:
    # EventHandlingNodeUpdate: start/stopCollectingMetrics around createNodes, createPods
    # (skipWaitToCompletion), barrier (Attempted and Scheduled) and updateAny of Nodes at 100/s.
    variant = _variant("EventHandlingNodeUpdate", "100Nodes_1000Pods", nodes=2, measurePods=3)
    _ops_run_binds(variant, tmp_path, _window_pods(variant))


def test_the_side_named_first_runs_first(tmp_path: Path) -> None:
    # On the ops path each side runs every op in its turn; which goes first is switchable
    # (python -m bench.suite alternates it from run to run).
    variant = _variant("SchedulingWithMixedChurn", "1000Nodes", initNodes=2, measurePods=2)
    result = cluster.run(variant, modes={"stream": False}, log_dir=tmp_path, first="kube_scheduler")
    assert result["order"] == ["kube_scheduler", "crd_scheduler"]
    _both_bound(result, 2)
    theirs, ours = (result["stream"][side]["collections"][0] for side in result["order"])
    assert theirs["stopped"] <= ours["started"], result
    with pytest.raises(ValueError, match="'nobody' is not one of crd_scheduler, kube_scheduler"):
        cluster.run(variant, modes={"stream": False}, log_dir=tmp_path, first="nobody")


def test_every_measured_window_starts_with_the_creators_connections_open(tmp_path: Path) -> None:
    # The side that ran first used to open its creators' connections to the API server inside
    # its window (a TLS handshake each), the side after it found them open.
    from bench.cluster import dev_cluster

    variant = _variant("SchedulingWithMixedChurn", "1000Nodes", initNodes=2, measurePods=2)
    bench = cluster.WorkloadBench(dev_cluster("up"), variant, creators=12)
    assert bench.open_connections() < 12
    run = cluster.OpsRun(bench, "kube_scheduler", "default-scheduler", os.getpid())
    run._start_window("measured", frozenset({"test"}), {})
    assert bench.open_connections() >= 12


def test_rate_limited_deletion_of_pods_with_finalizers(tmp_path: Path) -> None:
    # SchedulingDeletedPodsWithFinalizers: deletePods at deletePodsPerSecond in the background;
    # the pods keep their finalizers, which the cleanup drops so the second side can start.
    variant = _variant(
        "SchedulingDeletedPodsWithFinalizers", "1000Node_1000DeletingPods_QueueingHintsEnabled",
        initNodes=4, deletingPods=4, measurePods=4,
    )  # fmt: skip
    _ops_run_binds(variant, tmp_path, 4)


def test_churn_recreates_nodes_pods_and_services_meanwhile(tmp_path: Path) -> None:
    # SchedulingWithMixedChurn: churn (recreate: a Node, a Pod, a Service every second) while the
    # measured pods are made and scheduled.
    variant = _variant("SchedulingWithMixedChurn", "1000Nodes", initNodes=4, measurePods=4)
    _ops_run_binds(variant, tmp_path, 4)


def test_claims_no_pod_references_are_allocated_before_the_pods_come(tmp_path: Path) -> None:
    # FirstAvailable with 3 init claims: allocResourceClaims gives each a device of the one DRA
    # node's 13 (dra.go allocResourceClaimsOp), then both sides bind the 10 measured pods on the
    # 10 devices left.
    variant = _variant("FirstAvailable", "fast", initClaims=3, maxClaimsPerNode=13)
    from bench.cluster import dev_cluster

    bench = cluster.WorkloadBench(dev_cluster("up"), variant, 4)
    run = cluster.OpsRun(bench, "crd_scheduler", "nobody", 0)
    try:
        for index, op in enumerate(variant.ops):
            getattr(run, "op_" + str(op["opcode"]))(index, op)
            if op["opcode"] == "allocResourceClaims":
                break
        claims = bench.request("GET", "/apis/resource.k8s.io/v1/namespaces/init/resourceclaims")["items"]
    finally:
        run.stop.set()
        run.cleanup()
    devices = [r["device"] for c in claims for r in c["status"]["allocation"]["devices"]["results"]]
    assert len(claims) == 3 and len(set(devices)) == 3, claims
    _ops_run_binds(variant, tmp_path, 10)


def test_steady_state_keeps_count_pods_for_its_duration(tmp_path: Path) -> None:
    # SteadyStateClusterResourceClaimTemplate on 2 DRA nodes (20 devices) for 4 s: batches of 10
    # pods, each deleted once bound and followed by another, so more than 10 get bound.
    variant = config.with_params(
        _variant("SteadyStateClusterResourceClaimTemplate", "empty_100nodes", nodesWithDRA=2), {"duration": "4s"}
    )
    result = cluster.run(variant, modes={"stream": False}, log_dir=tmp_path)
    assert result["path"] == "ops", result
    for side in ("crd_scheduler", "kube_scheduler"):
        assert result["stream"][side]["bound"] > 10, result
    assert _leftovers(variant) == ([], [])


def test_steady_state_counts_what_was_bound_while_its_first_batch_was_made() -> None:
    # The window includes the making of the first batch (upstream's timeout context covers the
    # strategy's creates): a pod bound then counts, though the making outlasts the duration.
    variant = _variant("SteadyStateClusterResourceClaimTemplate", "empty_100nodes", nodesWithDRA=1)
    from bench.cluster import dev_cluster

    bench = cluster.WorkloadBench(dev_cluster("up"), variant, 4)
    run = cluster.OpsRun(bench, "crd_scheduler", "nobody", 0)
    run._background("pod watch", run._watch)
    try:
        run.op_createNodes(0, {"opcode": "createNodes", "count": 1})
        run.ensure_namespace("steady")
        pod = {"metadata": {"name": "made-and-bound"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}

        def make_slowly() -> None:  # the pod made and bound (as a scheduler would), then more making
            bench.request("POST", "/api/v1/namespaces/steady/pods", run._pod(pod))
            binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "made-and-bound"},
                       "target": {"kind": "Node", "name": run.node_names[0]}}  # fmt: skip
            bench.request("POST", "/api/v1/namespaces/steady/pods/made-and-bound/binding", binding)

            def seen() -> None:
                assert run.bindings

            eventually(seen, timeout=10)
            time.sleep(1.5)

        run._steady_state(1, "steady", 10, 1.0, make_slowly)  # raised "no pod at all got scheduled"
    finally:
        run.stop.set()
        run.cleanup()


def test_a_priority_the_template_sets_comes_from_a_priority_class(tmp_path: Path) -> None:
    # PreemptionBasic: pod-high-priority.yaml sets spec.priority: 10, which the dev cluster's
    # Priority admission refuses (upstream's test API server runs without it). Two nodes full of
    # low-priority init pods (4 x 900m of 4 CPUs each); each measured pod (3 CPUs) preempts.
    variant = _variant("PreemptionBasic", "1000Nodes_QueueingHintsEnabled", initNodes=2, initPods=8, measurePods=2)
    result = cluster.run(variant, modes={"stream": False}, log_dir=tmp_path)
    for side in ("crd_scheduler", "kube_scheduler"):
        assert result["stream"][side]["bound"] == 2, result


def test_a_pod_waits_for_the_priority_class_admission_has_not_seen_yet() -> None:
    # The Priority admission plugin reads PriorityClasses from its informer: a pod made right
    # after its class was refused (403, "no PriorityClass with name ... was found"), and
    # PreemptionBasic's measured pods failed so once in a fresh-clone CI.
    from bench.cluster import dev_cluster

    variant = _variant("PreemptionBasic", "1000Nodes_QueueingHintsEnabled", initNodes=1, initPods=1, measurePods=1)
    bench = cluster.WorkloadBench(dev_cluster("up"), variant, 4)
    name = f"bench-{bench.run_id}-late"
    run = cluster.OpsRun(bench, "crd_scheduler", "nobody", 0)
    run.ensure_namespace("late-class")
    pod = {"metadata": {"name": "waits"},
           "spec": {"containers": [{"name": "c", "image": "x"}], "priorityClassName": name}}  # fmt: skip
    made = threading.Timer(1.0, bench.request, ("POST", cluster.PRIORITY_CLASSES,
                                                {"metadata": {"name": name}, "value": 10}))  # fmt: skip
    made.start()
    try:
        bench._post("/api/v1/namespaces/late-class/pods", pod)  # raised 403 at once before
        stored = bench.request("GET", "/api/v1/namespaces/late-class/pods/waits")
        assert stored["spec"]["priority"] == 10
    finally:
        made.join()
        bench.request("DELETE", f"{cluster.PRIORITY_CLASSES}/{name}")
        run.stop.set()
        run.cleanup()


def test_a_wait_for_bindings_that_times_out_names_the_unbound_pods_and_why() -> None:
    # A variant whose pods cannot all be bound (ExtendedResource with fewer classes than pods)
    # used to fail after ten minutes with the count alone.
    from bench.cluster import dev_cluster

    variant = _variant("SchedulingBasic", "500Nodes", initNodes=1, initPods=1, measurePods=1)
    bench = cluster.WorkloadBench(dev_cluster("up"), variant, 4)
    run = cluster.OpsRun(bench, "crd_scheduler", "nobody", 0)
    run.ensure_namespace("unbound")
    run._background("pod watch", run._watch)
    containers = [{"name": "c", "image": "x"}]
    pod = {"metadata": {"name": "waits"}, "spec": {"schedulerName": f"nobody-{bench.run_id}", "containers": containers}}
    try:
        bench._post("/api/v1/namespaces/unbound/pods", pod)

        def seen() -> None:
            assert ("unbound", "waits") in run.pods

        eventually(seen)
        with pytest.raises(WorkloadFailed) as failed:
            run._wait("a test's binding", lambda: False, timeout=0.1, namespace="unbound")
        assert str(failed.value).endswith(
            "a test's binding not met in 0 s; 1 pods unbound, e.g. unbound/waits (no scheduling attempt recorded)"
        )
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": "0/1 nodes are available: 1 Insufficient example.com/gpu-10."}  # fmt: skip
        bench.request("PATCH", "/api/v1/namespaces/unbound/pods/waits/status",
                      {"status": {"conditions": [condition]}}, "application/merge-patch+json")  # fmt: skip
        with pytest.raises(WorkloadFailed) as failed:
            run._wait("a test's binding", lambda: False, timeout=0.1, namespace="unbound")
        assert str(failed.value).endswith(
            "unbound/waits (Unschedulable: 0/1 nodes are available: 1 Insufficient example.com/gpu-10.)"
        )
    finally:
        run.stop.set()
        run.cleanup()


def test_what_the_cluster_mode_cannot_run_is_named_by_op() -> None:
    reasons = {}
    for case in config.load(config.scheduler_perf_root()):
        variant = config.default_variant(case)
        try:
            cluster.check(variant)
        except Unsupported as error:
            reasons[case.name] = (error.op, error.reason)
    assert reasons == {}  # every default variant (the unserved API versions are found at run time)
    for name in (
        "DefaultTopologySpreading", "EventHandlingPodAdd", "SchedulingWithMixedChurn", "PreemptionAsync",
        "SchedulingCSIPVs", "SchedulingInTreePVs", "SchedulingMigratedInTreePVs", "PreemptionPVs",
        "EventHandlingPodDelete", "SchedulingWithResourceClaim", "PartitionableBacktracking", "PublishResourceSlices",
        "FirstAvailable",
    ):  # fmt: skip
        assert name not in reasons


def test_the_ops_path_refuses_backlog_only(tmp_path: Path) -> None:
    variant = _variant("DefaultTopologySpreading", "500Nodes", initNodes=4, initPods=4, measurePods=4)
    with pytest.raises(Unsupported, match="stream mode only"):
        cluster.run(variant, modes={"backlog": True}, log_dir=tmp_path)


def test_rate_limited_pod_updates_from_templates(tmp_path: Path) -> None:
    # EventHandlingPodUpdate without blockers: updateAny of Pods (the unschedulable ones made
    # schedulable, the scheduling gates removed) at 100/s. A pod update from a template is valid
    # only if the pod was made without what the dev cluster's ServiceAccount admission adds.
    variant = _variant("EventHandlingPodUpdate", "1Node_1000Pods", blockerPods=0, measurePods=2)
    _ops_run_binds(variant, tmp_path, _window_pods(variant))
