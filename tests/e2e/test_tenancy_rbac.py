"""The Role shipped for tenant profile authors (manifests/tenancy/), enforced by the real API
server's RBAC: profiles and PluginConfigs in the tenant's namespace, no status, nothing in the
home namespace. The tenant is impersonated (User plus the Group the RoleBinding names)."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from scheduler_operator.resources import GROUP, PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL, VERSION
from tests.e2e import Cluster, eventually
from tests.e2e.operator_support import install_crds, plugin_config, profile

pytestmark = pytest.mark.e2e

ROLE_FILE = Path(__file__).resolve().parents[2] / "manifests" / "tenancy" / "profile-author.yaml"


@pytest.fixture
def tenant(cluster: Cluster, api: client.ApiClient, namespace: str) -> Iterator[Any]:
    """CustomObjectsApi as a user of the RoleBinding's group, after the Role is applied in ``namespace``."""
    install_crds(api)
    rbac: Any = client.RbacAuthorizationV1Api(api)
    for document in yaml.safe_load_all(ROLE_FILE.read_text()):
        doc = copy.deepcopy(document)
        doc["metadata"]["namespace"] = namespace
        kind = "role" if doc["kind"] == "Role" else "role_binding"
        getattr(rbac, f"create_namespaced_{kind}")(namespace, doc)
    group = next(d for d in yaml.safe_load_all(ROLE_FILE.read_text()) if d["kind"] == "RoleBinding")["subjects"][0]
    with cluster.api_client() as impersonating:
        impersonating.set_default_header("Impersonate-User", f"tenant-{uuid.uuid4().hex[:6]}")
        impersonating.set_default_header("Impersonate-Group", group["name"])
        yield client.CustomObjectsApi(impersonating)


def test_a_profile_author_writes_profiles_in_its_namespace_only(tenant: Any, namespace: str) -> None:
    created = eventually(  # the RBAC cache takes a moment to see the new RoleBinding
        lambda: tenant.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PROFILE_PLURAL, profile("own", "crd-scheduler")
        )
    )
    tenant.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLUGIN_CONFIG_PLURAL, plugin_config("fit", "NodeResourcesFit", {})
    )
    forged = {"status": {"lastGood": {"generation": 1, "spec": {"schedulerName": "crd-scheduler"}}}}

    with pytest.raises(client.ApiException) as status_write:
        tenant.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PROFILE_PLURAL, "own", forged)
    with pytest.raises(client.ApiException) as home_write:
        tenant.create_namespaced_custom_object(
            GROUP, VERSION, "crd-scheduler", PROFILE_PLURAL, profile("mine", "crd-scheduler")
        )

    assert created["metadata"]["namespace"] == namespace
    assert status_write.value.status == 403
    assert home_write.value.status == 403
