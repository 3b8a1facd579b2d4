"""The corpus of bad and unusual inputs (``tests/corpus``): every case file, simulated beside a
small valid cluster (``base.yaml``), exits 2 with an error line naming the file, the object and
the field, or exits 0 where the API server accepts the input. Never a traceback.

``expected.yaml`` holds each case's exit code and a piece of its error line (the upstream
message, with the field path). The cases are grouped by file-name prefix, the families of
issue 13: forgotten list dashes (``dash-``), selectors written as strings (``selector-``),
wrong JSON types (``type-``), quantities (``quantity-``, ``extended-``, ``resource-``), names
and labels, apiVersion/kind and strict decoding, node and pod affinity, topology spread,
gates and ports, priority classes, PDBs and volumes, profiles and plugin configs, hostile
input (``hostile-``, ``syntax-``), and unusual but valid input (``ok-``). The hostile ones are
also run in a subprocess under a memory limit (``tests/integration/test_hostile_input.py``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from scheduler_operator.cli.command import main
from scheduler_operator.cli.output import EXIT_BAD_INPUT

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
# `error: FILE: line N[, column M]: ...`: a refusal that names the file and where in it.
PARSER_REFUSAL = re.compile(r"error: .+: line \d+(, column \d+)?: ")
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((CORPUS / "expected.yaml").read_text())


def test_every_case_file_has_an_expectation_and_there_are_enough() -> None:
    files = {p.name for p in (CORPUS / "cases").iterdir()}
    assert files == set(EXPECTED)
    assert len(files) >= 100
    assert sum(1 for e in EXPECTED.values() if e["exit"] == 0) >= 20  # upstream accepts these


@pytest.mark.parametrize("name", sorted(EXPECTED), ids=sorted(EXPECTED))
def test_case(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    case = CORPUS / "cases" / name
    code = main(["simulate", "-f", str(CORPUS / "base.yaml"), "-f", str(case), "-o", "json"])
    err = capsys.readouterr().err
    expected = EXPECTED[name]
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == expected["exit"], err
    if code == EXIT_BAD_INPUT:
        assert errors and all(line.startswith(f"error: {case}: ") for line in errors), err
        if expected.get("refused_by_parser"):  # our limit or the parser's: the file and the position
            assert any(PARSER_REFUSAL.match(line) for line in errors), err
        else:
            assert any(expected["error"] in line for line in errors), err
    else:
        assert not errors
    assert all(len(line) < 2000 for line in err.splitlines())  # no value is embedded whole
