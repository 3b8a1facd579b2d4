"""CycleState: data that plugins share within one scheduling cycle of one pod.

Upstream: ``pkg/scheduler/framework/cycle_state.go``. A plugin writes its pre-computed
state under its own key in PreFilter/PreScore and reads it in Filter/Score. The state is
cloned when a what-if evaluation (preemption, nominated pods) must not leak changes back,
so every stored value implements ``clone``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, TypeVar


class StateData(Protocol):
    def clone(self) -> StateData: ...


S = TypeVar("S")


class StateNotFound(KeyError):
    """Raised by :meth:`CycleState.read` for a key nobody wrote."""


class CycleState:
    __slots__ = (
        "_data",
        "binding_annotations",
        "parallel_pre_bind_plugins",
        "pods_to_activate",
        "record_plugin_metrics",
        "skip_filter_plugins",
        "skip_pre_bind_plugins",
        "skip_score_plugins",
    )

    def __init__(self) -> None:
        self._data: dict[str, StateData] = {}
        # Plugins whose PreFilter/PreScore returned Skip: their Filter/Score are not run.
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # Plugins whose PreBindPreFlight returned Skip (their PreBind is not run), and those
        # whose PreBind may run beside the others that allow it (upstream SetSkipPreBindPlugins,
        # SetParallelPreBindPlugins).
        self.skip_pre_bind_plugins: set[str] = set()
        self.parallel_pre_bind_plugins: set[str] = set()
        # Pods a plugin asks to move to activeQ at the end of the cycle (key -> pod).
        self.pods_to_activate: dict[str, object] = {}
        # This cycle is in the sample whose plugin durations are recorded (upstream
        # ``ShouldRecordPluginMetrics``).
        self.record_plugin_metrics = False
        # Annotations the pod's Binding carries (set by the scheduler after Permit when the
        # profile has ``explain: Annotate``): a Bind plugin passes them to ``ClusterAPI.bind``.
        self.binding_annotations: Mapping[str, str] | None = None

    def read(self, key: str) -> StateData:
        try:
            return self._data[key]
        except KeyError:
            raise StateNotFound(key) from None

    def read_as(self, key: str, kind: type[S]) -> S:
        """Read ``key`` and check that it holds a ``kind`` (a typed state getter)."""
        data = self.read(key)
        if not isinstance(data, kind):
            raise TypeError(f"{data!r} at {key!r} is not a {kind.__name__}")
        return data

    def read_optional(self, key: str, kind: type[S]) -> S | None:
        """:meth:`read_as`, with ``None`` when nothing was written at ``key`` (its PreFilter or
        PreScore did not run, or skipped)."""
        data = self._data.get(key)
        if data is None:
            return None
        if not isinstance(data, kind):
            raise TypeError(f"{data!r} at {key!r} is not a {kind.__name__}")
        return data

    def write(self, key: str, data: StateData) -> None:
        self._data[key] = data

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        clone = CycleState()
        clone._data = {key: value.clone() for key, value in self._data.items()}
        clone.skip_filter_plugins = set(self.skip_filter_plugins)
        clone.skip_score_plugins = set(self.skip_score_plugins)
        clone.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        clone.parallel_pre_bind_plugins = set(self.parallel_pre_bind_plugins)
        clone.pods_to_activate = dict(self.pods_to_activate)
        clone.record_plugin_metrics = self.record_plugin_metrics
        clone.binding_annotations = self.binding_annotations
        return clone
