"""Namespaced profiles that cannot hurt anyone else, on the real API server (docs/tenancy.md).

* A tenant profile that disables TaintToleration is refused (``Valid=False`` naming the rule,
  the plugin and the field) and its pods never land on the tainted node: they wait with
  ``PodScheduled=False``, reason ``ProfileNotServing``.
* A PluginConfig whose args nest 1,100 deep (the API server stores it; CPython's json cannot
  decode it) does not block the cache sync: after a restart the operator binds another
  namespace's pod within 30 s, and the PluginConfig is ``Valid=False``.
* A restart with an invalid generation after a valid one serves the last good one from
  ``status.lastGood``, never the cluster-wide profile.

Each test has its own home namespace, schedulerName and nodes (tests/e2e/test_operator_support).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduler_operator.io import decoding
from scheduler_operator.resources import GROUP, PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL, VERSION
from tests.e2e import Cluster, eventually
from tests.e2e.operator_support import (
    MOST_ALLOCATED,
    Env,
    condition_of,
    environment,
    install_crds,
    profile,
    wait_all_bound,
)

pytestmark = pytest.mark.e2e

TAINT = {"key": "dedicated", "value": "team-b", "effect": "NoSchedule"}
ZONE_A = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "e2e-zone", "operator": "In", "values": ["a"]}]}]}
DEEP_LEVELS = 1100


def override(env: Env) -> dict[str, Any]:
    """The policy letting tenants override the cluster-wide schedulerName (refused by default)."""
    return {"allowedSchedulerNames": [env.scheduler]}


@pytest.fixture(scope="module")
def crds(api: client.ApiClient) -> None:
    install_crds(api)


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path, crds: None) -> Iterator[Env]:
    install_crds(api)  # again: on a shared cluster, other sessions may have applied their own since
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


def test_a_tenant_profile_disabling_taint_toleration_is_refused_and_its_pods_avoid_the_tainted_node(
    env: Env,
) -> None:
    (tainted,) = env.add_nodes(1, cpu="4", memory="8Gi", taints=[TAINT])
    tenant = env.namespace()
    env.custom.create(env.home, profile("default", env.scheduler, tenantPolicy=override(env)))
    hostile = profile("own", env.scheduler, plugins={"filter": {"disabled": [{"name": "TaintToleration"}]}})
    env.custom.create(tenant, hostile)
    operator = env.start_operator()

    status = env.custom.wait_status(
        PROFILE_PLURAL, tenant, "own", lambda s: condition_of(s, "Valid").get("status") == "False"
    )
    env.create_pods(tenant, ["mine"], cpu="100m")
    held = eventually(lambda: _held_event(env, tenant, "mine", operator.identity))

    message = condition_of(status, "Valid")["message"]
    assert message.startswith("spec.plugins.filter: tenant policy rule 'protected-plugins': ")
    assert "filter plugin 'TaintToleration'" in message
    assert condition_of(status, "Ready")["status"] == "False"
    assert held.startswith(f"profile {tenant}/own (schedulerName '{env.scheduler}') does not serve: ")
    time.sleep(2)  # give a wrong binding every chance to happen: there is no event to wait for
    assert tainted not in {node for _, _, node in operator.binds()}
    pod = env.core.read_namespaced_pod("mine", tenant)
    # On a cluster shared with other test sessions, an operator built from an older tree sees this
    # profile too, and (without the policy) binds the pod: exactly the hole this test closes.
    assert pod.spec.node_name is None or _bound_by_another_session(env, tenant, "mine", operator.identity)
    assert operator.problems() == []


def _held_event(env: Env, namespace: str, name: str, identity: str) -> str:
    """The note of the FailedScheduling event ``identity`` posted for the held pod."""
    events: Any = client.EventsV1Api(env.api).list_namespaced_event(namespace).items
    notes = [
        e.note for e in events
        if e.regarding.name == name and e.reason == "FailedScheduling" and e.reporting_instance == identity
    ]  # fmt: skip
    assert notes, f"no FailedScheduling event from {identity} for {namespace}/{name} yet"
    return str(notes[-1])


def _bound_by_another_session(env: Env, namespace: str, name: str, identity: str) -> bool:
    events: Any = client.EventsV1Api(env.api).list_namespaced_event(namespace).items
    return any(
        e.regarding.name == name and e.reason == "Scheduled" and e.reporting_instance != identity for e in events
    )


def _create_deep_plugin_config(env: Env, namespace: str, name: str) -> None:
    """POST the JSON text as is: the client's serializer (json.dumps) would recurse too deep."""
    args = '{"a":' * DEEP_LEVELS + "{}" + "}" * DEEP_LEVELS
    body = (
        f'{{"apiVersion": "{GROUP}/{VERSION}", "kind": "PluginConfig", "metadata": {{"name": "{name}"}}, '
        f'"spec": {{"plugin": "NodeResourcesFit", "args": {args}}}}}'
    )
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLUGIN_CONFIG_PLURAL}"
    method, url, headers, _, _ = env.api.param_serialize(
        "POST", path, header_params={"Content-Type": "application/json", "Accept": "application/json"},
        auth_settings=["BearerToken"],
    )  # fmt: skip
    # The pool directly: the client's own request() would JSON-encode a str body once more.
    response = env.api.rest_client.pool_manager.request(method, url, body=body.encode(), headers=headers)
    assert response.status == 201, (response.status, response.data[:500])


def _deep_config_valid(env: Env, namespace: str, name: str) -> dict[str, Any]:
    """Its Valid condition once False, read as the operator reads it (json.loads cannot)."""
    custom: Any = client.CustomObjectsApi(env.api)
    raw = custom.get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLUGIN_CONFIG_PLURAL, name, _preload_content=False
    )
    valid: dict[str, Any] = condition_of(decoding.loads(raw.data).get("status") or {}, "Valid")
    assert valid.get("status") == "False", valid
    return valid


def test_a_plugin_config_nested_1100_deep_blocks_no_one_across_a_restart(env: Env) -> None:
    env.add_nodes(1, cpu="4", memory="8Gi")
    tenant, other = env.namespace(), env.namespace()
    env.custom.create(env.home, profile("default", env.scheduler, tenantPolicy=override(env)))
    env.custom.create(tenant, profile("own", env.scheduler))
    try:
        _create_deep_plugin_config(env, tenant, "deep")
        first = env.start_operator()
        first.stop()
        started = time.monotonic()
        operator = env.start_operator()
        env.create_pods(other, ["elsewhere"], cpu="100m")
        wait_all_bound(env.core, other, {"elsewhere"}, timeout=30)
        bound_after = time.monotonic() - started

        valid = eventually(lambda: _deep_config_valid(env, tenant, "deep"))
        assert valid["reason"] == "InvalidArgs"
        assert valid["message"] == "spec.args" + ".a" * 17 + ": nested deeper than 16 levels"
        assert bound_after < 30
        assert operator.problems() == []
    finally:
        # Operators of other sessions on this shared cluster may predate tolerant decoding.
        env.custom.delete(PLUGIN_CONFIG_PLURAL, tenant, "deep")


def _explain_missing_last_good(env: Env) -> None:
    """On a cluster shared with sessions of older trees, their CRD (without status.lastGood) may
    have replaced ours meanwhile, and the API server prunes the field: say so."""
    extensions: Any = client.ApiextensionsV1Api(env.api)
    crd = extensions.read_custom_resource_definition(f"{PROFILE_PLURAL}.{GROUP}")
    status = crd.spec.versions[0].schema.open_apiv3_schema.properties["status"]
    assert "lastGood" in (status.properties or {}), (
        "the SchedulerProfile CRD on the cluster has no status.lastGood: another test session replaced it"
    )


def test_a_restart_with_an_invalid_generation_keeps_the_last_good_policy(env: Env) -> None:
    zone_a = env.add_nodes(1, cpu="4", memory="8Gi")
    zone_b = env.add_nodes(1, cpu="8", memory="16Gi")  # emptier: LeastAllocated would pick it
    for name, zone in ((zone_a[0], "a"), (zone_b[0], "b")):
        env.core.patch_node(name, {"metadata": {"labels": {"e2e-zone": zone}}})
    tenant = env.namespace()
    env.custom.create(env.home, profile("default", env.scheduler, tenantPolicy=override(env)))
    narrowing = [
        {"name": "NodeAffinity", "args": {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ZONE_A}}}
    ]
    env.custom.create(tenant, profile("own", env.scheduler, plugin_config=narrowing))
    first = env.start_operator()
    try:
        env.custom.wait_status(
            PROFILE_PLURAL, tenant, "own", lambda s: (s.get("lastGood") or {}).get("generation") == 1
        )
    except AssertionError:
        _explain_missing_last_good(env)
        raise
    first.stop()

    env.custom.patch_spec(PROFILE_PLURAL, tenant, "own", {"plugins": {"score": {"enabled": [{"name": "Nope"}]}}})
    operator = env.start_operator()
    status = env.custom.wait_status(PROFILE_PLURAL, tenant, "own", lambda s: s.get("observedGeneration") == 2)
    env.create_pods(tenant, ["t0", "t1", "t2"], cpu="100m")
    placed = wait_all_bound(env.core, tenant, {"t0", "t1", "t2"})

    assert set(placed.values()) == set(zone_a)  # the tenant's narrowing still holds
    assert condition_of(status, "Valid")["status"] == "False"
    assert condition_of(status, "Ready")["message"].startswith(
        "generation 2 refused, the last good generation 1 keeps serving: "
    )
    assert json.dumps(status["lastGood"]["spec"]["pluginConfig"][0]["args"]).count("e2e-zone") == 1
    assert operator.problems() == []


def test_the_oldest_of_two_profiles_serves_and_deleting_it_promotes_the_next(env: Env) -> None:
    """Names sort the other way round from creation: creationTimestamp decides, on every replica."""
    env.add_nodes(2, cpu="4", memory="8Gi")
    tenant = env.namespace()
    env.custom.create(env.home, profile("default", env.scheduler, tenantPolicy=override(env)))
    env.custom.create(tenant, profile("z-older", env.scheduler, plugin_config=MOST_ALLOCATED))
    time.sleep(1.1)  # creationTimestamp has one-second resolution
    env.custom.create(tenant, profile("a-newer", env.scheduler))
    operator = env.start_operator()

    newer = env.custom.wait_status(
        PROFILE_PLURAL, tenant, "a-newer", lambda s: condition_of(s, "Valid").get("status") == "False"
    )
    env.create_pods(tenant, ["t0", "t1"], cpu="1", memory="1Gi")
    packed = wait_all_bound(env.core, tenant, {"t0", "t1"})
    env.custom.delete(PROFILE_PLURAL, tenant, "z-older")
    promoted = env.custom.wait_status(
        PROFILE_PLURAL, tenant, "a-newer", lambda s: condition_of(s, "Valid").get("status") == "True"
    )

    assert f"is already served by profile {tenant}/z-older" in condition_of(newer, "Valid")["message"]
    assert len(set(packed.values())) == 1  # z-older's MostAllocated
    assert condition_of(newer, "Ready")["status"] == "False"
    assert condition_of(promoted, "Ready")["status"] == "True"
    assert operator.problems() == []


def test_a_tenant_profile_without_scheduling_gates_releases_only_its_own_pods(env: Env) -> None:
    env.add_nodes(1, cpu="4", memory="8Gi")
    tenant, other = env.namespace(), env.namespace()
    env.custom.create(
        env.home,
        profile("default", env.scheduler, tenantPolicy={**override(env), "allowDisabling": ["SchedulingGates"]}),
    )
    ungated = profile("own", env.scheduler, plugins={"multiPoint": {"disabled": [{"name": "SchedulingGates"}]}})
    env.custom.create(tenant, ungated)
    operator = env.start_operator()
    env.custom.wait_status(PROFILE_PLURAL, tenant, "own", lambda s: condition_of(s, "Ready").get("status") == "True")

    gates = [{"name": "example.com/wait"}]
    env.create_pods(other, ["gated"], cpu="100m", schedulingGates=gates)
    env.create_pods(tenant, ["mine"], cpu="100m", schedulingGates=gates)
    # The API server refuses to bind a gated pod, so an attempt shows as a failed binding.
    operator.wait_log(rf"error scheduling pod {tenant}/mine")
    time.sleep(2)  # an attempt of the other namespace's pod would have happened by now

    assert f"pod {other}/gated" not in operator.log()  # still gated: never attempted
    assert env.core.read_namespaced_pod("gated", other).spec.node_name is None
