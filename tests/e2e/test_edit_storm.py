"""A PluginConfig edit storm on the real API server (issue 26, item 4): the operator writes each
affected profile's status at most once per quiet period, never once per edit, and the statuses
end at the newest edit.

20 tenant profiles in one namespace, all selected by one PluginConfig edited 30 times, one edit
every 0.2 s (6 s in all on an idle machine: one quiet period, shorter than
``REBUILD_MAX_DELAY``; the bound allows for a loaded machine stretching the storm). The status
writes that land are counted on a watch of the namespace (a MODIFIED event whose status changed;
the API server's request counters are shared with every other client of the dev cluster). The
full-size figures come from ``bench/tenancy.py --only storm`` (bench/README.md)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from bench.tenancy import STORM_PLUGIN, StatusWatch, storm_args
from scheduler_operator.control.reconciler import REBUILD_MAX_DELAY, REBUILD_QUIET
from scheduler_operator.resources import PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL
from tests.e2e import Cluster, eventually
from tests.e2e.operator_support import Env, condition_of, environment, install_crds, plugin_config, profile

pytestmark = pytest.mark.e2e

PROFILES = 20
EDITS = 30
EVERY = 0.2


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path) -> Iterator[Env]:
    install_crds(api)
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


def test_an_edit_storm_writes_each_status_once_per_quiet_period_and_ends_at_the_newest_edit(env: Env) -> None:
    home = profile("default", env.scheduler, tenantPolicy={"maxProfilesPerNamespace": PROFILES})
    env.custom.create(env.home, home)
    tenant = env.namespace()
    env.custom.create(tenant, plugin_config("fit", STORM_PLUGIN, storm_args(1)))
    for i in range(PROFILES):
        env.custom.create(tenant, profile(f"p{i}", f"{env.scheduler}-t{i}"))
    env.start_operator()
    watch = StatusWatch(env.api, tenant)
    try:
        eventually(lambda: _assert_served(watch, 1), timeout=120, interval=0.5)
        while time.monotonic() - watch.last_write < 5:  # the start's writes have landed
            time.sleep(0.5)
        before, before_by_name = watch.writes, dict(watch.writes_by_name)

        edited = []
        for edit in range(2, EDITS + 2):
            env.custom.patch_spec(
                PLUGIN_CONFIG_PLURAL, tenant, "fit", {"plugin": STORM_PLUGIN, "args": storm_args(edit)}
            )
            edited.append(time.monotonic())
            time.sleep(EVERY)
        eventually(lambda: _assert_served(watch, EDITS + 1), timeout=120, interval=0.5)
        while time.monotonic() - watch.last_write < 5:  # nothing more lands after
            time.sleep(0.5)
        writes = watch.writes - before
        by_name = {name: n - before_by_name.get(name, 0) for name, n in watch.writes_by_name.items()}
    finally:
        watch.stop()

    # Once per quiet period: one write per profile after the storm, one more for each pause
    # between edits longer than the quiet period and each REBUILD_MAX_DELAY the storm lasted (a
    # loaded machine stretches it); never one per edit.
    # (half the quiet period: the operator sees the edits later than they are made, not always
    # equally late)
    pauses = sum(b - a >= REBUILD_QUIET / 2 for a, b in itertools.pairwise(edited))
    per_profile = 1 + pauses + int((edited[-1] - edited[0]) // REBUILD_MAX_DELAY)
    assert per_profile < EDITS / 3, f"the edits were too slow to make a storm: {edited}"
    assert max(by_name.values()) <= per_profile, by_name
    assert writes <= per_profile * PROFILES, f"{writes} status writes for {EDITS} edits of {PROFILES} profiles"
    config = env.custom.get(PLUGIN_CONFIG_PLURAL, tenant, "fit")
    assert config["status"]["observedGeneration"] == config["metadata"]["generation"] == EDITS + 1
    for i in range(PROFILES):
        status = env.custom.get(PROFILE_PLURAL, tenant, f"p{i}")["status"]
        assert condition_of(status, "Ready")["status"] == "True"


def _assert_served(watch: StatusWatch, weight: int) -> None:
    served = watch.served()
    assert len(served) == PROFILES and served.count(weight) == PROFILES, served
