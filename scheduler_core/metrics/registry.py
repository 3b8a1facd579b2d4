"""The metrics registry: ``prometheus_client`` for the registry, the exposition and the process
and runtime collectors; label vectors of our own for what the scheduling cycle observes.

Why both (``docs/observability.md`` has the figures): a ``prometheus_client`` histogram
observation takes a lock per bucket and per sum and scans the bounds linearly, about six
times the cost of ours, and the scheduling cycle makes about nine of them per pod; with its
children on the hot path, ``bench/run.py SchedulingBasic`` lost more than the 3 % the project
allows. So the hot path keeps lock-free children (an observation is a dict lookup the caller
keeps, a bisect and two additions: the scheduler's loop is one thread), and each of our
vectors is a ``prometheus_client`` *collector* that turns its children into metric families
at scrape time. Everything else is ``prometheus_client``'s: one ``CollectorRegistry`` per
:class:`Registry` (``auto_describe``, so a name registered twice is refused when registered),
``generate_latest`` for the text format 0.0.4 (numbers as Go prints them, escaping as
client_golang), and the ``process_*`` and ``python_*`` collectors every Python component has.
Histogram bounds are the one thing printed here: ``le`` as Go's ``strconv.FormatFloat(v, 'g',
-1, 64)`` (``le="1"``, ``le="1e-05"``), as kube-scheduler's, where ``prometheus_client`` would
print ``le="1.0"``: a query or recording rule that names a bucket keeps matching.

What still follows client_golang (``prometheus/common/expfmt``), as kube-scheduler serves:
samples sorted by label values and label names sorted within a sample, ``le`` last; a vector
with no child yet is not exposed (client_golang leaves empty families out); a metric without
labels always is; families sorted by name. Gauges that describe state the scheduler already keeps (queue lengths, cache
sizes) are *collected* at scrape time from a callback instead of being kept up to date on
every move.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

C = TypeVar("C")
F = TypeVar("F", bound="_Family")

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4

LabelValues = tuple[str, ...]
Collect = Callable[[], Iterable[tuple[LabelValues, float]]]


def exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Upstream ``prometheus.ExponentialBuckets``: ``start * factor**i`` computed by repeated
    multiplication, as Go does, so the bounds are bit-identical to kube-scheduler's."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError("exponential_buckets needs count >= 1, start > 0 and factor > 1")
    bounds = []
    bound = start
    for _ in range(count):
        bounds.append(bound)
        bound *= factor
    return tuple(bounds)


def format_value(value: float) -> str:
    """Go's ``strconv.FormatFloat(value, 'g', -1, 64)``: the shortest digits that read back
    to ``value``, in exponent form when the decimal exponent is below -4 or at least 6
    (``strconv/ftoa.go``: with the shortest precision, ``%g`` decides with ``eprec = 6``)."""
    if isinstance(value, int):
        value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # digits before the decimal point (Go's digs.dp)
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        out = f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    elif point <= 0:
        out = "0." + "0" * -point + text
    elif point >= len(text):
        out = text + "0" * (point - len(text))
    else:
        out = text[:point] + "." + text[point:]
    return ("-" if sign else "") + out


class CounterChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up")
        self.value += amount


class GaugeChild:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def set(self, value: float) -> None:
        self.value = value

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class HistogramChild:
    """Non-cumulative counts per bucket (the last one is ``+Inf``), made cumulative on collect."""

    __slots__ = ("_bounds", "counts", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self._bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # A value equal to a bound belongs to that bound's bucket (``le``).
        self.counts[bisect_left(self._bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)


class _Family:
    """A ``prometheus_client`` collector of one family."""

    kind = ""

    def __init__(self, name: str, help: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)
        # client_golang sorts label names within a sample (MakeLabelPairs): the order we expose.
        self._order = sorted(range(len(self.labelnames)), key=self.labelnames.__getitem__)
        self._sorted_names = [self.labelnames[i] for i in self._order]

    def _family(self) -> Metric:
        if self.kind == "counter":
            return CounterMetricFamily(self.name, self.help, labels=self._sorted_names)
        if self.kind == "histogram":
            return HistogramMetricFamily(self.name, self.help, labels=self._sorted_names)
        return GaugeMetricFamily(self.name, self.help, labels=self._sorted_names)

    def _values(self, values: LabelValues) -> list[str]:
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} has labels {self.labelnames}, got {values}")
        return [values[i] for i in self._order]

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        raise NotImplementedError


class _Vector(_Family, Generic[C]):
    def __init__(self, name: str, help: str, labelnames: Sequence[str]) -> None:
        super().__init__(name, help, labelnames)
        self._children: dict[LabelValues, C] = {}
        if not self.labelnames:
            self._children[()] = self._new()

    def _new(self) -> C:
        raise NotImplementedError

    def labels(self, *values: str) -> C:
        child = self._children.get(values)
        if child is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name} has labels {self.labelnames}, got {values}")
            child = self._children[values] = self._new()
        return child

    def children(self) -> list[tuple[LabelValues, C]]:
        return sorted(self._children.items(), key=lambda item: self._values(item[0]))

    def clear(self) -> None:
        self._children.clear()
        if not self.labelnames:
            self._children[()] = self._new()


class Counter(_Vector[CounterChild]):
    kind = "counter"

    def _new(self) -> CounterChild:
        return CounterChild()

    def inc(self, amount: float = 1.0) -> None:
        """For a counter without labels."""
        self.labels().inc(amount)

    def collect(self) -> Iterator[Metric]:
        return _scalar(self, [(values, child.value) for values, child in self.children()])


class Gauge(_Vector[GaugeChild]):
    kind = "gauge"

    def _new(self) -> GaugeChild:
        return GaugeChild()

    def set(self, value: float) -> None:
        self.labels().set(value)

    def collect(self) -> Iterator[Metric]:
        return _scalar(self, [(values, child.value) for values, child in self.children()])


class Histogram(_Vector[HistogramChild]):
    kind = "histogram"

    def __init__(self, name: str, help: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        bounds = tuple(float(b) for b in buckets)
        if list(bounds) != sorted(set(bounds)) or not bounds or math.isinf(bounds[-1]):
            raise ValueError(f"{name}: buckets must be finite and strictly increasing")
        self.bounds = bounds
        self._les = [format_value(b) for b in bounds] + ["+Inf"]
        super().__init__(name, help, labelnames)

    def _new(self) -> HistogramChild:
        return HistogramChild(self.bounds)

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def collect(self) -> Iterator[Metric]:
        children = self.children()
        if not children:
            return
        family = self._family()
        assert isinstance(family, HistogramMetricFamily)
        for values, child in children:
            cumulative, buckets = 0, []
            for le, count in zip(self._les, child.counts, strict=True):
                cumulative += count
                buckets.append((le, float(cumulative)))
            family.add_metric(self._values(values), buckets, child.sum)
        yield family


class CollectedGauge(_Family):
    """A gauge whose samples callbacks compute at scrape time (summed per label values when
    several callbacks give the same ones: e.g. pending pods from the queue and from the held)."""

    kind = "gauge"

    def __init__(self, name: str, help: str, labelnames: Sequence[str], collect: Collect) -> None:
        super().__init__(name, help, labelnames)
        self.sources = [collect]

    def values(self) -> dict[LabelValues, float]:
        totals: dict[LabelValues, float] = {}
        for source in self.sources:
            for values, value in source():
                totals[values] = totals.get(values, 0.0) + value
        return totals

    def collect(self) -> Iterator[Metric]:
        return _scalar(self, sorted(self.values().items(), key=lambda item: self._values(item[0])))


def _scalar(family: _Family, samples: list[tuple[LabelValues, float]]) -> Iterator[Metric]:
    if not samples:
        return
    metric = family._family()
    assert isinstance(metric, CounterMetricFamily | GaugeMetricFamily)
    for values, value in samples:
        metric.add_metric(family._values(values), value)
    yield metric


class Registry:
    """Named metric families in a ``prometheus_client.CollectorRegistry`` of their own (one per
    scheduler: tests stay apart); ``render`` is the body of ``GET /metrics``.

    ``runtime``: also the ``process_*`` (``ProcessCollector``: CPU, memory, open files, start
    time, from ``/proc``), ``python_info`` (``PlatformCollector``) and ``python_gc_*``
    (``GCCollector``) families."""

    def __init__(self, *, runtime: bool = False) -> None:
        self.collectors = CollectorRegistry(auto_describe=True)
        self._families: dict[str, _Family] = {}
        if runtime:
            ProcessCollector(registry=self.collectors)
            PlatformCollector(registry=self.collectors)
            GCCollector(registry=self.collectors)

    def _add(self, family: F) -> F:
        if family.name in self._families:
            raise ValueError(f"metric {family.name!r} is registered twice")
        self.collectors.register(family)
        self._families[family.name] = family
        return family

    def counter(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Counter:
        return self._add(Counter(name, help, labelnames))

    def gauge(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Gauge:
        return self._add(Gauge(name, help, labelnames))

    def histogram(self, name: str, help: str, labelnames: Sequence[str], buckets: Sequence[float]) -> Histogram:
        return self._add(Histogram(name, help, labelnames, buckets))

    def collected_gauge(self, name: str, help: str, labelnames: Sequence[str], collect: Collect) -> CollectedGauge:
        """A collected gauge; registered again under the same name and labels, the callbacks add up."""
        family = self._families.get(name)
        if isinstance(family, CollectedGauge) and family.labelnames == tuple(labelnames):
            family.sources.append(collect)
            return family
        return self._add(CollectedGauge(name, help, labelnames, collect))

    def get(self, name: str) -> _Family:
        return self._families[name]

    def names(self) -> list[str]:
        """Our families' names (the process and runtime collectors' not included)."""
        return sorted(self._families)

    def collect(self) -> Iterator[Metric]:
        """Every family, sorted by name as client_golang's ``Gather`` sorts them."""
        return iter(sorted(self.collectors.collect(), key=lambda family: family.name))

    def render(self) -> str:
        return generate_latest(self).decode()
