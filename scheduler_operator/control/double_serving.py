"""Another scheduler binding pods of a schedulerName we serve: the ``DoubleServing`` condition.

Two schedulers serving one name place the same pods blind to each other (issue 22: a migration
applied while kube-scheduler ran; the two raced on every pod). The signal is the record
kube-scheduler itself leaves of each binding: an ``events.k8s.io/v1`` Event, reason
``Scheduled``, action ``Binding``, regarding the pod (``pkg/scheduler/schedule_one.go``, the
binding cycle), posted by the recorder of the profile that scheduled it, whose
``reportingController`` is that profile's schedulerName (``pkg/scheduler/profile/profile.go``
``newProfile``; ``cmd/kube-scheduler/app/server.go`` ``getRecorderFactory``) and
``reportingInstance`` ``<schedulerName>-<hostname>`` (client-go v0.36.3
``tools/events/event_broadcaster.go`` ``NewRecorder``). Ours say ``crd-scheduler``
(``scheduler_operator.control.recorder``). So a ``Scheduled`` event by another reporter about a pod
whose namespace and schedulerName resolve to one of our profiles is another scheduler having
bound a pod we serve: an observation, not an inference, and it names that scheduler.

Why not the pod watch the operator already has: a binding leaves no trace of who made it on the
pod (``pods/binding`` sets ``spec.nodeName`` and ``PodScheduled`` in storage, past the field
manager: ``pkg/registry/core/pod/storage/storage.go`` ``setPodNodeAndMetadata``), so the pods
could only tell "bound while no binding of ours was in flight", which a failover or a binding
whose answer was lost also produce, and which names no one.

What it costs (``docs/deploy.md``): the leader, once its caches are synced, lists then watches
``events.k8s.io/v1`` Events with the field selector :data:`FIELD_SELECTOR`, which the API server
applies, so ours and every other reason never travel. What arrives is one small event per pod
another scheduler binds, kept as a view of a few fields (:func:`event_view`) for as long as the
API server keeps the event (``--event-ttl``, 1 h by default). An older scheduler posting
``core/v1`` events (``source.component``, no ``reportingController``) is seen too, under that
component's name. A second crd-scheduler installation serving the same name is not: its events
carry our reportingController.

Episodes: the first such binding for a profile starts one (the profile's condition turns
``DoubleServing=True`` with the reporter, its instance and the pod, and one Warning event
``DoubleServing`` is posted on the profile); later ones only extend it (a count in the
metric). It ends :data:`QUIET_PERIOD` seconds after the last one (the condition turns False),
or when the profile gets a new generation (a spec edit, e.g. the rename the warning suggests):
bindings made before that edit no longer count, nor those made before the profile was created
(:func:`counted_since`). The list a new leader makes re-derives the episodes still running from
the events of the last :data:`QUIET_PERIOD`; the status it finds says which it need not announce.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scheduler_core.framework import Manifest, manifest
from scheduler_core.metrics.registry import Registry
from scheduler_core.profiles import ProfileKey
from scheduler_operator.control.status import timestamp
from scheduler_operator.io.transport import Transport
from scheduler_operator.resources import COMPONENT, Resource
from scheduler_operator.watch.informer import Store
from scheduler_operator.watch.reflector import Reflector

log = logging.getLogger(__name__)

DOUBLE_SERVING = "DoubleServing"  # the condition's type and the Warning event's reason
REASON_OTHER_SCHEDULER = "OtherSchedulerBinds"
REASON_NONE_SEEN = "NoOtherScheduler"
ACTION = "Watch"  # the Warning event's action: what the operator did to see it
SCHEDULED = "Scheduled"
FIELD_SELECTOR = f"reason={SCHEDULED},reportingController!={COMPONENT}"
EVENTS = Resource("Event", "events.k8s.io", "v1", "events", field_selector=FIELD_SELECTOR)
# Ten minutes without another scheduler's binding end an episode: long enough that pods created
# now and then by a Deployment keep one episode (one Warning event), short enough that the
# condition clears soon after the other scheduler is stopped.
QUIET_PERIOD = 600.0
CHECK_EVERY = 30.0  # seconds between two looks for episodes gone quiet
DOUBLE_SERVED_PODS = "crd_scheduler_double_served_pods_total"


@dataclass
class Episode:
    """Another scheduler binding pods of a profile's schedulerName, from the first binding seen."""

    scheduler_name: str
    reporter: str
    instance: str
    pod: str  # namespace/name of the first pod
    first: float  # the first binding's event time (seconds since the epoch)
    last: float

    def message(self, quiet: float) -> str:
        instance = f" (reportingInstance {self.instance!r})" if self.instance else ""
        at = timestamp(datetime.fromtimestamp(self.first, UTC))
        return (
            f"another scheduler also serves schedulerName {self.scheduler_name!r}: {self.reporter!r}{instance} "
            f"bound pod {self.pod} at {at}; two schedulers serving one name place pods "
            "blind to each other: stop the other one, or give this profile another schedulerName "
            f"(docs/deploy.md); this clears {_duration(quiet)} after its last binding"
        )


def event_view(body: dict[str, Any]) -> dict[str, Any]:
    """What the store keeps of a watched event: what :meth:`DoubleServing.observe` reads."""
    meta = manifest.meta(body)
    regarding = body.get("regarding") or {}
    source = body.get("deprecatedSource") or {}
    return {
        "metadata": {
            k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in meta
        },
        "regarding": {k: regarding[k] for k in ("kind", "namespace", "name", "uid") if k in regarding},
        "deprecatedSource": {k: source[k] for k in ("component", "host") if k in source},
        **{
            k: body[k]
            for k in ("reason", "reportingController", "reportingInstance", "eventTime", "deprecatedLastTimestamp")
            if k in body
        },
    }


class DoubleServing:
    """Episodes per profile, from other schedulers' ``Scheduled`` events (see the module docstring).

    ``resolve(namespace, schedulerName)``: the profile such a pod resolves to (None: not ours);
    ``pods(uid)``: the pod as the operator's pod store holds it. ``on_change(key, started)`` is
    told when an episode starts (``started``: it) or ends (None)."""

    def __init__(
        self,
        resolve: Callable[[str, str], ProfileKey | None],
        pods: Callable[[str], Manifest | None] = lambda uid: None,
        *,
        quiet: float = QUIET_PERIOD,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._resolve = resolve
        self._pods = pods
        self.quiet = quiet
        self._clock = clock
        self._episodes: dict[ProfileKey, Episode] = {}
        self._since: dict[ProfileKey, float] = {}  # bindings before this time no longer count
        self.on_change: Callable[[ProfileKey, Episode | None], None] = lambda key, started: None
        self.on_pod: Callable[[ProfileKey], None] = lambda key: None  # each pod another scheduler bound

    def episode(self, key: ProfileKey) -> Episode | None:
        return self._episodes.get(key)

    def observe(self, event: Manifest) -> None:
        """One ``Scheduled`` event (of any reporter: ours and other reasons are passed over)."""
        regarding = event.get("regarding") or {}
        source = event.get("deprecatedSource") or {}
        reporter = str(event.get("reportingController") or source.get("component") or "")
        if event.get("reason") != SCHEDULED or regarding.get("kind") != "Pod" or reporter in ("", COMPONENT):
            return
        now = self._clock()
        at = min(_event_time(event) or now, now)  # a reporter's clock ahead of ours counts as now
        if now - at >= self.quiet:
            return  # listed, and too old to matter
        namespace = str(regarding.get("namespace") or "")
        pod = self._pods(str(regarding.get("uid") or ""))
        # Without the pod (deleted since): kube-scheduler reports as the schedulerName it served.
        scheduler_name = str(manifest.spec(pod or {}).get("schedulerName") or reporter)
        key = self._resolve(namespace, scheduler_name)
        if key is None or at < self._since.get(key, -math.inf):
            return
        self.on_pod(key)
        episode = self._episodes.get(key)
        if episode is not None:
            episode.last = max(episode.last, at)
            return
        episode = Episode(
            scheduler_name, reporter, str(event.get("reportingInstance") or source.get("host") or ""),
            f"{namespace}/{regarding.get('name')}", at, at,
        )  # fmt: skip
        self._episodes[key] = episode
        log.warning("profile %s: %s", key, episode.message(self.quiet))
        self.on_change(key, episode)

    def expire(self) -> list[ProfileKey]:
        """End the episodes quiet for :attr:`quiet` seconds; their profiles."""
        now = self._clock()
        ended = [key for key, episode in self._episodes.items() if now - episode.last >= self.quiet]
        for key in ended:
            del self._episodes[key]
            log.info("profile %s: no other scheduler bound its pods for %s", key, _duration(self.quiet))
            self.on_change(key, None)
        return ended

    def counts_since(self, key: ProfileKey, since: float) -> None:
        """Bindings made before ``since`` do not count for ``key`` (see :func:`counted_since`)."""
        self._since[key] = max(self._since.get(key, -math.inf), since)

    def reset(self, key: ProfileKey) -> None:
        """A new generation of the profile: its episode ends, earlier bindings no longer count."""
        self._episodes.pop(key, None)
        self.counts_since(key, self._clock())

    def forget(self, key: ProfileKey) -> None:
        self._episodes.pop(key, None)
        self._since.pop(key, None)

    def condition_fields(self, key: ProfileKey, scheduler_name: str) -> tuple[bool, str, str]:
        """(status, reason, message) of the profile's ``DoubleServing`` condition."""
        episode = self._episodes.get(key)
        if episode is not None:
            return True, REASON_OTHER_SCHEDULER, episode.message(self.quiet)
        return False, REASON_NONE_SEEN, (
            f"no other scheduler was seen binding pods of schedulerName {scheduler_name!r} "
            f"in the last {_duration(self.quiet)}"
        )  # fmt: skip

    def count_in(self, registry: Registry) -> None:
        """``crd_scheduler_double_served_pods_total{profile}`` in ``registry``."""
        counter = registry.counter(
            DOUBLE_SERVED_PODS,
            "Pods of a schedulerName this operator serves that another scheduler bound (its Scheduled "
            "events), by the profile the name resolves to (namespace/name).",
            ("profile",),
        )
        self.on_pod = lambda key: counter.labels(str(key)).inc()


class Watch:
    """The leader's list and watch of other schedulers' ``Scheduled`` events, into ``detector``,
    and the periodic end of quiet episodes."""

    def __init__(self, transport: Transport, detector: DoubleServing, *, check_every: float = CHECK_EVERY) -> None:
        self.detector = detector
        self.check_every = check_every
        # Added only: an event's update is a series of the same binding, its deletion its TTL.
        self.store = Store("Event", key=manifest.uid_of, on_add=detector.observe)
        # No wake-up bell (the scheduling caches' reflectors have one): a list refused for want
        # of the RBAC right is retried every 30 s, not at every Lease renewal.
        self.reflector = Reflector(transport, EVENTS, self.store, view=event_view)

    async def run(self) -> None:
        """For ever (cancel to stop): failures to list or watch are retried by the reflector
        (a missing RBAC right shows in its warnings), never holding up scheduling."""
        watching = asyncio.ensure_future(self.reflector.run())
        try:
            while True:
                await asyncio.sleep(self.check_every)
                self.detector.expire()
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)


def counted_since(profile: Manifest) -> float:
    """From when another scheduler's bindings count against a profile first seen by this
    replica: its creation (before it, serving that name was the other scheduler's business, as
    when kube-scheduler is stopped and the profile then created: docs/deploy.md), or the last time
    its ``DoubleServing`` condition turned False (an episode ended, or an edit cleared it: what
    the status remembers across restarts and failovers)."""
    meta = manifest.meta(profile)
    times = [_timestamp(meta.get("creationTimestamp"))]
    for c in manifest.status(profile).get("conditions") or ():
        if isinstance(c, Mapping) and c.get("type") == DOUBLE_SERVING and c.get("status") == "False":
            times.append(_timestamp(c.get("lastTransitionTime")))
    # Both are whole seconds (the binding's eventTime has microseconds): the end of that second,
    # so that a binding made just before, in the same second, does not count.
    return max((t + 1 for t in times if t is not None), default=-math.inf)


def _timestamp(value: object) -> float | None:
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None


def _event_time(event: Manifest) -> float | None:
    """When the event happened: ``eventTime``, or a ``core/v1`` event's last timestamp."""
    meta = manifest.meta(event)
    for value in (event.get("eventTime"), event.get("deprecatedLastTimestamp"), meta.get("creationTimestamp")):
        found = _timestamp(value)
        if found is not None:
            return found
    return None


def _duration(seconds: float) -> str:
    return f"{seconds / 60:g} minutes" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g} s"
