"""The validating admission webhook for SchedulerProfile and PluginConfig, served through Kopf.

``kubectl apply`` of a profile the operator would refuse is refused at once, with the message
``crd-scheduler validate`` (and ``simulate``) prints for the same object (without the file name):
both call :func:`scheduler_core.simulator.validate.validate_objects`, the API server's checks, the
config models and :func:`scheduler_core.resolution.validate`, the profile build with the
operator's registry. The handlers are coroutines, so Kopf runs them on the operator's event loop:
the review (synchronous: frameworks built and dropped, no loop of its own) reads the
reconciler's PluginConfigs on the thread that writes them. A profile is reviewed with the
PluginConfigs the operator knows in its namespace merged in, as the reconciler will build it, and
a tenant profile (outside the home namespace) beside the home namespace's profiles the operator
knows: their tenant policies and the schedulerNames they serve are what the tenant rules read.

The status conditions stay: with the webhook off, or its ``failurePolicy: Ignore`` and the
operator unreachable, an invalid object is admitted and its ``Valid=False`` condition says why
(``docs/validation.md`` explains the choice of failurePolicy).

Every replica serves the webhook (a review needs no leadership). The server is
``kopf.WebhookServer`` with the certificate given on the command line (cert-manager's secret, or
the self-signed pair of ``hack/webhook-cert``); ``ValidatingWebhookConfiguration`` objects are
in ``manifests/webhook/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kopf

from scheduler_core.simulator.validate import validate_objects
from scheduler_operator.control.options import WebhookOptions
from scheduler_operator.resources import GROUP, PLUGIN_CONFIG_PLURAL, PROFILE_KIND, PROFILE_PLURAL, VERSION

PROFILE_HANDLER = "validate-schedulerprofiles"
PLUGIN_CONFIG_HANDLER = "validate-pluginconfigs"
SOURCE = "admission"
INVALID = 422  # what the API server answers for an invalid object
Configs = Callable[[str], Iterable[Mapping[str, Any]]]  # namespace -> PluginConfig bodies known there
Profiles = Callable[[], Iterable[Mapping[str, Any]]]  # the home namespace's SchedulerProfile bodies


def _no_profiles() -> Iterable[Mapping[str, Any]]:
    return ()


def review(
    body: Mapping[str, Any],
    *,
    registry: Mapping[str, Any],
    home_namespace: str,
    configs: Configs,
    home_profiles: Profiles = _no_profiles,
) -> list[str]:
    """The problems of ``body`` (``Kind ns/name: field: reason``), empty when it may be admitted."""
    obj = _plain(body)
    meta = obj.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):  # the API server names it after admission
        meta["name"] = f"{meta['generateName']}x"
    namespace = meta.get("namespace") or home_namespace
    objects: list[tuple[str, Mapping[str, Any]]] = [(SOURCE, obj)]
    if obj.get("kind") == PROFILE_KIND:
        objects += [("", c) for c in configs(namespace)]
        if namespace != home_namespace:
            objects += [
                ("", {"apiVersion": f"{GROUP}/{VERSION}", "kind": PROFILE_KIND, **_plain(p)}) for p in home_profiles()
            ]
    problems = validate_objects(objects, home_namespace=home_namespace, registry=registry)
    return [str(p).removeprefix(f"{SOURCE}: ") for p in problems if p.source == SOURCE]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def register(
    registry: kopf.OperatorRegistry,
    *,
    plugins: Mapping[str, Any],
    home_namespace: str,
    configs: Configs,
    home_profiles: Profiles = _no_profiles,
) -> None:
    """``@kopf.on.validate`` for both kinds, on CREATE and UPDATE."""

    def check(body: Mapping[str, Any]) -> None:
        problems = review(
            body, registry=plugins, home_namespace=home_namespace, configs=configs, home_profiles=home_profiles
        )
        if problems:
            raise kopf.AdmissionError("\n".join(problems), code=INVALID)

    @kopf.on.validate(
        GROUP, VERSION, PROFILE_PLURAL, id=PROFILE_HANDLER, operations=["CREATE", "UPDATE"], registry=registry
    )
    async def profile_review(body: kopf.Body, **_: Any) -> None:
        check(body)

    @kopf.on.validate(
        GROUP, VERSION, PLUGIN_CONFIG_PLURAL, id=PLUGIN_CONFIG_HANDLER, operations=["CREATE", "UPDATE"],
        registry=registry,
    )  # fmt: skip
    async def plugin_config_review(body: kopf.Body, **_: Any) -> None:
        check(body)


def server(options: WebhookOptions) -> kopf.WebhookServer:
    return kopf.WebhookServer(
        addr=options.addr, port=options.port, host=options.host, certfile=options.certfile, pkeyfile=options.keyfile
    )
