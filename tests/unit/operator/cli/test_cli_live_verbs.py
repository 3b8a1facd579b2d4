"""The verbs of issue 14 as a user types them: what they refuse before any connection, and
``simulate -o html`` on the bundled example (the live-cluster paths run in tests/e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduler_operator.cli.command import main
from scheduler_operator.cli.output import EXIT_BAD_INPUT

ROOT = Path(__file__).resolve().parents[4]


def test_simulate_html_is_one_self_contained_page(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-f", str(ROOT / "examples" / "cluster.yaml"), "-o", "html"]) == 0
    page = capsys.readouterr().out
    assert page.startswith("<!DOCTYPE html>") and "<table class='heatmap'>" in page
    assert "http://" not in page and "https://" not in page and "src=" not in page


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["simulate"], "-f/--filename is required (or --example, or --from-cluster)", id="simulate-without-files"
        ),
        pytest.param(
            ["simulate", "--from-cluster", "-f", str(ROOT / "examples" / "cluster.yaml")],
            "-f files may hold only SchedulerProfiles and PluginConfigs", id="candidates-with-nodes",
        ),
        pytest.param(
            ["explain", "web", "--kubeconfig", "/nonexistent/kubeconfig"], "error: credentials:", id="no-credentials"
        ),
    ],
)  # fmt: skip
def test_bad_usage_is_one_clear_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)
    err = capsys.readouterr().err
    assert code in (EXIT_BAD_INPUT, 4)
    assert message in err and "Traceback" not in err
