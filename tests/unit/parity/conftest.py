"""Fixtures of the parity harness's unit tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.parity_harness.extender import Extender


@pytest.fixture
def extender() -> Iterator[Extender]:
    """The harness's extender (the recorder and the scenario extenders), serving on loopback."""
    server = Extender()
    server.start()
    try:
        yield server
    finally:
        server.stop()
