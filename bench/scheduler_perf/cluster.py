"""Both schedulers on the dev cluster, for one upstream workload (``bench/cluster.py``'s machinery).

A :class:`WorkloadBench` is ``bench/cluster.py``'s :class:`~bench.cluster.Bench` whose Nodes
come from the variant's ``createNodes`` ops (upstream's node templates and prepare
strategies, plus the bench's run label) and whose measured pods are the variant's
``collectMetrics`` ``createPods`` op: upstream's pod template, ``schedulerName`` of the side
under test and a ``nodeSelector`` on the run label (so neither scheduler sees the other's
nodes). Everything else is ``Bench``'s: 16 creator threads, a watch timing each binding, the
operator and kube-scheduler in turn (stream mode: the scheduler runs while the pods are made;
backlog: it starts once all exist), CPU per bound pod, peak RSS, the control plane's CPU.

The pods of the ``createPods`` ops before the measured one (upstream's init pods) are placed
by the side under test before its measured pods, untimed (``Bench.place_init_pods``; in
backlog mode by a first run of that scheduler, stopped before the backlog is made), and each
side's pods are deleted after its turn, so both start from the same empty nodes.

Supported: variants whose ops are ``createNodes``, ``createNamespaces`` and ``createPods``
without volume templates. Other variants raise :class:`~bench.scheduler_perf.inprocess.Unsupported`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.cluster import Bench
from bench.scheduler_perf.config import Variant
from bench.scheduler_perf.inprocess import (
    BASE_NODE_STATUS,
    BASE_POD_SPEC,
    HOSTNAME,
    Unsupported,
    load_template,
    node_strategy,
)

SIMPLE_OPS = frozenset({"createNodes", "createNamespaces", "createPods"})


def measured_op(variant: Variant) -> dict[str, Any]:
    unsupported = sorted({str(op["opcode"]) for op in variant.ops} - SIMPLE_OPS)
    if unsupported:
        raise Unsupported(
            ",".join(unsupported), "the cluster mode runs createNodes/createNamespaces/createPods workloads only"
        )
    for op in variant.ops:
        volumes = sorted(k for k in ("persistentVolumeTemplatePath", "persistentVolumeClaimTemplatePath") if op.get(k))
        if volumes:
            raise Unsupported("createPods", f"the cluster mode makes no volumes ({', '.join(volumes)})")
    for op in variant.ops:
        if op["opcode"] == "createPods" and op.get("collectMetrics"):
            if op.get("steadyState"):
                raise Unsupported("createPods", "steadyState is not measured on the cluster")
            return dict(op)
    raise Unsupported("createPods", "no createPods op collects metrics")


class WorkloadBench(Bench):
    def __init__(self, kubeconfig: str, variant: Variant, creators: int = 16) -> None:
        self.variant = variant
        self.measured = measured_op(variant)
        self.node_ops = [op for op in variant.ops if op["opcode"] == "createNodes"]
        nodes = sum(int(op.get("count", 0)) for op in self.node_ops)
        super().__init__(kubeconfig, nodes, int(self.measured.get("count", 0)), creators)
        self.pod_body = self._pod
        # (op, index within the op) of every init pod, in upstream's order.
        self.init_pods = [
            (op, i)
            for op in variant.ops[: next(n for n, o in enumerate(variant.ops) if o.get("collectMetrics"))]
            if op["opcode"] == "createPods"
            for i in range(int(op.get("count", 0)))
        ]
        self.init_count = len(self.init_pods)
        self.init_body = self._init_pod

    def _node(self, op: Mapping[str, Any], index: int, i: int, count: int) -> dict[str, Any]:
        if op.get("nodeTemplatePath"):
            node = load_template(op["nodeTemplatePath"], i, count)
        else:
            node = {"metadata": {}, "status": copy.deepcopy(BASE_NODE_STATUS)}
        name = f"bench-{self.run_id}-n{index:05d}"
        node["metadata"] = {**node.get("metadata", {}), "name": name}
        node["metadata"].pop("generateName", None)
        labels = node["metadata"].setdefault("labels", {})
        labels.update({HOSTNAME: name, **self.label})
        strategy = node_strategy(op)
        if strategy is not None:
            strategy(node, i)
        node.pop("apiVersion", None)
        node.pop("kind", None)
        return node

    def create_nodes(self) -> None:
        bodies: list[dict[str, Any]] = []
        for op in self.node_ops:
            count = int(op.get("count", 0))
            bodies.extend(self._node(op, len(bodies), i, count) for i in range(count))

        def create(body: dict[str, Any]) -> None:
            self._post("/api/v1/nodes", body)
            self.nodes.append(body["metadata"]["name"])

        with ThreadPoolExecutor(self.creators) as pool:
            list(pool.map(create, bodies))

    def _pod(self, i: int, scheduler_name: str) -> dict[str, Any]:
        return self._from_template(self.measured, i, self.pod_count, f"p{i:05d}", scheduler_name)

    def _init_pod(self, n: int, scheduler_name: str) -> dict[str, Any]:
        op, i = self.init_pods[n]
        return self._from_template(op, i, int(op.get("count", 0)), f"i{n:05d}", scheduler_name)

    def _from_template(
        self, op: Mapping[str, Any], i: int, count: int, name: str, scheduler_name: str
    ) -> dict[str, Any]:
        path = op.get("podTemplatePath") or self.variant.default_pod_template
        pod = load_template(path, i, count) if path else {"spec": copy.deepcopy(BASE_POD_SPEC)}
        pod.pop("apiVersion", None)
        pod.pop("kind", None)
        meta = pod.setdefault("metadata", {})
        meta.pop("generateName", None)
        meta["name"] = name
        spec = pod.setdefault("spec", {})
        spec["schedulerName"] = scheduler_name
        spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), **self.label}
        return pod


def run(variant: Variant, *, modes: dict[str, bool], log_dir: Path, creators: int = 16) -> dict[str, Any]:
    """Both schedulers on the variant, per mode (``{"stream": False, "backlog": True}``)."""
    from bench.cluster import dev_cluster

    kubeconfig = dev_cluster("up")
    bench = WorkloadBench(kubeconfig, variant, creators)
    result: dict[str, Any] = {"workload": variant.full_name, "nodes": bench.node_count, "pods": bench.pod_count,
                              "init_pods": bench.init_count}  # fmt: skip
    try:
        bench.install_crds()
        bench.create_nodes()
        for mode, backlog in modes.items():
            figures = result.setdefault(mode, {})
            figures["crd_scheduler"] = bench.crd_scheduler(log_dir, backlog=backlog)
            figures["kube_scheduler"] = bench.kube_scheduler(log_dir, backlog=backlog)
            ours = figures["crd_scheduler"].get("pods_per_second")
            theirs = figures["kube_scheduler"].get("pods_per_second")
            if ours and theirs:
                figures["ratio"] = round(ours / theirs, 3)
    finally:
        bench.cleanup()
    return result
