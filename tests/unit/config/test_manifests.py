"""The deployment manifests, the Dockerfile and their agreement with each other and the package.

kustomize may be missing where the unit tests run, so the kustomization is checked by reading it;
``kubectl kustomize`` builds it when kubectl is there. tests/e2e/test_crds.py applies every
manifest to a real API server.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler_core.config import SchedulerProfileSpec
from scheduler_core.config.models import Plugins

ROOT = Path(__file__).resolve().parents[3]
MANIFESTS = ROOT / "manifests"
HOME = "crd-scheduler"
KUBECTL = shutil.which("kubectl")


def _load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((MANIFESTS / name).read_text())
    return document


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def _resources() -> list[str]:
    resources: list[str] = _load("kustomization.yaml")["resources"]
    return resources


def test_kustomization_lists_existing_files_once() -> None:
    resources = _resources()

    assert [name for name in resources if not (MANIFESTS / name).is_file()] == []
    assert len(set(resources)) == len(resources)


# Components applied apart from the base (they have a kustomization of their own).
COMPONENTS = ("tenancy", "podgroup-crd")


def _optional(path: Path) -> bool:
    """Under a folder with its own kustomization: an optional part, applied on its own."""
    folder = path.parent
    while folder != MANIFESTS:
        if (folder / "kustomization.yaml").is_file():
            return True
        folder = folder.parent
    return False


def test_kustomization_lists_every_manifest() -> None:
    files = {str(path.relative_to(MANIFESTS)) for path in MANIFESTS.rglob("*.yaml") if not _optional(path)}
    files -= {"kustomization.yaml"}
    overlay = {f for f in files if f.startswith("webhook/")}  # the webhook overlays, on top of the base

    assert files - overlay - set(_resources()) == set()
    assert {"crds/schedulerprofiles.yaml", "crds/pluginconfigs.yaml", "rbac.yaml"} <= set(_resources())


@pytest.mark.parametrize("component", COMPONENTS)
def test_components_list_their_manifests(component: str) -> None:
    folder = MANIFESTS / component
    listed = yaml.safe_load((folder / "kustomization.yaml").read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in folder.glob("*.yaml") if p.name != "kustomization.yaml")


def test_tenant_role_grants_no_status_and_nothing_cluster_wide() -> None:
    documents = list(yaml.safe_load_all((MANIFESTS / "tenancy" / "profile-author.yaml").read_text()))
    assert {d["kind"] for d in documents} == {"Role", "RoleBinding"}
    (role,) = [d for d in documents if d["kind"] == "Role"]
    resources = {r for rule in role["rules"] for r in rule["resources"]}
    assert resources == {"schedulerprofiles", "pluginconfigs"}


def test_namespaced_manifests_live_in_the_home_namespace() -> None:
    documents = [doc for name in _resources() if name != "rbac.yaml" for doc in yaml.safe_load_all(
        (MANIFESTS / name).read_text()) if doc]  # fmt: skip
    cluster_scoped = {"Namespace", "CustomResourceDefinition", "FlowSchema", "PriorityLevelConfiguration"}

    assert _load("namespace.yaml")["metadata"]["name"] == HOME
    assert {(d["kind"], d["metadata"].get("namespace")) for d in documents if d["kind"] not in cluster_scoped} == {
        ("ServiceAccount", HOME),
        ("Deployment", HOME),
        ("Service", HOME),
        ("PodDisruptionBudget", HOME),
        ("SchedulerProfile", HOME),
    }


def test_default_profile_is_the_built_in_default() -> None:
    profile = _load("default-profile.yaml")

    assert (profile["apiVersion"], profile["kind"]) == ("scheduling.crd-scheduler.io/v1alpha1", "SchedulerProfile")
    assert (profile["metadata"]["namespace"], profile["metadata"]["name"]) == (HOME, "default")
    spec = SchedulerProfileSpec.model_validate(profile["spec"])
    assert spec.scheduler_name == "crd-scheduler"
    assert spec.plugins == Plugins()
    assert spec.plugin_config == []


def _deployment() -> dict[str, Any]:
    return _load("deployment.yaml")


def _container() -> dict[str, Any]:
    containers: list[dict[str, Any]] = _deployment()["spec"]["template"]["spec"]["containers"]
    [container] = containers
    return container


def test_deployment_runs_the_packaged_command_and_version() -> None:
    container = _container()
    project = _pyproject()["project"]

    assert container["image"] == f"crd-scheduler:{project['version']}"
    assert container["command"][:4] == ["crd-scheduler", "run", "--home-namespace", HOME]
    assert container["command"][0] in project["scripts"]


def test_deployment_environment() -> None:
    env = {item["name"]: item for item in _container()["env"]}

    assert env["CRD_SCHEDULER_HOME_NAMESPACE"]["value"] == HOME
    assert env["POD_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}


def test_deployment_pod_is_placed_by_the_default_scheduler_as_the_service_account() -> None:
    deployment = _deployment()
    pod = deployment["spec"]["template"]["spec"]

    assert deployment["metadata"]["name"] == "crd-scheduler"
    assert deployment["spec"]["replicas"] == 2
    assert pod["schedulerName"] == "default-scheduler"
    assert pod["serviceAccountName"] == _load("serviceaccount.yaml")["metadata"]["name"] == "crd-scheduler"
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()


def test_deployment_pod_is_system_cluster_critical_as_kube_scheduler() -> None:
    # tests/e2e/test_helm_chart.py shows the API server admitting it outside kube-system.
    assert _deployment()["spec"]["template"]["spec"]["priorityClassName"] == "system-cluster-critical"


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        pytest.param("pod", "runAsNonRoot", True, id="pod-non-root"),
        pytest.param("pod", "runAsUser", 65532, id="pod-user"),
        pytest.param("pod", "seccompProfile", {"type": "RuntimeDefault"}, id="seccomp"),
        pytest.param("container", "runAsNonRoot", True, id="container-non-root"),
        pytest.param("container", "runAsUser", 65532, id="container-user"),
        pytest.param("container", "readOnlyRootFilesystem", True, id="read-only-root"),
        pytest.param("container", "allowPrivilegeEscalation", False, id="no-privilege-escalation"),
        pytest.param("container", "capabilities", {"drop": ["ALL"]}, id="no-capabilities"),
    ],
)
def test_deployment_security_context(where: str, key: str, value: Any) -> None:
    pod = _deployment()["spec"]["template"]["spec"]
    context = pod["securityContext"] if where == "pod" else _container()["securityContext"]

    assert context[key] == value


def test_deployment_has_a_writable_tmp() -> None:
    pod = _deployment()["spec"]["template"]["spec"]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    [mount] = [mount for mount in _container()["volumeMounts"] if mount["mountPath"] == "/tmp"]

    assert "emptyDir" in volumes[mount["name"]]


@pytest.mark.parametrize(
    ("probe", "path"),
    [
        pytest.param("livenessProbe", "/healthz", id="liveness"),
        pytest.param("readinessProbe", "/readyz", id="readiness"),
    ],
)
def test_deployment_probes_the_operators_endpoints(probe: str, path: str) -> None:
    container = _container()
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    get = container[probe]["httpGet"]
    command = container["command"]

    assert get["path"] == path
    assert get["scheme"] == "HTTPS"  # the secure port, anonymous on the probes' paths
    assert ports.get(get["port"], get["port"]) == int(command[command.index("--secure-port") + 1]) == 10259
    assert "--port" not in command  # no plain HTTP unless asked for


def test_the_pdb_and_metrics_service_select_the_deployments_pods() -> None:
    labels = _deployment()["spec"]["template"]["metadata"]["labels"]
    pdb, service = _load("pdb.yaml"), _load("service.yaml")

    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    assert pdb["spec"]["minAvailable"] < _deployment()["spec"]["replicas"]


def test_the_flowschema_matches_the_operators_service_account() -> None:
    level, schema = yaml.safe_load_all((MANIFESTS / "flowcontrol.yaml").read_text())
    account = _deployment()["spec"]["template"]["spec"]["serviceAccountName"]

    assert schema["spec"]["priorityLevelConfiguration"]["name"] == level["metadata"]["name"]
    [rule] = schema["spec"]["rules"]
    assert rule["subjects"] == [{"kind": "ServiceAccount", "serviceAccount": {"name": account, "namespace": HOME}}]
    # kube-scheduler's bootstrap FlowSchema: precedence 800, ByNamespace (apiserver bootstrap/default.go).
    assert (schema["spec"]["matchingPrecedence"], schema["spec"]["distinguisherMethod"]["type"]) == (800, "ByNamespace")


def test_deployment_resources_have_requests_and_limits() -> None:
    resources = _container()["resources"]

    assert set(resources["requests"]) == {"cpu", "memory"}
    assert set(resources["limits"]) >= {"memory"}


def _dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of the Dockerfile, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(maxsplit=1)[0], line.split(maxsplit=1)[1]) for line in lines]


def test_dockerfile_installs_the_package_and_runs_it_as_the_deployments_user() -> None:
    instructions = _dockerfile()
    user = _container()["securityContext"]["runAsUser"]

    # Built as `make image` builds it (hack/image/rootfs.py; tests/unit/test_image_recipe.py has the rest).
    assert instructions[0] == ("FROM", "debian:bookworm-slim AS build")
    assert any(op == "RUN" and "rootfs.py --lock requirements/runtime.txt" in args for op, args in instructions)
    assert [args for op, args in instructions if op == "USER"] == [f"{user}:{user}"]
    [entrypoint] = [args for op, args in instructions if op == "ENTRYPOINT"]
    assert yaml.safe_load(entrypoint) == [_container()["command"][0]]


def test_dockerignore_keeps_what_the_build_copies() -> None:
    kept = {line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines() if line.startswith("!")}
    copied = {
        source.rstrip("/").removeprefix("./")
        for op, args in _dockerfile()
        if op == "COPY" and not args.startswith("--from=")  # from the build stage, not the context
        for source in args.split()[:-1]
    }

    assert copied <= kept
    assert {"pyproject.toml", "README.md"} <= copied  # pyproject's readme is part of the build


@pytest.mark.skipif(KUBECTL is None, reason="kubectl (with its built-in kustomize) is not installed")
def test_kustomize_builds_the_base() -> None:
    built = subprocess.run([str(KUBECTL), "kustomize", str(MANIFESTS)], capture_output=True, text=True, check=False)

    assert built.returncode == 0, built.stderr
    kinds = [document["kind"] for document in yaml.safe_load_all(built.stdout) if document]
    assert {"Namespace", "CustomResourceDefinition", "ServiceAccount", "Deployment", "SchedulerProfile"} <= set(kinds)
    assert kinds.count("CustomResourceDefinition") == 2


@pytest.mark.parametrize("variant", ["cert-manager", "self-signed"])
def test_webhook_overlays_build_on_the_base_and_serve_both_kinds(variant: str) -> None:
    overlay = yaml.safe_load((MANIFESTS / "webhook" / variant / "kustomization.yaml").read_text())
    assert "../../" in overlay["resources"] and "../validating-webhook.yaml" in overlay["resources"]
    hooks = yaml.safe_load((MANIFESTS / "webhook" / "validating-webhook.yaml").read_text())["webhooks"]
    paths = {hook["clientConfig"]["service"]["path"] for hook in hooks}
    assert paths == {"/validate-schedulerprofiles", "/validate-pluginconfigs"}  # Kopf's handler ids


def test_optional_pod_group_crd_is_the_one_in_crds() -> None:
    part = MANIFESTS / "podgroup-crd"
    listed = yaml.safe_load((part / "kustomization.yaml").read_text())["resources"]
    assert listed == ["podgroups.scheduling.x-k8s.io.yaml"]
    shipped = (MANIFESTS.parent / "crds" / "podgroups.scheduling.x-k8s.io.yaml").read_text()
    assert (part / "podgroups.scheduling.x-k8s.io.yaml").read_text() == shipped
