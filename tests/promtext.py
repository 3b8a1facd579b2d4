"""A strict reader of the Prometheus text exposition format 0.0.4, for tests.

It checks what a scraper relies on (the grammar of ``prometheus/common/expfmt``'s text parser)
and more than a scraper needs: a family's ``# HELP`` and ``# TYPE`` come once, before its
samples; metric and label names are valid; label values are quoted and escaped; values
parse as Go floats; a histogram's buckets are cumulative, end with ``le="+Inf"``, and that
bucket equals ``_count``. It returns the families with their samples.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}

Labels = tuple[tuple[str, str], ...]


class FormatError(ValueError):
    pass


@dataclass
class Family:
    name: str
    help: str = ""
    type: str = "untyped"
    samples: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    def value(self, suffix: str = "", **labels: str) -> float:
        """The one sample of ``name + suffix`` with exactly these labels (KeyError if none)."""
        for name, got, value in self.samples:
            if name == self.name + suffix and got == labels:
                return value
        raise KeyError(f"{self.name}{suffix}{labels}")

    def values(self, suffix: str = "") -> dict[Labels, float]:
        return {tuple(sorted(got.items())): v for name, got, v in self.samples if name == self.name + suffix}


def _unescape(text: str, *, quote: bool) -> str:
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 1
            if i == len(text):
                raise FormatError("a trailing backslash")
            nxt = text[i]
            if nxt == "n":
                out.append("\n")
            elif nxt == "\\" or (quote and nxt == '"'):
                out.append(nxt)
            else:
                raise FormatError(f"unknown escape \\{nxt}")
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _float(text: str) -> float:
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise FormatError(f"{text!r} is not a number")
    return float(text)


def _labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    rest = text
    while rest:
        match = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)', rest)
        if match is None:
            raise FormatError(f"bad labels {text!r}")
        name, value = match.group(1), _unescape(match.group(2), quote=True)
        if name in labels:
            raise FormatError(f"label {name} twice in {text!r}")
        labels[name] = value
        rest = rest[match.end() :]
    return labels


def _base(name: str, families: dict[str, Family]) -> Family | None:
    for suffix in ("_bucket", "_sum", "_count", ""):
        if suffix and name.endswith(suffix) and name[: -len(suffix)] in families:
            family = families[name[: -len(suffix)]]
            if family.type in ("histogram", "summary"):
                return family
    return families.get(name)


def parse(text: str) -> dict[str, Family]:
    if text and not text.endswith("\n"):
        raise FormatError("the exposition must end with a newline")
    families: dict[str, Family] = {}
    sampled: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.fullmatch(name):
                    raise FormatError(f"line {number}: bad metric name {name!r}")
                if name in sampled:
                    raise FormatError(f"line {number}: {parts[1]} of {name} after its samples")
                family = families.setdefault(name, Family(name))
                arg = parts[3] if len(parts) == 4 else ""
                if parts[1] == "HELP":
                    family.help = _unescape(arg, quote=False)
                else:
                    if arg not in TYPES:
                        raise FormatError(f"line {number}: unknown type {arg!r}")
                    family.type = arg
            continue
        match = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?", line)
        if match is None:
            raise FormatError(f"line {number}: not a sample: {line!r}")
        name, labels, value = match.group(1), _labels(match.group(2) or ""), _float(match.group(3))
        owner = _base(name, families)
        if owner is None:
            owner = families.setdefault(name, Family(name))
        sampled.add(owner.name)
        owner.samples.append((name, labels, value))
    for family in families.values():
        if family.type == "histogram":
            _check_histogram(family)
    return families


def _check_histogram(family: Family) -> None:
    series: dict[Labels, list[tuple[float, float]]] = {}
    for name, labels, value in family.samples:
        if name == family.name + "_bucket":
            if "le" not in labels:
                raise FormatError(f"{family.name}: a bucket without le")
            rest = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
            series.setdefault(rest, []).append((_float(labels["le"]), value))
    for rest, buckets in series.items():
        bounds = [b for b, _ in buckets]
        counts = [c for _, c in buckets]
        if bounds != sorted(bounds) or not math.isinf(bounds[-1]):
            raise FormatError(f"{family.name}{dict(rest)}: buckets out of order or no +Inf")
        if counts != sorted(counts):
            raise FormatError(f"{family.name}{dict(rest)}: buckets are not cumulative")
        if family.value("_count", **dict(rest)) != counts[-1]:
            raise FormatError(f"{family.name}{dict(rest)}: +Inf bucket differs from _count")
