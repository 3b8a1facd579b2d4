"""The operator preempts on a real API server: DefaultPreemption (in the default profile) picks
the node whose victims violate no PodDisruptionBudget, deletes the fewest victims there (with
the DisruptionTarget condition first), nominates the preemptor, and binds it once they are gone.

There are no kubelets, so a deleted pod would stay Terminating for ever: a thread in the test
plays the kubelet and force-deletes (grace period 0) every pod of the namespace that carries a
deletionTimestamp. The same watch records what the test asserts on afterwards (the
preemptor's nominatedNodeName, the victims' conditions, which pods were deleted).
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch

from tests.e2e import Cluster, eventually
from tests.e2e.operator_support import (
    Env,
    _plain,
    assert_no_overcommit,
    environment,
    install_crds,
    profile,
    wait_all_bound,
)

pytestmark = pytest.mark.e2e

TEST_DEADLINE_SECONDS = 120.0  # the whole test; every wait below is bounded too


@pytest.fixture(scope="module")
def crds(api: client.ApiClient) -> None:
    install_crds(api)


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path, crds: None) -> Iterator[Env]:
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


@dataclass
class FakeKubelet:
    """Watches the namespace's pods: force-deletes those being deleted, and records what it saw."""

    core: Any
    namespace: str
    deleted: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> last status seen
    nominations: dict[str, set[str]] = field(default_factory=dict)  # name -> nominatedNodeNames seen
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> FakeKubelet:
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def seen_nominations(self, name: str) -> set[str]:
        with self._lock:
            return set(self.nominations.get(name, ()))

    def deleted_pods(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return dict(self.deleted)

    def _run(self) -> None:
        resource_version = ""
        while not self._stop.is_set():
            try:
                if not resource_version:  # (re)list: act on what is there already
                    listed = self.core.list_namespaced_pod(self.namespace)
                    for pod in listed.items:
                        self._observe("ADDED", _plain(pod))
                    resource_version = listed.metadata.resource_version
                stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                    self.core.list_namespaced_pod, self.namespace,
                    resource_version=resource_version, timeout_seconds=1, _request_timeout=5,
                )  # fmt: skip
                for event in stream:
                    raw = event["raw_object"]
                    if event["type"] == "ERROR":  # 410 Gone and the like: list again
                        resource_version = ""
                        break
                    resource_version = raw["metadata"]["resourceVersion"]
                    self._observe(event["type"], raw)
                    if self._stop.is_set():
                        break
            except Exception as error:  # keep playing the kubelet; reported at the end
                self.errors.append(repr(error))
                resource_version = ""
                time.sleep(0.1)

    def _observe(self, kind: str, pod: dict[str, Any]) -> None:
        meta, status = pod["metadata"], pod.get("status") or {}
        name = meta["name"]
        with self._lock:
            if status.get("nominatedNodeName"):
                self.nominations.setdefault(name, set()).add(status["nominatedNodeName"])
            if kind == "DELETED" or meta.get("deletionTimestamp"):
                self.deleted[name] = status
        if kind != "DELETED" and meta.get("deletionTimestamp"):
            # What a kubelet does once the containers are stopped. With a body the API server
            # reads the options from it alone (query parameters are ignored): grace period there.
            options = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}}
            try:
                self.core.delete_namespaced_pod(name, self.namespace, body=options)
            except client.ApiException as error:
                if error.status not in (404, 409):
                    self.errors.append(f"force-deleting {name}: HTTP {error.status}")


def _priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": value, "globalDefault": False,
    }  # fmt: skip


@contextlib.contextmanager
def priority_classes(env: Env) -> Iterator[tuple[str, str]]:
    """Two cluster-scoped PriorityClasses with unique names (low 100, high 1000), removed after."""
    scheduling: Any = client.SchedulingV1Api(env.api)
    suffix = uuid.uuid4().hex[:6]
    low, high = f"e2e-low-{suffix}", f"e2e-high-{suffix}"
    scheduling.create_priority_class(_priority_class(low, 100))
    try:
        scheduling.create_priority_class(_priority_class(high, 1000))
        try:
            yield low, high
        finally:
            scheduling.delete_priority_class(high)
    finally:
        scheduling.delete_priority_class(low)


def test_preemption_evicts_the_fewest_victims_on_the_node_no_budget_protects(env: Env) -> None:
    started = time.monotonic()
    policy: Any = client.PolicyV1Api(env.api)
    with priority_classes(env) as (low, high):
        _run_preemption(env, policy, low, high, started)


def _run_preemption(env: Env, policy: Any, low: str, high: str, started: float) -> None:
    def remaining() -> float:
        left = TEST_DEADLINE_SECONDS - (time.monotonic() - started)
        assert left > 0, "test deadline passed"
        return left

    node_a, node_b = env.add_nodes(2, cpu="2", memory="4Gi")
    on_a = ["low-a0", "low-a1"]
    on_b = ["low-b0", "low-b1"]
    # Protects the pods on node A: no disruption allowed (status.disruptionsAllowed stays 0).
    policy.create_namespaced_pod_disruption_budget(env.home, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "guard-a"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"e2e-guard": "a"}}},
    })  # fmt: skip
    env.custom.create(env.home, profile("default", env.scheduler))
    operator = env.start_operator()

    with FakeKubelet(env.core, env.home) as kubelet:
        for names, node, labels in ((on_a, node_a, {"e2e-guard": "a"}), (on_b, node_b, {})):
            for name in names:
                env.create_pods(env.home, [name], cpu="1", memory="100Mi", priorityClassName=low,
                                node_selector={"kubernetes.io/hostname": node},
                                labels={"tier": "low", **labels})  # fmt: skip
        placed = wait_all_bound(env.core, env.home, {*on_a, *on_b}, timeout=min(30, remaining()))
        assert placed == {**dict.fromkeys(on_a, node_a), **dict.fromkeys(on_b, node_b)}
        low_uids = {p.metadata.name: p.metadata.uid for p in env.core.list_namespaced_pod(env.home).items}
        assert env.core.read_namespaced_pod("low-a0", env.home).spec.priority == 100  # the Priority admission

        preempt_started = time.monotonic()
        env.create_pods(env.home, ["high"], cpu="1", memory="100Mi", priorityClassName=high, labels={"tier": "high"})
        try:
            bound = wait_all_bound(env.core, env.home, {"high"}, timeout=min(60, remaining()))
        except AssertionError:
            pods = env.core.list_namespaced_pod(env.home).items
            print("\npods:", [(p.metadata.name, p.spec.node_name, p.metadata.deletion_timestamp) for p in pods])
            print("preemptor status:", env.core.read_namespaced_pod("high", env.home).status)
            print("deleted:", kubelet.deleted_pods(), "kubelet errors:", kubelet.errors)
            raise
        preempt_seconds = time.monotonic() - preempt_started
        assert bound == {"high": node_b}

        def nominated() -> None:  # the report lane may write it a moment after the binding
            assert kubelet.seen_nominations("high") == {node_b}, kubelet.seen_nominations("high")

        eventually(nominated, timeout=min(10, remaining()))
        time.sleep(1.0)  # room for an (unwanted) further eviction to show
        deleted = kubelet.deleted_pods()
        errors = list(kubelet.errors)

    # Exactly one victim (upstream minimises them), on node B, with upstream's condition.
    assert len(deleted) == 1, deleted
    ((victim, status),) = deleted.items()
    assert victim in on_b
    disruption = [c for c in status.get("conditions") or [] if c.get("type") == "DisruptionTarget"]
    assert [(c["status"], c["reason"]) for c in disruption] == [("True", "PreemptionByScheduler")], status

    survivors = {p.metadata.name: p for p in env.core.list_namespaced_pod(env.home).items}
    assert set(survivors) == {*on_a, *on_b, "high"} - {victim}
    for name in on_a:  # the budget's pods: untouched, still bound where they were
        pod = survivors[name]
        assert (pod.metadata.uid, pod.spec.node_name, pod.metadata.deletion_timestamp) == (low_uids[name], node_a, None)
    assert survivors["high"].status.nominated_node_name in (None, node_b)
    assert_no_overcommit(env.core, [node_a, node_b])
    assert operator.problems() == []
    assert len(re.findall(rf"backend: preempted {env.home}/{victim} ", operator.log())) == 1
    assert len(re.findall(r"backend: preempted ", operator.log())) == 1
    print(
        f"\npreemption: high-priority pod created -> bound on {node_b} in {preempt_seconds:.2f} s; "
        f"victim {victim}; whole test {time.monotonic() - started:.1f} s; kubelet watch errors: {errors}"
    )


def test_preemptors_of_equal_priority_each_preempt_once_and_bind_where_nominated(env: Env) -> None:
    """PreemptionBasic in miniature (upstream scheduler_perf ``misc/performance-config.yaml``):
    three 4-CPU nodes full of 900m low-priority pods, then three 3-CPU high-priority pods at once.
    Each must evict three pods on a node of its own and bind there: a preemptor's freed room is
    kept for it while nominated (upstream ``RunFilterPluginsWithNominatedPods``)."""
    started = time.monotonic()
    with priority_classes(env) as (low, high):
        nodes = env.add_nodes(3, cpu="4", memory="8Gi")
        env.custom.create(env.home, profile("default", env.scheduler))
        operator = env.start_operator()
        lows = {f"low-{n}-{i}": node for n, node in enumerate(nodes) for i in range(4)}
        highs = [f"high-{i}" for i in range(3)]
        with FakeKubelet(env.core, env.home) as kubelet:
            for name, node in lows.items():
                env.create_pods(env.home, [name], cpu="900m", memory="100Mi", priorityClassName=low,
                                node_selector={"kubernetes.io/hostname": node}, labels={"tier": "low"})  # fmt: skip
            assert wait_all_bound(env.core, env.home, set(lows), timeout=30) == lows
            env.create_pods(env.home, highs, cpu="3", memory="100Mi", priorityClassName=high, labels={"tier": "high"})
            left = TEST_DEADLINE_SECONDS - (time.monotonic() - started)
            bound = wait_all_bound(env.core, env.home, set(highs), timeout=min(60, left))
            preempt_seconds = time.monotonic() - started

            def nominated_once() -> None:
                assert {name: kubelet.seen_nominations(name) for name in highs} == {
                    name: {node} for name, node in bound.items()
                }

            eventually(nominated_once, timeout=10)
            time.sleep(1.0)  # room for an (unwanted) further eviction to show
            deleted = kubelet.deleted_pods()

    assert sorted(bound.values()) == sorted(nodes)
    # Three victims on each preemptor's node, none elsewhere, each preempted once.
    assert sorted(lows[victim] for victim in deleted) == sorted(nodes * 3)
    assert len(re.findall(r"backend: preempted ", operator.log())) == 9
    assert_no_overcommit(env.core, nodes)
    assert operator.problems() == []
    print(f"\nthree preemptors bound in {preempt_seconds:.2f} s since the test began")


def test_a_preemptor_whose_node_has_no_victims_left_has_its_nomination_cleared(env: Env) -> None:
    """Upstream clears ``status.nominatedNodeName`` when a nominated preemptor's next attempt
    finds no node with victims to offer (v1.36.3 ``framework/preemption/preemption.go``
    ``Evaluate``: "Specify nominatedNodeName to clear the pod's nominatedNodeName status", written
    by ``schedule_one.go`` ``updatePod``); the operator writes the same through its transport.

    The preemptor is nominated to the only node while its victim is Terminating (no kubelet
    here: it stays so, and the preemptor waits, still nominated); then a pod of the preemptor's
    own priority is bound there directly and the victim goes: nothing can be preempted for it
    any more."""
    with priority_classes(env) as (low, high):
        (node,) = env.add_nodes(1, cpu="2", memory="4Gi")
        env.custom.create(env.home, profile("default", env.scheduler))
        operator = env.start_operator()
        on_node = {"kubernetes.io/hostname": node}
        env.create_pods(env.home, ["victim"], cpu="2", memory="100Mi", priorityClassName=low, node_selector=on_node,
                        labels={"tier": "low"})  # fmt: skip
        wait_all_bound(env.core, env.home, {"victim"}, timeout=30)
        env.create_pods(
            env.home, ["preemptor"], cpu="2", memory="100Mi", priorityClassName=high, labels={"tier": "high"}
        )

        def nominated() -> None:
            preemptor = env.core.read_namespaced_pod("preemptor", env.home)
            assert preemptor.status.nominated_node_name == node, preemptor.status
            assert env.core.read_namespaced_pod("victim", env.home).metadata.deletion_timestamp is not None

        eventually(nominated, timeout=30)
        env.create_pods(env.home, ["squatter"], cpu="2", memory="100Mi", priorityClassName=high, node_selector=on_node,
                        node_name=node, labels={"tier": "high"})  # fmt: skip  # bound without a scheduler
        env.core.delete_namespaced_pod("victim", env.home, body={"gracePeriodSeconds": 0})

        def cleared() -> None:
            preemptor = env.core.read_namespaced_pod("preemptor", env.home)
            assert preemptor.spec.node_name is None
            assert preemptor.status.nominated_node_name is None, preemptor.status

        eventually(cleared, timeout=30)

        def told() -> None:  # the attempt's event is a report, sent after the status write
            assert "No preemption victims found for incoming pod" in _failed_scheduling(env, "preemptor")

        eventually(told, timeout=10)
    assert operator.problems() == []
    assert len(re.findall(r"backend: preempted ", operator.log())) == 1


def _failed_scheduling(env: Env, name: str) -> str:
    """The notes of the FailedScheduling events about pod ``name``."""
    events = env.core.list_namespaced_event(env.home, field_selector=f"involvedObject.name={name}").items
    return "\n".join(e.message or "" for e in events if e.reason == "FailedScheduling")
