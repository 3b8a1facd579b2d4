"""The operator: Kopf watches feeding a Scheduler, a Lease deciding who schedules.

Wiring, as the simulator wires its in-memory twin (``scheduler_core.simulator.run``): the
default registry, upstream's default plugins, a :class:`~scheduler_operator.backend.KubeBackend`.
Every replica runs the watches (pods, nodes, the custom resources, and the kinds plugins read,
``resources.OBJECT_KINDS``, each handed to ``Scheduler.on_object_*``, which decides what is a
cluster event, as upstream's ``eventhandlers.go``) and reconciles every profile, so its cache, queue and
frameworks stay warm; only the holder of the Lease runs ``Scheduler.run`` and writes status. Each time a
replica starts leading it first waits until its stores hold everything a fresh list of nodes,
pods and custom resources holds (client-go's ``WaitForCacheSync``): scheduling on a partial
cache would overcommit nodes whose pods it has not seen yet.

The Lease is a fence (``docs/leader-election.md``): it is renewed on a thread of its own
(``leader.LeaseKeeper``), every write request passes ``fence.Fence`` (refused once the renew
deadline has passed since the last successful renewal), and a replica that loses the lease
exits, as kube-scheduler does; on shutdown it fences, lets the writes in flight finish, then
releases the lease.

A restart or failover loses no pod (the new leader finds every pending pod in its watch) and
binds none twice (pods/binding refuses a second binding with 409; the backend takes a pod
found bound as bound).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sys
import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import kopf
from kubernetes import client

from scheduler_core.defaults import default_plugins
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_operator import admission, decoding, kube
from scheduler_operator.backend import KubeBackend
from scheduler_operator.calls import Lanes
from scheduler_operator.fence import Fence
from scheduler_operator.handlers import build_registry
from scheduler_operator.informer import Body, Store, name_of, namespaced_name_of, uid_of
from scheduler_operator.kopfsettings import kopf_settings
from scheduler_operator.leader import KubeLeaseLock, LeaseKeeper
from scheduler_operator.options import Options
from scheduler_operator.reconciler import Reconciler
from scheduler_operator.recorder import EventRecorder
from scheduler_operator.resources import (
    GROUP,
    OBJECT_KINDS,
    OPTIONAL_LISTS,
    PLUGIN_CONFIG_KIND,
    PLUGIN_CONFIG_PLURAL,
    PROFILE_KIND,
    PROFILE_PLURAL,
    VERSION,
)
from scheduler_operator.writer import StatusWriter

log = logging.getLogger(__name__)

SYNC_TIMEOUT = 120.0
LIST_PAGE = 500

Lister = tuple[Store, Callable[..., Any], tuple[Any, ...], Callable[[Body], str]]  # store, list call, args, key


class Operator:
    def __init__(self, options: Options, api_client: client.ApiClient | None = None) -> None:
        self.options = options
        self.lanes = Lanes(critical=options.critical_limit, reports=options.reports_limit)
        self.api_client = api_client or kube.new_api_client(max_connections=self.lanes.max_in_flight + 4)
        self.recorder = EventRecorder(self.api_client, self.lanes, instance=options.identity)
        # The informer stores first: they hand events to the scheduler built below (read when
        # an event arrives, so after __init__), and the backend reads them.
        self.nodes = self._scheduler_store("Node", name_of)
        self.pods = Store(
            "Pod", key=uid_of, on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted
        )
        self.objects = {kind.kind: self._scheduler_store(kind.kind, namespaced_name_of) for kind in OBJECT_KINDS}
        self.backend = KubeBackend(
            self.api_client, self.lanes, self.recorder, stores={"Pod": self.pods, "Node": self.nodes, **self.objects}
        )
        registry = default_registry()
        self.scheduler = Scheduler(
            self.backend,
            registry=registry,
            default_multi_point=default_plugins(registry),
            home_namespace=options.home_namespace,
        )
        self.writer = StatusWriter(self.api_client, self.recorder)
        self.reconciler = Reconciler(self.scheduler, registry, self.writer, home_namespace=options.home_namespace)
        reconciler = self.reconciler
        self.profiles = Store(
            PROFILE_KIND, key=namespaced_name_of,
            on_add=reconciler.profile_changed, on_update=lambda _, new: reconciler.profile_changed(new),
            on_delete=reconciler.profile_deleted,
        )  # fmt: skip
        self.plugin_configs = Store(
            PLUGIN_CONFIG_KIND, key=namespaced_name_of,
            on_add=reconciler.plugin_config_changed, on_update=lambda _, new: reconciler.plugin_config_changed(new),
            on_delete=reconciler.plugin_config_deleted,
        )  # fmt: skip
        # The fence: no write starts unless the lease is surely still ours (scheduler_operator.fence).
        self.fence = Fence(options.election.renew_deadline)
        self.fence.install(self.api_client)
        self.keeper = LeaseKeeper(self._lease_lock, options.identity, options.election, self.fence, self._lost)
        self.leading_since: float | None = None
        self.stopping = False

    @property
    def is_leader(self) -> bool:
        return self.keeper.is_leader

    def _lease_lock(self) -> KubeLeaseLock:
        """The Lease client, built on the keeper's thread with a connection pool of its own.
        Each request times out after half the renew deadline, at least 1 s, as client-go's
        ``resourcelock.NewFromKubeconfig`` sets it, so one hung request leaves time for another."""
        options = self.options
        timeout = max(options.election.renew_deadline / 2, 1.0)
        api_client = kube.new_api_client(max_connections=2)
        return KubeLeaseLock(api_client, options.home_namespace, options.lease_name, timeout=timeout)

    def _lost(self) -> None:
        """Leadership lost (on the keeper's thread): exit as kube-scheduler does
        (``cmd/kube-scheduler/app/server.go``, ``OnStoppedLeading``: exit 0 when asked to
        terminate, else "Leaderelection lost" and ``klog.FlushAndExit(…, 1)``). The fence is
        closed already, so nothing starts meanwhile; what was in flight is abandoned, and the
        next leader finds those pods pending."""
        if self.stopping:
            log.info("requested to terminate, exiting")
            code = 0
        else:
            log.error("leader election lost: exiting")
            code = 1
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    def _pod_added(self, pod: Body) -> None:
        self.scheduler.on_pod_add(pod)

    def _pod_updated(self, old: Body, new: Body) -> None:
        self.scheduler.on_pod_update(old, new)
        if (new.get("spec") or {}).get("nodeName") and not (old.get("spec") or {}).get("nodeName"):
            self.backend.forget(uid_of(new))

    def _pod_deleted(self, pod: Body) -> None:
        self.scheduler.on_pod_delete(pod)
        self.backend.forget(uid_of(pod))

    def _scheduler_store(self, kind: str, key: Callable[[Body], str]) -> Store:
        """A store whose changes go to ``Scheduler.on_object_*``, which decides what they mean."""
        return Store(
            kind, key=key,
            on_add=lambda new: self.scheduler.on_object_add(kind, new),
            on_update=lambda old, new: self.scheduler.on_object_update(kind, old, new),
            on_delete=lambda old: self.scheduler.on_object_delete(kind, old),
        )  # fmt: skip

    # -- listing (cache sync, resync) ----------------------------------------------------------
    def _listers(self) -> list[Lister]:
        core = client.CoreV1Api(self.api_client)
        custom: Callable[..., Any] = client.CustomObjectsApi(self.api_client).list_cluster_custom_object
        core_lists: dict[str, Callable[..., Any]] = {
            "namespaces": core.list_namespace,
            "services": core.list_service_for_all_namespaces,
            "replicationcontrollers": core.list_replication_controller_for_all_namespaces,
            "persistentvolumeclaims": core.list_persistent_volume_claim_for_all_namespaces,
            "persistentvolumes": core.list_persistent_volume,
        }
        objects: list[Lister] = [
            (self.objects[k.kind], core_lists[k.plural], (), namespaced_name_of)
            if not k.group
            else (self.objects[k.kind], custom, (k.group, k.version, k.plural), namespaced_name_of)
            for k in OBJECT_KINDS
        ]
        return [
            (self.nodes, core.list_node, (), name_of),
            (self.pods, core.list_pod_for_all_namespaces, (), uid_of),
            (self.profiles, custom, (GROUP, VERSION, PROFILE_PLURAL), namespaced_name_of),
            (self.plugin_configs, custom, (GROUP, VERSION, PLUGIN_CONFIG_PLURAL), namespaced_name_of),
            *objects,
        ]

    async def _list(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> list[Body]:
        items: list[Body] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {"limit": LIST_PAGE}
            if token:
                kwargs["_continue"] = token
            try:
                page = await self.lanes.critical.call(kube.call_json, fn, *args, **kwargs)
            except client.ApiException as error:
                if error.status == HTTPStatus.NOT_FOUND and args in OPTIONAL_LISTS:
                    return items  # e.g. no PodGroup CRD installed: nothing to read
                raise
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    async def wait_synced(self, timeout: float = SYNC_TIMEOUT) -> None:
        """Wait until every store holds what a fresh list holds (upstream WaitForCacheSync)."""
        started = time.monotonic()
        listed = []
        for store, fn, args, key in self._listers():
            items = await self._list(fn, args)
            listed.append((store, {key(item): uid_of(item) for item in items}))
        while True:
            counts = {store.kind: len(store.missing(keys)) for store, keys in listed}
            missing = {kind: count for kind, count in counts.items() if count}
            if not missing:
                break
            if time.monotonic() - started > timeout:
                log.warning("caches not synced after %.0f s (missing %s): scheduling anyway", timeout, missing)
                break
            await asyncio.sleep(0.1)
        log.info(
            "caches synced in %.2f s: %s",
            time.monotonic() - started, ", ".join(f"{store.kind}={len(keys)}" for store, keys in listed),
        )  # fmt: skip

    async def resync(self) -> None:
        """Every resync period, drop what vanished while a watch was re-listed (Kopf does not say)."""
        while True:
            await asyncio.sleep(self.options.resync_period)
            for store, fn, args, key in self._listers():
                since = time.monotonic()
                try:
                    items = await self._list(fn, args)
                except Exception as error:
                    log.warning("resync of %ss: %s", store.kind, error)
                    continue
                for body in store.resync({key(item) for item in items}, since):
                    log.warning("resync: %s %s was deleted unseen", store.kind, namespaced_name_of(body))

    # -- leading -------------------------------------------------------------------------------
    async def lead(self) -> None:
        """Candidate until the keeper holds the lease, then leader until the process ends.

        Losing the lease ends the process (:meth:`_lost`); shutting down ends this task, and
        :meth:`step_down` then fences, waits for the writes in flight and releases the lease."""
        self.keeper.start()
        await self.keeper.acquired()
        while True:  # no scheduling on a partial cache
            try:
                await self.wait_synced()
                break
            except Exception as error:
                log.warning("cache sync failed (%s); retrying", error)
                await asyncio.sleep(self.options.election.retry_period)
        self.writer.lead(True)
        self.leading_since = time.monotonic()
        log.info("leading: scheduling as %r", self.options.identity)
        stop = asyncio.Event()
        try:
            await self.scheduler.run(stop)
        finally:
            stop.set()
            self.writer.lead(False)
            self.leading_since = None
            log.info("stopped scheduling")

    async def step_down(self, leading: asyncio.Future[Any]) -> None:
        """Shutdown: no write starts any more, the scheduling loop ends, the writes in flight
        finish (or time out) and only then the lease is released for a standby to take at once."""
        self.stopping = True
        self.fence.close()
        leading.cancel()
        await asyncio.gather(leading, return_exceptions=True)
        loop = asyncio.get_running_loop()
        timeout = self.options.election.renew_deadline
        if not await loop.run_in_executor(None, self.fence.wait_idle, timeout):
            log.warning("%d writes in flight after %.0f s; releasing anyway", self.fence.in_flight, timeout)
        await loop.run_in_executor(None, functools.partial(self.keeper.stop, release=True, timeout=timeout))

    def close(self) -> None:
        self.lanes.shutdown()
        self.writer.close()
        self.api_client.close()  # type: ignore[no-untyped-call]


async def run(options: Options) -> None:
    """Run until SIGINT/SIGTERM (Kopf handles them); then give the lease up."""
    decoding.install_in_kopf()
    operator = Operator(options)
    leader = asyncio.ensure_future(operator.lead())
    resync = asyncio.ensure_future(operator.resync())
    try:
        registry = build_registry(operator)
        settings = kopf_settings()
        if options.webhook is not None:
            admission.register(
                registry, plugins=operator.reconciler.registry, home_namespace=options.home_namespace,
                configs=lambda namespace: list(operator.reconciler.configs.get(namespace, {}).values()),
            )  # fmt: skip
            settings.admission.server = admission.server(options.webhook)
            settings.admission.managed = options.webhook.managed
        await kopf.operator(
            registry=registry,
            settings=settings,
            clusterwide=True,
            standalone=True,
            liveness_endpoint=options.liveness or None,
        )
    finally:
        resync.cancel()
        await asyncio.gather(resync, return_exceptions=True)
        await operator.step_down(leader)
        operator.close()
