"""Validate a profile's ``extenders`` and build their clients, as kube-scheduler does at start.

Upstream: ``pkg/scheduler/apis/config/validation/validation.go`` (``validateExtenders``,
``validateExtendedResourceName``) and ``pkg/scheduler/scheduler.go`` (``buildExtenders``),
v1.36.3. Kept from upstream:

- a prioritizing extender needs a positive weight; at most one extender binds; managed resource
  names are extended resource names, each managed by one extender only;
- ignorable extenders are called after the others (``buildExtenders`` moves them to the tail);
- resources marked ``ignoredByScheduler`` replace NodeResourcesFit's ``ignoredResources`` (the
  extender decides whether they fit).

Added here, because a profile is edited live rather than read once at start: the TLS settings
and ``httpTimeout`` are checked at build time (upstream fails at start with the same messages).
Whether a tenant (non-home) profile may call an extender at all is the tenant policy's rule
``extenders`` (:mod:`scheduler_core.tenancy.policy`: listed in ``allowedExtenders``, no files).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from scheduler_core.config import Extender, PluginConfigEntry, SchedulerProfileSpec
from scheduler_core.extender.client import HTTPExtender, parse_duration
from scheduler_core.framework import content, is_extended_resource_name

NODE_RESOURCES_FIT = "NodeResourcesFit"
IGNORED_RESOURCES = "ignoredResources"

Problem = tuple[str, str]


def _invalid(value: Any, detail: str) -> str:
    """``field.Invalid(...).ErrorBody()``: Go prints strings quoted, numbers bare."""
    shown = f'"{value}"' if isinstance(value, str) else str(value)
    return f"Invalid value: {shown}: {detail}"


def validate_extenders(extenders: Sequence[Extender]) -> list[Problem]:
    """Upstream ``validateExtenders``, plus the checks upstream makes when it builds the client."""
    problems: list[Problem] = []
    binders = 0
    managed: set[str] = set()
    for i, ext in enumerate(extenders):
        path = f"extenders[{i}]"
        if ext.prioritize_verb and ext.weight <= 0:
            problems.append((f"{path}.weight", _invalid(ext.weight, "must have a positive weight applied to it")))
        if ext.bind_verb:
            binders += 1
        for j, resource in enumerate(ext.managed_resources):
            rpath = f"{path}.managedResources[{j}].name"
            messages = content.qualified_name(resource.name)  # IsQualifiedName: content.IsLabelKey
            problems.extend((rpath, _invalid(resource.name, m)) for m in messages)
            if not messages and not is_extended_resource_name(resource.name):
                problems.append((rpath, _invalid(resource.name, "is an invalid extended resource name")))
            if resource.name in managed:
                problems.append((rpath, _invalid(resource.name, "duplicate extender managed resource name")))
            managed.add(resource.name)
        problems.extend(_client_problems(path, ext))
    if binders > 1:
        found = f"found {binders} extenders implementing bind"
        problems.append(("extenders", _invalid(found, "only one extender can implement bind")))
    return problems


def _client_problems(path: str, ext: Extender) -> list[Problem]:
    """What ``NewHTTPExtender`` (``restclient.TLSConfigFor``) would refuse at start."""
    problems: list[Problem] = []
    if not ext.url_prefix.startswith(("http://", "https://")):
        problems.append((f"{path}.urlPrefix", _invalid(ext.url_prefix, "must be an http:// or https:// URL")))
    if ext.http_timeout:
        try:
            if parse_duration(ext.http_timeout) < 0:
                problems.append((f"{path}.httpTimeout", _invalid(ext.http_timeout, "must not be negative")))
        except ValueError as exc:
            problems.append((f"{path}.httpTimeout", str(exc)))
    tls = ext.tls_config
    if tls is not None:
        if tls.insecure and (tls.ca_data or tls.ca_file):
            problems.append(
                (f"{path}.tlsConfig", "specifying a root certificates file with the insecure flag is not allowed")
            )
        for name, value in (("certData", tls.cert_data), ("keyData", tls.key_data), ("caData", tls.ca_data)):
            if value:
                try:
                    base64.b64decode(value, validate=True)
                except (binascii.Error, ValueError):
                    problems.append((f"{path}.tlsConfig.{name}", "illegal base64 data"))
        if bool(tls.cert_data or tls.cert_file) != bool(tls.key_data or tls.key_file):
            problems.append((f"{path}.tlsConfig", "client certificate and key must be given together"))
    return problems


def build_extenders(spec: SchedulerProfileSpec) -> tuple[list[HTTPExtender], SchedulerProfileSpec]:
    """Validated clients (ignorable ones last) and the spec with the ignored resources applied.

    Raises ValueError with the problems; the caller turns them into its own error type."""
    if not spec.extenders:
        return [], spec
    problems = validate_extenders(spec.extenders)
    extenders: list[HTTPExtender] = []
    if not problems:
        try:
            built = [HTTPExtender(ext) for ext in spec.extenders]
        except (OSError, ValueError) as exc:  # unreadable CA/cert files, bad PEM
            problems.append(("extenders.tlsConfig", f"cannot load TLS material: {exc}"))
        else:
            extenders = [e for e in built if not e.ignorable] + [e for e in built if e.ignorable]
    if problems:
        raise ExtenderConfigError(problems)
    ignored = [r.name for ext in spec.extenders for r in ext.managed_resources if r.ignored_by_scheduler]
    return extenders, _with_ignored_resources(spec, ignored)


def _with_ignored_resources(spec: SchedulerProfileSpec, ignored: list[str]) -> SchedulerProfileSpec:
    if not ignored:
        return spec
    merged = spec.model_copy(deep=True)
    for entry in merged.plugin_config:
        if entry.name == NODE_RESOURCES_FIT:
            entry.args = {**entry.args, IGNORED_RESOURCES: list(ignored)}
            return merged
    merged.plugin_config.append(PluginConfigEntry(name=NODE_RESOURCES_FIT, args={IGNORED_RESOURCES: list(ignored)}))
    return merged


class ExtenderConfigError(ValueError):
    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(f"{p}: {r}" for p, r in self.problems))
