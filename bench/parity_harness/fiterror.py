"""Parsing kube-scheduler's FitError message back into reasons with counts.

Format (kubernetes v1.36.3 ``pkg/scheduler/framework/types.go``, ``FitError.Error``)::

    0/<all nodes> nodes are available: <PreFilter message>. <PostFilter message>
    0/<all nodes> nodes are available: <n> <reason>, <n> <reason>, .... <PostFilter message>

the "<n> <reason>" items sorted as strings; each node contributes each of its status reasons
once; nodes absent from the diagnosis (cut by a PreFilterResult) count with the absent-nodes
status. PostFilter messages (DefaultPreemption) start with "preemption: ".
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

_HEAD = re.compile(r"^0/(\d+) nodes are available: ")
_ITEM_SPLIT = re.compile(r", (?=\d+ )")
# DynamicResources' PostFilter reason, when there is one, comes first ("no new claims to
# deallocate, preemption: ..."): RunPostFilterPlugins joins the reasons with ", ".
_POST_FILTER = re.compile(r"\.? (?:[^.]*?, )?preemption: .*$", re.DOTALL)


@dataclass(frozen=True)
class FitError:
    all_nodes: int
    reasons: Counter[str]  # reason -> number of nodes; empty for a PreFilter rejection
    pre_filter: str | None  # the PreFilter message, when a PreFilter plugin rejected the pod


def parse(message: str) -> FitError:
    head = _HEAD.match(message)
    if head is None:
        raise ValueError(f"not a FitError message: {message!r}")
    body = _POST_FILTER.sub("", message[head.end() :]).removesuffix(".")
    if not re.match(r"^\d+ ", body):
        return FitError(int(head[1]), Counter(), body)
    reasons: Counter[str] = Counter()
    for item in _ITEM_SPLIT.split(body):  # every item starts with its count: the split keeps it so
        count, reason = item.split(" ", 1)
        reasons[reason] += int(count)
    return FitError(int(head[1]), reasons, None)
