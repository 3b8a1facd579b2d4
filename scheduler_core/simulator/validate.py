"""``crd-scheduler validate``: the operator's rules for SchedulerProfiles and PluginConfigs, offline.

A GitOps pipeline runs it on the manifests of a pull request; the admission webhook runs it on
the object being applied. Both get exactly what the operator would say, because both go the
way ``simulate`` goes: the API server's checks (:mod:`scheduler_core.config.schema_check`),
then the config models, then every profile built with the registry and its namespace's
PluginConfigs merged in (``runtime/build.py`` via ``run.check_plugin_configs`` and
``run.apply_profiles``, the code the operator's reconciler calls), over an empty cluster.

Other kinds in the folder are passed over: ``validate`` is about profiles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scheduler_core.names import PLUGIN_CONFIG_KIND, PROFILE_KIND
from scheduler_core.simulator.errors import InputError, Problem
from scheduler_core.simulator.manifests import (
    DEFAULT_HOME_NAMESPACE,
    Cluster,
    load_valid,
    parse_texts,
    read_sources,
)
from scheduler_core.simulator.run import simulate

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
    return cluster, problems + check(cluster, home_namespace=home_namespace, registry=registry)


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
    return problems + check(cluster, home_namespace=home_namespace, registry=registry)


def check(cluster: Cluster, *, home_namespace: str, registry: Mapping[str, Any] | None) -> list[Problem]:
    """Build every profile as the operator would; the problems."""
    # The same resolution as the operator (scheduler_core.resolution): a profile outside the
    # home namespace is checked against the tenant policy of its cluster-wide profile.
    empty = Cluster(profiles=cluster.profiles, plugin_configs=cluster.plugin_configs)
    try:
        simulate(empty, home_namespace=home_namespace, registry=registry)
    except InputError as exc:
        return exc.problems
    return []
