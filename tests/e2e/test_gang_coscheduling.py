"""Coscheduling on the real API server: a gang binds only whole, never before its last member.

With scheduler-plugins' PodGroup CRD installed (``crds/podgroups.scheduling.x-k8s.io.yaml``),
the operator (unprivileged identity, manifests/rbac.yaml) serves a profile with Coscheduling.
A 4-member gang and a pod in no gang stream in, the members half a second apart. A watch on
the namespace records when each pod is first seen bound. Every member must bind, none before
the last member exists (it cannot be reserved earlier, and Permit holds the others until it
is), and the pod in no gang is scheduled as usual.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from urllib3.exceptions import ProtocolError

from scheduler_operator.resources import PROFILE_PLURAL
from tests import wrappers
from tests.e2e import Cluster
from tests.e2e.operator_support import (
    CRD_FILES,
    ROOT,
    Env,
    assert_no_overcommit,
    environment,
    install_crds,
    profile,
    wait_all_bound,
)

pytestmark = pytest.mark.e2e

POD_GROUP_CRD = ROOT / "crds" / "podgroups.scheduling.x-k8s.io.yaml"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# Coscheduling at every point but QueueSort: the operator serves every profile on the shared
# cluster, other sessions' included, and one QueueSort serves them all (PrioritySort there).
# All-or-nothing does not depend on the queue order, only how soon a gang comes together.
COSCHEDULING = {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"disabled": [{"name": "Coscheduling"}]},
}


@pytest.fixture(scope="module")
def crds(api: client.ApiClient) -> None:
    install_crds(api, (*CRD_FILES, POD_GROUP_CRD))


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path, crds: None) -> Iterator[Env]:
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


class BindingWatch:
    """Records, from a watch on one namespace, the first time each pod is seen with a node."""

    def __init__(self, core: Any, namespace: str) -> None:
        self.bound: dict[str, float] = {}
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        self._thread = threading.Thread(target=self._run, args=(core, namespace), daemon=True)
        self._thread.start()

    def _run(self, core: Any, namespace: str) -> None:
        try:
            for event in self._watch.stream(core.list_namespaced_pod, namespace, timeout_seconds=120):  # type: ignore[no-untyped-call]
                pod = event["object"]
                if pod.spec.node_name and pod.metadata.name not in self.bound:
                    self.bound[pod.metadata.name] = time.monotonic()
        except ProtocolError:
            pass  # the stream cut when the test stops the watch

    def stop(self) -> None:
        self._watch.stop()  # type: ignore[no-untyped-call]


def test_gang_of_four_binds_only_whole_and_never_before_its_last_member(env: Env) -> None:
    nodes = env.add_nodes(5, cpu="1", memory="4Gi")  # room for the gang and the solo pod
    env.custom.create(env.home, profile("default", env.scheduler, plugins=COSCHEDULING))
    operator = env.start_operator()
    env.custom.wait_status(PROFILE_PLURAL, env.home, "default", lambda s: s.get("observedGeneration") == 1)
    group = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {"minMember": 4, "scheduleTimeoutSeconds": 60},
    }
    client.CustomObjectsApi(env.api).create_namespaced_custom_object(
        "scheduling.x-k8s.io", "v1alpha1", env.home, "podgroups", group
    )
    recorder = BindingWatch(env.core, env.home)
    created: dict[str, float] = {}
    members = [f"train-{i}" for i in range(4)]
    try:
        for i, name in enumerate(members):
            pod = wrappers.pod(
                name,
                env.home,
                scheduler_name=env.scheduler,
                node_selector={"e2e-run": env.label},
                cpu="1",
                labels={POD_GROUP_LABEL: "train"},
            )
            # Marked before the create: the pod exists from some moment of the call on, so a
            # binding seen before the call began is a member bound too early. A mark taken after
            # the call returns is late under load (the gang may bind before the answer is read).
            created[name] = time.monotonic()
            env.core.create_namespaced_pod(env.home, pod)
            if i == 1:
                env.create_pods(env.home, ["solo"], cpu="1")
            time.sleep(0.5)
        wait_all_bound(env.core, env.home, {*members, "solo"}, timeout=60)
        time.sleep(0.5)  # let the watch catch up with the last binding
    finally:
        recorder.stop()

    last_member_created = created[members[-1]]
    first_member_bound = min(recorder.bound[m] for m in members)
    assert first_member_bound >= last_member_created, "a member bound before the last member existed"
    assert "solo" in recorder.bound
    assert_no_overcommit(env.core, nodes)
    # Only this namespace: the operator also serves other sessions' namespaced profiles.
    ours = [pod.split("/")[1] for pod, _, _ in operator.binds() if pod.startswith(f"{env.home}/")]
    assert sorted(ours) == sorted([*members, "solo"])
    assert operator.problems() == []
