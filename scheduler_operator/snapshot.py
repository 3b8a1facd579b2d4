"""A read-only snapshot of a live cluster, for ``explain`` and ``simulate --from-cluster``.

Credentials as kubectl finds them (``--kubeconfig``, else ``KUBECONFIG``, else
``~/.kube/config``, with ``--context``; in a pod, its service account). Only list calls are
made (GET, paginated): nodes, pods, the SchedulerProfiles and PluginConfigs, PriorityClasses and
every kind the operator watches for its plugins (``resources.OBJECT_KINDS``). The objects go
through the simulator's manifest checks and defaulting (``load_lists``) as a file would, so
the in-memory cluster the scheduler then runs on is the one ``simulate`` uses.

A kind the identity may not list (403) or the server does not serve (404, e.g. the CRDs not
installed), or whose list holds an object too deeply nested to decode, is left out with a
warning: the snapshot is then what that identity can see.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from kubernetes import client, config

from scheduler_core.simulator import Cluster, load_lists
from scheduler_operator import kube
from scheduler_operator.resources import (
    GROUP,
    OBJECT_KINDS,
    PLUGIN_CONFIG_KIND,
    PLUGIN_CONFIG_PLURAL,
    PROFILE_KIND,
    PROFILE_PLURAL,
    VERSION,
)

LIST_PAGE = 500
JSON_DEPTH = 12_000  # above the API server's own nesting limit
_CORE_LISTS = {
    "nodes": "list_node",
    "pods": "list_pod_for_all_namespaces",
    "namespaces": "list_namespace",
    "services": "list_service_for_all_namespaces",
    "replicationcontrollers": "list_replication_controller_for_all_namespaces",
    "persistentvolumeclaims": "list_persistent_volume_claim_for_all_namespaces",
    "persistentvolumes": "list_persistent_volume",
}


def api_client(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    """An ApiClient with kubectl's credentials: a kubeconfig (flag, env, home), else in-cluster."""
    configuration = client.Configuration()
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
    except config.ConfigException:
        if kubeconfig or context:
            raise
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration)


def _kinds() -> list[tuple[str, str, tuple[str, ...]]]:
    """(kind, core method or "", custom-object args) of every list the snapshot makes."""
    kinds: list[tuple[str, str, tuple[str, ...]]] = [
        ("Node", _CORE_LISTS["nodes"], ()),
        ("Pod", _CORE_LISTS["pods"], ()),
        (PROFILE_KIND, "", (GROUP, VERSION, PROFILE_PLURAL)),
        (PLUGIN_CONFIG_KIND, "", (GROUP, VERSION, PLUGIN_CONFIG_PLURAL)),
        ("PriorityClass", "", ("scheduling.k8s.io", "v1", "priorityclasses")),
    ]
    for kind in OBJECT_KINDS:
        if kind.group:
            kinds.append((kind.kind, "", (kind.group, kind.version, kind.plural)))
        else:
            kinds.append((kind.kind, _CORE_LISTS[kind.plural], ()))
    return kinds


def list_all(api: client.ApiClient) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """Every object by kind, and a warning per kind that could not be listed."""
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    lists: dict[str, list[dict[str, Any]]] = {}
    warnings: list[str] = []
    for kind, method, args in _kinds():
        fn: Callable[..., Any] = getattr(core, method) if method else custom.list_cluster_custom_object
        try:
            lists[kind] = _paginate(fn, args)
        except RecursionError:  # an object nested deeper than Python's JSON decoder goes
            warnings.append(f"{kind}: cannot read (an object nests too deeply to decode); the snapshot has none")
        except kube.ApiError as error:
            if error.status not in (HTTPStatus.FORBIDDEN, HTTPStatus.NOT_FOUND):
                raise
            why = "forbidden for this identity" if error.status == HTTPStatus.FORBIDDEN else "not served"
            warnings.append(f"{kind}: cannot list ({why}); the snapshot has none")
    return lists, warnings


def _paginate(fn: Callable[..., Any], args: tuple[str, ...]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"limit": LIST_PAGE}
        if token:
            kwargs["_continue"] = token
        page = _deep_json(fn, *args, **kwargs)
        items.extend(page.get("items") or [])
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items


def _deep_json(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``kube.call_json``, decoding as deep as the API server accepts (Go's encoding/json
    stops at 10,000 levels; Python's decoder at its recursion limit, 1,000 by default)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, JSON_DEPTH))
    try:
        return kube.retrying(kube.call_json, fn, *args, **kwargs)
    finally:
        sys.setrecursionlimit(limit)


def take(api: client.ApiClient, *, home_namespace: str, server: str = "") -> Cluster:
    """The live cluster as the simulator's :class:`Cluster` (raises ``InputError`` for objects
    the manifest checks refuse, naming them)."""
    lists, warnings = list_all(api)
    cluster = load_lists(f"cluster {server}".strip(), lists, home_namespace=home_namespace, stored=True)
    cluster.warnings[:0] = warnings
    for profile in lists.get(PROFILE_KIND) or []:
        meta, conditions = profile.get("metadata") or {}, (profile.get("status") or {}).get("conditions")
        if isinstance(conditions, list):
            key = f"{meta.get('namespace')}/{meta.get('name')}"
            cluster.profile_conditions[key] = [c for c in conditions if isinstance(c, dict)]
    return cluster
