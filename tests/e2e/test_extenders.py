"""Extenders both ways on the real API server, with the real kube-scheduler v1.36.3.

- kube-scheduler configured with ``crd-scheduler extender serve`` binds pods where our Python
  plugins say (names-only and full-object modes), and lets it bind;
- our operator, with a SchedulerProfile naming an extender, does the same; adding, changing and
  removing the extender on the live profile takes effect without a restart (timed);
- faults: a non-ignorable extender that is down gives the same FailedScheduling message from
  kube-scheduler and from us, and the pod stays pending; an ignorable one is skipped;
- TLS: with the right CA the calls go through; with a wrong CA both schedulers fail the same way.

Every test has its own kube-scheduler process (a unique schedulerName, its own config), nodes
labelled for it, and a namespace; the dev cluster's shared kube-scheduler is left alone.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from scheduler_operator.resources import PROFILE_PLURAL
from tests import wrappers
from tests.e2e import Cluster, eventually
from tests.e2e.extender_support import extender_serve, failed_scheduling, kube_scheduler, peer, tls_pair
from tests.e2e.faults import marked, start_marked
from tests.e2e.operator_support import Env, environment, install_crds, profile, wait_all_bound
from tests.unit.extender.label_plugins import REFUSE_LABEL, SCORE_LABEL
from tests.unit.extender.peer import names

pytestmark = pytest.mark.e2e


@pytest.fixture
def crds(api: client.ApiClient) -> None:
    # Per test: other sessions on the shared dev cluster install their branch's CRDs, and a CRD
    # without spec.extenders would prune the field silently (see _create_profile).
    install_crds(api)


def _create_profile(env: Env, **spec: Any) -> None:
    """Create the test's profile, checking that the API server kept ``extenders``."""
    install_crds(env.api)
    created = env.custom.create(env.home, profile("default", env.scheduler, **spec))
    assert created["spec"].get("extenders") == spec.get("extenders"), (
        "the API server pruned spec.extenders: a CRD without the field was installed meanwhile"
    )


@pytest.fixture
def env(cluster: Cluster, api: client.ApiClient, namespace: str, tmp_path: Path, crds: None) -> Iterator[Env]:
    with environment(cluster, api, namespace, tmp_path) as created:
        yield created


def _label_nodes(env: Env) -> dict[str, str]:
    """Three nodes: scored 30 and 90, and one refused although it would score 100."""
    low, high, refused = env.add_nodes(3, cpu="4", memory="8Gi")
    env.core.patch_node(low, {"metadata": {"labels": {SCORE_LABEL: "30"}}})
    env.core.patch_node(high, {"metadata": {"labels": {SCORE_LABEL: "90"}}})
    env.core.patch_node(refused, {"metadata": {"labels": {SCORE_LABEL: "100", REFUSE_LABEL: "yes"}}})
    return {"low": low, "high": high, "refused": refused}


def _pods(env: Env, scheduler: str, count: int, prefix: str = "p") -> set[str]:
    names = {f"{prefix}{i}" for i in range(count)}
    for name in sorted(names):
        env.core.create_namespaced_pod(
            env.home,
            wrappers.pod(name, env.home, scheduler_name=scheduler, node_selector={"e2e-run": env.label}, cpu="100m"),
        )
    return names


def _extender(url: str, **fields: Any) -> dict[str, Any]:
    return {"urlPrefix": url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 5, **fields}


@pytest.mark.parametrize(
    "names_only", [pytest.param(True, id="nodeCacheCapable"), pytest.param(False, id="full-nodes")]
)
def test_kube_scheduler_with_extender_serve_places_pods_where_the_python_plugins_say(
    env: Env, cluster: Cluster, tmp_path: Path, names_only: bool
) -> None:
    nodes = _label_nodes(env)
    scheduler = f"kube-ext-{uuid.uuid4().hex[:6]}"
    with extender_serve(cluster) as (url, service):
        eventually(lambda: _cached(service, nodes.values()))
        config = {
            "profiles": [{"schedulerName": scheduler}],
            "extenders": [_extender(url, nodeCacheCapable=names_only)],
        }
        with kube_scheduler(cluster, tmp_path, config):
            placed = wait_all_bound(env.core, env.home, _pods(env, scheduler, 4))
    assert set(placed.values()) == {nodes["high"]}


def test_kube_scheduler_lets_extender_serve_bind(env: Env, cluster: Cluster, tmp_path: Path) -> None:
    nodes = _label_nodes(env)
    scheduler = f"kube-ext-{uuid.uuid4().hex[:6]}"
    with extender_serve(cluster) as (url, service):
        eventually(lambda: _cached(service, nodes.values()))
        config = {
            "profiles": [{"schedulerName": scheduler}],
            "extenders": [_extender(url, nodeCacheCapable=True, bindVerb="bind")],
        }
        with kube_scheduler(cluster, tmp_path, config):
            placed = wait_all_bound(env.core, env.home, _pods(env, scheduler, 2))
    assert set(placed.values()) == {nodes["high"]}
    events = client.EventsV1Api(env.api).list_namespaced_event(env.home).items
    assert {e.regarding.name for e in events if e.reason == "Scheduled" and e.regarding is not None} == set(placed)


def _cached(service: Any, nodes: Any) -> None:
    for name in nodes:
        assert service.cache.get_node(name) is not None


def test_our_operator_calls_an_extender_added_changed_and_removed_live(env: Env, cluster: Cluster) -> None:
    nodes = _label_nodes(env)
    # marked: another session's operator on the shared cluster would serve this profile as a
    # tenant's, without the extender, and bind the pods first (tests/e2e/faults.py)
    env.custom.create(env.home, profile("default", env.scheduler, plugins=marked()))
    operator = start_marked(env)
    timings: dict[str, float] = {}
    with extender_serve(cluster) as (url, service), peer() as (scripted, _):
        eventually(lambda: _cached(service, nodes.values()))
        scripted.answers["filter"] = lambda b: {"NodeNames": [n for n in names(b) if n == nodes["low"]]}
        steps: list[tuple[str, list[dict[str, Any]], set[str] | None]] = [
            ("add", [_extender(url, nodeCacheCapable=True)], {nodes["high"]}),
            ("change", [{"urlPrefix": scripted.url, "filterVerb": "filter", "nodeCacheCapable": True}], {nodes["low"]}),
            ("remove", [], None),
        ]
        for step, extenders, where in steps:
            calls = len(scripted.calls)
            started = time.monotonic()
            install_crds(env.api)
            patched = env.custom.patch_spec(PROFILE_PLURAL, env.home, "default", {"extenders": extenders})
            assert patched["spec"].get("extenders", []) == extenders, "spec.extenders pruned: a CRD without it"
            generation = patched["metadata"]["generation"]
            env.custom.wait_status(PROFILE_PLURAL, env.home, "default",
                                   lambda s, g=generation: bool(s.get("observedGeneration") == g))  # type: ignore[misc]  # fmt: skip
            timings[step] = round(time.monotonic() - started, 3)
            placed = wait_all_bound(env.core, env.home, _pods(env, env.scheduler, 3, f"{step}-"))
            if where is not None:
                assert set(placed.values()) == where, step
            expected_calls = calls + 3 if step == "change" else calls
            assert len(scripted.calls) == expected_calls, step
    print(f"extender hot reload, patch to status at the new generation (s): {timings}")
    assert operator.problems() == []


def test_a_down_extender_fails_both_schedulers_with_the_same_message(
    env: Env, cluster: Cluster, tmp_path: Path
) -> None:
    env.add_nodes(1, cpu="4", memory="8Gi")
    down = "http://127.0.0.1:9"  # discard port: nothing listens
    extender = {"urlPrefix": down, "filterVerb": "filter", "nodeCacheCapable": True}
    kube = f"kube-ext-{uuid.uuid4().hex[:6]}"
    _create_profile(env, extenders=[extender])
    operator = env.start_operator()
    with kube_scheduler(cluster, tmp_path, {"profiles": [{"schedulerName": kube}], "extenders": [extender]}):
        _pods(env, kube, 1, "kube-")
        _pods(env, env.scheduler, 1, "ours-")

        def both_failed() -> tuple[list[str], list[str]]:
            theirs = failed_scheduling(env.core, env.home, "kube-0")
            ours = failed_scheduling(env.core, env.home, "ours-0", operator.identity)
            assert theirs and ours
            return theirs, ours

        theirs, ours = eventually(both_failed, timeout=60)
    assert theirs[0] == ours[0] == 'Post "http://127.0.0.1:9/filter": dial tcp 127.0.0.1:9: connect: connection refused'
    for pod in ("kube-0", "ours-0"):
        assert not env.core.read_namespaced_pod(pod, env.home).spec.node_name  # pending, not lost


def test_an_ignorable_down_extender_is_skipped_by_both(env: Env, cluster: Cluster, tmp_path: Path) -> None:
    env.add_nodes(1, cpu="4", memory="8Gi")
    extender = {"urlPrefix": "http://127.0.0.1:9", "filterVerb": "filter", "ignorable": True}
    kube = f"kube-ext-{uuid.uuid4().hex[:6]}"
    _create_profile(env, extenders=[extender])
    env.start_operator()
    with kube_scheduler(cluster, tmp_path, {"profiles": [{"schedulerName": kube}], "extenders": [extender]}):
        names = _pods(env, kube, 1, "kube-") | _pods(env, env.scheduler, 1, "ours-")
        wait_all_bound(env.core, env.home, names)


@pytest.mark.parametrize("right_ca", [pytest.param(True, id="right-ca"), pytest.param(False, id="wrong-ca")])
def test_tls_with_a_ca(env: Env, cluster: Cluster, tmp_path: Path, right_ca: bool) -> None:
    nodes = _label_nodes(env)
    served = tls_pair(tmp_path, "served")
    other = tls_pair(tmp_path, "other")
    ca = served if right_ca else other
    kube = f"kube-ext-{uuid.uuid4().hex[:6]}"
    with extender_serve(cluster, tls=(served["cert"], served["key"])) as (url, service):
        eventually(lambda: _cached(service, nodes.values()))
        extender = _extender(url, nodeCacheCapable=True, enableHTTPS=True, tlsConfig={"caData": ca["ca_data"]})
        _create_profile(env, extenders=[extender])
        operator = env.start_operator()
        with kube_scheduler(cluster, tmp_path, {"profiles": [{"schedulerName": kube}], "extenders": [extender]}):
            kube_pods = _pods(env, kube, 1, "kube-")
            our_pods = _pods(env, env.scheduler, 1, "ours-")
            if right_ca:
                placed = wait_all_bound(env.core, env.home, kube_pods | our_pods)
                assert set(placed.values()) == {nodes["high"]}
                return

            def both_failed() -> tuple[list[str], list[str]]:
                theirs = failed_scheduling(env.core, env.home, "kube-0")
                ours = failed_scheduling(env.core, env.home, "ours-0", operator.identity)
                assert theirs and ours
                return theirs, ours

            theirs, ours = eventually(both_failed, timeout=60)
    expected = f'Post "{url}/filter": tls: failed to verify certificate: x509: certificate signed by unknown authority'
    assert theirs[0] == expected
    assert ours[0] == expected
