"""kube-scheduler's metrics, where the concept exists here, and the reload metrics of our own.

Names, help strings, labels and buckets are upstream's, from v1.36.3
``pkg/scheduler/metrics/metrics.go`` (``InitMetrics``) and ``profile_metrics.go``; help
strings carry the ``[STABLE]``/``[BETA]``/``[ALPHA]`` prefix that component-base's
``annotateStabilityLevel`` adds (``staging/src/k8s.io/component-base/metrics/opts.go``).

Where upstream's ``profile`` label holds the profile name (its ``schedulerName``), ours holds
the serving profile's key, ``namespace/name``: one schedulerName may be served by a tenant
profile per namespace.

How each moves (the callers cite the upstream line they mirror):

* attempts and attempt duration: once per scheduling attempt, at its end (``scheduled`` when
  the binding cycle ends well, ``unschedulable`` or ``error`` from the failure handler);
* SLI duration: at binding, from the pod's first entry in activeQ, labelled by attempts;
* extension-point durations: every run of PreFilter, Filter, PostFilter, PreScore, Score,
  Reserve, Unreserve, Permit, PreBind, Bind, PostBind (not PreEnqueue, which runs in the queue);
* plugin durations: each plugin's call, in a sample of the scheduling cycles
  (``PLUGIN_METRICS_SAMPLE_PERCENT``, upstream's ``pluginMetricsSamplePercent``);
* pending pods and unschedulable pods by plugin: collected from the queue at scrape time,
  so they are exact rather than maintained by increments;
* incoming pods: each entry into activeQ, backoffQ or the unschedulable pool, by event;
* preemption: one attempt per DefaultPreemption PostFilter call, victims per chosen candidate;
* algorithm duration: from the attempt's start to the end of the algorithm (Filter, Score and,
  for a pod that fits nowhere, PostFilter), success or not (``schedulingAlgorithm``'s defer);
* event handling: each cluster event the scheduler handles, by upstream's event label
  (``eventhandlers.go``);
* permit wait: a pod's wait at Permit, by the status code it ended with (``WaitOnPermit``);
* queueing hints: each hint run for a pending pod, at most ``HINT_OBSERVATIONS_PER_INTERVAL``
  a second, as upstream's asynchronous recorder keeps (the rest are not timed at all);
* pods scheduled after a flush: bound after the unschedulable pods' leftover flush moved them;
* goroutines, cache size, and our profile gauges: collected at scrape time.

Our own families (``crd_scheduler_*``): profile reloads by result and their duration; per
profile, whether a generation of it serves (``crd_scheduler_profile_serving``) and whether its
newest generation was refused (``crd_scheduler_profile_refused``); and the pods a profile that
does not serve holds, counted in upstream's ``scheduler_pending_pods`` under ``queue="gated"``
(never attempted, waiting for something outside the pod, as a pod a PreEnqueue plugin gates)
and by profile in ``crd_scheduler_held_pods``. Which upstream families we do not serve, and
why: ``docs/observability.md``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable

from scheduler_core import version
from scheduler_core.metrics.registry import (
    Collect,
    CounterChild,
    HistogramChild,
    LabelValues,
    Registry,
    exponential_buckets,
)

# schedule_one.go: pluginMetricsSamplePercent = 10.
PLUGIN_METRICS_SAMPLE_PERCENT = 10

# The queue's hint timings go through upstream's MetricAsyncRecorder
# (pkg/scheduler/metrics/metric_recorder.go; scheduler.go: NewMetricsAsyncRecorder(1000,
# time.Second)): a buffer of 1,000 observations drained once a second, and an observation that
# finds it full is dropped (``observeMetricAsync``'s select/default). So at most about 1,000
# hint runs a second are recorded, whatever the pool's size.
HINT_OBSERVATIONS_PER_INTERVAL = 1000
HINT_OBSERVATION_INTERVAL = 1.0

# profile_metrics.go
SCHEDULED = "scheduled"
UNSCHEDULABLE = "unschedulable"
ERROR = "error"

# metrics.go extension-point label values.
PRE_FILTER = "PreFilter"
FILTER = "Filter"
POST_FILTER = "PostFilter"
PRE_SCORE = "PreScore"
SCORE = "Score"
SCORE_EXTENSION_NORMALIZE = "ScoreExtensionNormalize"
RESERVE = "Reserve"
UNRESERVE = "Unreserve"
PERMIT = "Permit"
PRE_BIND_PRE_FLIGHT = "PreBindPreFlight"
PRE_BIND = "PreBind"
BIND = "Bind"
POST_BIND = "PostBind"

# Queue label values of pending_pods and queue_incoming_pods_total.
ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE_QUEUE = "unschedulable"
GATED = "gated"

# Goroutines' operation label (metrics.go Binding); ours counts the binding tasks in flight.
BINDING = "binding"

RELOAD_SUCCESS = "success"
RELOAD_INVALID = "invalid"

PENDING_HELP = (
    "[STABLE] Number of pending pods, by the queue type. 'active' means number of pods in activeQ; "
    "'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in "
    "unschedulablePods that the scheduler attempted to schedule and failed; 'gated' is the number "
    "of unschedulable pods that the scheduler never attempted to schedule because they are gated."
)
UNSCHEDULABLE_HELP = (
    "[BETA] The number of unschedulable pods broken down by plugin name. A pod will increment the "
    "gauge for all plugins that caused it to not schedule and so this metric have meaning only "
    "when broken down by plugin."
)


# The gauges collected at scrape time from state the queue and the scheduler keep: name ->
# (help, label names).
COLLECTED: dict[str, tuple[str, tuple[str, ...]]] = {
    "scheduler_pending_pods": (PENDING_HELP, ("queue",)),
    "scheduler_unschedulable_pods": (UNSCHEDULABLE_HELP, ("plugin", "profile")),
    "scheduler_inflight_events": ("[ALPHA] Number of events currently tracked in the scheduling queue.", ("event",)),
    "scheduler_goroutines": (
        "[BETA] Number of running goroutines split by the work they do such as binding.",
        ("operation",),
    ),
    "scheduler_cache_size": (
        "[ALPHA] Number of nodes, pods, and assumed (bound) pods in the scheduler cache.",
        ("type",),
    ),
    "crd_scheduler_profile_serving": (
        "Whether a generation of the SchedulerProfile serves (1: the newest or the last good one; "
        "0: none does, and its pods are held), by profile (namespace/name).",
        ("profile",),
    ),
    "crd_scheduler_profile_refused": (
        "Whether the newest generation of the SchedulerProfile was refused (1: invalid; the last good "
        "generation, if any, keeps serving), by profile (namespace/name).",
        ("profile",),
    ),
    "crd_scheduler_held_pods": (
        "Pending pods held because the profile they resolve to does not serve, by profile "
        "(also counted in scheduler_pending_pods as gated).",
        ("profile",),
    ),
}


# kube-scheduler v1.36.3's families we do not serve, and why (docs/observability.md has the
# table; tests/unit/metrics/test_upstream_families.py checks every upstream family is either
# served with upstream's type, labels and buckets, or here).
_BATCHING = (
    "OpportunisticBatching (KEP-5598) is not implemented: every pod runs the whole cycle, no node "
    "hint is cached between pods of the same signature"
)
NOT_SERVED: dict[str, str] = {
    "scheduler_batch_attempts_total": _BATCHING,
    "scheduler_batch_cache_flushed_total": _BATCHING,
    "scheduler_get_node_hint_duration_seconds": _BATCHING,
    "scheduler_store_schedule_results_duration_seconds": _BATCHING,
    "scheduler_plugin_evaluation_total": (
        "applies, not yet served: upstream counts each Filter and Score call per node; the batch "
        "forms evaluate a plugin over the snapshot's columns at once, and counting per node there "
        "is open work"
    ),
    "scheduler_async_api_call_execution_total": (
        "SchedulerAsyncAPICalls is off by default in v1.36.3; our API calls are made by the binding "
        "tasks themselves, there is no asynchronous call dispatcher"
    ),
    "scheduler_async_api_call_execution_duration_seconds": "as scheduler_async_api_call_execution_total",
    "scheduler_pending_async_api_calls": "as scheduler_async_api_call_execution_total",
    "scheduler_resourceclaim_creates_total": (
        "applies (DRAExtendedResource, on by default in v1.36.3), not yet served: the special "
        "ResourceClaims of extended resources backed by DRA are not counted yet"
    ),
    "scheduler_dra_bindingconditions_allocations_total": (
        "DRADeviceBindingConditions (on by default in v1.36.3) is not implemented: a device's "
        "bindingConditions are not waited for at PreBind"
    ),
    "scheduler_dra_bindingconditions_wait_duration_seconds": "as scheduler_dra_bindingconditions_allocations_total",
    "scheduler_podgroup_schedule_attempts_total": (
        "GenericWorkload is alpha and off by default in v1.36.3; our gangs (Coscheduling, "
        "GangScheduling) are scheduled pod by pod, with no pod-group scheduling cycle to count"
    ),
    "scheduler_podgroup_scheduling_attempt_duration_seconds": "as scheduler_podgroup_schedule_attempts_total",
    "scheduler_podgroup_scheduling_algorithm_duration_seconds": "as scheduler_podgroup_schedule_attempts_total",
}


def attempts_label(attempts: int) -> str:
    """Upstream ``getAttemptsLabel``: attempts capped at "15+" to bound the cardinality."""
    return "15+" if attempts >= 15 else str(attempts)


class SchedulerMetrics:
    """The scheduler's metric families in one registry (one per Scheduler: tests stay apart).

    ``timer`` is the clock of the durations (``time.perf_counter``; tests pass a fake one)."""

    def __init__(self, registry: Registry | None = None, *, timer: Callable[[], float] = time.perf_counter) -> None:
        self.registry = registry = registry if registry is not None else Registry(runtime=True)
        self.timer = timer
        self.plugin_sample_percent = PLUGIN_METRICS_SAMPLE_PERCENT
        # Not the scheduler's RNG: simulate's tie-breaks stay seeded.
        self._random = random.Random().random
        self.schedule_attempts = registry.counter(
            "scheduler_schedule_attempts_total",
            "[STABLE] Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ("result", "profile"),
        )
        self.attempt_duration = registry.histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "[STABLE] Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ("result", "profile"),
            exponential_buckets(0.001, 2, 15),
        )
        self.sli_duration = registry.histogram(
            "scheduler_pod_scheduling_sli_duration_seconds",
            "[BETA] E2e latency for a pod being scheduled, from the time the pod enters the scheduling "
            "queue and might involve multiple scheduling attempts.",
            ("attempts",),
            exponential_buckets(0.01, 2, 20),
        )
        self.pod_scheduling_attempts = registry.histogram(
            "scheduler_pod_scheduling_attempts",
            "[STABLE] Number of attempts to successfully schedule a pod.",
            (),
            exponential_buckets(1, 2, 5),
        )
        self.extension_point_duration = registry.histogram(
            "scheduler_framework_extension_point_duration_seconds",
            "[STABLE] Latency for running all plugins of a specific extension point.",
            ("extension_point", "status", "profile"),
            exponential_buckets(0.0001, 2, 12),
        )
        self.plugin_duration = registry.histogram(
            "scheduler_plugin_execution_duration_seconds",
            "[ALPHA] Duration for running a plugin at a specific extension point.",
            ("plugin", "extension_point", "status"),
            exponential_buckets(0.00001, 1.5, 20),
        )
        self.preemption_attempts = registry.counter(
            "scheduler_preemption_attempts_total", "[STABLE] Total preemption attempts in the cluster till now"
        )
        self.preemption_victims_histogram = registry.histogram(
            "scheduler_preemption_victims",
            "[STABLE] Number of selected preemption victims",
            (),
            exponential_buckets(1, 2, 7),
        )
        self.preemption_goroutines_duration = registry.histogram(
            "scheduler_preemption_goroutines_duration_seconds",
            "[ALPHA] Duration in seconds for running goroutines for the preemption.",
            ("result",),
            exponential_buckets(0.01, 2, 20),
        )
        self.preemption_goroutines_total = registry.counter(
            "scheduler_preemption_goroutines_execution_total",
            "[ALPHA] Number of preemption goroutines executed.",
            ("result",),
        )
        # volumebinding/metrics/metrics.go, registered by metrics.Register as upstream's.
        self.volume_stage_errors = registry.counter(
            "scheduler_volume_scheduling_stage_error_total",
            "[ALPHA] Volume scheduling stage error count",
            ("operation",),
        )
        # Registered upstream but incremented nowhere in v1.36.3: never exposed there or here.
        registry.counter(
            "scheduler_volume_binder_cache_requests_total",
            "[ALPHA] Total number for request volume binding cache",
            ("operation",),
        )
        self.queue_incoming = registry.counter(
            "scheduler_queue_incoming_pods_total",
            "[STABLE] Number of pods added to scheduling queues by event and queue type.",
            ("queue", "event"),
        )
        self.algorithm_duration = registry.histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "[ALPHA] Scheduling algorithm latency in seconds",
            (),
            exponential_buckets(0.001, 2, 15),
        )
        self.event_handling_duration = registry.histogram(
            "scheduler_event_handling_duration_seconds",
            "[ALPHA] Event handling latency in seconds.",
            ("event",),
            exponential_buckets(0.0001, 2, 12),
        )
        self.scheduled_after_flush = registry.counter(
            "scheduler_pod_scheduled_after_flush_total",
            "[ALPHA] Number of pods that were successfully scheduled after being flushed from "
            "unschedulablePods due to timeout. This metric helps detect potential queueing hint "
            "misconfigurations or event handling issues.",
        )
        self.permit_wait_duration = registry.histogram(
            "scheduler_permit_wait_duration_seconds",
            "[BETA] Duration of waiting on permit.",
            ("result",),
            exponential_buckets(0.001, 2, 15),
        )
        self.hint_duration = registry.histogram(
            "scheduler_queueing_hint_execution_duration_seconds",
            "[ALPHA] Duration for running a queueing hint function of a plugin.",
            ("plugin", "event", "hint"),
            exponential_buckets(0.00001, 1.5, 20),
        )
        self.profile_reloads = registry.counter(
            "crd_scheduler_profile_reloads_total",
            "Profile builds by result: 'success' serves the new framework, 'invalid' keeps the last "
            "good one (or holds the profile's pods) and says why in the profile's status.",
            ("result",),
        )
        self.profile_reload_duration = registry.histogram(
            "crd_scheduler_profile_reload_duration_seconds",
            "Time to validate and build a changed profile and swap it in, in seconds.",
            ("result",),
            exponential_buckets(0.001, 2, 15),
        )
        # Our own family, as kube-scheduler's component-base serves kubernetes_build_info: always 1,
        # the facts in its labels (scheduler_core.version).
        registry.gauge(
            "crd_scheduler_build_info",
            "A metric with a constant '1' value labeled by the crd-scheduler version, the "
            "kube-scheduler version whose behaviour it matches, and the Python version.",
            ("version", "kubernetes_version", "python_version"),
        ).labels(version.VERSION, version.KUBERNETES_VERSION, version.PYTHON_VERSION).set(1)
        self._attempts: dict[tuple[str, str], tuple[CounterChild, HistogramChild]] = {}
        self._attempts_child = self.pod_scheduling_attempts.labels()
        self._sli: dict[int, HistogramChild] = {}
        self._incoming: dict[tuple[str, str], CounterChild] = {}
        self._algorithm_child = self.algorithm_duration.labels()
        self._events: dict[str, HistogramChild] = {}
        self._hints: dict[tuple[str, str, str], HistogramChild] = {}
        self._hint_budget = HINT_OBSERVATIONS_PER_INTERVAL
        self._hint_interval_start: float | None = None

    # -- scrape-time gauges (the queue registers its collectors) -------------------------------
    def collect(self, name: str, collect: Collect) -> None:
        """``collect`` computes the samples of the collected gauge ``name`` (:data:`COLLECTED`)."""
        help, labelnames = COLLECTED[name]
        self.registry.collected_gauge(name, help, labelnames, collect)

    def collect_profiles(self, serving: Collect, refused: Collect, held: Collect) -> None:
        """Our profile gauges, and the held pods also in ``scheduler_pending_pods`` as gated."""
        self.collect("crd_scheduler_profile_serving", serving)
        self.collect("crd_scheduler_profile_refused", refused)
        self.collect("crd_scheduler_held_pods", held)

        def gated() -> list[tuple[LabelValues, float]]:
            return [((GATED,), sum(value for _, value in held()))]

        self.collect("scheduler_pending_pods", gated)

    # -- the scheduling loop -------------------------------------------------------------------
    def sample_cycle(self) -> bool:
        """Whether this cycle records plugin durations (schedule_one.go ``rand.Intn(100) < 10``)."""
        return self._random() * 100 < self.plugin_sample_percent

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        """Upstream ``observeScheduleAttemptAndLatency``."""
        children = self._attempts.get((result, profile))
        if children is None:
            children = self._attempts[(result, profile)] = (
                self.schedule_attempts.labels(result, profile),
                self.attempt_duration.labels(result, profile),
            )
        children[0].inc()
        children[1].observe(seconds)

    def scheduled(self, attempts: int, sli_seconds: float | None) -> None:
        """At binding (schedule_one.go ``bindingCycle``): attempts, and the SLI when the pod's
        first entry into activeQ is known."""
        self._attempts_child.observe(attempts)
        if sli_seconds is not None:
            child = self._sli.get(attempts)
            if child is None:
                child = self._sli[attempts] = self.sli_duration.labels(attempts_label(attempts))
            child.observe(sli_seconds)

    def incoming(self, queue: str, event: str) -> None:
        """A pod entered sub-queue ``queue`` because of ``event``."""
        child = self._incoming.get((queue, event))
        if child is None:
            child = self._incoming[(queue, event)] = self.queue_incoming.labels(queue, event)
        child.inc()

    def algorithm(self, seconds: float) -> None:
        self._algorithm_child.observe(seconds)

    def event_handled(self, event: str, seconds: float) -> None:
        child = self._events.get(event)
        if child is None:
            child = self._events[event] = self.event_handling_duration.labels(event)
        child.observe(seconds)

    def hint_room(self) -> bool:
        """Whether the next hint run would be recorded (:data:`HINT_OBSERVATIONS_PER_INTERVAL`):
        the queue times a hint only then. Asked once per pending pod on each event of interest."""
        if self._hint_budget > 0:
            return True
        now = self.timer()
        start = self._hint_interval_start
        if start is not None and now - start < HINT_OBSERVATION_INTERVAL:
            return False
        self._hint_budget = HINT_OBSERVATIONS_PER_INTERVAL
        self._hint_interval_start = now
        return True

    def hint_ran(self, plugin: str, event: str, hint: str, seconds: float) -> None:
        """One hint run's duration, when :meth:`hint_room` said so (dropped otherwise)."""
        if self._hint_budget <= 0 and not self.hint_room():
            return
        if self._hint_interval_start is None:
            self._hint_interval_start = self.timer()
        self._hint_budget -= 1
        # Once per pending pod on each event of interest: the labelled child is kept.
        key = (plugin, event, hint)
        child = self._hints.get(key)
        if child is None:
            child = self._hints[key] = self.hint_duration.labels(plugin, event, hint)
        child.observe(seconds)

    def permit_waited(self, result: str, seconds: float) -> None:
        self.permit_wait_duration.labels(result).observe(seconds)

    def plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        self.plugin_duration.labels(plugin, point, status).observe(seconds)

    # -- preemption (through the plugins' Handle) -------------------------------------------------
    def preemption_attempted(self) -> None:
        self.preemption_attempts.inc()

    def preemption_victims(self, count: int) -> None:
        self.preemption_victims_histogram.observe(count)

    def volume_scheduling_stage_failed(self, operation: str) -> None:
        """volumebinding/binder.go: FindPodVolumes (``predicate``), AssumePodVolumes (``assume``),
        BindPodVolumes (``bind``) returning an error."""
        self.volume_stage_errors.labels(operation).inc()

    def preemption_goroutine_finished(self, result: str, seconds: float) -> None:
        """executor.go ``prepareCandidateAsync``'s deferred observations (SchedulerAsyncPreemption)."""
        self.preemption_goroutines_total.labels(result).inc()
        self.preemption_goroutines_duration.labels(result).observe(seconds)

    # -- profiles ------------------------------------------------------------------------------------
    def profile_reloaded(self, result: str, seconds: float) -> None:
        self.profile_reloads.labels(result).inc()
        self.profile_reload_duration.labels(result).observe(seconds)


def count_by(keys: Iterable[LabelValues]) -> list[tuple[LabelValues, float]]:
    """Samples counting each label-values tuple (for collected gauges)."""
    counts: dict[LabelValues, float] = {}
    for key in keys:
        counts[key] = counts.get(key, 0.0) + 1
    return list(counts.items())
