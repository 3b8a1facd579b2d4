"""The ``status`` of SchedulerProfiles and PluginConfigs, built from what the reconciler found.

Pure functions, so the shape is tested without a cluster. Conditions follow ``metav1.Condition``
(``type``, ``status``, ``reason``, ``message``, ``observedGeneration``, ``lastTransitionTime``,
which changes only when ``status`` does) and the kstatus conventions
(``sigs.k8s.io/cli-utils/pkg/kstatus/status``: ``Compute`` reads ``observedGeneration``, then
``Reconciling`` and ``Stalled``; Flux, Argo CD and ``kubectl wait --for=condition=Ready`` read
``Ready``). A SchedulerProfile has three of them:

* ``Ready``: the newest generation serves (reason ``Serving``). False when the newest generation
  was refused (reason ``SpecRejected``; the message says which generation still serves, if any)
  or when nothing serves for another reason (``NotServing``);
* ``Stalled``: True when the newest generation was refused (``SpecRejected``, the same message):
  kstatus computes ``Failed``, not ``InProgress`` for good, also for a profile that never worked;
* no ``Reconciling``: the operator reconciles a new generation as soon as it sees it, and
  until it has, ``status.observedGeneration`` is behind ``metadata.generation``, which kstatus
  reads as ``InProgress`` (and the Argo CD check as ``Progressing``);
* ``Valid``: the spec, merged with its namespace's PluginConfigs, builds a framework
  (reason ``Valid``, or ``InvalidProfile`` with every problem as ``field: reason``); kept for
  ``kubectl get`` and for tools that read it since v0.1.

and a warning the reconciler adds: ``DoubleServing``, True while another scheduler binds pods of
its schedulerName (``scheduler_operator.control.double_serving``); neither ``Ready`` nor ``Stalled``
heeds it, so kstatus still computes ``Current``.

``plugins`` lists the serving framework's plugins per extension point with score weights.
A PluginConfig has ``Valid`` (its own spec: ``Valid``, ``InvalidArgs`` or ``UnknownPlugin``),
and ``Ready``/``Stalled``: refused on its own, or refused by a profile it applies to (reason
``RefusedByProfile``, naming the profile and the policy's or the plugin's message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import Any

VALID = "Valid"
READY = "Ready"
STALLED = "Stalled"
REASON_VALID = "Valid"
REASON_SPEC_REJECTED = "SpecRejected"
REASON_REFUSED_BY_PROFILE = "RefusedByProfile"
REASON_APPLIED = "Applied"
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


def refused_message(generation: int | None, serving_generation: int | None, problems: Sequence[str]) -> str:
    """What ``Ready``/``Stalled`` say of a refused generation: which one still serves, and why."""
    if serving_generation is not None and serving_generation == generation:
        # The same generation built before, with the PluginConfigs of its namespace then.
        keeps = f"generation {generation} as last built (with the PluginConfigs then) keeps serving"
    elif serving_generation is not None:
        keeps = f"the last good generation {serving_generation} keeps serving"
    else:
        keeps = "no generation of this profile ever served: its pods wait"
    return problems_message([f"generation {generation} refused, {keeps}: {problems_message(problems)}"])


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
    cond = partial(condition, generation=generation, previous=(previous or {}).get("conditions") or [], now=now)
    serving = serving_generation is not None

    if problems:
        message = problems_message(problems)
        refused = refused_message(generation, serving_generation, problems)
        valid = cond(VALID, False, REASON_INVALID_PROFILE, message)
        ready = cond(READY, False, REASON_SPEC_REJECTED, refused)
        stalled = cond(STALLED, True, REASON_SPEC_REJECTED, refused)
    else:
        message = f"generation {generation} is serving"
        valid = cond(VALID, True, REASON_VALID, "")
        stalled = cond(STALLED, False, REASON_VALID, "")
        if serving:
            ready = cond(READY, True, REASON_SERVING, f"serving generation {serving_generation}")
        else:
            ready = cond(READY, False, REASON_NOT_SERVING, "no valid generation of this profile was ever served")
    return {
        "observedGeneration": generation,
        "conditions": [ready, stalled, valid],
        "plugins": dict(plugins) if serving and plugins is not None else None,
        "message": message,
    }


def plugin_config_status(
    *,
    generation: int | None,
    problems: Sequence[str],
    unknown_plugin: bool,
    profiles: Sequence[str],
    refusals: Sequence[str] = (),
    previous: Mapping[str, Any] | None,
    now: datetime,
) -> dict[str, Any]:
    """``problems``: the PluginConfig's own; ``refusals``: ``profile: reason`` from the profiles
    it applies to that refuse it (the tenant policy, the plugin's args in that profile)."""
    cond = partial(condition, generation=generation, previous=(previous or {}).get("conditions") or [], now=now)

    if problems:
        reason = REASON_UNKNOWN_PLUGIN if unknown_plugin else REASON_INVALID_ARGS
        message = problems_message(problems)
        valid = cond(VALID, False, reason, message)
        ready = cond(READY, False, reason, message)
        stalled = cond(STALLED, True, reason, message)
    elif refusals:
        message = problems_message([f"refused by profile {r}" for r in refusals])
        valid = cond(VALID, True, REASON_VALID, "")
        ready = cond(READY, False, REASON_REFUSED_BY_PROFILE, message)
        stalled = cond(STALLED, True, REASON_REFUSED_BY_PROFILE, message)
    else:
        message = (
            f"applies to profiles: {', '.join(profiles)}" if profiles else "no profile of this namespace selects it"
        )
        valid = cond(VALID, True, REASON_VALID, "")
        ready = cond(READY, True, REASON_APPLIED, "")  # status.message lists the profiles
        stalled = cond(STALLED, False, REASON_APPLIED, "")
    return {"observedGeneration": generation, "conditions": [ready, stalled, valid], "message": message}


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
