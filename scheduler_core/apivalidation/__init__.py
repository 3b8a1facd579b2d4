"""The API server's validation, for every object a verb reads from a manifest.

``simulate`` and ``validate`` read manifests a cluster would have refused unless they refuse
them too; and once an object passes here, no plugin can crash on its shape. Three steps, as
the API server takes them:

1. the kind and apiVersion (:data:`KINDS`): a kind the scheduler reads must carry its
   apiVersion; a known Kubernetes kind the scheduler does not read is ignored with a note
   (:data:`IGNORED_KINDS`); any other kind is an error, as ``kubectl`` says ``no matches for
   kind``;
2. strict decoding (:mod:`.decode`): unknown fields and wrong JSON types, against the Go
   types of ``k8s.io/api`` v0.36.3;
3. the validation rules of the kinds the scheduler reads (:mod:`.pod`, :mod:`.objects`,
   :mod:`.resource` for DRA).

Every problem is a :class:`~scheduler_core.framework.field.Error` (or the strict-decoding
error), so messages are the API server's. The kind table is one dict: a kind added by a later
feature (e.g. a PodGroup) is one entry, with its rules function.

Depends only on the framework and the names (import-linter contract ``apivalidation-is-low``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler_core.apivalidation import decode, meta, objects, pod, resource
from scheduler_core.apivalidation.decode import Problem, UnknownField
from scheduler_core.apivalidation.limits import LimitError, load_documents
from scheduler_core.framework import Manifest, content, field
from scheduler_core.names import API_VERSION

__all__ = [
    "IGNORED_KINDS",
    "KINDS",
    "Kind",
    "LimitError",
    "Problem",
    "UnknownField",
    "load_documents",
    "normalize",
    "validate",
    "validate_custom_resource",
]

Rules = Callable[[Manifest], list[field.Error]]


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind a manifest may hold: its apiVersions, and its rules beyond strict decoding."""

    api_versions: tuple[str, ...]
    namespaced: bool
    rules: Rules | None = None
    typed: bool = True  # its shape is in schema.json


def _no_rules(obj: Manifest) -> list[field.Error]:
    return []


def _generic(namespaced: bool) -> Rules:
    def rules(obj: Manifest) -> list[field.Error]:
        return meta.object_meta(obj.get("metadata"), content.dns1123_subdomain, namespaced=namespaced)

    return rules


def _kinds() -> dict[str, Kind]:
    table: dict[str, Kind] = {}
    specific: dict[str, Rules] = {
        "Pod": pod.validate,
        "Node": objects.node,
        "PersistentVolume": objects.persistent_volume,
        "PersistentVolumeClaim": objects.persistent_volume_claim,
        "PriorityClass": objects.priority_class,
        "PodDisruptionBudget": objects.pod_disruption_budget,
        "Namespace": objects.namespace,
        "ResourceClaim": resource.resource_claim,
        "ResourceClaimTemplate": resource.resource_claim_template,
        "DeviceClass": resource.device_class,
        "ResourceSlice": resource.resource_slice,
    }
    cluster_scoped = {"Node", "Namespace", "PersistentVolume", "PriorityClass", "StorageClass", "CSINode",
                      "CSIDriver", "VolumeAttachment", "DeviceClass", "ResourceSlice"}  # fmt: skip
    for name, info in decode.kinds().items():
        namespaced = name not in cluster_scoped
        table[name] = Kind((info.api_version,), namespaced, specific.get(name) or _generic(namespaced))
    # Gang scheduling's PodGroups: scheduler-plugins' CRD and upstream's alpha API (not in
    # schema.json; the simulator checks their spec, scheduler_core/simulator/podgroups.py).
    versions = ("scheduling.x-k8s.io/v1alpha1", "scheduling.k8s.io/v1alpha2")
    table["PodGroup"] = Kind(versions, True, _generic(True), typed=False)
    return table


KINDS: dict[str, Kind] = _kinds()
# Kubernetes kinds that may sit in the same folder as the ones the scheduler reads.
IGNORED_KINDS = frozenset({
    "Deployment", "DaemonSet", "Job", "CronJob", "ConfigMap", "Secret", "ServiceAccount", "Role", "RoleBinding",
    "ClusterRole", "ClusterRoleBinding", "Ingress", "IngressClass", "NetworkPolicy", "HorizontalPodAutoscaler",
    "Endpoints", "EndpointSlice", "LimitRange", "ResourceQuota", "CustomResourceDefinition", "Event", "Lease",
    "RuntimeClass", "PodTemplate", "ControllerRevision", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "APIService", "Kustomization",
})  # fmt: skip


def validate(kind: str, obj: Manifest) -> list[Problem]:
    """apiVersion, strict decoding, then the kind's rules (only if it decodes)."""
    info = KINDS[kind]
    found: list[Problem] = list(_api_version(obj, info.api_versions))
    decoded = decode.check(kind, obj) if info.typed else []
    if decoded:
        return found + decoded
    return found + (info.rules or _no_rules)(normalize(kind, obj))


def normalize(kind: str, obj: Manifest) -> dict[str, Any]:
    """The object as the API server stores it after decoding (nulls gone); call after
    :func:`validate` found nothing."""
    return decode.normalize(kind, obj) if KINDS[kind].typed else dict(obj)


def validate_custom_resource(obj: Manifest) -> list[Problem]:
    """A SchedulerProfile or PluginConfig: apiVersion, top-level fields and metadata
    (the spec is the config models' to check, as the CRD schema is on the cluster)."""
    found: list[Problem] = list(_api_version(obj, (API_VERSION,)))
    found += [UnknownField(k) for k in obj if k not in ("apiVersion", "kind", "metadata", "spec", "status")]
    metadata = obj.get("metadata")
    decode_errors = decode.check_type("meta/v1.ObjectMeta", metadata, "metadata")
    if decode_errors:
        return found + decode_errors
    return found + meta.object_meta(metadata, content.dns1123_subdomain, namespaced=True)


def _api_version(obj: Manifest, supported: tuple[str, ...]) -> list[field.Error]:
    version = obj.get("apiVersion")
    if version is None or version == "":
        return [field.required("apiVersion", "")]
    if version not in supported:
        return [field.not_supported("apiVersion", version, supported)]
    return []
