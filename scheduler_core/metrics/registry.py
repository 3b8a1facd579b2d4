"""A small metrics registry and its Prometheus text exposition (format 0.0.4).

The scheduler core stays dependency-free (no ``prometheus_client``): this module is the whole
of what ``/metrics`` needs. Counters, gauges and histograms come as label vectors; a vector
hands out one *child* per label values, and the hot path keeps the child it uses, so an
observation is an index computation and two additions. Gauges that describe state the
scheduler already keeps (queue lengths) are *collected* at scrape time from a callback
instead of being kept up to date on every move.

The exposition follows client_golang (``prometheus/common/expfmt/text_create.go``), which is
what kube-scheduler serves:

* families sorted by name, samples sorted by label values, label names sorted within a
  sample (``MakeLabelPairs`` sorts them), ``le`` last on histogram buckets;
* ``# HELP`` escapes ``\\`` and newlines, label values also ``"``;
* numbers as Go's ``strconv.FormatFloat(v, 'g', -1, 64)``: ``1e-05``, ``0.001``, ``1``,
  ``1e+06``, ``+Inf``, so bucket bounds print exactly as upstream's ``le`` labels do;
* a vector with no child yet is not exposed (as client_golang leaves out empty families);
  a metric without labels always is.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Generic, TypeVar

C = TypeVar("C")
F = TypeVar("F", bound="_Family")

_LE_INF = 'le="+Inf"'
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

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


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _escape_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    pairs = sorted(zip(names, values, strict=True))
    body = ",".join(f'{name}="{_escape_label(value)}"' for name, value in pairs)
    if extra:
        body = f"{body},{extra}" if body else extra
    return "{" + body + "}" if body else ""


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

    def dec(self, amount: float = 1.0) -> None:
        self.value -= amount


class HistogramChild:
    """Non-cumulative counts per bucket (the last one is ``+Inf``), made cumulative on render."""

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
    kind = ""

    def __init__(self, name: str, help: str, labelnames: Sequence[str]) -> None:
        self.name = name
        self.help = help
        self.labelnames = tuple(labelnames)

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {_escape_help(self.help)}", f"# TYPE {self.name} {self.kind}"]

    def samples(self) -> list[str]:
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
        return sorted(self._children.items())

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

    def samples(self) -> list[str]:
        return _scalar_samples(self, ((values, child.value) for values, child in self.children()))


class Gauge(_Vector[GaugeChild]):
    kind = "gauge"

    def _new(self) -> GaugeChild:
        return GaugeChild()

    def set(self, value: float) -> None:
        self.labels().set(value)

    def samples(self) -> list[str]:
        return _scalar_samples(self, ((values, child.value) for values, child in self.children()))


class Histogram(_Vector[HistogramChild]):
    kind = "histogram"

    def __init__(self, name: str, help: str, labelnames: Sequence[str], buckets: Sequence[float]) -> None:
        bounds = tuple(float(b) for b in buckets)
        if list(bounds) != sorted(set(bounds)) or not bounds or math.isinf(bounds[-1]):
            raise ValueError(f"{name}: buckets must be finite and strictly increasing")
        self.bounds = bounds
        super().__init__(name, help, labelnames)

    def _new(self) -> HistogramChild:
        return HistogramChild(self.bounds)

    def observe(self, value: float) -> None:
        self.labels().observe(value)

    def samples(self) -> list[str]:
        lines: list[str] = []
        names = self.labelnames
        for values, child in self.children():
            cumulative = 0
            for bound, count in zip(self.bounds, child.counts, strict=False):
                cumulative += count
                le = f'le="{format_value(bound)}"'
                lines.append(f"{self.name}_bucket{_labels(names, values, le)} {cumulative}")
            total = cumulative + child.counts[-1]
            lines.append(f"{self.name}_bucket{_labels(names, values, _LE_INF)} {total}")
            lines.append(f"{self.name}_sum{_labels(names, values)} {format_value(child.sum)}")
            lines.append(f"{self.name}_count{_labels(names, values)} {total}")
        return lines


class CollectedGauge(_Family):
    """A gauge whose samples a callback computes at scrape time."""

    kind = "gauge"

    def __init__(self, name: str, help: str, labelnames: Sequence[str], collect: Collect) -> None:
        super().__init__(name, help, labelnames)
        self.collect = collect

    def values(self) -> dict[LabelValues, float]:
        return dict(self.collect())

    def samples(self) -> list[str]:
        return _scalar_samples(self, sorted(self.collect()))


def _scalar_samples(family: _Family, values: Iterable[tuple[LabelValues, float]]) -> list[str]:
    return [f"{family.name}{_labels(family.labelnames, labels)} {format_value(value)}" for labels, value in values]


class Registry:
    """Named metric families; ``render`` is the body of ``GET /metrics``."""

    def __init__(self) -> None:
        self._families: dict[str, _Family] = {}

    def _add(self, family: F) -> F:
        if family.name in self._families:
            raise ValueError(f"metric {family.name!r} is registered twice")
        self._families[family.name] = family
        return family

    def counter(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Counter:
        return self._add(Counter(name, help, labelnames))

    def gauge(self, name: str, help: str, labelnames: Sequence[str] = ()) -> Gauge:
        return self._add(Gauge(name, help, labelnames))

    def histogram(self, name: str, help: str, labelnames: Sequence[str], buckets: Sequence[float]) -> Histogram:
        return self._add(Histogram(name, help, labelnames, buckets))

    def collected_gauge(self, name: str, help: str, labelnames: Sequence[str], collect: Collect) -> CollectedGauge:
        return self._add(CollectedGauge(name, help, labelnames, collect))

    def get(self, name: str) -> _Family:
        return self._families[name]

    def render(self) -> str:
        lines: list[str] = []
        for name in sorted(self._families):
            family = self._families[name]
            samples = family.samples()
            if samples:
                lines += family.header()
                lines += samples
        return "\n".join(lines) + "\n" if lines else ""
