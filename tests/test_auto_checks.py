"""`verifyCommand: "auto"`: finding a project's tests (test_discovery.py) and running the ones an edit can
affect, for real, in the check's sandbox."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from lsp_server.assistant.checks.discovery import find_tests
from lsp_server.assistant.checks.verifier import Verifier
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles

CALC = "def add(a, b):\n    return a - b\n"
PYTEST_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
UNITTEST_TEST = (
    "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n"
    "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
)
# Would take the whole check's time if it ran: it tests another module.
SLOW_TEST = "import time\n\nimport other\n\n\ndef test_slow():\n    time.sleep(60)\n"


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_a_pytest_project_runs_the_test_files_that_import_the_edited_module(tmp_path: Path):
    project = write(
        tmp_path,
        {
            "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
            "src/calc.py": CALC,
            "tests/test_calc.py": PYTEST_TEST,
            "tests/test_other.py": SLOW_TEST,
            "other.py": "",
        },
    )
    plan = find_tests(project, project / "src" / "calc.py")
    # The server's own Python: its pytest plugins are not the project's.
    pytest = f"{sys.executable} -m pytest -q -p no:cacheprovider --tb=short"
    assert plan.command == f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {pytest} tests/test_calc.py"
    assert plan.reason == f"pytest with {sys.executable}, on 1 test file that imports calc"


def test_a_project_whose_tests_use_unittest_runs_them_with_unittest(tmp_path: Path):
    project = write(tmp_path, {"calc.py": CALC, "test_calc.py": UNITTEST_TEST})
    plan = find_tests(project, project / "calc.py")
    assert plan.command == f"{sys.executable} -m unittest test_calc.py"
    assert plan.reason is not None and plan.reason.startswith("unittest")


def test_a_folder_without_tests_says_no_tests_found(tmp_path: Path):
    project = write(tmp_path, {"calc.py": CALC, "README.md": "no tests\n"})
    plan = find_tests(project, project / "calc.py")
    assert plan.command is None and plan.reason.startswith("no tests found")


def test_the_projects_venv_is_the_interpreter_and_one_without_pytest_says_what_to_install(tmp_path: Path):
    project = write(tmp_path, {"calc.py": CALC, "test_calc.py": PYTEST_TEST, ".venv/bin/python": ""})
    plan = find_tests(project, project / "calc.py")
    assert plan.command is None
    assert "the project's .venv has no pytest" in plan.reason and "pip install pytest" in plan.reason
    (project / ".venv" / "lib" / "python3.11" / "site-packages" / "pytest").mkdir(parents=True)
    plan = find_tests(project, project / "calc.py")
    assert plan.command == ".venv/bin/python -m pytest -q -p no:cacheprovider --tb=short test_calc.py"


def test_a_new_test_file_is_checked_alone(tmp_path: Path):
    project = write(tmp_path, {"calc.py": CALC, "test_other.py": SLOW_TEST, "other.py": ""})
    plan = find_tests(project, project / "test_calc.py")  # not written yet: it is in the check's copy only
    assert plan.command is not None and plan.command.endswith(
        "-m pytest -q -p no:cacheprovider --tb=short test_calc.py"
    )
    assert plan.reason.endswith("on test_calc.py itself")


def test_other_languages_find_nothing_and_say_so(tmp_path: Path):
    project = write(tmp_path, {"calc.js": "const add = (a, b) => a - b;\n", "test_calc.py": PYTEST_TEST})
    plan = find_tests(project, project / "calc.js")
    assert plan.command is None and "Python" in plan.reason


def proposed(project: Path, text: str) -> ToolRunner:
    runner = ToolRunner(WorkspaceFiles([project]))
    assert runner.proposals.propose_text(project / "calc.py", text) is None
    return runner


async def test_auto_runs_the_related_tests_first_so_a_slow_unrelated_file_does_not_decide_the_verdict(
    tmp_path: Path,
):
    project = write(tmp_path, {"calc.py": CALC, "test_calc.py": PYTEST_TEST, "test_slow.py": SLOW_TEST})
    write(project, {"other.py": ""})
    check = Verifier("auto", 6, 3, WorkspaceFiles([project]))
    started = time.monotonic()
    assert await check.check_latest(proposed(project, CALC.replace("a - b", "a + b"))) is None
    assert time.monotonic() - started < 6 + 3  # the related tests, then the rest until verifyTimeout
    result = check.verification.to_json()
    assert result["passed"] is True, result
    assert result["command"].endswith("test_calc.py") and "1 test file that imports calc" in result["reason"]
    assert result["summary"].startswith("verified: ") and "1 passed" in result["output"]
    assert result["summary"].endswith("; the other test file did not finish within verifyTimeout")

    check = Verifier("auto", 6, 3, WorkspaceFiles([project]))
    started = time.monotonic()
    problem = await check.check_latest(proposed(project, CALC.replace("a - b", "a * b")))
    assert time.monotonic() - started < 3  # a failure of the related tests: the rest does not run
    assert problem is not None and "assert 6 == 5" in problem
    assert check.verification.passed is False and check.verification.rest is None


# Another module's tests, which the edit of calc.py reaches only through that module.
REPORT = "from calc import add\n\n\ndef total(values):\n    return add(values[0], values[1])\n"
REPORT_TEST = "from report import total\n\n\ndef test_total():\n    assert total([1, -1]) == 0\n"


async def test_after_the_related_tests_pass_the_rest_runs_and_an_edit_that_breaks_them_fails(tmp_path: Path):
    project = write(
        tmp_path,
        {"calc.py": CALC.replace("a - b", "a + b"), "test_calc.py": PYTEST_TEST, "report.py": REPORT},
    )
    write(project, {"test_report.py": REPORT_TEST})
    # Still right for add(2, 3), which the related test asks, and wrong for negative numbers.
    breaking = "def add(a, b):\n    return abs(a) + abs(b)\n"
    check = Verifier("auto", 20, 3, WorkspaceFiles([project]))
    runner = proposed(project, breaking)
    problem = await check.check_latest(runner)
    assert problem is not None and "test_report.py" in problem and "assert 2 == 0" in problem
    assert runner.proposals.edits == []  # withdrawn, as for any failed check
    assert check.verification.rest == "the other test file passed without the edit and failed with it"
    assert check.verification.summary() == (
        f"not verified: `{check.verification.command}` passed, but the other test file passed without the "
        "edit and failed with it"
    )

    check = Verifier("auto", 20, 3, WorkspaceFiles([project]))
    assert await check.check_latest(proposed(project, "def add(a, b):\n    return b + a\n")) is None
    assert check.verification.summary().endswith("; the other test file passed too")


async def test_other_tests_that_fail_without_the_edit_do_not_count(tmp_path: Path):
    project = write(tmp_path, {"calc.py": CALC, "test_calc.py": PYTEST_TEST, "report.py": REPORT})
    write(project, {"test_report.py": REPORT_TEST.replace("== 0", "== 7")})  # fails whatever add does
    check = Verifier("auto", 20, 3, WorkspaceFiles([project]))
    assert await check.check_latest(proposed(project, CALC.replace("a - b", "a + b"))) is None
    assert check.verification.passed is True
    assert check.verification.summary().endswith(
        "; the other test file failed without the edit too, so not counted"
    )


async def test_auto_with_no_tests_keeps_the_edit_unchecked_and_says_no_tests_found(tmp_path: Path):
    project = write(tmp_path, {"calc.py": CALC})
    check = Verifier("auto", 20, 3, WorkspaceFiles([project]))
    runner = proposed(project, CALC.replace("a - b", "a + b"))
    assert await check.check_latest(runner) is None
    assert len(runner.proposals.edits) == 1
    result = check.verification.to_json()
    assert result["command"] is None and result["attempts"] == 0 and result["passed"] is None
    assert result["summary"].startswith("not verified: the check did not run: no tests found in")


def test_auto_before_any_check_does_not_claim_that_no_command_is_set(tmp_path: Path):
    check = Verifier("auto", 20, 3, WorkspaceFiles([tmp_path]))
    assert check.verification.summary() == "not verified: no edit was checked"
