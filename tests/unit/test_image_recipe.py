"""The two image recipes, the Dockerfile (registry users) and hack/image/ (``make image``, no
registry), make the same runtime: these tests fail when one changes without the other.

The facts live in hack/image/rootfs.py, which both run; the Dockerfile repeats the image config
(user, entrypoint, environment, labels) that hack/image/build.py gives umoci.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE_DIR = ROOT / "hack" / "image"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recipe() -> tuple[ModuleType, ModuleType]:
    """hack/image/rootfs.py and build.py (which imports ``rootfs`` as its sibling module; the
    name ``build`` is PyPA's)."""
    rootfs = _load("rootfs", IMAGE_DIR / "rootfs.py")
    return rootfs, _load("crd_scheduler_image_build", IMAGE_DIR / "build.py")


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) per Dockerfile instruction, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", re.sub(r"(?m)^\s*#.*\n", "", text))
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip()) for line in joined.splitlines() if line.strip()
    ]


@pytest.fixture(scope="module")
def dockerfile() -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The Dockerfile's build stage and final stage."""
    steps = _instructions((ROOT / "Dockerfile").read_text())
    last_from = max(i for i, (name, _) in enumerate(steps) if name == "FROM")
    return steps[:last_from], steps[last_from:]


def _one(stage: list[tuple[str, str]], name: str) -> str:
    found = [args for instruction, args in stage if instruction == name]
    assert len(found) == 1, f"Dockerfile: {len(found)} {name} instructions in the final stage"
    return found[0]


def _pairs(args: str) -> dict[str, str]:
    return dict(word.split("=", 1) for word in shlex.split(args))


def test_user_entrypoint_cmd_and_workdir_agree(recipe: Any, dockerfile: Any) -> None:
    rootfs, _ = recipe
    _, final = dockerfile

    assert _one(final, "USER") == rootfs.USER == "65532:65532"
    assert json.loads(_one(final, "ENTRYPOINT")) == list(rootfs.ENTRYPOINT) == ["crd-scheduler"]
    assert json.loads(_one(final, "CMD")) == list(rootfs.CMD) == ["run"]
    assert _one(final, "WORKDIR") == rootfs.WORKDIR
    assert _one(final, "EXPOSE") == " ".join(p.removesuffix("/tcp") for p in rootfs.EXPOSED_PORTS)


def test_environment_agrees_and_forbids_bytecode_writes(recipe: Any, dockerfile: Any) -> None:
    rootfs, _ = recipe
    _, final = dockerfile

    assert _pairs(_one(final, "ENV")) == rootfs.ENV
    assert rootfs.ENV["PYTHONDONTWRITEBYTECODE"] == "1"
    assert rootfs.ENV["PATH"].startswith(f"{rootfs.VENV}/bin:")


def test_both_install_the_lock_and_the_wheel_with_rootfs_py_on_the_same_debian(recipe: Any, dockerfile: Any) -> None:
    rootfs, build = recipe
    stage, final = dockerfile
    runs = " ".join(args for name, args in stage if name == "RUN")

    assert _one(stage, "FROM").split()[0] == f"debian:{rootfs.SUITE}-slim"
    assert _one(final, "FROM") == "scratch"
    assert f"hack/image/rootfs.py --lock {rootfs.LOCK} " in runs
    assert "--no-deps" in runs
    assert rootfs.LOCK == "requirements/runtime.txt"
    installed = re.search(r"apt-get install -y --no-install-recommends ([^&]+)", runs)
    assert installed and tuple(installed[1].split()) == rootfs.PACKAGES
    assert build.PACKAGES == rootfs.PACKAGES  # debootstrap --include


def test_labels_agree(recipe: Any, dockerfile: Any) -> None:
    rootfs, build = recipe
    _, final = dockerfile
    labels = _pairs(_one(final, "LABEL"))

    expected = build.labels_for("0.1.0", "2026-01-01T00:00:00Z", "https://example.invalid/src")
    assert labels.keys() == expected.keys()
    fixed = {k: v for k, v in labels.items() if "$" not in v}
    assert fixed == {k: expected[k] for k in fixed}
    assert labels["io.crd-scheduler.kubernetes-version"] == rootfs.KUBERNETES_VERSION == "v1.36.3"
    assert (labels["org.opencontainers.image.version"], labels["org.opencontainers.image.revision"]) == (
        "${VERSION}",
        "${REVISION}",
    )


def test_dockerignore_lets_in_what_the_build_stage_copies(dockerfile: Any) -> None:
    stage, _ = dockerfile
    allowed = [
        line[1:].rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines() if line.startswith("!")
    ]
    sources = [word for name, args in stage if name == "COPY" for word in args.split()[:-1]]

    assert sources
    for source in sources:
        assert any(source == a or source.startswith(a + "/") for a in allowed), source
