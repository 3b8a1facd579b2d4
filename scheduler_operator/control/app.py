"""The operator: reflectors and Kopf watches feeding a Scheduler, a Lease deciding who schedules.

Wiring, as the simulator wires its in-memory twin (``scheduler_core.simulator.run``): the
default registry, upstream's default plugins, a :class:`~scheduler_operator.control.backend.KubeBackend`
over one async HTTP layer (``scheduler_operator.io.transport``). Every replica runs the watches
(pods, nodes and the kinds plugins read, ``resources.OBJECT_KINDS``, through the operator's own
reflectors, ``scheduler_operator.watch.reflector``; the custom resources through Kopf), each handed to
``Scheduler.on_object_*``, which decides what is a cluster event, as upstream's
``eventhandlers.go``, and reconciles every profile, so its cache, queue and frameworks stay warm;
only the holder of the Lease runs ``Scheduler.run`` and writes status. Each time a replica
starts leading it first waits until every store holds a consistent list (client-go's
``WaitForCacheSync``), for as long as that takes: scheduling on a partial cache would overcommit
nodes whose pods it has not seen yet. The I/O is described in docs/operator-io.md.

The Lease is a fence (``docs/leader-election.md``): it is renewed on a thread of its own
(``leader.LeaseKeeper``), every write request passes ``fence.Fence`` (refused once the renew
deadline has passed since the last successful renewal), and a replica that loses the lease
exits, as kube-scheduler does. On SIGTERM (or SIGINT) the fence shuts first, in the signal's
handler, before Kopf or anything else hears of it (:meth:`Operator.terminate`); then the
scheduling loop ends, the writes in flight finish, and the lease is released.

Observability (``docs/observability.md``): the scheduler's metrics, and a
:class:`~scheduler_operator.control.health.HealthState` fed from the operator's state, are served on
``/metrics``, ``/healthz`` and ``/readyz`` (:mod:`scheduler_operator.control.serving`).

A restart or failover loses no pod (the new leader finds every pending pod in its watch) and
binds none twice (pods/binding refuses a second binding with 409; the backend takes a pod
found bound as bound).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import kopf

from scheduler_core.defaults import default_plugins
from scheduler_core.framework import Manifest
from scheduler_core.runtime.registry import default_registry
from scheduler_core.scheduler import Scheduler
from scheduler_operator.control import admission, collector, serving
from scheduler_operator.control.backend import KubeBackend
from scheduler_operator.control.double_serving import DoubleServing
from scheduler_operator.control.double_serving import Watch as DoubleServingWatch
from scheduler_operator.control.fence import Fence
from scheduler_operator.control.handlers import build_registry
from scheduler_operator.control.health import HealthState
from scheduler_operator.control.io_metrics import IOMetrics
from scheduler_operator.control.kopfsettings import kopf_settings
from scheduler_operator.control.leader import KubeLeaseLock, LeaseKeeper
from scheduler_operator.control.options import Options
from scheduler_operator.control.reconciler import Reconciler
from scheduler_operator.control.recorder import EventRecorder
from scheduler_operator.control.writer import StatusWriter
from scheduler_operator.io import decoding
from scheduler_operator.io.calls import Lanes
from scheduler_operator.io.kube import describe
from scheduler_operator.io.transport import Credentials, Transport
from scheduler_operator.resources import NODES, OBJECT_KINDS, PLUGIN_CONFIGS, PODS, PROFILES
from scheduler_operator.watch.informer import Store, name_of, namespaced_name_of, uid_of
from scheduler_operator.watch.reflector import Reflector, Wakeup

log = logging.getLogger(__name__)

SYNC_POLL = 0.02  # seconds between two looks at the stores while syncing (a delay to the first binding)
SYNC_RELIST = 1.0  # seconds between two lists of the custom resources while syncing


class Operator:
    def __init__(self, options: Options, transport: Transport | None = None) -> None:
        self.options = options
        self.lanes = Lanes(critical=options.critical_limit, reports=options.reports_limit)
        self.transport = transport or Transport(
            Credentials.load(options.kubeconfig), qps=options.qps, burst=options.burst,
            max_connections=self.lanes.max_in_flight + len(OBJECT_KINDS) + 8,
        )  # fmt: skip
        self.recorder = EventRecorder(self.transport, self.lanes, instance=options.identity)
        # The informer stores first: they hand events to the scheduler built below (read when
        # an event arrives, so after __init__), and the backend reads them.
        self.nodes = self._scheduler_store("Node", name_of)
        self.pods = self._scheduler_store("Pod", uid_of)
        self.objects = {kind.kind: self._scheduler_store(kind.kind, namespaced_name_of) for kind in OBJECT_KINDS}
        # Rung by the Lease keeper whenever the API server answers it: reflectors in a backoff
        # retry at once (an API server back from a restart is not left waiting on a 25.6 s one).
        self.wakeup = Wakeup()
        self.reflectors = [
            Reflector(self.transport, NODES, self.nodes, wakeup=self.wakeup),
            Reflector(self.transport, PODS, self.pods, wakeup=self.wakeup),
            *(Reflector(self.transport, k, self.objects[k.kind], wakeup=self.wakeup) for k in OBJECT_KINDS),
        ]
        self.backend = KubeBackend(
            self.transport, self.lanes, self.recorder, stores={"Pod": self.pods, "Node": self.nodes, **self.objects}
        )
        registry = default_registry()
        self.scheduler = Scheduler(
            self.backend,
            registry=registry,
            default_multi_point=default_plugins(registry),
            home_namespace=options.home_namespace,
            pod_gone=self.backend.forget,
        )
        self.writer = StatusWriter(self.transport, self.recorder)
        # Other schedulers binding pods of our names (their Scheduled events), watched by the leader.
        double_serving = DoubleServing(self.scheduler.profiles.key_for, self.pods.get)
        double_serving.count_in(self.scheduler.metrics.registry)
        self.double_serving = DoubleServingWatch(self.transport, double_serving)
        self.reconciler = Reconciler(
            self.scheduler, registry, self.writer, home_namespace=options.home_namespace, double_serving=double_serving
        )
        reconciler = self.reconciler
        self.profiles = _custom_store(PROFILES.kind, reconciler.profile_changed, reconciler.profile_deleted)
        self.plugin_configs = _custom_store(
            PLUGIN_CONFIGS.kind, reconciler.plugin_config_changed, reconciler.plugin_config_deleted
        )
        # The fence: no write starts unless the lease is surely still ours (scheduler_operator.control.fence).
        self.fence = Fence(options.election.renew_deadline)
        self.transport.guard = self.fence.guard
        IOMetrics(self.scheduler.metrics.registry).watch(self.fence, self.transport)
        self.keeper = LeaseKeeper(
            self._lease_lock, options.identity, options.election, self.fence, self._lost, on_contact=self.wakeup.ring
        )
        self.leading_since: float | None = None
        self.stopping = False
        self._stepping_down: asyncio.Future[None] | None = None
        self.synced = False  # every store holds a consistent list (readiness)
        self.health = self._health()
        self.transport.contact = self.health.api_contact

    def _health(self) -> HealthState:
        health = HealthState(lease_duration=self.options.election.lease_duration)
        health.synced = lambda: self.synced
        health.leading = lambda: self.leading_since is not None and self.keeper.is_leader
        health.last_turn = lambda: self.scheduler.last_turn
        health.waiting = self.scheduler.queue.waiting
        health.lease_observed = lambda: self.keeper.elector.observed_at if self.keeper.elector else None
        return health

    @property
    def is_leader(self) -> bool:
        return self.keeper.is_leader

    def _lease_lock(self) -> KubeLeaseLock:
        """The Lease's lock, built on the keeper's thread with a transport of its own (the same
        credentials). Each request times out after half the renew deadline, at least 1 s, as
        client-go's ``resourcelock.NewFromKubeconfig`` sets it, so one hung request leaves time
        for another; the transport does not retry it behind the elector's back."""
        options = self.options
        timeout = max(options.election.renew_deadline / 2, 1.0)
        return KubeLeaseLock.connect(
            self.transport.credentials, options.home_namespace, options.lease_name, timeout=timeout
        )

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

    def _scheduler_store(self, kind: str, key: Callable[[Manifest], str]) -> Store:
        """A store whose changes go to ``Scheduler.on_object_*``, which decides what they mean
        (a pod deleted while no watch ran: ``Scheduler.on_pod_vanished``)."""
        return Store(
            kind, key=key,
            on_add=lambda new: self.scheduler.on_object_add(kind, new),
            on_update=lambda old, new: self.scheduler.on_object_update(kind, old, new),
            on_delete=lambda old: self.scheduler.on_object_delete(kind, old),
            on_vanished=(lambda old: self.scheduler.on_pod_vanished(old)) if kind == "Pod" else None,
        )  # fmt: skip

    # -- listing (cache sync, resync) ----------------------------------------------------------
    def _custom_lists(self) -> list[tuple[Store, str]]:
        """The stores Kopf's watches feed, and the collection each lists."""
        return [(self.profiles, PROFILES.path), (self.plugin_configs, PLUGIN_CONFIGS.path)]

    async def wait_synced(self) -> None:
        """Wait until every store holds a consistent list (upstream WaitForCacheSync): each
        reflector's first list is in its store, and Kopf's custom-resource stores hold what a
        fresh list holds. No timeout: scheduling on a partial cache would overcommit nodes whose
        pods it has not seen yet; readiness says not-synced meanwhile."""
        started = time.monotonic()
        listed: list[tuple[Store, dict[str, str]]] = []
        listed_at = -SYNC_RELIST
        waiting = ""
        while True:
            if time.monotonic() - listed_at >= SYNC_RELIST:
                # A fresh list each time: an object listed here, then deleted before Kopf's own
                # list, never reaches Kopf's store (nor does its deletion).
                listed_at = time.monotonic()
                listed = [
                    (store, {namespaced_name_of(item): uid_of(item) for item in await self.transport.list_items(path)})
                    for store, path in self._custom_lists()
                ]
            pending = [r.resource.kind for r in self.reflectors if not r.synced]
            pending += [store.kind for store, keys in listed if store.missing(keys)]
            if not pending:
                break
            if ", ".join(pending) != waiting:
                waiting = ", ".join(pending)
                log.info("waiting for the caches of %s", waiting)
            await asyncio.sleep(SYNC_POLL)
        self.synced = True
        collector.settle()  # the listed cache is long-lived: out of the collector's walks
        log.info(
            "caches synced in %.2f s: %s (%.2f s of CPU since the process started)", time.monotonic() - started,
            ", ".join(f"{r.resource.kind}={len(r.store)}" for r in self.reflectors[:2]), time.process_time(),
        )  # fmt: skip

    async def resync(self) -> None:
        """Every resync period, drop custom resources that vanished while Kopf re-listed (Kopf
        does not say). The reflectors' kinds need none: their re-list diffs."""
        while True:
            await asyncio.sleep(self.options.resync_period)
            for store, path in self._custom_lists():
                since = time.monotonic()
                try:
                    items = await self.transport.list_items(path)
                except Exception as error:
                    log.warning("resync of %ss: %s", store.kind, describe(error))
                    continue
                for body in store.resync({namespaced_name_of(item) for item in items}, since):
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
                log.warning("cache sync failed (%s); retrying", describe(error))
                await asyncio.sleep(self.options.election.retry_period)
        self.writer.lead(True)
        self.leading_since = time.monotonic()
        log.info("leading: scheduling as %r", self.options.identity)
        # After the sync: the events' pods and profiles resolve; its list re-derives the episodes.
        double_serving = asyncio.ensure_future(self.double_serving.run())
        stop = asyncio.Event()
        ended = "it returned"  # ``run`` returns only once ``stop`` is set, which only this method does
        try:
            await self.scheduler.run(stop)
        except Exception as error:
            ended = f"{type(error).__name__}: {error}"
            log.error("the scheduling loop ended while leading", exc_info=error)
        finally:
            double_serving.cancel()
            stop.set()
            self.writer.lead(False)
            self.leading_since = None
            log.info("stopped scheduling")
        await self.abdicate(ended)

    async def abdicate(self, why: str) -> None:
        """The scheduling loop ended while this replica leads (a bug: plugins cannot end it):
        ``/healthz`` and ``/readyz`` fail from now on, so the kubelet restarts the container, and
        the lease is released at once, after the writes in flight, for a standby to take over
        rather than wait for a lease that this replica would go on renewing while scheduling
        nothing. This replica stands for no election again until it restarts."""
        self.health.loop_ended = why
        log.error("releasing the lease: the scheduling loop ended (%s)", why)
        self.fence.shut()
        await self._release()

    async def standby_sync(self) -> None:
        """A replica that does not lead at start checks its caches once, for ``/readyz``; the
        leader checks them every time it starts leading (``_serve``)."""
        await asyncio.sleep(2 * self.options.election.retry_period)  # the first election round
        while not self.synced and not self.is_leader:
            try:
                await self.wait_synced()
            except Exception as error:
                log.warning("standby cache sync failed (%s); retrying", error)
                await asyncio.sleep(self.options.election.retry_period)

    def terminate(self, signum: int, leading: asyncio.Future[Any], stop: asyncio.Event) -> None:
        """SIGTERM or SIGINT, on the event loop: the fence shuts before anything else, so no
        write starts from here on (only those already sent may land: at most the binding lane's
        ``--max-in-flight``, docs/leader-election.md); then the scheduling loop is cancelled,
        :meth:`step_down` starts (the lease is released once the writes in flight are done,
        without waiting for Kopf's shutdown, which gives its own tasks up to 5 s) and Kopf is
        told to stop (``stop``, its stop flag)."""
        first = not self.stopping
        self.stopping = True
        self.fence.shut()
        leading.cancel()
        if first:
            log.info("%s: fence shut, no write starts from now on; stopping", signal.Signals(signum).name)
            self._stepping_down = asyncio.ensure_future(self.step_down(leading))
        stop.set()

    async def step_down(self, leading: asyncio.Future[Any]) -> None:
        """Shutdown: no write starts any more, the scheduling loop ends, the writes in flight
        finish (or time out) and only then the lease is released for a standby to take at once.
        Idempotent: :meth:`terminate` starts it, and ``run`` awaits it again at the end."""
        self.stopping = True
        self.fence.shut()
        leading.cancel()
        await asyncio.gather(leading, return_exceptions=True)
        await self._release()

    async def _release(self) -> None:
        """Wait for the writes in flight (up to the renew deadline), then stop the keeper,
        releasing the lease."""
        loop = asyncio.get_running_loop()
        timeout = self.options.election.renew_deadline
        if not await loop.run_in_executor(None, self.fence.wait_idle, timeout):
            log.warning("%d writes in flight after %.0f s; releasing anyway", self.fence.in_flight, timeout)
        await loop.run_in_executor(None, functools.partial(self.keeper.stop, release=True, timeout=timeout))

    def watch(self) -> list[asyncio.Future[None]]:
        """Start every reflector (list, then watch, for ever)."""
        return [asyncio.ensure_future(reflector.run()) for reflector in self.reflectors]

    async def close(self) -> None:
        self.writer.close()
        await self.transport.close()


def _custom_store(kind: str, changed: Callable[[Manifest], None], deleted: Callable[[Manifest], None]) -> Store:
    """A store of a custom resource, fed by Kopf's watch: an object added or updated is changed."""
    return Store(kind, key=namespaced_name_of, on_add=changed, on_update=lambda _, new: changed(new), on_delete=deleted)


async def _serve(options: Options, operator: Operator) -> tuple[list[serving.Server], Transport | None]:
    """The endpoints' listeners asked for; the reviews of the secure one go through a client of
    their own, outside the Lease's fence (a standby answers scrapes too; a review writes nothing)."""
    registry, servers, reviews = operator.scheduler.metrics.registry, [], None
    if options.secure_serving is not None:
        secure = options.secure_serving
        reviews = Transport(operator.transport.credentials, qps=options.qps, burst=options.burst, max_connections=4)
        auth = serving.DelegatedAuth(lambda path, body: reviews.request("POST", path, body=dict(body)), secure)
        try:
            context = serving.server_context(secure)
        except (OSError, RuntimeError, ValueError) as error:
            # As a port in use: logged, and the operator schedules on without the endpoints
            # (the probes then fail visibly).
            log.error("cannot serve HTTPS on %s:%d: %s", secure.bind_address, secure.port, error)
        else:
            app = serving.make_app(registry, operator.health, auth)
            servers.append(serving.Server(app, secure.bind_address, secure.port, context))
    if options.serving is not None:
        app = serving.make_app(registry, operator.health)
        servers.append(serving.Server(app, options.serving.bind_address, options.serving.port))
    for server in servers:
        await server.start()
    return servers, reviews


async def run(options: Options) -> None:
    """Run until SIGINT/SIGTERM (:meth:`Operator.terminate`); then give the lease up."""
    collector.tune()  # the modules imported are long-lived (scheduler_operator.control.collector)
    decoding.install_in_kopf()
    operator = Operator(options)
    servers, reviews = await _serve(options, operator)
    watches = operator.watch()
    leader = asyncio.ensure_future(operator.lead())
    resync = asyncio.ensure_future(operator.resync())
    standby = asyncio.ensure_future(operator.standby_sync())
    try:
        registry = build_registry(operator, options.kubeconfig)
        settings = kopf_settings()
        if options.webhook is not None:
            admission.register(
                registry, plugins=operator.reconciler.registry, home_namespace=options.home_namespace,
                configs=lambda namespace: list(operator.reconciler.configs.get(namespace, {}).values()),
                home_profiles=lambda: [
                    b for k, b in operator.reconciler.profiles.items() if k.namespace == options.home_namespace
                ],
            )  # fmt: skip
            settings.admission.server = admission.server(options.webhook)
            settings.admission.managed = options.webhook.managed
        # kopf.operator() is spawn_tasks + run_tasks; apart, so that the signal handlers Kopf
        # installs in spawn_tasks are replaced by ours, which shut the fence first (Kopf's own
        # shutdown waits up to 5 s for the tasks spawned since it started, our binding cycles
        # among them, which bound on meanwhile: issue 26).
        existing = asyncio.all_tasks() - {asyncio.current_task()}
        stop = asyncio.Event()
        tasks = await kopf.spawn_tasks(
            registry=registry,
            settings=settings,
            clusterwide=True,
            standalone=True,
            liveness_endpoint=options.liveness or None,
            stop_flag=stop,
        )
        if threading.current_thread() is threading.main_thread():  # where Kopf installs its own
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, operator.terminate, signum, leader, stop)
        await kopf.run_tasks(tasks, ignored=existing)
    finally:
        for task in (resync, standby, *watches):
            task.cancel()
        await asyncio.gather(resync, standby, *watches, return_exceptions=True)
        await operator.step_down(leader)
        for server in servers:
            await server.stop()
        if reviews is not None:
            await reviews.close()
        await operator.close()
