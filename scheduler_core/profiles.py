"""Profiles: which Framework schedules which pod, and how profiles are (re)built.

Resolution (DESIGN.md): a pod in namespace N with schedulerName S is scheduled by the
profile in N whose schedulerName is S, else by the one in the home namespace (cluster-wide),
else it is not ours. A profile outside the home namespace only ever sees pods of its own
namespace. The QueueSort plugin is one per scheduler, as upstream: every profile must use
the same one.

Every profile that exists *claims* its (namespace, schedulerName), valid or not. When several
profiles of one namespace claim the same schedulerName, the winner is the oldest
(``creationTimestamp``, then name), so every replica agrees whatever the event order; the
others are refused, and deleting the winner promotes the next. A claimed (namespace,
schedulerName) whose winner has no framework serving does **not** fall back to the
cluster-wide profile: its pods are *held* (``held_reason``) with the reason, never silently
scheduled by a policy their namespace did not choose.

A change is validated by building a new Framework first; only a successful build replaces
the serving one, between scheduling cycles. A failed build raises ``ProfileError`` and
leaves the last good framework serving. A profile outside the home namespace is also checked
against the tenant policy of the cluster-wide profile of its schedulerName
(:mod:`scheduler_core.tenancy.policy`; the built-in default profile and the default policy
when the home namespace has none), and against the rules on tenant claims that every home
profile's policy adds to (:mod:`scheduler_core.tenancy.claims`: which schedulerNames, how many
profiles per namespace); a change of any home profile re-checks every serving tenant.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from scheduler_core.config import PluginConfigEntry, PluginConfigSpec, PluginSet, SchedulerProfileSpec, TenantPolicy
from scheduler_core.explanation import ANNOTATE
from scheduler_core.extender import ExtenderConfigError, build_extenders
from scheduler_core.framework import PodInfo
from scheduler_core.framework.extension_points import EXTENSION_POINTS
from scheduler_core.runtime.build import ProfileError, build_profile
from scheduler_core.runtime.framework import Framework
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.tenancy import (
    ClaimRules,
    check_args_bounds,
    check_profile_count,
    check_scheduler_name,
    check_tenant_extenders,
    check_tenant_profile,
)


@dataclass(frozen=True, slots=True)
class ProfileKey:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


_PROFILE_NAMES_KEPT = 4096


@dataclass(frozen=True, slots=True)
class Claim:
    key: ProfileKey
    scheduler_name: str
    created: str  # creationTimestamp (RFC 3339 sorts as text); "" sorts first

    def order(self) -> tuple[str, str]:
        return self.created, self.key.name


def apply_plugin_configs(
    spec: SchedulerProfileSpec,
    profile_labels: Mapping[str, str],
    plugin_configs: list[PluginConfigSpec],
) -> SchedulerProfileSpec:
    """Args from the namespace's PluginConfigs (selected by labels) fill in args the
    profile does not set itself; the profile's own pluginConfig wins."""
    own = {entry.name for entry in spec.plugin_config}
    extra = []
    for config in plugin_configs:
        selector = config.profile_selector
        if selector and any(profile_labels.get(k) != v for k, v in selector.match_labels.items()):
            continue
        if config.plugin in own:
            continue
        own.add(config.plugin)
        extra.append({"name": config.plugin, "args": config.args})
    if not extra:
        return spec
    merged = spec.model_copy(deep=True)
    merged.plugin_config.extend(PluginConfigEntry.model_validate(e) for e in extra)
    return merged


class ProfileSet:
    def __init__(
        self,
        *,
        home_namespace: str,
        registry: Mapping[str, object],
        default_multi_point: PluginSet,
        make_handle: Callable[[ProfileKey], FrameworkHandle],
        batch: bool = True,
    ) -> None:
        self.home_namespace = home_namespace
        self._registry = registry
        self._default_multi_point = default_multi_point
        self._make_handle = make_handle
        self._batch = batch
        self._by_key: dict[ProfileKey, Framework] = {}
        self._specs: dict[ProfileKey, SchedulerProfileSpec] = {}  # what each framework was built from
        self._claims: dict[ProfileKey, Claim] = {}
        self._problems: dict[ProfileKey, str] = {}  # why a claimed profile has no framework
        # (namespace, schedulerName) -> the winning claim, for resolution
        self._winners: dict[tuple[str, str], ProfileKey] = {}
        # profile_of's answers: asked for every pod of the unschedulable pool on every cluster
        # event (the queueing hints); emptied whenever a winner changes
        self._profile_names: dict[tuple[str, str], str | None] = {}
        self._default_points: dict[str, list[str]] | None = None
        self._capped: set[ProfileKey] = set()  # refused by the profiles-per-namespace rule

    # -- claims ----------------------------------------------------------------------------------
    def claim(self, key: ProfileKey, scheduler_name: str, created: str = "") -> None:
        """Record that profile ``key`` exists and wants ``scheduler_name`` (valid or not)."""
        old = self._claims.get(key)
        self._claims[key] = Claim(key, scheduler_name, created)
        self._recompute_winner(key.namespace, scheduler_name)
        if old is not None and old.scheduler_name != scheduler_name:
            self._recompute_winner(key.namespace, old.scheduler_name)

    def _recompute_winner(self, namespace: str, scheduler_name: str) -> None:
        rivals = [
            c for c in self._claims.values() if c.key.namespace == namespace and c.scheduler_name == scheduler_name
        ]
        if rivals:
            self._winners[(namespace, scheduler_name)] = min(rivals, key=Claim.order).key
        else:
            self._winners.pop((namespace, scheduler_name), None)
        self._profile_names.clear()

    def claimed(self) -> list[ProfileKey]:
        """Every profile known to exist, serving or not."""
        return list(self._claims)

    def claim_of(self, key: ProfileKey) -> Claim | None:
        return self._claims.get(key)

    def winner(self, namespace: str, scheduler_name: str) -> ProfileKey | None:
        return self._winners.get((namespace, scheduler_name))

    def set_problem(self, key: ProfileKey, reason: str | None) -> None:
        """Why ``key`` does not serve (shown on its held pods); None clears it."""
        if reason is None:
            self._problems.pop(key, None)
        else:
            self._problems[key] = reason

    # -- building --------------------------------------------------------------------------------
    def build(self, key: ProfileKey, spec: SchedulerProfileSpec) -> Framework:
        """Build (validate) a framework for ``spec`` without installing it."""
        bounds = [
            problem
            for index, entry in enumerate(spec.plugin_config)
            for problem in check_args_bounds(entry.args, f"pluginConfig[{index}].args")
        ]
        if bounds:
            raise ProfileError(bounds)
        if key.namespace != self.home_namespace:
            self._check_claim(key, spec)
        if spec.extenders and key.namespace != self.home_namespace:
            _, _, policy = self.cluster_profile(spec.scheduler_name)
            refused = check_tenant_extenders(spec.extenders, policy, namespace=key.namespace)
            if refused:
                raise ProfileError([v.problem() for v in refused])
        handle = self._make_handle(key)
        try:
            handle.extenders, spec = build_extenders(spec)
        except ExtenderConfigError as exc:
            raise ProfileError(exc.problems) from None
        built = build_profile(spec, self._registry, handle, self._default_multi_point)
        fwk = Framework(
            profile_name=str(key),
            scheduler_name=spec.scheduler_name,
            percentage_of_nodes_to_score=spec.percentage_of_nodes_to_score,
            built=built,
            handle=handle,
            batch=self._batch,
            annotate=spec.explain == ANNOTATE,
        )
        self._check_queue_sort(key, fwk)
        if key.namespace != self.home_namespace:
            self._check_tenant(key, spec, fwk)
        return fwk

    def _check_queue_sort(self, key: ProfileKey, fwk: Framework) -> None:
        for other_key, other in self._by_key.items():
            if other_key == key:
                continue
            if other.queue_sort_plugin.name != fwk.queue_sort_plugin.name:
                raise ProfileError(
                    [
                        (
                            "plugins.queueSort",
                            f"queue sort plugin {fwk.queue_sort_plugin.name!r} differs from "
                            f"{other.queue_sort_plugin.name!r} used by profile {other_key}: "
                            "one QueueSort per scheduler",
                        )
                    ]
                )
            break

    def cluster_profile(self, scheduler_name: str) -> tuple[str, dict[str, list[str]], TenantPolicy]:
        """The cluster-wide profile a tenant profile of ``scheduler_name`` is checked against:
        its name, resolved plugins per point, and tenant policy."""
        home = self._winners.get((self.home_namespace, scheduler_name))
        fwk = self._by_key.get(home) if home is not None else None
        if home is not None and fwk is not None:
            policy = self._specs[home].tenant_policy or TenantPolicy()
            return str(home), _names(fwk), policy
        if self._default_points is None:
            default = SchedulerProfileSpec()
            handle = self._make_handle(ProfileKey(self.home_namespace, "<built-in default>"))
            built = build_profile(default, self._registry, handle, self._default_multi_point)
            camel = {point.field: point.config_name for point in EXTENSION_POINTS}
            self._default_points = {
                camel[f]: [p.name for p in plugins] for f, plugins in built.points.items() if plugins
            }
        return "<built-in default profile>", self._default_points, TenantPolicy()

    def claim_rules(self) -> ClaimRules:
        """The home namespace's combined rules on tenant claims (names, profiles per namespace)."""
        home = {name: str(key) for (namespace, name), key in self._winners.items() if namespace == self.home_namespace}
        policies = [
            spec.tenant_policy
            for key, spec in self._specs.items()
            if key.namespace == self.home_namespace and spec.tenant_policy is not None
        ]
        return ClaimRules.of(home, policies)

    def _check_claim(self, key: ProfileKey, spec: SchedulerProfileSpec) -> None:
        """The tenant profile ``key`` may serve ``spec.schedulerName``, and is among the oldest
        ``maxProfilesPerNamespace`` of its namespace."""
        rules = self.claim_rules()
        violations = check_scheduler_name(spec.scheduler_name, rules, namespace=key.namespace)
        capped = check_profile_count(self._rank(key), rules, namespace=key.namespace)
        if capped:
            # Unlike a refused spec, which leaves the last good one serving, this refuses the
            # object itself (as a younger rival is refused in ``install``).
            self._capped.add(key)
            self.remove(key)
        else:
            self._capped.discard(key)
        if violations or capped:
            raise ProfileError([v.problem() for v in violations + capped])

    def _rank(self, key: ProfileKey) -> int:
        """How many profiles of ``key``'s namespace are older than it (all, when unclaimed)."""
        others = [c for c in self._claims.values() if c.key.namespace == key.namespace and c.key != key]
        own = self._claims.get(key)
        return len(others) if own is None else sum(1 for c in others if c.order() < own.order())

    def over_cap(self, namespace: str) -> tuple[list[ProfileKey], list[ProfileKey]]:
        """For the profiles-per-namespace rule after claims of ``namespace`` changed: the
        serving profiles now beyond the cap, and those refused for the cap now within it."""
        cap = self.claim_rules().max_profiles
        ranked = sorted((c for c in self._claims.values() if c.key.namespace == namespace), key=Claim.order)
        beyond = [c.key for c in ranked[cap:] if c.key in self._by_key]
        within = [c.key for c in ranked[:cap] if c.key in self._capped]
        return beyond, within

    def _check_tenant(self, key: ProfileKey, spec: SchedulerProfileSpec, fwk: Framework) -> None:
        self._check_claim(key, spec)
        name, cluster, policy = self.cluster_profile(spec.scheduler_name)
        violations = check_tenant_profile(
            _names(fwk), cluster, spec, policy, namespace=key.namespace, cluster_profile=name, extenders=spec.extenders
        )
        if violations:
            raise ProfileError([v.problem() for v in violations])

    def recheck_tenants(self, scheduler_name: str) -> list[tuple[ProfileKey, Framework, list[tuple[str, str]]]]:
        """After the cluster-wide profile of ``scheduler_name`` changed: the serving tenant
        frameworks that now break its policy, or the claim rules every home profile adds to
        (so every tenant is re-checked), removed (their claims stay: their pods are held)."""
        del scheduler_name  # the claim rules are the whole home namespace's
        broken = []
        for key, fwk in list(self._by_key.items()):
            if key.namespace == self.home_namespace:
                continue
            try:
                self._check_tenant(key, self._specs[key], fwk)
            except ProfileError as error:
                self.remove(key)
                self.set_problem(key, "; ".join(f"{p}: {r}" for p, r in error.problems))
                broken.append((key, fwk, error.problems))
        return broken

    # -- serving ---------------------------------------------------------------------------------
    def install(self, key: ProfileKey, fwk: Framework, spec: SchedulerProfileSpec | None = None) -> Framework | None:
        """Serve ``fwk`` for ``key``; returns the framework it replaces, if any.

        ``key`` must win the claim of its (namespace, schedulerName); an unclaimed key is
        claimed with no creation time."""
        claim = self._claims.get(key)
        if claim is None or claim.scheduler_name != fwk.scheduler_name:
            self.claim(key, fwk.scheduler_name, claim.created if claim is not None else "")
        owner = self._winners.get((key.namespace, fwk.scheduler_name))
        if owner is not None and owner != key:
            self.remove(key)  # an older rival arrived after this one served: it loses its framework
            raise ProfileError(
                [
                    (
                        "schedulerName",
                        f"schedulerName {fwk.scheduler_name!r} is already served by profile {owner} "
                        f"in namespace {key.namespace!r} (the oldest profile wins)",
                    )
                ]
            )
        old = self._by_key.get(key)
        self._by_key[key] = fwk
        self._specs[key] = spec if spec is not None else SchedulerProfileSpec(scheduler_name=fwk.scheduler_name)
        self._problems.pop(key, None)
        return old

    def remove(self, key: ProfileKey) -> Framework | None:
        """Stop serving ``key`` (its claim stays)."""
        self._specs.pop(key, None)
        return self._by_key.pop(key, None)

    def delete(self, key: ProfileKey) -> Framework | None:
        """``key`` no longer exists: stop serving it and drop its claim."""
        old = self.remove(key)
        claim = self._claims.pop(key, None)
        self._problems.pop(key, None)
        self._capped.discard(key)
        if claim is not None:
            self._recompute_winner(key.namespace, claim.scheduler_name)
        return old

    def get(self, key: ProfileKey) -> Framework | None:
        return self._by_key.get(key)

    def spec(self, key: ProfileKey) -> SchedulerProfileSpec | None:
        return self._specs.get(key)

    def key_for_pod(self, pod: PodInfo) -> ProfileKey | None:
        """The profile ``pod`` resolves to, serving or not (None: not ours)."""
        return self.key_for(pod.namespace, pod.scheduler_name)

    def key_for(self, namespace: str, scheduler_name: str) -> ProfileKey | None:
        """The profile a pod of ``namespace`` naming ``scheduler_name`` resolves to, serving or not."""
        key = self._winners.get((namespace, scheduler_name))
        if key is None:
            key = self._winners.get((self.home_namespace, scheduler_name))
        return key

    def profile_of(self, pod: PodInfo) -> str | None:
        """The queue's key for ``pod``'s profile."""
        lookup = (pod.namespace, pod.scheduler_name)
        names = self._profile_names
        if lookup in names:
            return names[lookup]
        key = self.key_for(*lookup)
        if len(names) >= _PROFILE_NAMES_KEPT:  # tenants choose namespaces and scheduler names
            names.clear()
        name = names[lookup] = None if key is None else str(key)
        return name

    def for_pod(self, pod: PodInfo) -> Framework | None:
        key = self.key_for_pod(pod)
        return self._by_key.get(key) if key is not None else None

    def held_reason(self, pod: PodInfo) -> str | None:
        """Why ``pod`` waits although a profile claims it (None: it is served, or not ours)."""
        key = self.key_for_pod(pod)
        if key is None or key in self._by_key:
            return None
        why = self._problems.get(key, "it has not been built yet")
        return (
            f"profile {key} (schedulerName {pod.scheduler_name!r}) does not serve: {why}; "
            "its pods wait for it (no fall-back to another profile)"
        )

    def handles(self, pod: PodInfo) -> bool:
        return self.for_pod(pod) is not None

    def __iter__(self) -> Iterator[tuple[ProfileKey, Framework]]:
        return iter(list(self._by_key.items()))

    def __len__(self) -> int:
        return len(self._by_key)


def _names(fwk: Framework) -> dict[str, list[str]]:
    return {point: [str(p["name"]) for p in plugins] for point, plugins in fwk.describe().items()}
