"""Pydantic models of SchedulerProfile and PluginConfig specs.

They mirror kube-scheduler's ``KubeSchedulerProfile`` (``staging/src/k8s.io/kube-scheduler/
config/v1/types.go``) so an admin can paste a profile from a KubeSchedulerConfiguration. The
CRD schemas in ``crds/`` are generated from these models; field descriptions become
``kubectl explain`` text.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from scheduler_core.names import DEFAULT_SCHEDULER_NAME

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
SchedulerName = Annotated[str, Field(min_length=1, max_length=253, description="A schedulerName pods may name.")]
# A positive Go duration (time.ParseDuration), e.g. 5s, 1m30s, 250ms.
GO_DURATION = r"^(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+$"


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
    max_extender_http_timeout: str | None = Field(
        default=None,
        alias="maxExtenderHTTPTimeout",
        max_length=64,
        pattern=GO_DURATION,
        description=(
            "The longest httpTimeout (a Go duration) a tenant profile's extender may have; an unset or 0 "
            "httpTimeout counts as upstream's default of 5s. Unset: 5s."
        ),
    )
    allowed_scheduler_names: list[SchedulerName] | None = Field(
        default=None,
        max_length=64,
        description=(
            "Read from every home-namespace profile (the union): the only schedulerNames tenant profiles may "
            "serve. Unset on all of them: any name but default-scheduler, the names home-namespace profiles "
            "serve, and deniedSchedulerNames."
        ),
    )
    denied_scheduler_names: list[SchedulerName] = Field(
        default_factory=list,
        max_length=64,
        description=(
            "Read from every home-namespace profile (the union): names other schedulers of the cluster serve "
            "(e.g. a second kube-scheduler, Volcano); tenant profiles may never serve them."
        ),
    )
    max_profiles_per_namespace: int | None = Field(
        default=None,
        ge=0,
        le=1000,
        description=(
            "Read from every home-namespace profile (the smallest wins): how many SchedulerProfiles a tenant "
            "namespace may have serve; the oldest win, the others are Valid=False. Unset on all of them: 10."
        ),
    )


def _no_defaults_in_schema(schema: dict[str, Any]) -> None:
    for prop in (schema.get("properties") or {}).values():
        prop.pop("default", None)


class _OmitEmpty(_Model):
    """Upstream's ``omitempty`` fields: the model defaults them, the CRD does not (the API server
    would otherwise write every zero value into stored objects)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", json_schema_extra=_no_defaults_in_schema
    )


class ExtenderTLSConfig(_OmitEmpty):
    """TLS of the connection to an extender (upstream ``ExtenderTLSConfig``, kube-scheduler
    ``config/v1/types.go``). ``*Data`` fields are base64 PEM, as in a KubeSchedulerConfiguration."""

    insecure: bool = Field(default=False, description="Do not verify the extender's certificate.")
    server_name: str = Field(default="", description="Server name to verify the certificate against (SNI).")
    cert_file: str = Field(default="", description="Client certificate file (PEM).")
    key_file: str = Field(default="", description="Client key file (PEM).")
    ca_file: str = Field(
        default="", description="File of the CA certificates the extender's certificate must chain to."
    )
    cert_data: str = Field(default="", description="Client certificate, base64 PEM; takes precedence over certFile.")
    key_data: str = Field(default="", description="Client key, base64 PEM; takes precedence over keyFile.")
    ca_data: str = Field(default="", description="CA certificates, base64 PEM; takes precedence over caFile.")


class ExtenderManagedResource(_OmitEmpty):
    """An extended resource the extender manages (upstream ``ExtenderManagedResource``)."""

    name: str = Field(min_length=1, description="Extended resource name, e.g. example.com/gpu.")
    ignored_by_scheduler: bool = Field(
        default=False, description="The NodeResourcesFit filter ignores this resource: the extender decides."
    )


class Extender(_OmitEmpty):
    """An HTTP scheduler extender (upstream ``Extender``, kube-scheduler ``config/v1/types.go``).

    Verbs are appended to ``urlPrefix``; an empty verb means the extender does not serve that
    call. Request and response bodies are ``k8s.io/kube-scheduler/extender/v1`` types."""

    url_prefix: str = Field(min_length=1, description="URL prefix of the extender, e.g. http://127.0.0.1:8888/ext.")
    filter_verb: str = Field(default="", description="Verb of the filter call; empty: the extender does not filter.")
    preempt_verb: str = Field(default="", description="Verb of the preempt call; empty: no preemption call.")
    prioritize_verb: str = Field(default="", description="Verb of the prioritize call; empty: no scores.")
    weight: int = Field(
        default=0, description="Multiplier of the extender's scores (0..10 scaled to 0..100); > 0 with prioritizeVerb."
    )
    bind_verb: str = Field(default="", description="Verb of the bind call; the extender then binds instead of plugins.")
    enable_https: bool = Field(
        default=False, alias="enableHTTPS", description="Use HTTPS (unverified unless a CA is given)."
    )
    tls_config: ExtenderTLSConfig | None = Field(default=None, description="TLS settings.")
    http_timeout: str = Field(
        default="", description="Timeout of each call as a Go duration (e.g. 5s, 250ms); empty or 0 means 5s."
    )
    node_cache_capable: bool = Field(
        default=False, description="The extender caches nodes: send node names only, not Node objects."
    )
    managed_resources: list[ExtenderManagedResource] = Field(
        default_factory=list,
        description="Extended resources managed by the extender; when set, only pods requesting one are sent to it.",
    )
    ignorable: bool = Field(default=False, description="A failing or unreachable extender is skipped, not fatal.")


class SchedulerProfileSpec(_Model):
    """A scheduling profile: which plugins run at which extension points, with which args."""

    scheduler_name: str = Field(
        default=DEFAULT_SCHEDULER_NAME,
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
    extenders: list[Extender] = Field(
        default_factory=list,
        description="HTTP scheduler extenders, called after the plugins (cluster-wide profiles only).",
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
