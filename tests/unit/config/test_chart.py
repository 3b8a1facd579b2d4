"""The Helm chart's metadata against the package (no helm needed; tests/e2e/test_helm_chart.py
renders, lints and installs the chart with the real helm)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "charts" / "crd-scheduler"


def test_chart_version_and_app_version_are_the_package_version() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    with (ROOT / "pyproject.toml").open("rb") as file:
        version = tomllib.load(file)["project"]["version"]

    assert (chart["version"], chart["appVersion"]) == (version, version)
    assert isinstance(chart["appVersion"], str)  # a YAML number would lose "0.10" -> 0.1


def test_the_chart_ships_the_generated_crds_only() -> None:
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == ["pluginconfigs.yaml", "schedulerprofiles.yaml"]


def test_the_image_tag_defaults_to_the_app_version() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())

    assert values["image"] == {"repository": "crd-scheduler", "tag": "", "pullPolicy": "IfNotPresent"}
