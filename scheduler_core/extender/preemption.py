"""Preemption with extenders: upstream ``callExtenders`` (``pkg/scheduler/framework/preemption/
preemption.go``, v1.36.3), reached by DefaultPreemption through its Handle.

Each interested extender with a ``preemptVerb``, in order, receives the candidates (node ->
victims and PDB violations; victims as UIDs to a node-cache-capable extender, as whole pods
otherwise) and answers the ones it keeps as UIDs, which are resolved back to the node's pods.
An ignorable extender's failure is skipped; a node it leaves without victims is dropped. A
non-ignorable extender's failure, or a node it leaves without victims, ends preemption with an
Error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from scheduler_core.extender.client import ExtenderError, HTTPExtender
from scheduler_core.framework import PodInfo, SnapshotLister, Status

log = logging.getLogger(__name__)


async def process_preemption(
    extenders: Sequence[HTTPExtender],
    pod: PodInfo,
    victims: dict[str, tuple[list[PodInfo], int]],
    snapshot: SnapshotLister,
) -> tuple[dict[str, tuple[list[PodInfo], int]], Status | None]:
    """Upstream ``callExtenders``: each preempting extender narrows the candidates (node ->
    victims, PDB violations); the UIDs it answers are resolved against the pods of the node in
    the snapshot (upstream ``convertToVictims`` over ``NodeInfos()``)."""
    for extender in extenders:
        if not victims:
            break
        if not extender.supports_preemption or not extender.is_interested(pod.pod):
            continue
        sent = {n: ([p.pod for p in pods], count) for n, (pods, count) in victims.items()}
        try:
            answer = await extender.process_preemption(pod.pod, sent)
            narrowed = _resolve_victims(extender, answer, snapshot)
        except ExtenderError as exc:
            if extender.ignorable:
                log.info("skipped extender %s as it returned error and has ignorable flag set: %s", extender.name, exc)
                continue
            return {}, Status.as_error(str(exc))
        for node in [n for n, (pods, _) in narrowed.items() if not pods]:
            if not extender.ignorable:
                return {}, Status.as_error(f'expected at least one victim pod on node "{node}"')
            del narrowed[node]
        victims = narrowed
    return victims, None


def _resolve_victims(
    extender: HTTPExtender, answer: Mapping[str, tuple[list[str], int]], snapshot: SnapshotLister
) -> dict[str, tuple[list[PodInfo], int]]:
    """Upstream ``convertToVictims``: UIDs back to pods; an unknown node or pod is an error."""
    resolved: dict[str, tuple[list[PodInfo], int]] = {}
    for node, (uids, violations) in answer.items():
        info = snapshot.get(node)
        if info is None:
            raise ExtenderError(f'nodeinfo not found for node name "{node}"')  # snapshot.go Get
        on_node: dict[str, PodInfo] = {p.uid: p for p in info.pods}
        pods = []
        for uid in uids:
            if uid not in on_node:
                raise ExtenderError(
                    f"extender: {extender.name} claims to preempt pod (UID: &{{{uid}}}) on node: {node}, "
                    "but the pod is not found on that node"
                )
            pods.append(on_node[uid])
        resolved[node] = (pods, violations)
    return resolved
