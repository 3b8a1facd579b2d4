"""The wheel and sdist as a user gets them: built, checked by twine, installed alone.

A new venv gets the runtime lock (``requirements/runtime.txt``, hashes checked) and the wheel
with no dependency resolution of its own; nothing of the source tree is on its path. Its
``crd-scheduler`` then prints the version and simulates the bundled example exactly as the
tree does. Needs PyPI (the lock's packages), as ``make install`` does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from scheduler_core import version

ROOT = Path(__file__).resolve().parents[2]


def _run(*command: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=900
    )
    assert done.returncode == 0, f"{command}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, ".")
    _run(sys.executable, "-m", "twine", "check", "--strict", *sorted(out.iterdir()))
    return out


@pytest.fixture(scope="module")
def venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", where)
    pip: list[str | Path] = [where / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    _run(*pip, "--require-hashes", "-r", ROOT / "requirements" / "runtime.txt")
    (wheel,) = dist.glob("crd_scheduler-*.whl")
    _run(*pip, "--no-deps", wheel)
    return where


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def test_the_artifacts_carry_the_version_and_the_example(dist: Path) -> None:
    (wheel,) = dist.glob("crd_scheduler-*.whl")
    (sdist,) = dist.glob("crd_scheduler-*.tar.gz")
    assert wheel.name.startswith(f"crd_scheduler-{version.VERSION}-py3-none-any")
    assert sdist.name == f"crd_scheduler-{version.VERSION}.tar.gz"
    names = zipfile.ZipFile(wheel).namelist()
    for data in ("scheduler_operator/examples/cluster.yaml", "scheduler_core/apivalidation/schema.json"):
        assert data in names
    assert not [n for n in names if n.startswith("tests/")]
    with tarfile.open(sdist) as archive:
        assert f"crd_scheduler-{version.VERSION}/scheduler_operator/examples/cluster.yaml" in archive.getnames()


def test_the_installed_wheel_prints_its_version(venv: Path, tmp_path: Path) -> None:
    out = _run(venv / "bin" / "crd-scheduler", "--version", cwd=tmp_path, env=_clean_env())
    assert out.startswith(f"crd-scheduler {version.VERSION} (kube-scheduler {version.KUBERNETES_VERSION}")


def test_the_installed_wheel_simulates_the_bundled_example(venv: Path, tmp_path: Path) -> None:
    env = _clean_env()
    where = _run(
        venv / "bin" / "python", "-c", "import scheduler_core; print(scheduler_core.__file__)", cwd=tmp_path, env=env
    )
    assert where.startswith(str(venv)), where  # the wheel's code, not the tree's
    out = _run(
        venv / "bin" / "crd-scheduler", "simulate", "--example", "-o", "json", "--seed", "3", cwd=tmp_path, env=env
    )
    tree = _run(sys.executable, "-m", "scheduler_operator", "simulate", "-f", ROOT / "examples" / "cluster.yaml",
                "-o", "json", "--seed", "3")  # fmt: skip
    assert json.loads(out) == json.loads(tree)
    assert {pod["status"] for pod in json.loads(out)["pods"]} >= {"Scheduled"}
