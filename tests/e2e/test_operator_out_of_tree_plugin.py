"""The operator on a real API server schedules with an out-of-tree plugin: the sample package
(``tests/sample_plugin``, pip-installed by ``make install``) registers through the
``crd_scheduler.plugins`` entry-point group, and a SchedulerProfile enables it by name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from scheduler_operator.resources import PROFILE_PLURAL
from tests.e2e import Cluster
from tests.e2e.operator_support import Env, condition_of, environment, install_crds, profile, wait_all_bound

pytestmark = pytest.mark.e2e

SAMPLE = "SampleNodeLabel"
KEY = "sample.crd-scheduler.io/pool"


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path) -> Iterator[Env]:
    install_crds(api)
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


def test_a_profile_enables_the_out_of_tree_plugin_and_pods_follow_it(env: Env) -> None:
    plain, silver, gold = env.add_nodes(3, cpu="4", memory="8Gi")
    env.core.patch_node(silver, {"metadata": {"labels": {KEY: "silver"}}})
    env.core.patch_node(gold, {"metadata": {"labels": {KEY: "gold"}}})
    sample = profile(
        "default",
        env.scheduler,
        plugins={"multiPoint": {"enabled": [{"name": SAMPLE, "weight": 50}]}},
        plugin_config=[{"name": SAMPLE, "args": {"preferredValues": ["gold", "silver"]}}],
    )
    env.custom.create(env.home, sample)
    operator = env.start_operator()
    status = env.custom.wait_status(
        PROFILE_PLURAL, env.home, "default", lambda s: condition_of(s, "Ready").get("status") == "True"
    )
    assert condition_of(status, "Valid")["status"] == "True"

    names = ["p0", "p1", "p2"]
    env.create_pods(env.home, names, cpu="100m", memory="64Mi")
    placed = wait_all_bound(env.core, env.home, set(names))

    # Filter keeps the unlabelled node out; Score (weight 50) outweighs spreading: all on gold.
    assert set(placed.values()) == {gold}
    assert plain not in placed.values()
    assert operator.problems() == []
