"""One profile, written twice: a KubeSchedulerConfiguration and an equivalent SchedulerProfile.

Both enable exactly upstream's default multiPoint plugins, with upstream's weights, restricted
to the plugins of our registry (every other default, e.g. DynamicResources or a plugin another
engineer has not landed yet, is disabled through ``multiPoint.disabled: ["*"]``), and score every
feasible node (``percentageOfNodesToScore: 100``), so both schedulers see the same nodes and run
the same plugins in the same order. Plugin args stay at their defaults on both sides.

The kube-scheduler side also names the recording filter extender (:mod:`bench.parity_harness.extender`);
an extender runs after every filter plugin and never changes what a plugin reports. Both sides
name the scenario extenders of the ``extenders`` feature (:func:`scenario_extenders`), which see
only pods requesting their managed resources: a names-only filter and prioritizer, a full-object
prioritizer and an ignorable one that always fails. The recorder comes after the scenario filter,
so what it records is the feasible set after the extenders, as ours reports it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from bench.parity_harness.vocabulary import EXTENDER_RESOURCES
from scheduler_core.plugins.registry import UPSTREAM_DEFAULT_PLUGINS

SCHEDULER_NAME = "parity-scheduler"
PROFILE_NAME = "parity"
HOME_NAMESPACE = "crd-scheduler"
PERCENTAGE_OF_NODES_TO_SCORE = 100
EXTENDER_FILTER_VERB = "filter"


def parity_plugins(registered: Collection[str]) -> list[tuple[str, int | None]]:
    """Upstream's default plugins (name, weight) in upstream order, those we have only."""
    return [(name, weight) for name, weight in UPSTREAM_DEFAULT_PLUGINS if name in registered]


def plugin_set(registered: Collection[str]) -> dict[str, Any]:
    """The ``plugins`` stanza shared by both configurations."""
    enabled: list[dict[str, Any]] = []
    for name, weight in parity_plugins(registered):
        enabled.append({"name": name} if weight is None else {"name": name, "weight": weight})
    return {"multiPoint": {"enabled": enabled, "disabled": [{"name": "*"}]}}


EXTENDER_WEIGHTS = {"names": 2, "full": 1, "failing": 3}  # by the last part of the URL prefix


def scenario_extenders(extender_url: str) -> list[dict[str, Any]]:
    """The ``extenders`` feature's extenders, as both configurations list them."""

    def managed(kind: str) -> list[dict[str, Any]]:
        return [{"name": EXTENDER_RESOURCES[kind], "ignoredByScheduler": True}]

    return [
        {"urlPrefix": f"{extender_url}/names", "filterVerb": "filter", "prioritizeVerb": "prioritize",
         "weight": EXTENDER_WEIGHTS["names"], "nodeCacheCapable": True, "managedResources": managed("names")},
        {"urlPrefix": f"{extender_url}/full", "prioritizeVerb": "prioritize", "weight": EXTENDER_WEIGHTS["full"],
         "managedResources": managed("full")},
        {"urlPrefix": f"{extender_url}/failing", "filterVerb": "filter", "prioritizeVerb": "prioritize",
         "weight": EXTENDER_WEIGHTS["failing"], "ignorable": True, "managedResources": managed("failing")},
    ]  # fmt: skip


@dataclass(frozen=True)
class ProfilePair:
    """Another profile, written twice: one ``KubeSchedulerProfile`` for kube-scheduler and the
    SchedulerProfile ``spec`` meant to be equivalent (``import-config``'s round trip). Both
    serve ``SCHEDULER_NAME``, whatever their own schedulerName."""

    upstream: dict[str, Any]
    ours: dict[str, Any]


def kube_scheduler_config(
    registered: Collection[str], extender_url: str, pair: ProfilePair | None = None
) -> dict[str, Any]:
    profile = (
        {**pair.upstream, "schedulerName": SCHEDULER_NAME}
        if pair is not None
        else {
            "schedulerName": SCHEDULER_NAME,
            "percentageOfNodesToScore": PERCENTAGE_OF_NODES_TO_SCORE,
            "plugins": plugin_set(registered),
        }
    )
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
        "extenders": [
            *scenario_extenders(extender_url),
            {
                "urlPrefix": extender_url,
                "filterVerb": EXTENDER_FILTER_VERB,
                "nodeCacheCapable": True,
                "httpTimeout": "30s",
            },
        ],
    }


def scheduler_profile(
    registered: Collection[str], extender_url: str | None = None, pair: ProfilePair | None = None
) -> dict[str, Any]:
    """The SchedulerProfile ``crd-scheduler simulate`` serves the scenario's pod with (and the
    scenario extenders, when the run serves them at ``extender_url``)."""
    extenders = scenario_extenders(extender_url) if extender_url else []
    spec = (
        {**pair.ours, "schedulerName": SCHEDULER_NAME}
        if pair is not None
        else {
            "schedulerName": SCHEDULER_NAME,
            "percentageOfNodesToScore": PERCENTAGE_OF_NODES_TO_SCORE,
            "plugins": plugin_set(registered),
        }
    )
    return {
        "apiVersion": "scheduling.crd-scheduler.io/v1alpha1",
        "kind": "SchedulerProfile",
        "metadata": {"name": PROFILE_NAME, "namespace": HOME_NAMESPACE},
        "spec": {**spec, **({"extenders": extenders} if extenders else {})},
    }
