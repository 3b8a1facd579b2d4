"""The tenant policy, through ``simulate`` (the operator runs the same code): what a profile
in another namespace with the cluster-wide profile's schedulerName may change."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.defaults import default_plugins
from scheduler_core.profiles import ProfileKey
from scheduler_core.reporting import REASON_PROFILE_NOT_SERVING
from scheduler_core.runtime.build import ProfileError
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator import InMemoryCluster, InputError, simulate
from tests.unit.simulator.support import by_name, load, plugin_config, profile
from tests.wrappers import node, pod

HOME = "crd-scheduler"
OVERRIDE = {"allowedSchedulerNames": [HOME]}  # tenants may override the cluster-wide schedulerName
TAINTED = [{"key": "dedicated", "value": "team-b", "effect": "NoSchedule"}]
ADDED = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}  # fmt: skip


def tenant(**spec: Any) -> dict[str, Any]:
    return profile("own", "team-a", **spec)


def problems(*objects: Any) -> list[str]:
    with pytest.raises(InputError) as caught:
        simulate(load(node("n"), *objects))
    return [str(p) for p in caught.value.problems]


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [tenant(plugins={"filter": {"disabled": [{"name": "TaintToleration"}]}})],
            "in.yaml: SchedulerProfile team-a/own: spec.plugins.filter: tenant policy rule 'protected-plugins': the "
            "cluster-wide profile <built-in default profile> runs filter plugin 'TaintToleration'; a profile in "
            "namespace 'team-a' may not disable it (the policy's allowDisabling does not list it)",
            id="disable-taint-toleration",
        ),
        pytest.param(
            [tenant(plugins={"filter": {"disabled": [{"name": "*"}]}})],
            "plugins.filter: tenant policy rule 'protected-plugins': the cluster-wide profile <built-in default "
            "profile> runs filter plugin 'NodeUnschedulable'",
            id="disable-every-filter",
        ),
        pytest.param(
            [tenant(plugins={"multiPoint": {"disabled": [{"name": "SchedulingGates"}]}})],
            "plugins.preEnqueue: tenant policy rule 'protected-plugins': the cluster-wide profile <built-in "
            "default profile> runs preEnqueue plugin 'SchedulingGates'",
            id="disable-scheduling-gates",
        ),
        pytest.param(
            [profile("default", HOME, plugins={"filter": {"disabled": [{"name": "NodePorts"}]}}, tenantPolicy=OVERRIDE),
             tenant(plugins={"filter": {"enabled": [{"name": "NodePorts"}]}})],
            "in.yaml: SchedulerProfile team-a/own: spec.plugins.filter: tenant policy rule 'allowed-plugins': a "
            "profile in namespace 'team-a' may not enable filter plugin 'NodePorts': the cluster-wide profile "
            "crd-scheduler/default does not run it there",
            id="enable-a-plugin-not-allowed",
        ),
        pytest.param(
            [profile("default", HOME, plugins={"score": {"disabled": [{"name": "ImageLocality"}]}},
                     tenantPolicy=OVERRIDE),
             tenant(plugins={"score": {"enabled": [{"name": "ImageLocality"}]}})],
            "in.yaml: SchedulerProfile team-a/own: spec.plugins.score: tenant policy rule 'allowed-plugins': a "
            "profile in namespace 'team-a' may not enable score plugin 'ImageLocality': the cluster-wide profile "
            "crd-scheduler/default does not run it and the policy's allowedPlugins does not list it",
            id="enable-a-scorer-run-nowhere",
        ),
        pytest.param(
            [tenant(pluginConfig=[{"name": "NodeResourcesFit", "args": {"ignoredResources": ["cpu"]}}])],
            "in.yaml: SchedulerProfile team-a/own: spec.pluginConfig[0].args.ignoredResources: tenant policy rule "
            "'narrowing-args': a profile in namespace 'team-a' may set only args that narrow where its own pods "
            "go or how they score; NodeResourcesFit 'ignoredResources' is not one",
            id="widening-args",
        ),
        pytest.param(
            [tenant(), plugin_config("fit", "NodeResourcesFit", {"ignoredResources": ["cpu"]}, namespace="team-a")],
            "in.yaml: PluginConfig team-a/fit: spec.args.ignoredResources: tenant policy rule 'narrowing-args'",
            id="widening-args-from-a-plugin-config",
        ),
        pytest.param(
            [tenant(tenantPolicy={"allowDisabling": ["TaintToleration"]})],
            "in.yaml: SchedulerProfile team-a/own: spec.tenantPolicy: tenant policy rule 'tenant-policy': a profile in "
            "namespace 'team-a' may not carry a tenant policy",
            id="tenant-carries-a-policy",
        ),
        pytest.param(
            [tenant(extenders=[{"urlPrefix": "http://127.0.0.1:9/x", "filterVerb": "filter"}])],
            "in.yaml: SchedulerProfile team-a/own: spec.extenders[0]: tenant policy rule 'extenders': a profile in "
            "namespace 'team-a' may not call extender 'http://127.0.0.1:9/x': the policy's allowedExtenders does "
            "not list it",
            id="extender-not-allowed",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={**OVERRIDE, "allowedExtenders": ["http://127.0.0.1:9/x"]}),
             tenant(extenders=[{"urlPrefix": "http://127.0.0.1:9/x", "filterVerb": "filter", "enableHTTPS": True,
                                "tlsConfig": {"caFile": "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"}}])],
            "spec.extenders[0].tlsConfig.caFile: tenant policy rule 'extenders': a profile in namespace 'team-a' "
            "may not name files of the scheduler's filesystem; use caData",
            id="allowed-extender-naming-a-file",
        ),
    ],
)  # fmt: skip
def test_a_tenant_profile_that_breaks_the_policy_is_refused_naming_rule_plugin_and_field(
    objects: list[Any], expected: str
) -> None:
    found = problems(*objects)
    assert any(p.startswith(expected) or expected in p for p in found), found


@pytest.mark.parametrize(
    "objects",
    [
        pytest.param([tenant(pluginConfig=[{"name": "NodeAffinity", "args": ADDED}])], id="added-affinity"),
        pytest.param([tenant(plugins={"score": {"disabled": [{"name": "*"}],
                                                "enabled": [{"name": "NodeResourcesFit", "weight": 5}]}})],
                     id="score-plugins-and-weights"),
        pytest.param([tenant(pluginConfig=[{"name": "NodeResourcesFit",
                                            "args": {"scoringStrategy": {"type": "MostAllocated"}}}])],
                     id="scoring-strategy"),
        pytest.param([profile("default", HOME, tenantPolicy={**OVERRIDE, "allowDisabling": ["TaintToleration"]}),
                      tenant(plugins={"filter": {"disabled": [{"name": "TaintToleration"}]}})],
                     id="allowed-by-allow-disabling"),
        pytest.param([profile("default", HOME, tenantPolicy={**OVERRIDE, "allowedArgs": [
                          {"plugin": "NodeResourcesFit", "fields": ["ignoredResources"]}]}),
                      tenant(pluginConfig=[{"name": "NodeResourcesFit", "args": {"ignoredResources": ["x"]}}])],
                     id="allowed-by-allowed-args"),
        pytest.param([profile("default", HOME, tenantPolicy={**OVERRIDE, "allowedExtenders": ["http://127.0.0.1:9/x"]}),
                      tenant(extenders=[{"urlPrefix": "http://127.0.0.1:9/x", "filterVerb": "filter",
                                         "ignorable": True}])],
                     id="allowed-by-allowed-extenders"),
    ],
)  # fmt: skip
def test_what_the_default_policy_and_an_admin_allow(objects: list[Any]) -> None:
    result = simulate(load(node("n", labels={"zone": "a"}), *objects, pod("p", "team-a", scheduler_name=HOME)))
    assert by_name(result)["p"].profile == "team-a/own"


def test_a_refused_tenant_profile_holds_its_pods_off_the_tainted_node() -> None:
    """The operator's view of the same refusal (simulate refuses the input outright)."""
    backend = InMemoryCluster(nodes=[node("tainted", taints=TAINTED)])
    registry = default_registry()
    scheduler = Scheduler(
        backend, registry=registry, default_multi_point=default_plugins(registry), home_namespace=HOME
    )
    backend.watch(scheduler)
    for n in backend.nodes.values():
        scheduler.on_node_add(n)
    scheduler.apply_profile(
        ProfileKey(HOME, "default"), SchedulerProfileSpec.model_validate({"tenantPolicy": OVERRIDE})
    )
    hostile = SchedulerProfileSpec.model_validate({"plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}})
    with pytest.raises(ProfileError):
        scheduler.apply_profile(ProfileKey("team-a", "own"), hostile, created="2026-01-01T00:00:00Z")
    mine = pod("p", "team-a", scheduler_name=HOME)
    backend.pods[mine["metadata"]["uid"]] = mine
    scheduler.on_pod_add(mine)
    asyncio.run(scheduler.run_until_idle())

    stored = backend.pods[mine["metadata"]["uid"]]
    assert not (stored.get("spec") or {}).get("nodeName")
    (cond,) = [c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert (cond["status"], cond["reason"]) == ("False", REASON_PROFILE_NOT_SERVING)
    assert cond["message"].startswith("profile team-a/own (schedulerName 'crd-scheduler') does not serve: ")
    assert "TaintToleration" in cond["message"]


def test_simulate_bounds_the_args_of_a_profile() -> None:
    deep: dict[str, Any] = {}
    for _ in range(20):
        deep = {"a": deep}
    found = problems(profile("default", HOME, pluginConfig=[{"name": "NodeResourcesFit", "args": deep}]))
    assert found == [
        "in.yaml: SchedulerProfile crd-scheduler/default: spec.pluginConfig[0].args" + ".a" * 17
        + ": nested deeper than 16 levels"
    ]  # fmt: skip
