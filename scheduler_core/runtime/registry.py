"""Registry: plugin name -> factory, one flat map (upstream ``runtime/registry.go``).

In-tree plugins come from ``scheduler_core.plugins.registry``; out-of-tree plugins are
Python packages that declare an entry point in the group ``crd_scheduler.plugins``
(``name = "package.module:PluginClass"``): the Pythonic ``app.WithPlugin``. A factory is
validated when it registers, so a broken plugin is refused with a precise message, not
discovered mid-cycle.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from importlib import metadata

from pydantic import BaseModel

from scheduler_core.framework import PluginFactory
from scheduler_core.framework.extension_points import plugin_problems

ENTRY_POINT_GROUP = "crd_scheduler.plugins"


class RegistryError(ValueError):
    """A plugin that cannot be registered: duplicate name, not a plugin factory, or a plugin
    class whose methods do not match the extension-point Protocols (misspelt or wrong
    signature); the message names the plugin and the method."""


class Registry(Mapping[str, PluginFactory]):
    def __init__(self, factories: Mapping[str, PluginFactory] | None = None) -> None:
        self._factories: dict[str, PluginFactory] = {}
        for name, factory in (factories or {}).items():
            self.register(name, factory)

    def register(self, name: str, factory: PluginFactory) -> None:
        if name in self._factories:
            raise RegistryError(f"a plugin named {name!r} already exists")
        if not callable(factory):
            raise RegistryError(f"plugin {name!r}: factory {factory!r} is not callable")
        args_model = getattr(factory, "args_model", None)
        if args_model is not None and not (inspect.isclass(args_model) and issubclass(args_model, BaseModel)):
            raise RegistryError(f"plugin {name!r}: args_model must be a pydantic model class, got {args_model!r}")
        if inspect.isclass(factory):  # a factory function's plugin is checked when it is built
            problems = plugin_problems(name, factory)
            if problems:
                raise RegistryError("; ".join(problems))
        self._factories[name] = factory

    def merge(self, other: Mapping[str, PluginFactory]) -> None:
        for name, factory in other.items():
            self.register(name, factory)

    def __getitem__(self, name: str) -> PluginFactory:
        return self._factories[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)


def out_of_tree_plugins(group: str = ENTRY_POINT_GROUP) -> Registry:
    """Plugins published by installed packages through entry points."""
    registry = Registry()
    for entry in metadata.entry_points(group=group):
        try:
            factory = entry.load()
        except Exception as exc:  # an installed package's import error must name the package
            raise RegistryError(
                f"plugin {entry.name!r} from entry point {entry.value!r} failed to load: {exc}"
            ) from exc
        registry.register(entry.name, factory)
    return registry


def default_registry(*, with_out_of_tree: bool = True) -> Registry:
    """In-tree plugins plus, unless disabled, those installed through entry points."""
    from scheduler_core.plugins.registry import in_tree_registry

    registry = Registry(in_tree_registry())
    if with_out_of_tree:
        registry.merge(out_of_tree_plugins())
    return registry
