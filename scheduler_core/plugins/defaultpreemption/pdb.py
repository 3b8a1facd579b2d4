"""PodDisruptionBudgets as preemption reads them: which victims would violate one.

Upstream: ``filterPodsWithPDBViolation`` in
``pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go`` (v1.36.3), over
``policy/v1`` PodDisruptionBudget manifests (``handle.objects("PodDisruptionBudget")``). A
budget's selector is ``metav1.LabelSelectorAsSelector``
(``apimachinery/pkg/apis/meta/v1/helpers.go``): a null selector and an empty one both match
nothing here, and a selector that does not parse (unknown operator, In/NotIn without values,
Exists/DoesNotExist with values, a bad key or value) matches nothing either.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scheduler_core.framework import Manifest, PodInfo, labels, manifest
from scheduler_core.framework.labels import Selector


def parse_selector(raw: Manifest | None) -> Selector | None:
    """A budget's selector; None for one that matches nothing (null, empty or invalid)."""
    try:
        selector = labels.parse(raw)
    except labels.SelectorError:
        return None
    if selector.nothing or selector.empty():
        return None  # labels.Everything() is Empty(), which the caller treats as matching nothing
    return selector


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget:
    """What preemption needs of a budget: where it applies and how many disruptions it allows."""

    namespace: str
    selector: Selector | None
    disruptions_allowed: int
    disrupted_pods: frozenset[str]

    @classmethod
    def from_manifest(cls, raw: Manifest) -> PodDisruptionBudget:
        meta = manifest.meta(raw)
        spec = manifest.spec(raw)
        status = manifest.status(raw)
        return cls(
            namespace=meta.get("namespace") or "default",
            selector=parse_selector(spec.get("selector")),
            disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
            disrupted_pods=frozenset(status.get("disruptedPods") or {}),
        )

    def selects(self, pod: PodInfo) -> bool:
        if self.selector is None or pod.namespace != self.namespace:
            return False
        return self.selector.matches(pod.labels)


def budgets(manifests: Iterable[Manifest]) -> list[PodDisruptionBudget]:
    return [PodDisruptionBudget.from_manifest(m) for m in manifests]


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Split ``pods`` (in order) into those whose eviction would violate a budget and the others.

    Each matching budget's allowance is spent by every pod it selects, in order, unless the pod
    is already in its ``disruptedPods`` (the API server processed that eviction); a pod that
    drives any budget below zero is violating.
    """
    if not pdbs:
        return [], list(pods)
    allowed = [pdb.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pod in pods:
        violated = False
        # A pod with no labels matches no budget.
        if pod.labels:
            for i, pdb in enumerate(pdbs):
                if not pdb.selects(pod) or pod.name in pdb.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pod)
    return violating, non_violating
