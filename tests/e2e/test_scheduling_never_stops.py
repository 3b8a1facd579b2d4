"""No plugin and no extender can stop or starve scheduling (issue 26, items 1 and 3), on the real
dev cluster with two operator replicas.

* A PostFilter plugin that raises (it ended ``Scheduler.run`` for good, the leader kept the Lease
  and answered ``/healthz`` 200): the pod's cycle fails with a SchedulerError naming the plugin,
  and the next pod binds, on the same leader.
* The loop forced to die (a fault injected into the loop itself, outside any plugin call): the
  leader logs at ERROR, ``/healthz`` fails, the Lease is released and the standby binds the rest.
* A tenant's extender answering after 30 s (its policy raises the cap): another namespace's pod
  binds within 1 s meanwhile and ``/healthz`` stays 200. A tenant ``httpTimeout`` above the
  policy's cap is refused (``Valid=False``, rule ``extender-timeout``) and never called.
"""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduler_operator.resources import PROFILE_PLURAL
from tests import wrappers
from tests.e2e import Cluster, eventually
from tests.e2e.extender_support import peer
from tests.e2e.faults import KILL_LOOP_LABEL, LOOP_KILLER, RAISING_POST_FILTER, marked, start_marked
from tests.e2e.operator_support import (
    Env,
    condition_of,
    environment,
    failed_scheduling_notes,
    install_crds,
    lease_holder,
    profile,
    wait_all_bound,
)
from tests.unit.extender.peer import names

pytestmark = pytest.mark.e2e


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path) -> Iterator[Env]:
    install_crds(api)  # per test: another session may have installed its branch's CRDs
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


def _healthz(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"{url}/healthz?verbose", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_raising_post_filter_fails_that_pod_and_the_next_pod_binds_on_the_same_leader(env: Env) -> None:
    env.add_nodes(2, cpu="2", memory="4Gi")
    env.custom.create(env.home, profile("default", env.scheduler, plugins=marked(RAISING_POST_FILTER)))
    leader = start_marked(env)
    standby = start_marked(env, wait_for=r"waiting for the lease held by")
    env.create_pods(env.home, ["too-big"], cpu="64")  # unschedulable: PostFilter runs, and raises
    eventually(lambda: _assert_noted(env, "too-big", f'running PostFilter plugin "{RAISING_POST_FILTER}"'), timeout=30)
    env.create_pods(env.home, ["next"], cpu="100m")
    wait_all_bound(env.core, env.home, {"next"}, timeout=20)
    # The log line follows the binding's answer, which the watch above may see first.
    eventually(lambda: _assert(any(pod.endswith("/next") for pod, _, _ in leader.binds())), timeout=10)
    assert lease_holder(client.CoordinationV1Api(env.api), env.home)[0] == leader.identity
    assert _healthz(leader.url)[0] == 200
    assert leader.running() and standby.running()
    assert "stopped scheduling" not in leader.log()


def _assert_noted(env: Env, pod: str, text: str, namespace: str | None = None) -> None:
    notes = failed_scheduling_notes(env.core, namespace or env.home, pod)
    assert any(text in note for note in notes), notes


def test_a_loop_that_dies_fails_healthz_releases_the_lease_and_the_standby_binds(env: Env) -> None:
    env.add_nodes(2, cpu="2", memory="4Gi")
    env.custom.create(env.home, profile("default", env.scheduler, plugins=marked(LOOP_KILLER)))
    leader = start_marked(env)
    standby = start_marked(env, wait_for=r"waiting for the lease held by")
    killer = wrappers.pod(
        "killer", env.home, scheduler_name=env.scheduler, node_selector={"e2e-run": env.label}, cpu="100m"
    )
    killer["metadata"]["labels"] = {**killer["metadata"].get("labels", {}), KILL_LOOP_LABEL: "yes"}
    env.core.create_namespaced_pod(env.home, killer)
    leader.wait_log(r"ERROR .*the scheduling loop ended while leading", timeout=30)

    def unhealthy() -> str:
        code, body = _healthz(leader.url)
        assert code == 500, body
        return body

    body = eventually(unhealthy, timeout=10)
    assert "[-]scheduling-loop failed: the scheduling loop ended while leading: RuntimeError: injected fault" in body
    standby.wait_log(r"leading: scheduling", timeout=30)  # released: no waiting for the lease to expire
    env.create_pods(env.home, ["after"], cpu="100m")
    wait_all_bound(env.core, env.home, {"after", "killer"}, timeout=30)
    assert lease_holder(client.CoordinationV1Api(env.api), env.home)[0] == standby.identity
    assert unhealthy()  # still failing: the container is to be restarted
    assert leader.running()  # the kubelet restarts it on the failing probe


def _tenant_extender_policy(env: Env, url: str, **policy: Any) -> dict[str, Any]:
    """The home profile's tenantPolicy: tenants may serve its schedulerName and call ``url``."""
    return {"allowedSchedulerNames": [env.scheduler], "allowedExtenders": [url], **policy}


def test_a_tenants_30s_extender_holds_only_its_own_profiles_pods(env: Env) -> None:
    """issue 26's must-show: with a tenant's allowed extender answering after 30 s (its
    namespace's policy raises the cap to 1m), another namespace's pod binds within 1 s and
    /healthz stays 200."""
    env.add_nodes(2, cpu="4", memory="8Gi")
    tenant, other = env.namespace(), env.namespace()
    with peer() as (server, _):

        async def slow(body: dict[str, Any]) -> dict[str, Any]:
            await asyncio.sleep(30)
            return {"NodeNames": names(body)}

        server.answers["filter"] = slow
        policy = _tenant_extender_policy(env, server.url, maxExtenderHTTPTimeout="1m")
        env.custom.create(env.home, profile("default", env.scheduler, tenantPolicy=policy))
        extender = {"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True, "httpTimeout": "45s"}
        created = env.custom.create(tenant, profile("slow", env.scheduler, extenders=[extender]))
        assert created["spec"].get("extenders") == [extender], "spec.extenders pruned: a CRD without it"
        operator = env.start_operator()
        env.custom.wait_status(
            PROFILE_PLURAL, tenant, "slow", lambda s: condition_of(s, "Ready").get("status") == "True"
        )
        env.create_pods(tenant, ["held"], cpu="100m")
        eventually(lambda: _assert(len(server.calls) == 1), timeout=20)  # the tenant's pod waits 30 s
        started = time.monotonic()
        env.create_pods(other, ["quick"], cpu="100m")
        wait_all_bound(env.core, other, {"quick"}, timeout=10)
        took = time.monotonic() - started
        print(f"another namespace's pod bound {took:.2f} s after creation while a tenant's extender call was in flight")
        assert took < 1.0
        for _ in range(5):
            assert _healthz(operator.url)[0] == 200
            time.sleep(1)
        wait_all_bound(env.core, tenant, {"held"}, timeout=60)
        assert len(server.calls) == 1  # the answer came within the tenant's httpTimeout
        assert operator.problems() == []


def test_a_tenant_httptimeout_above_the_cap_is_refused_by_the_operator(env: Env) -> None:
    """The policy allows the extender but keeps the default cap (upstream's 5 s): a tenant
    profile asking 30 s is Valid=False naming the rule; its pods wait and the extender is never
    called, while the cluster-wide profile serves on."""
    env.add_nodes(1, cpu="4", memory="8Gi")
    tenant = env.namespace()
    with peer() as (server, _):
        env.custom.create(
            env.home, profile("default", env.scheduler, tenantPolicy=_tenant_extender_policy(env, server.url))
        )
        extender = {"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True, "httpTimeout": "30s"}
        env.custom.create(tenant, profile("slow", env.scheduler, extenders=[extender]))
        operator = env.start_operator()
        status = env.custom.wait_status(
            PROFILE_PLURAL, tenant, "slow", lambda s: condition_of(s, "Valid").get("status") == "False"
        )
        message = condition_of(status, "Valid")["message"]
        assert message.startswith(
            "spec.extenders[0].httpTimeout: tenant policy rule 'extender-timeout': a profile in namespace "
            f"{tenant!r} may not wait for extender {server.url!r} longer than 5s: httpTimeout 30s is 30s "
            "(the policy's maxExtenderHTTPTimeout)"
        ), message
        env.create_pods(tenant, ["held"], cpu="100m")
        env.create_pods(env.home, ["served"], cpu="100m")
        wait_all_bound(env.core, env.home, {"served"}, timeout=20)
        eventually(lambda: _assert_noted(env, "held", "does not serve", namespace=tenant), timeout=20)
        assert env.core.read_namespaced_pod("held", tenant).spec.node_name is None
        assert server.calls == []
        assert operator.problems() == []


def _assert(condition: bool) -> None:
    assert condition
