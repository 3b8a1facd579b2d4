"""Each pod's way from creation to binding, from the API server's audit log (issue 25).

    CRD_SCHEDULER_DEVCLUSTER_AUDIT_LOG=/tmp/audit.log python -m bench.suite --mode cluster ...
    python -m bench.timeline /tmp/audit.log            # one line per pod, then the medians
    python -m bench.timeline /tmp/audit.log --writes   # and every write, as offsets

A dev cluster started with ``CRD_SCHEDULER_DEVCLUSTER_AUDIT_LOG`` logs the writes of pods,
bindings, pod statuses and ``resource.k8s.io`` objects, each with the time the API server
received it and the time it answered (hack/devcluster/README.md). Both schedulers of a
cluster run write to the same server, so their pods' timelines compare on one clock, with the
controllers' writes (the resourceclaim controller's claim and the pod's
``resourceClaimStatuses``) in between. Who wrote is read from the user agent: ``crd-scheduler``,
``kube-scheduler/...``, ``kube-controller-manager/...`` (named by its service account), and
anyone else (the bench creating the pods).

Per pod bound in the log, from the moment its create reached the API server:

- ``ready``: when the last write of a controller for it (its claims, its status) was answered
  before its scheduler's first write; the pod's create when there is none;
- ``reaction``: from ``ready`` to its scheduler's first write for it (the watch delivering the
  change, the queue, the scheduling cycle);
- ``writes``: from that first write to the binding's answer (PreBind's writes, the
  nomination, the binding);
- ``total``: creation to binding.

A pod's writes are those naming it, and those of claims whose name starts with its name and a
dash (the names the resourceclaim controller gives the claims of its templates).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

WRITES = frozenset({"create", "update", "patch", "delete"})
SCHEDULERS = ("crd-scheduler", "kube-scheduler")
PHASES = ("ready", "reaction", "writes", "total")


@dataclass(frozen=True)
class Write:
    received: float  # seconds since the epoch
    answered: float
    actor: str
    verb: str
    resource: str  # with its subresource: "pods/binding"
    namespace: str
    name: str
    code: int


@dataclass
class PodTimeline:
    namespace: str
    name: str
    created: float  # its create reached the API server
    writes: list[Write] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def binding(self) -> Write | None:
        return next((w for w in self.writes if w.resource == "pods/binding" and w.code < 300), None)

    def phases(self) -> dict[str, float] | None:
        """``ready``, ``reaction``, ``writes`` and ``total`` in seconds (module doc); None
        when the log has no binding of the pod."""
        binding = self.binding()
        if binding is None:
            return None
        first = next(w for w in self.writes if w.actor == binding.actor)
        before = [w.answered for w in self.writes if w.actor.startswith("controller:") and w.received < first.received]
        ready = max(before, default=self.created)
        return {
            "ready": ready - self.created,
            "reaction": first.received - ready,
            "writes": binding.answered - first.received,
            "total": binding.answered - self.created,
        }


def _time(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def actor(user_agent: str, user: str) -> str:
    """Who wrote (module doc)."""
    for scheduler in SCHEDULERS:
        if user_agent.startswith(scheduler):
            return scheduler
    if user_agent.startswith("kube-controller-manager/"):
        return "controller:" + user.rpartition(":")[2]
    return "client"


def read(lines: Iterable[str]) -> list[PodTimeline]:
    """The pods created in the log, each with the writes of it and of its claims, in the order
    the API server received them. A name created again (a workload's next run) is a new pod:
    a write belongs to the last one created before it."""
    created: dict[tuple[str, str], list[PodTimeline]] = {}
    writes: list[Write] = []
    for line in lines:
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        if event.get("verb") not in WRITES or event.get("stage") != "ResponseComplete":
            continue
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        name = ref.get("name") or ((event.get("responseObject") or {}).get("metadata") or {}).get("name", "")
        write = Write(
            received=_time(event["requestReceivedTimestamp"]),
            answered=_time(event["stageTimestamp"]),
            actor=actor(event.get("userAgent", ""), (event.get("user") or {}).get("username", "")),
            verb=event["verb"],
            resource=resource,
            namespace=ref.get("namespace", ""),
            name=name,
            code=int((event.get("responseStatus") or {}).get("code") or 0),
        )
        writes.append(write)
    writes.sort(key=lambda w: w.received)
    pods: list[PodTimeline] = []
    for write in writes:
        if write.resource == "pods" and write.verb == "create":
            if write.code < 300 and write.name:
                pod = PodTimeline(write.namespace, write.name, write.received)
                created.setdefault((write.namespace, write.name), []).append(pod)
                pods.append(pod)
            continue
        owner = _owner(created, write)
        if owner is not None:
            owner.writes.append(write)
    return pods


def _owner(created: dict[tuple[str, str], list[PodTimeline]], write: Write) -> PodTimeline | None:
    """The pod a write is for: the pod it names, or for a claim the pod whose name and a dash
    start the claim's (the longest such name); of that name, the last created before it."""
    if write.resource.startswith("pods"):
        key: tuple[str, str] | None = (write.namespace, write.name)
    elif write.resource.startswith("resourceclaims"):
        names = [name for ns, name in created if ns == write.namespace and write.name.startswith(f"{name}-")]
        key = (write.namespace, max(names, key=len)) if names else None
    else:
        key = None
    earlier = [pod for pod in created.get(key, ()) if pod.created <= write.received] if key else []
    return earlier[-1] if earlier else None


def summary(pods: list[PodTimeline]) -> dict[str, dict[str, Any]]:
    """Per scheduler: the pods it bound and the median of each phase, in milliseconds."""
    by_scheduler: dict[str, list[dict[str, float]]] = {}
    for pod in pods:
        phases = pod.phases()
        binding = pod.binding()
        if phases is not None and binding is not None:
            by_scheduler.setdefault(binding.actor, []).append(phases)
    return {
        scheduler: {"pods": len(rows)}
        | {f"{phase}_ms": round(statistics.median(row[phase] for row in rows) * 1000, 1) for phase in PHASES}
        for scheduler, rows in sorted(by_scheduler.items())
    }


def render(pods: list[PodTimeline], *, with_writes: bool) -> str:
    lines = [f"{'pod':<40} {'scheduler':<15}" + "".join(f" {phase + ' ms':>12}" for phase in PHASES)]
    for pod in pods:
        phases, binding = pod.phases(), pod.binding()
        if phases is None or binding is None:
            lines.append(f"{pod.key:<40} {'(not bound)':<15}")
            continue
        lines.append(
            f"{pod.key:<40} {binding.actor:<15}" + "".join(f" {phases[phase] * 1000:12.1f}" for phase in PHASES)
        )
        if with_writes:
            for write in pod.writes:
                offset, took = (write.received - pod.created) * 1000, (write.answered - write.received) * 1000
                lines.append(
                    f"    +{offset:7.1f} ms {write.actor:<32} {write.verb:<6} "
                    f"{write.resource} {write.name} -> {write.code} in {took:.1f} ms"
                )
    lines.append("")
    lines.append("medians (ms): " + json.dumps(summary(pods)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.timeline", description=__doc__.splitlines()[0])
    parser.add_argument("audit_log", type=Path, help="the dev cluster's audit log (CRD_SCHEDULER_DEVCLUSTER_AUDIT_LOG)")
    parser.add_argument("--writes", action="store_true", help="list every write of each pod")
    parser.add_argument("--json", action="store_true", help="the medians per scheduler as JSON only")
    args = parser.parse_args(argv)
    try:
        with args.audit_log.open() as lines:
            pods = read(lines)
    except (OSError, ValueError, KeyError) as error:
        print(f"{args.audit_log}: cannot read an audit log: {error}", file=sys.stderr)
        return 1
    print(json.dumps(summary(pods)) if args.json else render(pods, with_writes=args.writes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
