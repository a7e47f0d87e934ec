"""Failing tests as problems in the code: where each failure of a test run points (`testDiagnostics`).

Reads the report of a run of the command `verifyCommand: "auto"` finds (test_discovery.py): pytest's
short tracebacks (`--tb=short`) or unittest's. A failure points at two places: the failing test's line,
and the function under test, which is where the error was raised when that is in the project's own code,
else the function the test's failing line calls (found with `ast` in the modules the test imports). Plain
text and files in, plain data out: the LSP layer (lsp_server.lsp.failure_diagnostics) publishes them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from ..rewrite import DEFINITIONS
from .discovery import is_test_file

MAX_MESSAGE_LINES = 6
MAX_MESSAGE_CHARS = 600

# pytest: `____ test_total ____` starts a failure; `test_x.py:6: in test_total` is a frame; `E   ...` says
# what failed. `==== short test summary info ====` and the like end the failures.
_PYTEST_SECTION = re.compile(r"^_{3,} (?P<name>.+?) _{3,}$")
_PYTEST_FRAME = re.compile(r"^(?P<path>[^\s:][^:]*\.py):(?P<line>\d+): in (?P<function>\S+)$")
_PYTEST_END = re.compile(r"^={3,} .* ={3,}$")
# unittest: `FAIL: test_a (test_u.T.test_a)` starts one,
# `  File "/x/test_u.py", line 5, in test_a` is a frame.
_UNITTEST_SECTION = re.compile(r"^(?:FAIL|ERROR): (?P<name>\S+) \((?P<id>[^)]+)\)", re.M)
_UNITTEST_FRAME = re.compile(r'^  File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)$')


@dataclass(frozen=True)
class Frame:
    path: str  # relative to the folder the tests ran in, with /
    line: int  # 1-based
    function: str


@dataclass(frozen=True)
class TestFailure:
    test: str  # as the runner names it: test_x.py::TestK::test_bad, or test_u.T.test_a
    message: str  # what failed: the assertion or the exception, a few lines
    frames: tuple[Frame, ...]  # in the folder's own files, outermost first

    @property
    def test_file(self) -> str:
        """The test file the failure belongs to (relative to the folder, with /)."""
        return _test_file(self.frames)


def _test_file(frames: tuple[Frame, ...] | list[Frame]) -> str:
    return next((f.path for f in frames if is_test_file(Path(f.path))), frames[0].path)


@dataclass(frozen=True)
class FailureSite:
    """A place a failure points at: the message shows there."""

    path: str  # relative to the folder, with /
    line: int  # 1-based
    message: str


def parse_failures(output: str, folder: str) -> list[TestFailure]:
    """The failures a pytest (`--tb=short`) or unittest report lists. `folder`: where the tests ran, as
    their absolute paths start (unittest prints those); frames outside it are the runner's or a library's,
    and are left out."""
    if _UNITTEST_SECTION.search(output):
        return _unittest_failures(output, folder)
    return _pytest_failures(output)


def _message(lines: list[str]) -> str:
    kept = [line.rstrip() for line in lines if line.strip()][:MAX_MESSAGE_LINES]
    return "\n".join(kept)[:MAX_MESSAGE_CHARS]


def _pytest_failures(output: str) -> list[TestFailure]:
    failures: list[TestFailure] = []
    name: str | None = None
    frames: list[Frame] = []
    said: list[str] = []

    def close() -> None:
        if name is not None and frames:
            failures.append(TestFailure(_pytest_id(name, frames), _message(said), tuple(frames)))

    for line in output.splitlines():
        section = _PYTEST_SECTION.match(line)
        if section or _PYTEST_END.match(line):
            close()
            name, frames, said = (section["name"] if section else None), [], []
            continue
        if name is None:
            continue
        frame = _PYTEST_FRAME.match(line)
        if frame and not Path(frame["path"]).is_absolute():  # absolute: outside the folder
            frames.append(Frame(frame["path"], int(frame["line"]), frame["function"]))
        elif line.startswith("E   "):
            said.append(line[4:])
    close()
    return failures


def _pytest_id(name: str, frames: list[Frame]) -> str:
    """pytest's id of a test from its section's name (`TestK.test_bad`, `ERROR at setup of test_x`)."""
    for prefix in ("ERROR at setup of ", "ERROR at teardown of "):
        name = name.removeprefix(prefix)
    if name.startswith("ERROR collecting "):
        return name.removeprefix("ERROR collecting ")
    return f"{_test_file(frames)}::{name.replace('.', '::')}"


def _unittest_failures(output: str, folder: str) -> list[TestFailure]:
    failures: list[TestFailure] = []
    prefix = folder.rstrip("/") + "/"
    lines = output.splitlines()
    for index, line in enumerate(lines):
        section = _UNITTEST_SECTION.match(line)
        if not section:
            continue
        frames: list[Frame] = []
        said: list[str] = []
        for following in lines[index + 1 :]:
            if _UNITTEST_SECTION.match(following) or (following.startswith(("=====", "-----")) and said):
                break
            frame = _UNITTEST_FRAME.match(following)
            if frame:
                said = []  # what a frame says is its code; the message follows the last frame
                if frame["path"].startswith(prefix):
                    frames.append(Frame(frame["path"][len(prefix) :], int(frame["line"]), frame["function"]))
            elif following and not following.startswith((" ", "-", "=", "Traceback")):
                said.append(following)
            elif said and not following.strip():
                break
        if frames:
            failures.append(TestFailure(section["id"], _message(said), tuple(frames)))
    return failures


def failure_sites(failure: TestFailure, folder: Path) -> list[FailureSite]:
    """Where a failure shows: the failing test's line, and the function under test (the deepest of the
    folder's own frames below the test, else what the test's failing line calls). Reads the folder's
    files; call it off the event loop."""
    message = f"{failure.test} failed" + (f": {failure.message}" if failure.message else "")
    in_tests = [i for i, f in enumerate(failure.frames) if is_test_file(Path(f.path))]
    test = failure.frames[in_tests[-1]] if in_tests else None
    below = failure.frames[in_tests[-1] + 1 :] if in_tests else failure.frames
    code = [f for f in below if not is_test_file(Path(f.path))]
    sites: list[FailureSite] = []
    if code:
        sites.append(FailureSite(code[-1].path, code[-1].line, message))
    elif test is not None:
        called = _called_definition(folder, test)
        if called is not None:
            sites.append(FailureSite(called[0], called[1], message))
    if test is not None:
        sites.append(FailureSite(test.path, test.line, message))
    return sites


def _called_definition(folder: Path, test: Frame) -> tuple[str, int] | None:
    """The first function or class the statement at the test's line calls that a module the test file
    imports defines, as (path, line of its `def`); None when there is none."""
    test_path = folder / test.path
    tree = _parse(test_path)
    if tree is None:
        return None
    statement = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.stmt)
            and not isinstance(node, (*DEFINITIONS, ast.With, ast.For, ast.If, ast.While, ast.Try))
            and node.lineno <= test.line <= (node.end_lineno or node.lineno)
        ),
        None,
    )
    if statement is None:
        return None
    called = [
        call.func.id if isinstance(call.func, ast.Name) else call.func.attr
        for call in ast.walk(statement)
        if isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute))
    ]
    modules = [(path, _parse(path)) for path in _imported_files(tree, test_path, folder)]
    for name in called:
        for path, module in modules:
            line = _defined_at(module, name) if module is not None else None
            if line is not None:
                return path.relative_to(folder.resolve()).as_posix(), line
    return None


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return None


def _imported_files(tree: ast.Module, test_path: Path, folder: Path) -> list[Path]:
    """The folder's Python files the test module imports (`import a.b`, `from a import b`), where they
    are: beside the test, at the folder's top, or under its `src/`."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    found: list[Path] = []
    for name in dict.fromkeys(names):
        relative = Path(*name.split("."))
        for base in (test_path.parent, folder, folder / "src"):
            for candidate in (base / relative.with_suffix(".py"), base / relative / "__init__.py"):
                if candidate.is_file() and candidate.resolve().is_relative_to(folder.resolve()):
                    found.append(candidate.resolve())
    return [path for path in dict.fromkeys(found) if not is_test_file(path)]


def _defined_at(module: ast.Module, name: str) -> int | None:
    for node in ast.walk(module):
        if isinstance(node, DEFINITIONS) and node.name == name:
            return node.lineno
    return None
