"""Write tests keeps only the tests that pass on the code as it is (passing_tests.py, and the check in
verify.py that drops the rest), with real pytest runs in the check's sandbox; no model."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from lsp_server.assistant import actions
from lsp_server.assistant.checks.passing_tests import (
    complete_tests,
    count_tests,
    failed_tests,
    settle_expected_values,
    with_missing_imports,
    without_redefined_tests,
    without_tests,
)
from lsp_server.assistant.checks.verifier import Verifier
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles

CALC = "def add(a, b):\n    return a + b\n"
WRITTEN = """import pytest

from calc import add


def test_add():
    assert add(2, 3) == 5


@pytest.mark.parametrize("a", [1, 2])
def test_wrong(a):
    assert add(a, a) == 3


class TestMore:
    def test_zero(self):
        assert add(0, 0) == 0

    def test_bad(self):
        assert add(1, 1) == add(1, 2)


class TestAllWrong:
    def test_one(self):
        assert add(1, 0) > 1
"""
REPORT = """FAILED test_calc.py::test_wrong[1] - assert 2 == 3
FAILED test_calc.py::test_wrong[2] - assert 4 == 3
FAILED test_calc.py::TestMore::test_bad - assert 2 == 3
FAILED test_calc.py::TestAllWrong::test_one - assert 1 == 0
4 failed, 2 passed in 0.03s
"""


def names(source: str) -> list[str]:
    found = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef):
            found += [f"{node.name}::{item.name}" for item in node.body if isinstance(item, ast.FunctionDef)]
    return found


def test_the_failing_tests_are_read_from_pytests_summary():
    assert failed_tests(REPORT, "test_calc.py") == {
        ("test_wrong",),
        ("TestMore", "test_bad"),
        ("TestAllWrong", "test_one"),
    }
    # A failure elsewhere, a collection error, or nothing that passed: dropping tests cannot help.
    assert (
        failed_tests(REPORT.replace("test_calc.py::test_wrong[1]", "test_other.py::test_x"), "test_calc.py")
        is None
    )
    assert failed_tests("ERROR test_calc.py - ImportError\n1 error in 0.1s", "test_calc.py") is None
    assert failed_tests(REPORT.replace("2 passed", "0 passed"), "test_calc.py") is None
    assert failed_tests("no tests ran in 0.01s", "test_calc.py") is None


def test_the_failing_tests_are_removed_with_their_decorators_and_empty_classes():
    kept = without_tests(WRITTEN, failed_tests(REPORT, "test_calc.py") or set())
    assert kept is not None
    assert names(kept) == ["test_add", "TestMore::test_zero"]
    assert "parametrize" not in kept and "TestAllWrong" not in kept and "import pytest" in kept
    assert count_tests(WRITTEN) == 5 and count_tests(kept) == 2
    assert (
        without_tests(
            WRITTEN,
            {
                ("test_add",),
                ("test_wrong",),
                ("TestMore", "test_zero"),
                ("TestMore", "test_bad"),
                ("TestAllWrong", "test_one"),
            },
        )
        is None
    )


def new_test_file(project: Path, text: str) -> tuple[Verifier, ToolRunner]:
    """Write tests' check, and `text` proposed as the new test_calc.py of `project`."""
    check = Verifier("auto", 30, 3, WorkspaceFiles([project]), policy=actions.BY_NAME["tests"].check_policy())
    runner = ToolRunner(WorkspaceFiles([project]))
    assert runner.propose_file("test_calc.py", text) is None
    return check, runner


async def test_a_new_test_file_keeps_the_tests_that_pass_and_says_which_were_dropped(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    check, runner = new_test_file(tmp_path, WRITTEN)
    assert await check.check_latest(runner) is None
    (kept,) = runner.proposals.changed_texts().values()
    assert names(kept) == ["test_add", "TestMore::test_zero"]
    assert runner.proposals.edits[-1].kind == "create" and runner.proposals.edits[-1].new_text == kept
    result = check.verification.to_json()
    assert result["passed"] is True and result["attempts"] == 1 and "2 passed" in result["output"]
    assert result["droppedTests"] == ["TestAllWrong::test_one", "TestMore::test_bad", "test_wrong"]
    assert result["summary"].endswith(
        "; 3 of 5 tests written failed on the code as it is and were dropped: "
        "TestAllWrong::test_one, TestMore::test_bad, test_wrong"
    )


async def test_tests_that_all_fail_or_collect_nothing_are_no_edit(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    for written in (
        "from calc import add\n\n\ndef test_bad():\n    assert add(1, 1) > 2\n",
        "import calc\n",
    ):
        check, runner = new_test_file(tmp_path, written)
        problem = await check.check_latest(runner)
        # The model reads what failed, to write the file again with the results the code gives.
        assert problem is not None and "The code is correct" in problem
        assert ("assert 2 > 2" if "test_bad" in written else "no tests ran") in problem, problem
        check.settle(runner)  # no failed candidate comes back, unlike other actions' edits
        assert runner.proposals.edits == []
        assert check.verification.passed is False


CUT_OFF = (
    "from calc import add\n\n\nclass TestAdd:\n    def test_small(self):\n        assert add(2, 3) == 5\n\n"
    "    def test_zero(self):\n        assert add(0, 0) == 0\n\n"
    "    def test_big(self):\n        assert add(10**6, "
)


def test_a_test_file_cut_off_mid_test_keeps_the_tests_it_finished():
    kept = complete_tests(CUT_OFF)
    assert kept.endswith("assert add(0, 0) == 0\n") and count_tests(kept) == 2
    assert complete_tests(WRITTEN) == WRITTEN  # whole: as it is
    assert complete_tests("def test_one(:\n") == "def test_one(:\n"  # nothing finished: as it is, refused


# Expected values the model got wrong, for CALC.
SETTLED = """import unittest
from decimal import Decimal

from calc import add


def test_add():
    assert add(2, 3) == 6


def test_twice():
    assert 4 == add(2, 1)
    assert add(1, 1) == "2"


def test_raises():
    assert add(None, 1) == 1


def test_decimal():
    assert add(Decimal("1.5"), 1) == Decimal("2")


def test_long():
    assert add("x" * 80, "y") == "xy"


class TestCase(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(add("a", "b"), "a b")

    def test_lists(self):
        self.assertEqual(add([1], [2]), [2, 1])
"""


def line_of(text: str, source: str = SETTLED) -> int:
    (number,) = [n for n, line in enumerate(source.splitlines(), 1) if text in line]
    return number


def pytest_report(folder: Path) -> str:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short", "test_calc.py"]
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=60).stdout


def test_a_wrong_expected_value_takes_what_the_code_gives_and_only_that(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    (tmp_path / "test_calc.py").write_text(SETTLED)
    report = pytest_report(tmp_path)
    settled, values = settle_expected_values(SETTLED, report, "test_calc.py")
    assert [str(v) for v in values] == [
        f"test_calc.py::test_add (line {line_of('== 6')}): expected 6, the code gives 5",
        f"test_calc.py::test_twice (line {line_of('4 ==')}): expected 4, the code gives 3",
        f"test_calc.py::test_decimal (line {line_of('add(Decimal')}): "
        "expected Decimal(\"2\"), the code gives Decimal('2.5')",
        f'test_calc.py::TestCase::test_equal (line {line_of("a b")}): expected "a b", the code gives "ab"',
        f"test_calc.py::TestCase::test_lists (line {line_of('[2, 1]')}): "
        "expected [2, 1], the code gives [1, 2]",
    ]
    changed = [(a, b) for a, b in zip(SETTLED.splitlines(), settled.splitlines(), strict=True) if a != b]
    assert changed == [
        ("    assert add(2, 3) == 6", "    assert add(2, 3) == 5"),
        ("    assert 4 == add(2, 1)", "    assert 3 == add(2, 1)"),
        (
            '    assert add(Decimal("1.5"), 1) == Decimal("2")',
            "    assert add(Decimal(\"1.5\"), 1) == Decimal('2.5')",
        ),
        ('        self.assertEqual(add("a", "b"), "a b")', '        self.assertEqual(add("a", "b"), "ab")'),
        (
            "        self.assertEqual(add([1], [2]), [2, 1])",
            "        self.assertEqual(add([1], [2]), [1, 2])",
        ),
    ]
    # Not settled: test_raises (no equality failed), test_long (pytest shortened the value it shows).
    assert "test_long" in report and "..." in report
    # A report of another file, or one whose expected value is not the one written at that line (an
    # older file): nothing changes.
    assert (
        settle_expected_values(SETTLED, report.replace("test_calc.py:", "test_other.py:"), "test_calc.py")[1]
        == []
    )
    older = SETTLED.replace("== 6", "== 7").replace("4 ==", "9 ==")
    assert [v.test for v in settle_expected_values(older, report, "test_calc.py")[1]] == [
        "test_calc.py::test_decimal",
        "test_calc.py::TestCase::test_equal",
        "test_calc.py::TestCase::test_lists",
    ]
    # unittest shortens long values as "[N chars]": not a value to write.
    unittest_short = (
        "___ T.test_x ___\ntest_calc.py:7: in test_x\n    x\nE   AssertionError: 'ab[90 chars]cd' != 'a'\n"
    )
    assert settle_expected_values(SETTLED, unittest_short, "test_calc.py")[1] == []


async def test_a_new_test_file_keeps_its_tests_with_the_values_the_code_gives_and_says_which(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    check, runner = new_test_file(tmp_path, SETTLED)
    assert await check.check_latest(runner) is None
    (kept,) = runner.proposals.changed_texts().values()
    # test_twice's second value shows only once its first passes: a second run settles it.
    assert "assert 3 == add(2, 1)\n    assert add(1, 1) == 2\n" in kept and "== 5\n" in kept
    assert "test_raises" not in kept and "test_long" not in kept
    assert 'self.assertEqual(add("a", "b"), "ab")' in kept and "== Decimal('2.5')" in kept
    result = check.verification.to_json()
    assert result["passed"] is True and result["attempts"] == 1 and "5 passed" in result["output"]
    assert result["droppedTests"] == ["test_long", "test_raises"]
    assert len(result["settledValues"]) == 6
    assert result["settledValues"][-1] == (
        f'test_calc.py::test_twice (line {line_of("add(1, 1)")}): expected "2", the code gives 2'
    )
    assert "; 6 expected values written did not match the code and now say what it gives" in result["summary"]
    assert result["summary"].endswith(
        "; 2 of 7 tests written failed on the code as it is and were dropped: test_long, test_raises"
    )


def test_a_test_written_again_under_the_same_name_keeps_only_the_one_that_runs():
    repeated = (
        "import unittest\n\nfrom calc import add\n\n\ndef test_a():\n    assert add(1, 1) == 2\n\n\n"
        "class TestAdd(unittest.TestCase):\n    def test_b(self):\n        self.assertEqual(add(1, 2), 3)\n\n"
        "    def test_b(self):\n        self.assertEqual(add(2, 2), 4)\n\n"
        "    def test_c(self):\n        pass\n\n\n"
        "def test_a():\n    assert add(0, 0) == 0\n"
    )
    kept = without_redefined_tests(repeated)
    assert names(kept) == ["TestAdd::test_b", "TestAdd::test_c", "test_a"]
    assert "add(1, 1)" not in kept and "add(1, 2)" not in kept and "add(2, 2)" in kept and "add(0, 0)" in kept
    assert without_redefined_tests(WRITTEN) == WRITTEN


BUDGET = """from collections import namedtuple
from decimal import Decimal
import datetime as dt

Expense = namedtuple("Expense", "day amount")
LIMIT = 100


def _helper():
    pass


def total(expenses):
    return sum((e.amount for e in expenses), Decimal(0))
"""


def test_names_of_the_module_a_test_file_uses_without_importing_them_are_imported():
    written = (
        '"""Tests."""\nfrom budget import total\n\n\n'
        "def test_total():\n"
        "    day = dt.date(2024, 1, 2)\n"
        '    assert total([Expense(day, Decimal("1.5"))]) == Decimal("1.5")\n'
        "    assert budget.LIMIT == LIMIT\n"
        "    with pytest.raises(AttributeError):\n"
        "        total([1])\n\n\n"
        "def test_unknown(total_expected=3):\n"
        "    assert _helper() is None and unknown_name and total_expected\n"
    )
    fixed = with_missing_imports(written, BUDGET, "budget")
    assert fixed.splitlines()[:8] == [
        '"""Tests."""',
        "from budget import total",
        "from decimal import Decimal",
        "from budget import Expense",
        "from budget import LIMIT",
        "import budget",
        "import datetime as dt",
        "import pytest",
    ]
    assert fixed.endswith(written.split("from budget import total\n", 1)[1])
    # Nothing missing, or nothing the module binds (a private name, a name it does not have): unchanged.
    assert with_missing_imports(fixed, BUDGET, "budget") == fixed
    assert with_missing_imports("def test_x():\n    assert _helper()\n", BUDGET, "budget").startswith("def")
    # The module as the test imports it: from a package.
    assert "from shop.budget import Expense\n" in with_missing_imports(
        "from shop.budget import total\n\n\ndef test_x():\n    assert Expense\n", BUDGET, "budget"
    )


async def test_every_failure_of_a_long_report_is_read_not_only_what_the_trimmed_output_shows(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    many = "from calc import add\n" + "".join(
        f'\n\ndef test_{n}():\n    assert add("abcdefghij", "{n}") == "wrong"\n' for n in range(150)
    )
    check, runner = new_test_file(tmp_path, many)
    assert await check.check_latest(runner) is None
    result = check.verification.to_json()
    assert len(result["settledValues"]) == 150 and result["droppedTests"] == []
    assert "150 passed" in result["output"]
