"""`verifyCommand: "auto"`: finds a Python project's tests and the command that runs the ones an edit
can affect, without running any of the workspace's code.

Everything here reads files: the test files, the runner's configuration, and whether a virtual
environment holds pytest (its site-packages). The only program it starts is an interpreter that is not
the workspace's (the server's own, or `python3` on PATH), in isolated mode, to ask whether it can import
pytest. The command it returns runs like any verifyCommand: on a copy, in the check's sandbox.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# The files that hold tests to run, pytest's way; not every file of the tests, as the workspace index
# counts them (languages.belongs_to_tests): a conftest.py or a helper runs no test.
from ..languages import is_test_file
from ..tools.runner import counted
from ..tools.workspace_files import WorkspaceFiles
from .sandbox import NOT_COPIED, VENV_NAMES

MAX_TEST_BYTES = 512 * 1024  # larger test files are run but not read for imports

# Where a project says it uses pytest: the file, and the section header that says so (None: any content).
PYTEST_CONFIGS: tuple[tuple[str, str | None], ...] = (
    ("pytest.ini", None),
    ("conftest.py", None),
    ("pyproject.toml", "[tool.pytest.ini_options]"),
    ("setup.cfg", "[tool:pytest]"),
    ("tox.ini", "[pytest]"),
)


@dataclass(frozen=True)
class TestPlan:
    """The commands a check runs, and why they were chosen (for the verification's summary)."""

    command: str | None  # None: nothing to run, and `reason` says why
    reason: str
    tests: tuple[Path, ...] = ()  # the test files the command runs
    # The project's other test files, which the check runs after `command` passed, in the time left
    # (verify.py); None when `command` runs them all already.
    rest_command: str | None = None
    rest: tuple[Path, ...] = ()


def find_tests(folder: Path, edited: Path) -> TestPlan:
    """The plan for checking an edit of `edited` in `folder` (the folder the check copies)."""
    if edited.suffix != ".py":
        return TestPlan(None, f'"auto" finds Python tests only: set verifyCommand to check {edited.name}')
    folder, edited = folder.resolve(), edited.resolve()  # as WorkspaceFiles.files() lists them
    tests = _test_files(folder)
    if is_test_file(edited) and edited not in tests:
        tests.append(edited)  # a new test file (Write tests): it exists in the check's copy only
    if not tests:
        return TestPlan(None, f"no tests found in {folder.name} (no test_*.py or *_test.py files)")
    runner = "pytest" if _configured_for_pytest(folder, tests) else "unittest"
    python, where, projects = _interpreter(folder, runner)
    if python is None and runner == "pytest" and all(_uses_unittest(test) for test in tests):
        runner = "unittest"  # unittest-style tests run without pytest too
        python, where, projects = _interpreter(folder, runner)
    if python is None:
        return TestPlan(
            None,
            f"the tests need pytest, and {where}: install it (`.venv/bin/pip install pytest` in a "
            "project's .venv), or set verifyCommand",
        )
    related = [test for test in tests if test == edited or _imports(test, edited, folder)]
    chosen = related or tests
    # A test file's edit changes no other test's outcome: the others are for edits of the code.
    others = () if is_test_file(edited) else tuple(test for test in tests if test not in chosen)

    def command_for(files: Sequence[Path]) -> str:
        listed = " ".join(shlex.quote(test.relative_to(folder).as_posix()) for test in files)
        if runner == "unittest":
            return f"{shlex.quote(python)} -m unittest {listed}"
        # Outside the project's own environment, the plugins installed beside pytest are not the project's.
        plugins = "" if projects else "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 "
        # Short tracebacks: what the model reads of a failure, and what test_failures.py reads.
        command = f"{plugins}{shlex.quote(python)} -m pytest -q -p no:cacheprovider --tb=short"
        return command + (f" {listed}" if related else "")  # all: as the project's configuration says

    if related == [edited]:
        which = f"{edited.name} itself"
    elif related:
        verb = "imports" if len(related) == 1 else "import"
        which = f"{counted(len(related), 'test file')} that {verb} {edited.stem}"
    else:
        which = f"all {counted(len(tests), 'test file')} (none imports {edited.stem})"
    return TestPlan(
        command_for(chosen),
        f"{runner} with {where}, on {which}",
        tuple(chosen),
        command_for(others) if others else None,
        others,
    )


def _test_files(folder: Path) -> list[Path]:
    """The folder's test files, outside what the check's copy leaves out (environments, caches)."""
    return sorted(path for path in WorkspaceFiles([folder]).files(skipped=NOT_COPIED) if is_test_file(path))


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_TEST_BYTES:
            return ""
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _configured_for_pytest(folder: Path, tests: list[Path]) -> bool:
    for name, section in PYTEST_CONFIGS:
        text = _read(folder / name) if (folder / name).is_file() else None
        if text is not None and (section is None or section in text):
            return True
    # No configuration: tests that import pytest, or plain test functions (which only pytest collects).
    return not all(_uses_unittest(test) for test in tests)


def _uses_unittest(test: Path) -> bool:
    text = _read(test)
    return bool(re.search(r"^\s*(import unittest|from unittest\b)", text, re.M)) and not re.search(
        r"^\s*(import pytest|from pytest\b)", text, re.M
    )


def _module_names(edited: Path, folder: Path) -> set[str]:
    """The names an import of `edited` may use: its stem, and its dotted path from the folder."""
    names = {edited.stem}
    if edited.is_relative_to(folder):
        parts = list(edited.relative_to(folder).with_suffix("").parts)
        if parts and parts[-1] == "__init__":
            parts.pop()
            names = {parts[-1]} if parts else set()
        for start in range(len(parts)):  # src/pkg/mod.py: pkg.mod, and src.pkg.mod
            names.add(".".join(parts[start:]))
    return names


def _imports(test: Path, edited: Path, folder: Path) -> bool:
    text = _read(test)
    for name in _module_names(edited, folder):
        dotted = re.escape(name)
        package, _, last = name.rpartition(".")
        patterns = [rf"^\s*import\s+[\w., ]*\b{dotted}\b", rf"^\s*from\s+[.\w]*\b{dotted}\s+import\b"]
        if package:  # from pkg import mod
            patterns.append(rf"^\s*from\s+\.*{re.escape(package)}\s+import\s+[\w, ()]*\b{re.escape(last)}\b")
        if any(re.search(pattern, text, re.M) for pattern in patterns):
            return True
    return False


def _interpreter(folder: Path, runner: str) -> tuple[str | None, str, bool]:
    """The Python to run the tests with, where it comes from, and whether it is the project's own (None
    and what was looked at when none has the runner). The project's own environment where it has one
    (read, never run: it is the workspace's code), since only it has the project's dependencies; else
    the server's own interpreter, which the sandbox binds back, or python3 on PATH (not one under the
    home directory, such as pyenv's shims: the sandbox hides it)."""
    for name in VENV_NAMES:
        if (folder / name / "bin" / "python").exists():
            if runner == "unittest" or any((folder / name).glob("lib/python3*/site-packages/pytest")):
                return f"{name}/bin/python", f"the project's {name}", True
            return None, f"the project's {name} has no pytest", True
    looked: list[str] = []
    system = shutil.which("python3")
    if system and Path(os.path.realpath(system)).is_relative_to(Path.home()):
        system = None
    for python in (sys.executable, system):
        if python and (runner == "unittest" or _has_pytest(python)):
            return python, python, False
        if python:
            looked.append(f"{python} has no pytest")
    return None, "; ".join(looked) or "no Python found", False


@functools.cache
def _has_pytest(python: str) -> bool:
    # -I: isolated (no current folder, no PYTHON* variables, no user site): only the interpreter's own.
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('pytest') is None)"
    try:
        return subprocess.run([python, "-I", "-c", probe], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False
