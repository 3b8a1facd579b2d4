"""The release bookkeeping that a tag relies on (docs/releasing.md): CHANGELOG's sections."""

from __future__ import annotations

import re
from pathlib import Path

from packaging.version import Version

from scheduler_core import version

ROOT = Path(__file__).resolve().parents[2]
SECTION = re.compile(r"^## \[(?P<name>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$", re.MULTILINE)


def _sections() -> list[tuple[str, str | None]]:
    return [(m["name"], m["date"]) for m in SECTION.finditer((ROOT / "CHANGELOG.md").read_text())]


def test_unreleased_comes_first_then_dated_versions_newest_first() -> None:
    sections = _sections()
    assert sections[0] == ("Unreleased", None)
    released = sections[1:]
    assert released and all(date is not None for _, date in released), released
    versions = [Version(name) for name, _ in released]
    assert versions == sorted(versions, reverse=True)
    dates = [date for _, date in released]
    assert dates == sorted(dates, reverse=True)  # type: ignore[type-var]


def test_the_package_version_has_its_section() -> None:
    assert _sections()[1][0] == version.VERSION, "cut the release in CHANGELOG.md (docs/releasing.md)"
