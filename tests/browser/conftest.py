"""The browser fixture: headless Chromium from Debian's package (``make browser`` installs it).

Missing Chromium skips here and fails in CI (``CI=true``), as a missing API server does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.browser.chromium import Browser, available


@pytest.fixture
def browser() -> Iterator[Browser]:
    if not available():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("browser: /usr/bin/chromium is missing in CI (make browser installs it)", pytrace=False)
        pytest.skip("browser: no chromium (make browser installs it)")
    with Browser() as running:
        yield running
