"""The registry and its text exposition (Prometheus format 0.0.4, as client_golang writes it)."""

from __future__ import annotations

import pytest

from scheduler_core.metrics.registry import Registry, exponential_buckets, format_value
from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from tests.promtext import FormatError, parse


@pytest.mark.parametrize(
    ("value", "text"),
    [
        # Go: strconv.FormatFloat(v, 'g', -1, 64), printed by `go run` for each value.
        pytest.param(1e-05, "1e-05", id="small-exponent"),
        pytest.param(0.0001, "0.0001", id="exponent--4-plain"),
        pytest.param(2.5e-07, "2.5e-07", id="two-digit-negative-exponent"),
        pytest.param(0.001, "0.001", id="milli"),
        pytest.param(1.0, "1", id="integral-float"),
        pytest.param(3, "3", id="int"),
        pytest.param(100.0, "100", id="hundred"),
        pytest.param(123456.0, "123456", id="exponent-5-plain"),
        pytest.param(1e6, "1e+06", id="exponent-6-e-form"),
        pytest.param(1234567.0, "1.234567e+06", id="e-form-with-digits"),
        pytest.param(1.5e15, "1.5e+15", id="large"),
        pytest.param(0.00001 * 1.5, "1.5000000000000002e-05", id="shortest-round-trip"),
        pytest.param(float("inf"), "+Inf", id="inf"),
        pytest.param(float("-inf"), "-Inf", id="minus-inf"),
        pytest.param(float("nan"), "NaN", id="nan"),
        pytest.param(0.0, "0", id="zero"),
        pytest.param(-0.5, "-0.5", id="negative"),
    ],
)
def test_numbers_print_as_go_prints_them(value: float, text: str) -> None:
    assert format_value(value) == text


def test_exponential_buckets_multiply_as_go_does() -> None:
    # metrics.ExponentialBuckets(0.001, 2, 15): 1 ms .. 16.384 s.
    buckets = exponential_buckets(0.001, 2, 15)
    assert [format_value(b) for b in (buckets[0], buckets[1], buckets[-1])] == ["0.001", "0.002", "16.384"]
    assert len(exponential_buckets(0.00001, 1.5, 20)) == 20
    with pytest.raises(ValueError):
        exponential_buckets(1, 1, 3)


def test_exposition_golden() -> None:
    registry = Registry(runtime=False)
    attempts = registry.counter("a_total", "Attempts.\nTwo lines \\ here.", ("result", "profile"))
    attempts.labels("scheduled", "ns/p").inc(2)
    attempts.labels("error", 'we"ird\\').inc()
    registry.counter("b_total", "No labels.")
    registry.counter("c_total", "A vector never used.", ("x",))
    histogram = registry.histogram("d_seconds", "Latency.", ("profile",), (1e-05, 0.1, 1, 1e6))
    child = histogram.labels("p")
    for value in (0.05, 0.1, 0.5, 7):
        child.observe(value)
    registry.collected_gauge("e", "Collected.", ("queue",), lambda: [(("backoff",), 2), (("active",), 1)])
    # A second source of the same gauge adds up (pending pods: the queue's and the held ones).
    registry.collected_gauge("e", "Collected.", ("queue",), lambda: [(("active",), 3)])
    assert registry.render() == (
        "# HELP a_total Attempts.\\nTwo lines \\\\ here.\n"
        "# TYPE a_total counter\n"
        'a_total{profile="ns/p",result="scheduled"} 2.0\n'
        'a_total{profile="we\\"ird\\\\",result="error"} 1.0\n'
        "# HELP b_total No labels.\n"
        "# TYPE b_total counter\n"
        "b_total 0.0\n"
        "# HELP d_seconds Latency.\n"
        "# TYPE d_seconds histogram\n"
        'd_seconds_bucket{le="1e-05",profile="p"} 0.0\n'
        'd_seconds_bucket{le="0.1",profile="p"} 2.0\n'
        'd_seconds_bucket{le="1",profile="p"} 3.0\n'  # Go's "1", not prometheus_client's "1.0"
        'd_seconds_bucket{le="1e+06",profile="p"} 4.0\n'
        'd_seconds_bucket{le="+Inf",profile="p"} 4.0\n'
        'd_seconds_count{profile="p"} 4.0\n'
        'd_seconds_sum{profile="p"} 7.65\n'
        "# HELP e Collected.\n"
        "# TYPE e gauge\n"
        'e{queue="active"} 4.0\n'
        'e{queue="backoff"} 2.0\n'
    )


def test_the_process_and_python_collectors() -> None:
    families = parse(Registry(runtime=True).render())
    assert families["process_cpu_seconds_total"].type == "counter"
    assert families["process_resident_memory_bytes"].value() > 0
    assert families["process_start_time_seconds"].type == "gauge"
    assert families["python_info"].type == "gauge"
    assert families["python_gc_collections_total"].type == "counter"
    assert "process_cpu_seconds_total" not in parse(Registry(runtime=False).render() or "")


def test_registries_stay_apart() -> None:
    one, two = SchedulerMetrics(), SchedulerMetrics()
    one.attempt("scheduled", "ns/p", 0.002)
    assert "scheduler_schedule_attempts_total" in parse(one.registry.render())
    assert "scheduler_schedule_attempts_total" not in parse(two.registry.render())


def test_the_scheduler_families_parse_with_upstream_names_types_and_help() -> None:
    metrics = SchedulerMetrics()
    metrics.attempt("scheduled", "ns/p", 0.002)
    metrics.scheduled(16, 0.5)
    metrics.extension_point_duration.labels("Filter", "Success", "ns/p").observe(0.0003)
    metrics.plugin("NodeResourcesFit", "Filter", "Success", 0.00002)
    metrics.preemption_victims(3)
    metrics.queue_incoming.labels("active", "PodAdd").inc()
    metrics.profile_reloaded("success", 0.01)
    families = parse(metrics.registry.render())
    expected = {
        "scheduler_schedule_attempts_total": "counter",
        "scheduler_scheduling_attempt_duration_seconds": "histogram",
        "scheduler_pod_scheduling_sli_duration_seconds": "histogram",
        "scheduler_pod_scheduling_attempts": "histogram",
        "scheduler_framework_extension_point_duration_seconds": "histogram",
        "scheduler_plugin_execution_duration_seconds": "histogram",
        "scheduler_preemption_attempts_total": "counter",
        "scheduler_preemption_victims": "histogram",
        "scheduler_queue_incoming_pods_total": "counter",
        "scheduler_scheduling_algorithm_duration_seconds": "histogram",
        "scheduler_pod_scheduled_after_flush_total": "counter",
        "crd_scheduler_profile_reloads_total": "counter",
        "crd_scheduler_profile_reload_duration_seconds": "histogram",
        "crd_scheduler_build_info": "gauge",
    }
    ours = {name: f.type for name, f in families.items() if not name.startswith(("process_", "python_"))}
    assert ours == expected
    # Help strings as component-base exposes them, stability level first (metrics.go).
    assert families["scheduler_preemption_attempts_total"].help == (
        "[STABLE] Total preemption attempts in the cluster till now"
    )
    sli = families["scheduler_pod_scheduling_sli_duration_seconds"]
    assert sli.value("_count", attempts="15+") == 1  # getAttemptsLabel caps at 15
    victims = families["scheduler_preemption_victims"]
    assert victims.value("_bucket", le="2") == 0 and victims.value("_bucket", le="4") == 1
    assert [labels for labels in victims.values("_bucket")][-2:] == [(("le", "64"),), (("le", "+Inf"),)]
    buckets = families["scheduler_framework_extension_point_duration_seconds"].values("_bucket")
    assert len(buckets) == 13  # ExponentialBuckets(0.0001, 2, 12) and +Inf


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a 1", id="no-final-newline"),
        pytest.param('a{x="1} 1\n', id="unterminated-label"),
        pytest.param("a one\n", id="not-a-number"),
        pytest.param("a 1\n# TYPE a counter\n", id="type-after-samples"),
        pytest.param(
            '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', id="not-cumulative"
        ),
        pytest.param('# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', id="no-inf-bucket"),
    ],
)
def test_the_reader_refuses_what_a_scraper_would(text: str) -> None:
    with pytest.raises(FormatError):
        parse(text)


def test_a_metric_registered_twice_is_refused() -> None:
    registry = Registry()
    registry.counter("x_total", "X.")
    with pytest.raises(ValueError, match="registered twice"):
        registry.gauge("x_total", "X again.")
