"""Pydantic models of SchedulerProfile and PluginConfig specs.

They mirror kube-scheduler's ``KubeSchedulerProfile`` (``staging/src/k8s.io/kube-scheduler/
config/v1/types.go``) so an admin can paste a profile from a KubeSchedulerConfiguration. The
CRD schemas in ``crds/`` are generated from these models; field descriptions become
``kubectl explain`` text.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

# Bounds on list lengths (maxItems in the CRDs): far above any real profile, far below what
# would make a profile expensive to build or to store.
MAX_PLUGINS = 64


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class PluginRef(_Model):
    """A plugin by name, with its score weight where it scores."""

    name: str = Field(min_length=1, max_length=253, description="Name of the plugin, as registered.")
    weight: int | None = Field(
        default=None,
        ge=0,
        description="Score weight (Score and multiPoint only); unset or 0 means 1.",
    )


class PluginSet(_Model):
    """Plugins enabled and disabled at one extension point. A disabled name ``*`` disables all
    default plugins of the point; enabled plugins run after the remaining defaults, in order."""

    enabled: list[PluginRef] = Field(
        default_factory=list, max_length=MAX_PLUGINS, description="Plugins to enable, in order."
    )
    disabled: list[PluginRef] = Field(
        default_factory=list, max_length=MAX_PLUGINS, description="Default plugins to disable ('*' for all)."
    )


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


PluginName = Annotated[str, Field(min_length=1, max_length=253, description="Name of a plugin, as registered.")]
ArgsField = Annotated[str, Field(min_length=1, max_length=253, description="A top-level args field (camelCase).")]
ExtenderURL = Annotated[str, Field(min_length=1, max_length=2048, description="An extender's urlPrefix.")]


class AllowedArgs(_Model):
    """Top-level args fields of one plugin that tenant profiles may set."""

    plugin: str = Field(min_length=1, max_length=253, description="Name of the plugin.")
    fields: list[ArgsField] = Field(
        default_factory=list, max_length=64, description="Top-level args fields (camelCase) tenants may set."
    )


class TenantPolicy(_Model):
    """What a profile in another namespace with the same schedulerName may change (docs/tenancy.md).

    Only read on a profile of the home namespace. By default a tenant profile may not disable any
    PreEnqueue, PreFilter, Filter, Reserve, Permit, PreBind or Bind plugin of this profile, may
    enable no plugin this profile does not run, may set only args that narrow where its own pods
    go or how they score, and may call no extender."""

    allow_disabling: list[PluginName] = Field(
        default_factory=list,
        max_length=64,
        description="Plugins of this profile's protected extension points that tenant profiles may disable.",
    )
    allowed_plugins: list[PluginName] = Field(
        default_factory=list,
        max_length=64,
        description="Plugins tenant profiles may enable in addition to this profile's (e.g. extra filters, scorers).",
    )
    allowed_args: list[AllowedArgs] = Field(
        default_factory=list,
        max_length=64,
        description="Args fields tenants may set beyond the built-in narrowing ones (e.g. NodeAffinity addedAffinity).",
    )
    allowed_extenders: list[ExtenderURL] = Field(
        default_factory=list,
        max_length=16,
        description="Extenders (by urlPrefix) tenant profiles may call; none by default.",
    )


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
        default_factory=list, max_length=MAX_PLUGINS, description="Arguments per plugin; one entry per plugin at most."
    )
    tenant_policy: TenantPolicy | None = Field(
        default=None,
        description=(
            "Home namespace only: what profiles of other namespaces with this schedulerName may change "
            "(docs/tenancy.md). Unset: the default policy."
        ),
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
