"""The plugin contract fails loudly: ``Registry.register`` checks a plugin class's methods
against the extension-point Protocols (as pluggy validates hook implementations), and a
factory function's plugin is checked when the profile is built."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from scheduler_core.config import PluginRef, PluginSet, SchedulerProfileSpec
from scheduler_core.framework import CycleState, NodeInfo, NodeName, PodInfo, PreFilterResult, Status
from scheduler_core.plugins.registry import in_tree_registry
from scheduler_core.runtime.build import ProfileError, build_profile
from scheduler_core.runtime.handle import FrameworkHandle
from scheduler_core.runtime.registry import Registry, RegistryError
from tests.unit.runtime.fakes import Binder, Sort


class Good:
    name = "Good"
    args_model = None

    def __init__(self, args: Any, handle: Any) -> None:
        pass

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None

    def reserve(self, state: CycleState, pod: PodInfo, node_name: NodeName, *extra: Any) -> Status | None:
        return None  # extra positional parameters with defaults or *args are fine

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> None:
        pass

    async def bind(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> Status | None:
        return None

    def describe(self) -> str:  # a public helper not resembling any extension point
        return "good"

    def _filtr(self) -> None:  # private names are the plugin's own business
        pass


class Misspelt(Good):
    name = "Misspelt"

    def filtr(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class MisspeltNormalize(Good):
    name = "MisspeltNormalize"

    def normalise_score(self, state: CycleState, pod: PodInfo, scores: list[Any]) -> Status | None:
        return None


class TooFewParameters(Good):
    name = "TooFewParameters"

    def filter(self, state: CycleState, pod: PodInfo) -> Status | None:  # type: ignore[override]
        return None


class TooManyParameters(Good):
    name = "TooManyParameters"

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo, extra: int) -> tuple[int, Status | None]:
        return 0, None


class SyncBind(Good):
    name = "SyncBind"

    def bind(self, state: CycleState, pod: PodInfo, node_name: NodeName) -> Status | None:  # type: ignore[override]
        return None


class AsyncFilter(Good):
    name = "AsyncFilter"

    async def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:  # type: ignore[override]
        return None


class AsyncPreFlight(Good):
    name = "AsyncPreFlight"

    async def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Any:
        return None, None


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        pytest.param(
            AsyncPreFlight,
            "plugin 'AsyncPreFlight': method 'pre_bind_pre_flight' must be a plain function, not async, "
            "as PreBindPreFlight.pre_bind_pre_flight",
            id="pre-flight-async",
        ),
        pytest.param(
            Misspelt,
            "plugin 'Misspelt': method 'filtr' matches no extension point (did you mean 'filter', "
            "FilterPlugin.filter?); rename it or make it private",
            id="misspelt-filtr",
        ),
        pytest.param(
            MisspeltNormalize,
            "plugin 'MisspeltNormalize': method 'normalise_score' matches no extension point (did you mean "
            "'normalize_score', ScoreExtensions.normalize_score?); rename it or make it private",
            id="misspelt-normalise-score",
        ),
        pytest.param(
            TooFewParameters,
            "plugin 'TooFewParameters': method 'filter' takes (state, pod), but FilterPlugin.filter calls it with "
            "(state, pod, node)",
            id="wrong-signature-too-few",
        ),
        pytest.param(
            TooManyParameters,
            "plugin 'TooManyParameters': method 'score' takes (state, pod, node, extra), but ScorePlugin.score "
            "calls it with (state, pod, node)",
            id="wrong-signature-too-many",
        ),
        pytest.param(
            SyncBind,
            "plugin 'SyncBind': method 'bind' must be a coroutine (async def), as BindPlugin.bind",
            id="bind-not-async",
        ),
        pytest.param(
            AsyncFilter,
            "plugin 'AsyncFilter': method 'filter' must be a plain function, not async, as FilterPlugin.filter",
            id="filter-async",
        ),
    ],
)
def test_register_rejects_a_plugin_class_that_does_not_match_the_protocols(factory: Any, message: str) -> None:
    with pytest.raises(RegistryError) as info:
        Registry().register(factory.name, factory)
    assert str(info.value) == message


def test_register_accepts_a_well_formed_plugin_and_every_in_tree_plugin() -> None:
    registry = Registry(in_tree_registry())
    registry.register("Good", Good)
    assert "Good" in registry and "NodeResourcesFit" in registry


def _build(factory: Any) -> None:
    spec = SchedulerProfileSpec.model_validate({"plugins": {"filter": {"enabled": [{"name": "Fn"}]}}})
    defaults = PluginSet(enabled=[PluginRef(name="Sort"), PluginRef(name="Binder")])
    handle = FrameworkHandle("t", snapshot=lambda: None, api=None)  # type: ignore[arg-type, return-value]
    build_profile(spec, {"Sort": Sort, "Binder": Binder, "Fn": factory}, handle, defaults)


class MisspeltFactory:
    """A factory object (not a class): what it builds is only known when it is called."""

    name = "Fn"
    args_model = None

    def __call__(self, args: Any, handle: Any) -> Misspelt:
        return Misspelt(args, handle)


def test_a_factory_objects_plugin_is_checked_when_the_profile_is_built() -> None:
    factory = MisspeltFactory()
    Registry().register("Fn", factory)  # nothing to inspect before the plugin exists
    with pytest.raises(ProfileError) as info:
        _build(factory)
    assert info.value.problems == [
        (
            "plugins.filter.enabled[0].name",
            "plugin 'Fn': method 'filtr' matches no extension point (did you mean 'filter', "
            "FilterPlugin.filter?); rename it or make it private",
        )
    ]
