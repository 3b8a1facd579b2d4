"""Telling another scheduler's bindings of our pods from its ``Scheduled`` events: which events
start an episode on which profile, one episode (one start) however many pods, its end after the
quiet period or at a new generation of the profile. The events are built as kube-scheduler
v1.36.3 posts them and pass through the view the watch keeps. The watch itself, on the real API
server beside a real kube-scheduler: tests/e2e/test_double_serving.py."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from scheduler_core.metrics.registry import Registry
from scheduler_core.names import DEFAULT_SCHEDULER_NAME, UPSTREAM_DEFAULT_SCHEDULER_NAME
from scheduler_core.profiles import ProfileKey, ProfileSet
from scheduler_operator.control.double_serving import (
    DOUBLE_SERVED_PODS,
    DoubleServing,
    Episode,
    counted_since,
    event_view,
)
from tests import wrappers

HOME = "crd-scheduler"
KUBE, OURS = UPSTREAM_DEFAULT_SCHEDULER_NAME, DEFAULT_SCHEDULER_NAME
T0 = datetime(2026, 11, 28, 10, 0, tzinfo=UTC).timestamp()
DEFAULT = ProfileKey(HOME, "takeover")  # serves default-scheduler cluster-wide
TEAM = ProfileKey("team", "own")  # serves crd-scheduler in team
CLUSTER = ProfileKey(HOME, "default")  # serves crd-scheduler everywhere else


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


def profiles() -> ProfileSet:
    found = ProfileSet(home_namespace=HOME, registry={}, default_multi_point=None, make_handle=None)  # type: ignore[arg-type]
    found.claim(DEFAULT, "default-scheduler")
    found.claim(TEAM, "crd-scheduler")
    found.claim(CLUSTER, "crd-scheduler")
    return found


def scheduled(
    regarding: dict[str, Any],
    *,
    by: str = "default-scheduler",
    at: float = T0,
    reason: str = "Scheduled",
    kind: str = "Pod",
    legacy: bool = False,
) -> dict[str, Any]:
    """An event as kube-scheduler's recorder posts it (events.k8s.io/v1), or with ``legacy`` as a
    core/v1 recorder does (source.component, no reportingController), seen through events.k8s.io/v1."""
    meta = regarding["metadata"]
    time = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    body: dict[str, Any] = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.1", "namespace": meta["namespace"], "uid": f"e-{meta['uid']}",
                     "resourceVersion": "7", "managedFields": [{"manager": "kube-scheduler"}]},
        "regarding": {"kind": kind, "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"],
                      "apiVersion": "v1"},
        "reason": reason,
        "action": "Binding",
        "type": "Normal",
        "note": f"Successfully assigned {meta['namespace']}/{meta['name']} to node-a",
    }  # fmt: skip
    if legacy:
        body.update(deprecatedSource={"component": by, "host": "cp-1"}, deprecatedLastTimestamp=time[:19] + "Z")
    else:
        body.update(reportingController=by, reportingInstance=f"{by}-cp-1", eventTime=time)
    return event_view(body)


def detector(clock: Clock, *known: dict[str, Any]) -> tuple[DoubleServing, list[tuple[ProfileKey, Episode | None]]]:
    """A detector over the profiles above and a pod store holding ``known``; what it announced."""
    store = {p["metadata"]["uid"]: p for p in known}
    found = DoubleServing(profiles().key_for, store.get, clock=clock)
    changes: list[tuple[ProfileKey, Episode | None]] = []
    found.on_change = lambda key, started: changes.append((key, started))
    return found, changes


def first_of_three_bound(
    clock: Clock,
) -> tuple[DoubleServing, list[tuple[ProfileKey, Episode | None]], list[dict[str, Any]]]:
    """A detector knowing pods web-1..3, the first bound by kube-scheduler at T0."""
    pods = [wrappers.pod(f"web-{i}", "web", scheduler_name=KUBE, uid=f"uid-web-web-{i}") for i in (1, 2, 3)]
    found, changes = detector(clock, *pods)
    found.observe(scheduled(pods[0]))
    return found, changes, pods


WEB = wrappers.pod("web-1", "web", scheduler_name=KUBE, uid="uid-web-web-1")
TEAM_POD = wrappers.pod("t-1", "team", scheduler_name=OURS, uid="uid-team-t-1")
OTHER_POD = wrappers.pod("o-1", "web", scheduler_name=OURS, uid="uid-web-o-1")
UNSERVED = wrappers.pod("x-1", "web", scheduler_name="batch", uid="uid-web-x-1")


@pytest.mark.parametrize(
    ("event", "known", "expected"),
    [
        pytest.param(scheduled(WEB), [WEB], DEFAULT, id="kube-scheduler-binds-a-pod-we-serve"),
        pytest.param(
            scheduled(TEAM_POD, by="my-scheduler"), [TEAM_POD], TEAM, id="the-tenant-profile-of-its-namespace"
        ),
        pytest.param(scheduled(OTHER_POD, by="my-scheduler"), [OTHER_POD], CLUSTER, id="else-the-cluster-wide-one"),
        pytest.param(scheduled(WEB), [], DEFAULT, id="pod-gone-its-reporter-names-the-scheduler-name"),
        pytest.param(scheduled(WEB, by="kube-scheduler", legacy=True), [WEB], DEFAULT, id="a-core-v1-recorder"),
        pytest.param(scheduled(WEB, by="crd-scheduler"), [WEB], None, id="ours"),
        pytest.param(scheduled(WEB, reason="FailedScheduling"), [WEB], None, id="another-reason"),
        pytest.param(scheduled(WEB, kind="Node"), [WEB], None, id="not-about-a-pod"),
        pytest.param(scheduled(UNSERVED), [UNSERVED], None, id="a-name-we-do-not-serve"),
        pytest.param(scheduled(UNSERVED, by="batch"), [], None, id="pod-gone-and-its-reporter-not-ours"),
        pytest.param(scheduled(WEB, at=T0 - 600), [WEB], None, id="older-than-the-quiet-period"),
    ],
)
def test_which_scheduled_events_start_an_episode_and_on_which_profile(
    event: dict[str, Any], known: list[dict[str, Any]], expected: ProfileKey | None
) -> None:
    found, changes = detector(Clock(), *known)

    found.observe(event)

    assert [key for key, _ in changes] == ([expected] if expected else [])


def test_the_condition_and_event_name_the_other_scheduler_its_instance_and_the_pod() -> None:
    found, changes = detector(Clock(), WEB)

    found.observe(scheduled(WEB, at=T0 - 5))

    [(key, episode)] = changes
    assert episode is not None and found.episode(key) is episode
    assert episode.message(found.quiet) == (
        "another scheduler also serves schedulerName 'default-scheduler': 'default-scheduler' (reportingInstance "
        "'default-scheduler-cp-1') bound pod web/web-1 at 2026-11-28T09:59:55Z; two schedulers serving one name "
        "place pods blind to each other: stop the other one, or give this profile another schedulerName "
        "(docs/deploy.md); this clears 10 minutes after its last binding"
    )
    assert found.condition_fields(key, "default-scheduler") == (True, "OtherSchedulerBinds", episode.message(600))
    assert found.condition_fields(TEAM, "crd-scheduler") == (
        False,
        "NoOtherScheduler",
        "no other scheduler was seen binding pods of schedulerName 'crd-scheduler' in the last 10 minutes",
    )


def test_a_legacy_recorder_is_named_by_its_source_component_and_host() -> None:
    found, changes = detector(Clock(), WEB)

    found.observe(scheduled(WEB, by="old-scheduler", legacy=True))

    [(_, episode)] = changes
    assert episode is not None and (episode.reporter, episode.instance) == ("old-scheduler", "cp-1")


def test_one_episode_however_many_pods_counted_in_the_metric() -> None:
    pods = [wrappers.pod(f"web-{i}", "web", scheduler_name=KUBE, uid=f"uid-web-web-{i}") for i in range(5)]
    found, changes = detector(Clock(), *pods)
    registry = Registry()
    found.count_in(registry)

    for p in pods:
        found.observe(scheduled(p))

    assert [(key, started is not None) for key, started in changes] == [(DEFAULT, True)]
    episode = found.episode(DEFAULT)
    assert episode is not None and episode.pod == "web/web-0"
    lines = [line for line in registry.render().splitlines() if not line.startswith("#")]
    assert lines == [f'{DOUBLE_SERVED_PODS}{{profile="crd-scheduler/takeover"}} 5.0']


def test_an_episode_ends_a_quiet_period_after_its_last_binding() -> None:
    clock = Clock()
    found, changes, (_, second, third) = first_of_three_bound(clock)
    clock.now = T0 + 300
    found.observe(scheduled(second, at=T0 + 300))

    clock.now = T0 + 899
    assert found.expire() == []
    clock.now = T0 + 900
    assert found.expire() == [DEFAULT]

    assert found.episode(DEFAULT) is None
    assert [(key, started is None) for key, started in changes] == [(DEFAULT, False), (DEFAULT, True)]
    found.observe(scheduled(third, at=clock.now))  # a binding after the end: a new episode, announced again
    assert [started.pod for _, started in changes if started is not None] == ["web/web-1", "web/web-3"]


def test_a_new_generation_ends_the_episode_and_bindings_before_it_no_longer_count() -> None:
    clock = Clock()
    found, changes, (_, listed_late, after) = first_of_three_bound(clock)
    clock.now = T0 + 10

    found.reset(DEFAULT)
    found.observe(scheduled(listed_late, at=T0 + 5))  # made before the edit, seen after (a re-list)

    assert found.episode(DEFAULT) is None
    clock.now = T0 + 20
    found.observe(scheduled(after, at=T0 + 20))
    episode = found.episode(DEFAULT)
    assert episode is not None and episode.pod == "web/web-3"
    assert [key for key, started in changes if started is not None] == [DEFAULT, DEFAULT]


def test_a_reporter_clock_ahead_of_ours_counts_as_now() -> None:
    clock = Clock()
    found, _ = detector(clock, WEB)

    found.observe(scheduled(WEB, at=T0 + 3600))

    episode = found.episode(DEFAULT)
    assert episode is not None and episode.last == T0
    clock.now = T0 + 600
    assert found.expire() == [DEFAULT]  # not an hour late


def test_the_view_keeps_only_what_the_detector_reads() -> None:
    kept = scheduled(WEB)

    assert "managedFields" not in kept["metadata"] and "note" not in kept and "action" not in kept
    assert kept["regarding"] == {"kind": "Pod", "namespace": "web", "name": "web-1", "uid": "uid-web-web-1"}


def _stamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("profile", "since"),
    [
        pytest.param({"metadata": {"creationTimestamp": _stamp(T0 - 60)}}, T0 - 59, id="created"),
        pytest.param(
            {"metadata": {"creationTimestamp": _stamp(T0 - 900)}, "status": {"conditions": [
                {"type": "DoubleServing", "status": "False", "lastTransitionTime": _stamp(T0 - 30)}]}},
            T0 - 29, id="cleared-since",
        ),
        pytest.param(
            {"metadata": {"creationTimestamp": _stamp(T0 - 900)}, "status": {"conditions": [
                {"type": "DoubleServing", "status": "True", "lastTransitionTime": _stamp(T0 - 30)}]}},
            T0 - 899, id="an-episode-on",
        ),
        pytest.param({"metadata": {}}, float("-inf"), id="nothing-known"),
    ],
)  # fmt: skip
def test_a_profile_first_seen_counts_bindings_from_its_creation_or_its_last_clearing(
    profile: dict[str, Any], since: float
) -> None:
    assert counted_since(profile) == since


@pytest.mark.parametrize(
    ("bound", "counted"),
    [
        pytest.param(T0 - 120, False, id="minutes-before"),
        pytest.param(T0 - 60 + 0.4, False, id="in-the-second-of-the-creation"),
        pytest.param(T0 - 59, True, id="after"),
    ],
)
def test_bindings_before_a_profile_was_created_do_not_count(bound: float, counted: bool) -> None:
    """The migration docs/deploy.md asks for: stop kube-scheduler, then create the profile; its
    last bindings, listed by the leader, are not double serving. The creation time has whole
    seconds, the binding's microseconds."""
    found, changes = detector(Clock(), WEB)
    found.counts_since(DEFAULT, counted_since({"metadata": {"creationTimestamp": _stamp(T0 - 60)}}))

    found.observe(scheduled(WEB, at=bound))

    assert bool(changes) is counted
