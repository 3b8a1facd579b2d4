"""Watch events in, add/update/delete calls out: the informer between the watches and the scheduler.

A watch event carries the object's new body only (Kopf's handlers, and the operator's own
reflectors, ``scheduler_operator.watch.reflector``); the scheduler's
entry points (``on_pod_update(old, new)``...) want the previous one too, so a :class:`Store`
keeps the last body seen per object, as client-go's informer store does, and turns events into
calls:

* a listed object (Kopf's event type ``None``) or ADDED/MODIFIED → ``add`` the first time,
  ``update(old, new)`` after (skipped when the resourceVersion did not change: a re-list);
* DELETED → ``delete(last body)``, only for an object the store holds.

Objects are keyed by ``key`` (pods by uid, nodes by name). When an object is deleted and
re-created under the same key, Kopf's per-object workers may deliver the new object's ADDED
before the old one's DELETED: the store then treats ADDED as an update from the old body, and
ignores the DELETED whose uid no longer matches.

A list replaces the store's content (:meth:`Store.replace`, the reflector's list and its
re-list after 410 Gone): what the list lacks is deleted. Kopf re-lists after a watch expires
without announcing what vanished meanwhile; for the kinds it watches, :meth:`Store.resync`
compares the store with a fresh list and deletes the objects gone.

Each store counts its changes (``version``, the backend's ``objects_version``): every body
added, replaced or dropped takes a fresh number from one sequence shared by all stores, after
the store changed, so a number is never seen twice, even across stores made anew.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping

from scheduler_core.framework import Manifest, manifest

DELETED = "DELETED"
MAX_REMEMBERED_DELETIONS = 10_000

_changes = itertools.count(1)


# The store keys: pods by uid, nodes by name, the rest by namespaced_name_of.
uid_of = manifest.uid_of
name_of = manifest.name_of


def namespaced_name_of(body: Manifest) -> str:
    """``namespace/name``; the namespace is empty for a cluster-scoped object (not
    :func:`manifest.namespace_of`'s "default")."""
    return f"{manifest.meta(body).get('namespace') or ''}/{manifest.name_of(body)}"


def _resource_version(body: Manifest) -> str | None:
    rv = manifest.meta(body).get("resourceVersion")
    return str(rv) if rv is not None else None


class Store:
    def __init__(
        self,
        kind: str,
        *,
        key: Callable[[Manifest], str],
        on_add: Callable[[Manifest], None],
        on_update: Callable[[Manifest, Manifest], None] = lambda _old, _new: None,
        on_delete: Callable[[Manifest], None] = lambda _old: None,
        on_vanished: Callable[[Manifest], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kind = kind
        self._key = key
        self._on_add = on_add
        self._on_update = on_update
        self._on_delete = on_delete
        # Deleted unseen (a list lacks it): only its last known body is left, which may be
        # older than the deletion; default: as any delete.
        self._on_vanished = on_vanished or on_delete
        self._clock = clock
        self._bodies: dict[str, Manifest] = {}
        self._seen: dict[str, float] = {}
        # uids seen deleted lately (for the sync check), oldest first, bounded
        self._deleted_uids: dict[str, None] = {}
        self.version = next(_changes)

    def handle(self, event_type: str | None, body: Manifest) -> None:
        key = self._key(body)
        if event_type == DELETED:
            self._deleted_uids[uid_of(body)] = None
            if len(self._deleted_uids) > MAX_REMEMBERED_DELETIONS:
                del self._deleted_uids[next(iter(self._deleted_uids))]
            old = self._bodies.get(key)
            if old is None or uid_of(old) != uid_of(body):
                return
            del self._bodies[key]
            self._seen.pop(key, None)
            self.version = next(_changes)
            self._on_delete(body)
            return
        old = self._bodies.get(key)
        self._bodies[key] = body
        self._seen[key] = self._clock()
        self.version = next(_changes)  # a re-listed body too: it is another object
        if old is None:
            self._on_add(body)
        elif _resource_version(old) != _resource_version(body) or _resource_version(body) is None:
            self._on_update(old, body)

    def replace(
        self, bodies: Iterable[Manifest], *, on_error: Callable[[str | None, Manifest], None] | None = None
    ) -> list[Manifest]:
        """A complete list: add or update every listed object, delete every other; return the
        deleted. ``on_error(event_type, body)`` is told of an object whose handling raised (the
        others go on); without it the error propagates."""
        return self.drop_unlisted(self.add_listed(bodies, on_error=on_error), on_error=on_error)

    def add_listed(
        self, bodies: Iterable[Manifest], *, on_error: Callable[[str | None, Manifest], None] | None = None
    ) -> set[str]:
        """One page of a list: add or update each object; return their keys. The list's last
        page is followed by :meth:`drop_unlisted` with every page's keys (:meth:`replace` in
        steps, so a reflector can apply a page while the next one is on its way)."""
        listed: set[str] = set()
        for body in bodies:
            listed.add(self._key(body))
            try:
                self.handle(None, body)
            except Exception:
                if on_error is None:
                    raise
                on_error(None, body)
        return listed

    def drop_unlisted(
        self, listed: Collection[str], *, on_error: Callable[[str | None, Manifest], None] | None = None
    ) -> list[Manifest]:
        """The end of a complete list: delete every object it did not hold; return them."""
        deleted = []
        for key in [k for k in self._bodies if k not in listed]:
            body = self._bodies.pop(key)
            self._seen.pop(key, None)
            self.version = next(_changes)
            deleted.append(body)
            try:
                self._on_vanished(body)
            except Exception:
                if on_error is None:
                    raise
                on_error(DELETED, body)
        return deleted

    def resync(self, listed_keys: Collection[str], listed_since: float) -> list[Manifest]:
        """Delete what a list started at ``listed_since`` no longer holds; return what was deleted.

        An object seen after the list started may be newer than the list: it is kept."""
        newer = {key for key, seen in self._seen.items() if seen >= listed_since}
        return self.drop_unlisted(newer.union(listed_keys))

    def missing(self, listed: Mapping[str, str]) -> list[str]:
        """Keys of a list (key → uid) the store has not caught up with yet."""
        return [
            key for key, uid in listed.items()
            if uid not in self._deleted_uids and uid_of(self._bodies.get(key) or {}) != uid
        ]  # fmt: skip

    def get(self, key: str) -> Manifest | None:
        return self._bodies.get(key)

    def values(self) -> list[Manifest]:
        return list(self._bodies.values())

    def __len__(self) -> int:
        return len(self._bodies)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._bodies))
