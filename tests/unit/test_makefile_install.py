"""`make install`'s stamp is only trusted for the checkout that made it.

The editable installs it makes point into the checkout; a stamp copied with a moved (or
re-cloned) checkout would otherwise leave the sample plugin's entry point aimed at a path
that is gone, and every operator start fails loading it. Run with ``make -n`` in a copy of
the files the stamp depends on, so nothing is installed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAMP_INPUTS = ("Makefile", "pyproject.toml", "tests/sample_plugin/pyproject.toml", "requirements/dev.txt")


def _checkout_copy(where: Path) -> Path:
    for name in STAMP_INPUTS:
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, where / name)
    return where


def _install_plan(checkout: Path, stamp_text: str) -> str:
    stamp = checkout / ".stamp-install"
    stamp.write_text(stamp_text)
    newer = max((checkout / name).stat().st_mtime for name in STAMP_INPUTS) + 10
    os.utime(stamp, (newer, newer))
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "install"], cwd=checkout, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_a_stamp_from_another_checkout_reinstalls(tmp_path: Path) -> None:
    checkout = _checkout_copy(tmp_path)
    assert "pip install" in _install_plan(checkout, "/elsewhere/crd-scheduler\n")


def test_a_stamp_from_this_checkout_is_kept(tmp_path: Path) -> None:
    checkout = _checkout_copy(tmp_path)
    assert "pip install" not in _install_plan(checkout, f"{checkout}\n")
