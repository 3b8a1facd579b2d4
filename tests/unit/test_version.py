"""One version source (``pyproject.toml``, read back from the package metadata), shown everywhere."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from scheduler_core import version
from scheduler_core.metrics.scheduler_metrics import SchedulerMetrics
from scheduler_operator.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_version_is_pyprojects() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["version"] == version.VERSION, "reinstall (make install) after changing pyproject's version"


def test_the_kubernetes_version_is_the_one_the_dev_cluster_builds() -> None:
    go_mod = (ROOT / "hack" / "devcluster" / "go.mod").read_text()
    pinned = re.search(r"^\s*k8s\.io/kubernetes (v\S+)", go_mod, re.MULTILINE)
    assert pinned is not None
    assert pinned.group(1) == version.KUBERNETES_VERSION


def test_dash_dash_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"crd-scheduler {version.VERSION} (kube-scheduler {version.KUBERNETES_VERSION}, Python 3.")


@pytest.mark.parametrize(
    ("output", "parse"),
    [
        pytest.param("text", lambda out: out.split()[1], id="text"),
        pytest.param("json", lambda out: json.loads(out)["version"], id="json"),
    ],
)
def test_the_version_command(output: str, parse: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["version", "-o", output]) == 0
    out = capsys.readouterr().out
    assert callable(parse) and parse(out) == version.VERSION
    if output == "json":
        assert json.loads(out)["kubernetesVersion"] == version.KUBERNETES_VERSION


def test_the_build_info_gauge() -> None:
    text = SchedulerMetrics().registry.render()
    line = (
        f'crd_scheduler_build_info{{kubernetes_version="{version.KUBERNETES_VERSION}",'
        f'python_version="{version.PYTHON_VERSION}",version="{version.VERSION}"}} 1.0'
    )
    assert "# TYPE crd_scheduler_build_info gauge" in text
    assert line in text.splitlines()
