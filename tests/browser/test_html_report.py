"""The ``-o html`` reports in a real browser: they render, react to clicks, log no error.

The reports are made in-process from the bundled example (the built-in default profile as the
"live" one, examples/profiles.yaml's MostAllocated profile as the candidate), written to files
and opened from disk. ``CRD_SCHEDULER_UPDATE_SCREENSHOT=1`` also writes the what-if screenshot
to docs/images/report.png, the one the README shows.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scheduler_core.defaults import DEFAULT_PROFILE_NAME, default_profile_spec
from scheduler_core.profiles import ProfileKey
from scheduler_core.simulator import Cluster, load_files, simulate
from scheduler_core.simulator.explain import explain
from scheduler_core.simulator.html import render_explanation, render_simulation, render_whatif
from scheduler_core.simulator.manifests import ProfileObject
from scheduler_core.simulator.usage import node_usage
from scheduler_core.simulator.whatif import compare
from tests.browser.chromium import Browser, png_size

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "docs" / "images" / "report.png"
MIN_SCREENSHOT = (1000, 600)  # width, height in CSS pixels
MIN_SCREENSHOT_BYTES = 20_000  # a blank page is a few kB


def _live() -> Cluster:
    cluster = load_files([str(ROOT / "examples" / "cluster.yaml")])
    key = ProfileKey("crd-scheduler", DEFAULT_PROFILE_NAME)
    cluster.profiles.append(ProfileObject(key, {}, default_profile_spec(), "live"))
    return cluster


def _candidate() -> Cluster:
    candidate = load_files([str(ROOT / "examples" / "profiles.yaml")])
    key = ProfileKey("crd-scheduler", DEFAULT_PROFILE_NAME)  # replaces the live default
    candidate.profiles[:] = [ProfileObject(key, p.labels, p.spec, p.source) for p in candidate.profiles[:1]]
    return candidate


def _check(browser: Browser, path: Path, html: str) -> None:
    path.write_text(html, encoding="utf-8")
    browser.open(path)
    assert browser.evaluate("document.querySelectorAll('link[href], script[src], img[src]').length") == 0
    scored = browser.evaluate("document.querySelectorAll('td.cell.scored').length")
    assert scored > 0
    browser.evaluate("document.querySelector('td.cell.scored').click()")
    breakdown = browser.evaluate("document.querySelector('#detail table.breakdown').innerText")
    assert "NodeResourcesFit" in breakdown and "total" in breakdown
    browser.evaluate("document.querySelector('td.cell.filtered').click()")
    assert "filtered:" in browser.evaluate("document.querySelector('#detail').innerText")


def test_whatif_report_renders_diff_bars_and_heat_maps(browser: Browser, tmp_path: Path) -> None:
    whatif = compare(_live(), _candidate(), replace_all=True)
    _check(browser, tmp_path / "whatif.html", render_whatif(whatif))
    assert browser.evaluate("document.querySelectorAll('table.heatmap').length") == 2
    moved = browser.evaluate("[...document.querySelectorAll('table.diff tr.moved td:first-child')].map(e=>e.innerText)")
    assert moved == [f"{p.namespace}/{p.name}" for p in whatif.moves] and moved
    assert browser.evaluate("document.querySelectorAll('tr.usage').length") == 4
    assert browser.evaluate("document.querySelectorAll('span.bar.after').length") == 8  # cpu, memory per node
    assert "toward fewer nodes" in browser.evaluate("document.querySelector('.summary').innerText")
    png = browser.screenshot()
    assert png_size(png)[0] >= MIN_SCREENSHOT[0] and png_size(png)[1] >= MIN_SCREENSHOT[1], png_size(png)
    assert len(png) >= MIN_SCREENSHOT_BYTES
    (tmp_path / "whatif.png").write_bytes(png)
    if os.environ.get("CRD_SCHEDULER_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        SCREENSHOT.write_bytes(png)
    assert browser.console_errors == []


def test_simulate_report_has_a_row_per_pod_and_filter_reasons(browser: Browser, tmp_path: Path) -> None:
    cluster = load_files([str(ROOT / "examples" / "cluster.yaml")])
    result = simulate(cluster)
    _check(browser, tmp_path / "simulate.html", render_simulation(result.pods, node_usage(cluster.nodes, result)))
    rows = browser.evaluate("[...document.querySelectorAll('table.heatmap tr[data-pod]')].map(e=>e.dataset.pod)")
    assert rows == [f"{r.namespace}/{r.name}" for r in result.pods]
    unscheduled = browser.evaluate("[...document.querySelectorAll('div.unscheduled')].map(e=>e.dataset.pod)")
    assert unscheduled == ["default/huge"]
    assert browser.evaluate("document.querySelectorAll('td.cell.chosen').length") == sum(
        1 for r in result.pods if r.node
    )
    assert browser.console_errors == []


@pytest.mark.parametrize("pod", [pytest.param("web-1", id="scheduled"), pytest.param("huge", id="unschedulable")])
def test_explain_report(browser: Browser, tmp_path: Path, pod: str) -> None:
    explanation = explain(_live(), "default", pod)
    path = tmp_path / f"{pod}.html"
    path.write_text(render_explanation(explanation), encoding="utf-8")
    browser.open(path)
    assert browser.evaluate("document.querySelectorAll('table.heatmap tr[data-pod]').length") == 1
    summary = browser.evaluate("document.querySelector('.summary').innerText")
    assert summary.startswith(explanation.report.status)
    assert browser.console_errors == []
