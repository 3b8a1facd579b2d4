"""The rules on tenant claims on a real API server (issue 26): the operator refuses a tenant
profile for ``default-scheduler`` naming the rule, serves a name the policy allows, and the
ResourceQuota example of docs/tenancy.md refuses the (cap+1)th SchedulerProfile.

The dev cluster runs no resourcequota controller (hack/devcluster), so the test writes the
quota's first status itself, as that controller would; from then on the API server's
ResourceQuota admission counts and refuses on its own."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduler_core.tenancy.claims import DEFAULT_MAX_PROFILES
from scheduler_operator.resources import GROUP, PROFILE_PLURAL, VERSION
from tests import wrappers
from tests.e2e import Cluster, eventually
from tests.e2e.operator_support import (
    Env,
    condition_of,
    environment,
    install_crds,
    profile,
    wait_all_bound,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path) -> Iterator[Env]:
    install_crds(api)
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


def _invalid(env: Env, namespace: str, name: str) -> str:
    status = env.custom.wait_status(
        PROFILE_PLURAL, namespace, name, lambda s: condition_of(s, "Valid").get("status") == "False"
    )
    return str(condition_of(status, "Valid")["message"])


def test_the_operator_refuses_a_tenant_profile_for_default_scheduler(env: Env) -> None:
    env.custom.create(env.home, profile("default", env.scheduler))
    tenant = env.namespace()
    env.custom.create(tenant, profile("takeover", "default-scheduler"))
    env.start_operator()

    assert _invalid(env, tenant, "takeover") == (
        f"spec.schedulerName: tenant policy rule 'scheduler-names': a profile in namespace '{tenant}' may not serve "
        "schedulerName 'default-scheduler': it is kube-scheduler's name, which every pod that names no scheduler "
        "has (the policy's allowedSchedulerNames does not list it)"
    )


def test_a_name_the_policy_allows_serves_the_tenants_pods_and_others_are_refused(env: Env) -> None:
    env.add_nodes(1, cpu="4", memory="8Gi")
    allowed = f"{env.scheduler}-team"
    env.custom.create(env.home, profile("default", env.scheduler, tenantPolicy={"allowedSchedulerNames": [allowed]}))
    tenant = env.namespace()
    env.custom.create(tenant, profile("own", allowed))
    env.custom.create(tenant, profile("cluster-name", env.scheduler))
    env.start_operator()

    status = env.custom.wait_status(
        PROFILE_PLURAL, tenant, "own", lambda s: condition_of(s, "Valid").get("status") == "True"
    )
    assert condition_of(status, "Ready")["status"] == "True"
    assert "the policy's allowedSchedulerNames does not list it" in _invalid(env, tenant, "cluster-name")
    pod = wrappers.pod("mine", tenant, scheduler_name=allowed, node_selector={"e2e-run": env.label}, cpu="100m")
    env.core.create_namespaced_pod(tenant, pod)
    wait_all_bound(env.core, tenant, {"mine"})


def test_the_resource_quota_example_refuses_the_profile_beyond_the_cap(env: Env) -> None:
    tenant = env.namespace()
    resource = f"count/{PROFILE_PLURAL}.{GROUP}"
    hard = {resource: str(DEFAULT_MAX_PROFILES)}
    core: Any = env.core
    core.create_namespaced_resource_quota(tenant, {"metadata": {"name": "scheduler-profiles"}, "spec": {"hard": hard}})
    custom: Any = client.CustomObjectsApi(env.api)

    def create(body: dict[str, Any], **options: Any) -> None:
        custom.create_namespaced_custom_object(GROUP, VERSION, tenant, PROFILE_PLURAL, body, **options)

    def set_used(count: int) -> None:  # the resourcequota controller's part
        quota = core.read_namespaced_resource_quota("scheduler-profiles", tenant)
        quota.status = {"hard": hard, "used": {resource: str(count)}}
        core.replace_namespaced_resource_quota_status("scheduler-profiles", tenant, quota)

    # Quota admission reads quotas from its informer, and one whose status has no `hard` there
    # yet matches nothing: a create admitted then is never counted (v1.36.3 apiserver
    # plugin/resourcequota/controller.go checkRequest, quota/v1/generic evaluator Matches), and
    # the (cap+1)th profile would pass. So the status is first written full, and a dry-run create
    # (checked, never counted) must be refused before the count starts from 0.
    set_used(DEFAULT_MAX_PROFILES)

    def refused_for_quota() -> None:
        try:
            create(profile("probe", "x"), dry_run="All")
        except client.ApiException as probe:
            assert probe.status == 403 and "exceeded quota: scheduler-profiles" in str(probe.body)
            return
        raise AssertionError("a dry-run create was admitted: quota admission does not see the status yet")

    eventually(refused_for_quota)
    set_used(0)
    for index in range(DEFAULT_MAX_PROFILES):
        eventually(functools.partial(create, profile(f"p{index:02d}", f"s{index:02d}")))
    with pytest.raises(client.ApiException) as refused:
        custom.create_namespaced_custom_object(GROUP, VERSION, tenant, PROFILE_PLURAL, profile("one-too-many", "x"))

    assert refused.value.status == 403
    assert "exceeded quota: scheduler-profiles" in str(refused.value.body)
    assert f"limited: {resource}={DEFAULT_MAX_PROFILES}" in str(refused.value.body)
