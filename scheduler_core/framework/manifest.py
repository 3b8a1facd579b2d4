"""Kubernetes objects as the scheduler receives them: plain manifests, and their common fields.

Objects reach plugins and the runtime as decoded JSON (``handle.objects(kind)``, the events of a
queueing hint, the simulator's cluster). :data:`Manifest` is their one type, and the functions
below are the one way to read the fields every kind shares: ``metadata``, ``spec`` and
``status`` and the usual fields of ``metadata``. Each reads an absent or null field as empty,
as Go reads a zero value, so callers chain them without checks:
``manifest.meta(pod).get("ownerReferences")``.

Parsed, typed forms of particular kinds live beside the code that needs them: pods and nodes in
:mod:`~scheduler_core.framework.types`, storage objects in
:mod:`~scheduler_core.framework.storage`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Manifest = Mapping[str, Any]
"""A Kubernetes object (or any object-shaped part of one) as decoded JSON."""

DEFAULT_NAMESPACE = "default"


def meta(obj: Manifest) -> Manifest:
    """``metadata``, empty when absent."""
    result: Manifest = obj.get("metadata") or {}
    return result


def spec(obj: Manifest) -> Manifest:
    """``spec``, empty when absent."""
    result: Manifest = obj.get("spec") or {}
    return result


def status(obj: Manifest) -> Manifest:
    """``status``, empty when absent."""
    result: Manifest = obj.get("status") or {}
    return result


def name_of(obj: Manifest) -> str:
    """``metadata.name``, "" when absent."""
    return str(meta(obj).get("name") or "")


def namespace_of(obj: Manifest) -> str:
    """``metadata.namespace`` of a namespaced object; "default" when absent, as the API
    server defaults it."""
    return str(meta(obj).get("namespace") or DEFAULT_NAMESPACE)


def uid_of(obj: Manifest) -> str:
    """``metadata.uid``, "" when absent."""
    return str(meta(obj).get("uid") or "")


def labels_of(obj: Manifest) -> Mapping[str, str]:
    """``metadata.labels``, empty when absent."""
    result: Mapping[str, str] = meta(obj).get("labels") or {}
    return result


def annotations_of(obj: Manifest) -> Mapping[str, str]:
    """``metadata.annotations``, empty when absent."""
    result: Mapping[str, str] = meta(obj).get("annotations") or {}
    return result
