"""The generated CRDs and the deployment manifests, on a real API server.

The CRDs are applied server-side from ``crds/`` (the files users apply) and left installed:
they are cluster-scoped, the same for every session sharing the cluster, and applying them is
idempotent. Custom objects live in the per-test namespace. The manifests of ``manifests/`` are
applied with server-side dry-run only, so the shared cluster's ``crd-scheduler`` namespace and
the operator identity's rights stay as the other tests expect them.

Unknown fields: the schema prunes them (structural-schema pruning; the server answers with a
warning naming each one); kubectl's default ``--validate=strict`` turns that into a 400, and
server-side apply always refuses them. Either way no unknown field is ever stored, which matches
the models' ``extra="forbid"``.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, dynamic
from kubernetes.client import ApiException
from pydantic import BaseModel, ValidationError

from scheduler_core.config import PluginConfigSpec, SchedulerProfileSpec
from scheduler_core.config import crd as crds
from scheduler_core.names import GROUP, VERSION
from tests.e2e import Cluster, eventually

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
FIELD_MANAGER = "crd-scheduler-e2e"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL = shutil.which("kubectl")


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: Any


def _request(
    api: client.ApiClient, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None
) -> Response:
    """A raw API call: the generated client hides warnings, tables and the OpenAPI documents."""
    method, url, all_headers, payload, _ = api.param_serialize(
        method, path, header_params=headers or {}, body=body, auth_settings=["BearerToken"]
    )
    response: Any = api.call_api(method, url, all_headers, payload)  # urllib3-like, untyped
    response.read()
    return Response(response.status, dict(response.getheaders()), json.loads(response.data or b"null"))


@pytest.fixture(scope="module")
def installed(api: client.ApiClient) -> None:
    """Both CRDs, applied server-side from crds/, Established and served."""
    extensions = client.ApiextensionsV1Api(api)
    for kind in crds.KINDS:
        manifest = yaml.safe_load((ROOT / "crds" / kind.file_name).read_text())
        extensions.patch_custom_resource_definition(
            kind.crd_name, manifest, field_manager=FIELD_MANAGER, force=True,
            _content_type="application/apply-patch+yaml",
        )  # fmt: skip
    for kind in crds.KINDS:
        eventually(functools.partial(_served, api, kind))


def _served(api: client.ApiClient, kind: crds.Kind) -> None:
    definition: Any = client.ApiextensionsV1Api(api).read_custom_resource_definition(kind.crd_name)
    assert ("Established", "True") in {(c.type, c.status) for c in definition.status.conditions or []}
    client.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, kind.plural)  # storage is up


def _causes(error: ApiException) -> set[str]:
    """The fields a 422 Invalid names."""
    return {cause["field"] for cause in _body(error)["details"]["causes"]}


def _body(error: ApiException) -> Any:
    return json.loads(error.body or "null")


@pytest.fixture
def custom(api: client.ApiClient, installed: None) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def _object(kind: crds.Kind, name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": kind.kind, "metadata": {"name": name}, "spec": spec}


def _create(custom: client.CustomObjectsApi, namespace: str, kind: crds.Kind, spec: Any, **kwargs: Any) -> Any:
    name = f"obj-{uuid.uuid4().hex[:8]}"
    return custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, kind.plural, _object(kind, name, spec), **kwargs
    )


PROFILE_SPEC = {
    "percentageOfNodesToScore": 50,
    "plugins": {
        "multiPoint": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}]},
        "score": {
            "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
            "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
        },
    },
    "pluginConfig": [
        {
            "name": "NodeResourcesFit",
            "args": {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                },
                "ignoredResourceGroups": ["example.com"],
            },
        }
    ],
}
PLUGIN_CONFIG_SPEC = {
    "plugin": "NodeResourcesFit",
    "args": {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}},
    "profileSelector": {"matchLabels": {"team": "a"}},
}


# Installation.


@pytest.mark.parametrize("kind", crds.KINDS, ids=lambda kind: kind.kind)
def test_crd_is_established_with_its_names(api: client.ApiClient, installed: None, kind: crds.Kind) -> None:
    definition: Any = client.ApiextensionsV1Api(api).read_custom_resource_definition(kind.crd_name)
    discovery = _request(api, "GET", f"/apis/{GROUP}/{VERSION}").body

    conditions = {(c.type, c.status) for c in definition.status.conditions}
    assert {("Established", "True"), ("NamesAccepted", "True")} <= conditions
    assert definition.spec.scope == "Namespaced"
    assert definition.status.accepted_names.short_names == list(kind.short_names)
    served = {resource["name"]: resource for resource in discovery["resources"]}
    assert served[kind.plural]["namespaced"] is True
    assert served[kind.plural]["shortNames"] == list(kind.short_names)
    assert served[kind.plural]["categories"] == [crds.CATEGORY]
    assert f"{kind.plural}/status" in served


# Validation and pruning of specs.


@pytest.mark.parametrize(
    ("kind", "spec", "model"),
    [
        pytest.param(crds.SCHEDULER_PROFILE, PROFILE_SPEC, SchedulerProfileSpec, id="profile"),
        pytest.param(crds.PLUGIN_CONFIG, PLUGIN_CONFIG_SPEC, PluginConfigSpec, id="plugin-config"),
    ],
)
def test_valid_object_is_stored_as_sent_with_defaults(
    custom: client.CustomObjectsApi, namespace: str, kind: crds.Kind, spec: dict[str, Any], model: type[BaseModel]
) -> None:
    created = _create(custom, namespace, kind, spec)
    stored = _get(custom, namespace, kind, created["metadata"]["name"])

    defaults = {"schedulerName": "crd-scheduler"} if kind is crds.SCHEDULER_PROFILE else {}
    assert stored["spec"] == {**spec, **defaults}  # args kept verbatim, however deep
    assert stored["metadata"]["generation"] == 1
    # What the server stores, the model reads back the same.
    assert model.model_validate(stored["spec"]).model_dump(by_alias=True, exclude_unset=True) == stored["spec"]


def test_empty_profile_spec_gets_the_default_scheduler_name(custom: client.CustomObjectsApi, namespace: str) -> None:
    created = _create(custom, namespace, crds.SCHEDULER_PROFILE, {})

    assert created["spec"] == {"schedulerName": "crd-scheduler"}
    assert created["spec"] == SchedulerProfileSpec().model_dump(by_alias=True, include={"scheduler_name"})


def _with(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**base, **changes}


@pytest.mark.parametrize(
    ("kind", "spec", "field"),
    [
        pytest.param(crds.SCHEDULER_PROFILE, {"percentageOfNodesToScore": "x"}, "spec.percentageOfNodesToScore",
                     id="percentage-not-an-integer"),
        pytest.param(crds.SCHEDULER_PROFILE, {"percentageOfNodesToScore": 101}, "spec.percentageOfNodesToScore",
                     id="percentage-above-100"),
        pytest.param(crds.SCHEDULER_PROFILE, {"percentageOfNodesToScore": -1}, "spec.percentageOfNodesToScore",
                     id="percentage-negative"),
        pytest.param(crds.SCHEDULER_PROFILE, {"schedulerName": ""}, "spec.schedulerName", id="empty-scheduler-name"),
        pytest.param(crds.SCHEDULER_PROFILE, {"plugins": {"score": "all"}}, "spec.plugins.score",
                     id="plugin-set-not-an-object"),
        pytest.param(crds.SCHEDULER_PROFILE, {"plugins": {"score": {"enabled": [{"weight": 2}]}}},
                     "spec.plugins.score.enabled[0].name", id="plugin-without-name"),
        pytest.param(crds.SCHEDULER_PROFILE, {"plugins": {"filter": {"disabled": [{"name": ""}]}}},
                     "spec.plugins.filter.disabled[0].name", id="plugin-with-empty-name"),
        pytest.param(crds.SCHEDULER_PROFILE, {"plugins": {"score": {"enabled": [{"name": "A", "weight": "heavy"}]}}},
                     "spec.plugins.score.enabled[0].weight", id="weight-not-an-integer"),
        pytest.param(crds.SCHEDULER_PROFILE, {"pluginConfig": [{"args": {}}]}, "spec.pluginConfig[0].name",
                     id="plugin-config-without-name"),
        pytest.param(crds.SCHEDULER_PROFILE, {"pluginConfig": [{"name": "A", "args": "fast"}]},
                     "spec.pluginConfig[0].args", id="args-not-an-object"),
        pytest.param(crds.PLUGIN_CONFIG, {"args": {}}, "spec.plugin", id="plugin-config-without-plugin"),
        pytest.param(crds.PLUGIN_CONFIG, _with(PLUGIN_CONFIG_SPEC, profileSelector={"matchLabels": {"team": 1}}),
                     "spec.profileSelector.matchLabels.team", id="label-value-not-a-string"),
        pytest.param(crds.PLUGIN_CONFIG, None, "spec", id="no-spec"),
    ],
)  # fmt: skip
def test_invalid_spec_is_rejected_naming_the_field(
    custom: client.CustomObjectsApi, namespace: str, kind: crds.Kind, spec: Any, field: str
) -> None:
    with pytest.raises(ApiException) as rejected:
        _create(custom, namespace, kind, spec)

    assert rejected.value.status == 422
    assert field in _causes(rejected.value)
    if spec is not None:  # the model agrees with the server
        with pytest.raises(ValidationError):
            kind.spec.model_validate(spec)


TYPOS = {
    "plugins": {
        "scroe": {"enabled": [{"name": "NodeResourcesFit"}]},
        "score": {"enabled": [{"name": "NodeResourcesFit", "wieght": 3}]},
    },
    "pluginconfig": [],
}
TYPO_FIELDS = {"spec.plugins.scroe", "spec.plugins.score.enabled[0].wieght", "spec.pluginconfig"}


def test_unknown_fields_are_pruned_with_a_warning(api: client.ApiClient, installed: None, namespace: str) -> None:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/schedulerprofiles"
    created = _request(api, "POST", path, body=_object(crds.SCHEDULER_PROFILE, "typos", TYPOS))

    assert created.status == 201
    assert created.body["spec"] == {
        "schedulerName": "crd-scheduler",
        "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit"}]}},
    }
    warned = set(re.findall(r'unknown field \\"([^"\\]+)\\"', created.headers.get("Warning", "")))
    assert warned == TYPO_FIELDS


def test_unknown_fields_are_rejected_under_strict_validation(custom: client.CustomObjectsApi, namespace: str) -> None:
    # What `kubectl apply` does by default (--validate=strict).
    with pytest.raises(ApiException) as rejected:
        _create(custom, namespace, crds.SCHEDULER_PROFILE, TYPOS, field_validation="Strict")

    assert rejected.value.status == 400
    assert set(re.findall(r'unknown field "([^"]+)"', _body(rejected.value)["message"])) == TYPO_FIELDS


# What kubectl shows: OpenAPI descriptions, explain, printer columns.


def _descriptions(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, str | None]]:
    """(path, description) of every node under ``schema``, following properties, items and values."""
    yield path, schema.get("description")
    for name, sub in schema.get("properties", {}).items():
        yield from _descriptions(sub, f"{path}.{name}")
    if "items" in schema:
        yield from _descriptions(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _descriptions(schema["additionalProperties"], f"{path}.*")


@pytest.mark.parametrize(
    ("kind", "path", "text"),
    [
        pytest.param(
            crds.SCHEDULER_PROFILE, ".spec.plugins.score",
            "Score plugins, with weights.\n\nPlugins enabled and disabled at one extension point. A disabled name `*` "
            "disables all default plugins of the point; enabled plugins run after the remaining defaults, in order.",
            id="profile",
        ),
        pytest.param(
            crds.PLUGIN_CONFIG, ".spec.profileSelector",
            "Only profiles of this namespace whose labels match; all when unset.\n\n"
            "A label selector (matchLabels only).",
            id="plugin-config",
        ),
    ],
)  # fmt: skip
def test_published_openapi_carries_every_description(
    api: client.ApiClient, installed: None, kind: crds.Kind, path: str, text: str
) -> None:
    generated = crds.custom_resource_definition(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    expected = {path: text for path, text in _descriptions(generated) if not path.startswith(".metadata")}

    def published() -> dict[str, str | None]:
        document = _request(api, "GET", f"/openapi/v3/apis/{GROUP}/{VERSION}")
        assert document.status == 200
        schema = document.body["components"]["schemas"][f"io.crd-scheduler.scheduling.{VERSION}.{kind.kind}"]
        found = {path: text for path, text in _descriptions(schema) if path in expected}
        assert found == expected  # the document follows CRD changes a moment later
        return found

    found = eventually(published)
    assert found[path] == text
    # Every node is described, but the values of maps (described by their map).
    assert [path for path, text in found.items() if not text and not path.endswith(".*")] == []


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_explain_shows_the_model_descriptions(cluster: Cluster, installed: None) -> None:
    def explain() -> str:
        result = subprocess.run(
            [str(KUBECTL), "explain", "schedulerprofile.spec.plugins.score", "--kubeconfig", str(cluster.kubeconfig)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return " ".join(result.stdout.split())

    text = eventually(explain)

    assert "GROUP: scheduling.crd-scheduler.io KIND: SchedulerProfile VERSION: v1alpha1" in text
    assert "Score plugins, with weights." in text
    assert "A disabled name `*` disables all default plugins of the point" in text
    assert "enabled <[]Object> Plugins to enable, in order." in text


@pytest.mark.parametrize(
    ("kind", "spec", "conditions", "cells"),
    [
        pytest.param(
            crds.SCHEDULER_PROFILE, {"schedulerName": "batch"},
            [{"type": "Valid", "status": "True"}, {"type": "Ready", "status": "False"}],
            {"SchedulerName": "batch", "Valid": "True", "Ready": "False", "Message": "warming up"},
            id="profile",
        ),
        pytest.param(
            crds.PLUGIN_CONFIG, {"plugin": "NodeResourcesFit"}, [{"type": "Valid", "status": "False"}],
            {"Plugin": "NodeResourcesFit", "Valid": "False", "Message": "warming up"},
            id="plugin-config",
        ),
    ],
)  # fmt: skip
def test_printer_columns(
    api: client.ApiClient,
    custom: client.CustomObjectsApi,
    namespace: str,
    kind: crds.Kind,
    spec: dict[str, Any],
    conditions: list[dict[str, str]],
    cells: dict[str, str],
) -> None:
    name = _create(custom, namespace, kind, spec)["metadata"]["name"]
    status = {"conditions": conditions, "message": "warming up"}
    custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, kind.plural, name, {"status": status})

    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{kind.plural}"
    table = _request(api, "GET", path, headers={"Accept": TABLE}).body

    columns = [(column["name"], column["priority"]) for column in table["columnDefinitions"]]
    assert columns == [("Name", 0), *((c[0], 1 if c[0] == "Message" else 0) for c in kind.columns)]
    [row] = table["rows"]
    shown = dict(zip([c["name"] for c in table["columnDefinitions"]], row["cells"], strict=True))
    assert shown == {"Name": name, **cells, "Age": shown["Age"]}
    assert re.fullmatch(r"\d+s", shown["Age"])


# The status subresource.


def _get(custom: client.CustomObjectsApi, namespace: str, kind: crds.Kind, name: str) -> Any:
    return custom.get_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, name)


STATUS = {
    "observedGeneration": 1,
    "conditions": [
        {"type": "Valid", "status": "True", "reason": "Built", "message": "framework built",
         "lastTransitionTime": "2024-05-01T10:00:00Z", "observedGeneration": 1},
        {"type": "Ready", "status": "True", "reason": "Serving", "message": "",
         "lastTransitionTime": "2024-05-01T10:00:01Z", "observedGeneration": 1},
    ],
    "plugins": {"queueSort": [{"name": "PrioritySort"}], "score": [{"name": "NodeResourcesFit", "weight": 5}]},
    "message": "generation 1 is serving",
}  # fmt: skip


def test_status_subresource_keeps_the_generation_and_spec_writes_ignore_status(
    custom: client.CustomObjectsApi, namespace: str
) -> None:
    kind = crds.SCHEDULER_PROFILE
    name = _create(custom, namespace, kind, {"schedulerName": "batch"})["metadata"]["name"]

    custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, kind.plural, name, {"status": STATUS})
    after_status = _get(custom, namespace, kind, name)
    spec_patch = {"spec": {"percentageOfNodesToScore": 30}, "status": {"message": "written through the main resource"}}
    custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, kind.plural, name, spec_patch)
    after_spec = _get(custom, namespace, kind, name)

    assert after_status["metadata"]["generation"] == 1
    assert after_status["status"] == STATUS  # every field the operator writes is kept
    assert after_spec["metadata"]["generation"] == 2
    assert after_spec["spec"]["percentageOfNodesToScore"] == 30
    assert after_spec["status"] == STATUS


@pytest.mark.parametrize(
    ("status", "field"),
    [
        pytest.param({"conditions": [{"type": "Valid", "status": "Maybe"}]}, "status.conditions[0].status",
                     id="condition-status-not-true-false-unknown"),
        pytest.param({"conditions": [{"status": "True"}]}, "status.conditions[0].type", id="condition-without-type"),
        pytest.param({"conditions": [{"type": "Valid", "status": "True", "lastTransitionTime": "yesterday"}]},
                     "status.conditions[0].lastTransitionTime", id="transition-time-not-a-date"),
        pytest.param({"observedGeneration": "one"}, "status.observedGeneration", id="generation-not-an-integer"),
        pytest.param({"plugins": {"score": [{"weight": 1}]}}, "status.plugins.score[0].name",
                     id="plugin-without-name"),
    ],
)  # fmt: skip
def test_invalid_status_is_rejected(
    custom: client.CustomObjectsApi, namespace: str, status: dict[str, Any], field: str
) -> None:
    kind = crds.SCHEDULER_PROFILE
    name = _create(custom, namespace, kind, {})["metadata"]["name"]

    with pytest.raises(ApiException) as rejected:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, kind.plural, name, {"status": status})

    assert rejected.value.status == 422
    assert field in _causes(rejected.value)
    with pytest.raises(ValidationError):  # the status model agrees with the server
        kind.status.model_validate(status)


def test_conditions_are_a_map_keyed_by_type(custom: client.CustomObjectsApi, namespace: str) -> None:
    kind = crds.PLUGIN_CONFIG
    name = _create(custom, namespace, kind, {"plugin": "NodeResourcesFit"})["metadata"]["name"]
    twice = {"conditions": [{"type": "Valid", "status": "True"}, {"type": "Valid", "status": "False"}]}

    with pytest.raises(ApiException) as rejected:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, kind.plural, name, {"status": twice})

    assert rejected.value.status == 422
    assert "Duplicate value" in _body(rejected.value)["message"]


def test_unknown_status_fields_are_pruned(custom: client.CustomObjectsApi, namespace: str) -> None:
    kind = crds.PLUGIN_CONFIG
    name = _create(custom, namespace, kind, {"plugin": "NodeResourcesFit"})["metadata"]["name"]
    status = {"message": "ok", "kopf": {"progress": {}}, "conditions": [{"type": "Valid", "status": "True", "x": 1}]}

    custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, kind.plural, name, {"status": status})

    assert _get(custom, namespace, kind, name)["status"] == {
        "message": "ok",
        "conditions": [{"type": "Valid", "status": "True"}],
    }


# The manifests.


def _kustomized() -> list[dict[str, Any]]:
    """Every object the kustomization lists, in its order."""
    kustomization = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    return [
        document
        for resource in kustomization["resources"]
        for document in yaml.safe_load_all((MANIFESTS / resource).read_text())
        if document
    ]


@pytest.fixture
def dynamic_client(api: client.ApiClient, installed: None) -> dynamic.DynamicClient:
    home = yaml.safe_load((MANIFESTS / "namespace.yaml").read_text())["metadata"]["name"]
    core = client.CoreV1Api(api)
    try:
        core.read_namespace(home)
    except ApiException as error:  # an external cluster; the dev cluster makes it for the operator identity
        assert error.status == 404, error
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=home)))
    untyped: Any = dynamic.DynamicClient
    return untyped(api)  # type: ignore[no-any-return]


def _dry_run_apply(dyn: Any, manifest: dict[str, Any]) -> Any:
    resource = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    return dyn.server_side_apply(
        resource, body=manifest, field_manager=FIELD_MANAGER, force_conflicts=True, dry_run="All"
    )


def test_every_manifest_applies_server_side(dynamic_client: dynamic.DynamicClient) -> None:
    manifests = _kustomized()

    applied = [_dry_run_apply(dynamic_client, manifest) for manifest in manifests]

    assert [(obj.kind, obj.metadata.namespace, obj.metadata.name) for obj in applied] == [
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]) for m in manifests
    ]
    kinds = {m["kind"] for m in manifests}
    assert {"Namespace", "ServiceAccount", "Deployment", "CustomResourceDefinition", "SchedulerProfile"} <= kinds


@pytest.mark.parametrize(
    ("kind", "typo"),
    [
        pytest.param("Deployment", "replica", id="deployment"),
        pytest.param("SchedulerProfile", "schedulerNmae", id="profile"),
    ],
)
def test_server_side_apply_rejects_a_misspelt_field(
    dynamic_client: dynamic.DynamicClient, kind: str, typo: str
) -> None:
    # The check above has teeth: server-side apply fails on an unknown field instead of dropping it.
    [manifest] = [m for m in _kustomized() if m["kind"] == kind]
    misspelt = {**manifest, "spec": {**manifest["spec"], typo: 3}}

    with pytest.raises(ApiException) as rejected:
        _dry_run_apply(dynamic_client, misspelt)

    assert rejected.value.status >= 400
    assert f".spec.{typo}: field not declared in schema" in _body(rejected.value)["message"]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_apply_k_dry_run(cluster: Cluster, installed: None) -> None:
    # The documented install command, built by kubectl's own kustomize.
    result = subprocess.run(
        [str(KUBECTL), "apply", "-k", str(MANIFESTS), "--server-side", "--dry-run=server", "--force-conflicts",
         f"--field-manager={FIELD_MANAGER}", "--kubeconfig", str(cluster.kubeconfig)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    applied = {line.split()[0] for line in result.stdout.splitlines()}
    assert {
        "namespace/crd-scheduler",
        "customresourcedefinition.apiextensions.k8s.io/schedulerprofiles.scheduling.crd-scheduler.io",
        "customresourcedefinition.apiextensions.k8s.io/pluginconfigs.scheduling.crd-scheduler.io",
        "serviceaccount/crd-scheduler",
        "deployment.apps/crd-scheduler",
        "schedulerprofile.scheduling.crd-scheduler.io/default",
    } <= applied
