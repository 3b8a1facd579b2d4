"""The rules on tenant claims (issue 26): which schedulerNames a tenant profile may serve, how
long its extenders may keep the scheduler waiting, how many profiles a namespace may have serve.

Through ``simulate`` and ``validate`` (the operator runs the same resolution), and through a
Scheduler for what only the operator sees: creation times and changes over time."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.config import SchedulerProfileSpec, TenantPolicy
from scheduler_core.defaults import default_plugins
from scheduler_core.framework import PodInfo
from scheduler_core.profiles import ProfileKey
from scheduler_core.runtime.build import ProfileError
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_core.simulator import InMemoryCluster, simulate
from scheduler_core.simulator.validate import validate_objects
from scheduler_core.tenancy import ClaimRules, check_scheduler_name
from scheduler_core.tenancy.claims import DEFAULT_MAX_PROFILES
from tests.unit.simulator.support import by_name, load, profile
from tests.wrappers import node, pod

HOME = "crd-scheduler"
EXTENDER = "http://127.0.0.1:9/x"


def tenant(name: str = "own", **spec: Any) -> dict[str, Any]:
    return profile(name, "team-a", **spec)


def problems(*objects: dict[str, Any]) -> list[str]:
    """What ``crd-scheduler validate`` says (the webhook says the same without the source)."""
    return [str(p) for p in validate_objects([("in.yaml", o) for o in objects], home_namespace=HOME)]


def extender(timeout: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"urlPrefix": EXTENDER, "filterVerb": "filter", "ignorable": True}
    return found if timeout is None else {**found, "httpTimeout": timeout}


SCHEDULER_NAME = "in.yaml: SchedulerProfile team-a/own: spec.schedulerName: tenant policy rule 'scheduler-names': "


@pytest.mark.parametrize(
    ("objects", "expected"),
    [
        pytest.param(
            [tenant(schedulerName="default-scheduler")],
            SCHEDULER_NAME + "a profile in namespace 'team-a' may not serve schedulerName 'default-scheduler': it is "
            "kube-scheduler's name, which every pod that names no scheduler has (the policy's allowedSchedulerNames "
            "does not list it)",
            id="default-scheduler",
        ),
        pytest.param(
            [profile("default", HOME), tenant()],
            SCHEDULER_NAME + "a profile in namespace 'team-a' may not serve schedulerName 'crd-scheduler': the "
            "cluster-wide profile crd-scheduler/default serves it (the policy's allowedSchedulerNames does not "
            "list it)",
            id="a-cluster-wide-name",
        ),
        pytest.param(
            [profile("batch", HOME, schedulerName="batch"), tenant(schedulerName="batch")],
            SCHEDULER_NAME + "a profile in namespace 'team-a' may not serve schedulerName 'batch': the cluster-wide "
            "profile crd-scheduler/batch serves it",
            id="another-cluster-wide-name",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"deniedSchedulerNames": ["volcano"]}),
             tenant(schedulerName="volcano")],
            SCHEDULER_NAME + "a profile in namespace 'team-a' may not serve schedulerName 'volcano': another scheduler "
            "of the cluster serves it (the policy's deniedSchedulerNames lists it)",
            id="another-schedulers-name",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": ["team-batch"]}),
             tenant(schedulerName="unlisted")],
            SCHEDULER_NAME + "a profile in namespace 'team-a' may not serve schedulerName 'unlisted': the policy's "
            "allowedSchedulerNames does not list it (allowed: ['team-batch'])",
            id="not-in-the-allowed-list",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": []}), tenant(schedulerName="mine")],
            SCHEDULER_NAME + "a profile in namespace 'team-a' may not serve schedulerName 'mine': the policy's "
            "allowedSchedulerNames does not list it (allowed: none)",
            id="an-empty-allowed-list-allows-none",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": ["volcano"]}),
             profile("other", HOME, schedulerName="other", tenantPolicy={"deniedSchedulerNames": ["volcano"]}),
             tenant(schedulerName="volcano")],
            SCHEDULER_NAME + "a profile in namespace 'team-a' may not serve schedulerName 'volcano': another "
            "scheduler of the cluster serves it",
            id="denied-wins-over-allowed",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": [HOME], "allowedExtenders": [EXTENDER]}),
             tenant(extenders=[extender()], schedulerName=HOME),
             ],
            None,
            id="unset-timeout-within-the-default-cap",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": [HOME], "allowedExtenders": [EXTENDER]}),
             tenant(extenders=[extender("1h")])],
            "in.yaml: SchedulerProfile team-a/own: spec.extenders[0].httpTimeout: tenant policy rule "
            "'extender-timeout': a profile in namespace 'team-a' may not wait for extender 'http://127.0.0.1:9/x' "
            "longer than 5s: httpTimeout 1h is 3600s (the policy's maxExtenderHTTPTimeout)",
            id="timeout-above-the-default-cap",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": [HOME], "allowedExtenders": [EXTENDER],
                                                    "maxExtenderHTTPTimeout": "2s"}),
             tenant(extenders=[extender()])],
            "spec.extenders[0].httpTimeout: tenant policy rule 'extender-timeout': a profile in namespace 'team-a' "
            "may not wait for extender 'http://127.0.0.1:9/x' longer than 2s: httpTimeout (unset) is 5s",
            id="unset-timeout-above-a-lower-cap",
        ),
    ],
)  # fmt: skip
def test_a_tenant_claim_the_rules_refuse_is_refused_naming_the_rule(
    objects: list[dict[str, Any]], expected: str | None
) -> None:
    found = problems(*objects)
    if expected is None:
        assert found == []
    else:
        assert any(expected in p for p in found), found


@pytest.mark.parametrize(
    ("objects", "scheduler_name"),
    [
        pytest.param([tenant(schedulerName="team-batch")], "team-batch", id="a-name-nobody-serves-by-default"),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": [HOME]}), tenant()],
            HOME, id="a-cluster-wide-name-the-policy-allows",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": ["team-batch"]}),
             tenant(schedulerName="team-batch")],
            "team-batch", id="a-name-in-the-allowed-list",
        ),
        pytest.param(
            [profile("k8s", HOME, schedulerName="default-scheduler",
                     tenantPolicy={"allowedSchedulerNames": ["default-scheduler"]}),
             tenant(schedulerName="default-scheduler")],
            "default-scheduler", id="default-scheduler-where-the-admin-allows-it",
        ),
        pytest.param(
            [profile("default", HOME, tenantPolicy={"allowedSchedulerNames": [HOME], "allowedExtenders": [EXTENDER],
                                                    "maxExtenderHTTPTimeout": "1m"}),
             tenant(extenders=[extender("30s")])],
            HOME, id="a-timeout-within-a-higher-cap",
        ),
    ],
)  # fmt: skip
def test_an_allowed_claim_serves_the_tenants_pods(objects: list[dict[str, Any]], scheduler_name: str) -> None:
    assert problems(*objects) == []
    result = simulate(load(node("n"), *objects, pod("p", "team-a", scheduler_name=scheduler_name)))
    assert by_name(result)["p"].profile == "team-a/own"


def test_the_rules_combine_every_home_profiles_policy() -> None:
    rules = ClaimRules.of(
        {HOME: "crd-scheduler/default"},
        [
            TenantPolicy(allowed_scheduler_names=["a"], max_profiles_per_namespace=7),
            TenantPolicy(allowed_scheduler_names=["b"], denied_scheduler_names=["c"], max_profiles_per_namespace=3),
            TenantPolicy(),
        ],
    )
    assert (rules.allowed, rules.denied, rules.max_profiles) == (frozenset({"a", "b"}), frozenset({"c"}), 3)
    assert ClaimRules.of({}, [TenantPolicy()]).max_profiles == DEFAULT_MAX_PROFILES == 10
    assert [check_scheduler_name(n, rules, namespace="t") == [] for n in ("a", "b", "c", HOME)] == [
        True, True, False, False,
    ]  # fmt: skip


# -- what only the operator sees: creation times, changes over time ---------------------------------
def make_scheduler() -> Scheduler:
    registry = default_registry()
    return Scheduler(
        InMemoryCluster(nodes=[node("n")]),
        registry=registry,
        default_multi_point=default_plugins(registry),
        home_namespace=HOME,
    )


def spec(**fields: Any) -> SchedulerProfileSpec:
    return SchedulerProfileSpec.model_validate(fields)


def created(day: int) -> str:
    return f"2026-01-{day:02d}T00:00:00Z"


def test_profiles_beyond_the_cap_oldest_first_do_not_serve() -> None:
    scheduler = make_scheduler()
    scheduler.apply_profile(ProfileKey(HOME, "default"), spec(tenantPolicy={"maxProfilesPerNamespace": 2}))
    # Seen youngest first, as after a restart: it serves until the older ones arrive.
    scheduler.apply_profile(ProfileKey("team-a", "c"), spec(schedulerName="c"), created=created(3))
    scheduler.apply_profile(ProfileKey("team-a", "a"), spec(schedulerName="a"), created=created(1))
    scheduler.apply_profile(ProfileKey("team-a", "b"), spec(schedulerName="b"), created=created(2))
    scheduler.apply_profile(ProfileKey("team-b", "x"), spec(schedulerName="x"), created=created(4))

    beyond, within = scheduler.profiles.over_cap("team-a")
    assert (beyond, within) == ([ProfileKey("team-a", "c")], [])
    with pytest.raises(ProfileError) as refused:
        scheduler.apply_profile(ProfileKey("team-a", "c"), spec(schedulerName="c"))
    assert refused.value.problems == [
        (
            "metadata.creationTimestamp",
            "tenant policy rule 'profiles-per-namespace': namespace 'team-a' has more than 2 SchedulerProfiles and "
            "this one is not among the 2 oldest (the policy's maxProfilesPerNamespace)",
        )
    ]
    assert scheduler.profiles.get(ProfileKey("team-a", "c")) is None  # the object is refused, not its spec
    assert scheduler.profiles.get(ProfileKey("team-b", "x")) is not None  # per namespace

    scheduler.delete_profile(ProfileKey("team-a", "a"))
    assert scheduler.profiles.over_cap("team-a") == ([], [ProfileKey("team-a", "c")])
    scheduler.apply_profile(ProfileKey("team-a", "c"), spec(schedulerName="c"))
    assert scheduler.profiles.get(ProfileKey("team-a", "c")) is not None


def test_validate_refuses_the_profiles_beyond_the_default_cap() -> None:
    tenants = [tenant(f"p{i:02d}", schedulerName=f"s{i:02d}") for i in range(DEFAULT_MAX_PROFILES + 1)]
    found = problems(*tenants)
    assert [p.split(":")[1].strip() for p in found] == [f"SchedulerProfile team-a/p{DEFAULT_MAX_PROFILES:02d}"]
    assert "tenant policy rule 'profiles-per-namespace'" in found[0]


def test_a_new_cluster_wide_profile_takes_its_name_back_from_a_serving_tenant() -> None:
    """The claim rules are the whole home namespace's: a change of any home profile re-checks
    every serving tenant, whatever its schedulerName."""
    scheduler = make_scheduler()
    scheduler.apply_profile(ProfileKey(HOME, "default"), spec())
    scheduler.apply_profile(ProfileKey("team-a", "own"), spec(schedulerName="batch"), created=created(1))
    assert scheduler.profiles.get(ProfileKey("team-a", "own")) is not None

    scheduler.apply_profile(ProfileKey(HOME, "batch"), spec(schedulerName="batch"), created=created(2))

    assert scheduler.profiles.get(ProfileKey("team-a", "own")) is None
    held = scheduler.profiles.held_reason(PodInfo(pod("p", "team-a", scheduler_name="batch")))
    assert held is not None and "tenant policy rule 'scheduler-names'" in held


def test_profile_of_resolves_once_and_follows_a_new_winner(monkeypatch: pytest.MonkeyPatch) -> None:
    """The queueing hints ask for the profile of every pod of the unschedulable pool on every
    cluster event (SchedulingWithResourceClaim on the dev cluster: 5 % of the operator's CPU
    resolved the same few (namespace, schedulerName) pairs again); each pair is resolved once
    until a claim changes who wins it."""
    from scheduler_core.profiles import ProfileSet

    found = ProfileSet(home_namespace=HOME, registry={}, default_multi_point=None, make_handle=None)  # type: ignore[arg-type]
    found.claim(ProfileKey(HOME, "default"), "crd-scheduler", created="2026-01-01T00:00:00Z")
    resolved: list[tuple[str, str]] = []
    key_for = found.key_for

    def counted(namespace: str, scheduler_name: str) -> ProfileKey | None:
        resolved.append((namespace, scheduler_name))
        return key_for(namespace, scheduler_name)

    monkeypatch.setattr(found, "key_for", counted)
    pods = [PodInfo(pod(f"p{i}", "team-a", scheduler_name="crd-scheduler")) for i in range(100)]
    assert {found.profile_of(p) for p in pods} == {f"{HOME}/default"}
    assert resolved == [("team-a", "crd-scheduler")]
    found.claim(ProfileKey("team-a", "own"), "crd-scheduler", created="2026-01-02T00:00:00Z")
    assert found.profile_of(pods[0]) == "team-a/own"
    found.delete(ProfileKey("team-a", "own"))
    assert found.profile_of(pods[0]) == f"{HOME}/default"
    assert found.profile_of(PodInfo(pod("x", "team-b", scheduler_name="someone-else"))) is None
