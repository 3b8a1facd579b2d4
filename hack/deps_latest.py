#!/usr/bin/env python3
"""`make deps-latest`: the fast tests against the newest versions pyproject.toml allows.

The lock (requirements/dev.txt) keeps development and CI reproducible, which also hides the day
a dependency's new release breaks us for users, who install from the ranges (PyYAML 6.0.4 did).
This resolves the ranges afresh (`uv pip compile --upgrade`, no lock), installs that into a
throw-away venv (.cache/deps-latest), and runs tests/unit and tests/integration there.

Exit 0 when they pass. When they fail, every package whose version differs from the lock is
put back to the lock's version, one at a time, and the failed tests run again: the packages
whose rollback makes them pass are named as the ones that broke (exit 1). See
requirements/README.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".cache" / "deps-latest"
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", re.MULTILINE)
TESTS = ["tests/unit", "tests/integration"]


def main() -> int:
    shutil.rmtree(VENV, ignore_errors=True)
    VENV.mkdir(parents=True)
    uv = [sys.executable, "-m", "uv"]
    python = str(VENV / "bin" / "python")
    newest = VENV / "newest.txt"
    _run([*uv, "venv", "--quiet", "--python", sys.executable, str(VENV)])
    _run([*uv, "pip", "compile", "--quiet", "--upgrade", "--no-header", "--python-version", "3.11",
          "pyproject.toml", "--extra", "dev", "requirements/tools.in", "-o", str(newest)])  # fmt: skip
    _run([*uv, "pip", "install", "--quiet", "--python", python, "-r", str(newest)])
    _run([*uv, "pip", "install", "--quiet", "--python", python, "--no-deps", "--no-build-isolation",
          "-e", ".", "-e", "tests/sample_plugin"])  # fmt: skip
    locked = _pins((ROOT / "requirements" / "dev.txt").read_text())
    latest = _pins(newest.read_text())
    moved = {name: (locked.get(name), version) for name, version in latest.items() if locked.get(name) != version}
    for name, (old, new) in sorted(moved.items()):
        print(f"deps-latest: {name} {old or '(not in the lock)'} -> {new}", file=sys.stderr)
    failed = _pytest(python, TESTS)
    if not failed:
        print(f"deps-latest: the fast tests pass with the newest allowed versions ({len(moved)} differ from the lock)")
        return 0
    print(f"deps-latest: {len(failed)} test(s) fail with the newest allowed versions", file=sys.stderr)
    if not moved:
        print("deps-latest: no package differs from the lock: the failures are the tree's own", file=sys.stderr)
    culprits = []
    for name, (old, new) in sorted(moved.items()):
        if old is None:
            continue
        _run([*uv, "pip", "install", "--quiet", "--python", python, f"{name}=={old}"])
        still = _pytest(python, sorted(failed))
        _run([*uv, "pip", "install", "--quiet", "--python", python, f"{name}=={new}"])
        if len(still) < len(failed):
            culprits.append(f"{name} {new} (the lock has {old}; {len(failed) - len(still)} of the failures go with it)")
    if culprits:
        for culprit in culprits:
            print(f"deps-latest: broken by {culprit}", file=sys.stderr)
    else:
        print("deps-latest: no single package's rollback fixes the failures (see the versions above)", file=sys.stderr)
    for test in sorted(failed):
        print(f"deps-latest: failed: {test}", file=sys.stderr)
    return 1


def _pins(text: str) -> dict[str, str]:
    return {_normal(name): version for name, version in PIN.findall(text)}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pytest(python: str, targets: list[str]) -> set[str]:
    """The node ids of the failed tests (empty when all pass)."""
    report = VENV / "report.xml"
    report.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", *targets],
        cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    if done.returncode == 0:
        return set()
    if not report.exists():
        raise SystemExit(f"deps-latest: pytest exited {done.returncode} without a report")
    failed = set()
    for case in ET.parse(report).iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.add(_node_id(case.get("classname", ""), case.get("name", "")))
    return failed


def _node_id(classname: str, name: str) -> str:
    """``tests.unit.x.test_y.TestZ`` + ``test_w[p]`` -> ``tests/unit/x/test_y.py::TestZ::test_w[p]``."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (ROOT / path).is_file():
            return "::".join([path, *parts[cut:], name])
    return f"{classname}::{name}"


def _run(command: list[str]) -> None:
    subprocess.run(command, cwd=ROOT, check=True)


if __name__ == "__main__":
    sys.exit(main())
