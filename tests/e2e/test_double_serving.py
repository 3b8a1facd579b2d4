"""Another scheduler serving a name the operator serves (issue 22, item 4; docs/deploy.md): the
profile's ``DoubleServing`` condition and one Warning event, on the dev cluster beside real
kube-scheduler v1.36.3 processes (``extender_support.kube_scheduler``: our own, with test-unique
schedulerNames; the dev cluster's shared one is never touched).

1. kube-scheduler serves another name only: its bindings of its own pods, and the operator's of
   ours, raise nothing.
2. A kube-scheduler serving our name too binds the pods our profile cannot place (an added node
   affinity no node matches, so that it binds every one of them, not a race's share): the
   condition turns True naming that kube-scheduler (its reportingController and
   reportingInstance) and the first of *these* pods (so nothing of step 1 counted: one watch
   delivers events in order), one Warning event for them all, every pod in the metric; kstatus
   still computes Current and the Argo CD check says Healthy.
3. A new generation of the profile clears it; no event more.

And the migration docs/deploy.md asks for (kube-scheduler stopped, then the profile created):
kube-scheduler's last bindings, which the new leader lists, raise nothing.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from scheduler_operator.control.double_serving import DOUBLE_SERVED_PODS
from scheduler_operator.resources import PROFILE_PLURAL
from tests import wrappers
from tests.e2e import eventually
from tests.e2e.extender_support import kube_scheduler
from tests.e2e.operator_support import Env, condition_of, profile, unique, wait_all_bound
from tests.e2e.test_gitops_health import argocd, computed
from tests.e2e.test_observability import scrape

pytestmark = pytest.mark.e2e

NOWHERE = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "e2e-no-node-has-this", "operator": "Exists"}]}]}}  # fmt: skip


def double_serving(env: Env) -> dict[str, Any]:
    return condition_of(env.custom.get(PROFILE_PLURAL, env.home, "default").get("status") or {}, "DoubleServing")


def warnings(env: Env) -> list[str]:
    """The notes of the DoubleServing events on the profile."""
    events = env.core.list_namespaced_event(env.home).items
    return [
        str(e.message) for e in events
        if e.reason == "DoubleServing" and e.involved_object.kind == "SchedulerProfile"
        and e.involved_object.name == "default" and e.type == "Warning"
    ]  # fmt: skip


def scheduled_by(env: Env, reporter: str, names: set[str]) -> set[str]:
    """Which of the pods ``names`` of the home namespace ``reporter`` says it bound."""
    events = env.core.list_namespaced_event(env.home).items
    return {
        e.involved_object.name for e in events
        if e.reason == "Scheduled" and e.reporting_component == reporter and e.involved_object.name in names
    }  # fmt: skip


def test_kube_scheduler_serving_the_name_too_is_a_warning_condition_and_one_event(
    env: Env, kstatus: Path, tmp_path: Path
) -> None:
    env.add_nodes(2, cpu="8", memory="16Gi")
    other = unique("kube-only")
    env.custom.create(env.home, profile("default", env.scheduler))
    operator = env.start_operator()
    env.custom.wait_status(PROFILE_PLURAL, env.home, "default", lambda s: bool(condition_of(s, "DoubleServing")))
    alone = double_serving(env)
    assert (alone["status"], alone["reason"]) == ("False", "NoOtherScheduler")
    assert alone["message"] == (
        f"no other scheduler was seen binding pods of schedulerName {env.scheduler!r} in the last 10 minutes"
    )

    # 1. kube-scheduler serving another name: its bindings and ours raise nothing.
    with kube_scheduler(env.cluster, tmp_path, {"profiles": [{"schedulerName": other}]}):
        theirs, ours = {"theirs-0", "theirs-1"}, {"ours-0", "ours-1"}
        for name in sorted(theirs):
            env.core.create_namespaced_pod(
                env.home,
                wrappers.pod(name, env.home, scheduler_name=other, node_selector={"e2e-run": env.label}, cpu="100m"),
            )
        env.create_pods(env.home, sorted(ours), cpu="100m")
        wait_all_bound(env.core, env.home, theirs | ours)
        eventually(lambda: _assert_equal(scheduled_by(env, other, theirs), theirs))
        eventually(lambda: _assert_equal(scheduled_by(env, "crd-scheduler", ours), ours))
    assert double_serving(env)["status"] == "False" and warnings(env) == []

    # 2. A kube-scheduler serving our name too binds what our profile cannot place.
    affinity = [{"name": "NodeAffinity", "args": {"addedAffinity": NOWHERE}}]
    env.custom.patch_spec(PROFILE_PLURAL, env.home, "default", {"pluginConfig": affinity})
    env.custom.wait_status(PROFILE_PLURAL, env.home, "default", lambda s: s.get("observedGeneration") == 2)
    with kube_scheduler(env.cluster, tmp_path, {"profiles": [{"schedulerName": env.scheduler}]}):
        race = {f"race-{i}" for i in range(3)}
        double = kube_scheduler_binds(env, race)
        assert double["observedGeneration"] == 2
        # A warning: the profile still serves, and the GitOps tools say so.
        served = env.custom.get(PROFILE_PLURAL, env.home, "default")
        assert computed(kstatus, served)[0] == "Current"
        assert argocd(served) == "Healthy"
        counted = {(("profile", f"{env.home}/default"),): float(len(race))}
        eventually(lambda: _assert_equal(scrape(operator)[DOUBLE_SERVED_PODS].values(), counted))
        assert eventually(lambda: _one(warnings(env))) == double["message"]  # one for the three pods

    # 3. A new generation (the fix the message suggests would be one) clears it.
    env.custom.patch_spec(PROFILE_PLURAL, env.home, "default", {"pluginConfig": None})
    env.custom.wait_status(
        PROFILE_PLURAL, env.home, "default", lambda s: condition_of(s, "DoubleServing").get("observedGeneration") == 3
    )
    assert double_serving(env)["status"] == "False"
    assert len(warnings(env)) == 1
    assert operator.problems() == []


def test_the_last_bindings_of_a_kube_scheduler_stopped_before_the_profile_was_created_do_not_count(
    env: Env, tmp_path: Path
) -> None:
    """The migration docs/deploy.md asks for: stop kube-scheduler, then serve its name. The new
    leader lists kube-scheduler's last Scheduled events (minutes old): they raise nothing; a
    kube-scheduler started again does, and the pod named is one it bound since."""
    env.add_nodes(2, cpu="8", memory="16Gi")
    with kube_scheduler(env.cluster, tmp_path, {"profiles": [{"schedulerName": env.scheduler}]}):
        before = {"before-0", "before-1"}
        env.create_pods(env.home, sorted(before), cpu="100m")
        wait_all_bound(env.core, env.home, before)
        eventually(lambda: _assert_equal(scheduled_by(env, env.scheduler, before), before))
    affinity = [{"name": "NodeAffinity", "args": {"addedAffinity": NOWHERE}}]
    env.custom.create(env.home, profile("default", env.scheduler, plugin_config=affinity))
    operator = env.start_operator()
    env.custom.wait_status(PROFILE_PLURAL, env.home, "default", lambda s: bool(condition_of(s, "DoubleServing")))

    with kube_scheduler(env.cluster, tmp_path, {"profiles": [{"schedulerName": env.scheduler}]}):
        kube_scheduler_binds(env, {"after-0"})  # a pod of before-* named: their events counted

    assert warnings(env) == [double_serving(env)["message"]]
    assert operator.problems() == []


def kube_scheduler_binds(env: Env, pods: set[str]) -> dict[str, Any]:
    """Create ``pods``, which the profile cannot place and the kube-scheduler running for its name
    binds; the profile's DoubleServing condition, once True, naming that kube-scheduler and the
    first of ``pods`` it saw bound."""
    env.create_pods(env.home, sorted(pods), cpu="100m")
    wait_all_bound(env.core, env.home, pods)
    eventually(lambda: _assert_equal(scheduled_by(env, env.scheduler, pods), pods))  # all of them: not ours
    status = env.custom.wait_status(
        PROFILE_PLURAL, env.home, "default", lambda s: condition_of(s, "DoubleServing").get("status") == "True"
    )
    double = condition_of(status, "DoubleServing")
    assert double["reason"] == "OtherSchedulerBinds"
    instance = f"{env.scheduler}-{socket.gethostname()}"  # client-go's reportingInstance
    prefix = (
        f"another scheduler also serves schedulerName {env.scheduler!r}: {env.scheduler!r} "
        f"(reportingInstance {instance!r}) bound pod {env.home}/"
    )
    assert double["message"].startswith(prefix), double["message"]
    assert double["message"][len(prefix) :].split(" ")[0] in pods, double["message"]
    return double


def _assert_equal(got: object, expected: object) -> None:
    assert got == expected, got


def _one(found: list[str]) -> str:
    assert len(found) == 1, found
    return found[0]
