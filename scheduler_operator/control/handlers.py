"""The Kopf handlers: thin, each hands a watch event to a store (``scheduler_operator.watch.informer``).

Kopf watches the custom resources only (SchedulerProfile, PluginConfig); pods, nodes and the
kinds plugins read go through the operator's own reflectors (``scheduler_operator.watch.reflector``,
decision record in docs/architecture.md). Only ``@kopf.on.event`` handlers: Kopf writes nothing on the objects (no
finalizers, no last-handled annotations, no progress in status), so the operator needs no
write access to pods or nodes beyond what scheduling itself does, and deleting a profile is
never blocked. Creation, update, resume after a restart (Kopf lists every object first) and
deletion all arrive as events; the stores turn them into add/update/delete calls.

Handlers are coroutines so they run on the event loop, between scheduling cycles, never
concurrently with one (Kopf would run plain functions in threads).
"""

from __future__ import annotations

import logging
import ssl
from typing import Any, Protocol

import kopf
from kubernetes import client

from scheduler_core.clientcert import send_own_chain_only
from scheduler_core.framework import manifest
from scheduler_operator.io import kube
from scheduler_operator.resources import GROUP, PLUGIN_CONFIG_PLURAL, PROFILE_PLURAL, VERSION
from scheduler_operator.watch.informer import Store

log = logging.getLogger(__name__)


class Stores(Protocol):
    profiles: Store
    plugin_configs: Store

    @property
    def is_leader(self) -> bool: ...


def _feed(store: Store, event: dict[str, Any]) -> None:
    try:
        store.handle(event.get("type"), event["object"])
    except Exception:  # one bad object must not stop the stream of the others
        meta = manifest.meta(event.get("object") or {})
        log.exception("%s event for %s/%s failed", store.kind, meta.get("namespace") or "", meta.get("name"))


def build_registry(
    stores: Stores, source: kube.KubeconfigSource = kube.IN_CLUSTER_ELSE_KUBECONFIG
) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    def login(settings: kopf.OperatorSettings, **_: Any) -> kopf.ConnectionInfo:
        """The credentials the operator's other clients use (``kube.load_configuration``)."""
        return connection_info(kube.load_configuration(source), trust_env=settings.networking.trust_env)

    @kopf.on.event(GROUP, VERSION, PROFILE_PLURAL, registry=registry)
    async def profile_event(**kwargs: Any) -> None:
        _feed(stores.profiles, kwargs["event"])

    @kopf.on.event(GROUP, VERSION, PLUGIN_CONFIG_PLURAL, registry=registry)
    async def plugin_config_event(**kwargs: Any) -> None:
        _feed(stores.plugin_configs, kwargs["event"])

    @kopf.on.probe(id="leader", registry=registry)
    def leader(**_: Any) -> bool:
        return stores.is_leader

    return registry


class ConnectionInfo(kopf.ConnectionInfo):
    """Kopf's, with a client certificate sent as the operator's own transport sends it: the
    certificate file's chain only (``scheduler_core.clientcert``)."""

    def as_ssl_context(self) -> ssl.SSLContext:
        context = super().as_ssl_context()
        if self.certificate_path or self.certificate_data:
            send_own_chain_only(context)
        return context


def connection_info(configuration: client.Configuration, *, trust_env: bool) -> kopf.ConnectionInfo:
    """Kopf's ConnectionInfo for a client ``Configuration``, read as ``kopf.login_via_client``
    reads the client's default one (the bearer token through ``get_api_key_with_prefix``, which
    runs an auth provider's refresh)."""
    header = configuration.get_api_key_with_prefix("BearerToken") or configuration.get_api_key_with_prefix(
        "authorization"
    )
    scheme, _, token = (header or "").partition(" ")
    if not token:  # a bare token, no scheme
        scheme, token = "", scheme
    return ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        username=configuration.username or None,
        password=configuration.password or None,
        scheme=scheme or None,
        token=token or None,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        trust_env=trust_env,
    )
