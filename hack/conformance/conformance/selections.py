"""The named selections of upstream's e2e specs: a ginkgo focus, a skip, and what a run needs.

Specs are picked by the names e2e.test v1.36.3 gives them (``[sig-scheduling] SchedulerPredicates
[Serial] validates ... [Conformance]``). A skip names a reason: what kwok or a loopback cluster
cannot serve, so the table never counts it as a scheduler's failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Never run: they break the cluster on purpose, are known flaky upstream, or need a feature gate
# (the `gated` selection runs those on a cluster with the gates on).
_ALWAYS_SKIP = r"\[Disruptive\]|\[Flaky\]"
_FEATURE = r"\[Feature:|\[FeatureGate:|\[Alpha\]|\[Beta\]"

# [sig-apps] Conformance specs kwok cannot serve, and why (their names, as regexes).
WORKLOADS_UNSERVED: dict[str, str] = {
    r"should serve a basic image on each replica with a public image": (
        "proxies HTTP to the pods' containers: kwok runs no containers"
    ),
    r"Job should allow to use the pod failure policy on exit code": "needs a container to exit with code 1",
    r"Job should allow to use a pod failure policy to ignore failure matching on DisruptionTarget": (
        "needs containers that fail and a kubelet that evicts"
    ),
    r"Job should create pods for an Indexed job with completion indexes and specified hostname": (
        "checks the hostname inside the container (exec)"
    ),
    r"Job with successPolicy succeededIndexes rule": "needs some indexes to fail (containers that exit non-zero)",
    r"Job with successPolicy succeededCount rule": "needs some indexes to fail (containers that exit non-zero)",
    r"Job should execute all indexes despite some failing": "needs containers that exit non-zero",
    r"Job should terminate job execution when the number of failed indexes exceeds": (
        "needs containers that exit non-zero"
    ),
    r"Job should mark indexes as failed when the FailIndex action": "needs containers that exit non-zero",
    r"Job should run a job to completion when tasks sometimes fail and are locally restarted": (
        "needs containers that fail and restart in place (a kubelet)"
    ),
    r"Daemon set \[Serial\] should rollback without unnecessary restarts": (
        "rolls out a non-existent image that must fail to pull; kwok runs any image, so the rollout "
        "replaces the pods the spec expects to keep (kube-scheduler fails it too)"
    ),
    r"Deployment deployment should support proportional scaling": (
        "needs the new pods to fail pulling webserver:404 so the rollout stalls; kwok runs any image"
    ),
    r"Deployment deployment should support rollover": (
        "expects a pod of a non-existent image to stay unready; kwok makes it Ready"
    ),
    r"Job should (delete a job|adopt matching orphans|apply changes to a job status)": (
        "waits for Job pods that never end to run; kwok's pod-complete Stage completes every Job pod at once"
    ),
    r"Daemon set \[Serial\] should retry creating failed daemon pods": (
        "sets a pod's phase Failed and expects a kubelet not to overwrite it"
    ),
    r"StatefulSet Basic StatefulSet functionality \[StatefulSetBasic\] Scaling should happen in predictable order": (
        "makes pods unhealthy by moving files inside the container (exec)"
    ),
    r"StatefulSet Basic StatefulSet functionality \[StatefulSetBasic\] Burst scaling": (
        "makes pods unhealthy by moving files inside the container (exec)"
    ),
    r"StatefulSet Basic StatefulSet functionality \[StatefulSetBasic\] Should recreate evicted statefulset": (
        "needs a kubelet to reject a pod for a host port in use"
    ),
    r"StatefulSet Basic StatefulSet functionality \[StatefulSetBasic\] should perform (rolling|canary)": (
        "checks files inside the containers (exec)"
    ),
}


ASYNC_PREEMPTION_NODES = 3


@dataclass(frozen=True)
class Selection:
    name: str
    focus: str
    skip: str
    about: str
    feature_gates: str = ""
    runtime_config: str = ""
    controllers: tuple[str, ...] = ()  # besides CONTROLLERS
    unserved: dict[str, str] = field(default_factory=dict)
    nodes: int = 10  # kwok nodes, unless --nodes says otherwise

    def skip_regex(self) -> str:
        return "|".join([self.skip, *self.unserved])


SELECTIONS = {
    selection.name: selection
    for selection in (
        Selection(
            "scheduling",
            r"\[sig-scheduling\]",
            f"{_ALWAYS_SKIP}|{_FEATURE}",
            "[sig-scheduling] without Disruptive, Flaky and feature-gated specs",
        ),
        Selection(
            "scheduling-conformance",
            r"\[sig-scheduling\].*\[Conformance\]",
            f"{_ALWAYS_SKIP}|{_FEATURE}",
            "the [Conformance] specs of [sig-scheduling]",
        ),
        Selection(
            "workloads",
            r"\[sig-apps\] (Deployment|ReplicaSet|StatefulSet|Daemon set|Job) .*\[Conformance\]",
            f"{_ALWAYS_SKIP}|{_FEATURE}",
            "the [Conformance] specs of [sig-apps] Deployment, ReplicaSet, StatefulSet, DaemonSet and Job "
            "that kwok can serve",
            unserved=WORKLOADS_UNSERVED,
        ),
        Selection(
            "gated",
            r"\[sig-scheduling\].*(\[Feature:(GangScheduling|GenericWorkload|SchedulerAsyncPreemption)\]"
            r"|\[FeatureGate:(GangScheduling|GenericWorkload|SchedulerAsyncPreemption)\])",
            _ALWAYS_SKIP,
            "the GangScheduling / GenericWorkload and SchedulerAsyncPreemption specs, on a cluster with those gates",
            feature_gates="GenericWorkload=true,GangScheduling=true,SchedulerAsyncPreemption=true",
            runtime_config="scheduling.k8s.io/v1alpha2=true",
            controllers=("podgroup-protection-controller",),
            # The async-preemption spec reads its 10 victims per node, then its 5 high-priority
            # pods per node, one by one, each poll a second at least; all of it must end within
            # the victims' 79 s preStop sleep, or medium pods take their room: about 15 s a
            # node, so 3 nodes (upstream's usual e2e cluster), not 10.
            nodes=ASYNC_PREEMPTION_NODES,
        ),
    )
}
# The controllers the selections' specs need (workload controllers for their pods).
CONTROLLERS = "replicaset,replicationcontroller,disruption,deployment,job,statefulset,daemonset"
