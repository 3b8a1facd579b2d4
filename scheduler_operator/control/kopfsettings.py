"""Kopf's settings for an operator made of event handlers only.

Kopf keeps, for every watch event, a copy of the object's "essence" (a deep copy of spec,
labels and annotations) and handler progress, to detect changes for create/update handlers.
This operator has none (``scheduler_operator.control.handlers``), so both storages are no-ops: on a
cluster of thousands of pods, the deep copies were the largest cost of handling a watch event
on the event loop that also runs the scheduling cycles. Nothing is ever written on objects.

Other settings: Kopf posts no events of its own (the operator posts its own, events.k8s.io/v1);
peering is off (a Lease elects the leader); its watches have a server-side and a client-side
timeout, so a silently dead connection is dropped and the watch resumed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import kopf

from scheduler_operator.watch.reflector import IDLE_MARGIN, WATCH_TIMEOUT


class NoDiffBaseStorage(kopf.DiffBaseStorage):
    """No change handlers: nothing to diff, nothing to store."""

    def build(self, *, body: Any, extra_fields: Iterable[Any] | None = None) -> Any:
        return {}

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


class NoProgressStorage(kopf.ProgressStorage):
    """No change handlers: no progress to keep."""

    def fetch(self, *, key: Any, body: Any) -> Any:
        return None

    def store(self, *, key: Any, record: Any, body: Any, patch: Any) -> None:
        return None

    def purge(self, *, key: Any, body: Any, patch: Any) -> None:
        return None

    def touch(self, *, body: Any, patch: Any, value: str | None) -> None:
        return None

    def clear(self, *, essence: Any) -> Any:
        return essence


def kopf_settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.posting.enabled = False
    settings.peering.standalone = True
    settings.persistence.diffbase_storage = NoDiffBaseStorage()
    settings.persistence.progress_storage = NoProgressStorage()
    settings.watching.connect_timeout = 10
    # A watch the server ends every minute, and a read idle for longer is a dead connection
    # (as the operator's own reflectors: scheduler_operator.watch.reflector).
    settings.watching.server_timeout = WATCH_TIMEOUT
    settings.watching.client_timeout = WATCH_TIMEOUT + IDLE_MARGIN
    settings.networking.request_timeout = 60
    return settings
