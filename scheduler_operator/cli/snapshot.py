"""A read-only snapshot of a live cluster, for ``explain`` and ``simulate --from-cluster``.

Credentials as kubectl finds them (``--kubeconfig``, else ``KUBECONFIG``, else
``~/.kube/config``, with ``--context``; in a pod, its service account). Only list calls are
made (GET, paginated), through the operator's HTTP layer (``scheduler_operator.io.transport``: its
timeouts, retries and error type): nodes, pods, the SchedulerProfiles and PluginConfigs,
PriorityClasses and every kind the operator watches for its plugins
(``resources.OBJECT_KINDS``). The objects go through the simulator's manifest checks and
defaulting (``load_lists``) as a file would, so the in-memory cluster the scheduler then runs
on is the one ``simulate`` uses.

A kind the identity may not list (403) or the server does not serve (404, e.g. the CRDs not
installed) is left out with a warning: the snapshot is then what that identity can see. Objects
are decoded as deep as the API server accepts them (Go's encoding/json stops at 10,000 levels;
Python's decoder at its recursion limit, 1,000 by default); a value nested deeper still would be
replaced by ``decoding.TOO_DEEP``.
"""

from __future__ import annotations

import sys
from http import HTTPStatus
from typing import Any

from scheduler_core.simulator import Cluster, load_lists
from scheduler_operator.io.kube import ApiError, KubeconfigSource
from scheduler_operator.io.transport import Credentials, Transport
from scheduler_operator.resources import NODES, OBJECT_KINDS, PLUGIN_CONFIGS, PODS, PROFILES, Resource

JSON_DEPTH = 12_000  # above the API server's own nesting limit
PRIORITY_CLASSES = Resource("PriorityClass", "scheduling.k8s.io", "v1", "priorityclasses")
KINDS = (NODES, PODS, PROFILES, PLUGIN_CONFIGS, PRIORITY_CLASSES, *OBJECT_KINDS)  # every list the snapshot makes


def credentials(kubeconfig: str | None = None, context: str | None = None) -> Credentials:
    """kubectl's credentials: a kubeconfig (flag, env, home), else in-cluster."""
    return Credentials.load(KubeconfigSource(kubeconfig, context), in_cluster_first=False)


async def list_all(transport: Transport) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Every object by kind, and a warning per kind that could not be listed."""
    lists: dict[str, list[dict[str, Any]]] = {}
    warnings: list[str] = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, JSON_DEPTH))
    try:
        for resource in KINDS:
            try:
                lists[resource.kind] = await transport.list_items(resource.path)
            except ApiError as error:
                if error.status not in (HTTPStatus.FORBIDDEN, HTTPStatus.NOT_FOUND):
                    raise
                why = "forbidden for this identity" if error.status == HTTPStatus.FORBIDDEN else "not served"
                warnings.append(f"{resource.kind}: cannot list ({why}); the snapshot has none")
    finally:
        sys.setrecursionlimit(limit)
    return lists, warnings


async def take(credentials: Credentials, *, home_namespace: str) -> Cluster:
    """The live cluster as the simulator's :class:`Cluster` (raises ``InputError`` for objects
    the manifest checks refuse, naming them; ``ApiError`` or an ``OSError`` when the server
    cannot be read)."""
    transport = Transport(credentials)
    try:
        lists, warnings = await list_all(transport)
    finally:
        await transport.close()
    cluster = load_lists(f"cluster {credentials.server}", lists, home_namespace=home_namespace, stored=True)
    cluster.warnings[:0] = warnings
    for profile in lists.get(PROFILES.kind) or []:
        meta, conditions = profile.get("metadata") or {}, (profile.get("status") or {}).get("conditions")
        if isinstance(conditions, list):
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            cluster.profile_conditions[key] = [c for c in conditions if isinstance(c, dict)]
    return cluster
