"""Write tests keeps only the tests that pass on the code as it is (passing_tests.py, and the check in
verify.py that drops the rest), with real pytest runs in the check's sandbox; no model."""

from __future__ import annotations

import ast
from pathlib import Path

from lsp_server.assistant.passing_tests import (
    complete_tests,
    count_tests,
    failed_tests,
    settle_expected_values,
    without_tests,
)
from lsp_server.assistant.sandbox import Sandbox
from lsp_server.assistant.tools import ToolRunner
from lsp_server.assistant.verify import Verifier

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


def new_test_file(project: Path, text: str) -> ToolRunner:
    runner = ToolRunner(Sandbox([project]))
    assert runner.propose_file("test_calc.py", text) is None
    return runner


async def test_a_new_test_file_keeps_the_tests_that_pass_and_says_which_were_dropped(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    check = Verifier("auto", 30, 3, Sandbox([tmp_path]))
    check.keep_passing_tests()
    runner = new_test_file(tmp_path, WRITTEN)
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
        check = Verifier("auto", 30, 3, Sandbox([tmp_path]))
        check.keep_passing_tests()
        runner = new_test_file(tmp_path, written)
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


# Expected values the model got wrong (pytest's `--tb=short` report of a real run of SETTLED on CALC).
SETTLED = """import unittest

from calc import add


def test_add():
    assert add(2, 3) == 6


def test_twice():
    assert 4 == add(2, 1)
    assert add(1, 1) == "2"


def test_raises():
    assert add(None, 1) == 1


class TestCase(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(add("a", "b"), "a b")
"""


def test_a_wrong_expected_value_takes_what_the_code_gives_and_only_that():
    report = """___ test_add ___
test_calc.py:7: in test_add
    assert add(2, 3) == 6
E   assert 5 == 6
E    +  where 5 = add(2, 3)
___ test_twice ___
test_calc.py:11: in test_twice
    assert 4 == add(2, 1)
E   assert 4 == 3
___ test_raises ___
test_calc.py:16: in test_raises
    assert add(None, 1) == 1
calc.py:2: in add
    return a + b
E   TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'
___ TestCase.test_equal ___
test_calc.py:21: in test_equal
    self.assertEqual(add("a", "b"), "a b")
E   AssertionError: 'ab' != 'a b'
=== short test summary info ===
"""
    settled, values = settle_expected_values(SETTLED, report, "test_calc.py")
    assert [str(v) for v in values] == [
        "test_calc.py::test_add (line 7): expected 6, the code gives 5",
        "test_calc.py::test_twice (line 11): expected 4, the code gives 3",
        'test_calc.py::TestCase::test_equal (line 21): expected "a b", the code gives "ab"',
    ]
    changed = [(a, b) for a, b in zip(SETTLED.splitlines(), settled.splitlines(), strict=True) if a != b]
    assert changed == [
        ("    assert add(2, 3) == 6", "    assert add(2, 3) == 5"),
        ("    assert 4 == add(2, 1)", "    assert 3 == add(2, 1)"),
        ('        self.assertEqual(add("a", "b"), "a b")', '        self.assertEqual(add("a", "b"), "ab")'),
    ]
    # A report that is not of this file, a value pytest shortened, an assertion that is not the one at
    # that line: nothing changes.
    assert (
        settle_expected_values(SETTLED, report.replace("test_calc.py:", "test_other.py:"), "test_calc.py")[1]
        == []
    )
    shortened = report.replace("assert 5 == 6", "assert 'abcdefghij...qrstuvwxyz' == 6")
    assert [v.line for v in settle_expected_values(SETTLED, shortened, "test_calc.py")[1]] == [11, 21]
    other = report.replace("assert 5 == 6", "assert 5 == 7")
    assert [v.line for v in settle_expected_values(SETTLED, other, "test_calc.py")[1]] == [11, 21]


async def test_a_new_test_file_keeps_its_tests_with_the_values_the_code_gives_and_says_which(tmp_path: Path):
    (tmp_path / "calc.py").write_text(CALC)
    check = Verifier("auto", 30, 3, Sandbox([tmp_path]))
    check.keep_passing_tests()
    runner = new_test_file(tmp_path, SETTLED)
    assert await check.check_latest(runner) is None
    (kept,) = runner.proposals.changed_texts().values()
    # test_twice's second value shows only once its first passes: a second run settles it.
    assert "assert 3 == add(2, 1)\n    assert add(1, 1) == 2\n" in kept and "== 5\n" in kept
    assert "test_raises" not in kept and 'self.assertEqual(add("a", "b"), "ab")' in kept
    result = check.verification.to_json()
    assert result["passed"] is True and result["attempts"] == 1 and "3 passed" in result["output"]
    assert result["droppedTests"] == ["test_raises"]
    assert result["settledValues"] == [
        "test_calc.py::test_add (line 7): expected 6, the code gives 5",
        "test_calc.py::test_twice (line 11): expected 4, the code gives 3",
        'test_calc.py::TestCase::test_equal (line 21): expected "a b", the code gives "ab"',
        'test_calc.py::test_twice (line 12): expected "2", the code gives 2',
    ]
    assert "; 4 expected values written did not match the code and now say what it gives" in result["summary"]
    assert result["summary"].endswith(
        "; 1 of 4 tests written failed on the code as it is and were dropped: test_raises"
    )
