"""Reading kube-scheduler's ``--v=10`` log: which nodes and pods it has seen, and each attempt.

klog's text format is ``I1122 10:29:01.933943   14605 schedule_one.go:982] "Message" k="v" k2=3``
(string values quoted as Go's ``%q``). The lines read, all from kubernetes v1.36.3
``pkg/scheduler``:

* ``eventhandlers.go``: "Add event for node", "Delete event for node" (V3),
  "Add event for scheduled pod" (V3): the scheduler cache has the object;
* ``schedule_one.go``: "Attempting to schedule pod" (V3) opens an attempt;
  "Plugin scored node for pod" (V10, ``prioritizeNodes``: the score after NormalizeScore and the
  weight, one line per plugin and node); "Calculated node's final score for pod" (V10, the sum);
  "Successfully bound pod to node" (V2, with ``feasibleNodes``); "Unable to schedule pod; no
  fit; waiting" (V2, ``err`` = the FitError message); "Error scheduling pod; retrying" (error);
* ``framework/runtime/batch.go``: "OpportunisticBatch provided node hint" (V3): the attempt
  checked one hinted node only, so its result says nothing about the others;
* ``eventhandlers.go``: "Delete event for scheduled pod" (V3): the cache no longer has the pod;
* ``framework/preemption/executor.go``: "Async Preemption finished completely" (V2, ``preemptor``):
  every victim of the preemptor's preemption has been preempted (or the preemption failed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_LINE = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ [^\]]*\] "((?:[^"\\]|\\.)*)"(.*)$')
_PAIR = re.compile(r'([\w.-]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)')
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)")
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}

ADD_NODE = "Add event for node"
DELETE_NODE = "Delete event for node"
ADD_SCHEDULED_POD = "Add event for scheduled pod"
ATTEMPT = "Attempting to schedule pod"
PLUGIN_SCORE = "Plugin scored node for pod"
FINAL_SCORE = "Calculated node's final score for pod"
EXTENDER_SCORE = "Extender scored node for pod"  # the extender's raw 0..10 score
BOUND = "Successfully bound pod to node"
NO_FIT = "Unable to schedule pod; no fit; waiting"
NO_NODES = "Unable to schedule pod; no nodes are registered to the cluster; waiting"
ERROR = "Error scheduling pod; retrying"
HINT = "OpportunisticBatch provided node hint"
GATED = "Status after running PreEnqueue plugin"  # backend/queue/scheduling_queue.go runPreEnqueuePlugin (V4)
UPDATE_SCHEDULED_POD = "Update event for scheduled pod"  # eventhandlers.go (V4)
NOMINATING = "Updating pod condition and nominated node name"  # schedule_one.go updatePod (V3)
DELETE_SCHEDULED_POD = "Delete event for scheduled pod"
PREEMPTION_DONE = "Async Preemption finished completely"
_WANTED = frozenset(
    {
        DELETE_SCHEDULED_POD,
        PREEMPTION_DONE,
        GATED,
        UPDATE_SCHEDULED_POD,
        NOMINATING,
        ADD_NODE,
        DELETE_NODE,
        ADD_SCHEDULED_POD,
        ATTEMPT,
        PLUGIN_SCORE,
        FINAL_SCORE,
        EXTENDER_SCORE,
        BOUND,
        NO_FIT,
        NO_NODES,
        ERROR,
        HINT,
    }
)
_WANTED_BYTES = tuple(f'{message}"'.encode() for message in _WANTED)


def extender_weight(url_prefix: str) -> int | None:
    """The weight the parity configuration gives the scenario extender at ``url_prefix``; None
    for the recorder, which only the kube-scheduler side has."""
    from bench.parity_harness.profile import EXTENDER_WEIGHTS

    return EXTENDER_WEIGHTS.get(url_prefix.rsplit("/", 1)[-1])


def go_unquote(text: str) -> str:
    """The string a Go ``%q`` literal (with its quotes) stands for."""

    def one(match: re.Match[str]) -> str:
        code = match[1]
        if code[0] in "xuU":
            return chr(int(code[1:], 16))
        if len(code) == 3:
            return chr(int(code, 8))
        return _SIMPLE_ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text[1:-1])


@dataclass(frozen=True)
class Record:
    message: str
    values: dict[str, str]


def parse_line(line: str) -> Record | None:
    """A structured klog line, or None (continuation lines of multi-line values, other text)."""
    match = _LINE.match(line)
    if match is None:
        return None
    values = {}
    for key, raw in _PAIR.findall(match[2]):
        values[key] = go_unquote(raw) if raw.startswith('"') else raw
    return Record(go_unquote(f'"{match[1]}"'), values)


@dataclass
class Attempt:
    """One scheduling attempt of one pod."""

    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    bound_node: str | None = None
    feasible_count: int | None = None
    fit_error: str | None = None
    error: str | None = None
    hinted: bool = False

    @property
    def finished(self) -> bool:
        return self.bound_node is not None or self.fit_error is not None or self.error is not None


@dataclass
class SchedulerLog:
    """What the log has said so far, indexed for the harness."""

    nodes: set[str] = field(default_factory=set)
    deleted_nodes: set[str] = field(default_factory=set)
    scheduled_pods: set[str] = field(default_factory=set)
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)
    # pod -> every PreEnqueue plugin that held it (upstream runs them in map order, so which of two
    # holding plugins answers first is random; a pod held by another is retried when it lets go).
    gated: dict[str, set[str]] = field(default_factory=dict)
    updated_pods: set[str] = field(default_factory=set)  # scheduled pods the cache saw updated
    # pod -> the node its first failed attempt nominated ("" for none): handleSchedulingFailure's
    # status update, logged after the attempt's "Unable to schedule pod" line.
    nominated: dict[str, str] = field(default_factory=dict)
    deleted_pods: set[str] = field(default_factory=set)  # scheduled pods the cache saw deleted
    preempted: set[str] = field(default_factory=set)  # preemptors whose async preemption is over

    def first(self, pod: str) -> Attempt | None:
        found = self.attempts.get(pod)
        return found[0] if found else None

    def feed(self, record: Record) -> None:
        message, values = record.message, record.values
        if message == ADD_NODE:
            self.nodes.add(values["node"])
            self.deleted_nodes.discard(values["node"])
        elif message == DELETE_NODE:
            self.nodes.discard(values["node"])
            self.deleted_nodes.add(values["node"])
        elif message == ADD_SCHEDULED_POD:
            self.scheduled_pods.add(values["pod"])
        elif message == ATTEMPT:
            self.attempts.setdefault(values["pod"], []).append(Attempt())
        elif message == GATED:
            self.gated.setdefault(values["pod"], set()).add(values.get("plugin", ""))
        elif message == UPDATE_SCHEDULED_POD:
            self.updated_pods.add(values["pod"])
        elif message == NOMINATING:
            self.nominated.setdefault(values["pod"], values.get("nominatedNodeName", ""))
        elif message == DELETE_SCHEDULED_POD:
            self.deleted_pods.add(values["pod"])
        elif message == PREEMPTION_DONE:
            self.preempted.add(values["preemptor"])
        else:
            self._feed_attempt(message, values)

    def _feed_attempt(self, message: str, values: dict[str, str]) -> None:
        attempts = self.attempts.get(values.get("pod", ""))
        if not attempts:
            return  # an attempt begun before this log was read
        attempt = attempts[-1]
        if message == PLUGIN_SCORE:
            attempt.scores.setdefault(values["node"], {})[values["plugin"]] = int(values["score"])
        elif message == EXTENDER_SCORE:
            # Weighted as prioritizeNodes adds it: score * weight * (MaxNodeScore / MaxExtenderPriority).
            extender = values["extender"]
            weight = extender_weight(extender)
            if weight is not None:  # not the harness's recorder (it does not prioritize: 0s)
                row = attempt.scores.setdefault(values["node"], {})
                row[extender] = row.get(extender, 0) + int(values["score"]) * weight * 10
        elif message == FINAL_SCORE:
            attempt.totals[values["node"]] = int(values["score"])
        elif message == BOUND:
            attempt.bound_node = values["node"]
            attempt.feasible_count = int(values["feasibleNodes"])
        elif message == NO_FIT:
            attempt.fit_error = values["err"]
        elif message == NO_NODES:
            attempt.fit_error = "no nodes available to schedule pods"
        elif message == ERROR:
            attempt.error = values.get("err", "error")
        elif message == HINT:
            attempt.hinted = True


class LogTail:
    """Follows a growing log file; ``poll()`` feeds the complete lines written since last time."""

    def __init__(self, path: Path, log: SchedulerLog | None = None) -> None:
        self.path = path
        self.log = log or SchedulerLog()
        self._offset = 0
        self._partial = b""

    def poll(self) -> None:
        with self.path.open("rb") as stream:
            stream.seek(self._offset)
            chunk = stream.read()
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        for raw in lines:
            start = raw.find(b'] "')
            if start < 0 or not raw.startswith(_WANTED_BYTES, start + 3):
                continue
            record = parse_line(raw.decode("utf-8", "replace"))
            if record is not None and record.message in _WANTED:
                self.log.feed(record)
