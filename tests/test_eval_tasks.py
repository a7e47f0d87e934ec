"""The eval's task set is sound, without a model: each task's test decides what it claims to decide."""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from harness.eval_tasks import TASKS, Task, split_module
from lsp_server.assistant.checks.discovery import find_tests
from lsp_server.assistant.rewrite import python_code_changed


def _load_runner() -> ModuleType:
    """eval/run.py is a script (`make eval`), not a package module: load it by path."""
    path = Path(__file__).resolve().parent.parent / "eval" / "run.py"
    spec = importlib.util.spec_from_file_location("eval_run", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


runner = _load_runner()
find_symbol = runner.find_symbol
run_pytest = runner.pytest

ALL_TASKS = sorted(d for d in TASKS.iterdir() if (d / "task.json").is_file())


def by_kind(kind: str) -> list[Path]:
    return [d for d in ALL_TASKS if Task.load(d).kind == kind]


def copy(task: Task, target: Path) -> Path:
    task.copy_to(target)
    return target


def test_the_task_set_has_what_the_issue_asks_for():
    assert len(by_kind("fix")) >= 15
    assert len(by_kind("document")) >= 5
    assert len(by_kind("tests")) >= 3


@pytest.mark.parametrize("directory", by_kind("fix") + by_kind("document"), ids=lambda d: d.name)
def test_auto_checks_find_the_tests_that_decide_the_task(directory: Path, tmp_path: Path):
    """verifyCommand "auto" runs the task's own test file, the one `make eval --verify` sets by hand."""
    task = Task.load(directory)
    copy(task, tmp_path)
    plan = find_tests(tmp_path, tmp_path / task.file)
    tests = sorted(p.name for p in tmp_path.glob("test_*.py"))
    assert plan.command is not None and plan.command.endswith(
        f"-m pytest -q -p no:cacheprovider --tb=short {tests[0]}"
    )
    assert len(tests) == 1 and plan.reason.endswith(f"1 test file that imports {Path(task.file).stem}")


@pytest.mark.parametrize("directory", by_kind("fix"), ids=lambda d: d.name)
def test_a_fix_task_fails_before_and_passes_with_its_reference_fix(directory: Path, tmp_path: Path):
    task = Task.load(directory)
    module = copy(task, tmp_path) / task.file
    lines = module.read_text().count("\n")
    assert 60 <= lines <= 260, lines
    before = run_pytest(tmp_path)
    assert before.returncode == 1, before.stdout[-2000:]
    shutil.copy(directory / "reference.py", module)
    after = run_pytest(tmp_path)
    assert after.returncode == 0, after.stdout[-2000:]
    # The fix lies inside the range the action is asked about.
    buggy = (directory / task.file).read_text().splitlines()
    fixed = (directory / "reference.py").read_text().splitlines()
    regions = [op for op in difflib.SequenceMatcher(a=buggy, b=fixed).get_opcodes() if op[0] != "equal"]
    changed = [line for _tag, i1, i2, j1, j2 in regions for line in range(i1 + 1, max(i2, i1 + 1) + 1)]
    assert 1 <= sum(max(i2 - i1, j2 - j1) for _tag, i1, i2, j1, j2 in regions) <= 4, regions  # a swap is 4
    assert all(task.first_line <= n <= task.last_line for n in changed), changed
    assert task.problem


@pytest.mark.parametrize("directory", by_kind("document"), ids=lambda d: d.name)
def test_a_document_task_targets_an_undocumented_symbol_whose_tests_pass(directory: Path, tmp_path: Path):
    task = Task.load(directory)
    module = copy(task, tmp_path) / task.file
    source = module.read_text()
    target = find_symbol(ast.parse(source), task.symbol)
    assert target is not None and ast.get_docstring(target) is None  # type: ignore[arg-type]
    assert target.lineno == task.first_line  # type: ignore[attr-defined]
    assert run_pytest(tmp_path).returncode == 0


@pytest.mark.parametrize("directory", by_kind("tests"), ids=lambda d: d.name)
def test_a_tests_task_has_mutants_that_change_its_module(directory: Path, tmp_path: Path):
    task = Task.load(directory)
    assert not (directory / f"test_{task.file}").exists()
    original = (directory / task.file).read_text()
    assert find_symbol(ast.parse(original), task.symbol) is not None
    assert len(task.mutants) >= 3
    for mutant in task.mutants:
        lines = original.splitlines(keepends=True)
        line = lines[mutant["line"] - 1]
        assert line.count(mutant["old"]) == 1, mutant
        assert task.first_line <= mutant["line"] <= task.last_line
        lines[mutant["line"] - 1] = line.replace(mutant["old"], mutant["new"])
        mutated = "".join(lines)
        assert python_code_changed(original, mutated)  # parses, and differs


@pytest.mark.parametrize("directory", by_kind("fix"), ids=lambda d: d.name)
def test_a_fix_task_as_write_tests_asks_for_tests_of_the_fixed_function_that_its_bug_fails(
    directory: Path, tmp_path: Path
):
    """`make eval EVAL_ARGS=--write-tests-from-fixes`: the fixed module alone, the function that held
    the bug, and the bug as a mutant that tests of that function can catch (the fix task's own do)."""
    task = Task.load(directory).as_write_tests()
    assert task.kind == "tests" and task.name == f"{directory.name}+tests"
    copy(task, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [task.file]
    fixed = (tmp_path / task.file).read_text()
    assert fixed == (directory / "reference.py").read_text()
    target = find_symbol(ast.parse(fixed), task.symbol)
    assert target is not None and task.first_line <= target.lineno  # type: ignore[attr-defined]
    assert target.end_lineno == task.last_line  # type: ignore[attr-defined]
    (mutated,) = task.mutated(fixed)
    assert mutated == (directory / task.file).read_text()
    shutil.copy(directory / f"test_{Path(task.file).stem}.py", tmp_path)
    assert run_pytest(tmp_path).returncode == 0
    (tmp_path / task.file).write_text(mutated)
    assert run_pytest(tmp_path).returncode == 1


@functools.cache
def _split_fix_tasks() -> tuple[dict[str, Task], dict[str, str]]:
    """Every fix task split across two files (`make eval --split`), checked once for the whole session."""
    kept, left_out = runner.split_tasks([Task.load(d) for d in by_kind("fix")])
    return {task.name: task for task in kept}, left_out


def test_most_fix_tasks_split_across_two_files_decide_as_before():
    kept, left_out = _split_fix_tasks()
    assert len(kept) + len(left_out) == len(by_kind("fix"))
    assert len(kept) >= 0.8 * len(by_kind("fix")), left_out


@pytest.mark.parametrize("directory", by_kind("fix"), ids=lambda d: d.name)
def test_a_split_fix_task_keeps_its_range_and_imports_what_moved(directory: Path):
    """A kept task's tests failed on the split module with the bug and passed with the definition from
    reference.py (split_check ran them); its range is the same definition's, moved; the module imports
    the moved names from `<module>_support.py`, which defines them."""
    kept, left_out = _split_fix_tasks()
    if directory.name in left_out:
        pytest.skip(f"left out: {left_out[directory.name]}")
    task, split = Task.load(directory), kept[directory.name]
    assert split.texts is not None and split.fixed is not None
    support = f"{Path(task.file).stem}_support"
    module, helpers = split.texts[task.file], split.texts[f"{support}.py"]
    original = (directory / task.file).read_text().splitlines()
    assert (
        module.splitlines()[split.first_line - 1 : split.last_line]
        == original[task.first_line - 1 : task.last_line]
    )
    (importing,) = [
        n for n in ast.parse(module).body if isinstance(n, ast.ImportFrom) and n.module == support
    ]
    moved = {alias.name for alias in importing.names}
    defined = {n.name for n in ast.parse(helpers).body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert moved and defined <= moved
    assert split.fixed != module and split.fixed.count("\n") >= split.last_line - split.first_line


def test_split_module_moves_the_other_definitions_and_keeps_those_that_use_the_kept_one():
    source = '''"""A module."""

import re

LIMIT = 3  # a constant
_a, _b = 1, 2


def helper(x):
    return x * LIMIT


@staticmethod
def broken(x):
    return helper(x) + _a


def caller(x):
    return broken(x)
'''
    module, support, shift = split_module(source, 14, "mod_support")
    assert support == (
        "import re\n\n\nLIMIT = 3  # a constant\n_a, _b = 1, 2\n\n\ndef helper(x):\n    return x * LIMIT\n"
    )
    assert "from mod_support import LIMIT, _a, _b, helper\n" in module
    assert module.splitlines()[14 + shift - 1] == "def broken(x):"
    assert "def caller(x):" in module  # it uses the kept definition: it stays
    namespace: dict = {}
    exec(compile(support, "mod_support", "exec"), namespace)
    assert namespace["helper"](2) == 6
