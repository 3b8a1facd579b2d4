"""`make install` counts as done only while the interpreter's editable install is this checkout's.

The editable installs point into the checkout; a stamp copied with a moved (or re-cloned)
checkout would otherwise leave the sample plugin's entry point aimed at a path that is gone,
and every operator start fails loading it; a new machine given the old checkout, or another
clone's ``make install`` since, would pass for installed. Run with ``make -n`` in a copy of the
files the stamp depends on, with a fresh stamp, so nothing is installed; the interpreter's
installed distributions are made up in a directory put first on its path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAMP_INPUTS = ("Makefile", "pyproject.toml", "tests/sample_plugin/pyproject.toml", "requirements/dev.txt")


def _checkout_copy(where: Path) -> Path:
    for name in STAMP_INPUTS:
        (where / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, where / name)
    return where


def _environment() -> dict[str, str]:
    """This process's environment without what an outer make passes down: run by `make
    PY=.venv/bin/python unit`, MAKEFLAGS would give the inner make that PY (found in a fresh
    clone's venv, 2026-12-03), not the interpreter the test sets up."""
    inherited = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "PY"}
    return {k: v for k, v in os.environ.items() if k not in inherited}


def _installed_from(site: Path, checkout: Path) -> dict[str, str]:
    """An environment whose interpreter finds an editable crd-scheduler installed from ``checkout``."""
    info = site / "crd_scheduler-0.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: crd-scheduler\nVersion: 0.0.0\n")
    (info / "direct_url.json").write_text(json.dumps({"dir_info": {"editable": True}, "url": f"file://{checkout}"}))
    return {**_environment(), "PYTHONPATH": str(site)}


def _install_plan(checkout: Path, env: dict[str, str]) -> str:
    stamp = checkout / ".stamp-install"
    stamp.touch()
    newer = max((checkout / name).stat().st_mtime for name in STAMP_INPUTS) + 10
    os.utime(stamp, (newer, newer))
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "install"],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return done.stdout


def test_an_install_of_this_checkout_is_kept(tmp_path: Path) -> None:
    checkout = _checkout_copy(tmp_path / "checkout")
    env = _installed_from(tmp_path / "site", checkout)
    assert "pip install" not in _install_plan(checkout, env)


def test_a_stamp_with_an_install_of_another_checkout_reinstalls(tmp_path: Path) -> None:
    checkout = _checkout_copy(tmp_path / "checkout")
    env = _installed_from(tmp_path / "site", tmp_path / "another-clone")
    assert "pip install" in _install_plan(checkout, env)


def test_a_stamp_without_any_install_reinstalls(tmp_path: Path) -> None:
    checkout = _checkout_copy(tmp_path / "checkout")
    python = tmp_path / "python"  # an interpreter that has nothing installed (-I -S: no site-packages)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S "$@"\n')
    python.chmod(0o755)
    env = {**_environment(), "PY": str(python)}
    assert "pip install" in _install_plan(checkout, env)
