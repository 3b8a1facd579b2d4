"""The operator's collector settings: what exists at start and after the first sync is frozen
(never walked again), and young collections are rarer than CPython's default."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from scheduler_operator.control import collector


@pytest.fixture
def restored_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_tune_freezes_what_exists_and_raises_the_young_threshold(restored_gc: None) -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0

    collector.tune()

    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (collector.YOUNG_THRESHOLD, *collector.OLDER_THRESHOLDS)


def test_settle_freezes_what_was_built_since(restored_gc: None) -> None:
    collector.tune()
    frozen = gc.get_freeze_count()
    cache = [{"metadata": {"name": f"p{i}"}} for i in range(1000)]

    collector.settle()

    assert gc.get_freeze_count() >= frozen + len(cache)
