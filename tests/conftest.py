"""Fixtures shared by every test tier.

Pods and nodes are built with the fluent wrappers of :mod:`tests.wrappers`
(``make_pod().name("p").req(cpu="1").obj()``), offered here as fixtures too so a test can ask
for them by name; time is a :class:`FakeClock`, never the wall clock.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from scheduler_core.clock import FakeClock
from scheduler_core.runtime.registry import Registry, default_registry
from tests.wrappers import NodeWrapper, PodWrapper, make_node, make_pod


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock at 0: tests advance it instead of sleeping."""
    return FakeClock()


@pytest.fixture
def in_tree_registry() -> Registry:
    """The in-tree plugins only: installed out-of-tree packages do not change unit tests."""
    return default_registry(with_out_of_tree=False)


@pytest.fixture
def pod_wrapper() -> Callable[[], PodWrapper]:
    return make_pod


@pytest.fixture
def node_wrapper() -> Callable[[], NodeWrapper]:
    return make_node
