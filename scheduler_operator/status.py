"""The ``status`` of SchedulerProfiles and PluginConfigs, built from what the reconciler found.

Pure functions, so the shape is tested without a cluster. Conditions follow ``metav1.Condition``
(``type``, ``status``, ``reason``, ``message``, ``observedGeneration``, ``lastTransitionTime``,
which changes only when ``status`` does). A SchedulerProfile has two:

* ``Valid``: the spec, merged with its namespace's PluginConfigs, builds a framework
  (reason ``Valid``, or ``InvalidProfile`` with every problem as ``field: reason``);
* ``Ready``: some framework serves the profile's pods (reason ``Serving``: the current
  generation, or the last valid build while the current spec or a PluginConfig of the
  namespace is invalid; ``NotServing`` when none ever was valid).

``plugins`` lists the serving framework's plugins per extension point with score weights.
A PluginConfig has ``Valid`` only (``Valid``, ``InvalidArgs`` or ``UnknownPlugin``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

VALID = "Valid"
READY = "Ready"
REASON_VALID = "Valid"
REASON_INVALID_PROFILE = "InvalidProfile"
REASON_SERVING = "Serving"
REASON_NOT_SERVING = "NotServing"
REASON_INVALID_ARGS = "InvalidArgs"
REASON_UNKNOWN_PLUGIN = "UnknownPlugin"
MAX_MESSAGE_LENGTH = 4096


def timestamp(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def problems_message(problems: Sequence[str]) -> str:
    message = "; ".join(problems)
    return message if len(message) <= MAX_MESSAGE_LENGTH else message[: MAX_MESSAGE_LENGTH - 4] + " ..."


def condition(
    kind: str,
    ok: bool,
    reason: str,
    message: str,
    *,
    generation: int | None,
    previous: Sequence[Mapping[str, Any]],
    now: datetime,
) -> dict[str, Any]:
    status = "True" if ok else "False"
    before = next((c for c in previous if c.get("type") == kind), None)
    since = before.get("lastTransitionTime") if before is not None and before.get("status") == status else None
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": since or timestamp(now),
    }


def profile_status(
    *,
    generation: int | None,
    problems: Sequence[str],
    serving_generation: int | None,
    plugins: Mapping[str, list[dict[str, object]]] | None,
    previous: Mapping[str, Any] | None,
    now: datetime,
) -> dict[str, Any]:
    """Status after reconciling ``generation``: valid when ``problems`` is empty."""
    before = (previous or {}).get("conditions") or []
    serving = serving_generation is not None
    if problems:
        message = problems_message(problems)
        valid = condition(
            VALID, False, REASON_INVALID_PROFILE, message, generation=generation, previous=before, now=now
        )
    else:
        message = f"generation {generation} is serving"
        valid = condition(VALID, True, REASON_VALID, "", generation=generation, previous=before, now=now)
    if not serving:
        ready_message = "no valid generation of this profile was ever served"
        ready = condition(
            READY, False, REASON_NOT_SERVING, ready_message, generation=generation, previous=before, now=now
        )
    else:
        if problems:
            ready_message = f"serving the last valid build (generation {serving_generation})"
        else:
            ready_message = f"serving generation {serving_generation}"
        ready = condition(READY, True, REASON_SERVING, ready_message, generation=generation, previous=before, now=now)
    return {
        "observedGeneration": generation,
        "conditions": [valid, ready],
        "plugins": dict(plugins) if serving and plugins is not None else None,
        "message": message,
    }


def plugin_config_status(
    *,
    generation: int | None,
    problems: Sequence[str],
    unknown_plugin: bool,
    profiles: Sequence[str],
    previous: Mapping[str, Any] | None,
    now: datetime,
) -> dict[str, Any]:
    before = (previous or {}).get("conditions") or []
    if problems:
        reason = REASON_UNKNOWN_PLUGIN if unknown_plugin else REASON_INVALID_ARGS
        message = problems_message(problems)
        valid = condition(VALID, False, reason, message, generation=generation, previous=before, now=now)
    else:
        message = (
            f"applies to profiles: {', '.join(profiles)}" if profiles else "no profile of this namespace selects it"
        )
        valid = condition(VALID, True, REASON_VALID, "", generation=generation, previous=before, now=now)
    return {"observedGeneration": generation, "conditions": [valid], "message": message}


def _comparable(status: Mapping[str, Any] | None) -> dict[str, Any]:
    """A status without transition times and empty fields, to tell whether a write is needed."""
    out: dict[str, Any] = {}
    for key, value in (status or {}).items():
        if key == "kopf" or value is None:
            continue
        if key == "conditions":
            value = sorted(
                ({k: v for k, v in c.items() if k != "lastTransitionTime" and v not in (None, "")} for c in value),
                key=lambda c: str(c.get("type")),
            )
        out[key] = value
    return out


def needs_write(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    return _comparable(current) != _comparable(desired)


def merge_patch(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch of ``status`` from ``current`` to ``desired`` (a merge patch merges
    maps key by key, so extension points no longer served must be nulled explicitly)."""
    patch = dict(desired)
    old_plugins = (current or {}).get("plugins") or {}
    new_plugins = desired.get("plugins")
    if new_plugins is not None and old_plugins:
        patch["plugins"] = {**{point: None for point in old_plugins if point not in new_plugins}, **new_plugins}
    return patch
