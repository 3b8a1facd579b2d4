"""``crd-scheduler validate``: the operator's rules for SchedulerProfiles and PluginConfigs, offline.

A GitOps pipeline runs it on the manifests of a pull request; the admission webhook runs it on
the object being applied. Both get exactly what the operator would say, because both go the
way ``simulate`` goes: the API server's checks (:mod:`scheduler_core.config.schema_check`),
then the config models, then :func:`scheduler_core.resolution.validate`, the one entry all three
share: every PluginConfig checked, every profile built with the registry and its namespace's
PluginConfigs merged in (``resolution.apply``, the code the operator's reconciler calls). Here
the frameworks are built and dropped, synchronously: no scheduler, no event loop.

Other kinds in the folder are passed over: ``validate`` is about profiles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_core import resolution
from scheduler_core.defaults import DEFAULT_PROFILE_NAME, default_profile_spec
from scheduler_core.names import PLUGIN_CONFIG_KIND, PROFILE_KIND
from scheduler_core.profiles import ProfileKey
from scheduler_core.simulator.errors import Problem
from scheduler_core.simulator.manifests import (
    DEFAULT_HOME_NAMESPACE,
    Cluster,
    PluginConfigObject,
    ProfileObject,
    load_valid,
    parse_texts,
    read_sources,
)

KINDS = (PROFILE_KIND, PLUGIN_CONFIG_KIND)


def validate_files(
    paths: Sequence[str], *, home_namespace: str = DEFAULT_HOME_NAMESPACE, registry: Mapping[str, Any] | None = None
) -> tuple[Cluster, list[Problem]]:
    """The profiles and plugin configs that read well, and every problem (empty when all are
    valid): the ones that read well are built even when others did not."""
    problems: list[Problem] = []
    texts = read_sources(paths, problems)
    documents = parse_texts(texts, problems)
    cluster = load_valid(documents, home_namespace=home_namespace, kinds=KINDS, problems=problems)
    return cluster, problems + profile_problems(cluster, home_namespace=home_namespace, registry=registry)


def validate_objects(
    objects: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    home_namespace: str = DEFAULT_HOME_NAMESPACE,
    registry: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """The same rules for objects already parsed, ``(source, object)`` (the webhook's case)."""
    documents = [(source, f"object {i}", obj) for i, (source, obj) in enumerate(objects, start=1)]
    problems: list[Problem] = []
    cluster = load_valid(documents, home_namespace=home_namespace, kinds=KINDS, problems=problems)
    return problems + profile_problems(cluster, home_namespace=home_namespace, registry=registry)


def profile_problems(
    cluster: Cluster,
    *,
    home_namespace: str,
    registry: Mapping[str, Any] | None,
    into: resolution.ProfileServer | None = None,
    builtin_default: bool = True,
) -> list[Problem]:
    """:func:`scheduler_core.resolution.validate` of the cluster's profiles and PluginConfigs,
    each problem once, naming its file and object. Without profiles in the input, the built-in
    default is built when ``builtin_default`` (not on a live snapshot: there, as in the operator,
    no profile means no pod is ours), with the home namespace's PluginConfigs merged in."""
    profiles = cluster.profiles or [
        ProfileObject(ProfileKey(home_namespace, DEFAULT_PROFILE_NAME), {}, default_profile_spec(), "<built-in>")
        for _ in range(1 if builtin_default else 0)
    ]
    findings = resolution.validate(
        profiles, cluster.plugin_configs, home_namespace=home_namespace, registry=registry, into=into
    )
    return list(dict.fromkeys(_problem(f) for f in findings))  # a PluginConfig's problem once, not per profile


def _problem(finding: resolution.Finding) -> Problem:
    obj = finding.obj
    if isinstance(obj, PluginConfigObject):
        return Problem(obj.source, obj.what, finding.field, finding.reason)
    assert isinstance(obj, ProfileObject)
    return Problem(obj.source, f"{PROFILE_KIND} {obj.key}", finding.field, finding.reason)
