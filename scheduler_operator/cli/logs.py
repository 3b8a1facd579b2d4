"""How the long-running verbs (``run``, ``extender serve``) log: text or JSON, one line a record.

``--log-format text`` (the default) is ``time level logger: message``. ``--log-format json``
writes one JSON object per line, as kube components do with ``--logging-format=json``
(component-base/logs/json): ``ts`` (seconds since the epoch, a float), ``level``, ``msg``, the
``logger``, and the structured keys a record carries (:data:`KEYS`, given by the call site as
``extra=``: the pod, node and profile of a binding or a scheduling failure), ``err`` for an
exception. The formatter is python-json-logger's.

``-v N`` maps upstream's verbosity to a level: 0-3 INFO (what kube-scheduler logs at its default
``-v=2``), 4 and more DEBUG (upstream logs each scheduling attempt at 4, ``-v=10`` traces);
``--log-level`` names a level directly and wins when both are given.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from pythonjsonlogger.json import JsonFormatter

FORMATS = ("text", "json")
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
KEYS = ("pod", "node", "profile", "uid")
DEBUG_VERBOSITY = 4  # upstream's "debug" verbosity: klog V(4)


class _Json(JsonFormatter):
    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        log_data["ts"] = record.created
        log_data["level"] = record.levelname.lower()
        log_data["msg"] = record.getMessage()
        log_data["logger"] = record.name
        for key in KEYS:
            value = getattr(record, key, None)
            if value is not None:
                log_data[key] = value
        if record.exc_info:
            log_data["err"] = self.formatException(record.exc_info)


def level_of(verbosity: int | None, level: str | None) -> str:
    """The logging level of ``-v`` and ``--log-level`` (see the module docstring)."""
    if level:
        return level
    if verbosity is not None and verbosity >= DEBUG_VERBOSITY:
        return "DEBUG"
    return "INFO"


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a record comes (as ``logging.lastResort``), not
    to the stream it was made with, which may be closed by then (a test's captured stderr)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _: Any) -> None:
        pass


def configure(log_format: str, level: str) -> None:
    """Send every record to stderr in ``log_format`` (``text`` or ``json``). A second call
    replaces the handler of the first; other handlers on the root logger stay."""
    handler = _Stderr()
    handler.setFormatter(_Json() if log_format == "json" else logging.Formatter(TEXT))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Stderr)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
