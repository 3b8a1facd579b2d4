"""The Helm chart (charts/crd-scheduler) with the real helm, built from the Go module proxy by
``scripts/dev-cluster build helm`` (hack/helm/go.mod).

Rendered: the default values give the objects of manifests/ (the kustomize base), with only the
differences docs/deploy.md lists; the webhook modes give manifests/webhook/'s objects. On the dev
cluster: the rendered chart passes a server-side dry run, and a release installs, runs (the
operator as a subprocess here, with a token of the chart's ServiceAccount: there is no kubelet
to run the Deployment's pods), upgrades and uninstalls, leaving only the CRDs.

The webhook is installed only with a namespaceSelector that picks the test's own namespace:
unlimited, it would send every session's profile writes on the shared cluster to a Service
that nothing serves (no kubelet runs the replicas, no kube-proxy routes the Service).
"""

from __future__ import annotations

import base64
import copy
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from kubernetes import client, dynamic

from tests import wrappers
from tests.e2e import DEV_CLUSTER, Cluster, eventually
from tests.e2e.conftest import EXIT_TOOLCHAIN_MISSING
from tests.e2e.operator_support import (
    RELOAD_LINE,
    OperatorProcess,
    create_nodes,
    delete_nodes,
    force_delete_pods,
    unique,
    wait_all_bound,
)

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "crd-scheduler"
MANIFESTS = ROOT / "manifests"
HOME = "crd-scheduler"
# Labels the chart adds to what manifests/ has, selectors included (one release's pods only).
HELM_LABELS = frozenset(
    {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "app.kubernetes.io/version"}
)
FIELD_MANAGER = "crd-scheduler-chart-e2e"
CRD_NAMES = ("schedulerprofiles.scheduling.crd-scheduler.io", "pluginconfigs.scheduling.crd-scheduler.io")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"helm: {reason}", pytrace=False)
    pytest.skip(f"helm: {reason}")


@pytest.fixture(scope="session")
def helm_binary() -> Path:
    """``CRD_SCHEDULER_HELM``, else the dev cluster's helm (built on first use)."""
    given = os.environ.get("CRD_SCHEDULER_HELM")
    if given:
        return Path(given)
    built = subprocess.run(
        [sys.executable, str(DEV_CLUSTER), "build", "helm"], capture_output=True, text=True, check=False
    )
    if built.returncode == EXIT_TOOLCHAIN_MISSING:
        _unavailable(built.stderr.strip().splitlines()[-1])
    assert built.returncode == 0, built.stderr
    return Path(built.stdout.strip().splitlines()[-1]) / "helm"


class Helm:
    """The helm CLI with its own config, cache and data folders (nothing of the user's)."""

    def __init__(self, binary: Path, home: Path, kubeconfig: Path | None = None) -> None:
        self.binary = binary
        self.env = {
            **os.environ,
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_DATA_HOME": str(home / "data"),
        }
        self.env.pop("KUBECONFIG", None)
        if kubeconfig is not None:
            self.env["KUBECONFIG"] = str(kubeconfig)

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(self.binary), *args], env=self.env, capture_output=True, text=True, check=False)
        if check:
            assert done.returncode == 0, f"helm {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done

    def template(self, *values: str, release: str = HOME, namespace: str = HOME) -> list[dict[str, Any]]:
        rendered = self.run("template", release, str(CHART), "--namespace", namespace, "--include-crds", *values)
        return [d for d in yaml.safe_load_all(rendered.stdout) if d]


@pytest.fixture(scope="session")
def helm(helm_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Helm:
    return Helm(helm_binary, tmp_path_factory.mktemp("helm"))


@pytest.fixture(scope="session")
def cluster_helm(helm_binary: Path, tmp_path_factory: pytest.TempPathFactory, cluster: Cluster) -> Helm:
    return Helm(helm_binary, tmp_path_factory.mktemp("helm"), cluster.kubeconfig)


def _key(document: dict[str, Any]) -> tuple[str, str, str]:
    meta = document["metadata"]
    return document["kind"], meta.get("namespace", ""), meta["name"]


def _without_helm_labels(node: Any) -> Any:
    """``node`` with the chart's own labels dropped from every label map and selector."""
    if isinstance(node, dict):
        return {
            key: _without_helm_labels(
                {k: v for k, v in value.items() if k not in HELM_LABELS}
                if key in ("labels", "matchLabels", "selector") and isinstance(value, dict)
                else value
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_without_helm_labels(item) for item in node]
    return node


def _manifests(*files: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    documents = [d for name in files for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]
    return {_key(d): d for d in documents}


def _by_key(documents: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {_key(d): _without_helm_labels(d) for d in documents}


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = container
    return found


# -- rendered -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        pytest.param([], id="defaults"),
        pytest.param(["--set", "webhook.mode=cert-manager"], id="webhook-cert-manager"),
        pytest.param(["--set", "webhook.mode=self-signed"], id="webhook-self-signed"),
        pytest.param(
            ["--set", "metrics.serviceMonitor.enabled=true", "--set", "tenancy.profileAuthors[0].namespace=team-a",
             "--set", "tenancy.profileAuthors[0].group=team-a-authors"],
            id="service-monitor-and-tenancy",
        ),
    ],
)  # fmt: skip
def test_helm_lint(helm: Helm, values: list[str]) -> None:
    linted = helm.run("lint", "--strict", str(CHART), *values)

    assert "1 chart(s) linted, 0 chart(s) failed" in linted.stdout


def test_the_package_renders_as_the_folder(helm: Helm, tmp_path: Path) -> None:
    """``make chart``'s ``helm package``: named after the version, CRDs and schema inside."""
    version = yaml.safe_load((CHART / "Chart.yaml").read_text())["version"]
    helm.run("package", str(CHART), "--destination", str(tmp_path))
    package = tmp_path / f"crd-scheduler-{version}.tgz"

    listed = subprocess.run(["tar", "-tzf", str(package)], capture_output=True, text=True, check=True).stdout.split()
    packaged = helm.run("template", HOME, str(package), "--namespace", HOME, "--include-crds").stdout

    assert {"crd-scheduler/crds/schedulerprofiles.yaml", "crd-scheduler/values.schema.json"} <= set(listed)
    assert [d for d in yaml.safe_load_all(packaged) if d] == helm.template()


def test_the_defaults_render_the_kustomize_base(helm: Helm) -> None:
    """Every object of manifests/kustomization.yaml but the Namespace (Helm installs into an
    existing one), equal once the chart's Helm labels are dropped."""
    resources = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())["resources"]
    base = _manifests(*resources)
    namespace = base.pop(("Namespace", "", HOME))

    rendered = _by_key(helm.template())

    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert sorted(rendered) == sorted(base)
    for key, expected in base.items():
        assert rendered[key] == expected, key


def test_the_cert_manager_webhook_renders_manifests_webhook(helm: Helm) -> None:
    files = ("webhook/service.yaml", "webhook/validating-webhook.yaml", "webhook/cert-manager/certificate.yaml")
    expected = _manifests(*files)
    patch = yaml.safe_load((MANIFESTS / "webhook" / "deployment-patch.yaml").read_text())
    [patched] = patch["spec"]["template"]["spec"]["containers"]

    rendered = _by_key(helm.template("--set", "webhook.mode=cert-manager"))
    container = _container(rendered[("Deployment", HOME, HOME)])

    for key, document in expected.items():
        assert {k: v for k, v in rendered[key].items() if k != "metadata"} == {
            k: v for k, v in document.items() if k != "metadata"
        }, key
        assert rendered[key]["metadata"].get("annotations") == document["metadata"].get("annotations"), key
    # The patch's command, after the base's --secure-port and --liveness (which the patch drops).
    assert container["command"][:4] == patched["command"][:4]
    assert container["command"][-6:] == patched["command"][-6:]
    assert patched["ports"][0] in container["ports"]
    assert patched["volumeMounts"][0] in container["volumeMounts"]
    assert (
        patch["spec"]["template"]["spec"]["volumes"][0]
        in (rendered[("Deployment", HOME, HOME)]["spec"]["template"]["spec"]["volumes"])
    )


def test_tenancy_renders_manifests_tenancy_per_namespace(helm: Helm) -> None:
    expected = _manifests("tenancy/profile-author.yaml")
    values = [
        "--set", "tenancy.profileAuthors[0].namespace=team-a", "--set", "tenancy.profileAuthors[0].group=a-authors",
        "--set", "tenancy.profileAuthors[1].namespace=team-b", "--set", "tenancy.profileAuthors[1].group=b-authors",
    ]  # fmt: skip

    rendered = _by_key(helm.template(*values))

    for namespace, group in (("team-a", "a-authors"), ("team-b", "b-authors")):
        for (kind, _, name), document in expected.items():
            wanted = copy.deepcopy(document)
            wanted["metadata"]["namespace"] = namespace
            if kind == "RoleBinding":
                wanted["subjects"][0]["name"] = group
            assert rendered[(kind, namespace, name)] == wanted


def test_the_self_signed_webhook_has_a_certificate_for_its_service_and_the_ca_bundle(helm: Helm) -> None:
    rendered = _by_key(helm.template("--set", "webhook.mode=self-signed"))
    secret = rendered[("Secret", HOME, "crd-scheduler-webhook")]
    configuration = rendered[("ValidatingWebhookConfiguration", "", HOME)]

    certificate = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    ca = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["ca.crt"]))
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert secret["type"] == "kubernetes.io/tls"
    assert names.get_values_for_type(x509.DNSName) == [
        "crd-scheduler-webhook.crd-scheduler.svc",
        "crd-scheduler-webhook.crd-scheduler.svc.cluster.local",
    ]
    certificate.verify_directly_issued_by(ca)
    assert {w["clientConfig"]["caBundle"] for w in configuration["webhooks"]} == {secret["data"]["ca.crt"]}
    assert "cert-manager.io/inject-ca-from" not in configuration["metadata"].get("annotations", {})


def test_the_service_monitor_is_rendered_only_when_enabled(helm: Helm) -> None:
    off = {d["kind"] for d in helm.template()}
    on = [d for d in helm.template("--set", "metrics.serviceMonitor.enabled=true") if d["kind"] == "ServiceMonitor"]

    assert "ServiceMonitor" not in off
    [monitor] = on
    assert monitor["spec"]["endpoints"] == [
        {
            "port": "metrics",
            "path": "/metrics",
            "scheme": "https",
            "tlsConfig": {"insecureSkipVerify": True},
            "bearerTokenFile": "/var/run/secrets/kubernetes.io/serviceaccount/token",
            "interval": "30s",
            "scrapeTimeout": "10s",
        }
    ]


def test_values_reach_the_deployment(helm: Helm) -> None:
    values = [
        "--set", "replicas=3", "--set", "image.repository=registry.example.com/crd-scheduler",
        "--set", "image.tag=9.9.9", "--set", "leaderElection.leaseDuration=20",
        "--set", "leaderElection.renewDeadline=15", "--set", "leaderElection.retryPeriod=2.5s",
        "--set", "leaderElection.leaseName=sched", "--set", "logLevel=DEBUG", "--set", "logFormat=json",
        "--set", "homeNamespace=sched-home",
        "--set", "nodeSelector.role=control", "--set", "tolerations[0].operator=Exists",
        "--set", "priorityClassName=", "--set", "resources.limits.memory=2Gi",
        "--set", "extraArgs={--kube-api-qps,100}", "--set", "metrics.port=9100",
        "--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].key=role",
        "--set", "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].operator=Exists",
    ]  # fmt: skip
    rendered = _by_key(helm.template(*values))
    deployment = rendered[("Deployment", HOME, HOME)]
    pod = deployment["spec"]["template"]["spec"]
    container = _container(deployment)
    role = rendered[("Role", "sched-home", "crd-scheduler-leader-election")]

    assert deployment["spec"]["replicas"] == 3
    assert container["image"] == "registry.example.com/crd-scheduler:9.9.9"
    assert container["command"] == [
        "crd-scheduler", "run", "--home-namespace", "sched-home", "--secure-port", "9100", "--liveness=",
        "--lease-name", "sched", "--lease-duration", "20", "--renew-deadline", "15", "--retry-period", "2.5s",
        "--log-level", "DEBUG", "--log-format", "json", "--kube-api-qps", "100",
    ]  # fmt: skip
    assert container["ports"] == [{"name": "metrics", "containerPort": 9100, "protocol": "TCP"}]
    assert rendered[("Service", HOME, "crd-scheduler-metrics")]["spec"]["ports"][0]["port"] == 9100
    assert list(pod["affinity"]) == ["nodeAffinity"]  # replaces the default anti-affinity
    assert {"name": "CRD_SCHEDULER_HOME_NAMESPACE", "value": "sched-home"} in container["env"]
    assert (pod["nodeSelector"], pod["tolerations"]) == ({"role": "control"}, [{"operator": "Exists"}])
    assert "priorityClassName" not in pod
    assert container["resources"]["limits"]["memory"] == "2Gi"
    assert role["rules"][1]["resourceNames"] == ["sched"]
    assert ("SchedulerProfile", "sched-home", "default") in rendered


@pytest.mark.parametrize(
    ("values", "message"),
    [
        pytest.param(["--set", "webhook.mode=on"], 'webhook.mode: "on" is not one of off, cert-manager, self-signed',
                     id="webhook-mode"),
        pytest.param(["--set", "tenancy.profileAuthors[0].namespace=team-a"],
                     "tenancy.profileAuthors: every entry needs a namespace and a group", id="tenancy-group"),
        pytest.param(["--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.service.enabled=false"],
                     "metrics.serviceMonitor.enabled needs metrics.service.enabled", id="monitor-without-service"),
    ],
)  # fmt: skip
def test_bad_values_are_refused_naming_the_value(helm: Helm, values: list[str], message: str) -> None:
    refused = helm.run("template", HOME, str(CHART), *values, check=False)

    assert refused.returncode == 1
    assert message in refused.stderr


@pytest.mark.parametrize(
    ("values", "field"),
    [
        pytest.param(["--set", "replica=3"], "replica", id="misspelt-key"),
        pytest.param(["--set", "logLevel=TRACE"], "logLevel", id="log-level"),
        pytest.param(["--set", "logFormat=yaml"], "logFormat", id="log-format"),
        pytest.param(["--set", "replicas=two"], "replicas", id="not-an-integer"),
        pytest.param(["--set", "leaderElection.leaseDuration=0"], "leaseDuration", id="zero-lease"),
        pytest.param(["--set", "leaderElection.retryPeriod=2 seconds"], "retryPeriod", id="not-a-duration"),
    ],
)
def test_the_values_schema_refuses_what_the_operator_would(helm: Helm, values: list[str], field: str) -> None:
    """values.schema.json: helm names the field (its wording, so only the name is pinned)."""
    refused = helm.run("template", HOME, str(CHART), *values, check=False)

    assert refused.returncode == 1
    assert field in refused.stderr
    assert refused.stdout == ""  # nothing rendered


# -- on the dev cluster -----------------------------------------------------------------------


@pytest.fixture
def dynamic_client(api: client.ApiClient) -> Any:
    untyped: Any = dynamic.DynamicClient
    return untyped(api)


def _dry_run_apply(dynamic_client: Any, manifest: dict[str, Any]) -> Any:
    resource = dynamic_client.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    return dynamic_client.server_side_apply(
        resource, body=manifest, field_manager=FIELD_MANAGER, force_conflicts=True, dry_run="All"
    )


def test_the_rendered_chart_passes_a_server_side_dry_run(
    helm: Helm, dynamic_client: Any, namespace: str, crds: None
) -> None:
    """Every object, the self-signed webhook and a tenant's Role included, validated and
    defaulted by the API server and stored nowhere."""
    release = unique("crd-scheduler-dry")
    documents = helm.template(
        "--set", "webhook.mode=self-signed", "--set", f"tenancy.profileAuthors[0].namespace={namespace}",
        "--set", "tenancy.profileAuthors[0].group=authors", release=release, namespace=namespace,
    )  # fmt: skip

    applied = [_dry_run_apply(dynamic_client, document) for document in documents]

    assert [(a.kind, a.metadata.name) for a in applied] == [(d["kind"], d["metadata"]["name"]) for d in documents]
    kinds = {a.kind for a in applied}
    assert {"CustomResourceDefinition", "Deployment", "ValidatingWebhookConfiguration", "Role", "FlowSchema"} <= kinds
    [deployment] = [a for a in applied if a.kind == "Deployment"]
    assert deployment.spec.template.spec.priorityClassName == "system-cluster-critical"


def _token_kubeconfig(cluster: Cluster, core: Any, namespace: str, account: str, path: Path) -> Path:
    """The admin kubeconfig's server and CA with a TokenRequest token of ``account``."""
    request = {"spec": {"audiences": [], "expirationSeconds": 3600}}
    token = core.create_namespaced_service_account_token(account, namespace, request).status.token
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    current = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
    server = next(c for c in config["clusters"] if c["name"] == current["cluster"])
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [server],
                "users": [{"name": account, "user": {"token": token}}],
                "contexts": [{"name": account, "context": {"cluster": server["name"], "user": account}}],
                "current-context": account,
            }
        )
    )
    return path


def _gone(dynamic_client: Any, document: dict[str, Any]) -> None:
    resource = dynamic_client.resources.get(api_version=document["apiVersion"], kind=document["kind"])
    meta = document["metadata"]
    try:
        found = resource.get(name=meta["name"], namespace=meta.get("namespace"))
    except dynamic.exceptions.NotFoundError:
        return
    raise AssertionError(f"{document['kind']} {meta.get('namespace', '')}/{meta['name']} still there: {found.metadata}")


@pytest.fixture
def release(cluster_helm: Helm, namespace: str) -> Iterator[str]:
    """A release name, uninstalled after the test if the test left it installed."""
    name = unique("crd-scheduler-e2e")
    yield name
    if name in cluster_helm.run("list", "--namespace", namespace, "--short").stdout.split():
        cluster_helm.run("uninstall", name, "--namespace", namespace, "--wait")


def test_install_run_upgrade_uninstall(
    cluster: Cluster,
    api: client.ApiClient,
    cluster_helm: Helm,
    dynamic_client: Any,
    namespace: str,
    release: str,
    tmp_path: Path,
) -> None:
    core: Any = client.CoreV1Api(api)
    custom: Any = client.CustomObjectsApi(api)
    apps: Any = client.AppsV1Api(api)
    scheduler, label = unique("crd-helm"), unique("helm")
    values = [
        "--set", f"defaultProfile.schedulerName={scheduler}",
        "--set", f"tenancy.profileAuthors[0].namespace={namespace}", "--set", "tenancy.profileAuthors[0].group=authors",
    ]  # fmt: skip

    installed = cluster_helm.run("install", release, str(CHART), "--namespace", namespace, *values)
    stored = cluster_helm.run("get", "manifest", release, "--namespace", namespace).stdout
    manifest = [d for d in yaml.safe_load_all(stored) if d]

    assert "STATUS: deployed" in installed.stdout
    assert {d["kind"] for d in manifest} >= {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service",
        "PodDisruptionBudget", "PriorityLevelConfiguration", "FlowSchema", "SchedulerProfile",
    }  # fmt: skip
    assert f"{release}-profile-author" in {d["metadata"]["name"] for d in manifest if d["kind"] == "Role"}
    for crd in CRD_NAMES:
        client.ApiextensionsV1Api(api).read_custom_resource_definition(crd)

    # The Deployment's pod as the API server admits it: system-cluster-critical outside kube-system.
    deployment = apps.read_namespaced_deployment(release, namespace)
    template = client.ApiClient().sanitize_for_serialization(deployment.spec.template)  # type: ignore[no-untyped-call]
    pod = core.create_namespaced_pod(
        namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "admitted"}, "spec": template["spec"]},
        dry_run="All",
    )  # fmt: skip
    assert (pod.spec.priority_class_name, pod.spec.priority) == ("system-cluster-critical", 2000000000)

    # The operator as the chart's ServiceAccount binds a pod with the chart's default profile.
    kubeconfig = _token_kubeconfig(cluster, core, namespace, release, tmp_path / "kubeconfig")
    nodes = create_nodes(core, 1, label)
    operator = OperatorProcess(kubeconfig, namespace, tmp_path)
    try:
        operator.wait_log(r"leading: scheduling")
        core.create_namespaced_pod(
            namespace, wrappers.pod("p0", namespace, scheduler_name=scheduler, node_selector={"e2e-run": label})
        )
        assert wait_all_bound(core, namespace, {"p0"}) == {"p0": nodes[0]}

        def bound_by_it() -> None:  # its log line follows the binding's answer, seen first above
            assert [(pod, node) for pod, _, node in operator.binds()] == [(f"{namespace}/p0", nodes[0])]

        eventually(bound_by_it, timeout=10)

        upgraded = cluster_helm.run(
            "upgrade", release, str(CHART), "--namespace", namespace, *values,
            "--set", "replicas=3", "--set", "leaderElection.leaseDuration=20",
            "--set", "defaultProfile.spec.percentageOfNodesToScore=40",
        )  # fmt: skip
        assert "has been upgraded" in upgraded.stdout
        deployment = apps.read_namespaced_deployment(release, namespace)
        [container] = deployment.spec.template.spec.containers
        assert deployment.spec.replicas == 3
        assert container.command[-2:] == ["--lease-duration", "20"]
        profile = custom.get_namespaced_custom_object(
            "scheduling.crd-scheduler.io", "v1alpha1", namespace, "schedulerprofiles", "default"
        )
        assert profile["spec"]["percentageOfNodesToScore"] == 40
        # The running operator reloads the upgraded profile.
        eventually(lambda: _assert_reloaded(operator, namespace))
        assert operator.problems() == []
    finally:
        operator.stop()
        print(f"--- log of the operator (last lines) ---\n{operator.log()[-4000:]}")
        force_delete_pods(core, namespace)
        delete_nodes(core, nodes)

    cluster_helm.run("uninstall", release, "--namespace", namespace, "--wait")

    for document in manifest:
        _gone(dynamic_client, document)
    for crd in CRD_NAMES:  # Helm never deletes the CRDs of a chart's crds/ folder
        client.ApiextensionsV1Api(api).read_custom_resource_definition(crd)


def test_the_self_signed_webhook_keeps_its_certificate_across_upgrades(
    api: client.ApiClient, cluster_helm: Helm, dynamic_client: Any, namespace: str, release: str
) -> None:
    """The chart reads the Secret back (``lookup``) instead of minting a new CA on every upgrade.
    The webhook selects only this test's namespace (a label of its own), and no profile is written
    there: no other session's writes reach a webhook that nothing serves here."""
    core: Any = client.CoreV1Api(api)
    admission: Any = client.AdmissionregistrationV1Api(api)
    core.patch_namespace(namespace, {"metadata": {"labels": {"crd-scheduler-e2e-webhook": release}}})
    values = [
        "--set", "webhook.mode=self-signed", "--set", "defaultProfile.enabled=false",
        "--set", f"webhook.namespaceSelector.matchLabels.crd-scheduler-e2e-webhook={release}",
    ]  # fmt: skip
    secret_name = f"{release}-webhook"

    cluster_helm.run("install", release, str(CHART), "--namespace", namespace, *values)
    first = core.read_namespaced_secret(secret_name, namespace).data
    cluster_helm.run("upgrade", release, str(CHART), "--namespace", namespace, *values, "--set", "replicas=1")
    second = core.read_namespaced_secret(secret_name, namespace).data
    configuration = admission.read_validating_webhook_configuration(release)
    stored = cluster_helm.run("get", "manifest", release, "--namespace", namespace).stdout
    manifest = [d for d in yaml.safe_load_all(stored) if d]
    cluster_helm.run("uninstall", release, "--namespace", namespace, "--wait")

    assert second == first
    assert {w.client_config.ca_bundle for w in configuration.webhooks} == {first["ca.crt"]}
    assert {w.client_config.service.name for w in configuration.webhooks} == {secret_name}
    assert {k for w in configuration.webhooks for k in w.namespace_selector.match_labels} == {
        "crd-scheduler-e2e-webhook"
    }
    for document in manifest:
        _gone(dynamic_client, document)


def _assert_reloaded(operator: OperatorProcess, namespace: str) -> None:
    generations = [int(m[2]) for m in RELOAD_LINE.finditer(operator.log()) if m[1] == f"{namespace}/default"]
    assert generations and max(generations) >= 2, generations


def test_helm_is_the_pinned_version(helm: Helm) -> None:
    pinned = next(
        line.split()[1] for line in (ROOT / "hack" / "helm" / "go.mod").read_text().splitlines()
        if line.strip().startswith("helm.sh/helm/v4 ")
    )  # fmt: skip

    assert helm.run("version", "--short").stdout.startswith(pinned)
