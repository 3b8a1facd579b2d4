"""The package index (``scheduler_operator``'s docstring) names every module, in its sub-package.

The index is what a new maintainer reads first; a module added, moved or removed without it
fails here, so the index stays current (issue 23 found it naming 14 of 37 modules).
"""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys

import scheduler_operator

SECTION = re.compile(r"^``(\w+)``: ")
ENTRY = re.compile(r"^\* (?P<names>(?:``\w+``(?:, )?)+): ")


def indexed() -> dict[str, set[str]]:
    """Sub-package -> the modules its section of the docstring lists (the names before each ':')."""
    sections: dict[str, set[str]] = {}
    current = None
    for line in (scheduler_operator.__doc__ or "").splitlines():
        if section := SECTION.match(line):
            current = section.group(1)
            sections[current] = set()
        elif current and (entry := ENTRY.match(line)):
            sections[current].update(re.findall(r"``(\w+)``", entry.group("names")))
    return sections


def on_disk() -> dict[str, set[str]]:
    packages = {info.name for info in pkgutil.iter_modules(scheduler_operator.__path__) if info.ispkg}
    return {
        package: {info.name for info in pkgutil.iter_modules([f"{scheduler_operator.__path__[0]}/{package}"])}
        for package in packages
    }


def test_every_module_of_every_sub_package_is_in_the_index_and_nothing_else() -> None:
    assert indexed() == on_disk()


def test_the_top_level_modules_are_named_too() -> None:
    top = {info.name for info in pkgutil.iter_modules(scheduler_operator.__path__) if not info.ispkg}
    assert top == {"__main__", "resources"}
    for name in top:
        assert f"``{name}``" in (scheduler_operator.__doc__ or "")


def test_the_options_of_run_import_no_client_package() -> None:
    """``control.options`` says so in its docstring; a fresh interpreter checks it."""
    clients = "{'kopf', 'aiohttp', 'kubernetes'}"
    code = f"import sys, scheduler_operator.control.options; print(sorted({clients} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
