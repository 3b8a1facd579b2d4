"""The tenant policy check: may this namespaced profile run beside the cluster-wide one?

DESIGN.md, tenant safety. Write access to SchedulerProfile/PluginConfig in a namespace is a
privilege the cluster admin hands out; the admin bounds it with ``spec.tenantPolicy`` on the
cluster-wide profile (the home namespace's profile of the same schedulerName; the built-in
default profile and an empty policy when there is none). The rules, each named in the
violation so a status or ``validate`` can say which one broke:

* ``protected-plugins``: every PreEnqueue, PreFilter, Filter, Reserve, Permit, PreBind and Bind
  plugin the cluster-wide profile runs, the tenant profile runs too, unless ``allowDisabling``
  lists it. Kubelet does not re-check NoSchedule taints or cordons: a disabled filter is a
  hole in isolation, not a preference.
* ``allowed-plugins``: a plugin the tenant runs at an extension point where the cluster-wide
  profile does not run it must be listed in ``allowedPlugins``. Score plugins may be dropped
  and re-weighted freely (they only order the tenant's own pods' candidate nodes).
* ``narrowing-args``: args may set only fields that narrow where the tenant's own pods go or
  how they score (:data:`NARROWING_ARGS`, e.g. NodeAffinity ``addedAffinity``), plus those in
  ``allowedArgs``. Args of a plugin enabled through ``allowedPlugins`` are the admin's call and
  are not restricted.
* ``extenders``: an extender the tenant calls must be in ``allowedExtenders`` (by
  ``urlPrefix``), and its ``tlsConfig`` may not name files (they would be read from the
  scheduler's own filesystem): only the ``*Data`` fields.
* ``extender-timeout``: a tenant extender's ``httpTimeout`` (unset or 0: upstream's default of
  5 s, ``DefaultExtenderTimeout`` in kubernetes v1.36.3 ``pkg/scheduler/extender.go``) is at most
  ``maxExtenderHTTPTimeout`` (5 s when unset): a tenant's slow extender must not hold the
  scheduler for as long as the tenant likes.
* ``tenant-policy``: only the home namespace's profiles carry a policy.

Which schedulerNames a tenant may serve, and how many profiles, are :mod:`.claims`' rules.

The check is a pure function of the two profiles' resolved plugins (``Framework.describe``),
the tenant's merged spec and the policy, so the operator, ``simulate`` and an admission
webhook (offline) run the very same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler_core.config import Extender, SchedulerProfileSpec, TenantPolicy
from scheduler_core.extender.client import DEFAULT_TIMEOUT_SECONDS, parse_duration

# Extension points whose plugins protect other tenants or the nodes: a pod that skips them may
# land on a tainted, cordoned or full node, or past a gate.
PROTECTED_POINTS = ("preEnqueue", "preFilter", "filter", "reserve", "permit", "preBind", "bind")
FREE_POINTS = ("preScore", "score")

# Args fields that only narrow where a tenant's own pods go or how they are scored.
NARROWING_ARGS: Mapping[str, frozenset[str]] = {
    "NodeAffinity": frozenset({"addedAffinity"}),  # ANDed with each pod's own affinity
    "NodeResourcesFit": frozenset({"scoringStrategy"}),  # scoring only; ignoredResources widens
    "NodeResourcesBalancedAllocation": frozenset({"resources"}),
    "InterPodAffinity": frozenset({"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"}),
    "PodTopologySpread": frozenset({"defaultConstraints", "defaultingType"}),
}

Points = Mapping[str, Sequence[str]]


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    plugin: str
    field: str  # path in the tenant's spec, e.g. "plugins.filter"
    reason: str

    def problem(self) -> tuple[str, str]:
        """``(field, reason)``, the shape of a ProfileError problem."""
        return self.field, f"tenant policy rule {self.rule!r}: {self.reason}"


def check_tenant_profile(
    tenant: Points,
    cluster: Points,
    spec: SchedulerProfileSpec,
    policy: TenantPolicy,
    *,
    namespace: str,
    cluster_profile: str,
    extenders: Sequence[Extender] = (),
) -> list[Violation]:
    """The violations of ``policy`` by the tenant profile of ``namespace``.

    ``tenant`` and ``cluster`` are the resolved plugin names per extension point (camelCase
    point names, as ``Framework.describe``); ``spec`` is the tenant's spec with its
    namespace's PluginConfigs merged in; ``extenders`` the extenders it would call."""
    violations: list[Violation] = []
    where = f"a profile in namespace {namespace!r}"
    allowed_disabling = set(policy.allow_disabling)
    allowed_plugins = set(policy.allowed_plugins)
    if spec.tenant_policy is not None:
        violations.append(
            Violation(
                "tenant-policy",
                "",
                "tenantPolicy",
                f"{where} may not carry a tenant policy; only the home namespace's profiles do",
            )
        )
    for point in PROTECTED_POINTS:
        running = set(tenant.get(point, ()))
        for name in cluster.get(point, ()):
            if name not in running and name not in allowed_disabling:
                violations.append(
                    Violation(
                        "protected-plugins",
                        name,
                        f"plugins.{point}",
                        f"the cluster-wide profile {cluster_profile} runs {point} plugin {name!r}; {where} may not "
                        "disable it (the policy's allowDisabling does not list it)",
                    )
                )
    # A plugin the tenant runs at a free point (preScore, score) must run somewhere in the
    # cluster-wide profile; at any other point, at that same point there. Free points last.
    cluster_names = {n for names in cluster.values() for n in names}
    for point in [*(p for p in tenant if p not in FREE_POINTS), *FREE_POINTS]:
        free = point in FREE_POINTS
        theirs = cluster_names if free else set(cluster.get(point, ()))
        for name in tenant.get(point, ()):
            if name not in theirs and name not in allowed_plugins:
                violations.append(
                    Violation(
                        "allowed-plugins",
                        name,
                        f"plugins.{point}",
                        f"{where} may not enable {point} plugin {name!r}: the cluster-wide profile {cluster_profile} "
                        f"does not run it{'' if free else ' there'} and the policy's allowedPlugins does not list it",
                    )
                )
    extra_args = {a.plugin: set(a.fields) for a in policy.allowed_args}
    for index, entry in enumerate(spec.plugin_config):
        if entry.name in allowed_plugins and entry.name not in cluster_names:
            continue
        allowed = NARROWING_ARGS.get(entry.name, frozenset()) | extra_args.get(entry.name, set())
        for field in entry.args:
            if field not in allowed:
                violations.append(
                    Violation(
                        "narrowing-args",
                        entry.name,
                        f"pluginConfig[{index}].args.{field}",
                        f"{where} may set only args that narrow where its own pods go or how they score; "
                        f"{entry.name} {field!r} is not one (allowed: {sorted(allowed) or 'none'}; see allowedArgs)",
                    )
                )
    violations.extend(check_tenant_extenders(extenders, policy, namespace=namespace))
    return violations


def check_tenant_extenders(extenders: Sequence[Extender], policy: TenantPolicy, *, namespace: str) -> list[Violation]:
    """The ``extenders`` rule alone. Run before a tenant's extenders are built as well, since
    building one reads its TLS files: a refused profile must not make the scheduler read any."""
    violations: list[Violation] = []
    where = f"a profile in namespace {namespace!r}"
    allowed_extenders = set(policy.allowed_extenders)
    cap_text = policy.max_extender_http_timeout or f"{DEFAULT_TIMEOUT_SECONDS:g}s"
    cap = _seconds(cap_text)
    for index, extender in enumerate(extenders):
        url = extender.url_prefix
        if url not in allowed_extenders:
            violations.append(
                Violation(
                    "extenders",
                    "",
                    f"extenders[{index}]",
                    f"{where} may not call extender {url!r}: the policy's allowedExtenders does not list it",
                )
            )
        timeout = _seconds(extender.http_timeout) or DEFAULT_TIMEOUT_SECONDS
        if timeout > cap:
            violations.append(
                Violation(
                    "extender-timeout",
                    "",
                    f"extenders[{index}].httpTimeout",
                    f"{where} may not wait for extender {url!r} longer than {cap_text}: httpTimeout "
                    f"{extender.http_timeout or '(unset)'} is {timeout:g}s (the policy's maxExtenderHTTPTimeout)",
                )
            )
        tls = extender.tls_config
        for field, attribute in (("certFile", "cert_file"), ("keyFile", "key_file"), ("caFile", "ca_file")):
            if tls is not None and getattr(tls, attribute):
                # A file path would be read from the operator's own filesystem (its credentials).
                violations.append(
                    Violation(
                        "extenders",
                        "",
                        f"extenders[{index}].tlsConfig.{field}",
                        f"{where} may not name files of the scheduler's filesystem; use {field[:-4]}Data",
                    )
                )
    return violations


def _seconds(duration: str) -> float:
    """Seconds of a Go duration; an unreadable one (the extender's own check names it) as 0."""
    try:
        return parse_duration(duration) if duration else 0.0
    except ValueError:
        return 0.0
