"""Gang parity with the real kube-scheduler v1.36.3 (GenericWorkload + GangScheduling gates).

    python -m bench.parity_harness.gangs --scenarios 20 --seed 1

Runs on a dev cluster of its own (state ``.devcluster/gangs``, binaries shared, see
hack/devcluster/README.md) started with ``GenericWorkload=true,GangScheduling=true`` and
``--runtime-config=scheduling.k8s.io/v1alpha2=true``, so the API server serves upstream's
PodGroup and kube-scheduler runs its GangScheduling plugin (its default plugins under the
gate). A scenario (:func:`generate`, from a seed) is a few nodes of whole CPUs, a few
``scheduling.k8s.io/v1alpha2`` gangs of 1-CPU pods (some with fewer pods than ``minCount``,
some competing for the same room) and maybe a pod in no gang. It is created on the cluster,
gang after gang, and kube-scheduler places it until nothing changes for a while; then the
objects the API server stored go through ``simulate`` with a profile enabling GangScheduling.
Both sides must agree on which pods bind and which wait: per group, since a group's pods are
identical (:func:`per_group`); the nodes may differ, as every pod needs one CPU.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.parity_harness.kube import ROOT, Api, ApiError, DevCluster

STATE = ROOT / ".devcluster" / "gangs"
GATES = {
    "CRD_SCHEDULER_DEVCLUSTER_FEATURE_GATES": "GenericWorkload=true,GangScheduling=true",
    "CRD_SCHEDULER_DEVCLUSTER_RUNTIME_CONFIG": "scheduling.k8s.io/v1alpha2=true",
}
SCHEDULER_NAME = "gang-parity"
HOSTNAME = "kubernetes.io/hostname"
POD_GROUPS = "/apis/scheduling.k8s.io/v1alpha2/namespaces/{namespace}/podgroups"
SETTLE_SECONDS = 4.0  # no binding change for this long: kube-scheduler is done
SCENARIO_TIMEOUT = 90.0
Json = dict[str, Any]


@dataclass
class Scenario:
    seed: int
    namespace: str
    nodes: list[Json]
    pod_groups: list[Json]
    pods: list[Json]  # in creation order


def generate(seed: int, run: str) -> Scenario:
    rng = random.Random(seed)
    namespace = f"gangs-{run}-{seed}"
    label = {"gang-parity": f"{run}-{seed}"}
    nodes = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"{namespace}-n{i}", "labels": {**label, HOSTNAME: f"{namespace}-n{i}"}},
            "status": {"capacity": {"cpu": str(rng.choice((1, 2, 3, 4))), "memory": "16Gi", "pods": "110"}},
        }
        for i in range(rng.randint(1, 4))
    ]
    pod_groups: list[Json] = []
    pods: list[Json] = []

    def pod(name: str, group: str | None) -> Json:
        spec: Json = {
            "schedulerName": SCHEDULER_NAME,
            "nodeSelector": label,
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}}],
        }
        if group is not None:
            spec["schedulingGroup"] = {"podGroupName": group}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}

    for g in range(rng.randint(1, 3)):
        name = f"g{g}"
        min_count = rng.randint(1, 4)
        basic = rng.random() < 0.15
        policy: Json = {"basic": {}} if basic else {"gang": {"minCount": min_count}}
        pod_groups.append(
            {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"schedulingPolicy": policy},
            }
        )
        members = max(1, min_count + rng.choice((-1, 0, 0, 0, 1)))
        pods.extend(pod(f"{name}-{i}", name) for i in range(members))
    if rng.random() < 0.5:
        pods.append(pod("solo", None))
    return Scenario(seed, namespace, nodes, pod_groups, pods)


@dataclass
class Result:
    seed: int
    theirs: set[str] = field(default_factory=set)  # pods kube-scheduler bound
    ours: set[str] = field(default_factory=set)
    pods: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def agrees(self) -> bool:
        return self.error is None and per_group(self.theirs) == per_group(self.ours)

    def describe(self) -> str:
        if self.error:
            return f"seed {self.seed}: error: {self.error}"
        waiting = sorted(set(self.pods) - self.theirs)
        line = f"seed {self.seed}: kube-scheduler bound {sorted(self.theirs)}, waiting {waiting}"
        if self.agrees:
            return line
        return f"{line}; ours bound {sorted(self.ours)}"


def per_group(bound: set[str]) -> dict[str, int]:
    """How many pods of each group bound (a pod in no group counts as its own group).

    A group's pods are identical in these scenarios, so which of them takes a last free place
    is arbitrary on both sides (kube-scheduler places a group's pods in one cycle; here each
    has its own): what must agree is each gang bound whole or not at all, and each basic
    group's and lone pod's count."""
    counts: dict[str, int] = {}
    for name in bound:
        group = name.rsplit("-", 1)[0] if name != "solo" else name
        counts[group] = counts.get(group, 0) + 1
    return counts


def simulate_outcome(nodes: list[Json], pod_groups: list[Json], pods: list[Json]) -> set[str]:
    """The pods ``simulate`` binds, on the objects as the API server stored them."""
    from scheduler_core.simulator import load_texts, simulate

    profile = {
        "apiVersion": "scheduling.crd-scheduler.io/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": "gangs", "namespace": "crd-scheduler"},
        "spec": {"schedulerName": SCHEDULER_NAME, "plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}},
    }
    text = yaml.safe_dump_all([profile, *nodes, *pod_groups, *pods], sort_keys=False)
    result = simulate(load_texts([("scenario.yaml", text)]))
    return {r.name for r in result.pods if r.node}


def _stored(obj: Json) -> Json:
    """A stored object as simulate input: pending again, server fields it would not have dropped."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in ("managedFields", "resourceVersion")}
    return {**obj, "metadata": meta}


class GangParity:
    def __init__(self, binaries: Path | None = None) -> None:
        self.cluster = DevCluster(STATE, binaries, env=GATES)
        self.run_id = uuid.uuid4().hex[:6]
        self.api: Api | None = None

    @contextmanager
    def running(self) -> Iterator[GangParity]:
        pid = os.getpid()
        kubeconfig = self.cluster.up(pid)
        try:
            self.api = Api(kubeconfig)
            config = STATE / "kube-scheduler-gangs.yaml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "kubescheduler.config.k8s.io/v1",
                        "kind": "KubeSchedulerConfiguration",
                        "profiles": [{"schedulerName": SCHEDULER_NAME}],
                    }
                )
            )
            self.cluster.kube_scheduler_up(config, 2)
            yield self
        finally:
            if self.api is not None:
                self.api.close()
            try:
                self.cluster.kube_scheduler_down()
            finally:
                self.cluster.release(pid)

    def run(self, seed: int) -> Result:
        assert self.api is not None
        api = self.api
        scenario = generate(seed, self.run_id)
        result = Result(seed, pods=[p["metadata"]["name"] for p in scenario.pods])
        created_nodes: list[str] = []
        try:
            api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": scenario.namespace}})
            for node in scenario.nodes:
                created_nodes.append(api.create(node)["metadata"]["name"])
            self._wait_default_service_account(scenario.namespace)
            for group in scenario.pod_groups:
                api.request("POST", POD_GROUPS.format(namespace=scenario.namespace), group)
            for pod in scenario.pods:
                api.create(pod)
            result.theirs = self._settle(scenario.namespace)
            stored_pods = api.request("GET", f"/api/v1/namespaces/{scenario.namespace}/pods")["items"]
            stored_groups = api.request("GET", POD_GROUPS.format(namespace=scenario.namespace))["items"]
            stored_nodes = [api.request("GET", f"/api/v1/nodes/{name}") for name in created_nodes]
            pending = []
            for stored in stored_pods:
                pod = _stored({"apiVersion": "v1", "kind": "Pod", **stored})
                pod["spec"] = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
                pod.pop("status", None)
                pending.append(pod)
            order = {p["metadata"]["name"]: i for i, p in enumerate(scenario.pods)}
            pending.sort(key=lambda p: order.get(p["metadata"]["name"], len(order)))
            for group in stored_groups:
                group.setdefault("apiVersion", "scheduling.k8s.io/v1alpha2")
                group.setdefault("kind", "PodGroup")
            for node in stored_nodes:
                node.setdefault("apiVersion", "v1")
                node.setdefault("kind", "Node")
            result.ours = simulate_outcome(
                [_stored(n) for n in stored_nodes], [_stored(g) for g in stored_groups], pending
            )
        except Exception as error:  # a scenario the harness could not run does not agree
            result.error = f"{type(error).__name__}: {error}"
        finally:
            self._clean(scenario.namespace, created_nodes)
        return result

    def _wait_default_service_account(self, namespace: str) -> None:
        assert self.api is not None
        deadline = time.monotonic() + 30
        while True:
            try:
                self.api.request("GET", f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
                return
            except ApiError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _settle(self, namespace: str) -> set[str]:
        assert self.api is not None
        started = time.monotonic()
        last: set[str] = set()
        changed = started
        while True:
            pods = self.api.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
            bound = {p["metadata"]["name"] for p in pods if (p.get("spec") or {}).get("nodeName")}
            now = time.monotonic()
            if bound != last:
                last, changed = bound, now
            if now - changed >= SETTLE_SECONDS or now - started > SCENARIO_TIMEOUT:
                return bound
            time.sleep(0.25)

    def _clean(self, namespace: str, nodes: list[str]) -> None:
        assert self.api is not None
        for path in (f"/api/v1/namespaces/{namespace}", *(f"/api/v1/nodes/{n}" for n in nodes)):
            with suppress(ApiError):
                self.api.request("DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    parity = GangParity()
    with parity.running():
        results = [parity.run(args.seed + i) for i in range(args.scenarios)]
    for result in results:
        print(("  " if result.agrees else "X ") + result.describe())
    agreed = sum(r.agrees for r in results)
    print(f"agreement: {100.0 * agreed / len(results):.1f}% ({agreed}/{len(results)})")
    return 0 if agreed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
