"""The extension points as data: which method serves each, with which signature.

A plugin serves an extension point by having its method (DESIGN.md, "The plugin contract"):
there is no base class to inherit and no decorator to apply, so a misspelt method (``filtr``)
or a wrong signature would otherwise be silently ignored or fail mid-cycle. As pluggy does for
hook implementations, :func:`plugin_problems` checks a plugin class (or instance) against the
Protocols of :mod:`~scheduler_core.framework.interface` when it registers:

- every extension-point method it has takes the Protocol's positional parameters, and is a
  coroutine exactly when the Protocol's is (binding-cycle hooks) ;
- a public method whose name is close to an extension-point method but is none of them
  (``filtr``, ``prefilter``, ``normalise_score``) is refused: it would never be called.

:data:`EXTENSION_POINTS` lists the points in pipeline order with their profile field names
(``plugins.preFilter``), and :class:`ExtensionPointSets` holds a built profile's plugins per
point, typed by Protocol (upstream ``frameworkImpl``'s per-point slices).
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeGuard, TypeVar

from scheduler_core.framework import interface as i

P = TypeVar("P", bound=i.Plugin)


@dataclass(frozen=True, slots=True)
class ExtensionPoint(Generic[P]):
    """One extension point: its profile field (``pre_filter`` / ``preFilter``) and the method
    that marks a plugin as serving it; ``P`` is the Protocol that types the plugin there."""

    field: str
    config_name: str
    method: str

    def serves(self, plugin: i.Plugin) -> TypeGuard[P]:
        return callable(getattr(plugin, self.method, None))

    def select(self, plugins: Iterable[i.Plugin]) -> list[P]:
        """The plugins that serve this point, in order."""
        return [p for p in plugins if self.serves(p)]


PRE_ENQUEUE: ExtensionPoint[i.PreEnqueuePlugin] = ExtensionPoint("pre_enqueue", "preEnqueue", "pre_enqueue")
QUEUE_SORT: ExtensionPoint[i.QueueSortPlugin] = ExtensionPoint("queue_sort", "queueSort", "less")
PRE_FILTER: ExtensionPoint[i.PreFilterPlugin] = ExtensionPoint("pre_filter", "preFilter", "pre_filter")
FILTER: ExtensionPoint[i.FilterPlugin] = ExtensionPoint("filter", "filter", "filter")
POST_FILTER: ExtensionPoint[i.PostFilterPlugin] = ExtensionPoint("post_filter", "postFilter", "post_filter")
PRE_SCORE: ExtensionPoint[i.PreScorePlugin] = ExtensionPoint("pre_score", "preScore", "pre_score")
SCORE: ExtensionPoint[i.ScorePlugin] = ExtensionPoint("score", "score", "score")
RESERVE: ExtensionPoint[i.ReservePlugin] = ExtensionPoint("reserve", "reserve", "reserve")
PERMIT: ExtensionPoint[i.PermitPlugin] = ExtensionPoint("permit", "permit", "permit")
PRE_BIND: ExtensionPoint[i.PreBindPlugin] = ExtensionPoint("pre_bind", "preBind", "pre_bind")
BIND: ExtensionPoint[i.BindPlugin] = ExtensionPoint("bind", "bind", "bind")
POST_BIND: ExtensionPoint[i.PostBindPlugin] = ExtensionPoint("post_bind", "postBind", "post_bind")

EXTENSION_POINTS: tuple[ExtensionPoint[Any], ...] = (
    PRE_ENQUEUE,
    QUEUE_SORT,
    PRE_FILTER,
    FILTER,
    POST_FILTER,
    PRE_SCORE,
    SCORE,
    RESERVE,
    PERMIT,
    PRE_BIND,
    BIND,
    POST_BIND,
)


@dataclass(slots=True)
class ExtensionPointSets:
    """A profile's plugins per extension point, in run order, typed by Protocol."""

    pre_enqueue: list[i.PreEnqueuePlugin] = field(default_factory=list)
    queue_sort: list[i.QueueSortPlugin] = field(default_factory=list)
    pre_filter: list[i.PreFilterPlugin] = field(default_factory=list)
    filter: list[i.FilterPlugin] = field(default_factory=list)
    post_filter: list[i.PostFilterPlugin] = field(default_factory=list)
    pre_score: list[i.PreScorePlugin] = field(default_factory=list)
    score: list[i.ScorePlugin] = field(default_factory=list)
    reserve: list[i.ReservePlugin] = field(default_factory=list)
    permit: list[i.PermitPlugin] = field(default_factory=list)
    pre_bind: list[i.PreBindPlugin] = field(default_factory=list)
    bind: list[i.BindPlugin] = field(default_factory=list)
    post_bind: list[i.PostBindPlugin] = field(default_factory=list)

    @classmethod
    def of(cls, points: Mapping[str, Sequence[i.Plugin]]) -> ExtensionPointSets:
        """Typed sets from plugin lists by field name (each plugin already checked to serve)."""
        return cls(**{p.field: p.select(points.get(p.field, ())) for p in EXTENSION_POINTS})


# Every method the runtime calls on a plugin, with the Protocol that defines its signature.
_METHODS: dict[str, type[Any]] = {
    "pre_enqueue": i.PreEnqueuePlugin,
    "less": i.QueueSortPlugin,
    "events_to_register": i.EnqueueExtensions,
    "pre_filter": i.PreFilterPlugin,
    "add_pod": i.PreFilterExtensions,
    "remove_pod": i.PreFilterExtensions,
    "filter": i.FilterPlugin,
    "filter_batch": i.BatchFilterPlugin,
    "post_filter": i.PostFilterPlugin,
    "post_filter_async": i.PostFilterExtensions,
    "pre_score": i.PreScorePlugin,
    "score": i.ScorePlugin,
    "score_batch": i.BatchScorePlugin,
    "normalize_score": i.ScoreExtensions,
    "normalize_score_batch": i.BatchScoreExtensions,
    "reserve": i.ReservePlugin,
    "unreserve": i.ReservePlugin,
    "permit": i.PermitPlugin,
    "pre_bind": i.PreBindPlugin,
    "pre_bind_pre_flight": i.PreBindPreFlight,
    "bind": i.BindPlugin,
    "post_bind": i.PostBindPlugin,
}
METHOD_NAMES = frozenset(_METHODS)


def _positional(fn: Callable[..., Any], *, bound: bool) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    if not bound and params:
        params = params[1:]  # self
    return [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]


def _describe(params: Sequence[inspect.Parameter]) -> str:
    return "(" + ", ".join(("*" if p.kind is p.VAR_POSITIONAL else "") + p.name for p in params) + ")"


def _accepts(params: Sequence[inspect.Parameter], count: int) -> bool:
    """Whether a call with ``count`` positional arguments binds to ``params``."""
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        required = sum(1 for p in params if p.kind is not p.VAR_POSITIONAL and p.default is p.empty)
        return required <= count
    required = sum(1 for p in params if p.default is p.empty)
    return required <= count <= len(params)


def plugin_problems(name: str, plugin: object) -> list[str]:
    """What is wrong with ``plugin`` (a plugin class, or an instance: its class is checked) as an
    implementation of the extension-point Protocols; each message names the plugin and the method."""
    cls: type[Any] = plugin if inspect.isclass(plugin) else type(plugin)
    problems = _checked.get(cls)
    if problems is None:  # once per class: a profile build checks every plugin it instantiates
        problems = _checked[cls] = _class_problems(cls)
    return [f"plugin {name!r}: {problem}" for problem in problems]


_checked: dict[type[Any], tuple[str, ...]] = {}


def _class_problems(cls: type[Any]) -> tuple[str, ...]:
    problems: list[str] = []
    for attr in sorted(dir(cls)):
        if attr.startswith("_"):
            continue
        member = inspect.getattr_static(cls, attr, None)
        value = getattr(cls, attr, None)
        if not callable(value) or isinstance(member, (staticmethod, classmethod, type)):
            continue
        protocol = _METHODS.get(attr)
        if protocol is None:
            close = difflib.get_close_matches(attr, METHOD_NAMES, n=1, cutoff=0.8)
            if close:
                problems.append(
                    f"method {attr!r} matches no extension point "
                    f"(did you mean {close[0]!r}, {protocol_name(close[0])}?); rename it or make it private"
                )
            continue
        expected = _positional(getattr(protocol, attr), bound=False)
        try:
            got = _positional(value, bound=False)
        except (TypeError, ValueError):  # a builtin without a signature: nothing to check
            continue
        if not _accepts(got, len(expected)):
            problems.append(
                f"method {attr!r} takes {_describe(got)}, but {protocol_name(attr)} calls it with {_describe(expected)}"
            )
        want_async = inspect.iscoroutinefunction(getattr(protocol, attr))
        if inspect.iscoroutinefunction(value) != want_async:
            kind = "a coroutine (async def)" if want_async else "a plain function, not async"
            problems.append(f"method {attr!r} must be {kind}, as {protocol_name(attr)}")
    return tuple(problems)


def protocol_name(method: str) -> str:
    """``FilterPlugin.filter``: where a method's contract is written."""
    return f"{_METHODS[method].__name__}.{method}"
