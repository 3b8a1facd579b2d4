"""Observability on a real API server: the operator's ``/metrics`` after a run carries upstream's
metric names with sane values, ``/healthz`` and ``/readyz`` answer for the leader and for a
standby, the secure port answers as kube-scheduler's (a token without the right gets 403, one
bound to the manifests' metrics-reader ClusterRole gets the metrics, a forged one 401), and
the API server accepts the APF, PodDisruptionBudget, Service and Deployment manifests
(server-side dry-run: nothing is stored on the shared cluster)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client, dynamic

from tests.e2e import eventually
from tests.e2e.operator_support import ROOT, Env, OperatorProcess, free_port, profile, wait_all_bound
from tests.promtext import Family, parse

pytestmark = pytest.mark.e2e

MANIFESTS = ROOT / "manifests"
FIELD_MANAGER = "crd-scheduler-e2e"


def get(url: str, token: str | None = None) -> tuple[int, str, str]:
    """HTTP GET: status, Content-Type and body (an error status is an answer too). HTTPS
    trusts the operator's self-signed certificate (it is generated at start)."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=5, context=context) as answer:
            return answer.status, answer.headers["Content-Type"], answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


def scrape(operator: OperatorProcess) -> dict[str, Family]:
    status, content_type, body = get(f"{operator.url}/metrics")
    assert status == 200
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    return parse(body)


def test_metrics_after_a_run_and_probes_of_leader_and_standby(env: Env) -> None:
    env.add_nodes(2, cpu="2", memory="4Gi")
    env.custom.create(env.home, profile("default", env.scheduler))
    leader = env.start_operator()
    fits = [f"fits-{i}" for i in range(4)]
    env.create_pods(env.home, fits, cpu="500m", memory="256Mi")
    env.create_pods(env.home, ["huge"], cpu="64", memory="256Mi")  # fits no node
    wait_all_bound(env.core, env.home, set(fits))
    profile_label = f"{env.home}/default"

    def scheduled_and_unschedulable() -> dict[str, Family]:
        families = scrape(leader)
        attempts = families["scheduler_schedule_attempts_total"]
        assert attempts.value(result="scheduled", profile=profile_label) == len(fits)
        assert attempts.value(result="unschedulable", profile=profile_label) >= 1
        assert families["scheduler_pending_pods"].value(queue="unschedulable") == 1
        return families

    families = eventually(scheduled_and_unschedulable)
    duration = families["scheduler_scheduling_attempt_duration_seconds"]
    assert duration.value("_count", result="scheduled", profile=profile_label) == len(fits)
    assert 0 < duration.value("_sum", result="scheduled", profile=profile_label) < 60
    sli = families["scheduler_pod_scheduling_sli_duration_seconds"]
    assert sli.value("_count", attempts="1") == len(fits)
    assert families["scheduler_pending_pods"].value(queue="active") == 0
    assert families["scheduler_unschedulable_pods"].value(plugin="NodeResourcesFit", profile=profile_label) == 1
    incoming = families["scheduler_queue_incoming_pods_total"]
    assert incoming.value(queue="active", event="PodAdd") >= len(fits) + 1
    assert incoming.value(queue="unschedulable", event="ScheduleAttemptFailure") >= 1
    points = families["scheduler_framework_extension_point_duration_seconds"]
    for point in ("PreFilter", "Filter", "Reserve", "Permit", "Bind"):
        assert points.value("_count", extension_point=point, status="Success", profile=profile_label) >= len(fits)
    assert families["scheduler_preemption_attempts_total"].value() >= 1  # DefaultPreemption tried for huge
    assert families["crd_scheduler_profile_reloads_total"].value(result="success") >= 1

    assert get(f"{leader.url}/healthz")[0] == 200
    status, _, body = get(f"{leader.url}/readyz")
    assert status == 200, body
    assert "[+]leader ok (leading)" in body

    standby = env.start_operator(wait_for=r"waiting for the lease")

    def standby_ready() -> str:
        status, _, body = get(f"{standby.url}/readyz")
        assert status == 200, body
        return body

    assert "[+]leader ok (standby: not leading)" in eventually(standby_ready, timeout=60)
    assert get(f"{standby.url}/healthz")[0] == 200
    # The standby schedules nothing: its attempts are not counted.
    assert "scheduler_schedule_attempts_total" not in scrape(standby)


@pytest.fixture
def scraper_tokens(env: Env) -> Iterator[dict[str, str]]:
    """Tokens of two fresh ServiceAccounts of the test's namespace: ``scraper``, bound to the
    manifests' metrics-reader ClusterRole (under a test-unique name), and ``nobody``."""
    rbac: Any = client.RbacAuthorizationV1Api(env.api)
    [reader] = [
        d for d in yaml.safe_load_all((MANIFESTS / "rbac.yaml").read_text())
        if d and d["metadata"]["name"] == "crd-scheduler-metrics-reader"
    ]  # fmt: skip
    role = f"e2e-metrics-reader-{uuid.uuid4().hex[:6]}"
    rbac.create_cluster_role({**reader, "metadata": {"name": role}})
    rbac.create_cluster_role_binding({
        "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "scraper", "namespace": env.home}],
    })  # fmt: skip
    tokens = {}
    try:
        for name in ("scraper", "nobody"):
            env.core.create_namespaced_service_account(env.home, {"metadata": {"name": name}})
            request = {"spec": {"expirationSeconds": 3600}}
            tokens[name] = env.core.create_namespaced_service_account_token(name, env.home, request).status.token
        yield tokens
    finally:
        rbac.delete_cluster_role_binding(role)
        rbac.delete_cluster_role(role)


def test_the_secure_port_authenticates_and_authorizes_as_kube_scheduler(
    env: Env, scraper_tokens: dict[str, str]
) -> None:
    env.add_nodes(1, cpu="2", memory="4Gi")
    env.custom.create(env.home, profile("default", env.scheduler))
    port = free_port()
    # The operator runs as the manifests' ServiceAccount rights: system:auth-delegator included.
    operator = env.start_operator("--secure-port", str(port))
    operator.wait_log(rf"serving /metrics, /healthz and /readyz on https://127.0.0.1:{port}")
    url = f"https://127.0.0.1:{port}"
    nobody = f"system:serviceaccount:{env.home}:nobody"

    status, content_type, body = eventually(lambda: _allowed(get(f"{url}/metrics", scraper_tokens["scraper"])))
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    families = parse(body)
    assert families["process_cpu_seconds_total"].type == "counter"
    assert families["process_resident_memory_bytes"].value() > 0
    assert families["python_info"].type == "gauge"
    assert "scheduler_pending_pods" in families and "crd_scheduler_build_info" in families
    assert families["crd_scheduler_profile_serving"].value(profile=f"{env.home}/default") == 1

    status, _, body = get(f"{url}/metrics", scraper_tokens["nobody"])
    assert status == 403, body
    assert json.loads(body)["message"] == f'forbidden: User "{nobody}" cannot get path "/metrics"'
    # No token: anonymous, authorized like anyone (kube-scheduler's delegating options enable
    # anonymous authentication), so 403 as well; a token the API server refuses: 401.
    status, _, body = get(f"{url}/metrics")
    assert (status, json.loads(body)["message"]) == (
        403, 'forbidden: User "system:anonymous" cannot get path "/metrics"'
    )  # fmt: skip
    status, _, body = get(f"{url}/metrics", "not-a-token")
    assert (status, json.loads(body)["reason"]) == (401, "Unauthorized")
    # The probes stay anonymous (--authorization-always-allow-paths).
    assert get(f"{url}/healthz")[0] == 200
    assert get(f"{url}/readyz")[0] == 200


def _allowed(answer: tuple[int, str, str]) -> tuple[int, str, str]:
    assert answer[0] == 200, answer
    return answer


@pytest.fixture
def dynamic_client(api: client.ApiClient) -> Any:
    home = yaml.safe_load((MANIFESTS / "namespace.yaml").read_text())["metadata"]["name"]
    core = client.CoreV1Api(api)
    try:
        core.read_namespace(home)
    except client.ApiException as error:
        assert error.status == 404, error
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=home)))
    untyped: Any = dynamic.DynamicClient
    return untyped(api)


def dry_run_apply(dynamic_client: Any, manifest: dict[str, Any]) -> Any:
    """Server-side apply, dry run: validated and defaulted by the server, stored nowhere. Apply
    refuses a field its schema does not declare (see the last test) instead of dropping it."""
    resource = dynamic_client.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    return dynamic_client.server_side_apply(
        resource, body=manifest, field_manager=FIELD_MANAGER, force_conflicts=True, dry_run="All"
    )


@pytest.mark.parametrize(
    ("file", "kinds"),
    [
        pytest.param("flowcontrol.yaml", ["PriorityLevelConfiguration", "FlowSchema"], id="apf"),
        pytest.param("pdb.yaml", ["PodDisruptionBudget"], id="pdb"),
        pytest.param("service.yaml", ["Service"], id="metrics-service"),
        pytest.param("deployment.yaml", ["Deployment"], id="deployment-with-probes"),
    ],
)
def test_the_api_server_accepts_the_manifests(dynamic_client: Any, file: str, kinds: list[str]) -> None:
    manifests = [m for m in yaml.safe_load_all((MANIFESTS / file).read_text()) if m]
    assert [m["kind"] for m in manifests] == kinds
    for manifest in manifests:
        applied = dry_run_apply(dynamic_client, manifest)
        assert (applied.kind, applied.metadata.name) == (manifest["kind"], manifest["metadata"]["name"])
        if manifest["kind"] == "FlowSchema":
            assert applied.spec.matchingPrecedence == 800
            assert applied.spec.priorityLevelConfiguration.name == "crd-scheduler"
        if manifest["kind"] == "Deployment":
            [container] = applied.spec.template.spec.containers
            assert container.livenessProbe.httpGet.path == "/healthz"
            assert container.readinessProbe.httpGet.path == "/readyz"


def test_a_misspelt_flowschema_is_refused(dynamic_client: Any) -> None:
    _, schema = yaml.safe_load_all((MANIFESTS / "flowcontrol.yaml").read_text())
    misspelt = {**schema, "spec": {**schema["spec"], "matchingPrecedance": 800}}
    with pytest.raises(client.ApiException) as refused:
        dry_run_apply(dynamic_client, misspelt)
    assert ".spec.matchingPrecedance: field not declared in schema" in str(refused.value.body)
