"""Random sequences of cache operations against a model of the cluster.

After every operation: the snapshot holds exactly the model's real nodes with exactly the
model's pods on each, placeholders count as nodes, the pod states match, and every NodeInfo
aggregate and every NodeColumns row equals a fresh recomputation (``steps.check_consistent``).
The snapshot must be the same object unless the node set or order changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from scheduler_core.cache import Cache, CacheError
from scheduler_core.clock import FakeClock
from tests import wrappers
from tests.unit.cache.steps import REQUIRED_AFFINITY, REQUIRED_ANTI_AFFINITY, check_consistent, zone_labels

NODE_NAMES = st.sampled_from(["n0", "n1", "n2", "n3", "n4"])
ZONES = st.sampled_from(["", "r/a", "r/b", "s/a", "/c"])
POD_NAMES = st.sampled_from([f"p{i}" for i in range(10)])
SPECS: list[dict[str, Any]] = [
    {},
    {"cpu": "250m"},
    {"cpu": "1", "memory": "1Gi"},
    {"requests": {"cpu": "100m", "example.com/gpu": "1"}},
    {"requests": {"ephemeral-storage": "1Gi", "hugepages-2Mi": "4Mi"}},
    {"cpu": "100m", "affinity": REQUIRED_AFFINITY},
    {"affinity": REQUIRED_ANTI_AFFINITY},
    {"memory": "64Mi", "host_ports": [8080]},
]
POD_SPECS = st.sampled_from(range(len(SPECS)))


@dataclass
class ModelPod:
    node: str
    assumed: bool


class CacheMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.cache = Cache()
        self.snapshot = self.cache.update_snapshot()
        self.nodes: dict[str, str] = {}  # real node -> zone
        self.pods: dict[str, ModelPod] = {}
        self.structural = False

    # -- nodes ---------------------------------------------------------------------------
    @rule(name=NODE_NAMES, zone=ZONES, cpu=st.sampled_from(["1", "4"]), gpu=st.booleans(), relist=st.booleans())
    def add_or_update_node(self, name: str, zone: str, cpu: str, gpu: bool, relist: bool) -> None:
        node = wrappers.node(name, cpu=cpu, labels=zone_labels(zone), extra={"example.com/gpu": "2"} if gpu else None)
        if relist:
            self.cache.add_node(node)
        else:
            old = self.cache.get_node(name)
            self.cache.update_node(old.node if old else None, node)
        if self.nodes.get(name) != zone:
            self.structural = True  # a new node, or a node moved to another zone
        self.nodes[name] = zone

    @rule(name=NODE_NAMES)
    def remove_node(self, name: str) -> None:
        if name not in self.nodes:
            with pytest.raises(CacheError):
                self.cache.remove_node(name)
            return
        self.cache.remove_node(name)
        del self.nodes[name]
        self.structural = True

    # -- pods ----------------------------------------------------------------------------
    @rule(name=POD_NAMES, node=NODE_NAMES, spec=POD_SPECS)
    def assume(self, name: str, node: str, spec: int) -> None:
        pod = wrappers.pod_info(name, uid=f"uid-{name}", **SPECS[spec]).with_node(node)
        if name in self.pods:
            with pytest.raises(CacheError):
                self.cache.assume_pod(pod)
            return
        self.cache.assume_pod(pod)
        self.pods[name] = ModelPod(node, assumed=True)

    @rule(name=POD_NAMES)
    def forget(self, name: str) -> None:
        model = self.pods.get(name)
        pod = wrappers.pod_info(name, uid=f"uid-{name}", node_name=model.node if model else "n0")
        if model is None or not model.assumed:
            with pytest.raises(CacheError):
                self.cache.forget_pod(pod)
            return
        self.cache.forget_pod(pod)
        del self.pods[name]

    @rule(name=POD_NAMES, node=NODE_NAMES, spec=POD_SPECS)
    def add(self, name: str, node: str, spec: int) -> None:
        model = self.pods.get(name)
        pod = wrappers.pod_info(name, uid=f"uid-{name}", node_name=node, **SPECS[spec])
        if model is not None and not model.assumed:
            with pytest.raises(CacheError):
                self.cache.add_pod(pod)
            return
        self.cache.add_pod(pod)
        self.pods[name] = ModelPod(node, assumed=False)

    @rule(name=POD_NAMES, spec=POD_SPECS)
    def update(self, name: str, spec: int) -> None:
        model = self.pods.get(name)
        node = model.node if model else "n0"
        bare = wrappers.pod_info(name, uid=f"uid-{name}", node_name=node)
        old = self.cache.get_pod(bare) or bare
        new = wrappers.pod_info(name, uid=f"uid-{name}", node_name=node, **SPECS[spec])
        if model is None or model.assumed:
            with pytest.raises(CacheError):
                self.cache.update_pod(old, new)
            return
        self.cache.update_pod(old, new)

    @rule(name=POD_NAMES, forget_node=st.booleans())
    def remove(self, name: str, forget_node: bool) -> None:
        model = self.pods.get(name)
        node = "" if forget_node or model is None else model.node
        pod = wrappers.pod_info(name, uid=f"uid-{name}", node_name=node)
        if model is None:
            with pytest.raises(CacheError):
                self.cache.remove_pod(pod)
            return
        self.cache.remove_pod(pod)
        del self.pods[name]

    @rule(seconds=st.sampled_from([1.0, 300.0]))
    def tick(self, seconds: float) -> None:
        self.clock.advance(seconds)  # assumed pods never expire (v1.36.3 cache.go)

    # -- checks --------------------------------------------------------------------------
    @invariant()
    def cache_matches_model(self) -> None:
        if not self.structural:
            # Rows were kept in step in place, with no rebuild.
            check_consistent(self.cache, self.snapshot)
        snapshot = self.cache.update_snapshot()
        assert (snapshot is not self.snapshot) is self.structural
        self.snapshot, self.structural = snapshot, False
        check_consistent(self.cache, snapshot)

        assert sorted(i.name for i in snapshot.list()) == sorted(self.nodes)
        for info in snapshot.list():
            expected = {f"uid-{n}" for n, m in self.pods.items() if m.node == info.name}
            assert {p.uid for p in info.pods} == expected
        assert self.cache.node_count() == len(set(self.nodes) | {m.node for m in self.pods.values()})
        assert self.cache.pod_count() == len(self.pods)
        for name, model in self.pods.items():
            cached = self.cache.get_pod(wrappers.pod_info(name, uid=f"uid-{name}"))
            assert cached is not None and cached.node_name == model.node
            assert self.cache.is_assumed_pod(cached) is model.assumed
            holder = self.cache.get_node(model.node)
            assert holder is not None and (holder.node is None) is (model.node not in self.nodes)


CacheMachine.TestCase.settings = settings(
    max_examples=80, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_cache_operations_keep_columns_and_model_in_step = CacheMachine.TestCase
