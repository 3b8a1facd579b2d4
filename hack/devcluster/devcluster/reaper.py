"""What a kubelet does with a deleted pod, for the pods of kwok's nodes: ``scripts/dev-cluster
kwok-reaper``, started and stopped with kwok (``kwok.start``, ``kwok.stop``).

kwok v0.8.0's shipped pod-delete Stage (``kustomize/stage/pod/fast/pod-delete.yaml``) deletes a
pod that has a deletionTimestamp at once and by name only (``pkg/kwok/controllers/
pod_controller.go``, ``deleteResource``). Both differ from a kubelet, and upstream's e2e specs
see it:

- by name: ``Get2NodesThatCanRunPod`` (test/e2e/scheduling/predicates.go) deletes a pod with
  grace 0 and creates one of the same name at once; kwok's late delete of the old pod took the
  new one. A kubelet deletes with the old pod's UID as a precondition
  (pkg/kubelet/status/status_manager.go);
- at once: the victims of the SchedulerAsyncPreemption spec (test/e2e/scheduling/preemption.go)
  sleep 79 s in their preStop hook, and the spec reads their deletionTimestamp meanwhile. A
  kubelet runs the hook for at most the deletion's grace period, then deletes the pod
  (pkg/kubelet/kuberuntime/kuberuntime_container.go, ``killContainer``).

So kwok runs without that Stage, and this process lists and watches the pods: one bound to a
node annotated ``kwok.x-k8s.io/node=fake``, with a deletionTimestamp and no finalizers, is
deleted with grace 0 and its UID as a precondition once its longest preStop sleep has passed
(capped by ``deletionGracePeriodSeconds``), and at least kwok's usual second (the delay of its
``stage/pod/general/pod-delete.yaml``). 404 and 409 say the pod is gone or was replaced: done.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

from .api import Client
from .kwok import ANNOTATION, ANNOTATION_VALUE

MIN_SECONDS = 1.0  # kwok's general pod-delete Stage: durationMilliseconds 1000
_RETRY_SECONDS = 1.0
_WATCH_SECONDS = 300  # the server ends each watch after this; the next resumes from its version


_LOG_LOCK = threading.Lock()


def log(message: str) -> None:
    with _LOG_LOCK:  # the timers' threads log too: one whole line at a time
        print(f"{datetime.now(UTC).isoformat(timespec='milliseconds')} {message}", flush=True)


def termination_seconds(pod: dict[str, Any]) -> float:
    """How long a kubelet keeps the deleted ``pod``: the longest preStop sleep of its containers
    (they stop in parallel), at most the deletion's grace period; at least MIN_SECONDS."""
    sleeps = [
        int(((container.get("lifecycle") or {}).get("preStop") or {}).get("sleep", {}).get("seconds", 0))
        for container in pod["spec"].get("containers", [])
    ]
    grace = pod["metadata"].get("deletionGracePeriodSeconds")
    longest = max(sleeps, default=0)
    return max(MIN_SECONDS, float(longest if grace is None else min(longest, grace)))


class Reaper:
    def __init__(self, client: Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self._due: dict[str, float] = {}  # pod UID -> when (monotonic) its delete is scheduled
        self._seen: dict[str, float] = {}  # pod UID -> when its deletion was first seen

    def _kwok_node(self, name: str) -> bool:
        status, node = self._client.request("GET", f"/api/v1/nodes/{name}")
        if status == 404:
            return False
        if status != 200:
            raise RuntimeError(f"reading node {name} -> {status}: {node}")
        return bool((node["metadata"].get("annotations") or {}).get(ANNOTATION) == ANNOTATION_VALUE)

    def see(self, pod: dict[str, Any]) -> None:
        """A pod as listed or watched: schedule its delete when it is a deleted pod of kwok's."""
        meta = pod["metadata"]
        node = pod["spec"].get("nodeName")
        if not meta.get("deletionTimestamp") or meta.get("finalizers") or not node:
            return
        uid = meta["uid"]
        with self._lock:
            due = self._seen.setdefault(uid, time.monotonic()) + termination_seconds(pod)
            if uid in self._due and self._due[uid] <= due:
                return  # already scheduled, as soon or sooner (a shorter grace comes as a new event)
        if not self._kwok_node(node):
            return
        with self._lock:
            self._due[uid] = due
        self._schedule(meta["namespace"], meta["name"], uid, due - time.monotonic())

    def forget(self, uid: str) -> None:
        with self._lock:
            self._due.pop(uid, None)
            self._seen.pop(uid, None)

    def keep_only(self, uids: set[str]) -> None:
        """After a re-list: the pods it did not return are gone."""
        with self._lock:
            for uid in set(self._seen) - uids:
                self._due.pop(uid, None)
                self._seen.pop(uid, None)

    def _schedule(self, namespace: str, name: str, uid: str, seconds: float) -> None:
        timer = threading.Timer(max(0.0, seconds), self._reap, (namespace, name, uid))
        timer.daemon = True
        timer.start()

    def _reap(self, namespace: str, name: str, uid: str) -> None:
        with self._lock:
            if uid not in self._due:
                return  # gone meanwhile (a grace-0 delete removes the pod at once)
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": uid}}
        try:
            status, answer = self._client.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{name}", options)
        except OSError as error:
            status, answer = 0, error
        if status in (200, 202):
            log(f"deleted pod {namespace}/{name} (uid {uid})")
        elif status in (404, 409):
            log(f"pod {namespace}/{name} (uid {uid}) already gone or replaced by another of its name ({status})")
        else:
            log(f"deleting pod {namespace}/{name} (uid {uid}) -> {status}: {answer}; again in {_RETRY_SECONDS:.0f} s")
            self._schedule(namespace, name, uid, _RETRY_SECONDS)

    def relist(self) -> str:
        """Every pod seen anew; the list's resourceVersion, to watch from."""
        status, answer = self._client.request("GET", "/api/v1/pods")
        if status != 200:
            raise RuntimeError(f"listing pods -> {status}: {answer}")
        self.keep_only({pod["metadata"]["uid"] for pod in answer["items"]})
        for pod in answer["items"]:
            self.see(pod)
        return str(answer["metadata"]["resourceVersion"])

    def follow(self, version: str) -> str | None:
        """Watch from ``version`` until the server ends the watch: the version to resume from,
        or None when the watch failed (410 Gone: the version expired) and a re-list is due."""
        query = f"watch=1&allowWatchBookmarks=true&resourceVersion={version}&timeoutSeconds={_WATCH_SECONDS}"
        for event in self._client.watch(f"/api/v1/pods?{query}", timeout=_WATCH_SECONDS + 30):
            pod = event["object"]
            if event["type"] == "ERROR":
                log(f"watch ended: {pod.get('code')} {pod.get('message')}; listing again")
                return None
            version = pod["metadata"]["resourceVersion"]
            if event["type"] == "DELETED":
                self.forget(pod["metadata"]["uid"])
            elif event["type"] in ("ADDED", "MODIFIED"):
                self.see(pod)
        return version


def run(client: Client) -> None:
    """List and watch the pods until killed; a failure is logged and followed by a re-list."""
    reaper = Reaper(client)
    log(f"deleting the deleted pods of nodes annotated {ANNOTATION}={ANNOTATION_VALUE}, by UID")
    version: str | None = None
    while True:
        try:
            version = reaper.follow(version) if version is not None else reaper.relist()
        except Exception as error:  # a cut chunk, an odd pod: never the end of the reaper
            log(f"{type(error).__name__}: {error}; listing again in {_RETRY_SECONDS:.0f} s")
            version = None
            time.sleep(_RETRY_SECONDS)
