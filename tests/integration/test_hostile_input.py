"""Hostile input in a real process: bounded memory, no hang, exit 2, a short message.

Each input runs ``crd-scheduler simulate`` (and ``validate``) in a subprocess whose address
space is limited to 512 MiB (``RLIMIT_AS``) and whose run is limited to 60 s; the limits
documented in ``docs/validation.md`` must refuse the input before it grows. The hostile case
files of ``tests/corpus`` run here too, besides inputs too big to keep in the tree.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from scheduler_core.apivalidation.limits import MAX_DOCUMENT_BYTES, MAX_TOTAL_BYTES

MEMORY_LIMIT = 512 * 1024 * 1024
CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "cases"
HOSTILE = sorted(p.name for p in CORPUS.iterdir() if p.name.startswith("hostile-"))


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, "-m", "scheduler_operator", *args],
        capture_output=True, text=True, timeout=60, preexec_fn=_limit, env=env, check=False,
    )  # fmt: skip


def _big_file(tmp: Path) -> list[str]:
    path = tmp / "big.yaml"
    path.write_text("# padding\n" * (MAX_DOCUMENT_BYTES // 10 + 1))
    return [str(path)]


def _many_files(tmp: Path) -> list[str]:
    chunk = "# padding\n" * (MAX_DOCUMENT_BYTES // 10 - 10)
    paths = []
    for i in range(MAX_TOTAL_BYTES // len(chunk) + 2):
        (tmp / f"f{i}.yaml").write_text(chunk)
        paths.append(str(tmp / f"f{i}.yaml"))
    return paths


def _many_values(tmp: Path) -> list[str]:
    path = tmp / "values.json"
    path.write_text(json.dumps([0] * 600_000))
    return [str(path)]


def _wide_alias(tmp: Path) -> list[str]:
    """One anchor of 1,000 values, aliased 1,000 times: a million values from 8 KB."""
    path = tmp / "wide.yaml"
    path.write_text("a: &a [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 1000) + "]\n")
    return [str(path)]


def _deep_stdin(tmp: Path) -> list[str]:
    path = tmp / "deep.yaml"
    path.write_text("{" * 50_000 + "}" * 50_000)
    return [str(path)]


GENERATED: dict[str, tuple[Callable[[Path], list[str]], str | re.Pattern[str]]] = {
    "file-over-8MiB": (_big_file, f"file is larger than {MAX_DOCUMENT_BYTES} bytes"),
    "files-over-32MiB-together": (_many_files, f"the files together are larger than {MAX_TOTAL_BYTES} bytes"),
    "600k-values": (_many_values, "more than 500000 values in one file"),
    "wide-alias": (_wide_alias, "more than 500000 values in one file"),
    # Our depth limit or libyaml's (PyYAML >= 6.0.4 checks flow nesting while scanning ahead):
    # either way exit 2, the file and the line named, no traceback, in bounded memory.
    "deep-flow-mapping": (_deep_stdin, re.compile(r"error: .*deep\.yaml: line 1(, column \d+)?: ")),
}


@pytest.mark.parametrize("verb", ["simulate", "validate"])
@pytest.mark.parametrize("name", HOSTILE, ids=HOSTILE)
def test_hostile_corpus_cases_stay_bounded(name: str, verb: str) -> None:
    result = _run(verb, "-f", str(CORPUS / name))
    assert result.returncode in (0, 2), result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr) + len(result.stdout) < 20_000


@pytest.mark.parametrize("name", sorted(GENERATED), ids=sorted(GENERATED))
def test_generated_hostile_inputs_are_refused_before_they_grow(name: str, tmp_path: Path) -> None:
    make, message = GENERATED[name]
    files = make(tmp_path)
    result = _run("simulate", *(arg for f in files for arg in ("-f", f)))
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    if isinstance(message, re.Pattern):
        assert message.search(result.stderr), result.stderr[-2000:]
    else:
        assert message in result.stderr
    assert len(result.stderr) < 20_000
