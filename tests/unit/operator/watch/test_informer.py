"""The store between Kopf's watch events and the scheduler's add/update/delete calls."""

from __future__ import annotations

from typing import Any

import pytest

from scheduler_core.framework import Manifest
from scheduler_operator.watch.informer import Store, name_of, uid_of


def obj(name: str, uid: str, rv: str, **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": uid, "resourceVersion": rv}, **extra}


class Calls:
    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    def add(self, body: Manifest) -> None:
        self.seen.append(("add", body["metadata"]["uid"]))

    def update(self, old: Manifest, new: Manifest) -> None:
        self.seen.append(("update", old["metadata"]["resourceVersion"], new["metadata"]["resourceVersion"]))

    def delete(self, body: Manifest) -> None:
        self.seen.append(("delete", body["metadata"]["uid"]))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def store(key: Any = uid_of, clock: Clock | None = None) -> tuple[Store, Calls]:
    calls = Calls()
    return Store("Thing", key=key, on_add=calls.add, on_update=calls.update, on_delete=calls.delete,
                 clock=clock or Clock()), calls  # fmt: skip


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        pytest.param([(None, obj("a", "u1", "1"))], [("add", "u1")], id="listed-is-added"),
        pytest.param(
            [("ADDED", obj("a", "u1", "1")), ("MODIFIED", obj("a", "u1", "2"))],
            [("add", "u1"), ("update", "1", "2")], id="modified-is-updated-from-the-last-body",
        ),
        pytest.param(
            [("ADDED", obj("a", "u1", "1")), (None, obj("a", "u1", "1"))],
            [("add", "u1")], id="relisted-unchanged-is-nothing",
        ),
        pytest.param(
            [("ADDED", obj("a", "u1", "1")), ("DELETED", obj("a", "u1", "3"))],
            [("add", "u1"), ("delete", "u1")], id="deleted",
        ),
        pytest.param([("DELETED", obj("a", "u1", "3"))], [], id="deleted-unknown-is-nothing"),
    ],
)  # fmt: skip
def test_events_become_calls(events: list[tuple[str | None, dict[str, Any]]], expected: list[tuple[str, ...]]) -> None:
    things, calls = store()

    for event_type, body in events:
        things.handle(event_type, body)

    assert calls.seen == expected


@pytest.mark.parametrize(
    "order",
    [
        pytest.param(["DELETED", "ADDED"], id="delete-first"),
        pytest.param(["ADDED", "DELETED"], id="re-created-first"),
    ],
)
def test_a_node_re_created_under_its_name_stays_known_in_either_order(order: list[str]) -> None:
    nodes, calls = store(key=name_of)
    nodes.handle("ADDED", obj("n1", "old", "1"))
    events = {"DELETED": obj("n1", "old", "2"), "ADDED": obj("n1", "new", "3")}

    for event_type in order:
        nodes.handle(event_type, events[event_type])

    assert uid_of(nodes.get("n1") or {}) == "new"
    assert calls.seen[-1][0] in ("add", "update")


def test_a_relist_announces_a_pod_re_created_under_its_name_before_the_old_ones_delete() -> None:
    """Keyed by UID, a re-list adds the new pod first and deletes the old one after, the order
    the scheduler's queue (keyed by namespace/name) must survive
    (tests/unit/scheduling/test_recreated_pod.py)."""
    pods, calls = store()
    pods.handle("ADDED", obj("without-label", "old", "1"))

    pods.replace([obj("without-label", "new", "5")])

    assert calls.seen[1:] == [("add", "new"), ("delete", "old")]


def test_resync_deletes_what_a_later_list_lacks_but_keeps_what_came_after_it() -> None:
    clock = Clock()
    pods, calls = store(clock=clock)
    pods.handle(None, obj("a", "u1", "1"))
    pods.handle(None, obj("b", "u2", "1"))
    clock.now = 10.0
    pods.handle("ADDED", obj("c", "u3", "1"))  # arrives after the list started at 5

    deleted = pods.resync(listed_keys={"u1"}, listed_since=5.0)

    assert [uid_of(b) for b in deleted] == ["u2"]
    assert sorted(pods) == ["u1", "u3"]
    assert calls.seen[-1] == ("delete", "u2")


def test_missing_tells_what_the_store_has_not_caught_up_with() -> None:
    pods, _ = store()
    pods.handle(None, obj("a", "u1", "1"))
    pods.handle("ADDED", obj("b", "u2", "1"))
    pods.handle("DELETED", obj("b", "u2", "2"))

    assert pods.missing({"u1": "u1", "u2": "u2", "u3": "u3"}) == ["u3"]  # u2: seen deleted since the list


def test_the_version_changes_with_every_change_of_the_store_and_only_then() -> None:
    """``objects_version`` of the operator's backend: what a plugin keeps across cycles is keyed
    by it, so a body replaced, deleted, re-listed or dropped by a list must change it, and no
    number may come back, even from a store made anew."""
    things, _ = store(key=name_of)
    seen = [things.version]

    def changed() -> None:
        assert things.version not in seen
        seen.append(things.version)

    things.handle("ADDED", obj("a", "u1", "1"))
    changed()
    things.handle("MODIFIED", obj("a", "u1", "2"))
    changed()
    things.handle(None, obj("a", "u1", "2"))  # re-listed: another object of the same version
    changed()
    things.handle("DELETED", obj("a", "other-uid", "3"))  # not the stored one: nothing changed
    assert things.version == seen[-1]
    things.handle("DELETED", obj("a", "u1", "3"))
    changed()
    things.handle("ADDED", obj("b", "u2", "1"))
    changed()
    things.replace([obj("c", "u3", "1")])  # c added, b dropped
    changed()
    assert things.resync(listed_keys={"c"}, listed_since=1.0) == []
    assert things.version == seen[-1]
    assert things.resync(listed_keys=set(), listed_since=1.0) != []
    changed()
    again, _ = store(key=name_of)
    assert again.version not in seen
