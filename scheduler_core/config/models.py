"""Pydantic models of SchedulerProfile and PluginConfig specs.

They mirror kube-scheduler's ``KubeSchedulerProfile`` (``staging/src/k8s.io/kube-scheduler/
config/v1/types.go``) so an admin can paste a profile from a KubeSchedulerConfiguration. The
CRD schemas in ``crds/`` are generated from these models; field descriptions become
``kubectl explain`` text.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class PluginRef(_Model):
    """A plugin by name, with its score weight where it scores."""

    name: str = Field(min_length=1, description="Name of the plugin, as registered.")
    weight: int | None = Field(
        default=None,
        ge=0,
        description="Score weight (Score and multiPoint only); unset or 0 means 1.",
    )


class PluginSet(_Model):
    """Plugins enabled and disabled at one extension point. A disabled name ``*`` disables all
    default plugins of the point; enabled plugins run after the remaining defaults, in order."""

    enabled: list[PluginRef] = Field(default_factory=list, description="Plugins to enable, in order.")
    disabled: list[PluginRef] = Field(default_factory=list, description="Default plugins to disable ('*' for all).")


class Plugins(_Model):
    """Plugins per extension point. ``multiPoint`` enables a plugin at every point it implements."""

    pre_enqueue: PluginSet = Field(default_factory=PluginSet, description="PreEnqueue plugins.")
    queue_sort: PluginSet = Field(default_factory=PluginSet, description="QueueSort plugin (one per scheduler).")
    pre_filter: PluginSet = Field(default_factory=PluginSet, description="PreFilter plugins.")
    filter: PluginSet = Field(default_factory=PluginSet, description="Filter plugins.")
    post_filter: PluginSet = Field(default_factory=PluginSet, description="PostFilter plugins (preemption).")
    pre_score: PluginSet = Field(default_factory=PluginSet, description="PreScore plugins.")
    score: PluginSet = Field(default_factory=PluginSet, description="Score plugins, with weights.")
    reserve: PluginSet = Field(default_factory=PluginSet, description="Reserve plugins.")
    permit: PluginSet = Field(default_factory=PluginSet, description="Permit plugins.")
    pre_bind: PluginSet = Field(default_factory=PluginSet, description="PreBind plugins.")
    bind: PluginSet = Field(default_factory=PluginSet, description="Bind plugins.")
    post_bind: PluginSet = Field(default_factory=PluginSet, description="PostBind plugins.")
    multi_point: PluginSet = Field(
        default_factory=PluginSet, description="Plugins enabled at every extension point they implement."
    )


class PluginConfigEntry(_Model):
    """Arguments for one plugin of the profile."""

    name: str = Field(min_length=1, description="Name of the plugin the args are for.")
    args: dict[str, Any] = Field(default_factory=dict, description="The plugin's arguments (see the plugin's docs).")


class SchedulerProfileSpec(_Model):
    """A scheduling profile: which plugins run at which extension points, with which args."""

    scheduler_name: str = Field(
        default="crd-scheduler",
        min_length=1,
        description="Pods opt in to this profile with spec.schedulerName equal to this.",
    )
    percentage_of_nodes_to_score: int | None = Field(
        default=None,
        ge=0,
        le=100,
        description="Percentage of nodes to find feasible before scoring; 0 or unset is adaptive, as upstream.",
    )
    plugins: Plugins = Field(
        default_factory=Plugins, description="Plugins per extension point, merged with the defaults."
    )
    plugin_config: list[PluginConfigEntry] = Field(
        default_factory=list, description="Arguments per plugin; one entry per plugin at most."
    )
    explain: Literal["Off", "Annotate"] | None = Field(
        default=None,
        description="Annotate: on each pod it binds, the operator records why in the annotation "
        "scheduling.crd-scheduler.io/explanation (the chosen node's weighted scores per plugin, the runner-up, "
        "nodes filtered per reason), in the binding itself. Off (or unset) by default.",
    )


class LabelSelector(_Model):
    """A label selector (matchLabels only)."""

    match_labels: dict[str, str] = Field(default_factory=dict, description="Labels a profile must carry.")


class PluginConfigSpec(_Model):
    """Arguments for one plugin in the profiles of this namespace (optionally selected by labels)."""

    plugin: str = Field(min_length=1, description="Name of the plugin the args are for.")
    args: dict[str, Any] = Field(default_factory=dict, description="The plugin's arguments.")
    profile_selector: LabelSelector | None = Field(
        default=None, description="Only profiles of this namespace whose labels match; all when unset."
    )
