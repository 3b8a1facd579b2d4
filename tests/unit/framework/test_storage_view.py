"""StorageView reads single objects through the lister's index (``Handle.lookup``) and lists a
kind only when a plugin asks for all of it; the in-memory cluster's index follows its writes."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework.storage import PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, StorageView
from scheduler_core.simulator.backend import InMemoryCluster
from scheduler_core.simulator.objects import ObjectTable


def _pvc(name: str, namespace: str | None = "team-a", **spec: Any) -> dict[str, Any]:
    meta = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": "v1", "kind": PERSISTENT_VOLUME_CLAIM, "metadata": meta, "spec": spec}


def _pv(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": PERSISTENT_VOLUME, "metadata": {"name": name}, "spec": spec}


class IndexOnly:
    """A lister whose kinds are too big to list: only lookups are allowed."""

    def __init__(self, cluster: InMemoryCluster) -> None:
        self.cluster = cluster
        self.lookups: list[tuple[str, str, str]] = []

    def objects(self, kind: str) -> list[Any]:
        raise AssertionError(f"listed {kind}")

    def lookup(self, kind: str, namespace: str, name: str) -> Any | None:
        self.lookups.append((kind, namespace, name))
        return self.cluster.lookup(kind, namespace, name)

    def objects_version(self, kind: str) -> int | None:
        return self.cluster.objects_version(kind)


def test_a_lookup_lists_nothing_and_is_remembered_for_the_cycle() -> None:
    cluster = InMemoryCluster(objects={PERSISTENT_VOLUME_CLAIM: [_pvc("data")], PERSISTENT_VOLUME: [_pv("vol")]})
    lister = IndexOnly(cluster)
    view = StorageView(lister)
    assert view.pvc("team-a", "data")["metadata"]["name"] == "data"
    assert view.pv("vol")["metadata"]["name"] == "vol"
    assert view.find(PERSISTENT_VOLUME_CLAIM, "data", "team-b") is None
    view.pvc("team-a", "data")
    assert lister.lookups == [
        (PERSISTENT_VOLUME_CLAIM, "team-a", "data"), (PERSISTENT_VOLUME, "", "vol"),
        (PERSISTENT_VOLUME_CLAIM, "team-b", "data"),
    ]  # fmt: skip


def test_the_in_memory_index_follows_creates_replacements_and_deletes() -> None:
    cluster = InMemoryCluster(objects={"PodDisruptionBudget": [{"metadata": {"name": "a", "namespace": "x"}}]})
    cluster.create_object("PodDisruptionBudget", {"metadata": {"name": "b", "namespace": "x"}})
    assert [o["metadata"]["name"] for o in cluster.objects("PodDisruptionBudget")] == ["a", "b"]
    replaced = cluster.replace_object("PodDisruptionBudget", {"metadata": {"name": "a", "namespace": "x"}, "spec": {}})
    assert replaced is not None
    old, new = replaced
    assert cluster.lookup("PodDisruptionBudget", "x", "a") is new is not old
    assert [o["metadata"]["name"] for o in cluster.objects("PodDisruptionBudget")] == ["a", "b"]  # kept its place
    assert cluster.delete_object("PodDisruptionBudget", "x", "a") is new
    assert cluster.lookup("PodDisruptionBudget", "x", "a") is None
    assert cluster.lookup("PodDisruptionBudget", "y", "b") is None


@pytest.mark.parametrize(
    ("kind", "obj", "namespace", "found"),
    [
        pytest.param(
            PERSISTENT_VOLUME_CLAIM, _pvc("c", namespace=None), "default", True, id="namespaced, unset: default"
        ),
        pytest.param(PERSISTENT_VOLUME_CLAIM, _pvc("c", namespace="a"), "b", False, id="namespaced, another namespace"),
        pytest.param(PERSISTENT_VOLUME, _pv("v"), "", True, id="cluster-scoped"),
        pytest.param(PERSISTENT_VOLUME, _pv("v"), "anything", True, id="cluster-scoped ignores the namespace"),
    ],
)
def test_the_table_keys_by_scope(kind: str, obj: dict[str, Any], namespace: str, found: bool) -> None:
    table = ObjectTable(kind, [obj])
    assert (table.get(namespace, obj["metadata"]["name"]) is obj) is found
