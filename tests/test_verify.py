"""Checking edits (lsp_server.assistant.checks.verifier) without a model: where the command runs, what
it sees, its limits."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import time
from pathlib import Path

import pytest

from lsp_server.assistant import actions
from lsp_server.assistant.checks.sandbox import OUTPUT_HEAD_CHARS, OUTPUT_TAIL_CHARS
from lsp_server.assistant.checks.verifier import Verification, Verifier, without_durations
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles
from lsp_server.lsp import settings

MODULE = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text(MODULE)
    (root / "test_calc.py").write_text(TEST)
    (root / ".venv").mkdir()
    (root / ".venv" / "big").write_text("not copied")
    return root


def proposed(project: Path, text: str) -> ToolRunner:
    runner = ToolRunner(WorkspaceFiles([project]))
    assert runner.proposals.propose_text(project / "calc.py", text) is None
    return runner


def verifier(
    project: Path, command: str, timeout_s: float = 30, attempts: int = 3, action: str | None = None
) -> Verifier:
    """The check of `action`'s edits (as its kind's policy says), or of a chat's when None."""
    policy = actions.BY_NAME[action].check_policy() if action else None
    return Verifier(command, timeout_s, attempts, WorkspaceFiles([project]), policy=policy)


async def test_a_passing_check_keeps_the_edit_and_says_verified(project: Path):
    check = verifier(project, "python3 -c 'import calc; assert calc.add(2, 3) == 5'")
    runner = proposed(project, MODULE.replace("a - b", "a + b"))
    assert await check.check_latest(runner) is None
    assert len(runner.proposals.edits) == 1
    result = check.verification.to_json()
    assert result["passed"] is True and result["attempts"] == 1
    assert result["summary"].startswith("verified:")


async def test_a_failed_check_withdraws_the_edit_and_tells_the_model_why(project: Path):
    check = verifier(project, "python3 -c 'import calc; assert calc.add(2, 3) == 5, \"add is wrong\"'")
    runner = proposed(project, MODULE.replace("a - b", "a * b"))
    problem = await check.check_latest(runner)
    assert problem is not None and "add is wrong" in problem and "[exit status 1]" in problem
    assert runner.proposals.edits == [] and runner.proposals.changed_texts() == {}
    # A later candidate passes: it is the one kept.
    assert runner.proposals.propose_text(project / "calc.py", MODULE.replace("a - b", "a + b")) is None
    assert await check.check_latest(runner) is None
    assert runner.proposals.text_after_edits(project / "calc.py") == MODULE.replace("a - b", "a + b")
    assert check.verification.attempts == 2 and check.verification.passed is True


async def test_the_model_reads_a_failed_test_run_without_how_long_it_took(project: Path):
    """A test run's duration changes from run to run; left in what the model reads, the same request
    could give other tokens."""
    pytest_run = (
        f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider test_calc.py"
    )
    check = verifier(project, pytest_run)
    problem = await check.check_latest(proposed(project, MODULE.replace("a - b", "a * b")))
    assert problem is not None and "1 failed\n" in problem, problem
    assert re.search(r"1 failed in \d", check.verification.output or "")  # the user's copy keeps it
    report = "1 failed, 1 passed, 2 warnings in 0.05s\n== 3 passed in 61.20s (0:01:01) ==\n"
    report += "Ran 3 tests in 0.001s"
    assert without_durations(report) == "1 failed, 1 passed, 2 warnings\n== 3 passed ==\nRan 3 tests"


async def test_when_no_candidate_passes_the_first_comes_back_marked_failed(project: Path):
    check = verifier(project, "exit 3", attempts=2)
    runner = ToolRunner(WorkspaceFiles([project]))
    for body in ("a * b", "b - a"):
        assert runner.proposals.propose_text(project / "calc.py", MODULE.replace("a - b", body)) is None
        assert await check.check_latest(runner) is not None
    assert check.exhausted and runner.proposals.edits == []
    check.settle(runner)
    assert runner.proposals.text_after_edits(project / "calc.py") == MODULE.replace("a - b", "a * b")
    result = check.verification.to_json()
    assert result["passed"] is False and result["attempts"] == 2
    assert "[exit status 3]" in result["output"]
    assert result["summary"] == "not verified: `exit 3` failed on both edits it checked"


async def test_the_command_runs_on_a_copy_never_in_the_workspace(project: Path):
    check = verifier(project, "touch made-by-check && cat calc.py > seen && ls -a > listing && pwd && false")
    runner = proposed(project, MODULE.replace("a - b", "a + b"))
    problem = await check.check_latest(runner)
    assert problem is not None
    assert not (project / "made-by-check").exists()
    assert (project / "calc.py").read_text() == MODULE  # the proposal reached the copy only
    shown = check.verification.output
    assert str(project) not in shown and "llama-lsp-check-" in shown


async def test_the_copy_holds_the_edit_and_the_file_placeholder_names_it(project: Path):
    # The workspace's virtual environment is not copied: the sandbox shows the real one, read-only.
    check = verifier(
        project, "test {file} = calc.py && grep -q 'a + b' {file} && test -f .venv/big && ! touch .venv/new"
    )
    runner = proposed(project, MODULE.replace("a - b", "a + b"))
    assert await check.check_latest(runner) is None, check.verification.output
    assert not (project / ".venv" / "new").exists()


async def test_the_command_sees_a_scrubbed_environment(project: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LLAMA_LSP_TEST_SECRET", "hunter2")
    check = verifier(project, "env; false")
    await check.check_latest(proposed(project, MODULE.replace("a - b", "a + b")))
    output = check.verification.output
    assert "hunter2" not in output and "PATH=" in output
    assert f"HOME={os.environ.get('HOME')}\n" not in output


async def test_the_command_has_no_network(project: Path):
    # This machine allows user namespaces, so the check runs with a loopback device only.
    check = verifier(project, "tail -n +3 /proc/net/dev | cut -d: -f1; false")
    await check.check_latest(proposed(project, MODULE.replace("a - b", "a + b")))
    assert check.verification.output.split("\n[exit")[0].split() == ["lo"]


async def test_a_command_that_hangs_is_killed_at_the_timeout(project: Path):
    check = verifier(project, "sleep 60 & sleep 60; echo never", timeout_s=1)
    started = time.monotonic()
    problem = await check.check_latest(proposed(project, MODULE.replace("a - b", "a + b")))
    assert time.monotonic() - started < 10
    assert problem is not None and "longer than 1 s" in problem
    assert "never" not in check.verification.output


async def test_a_command_that_prints_a_lot_is_trimmed_to_its_head_and_tail(project: Path):
    check = verifier(project, "echo first; seq 1 200000; echo last; false")
    await check.check_latest(proposed(project, MODULE.replace("a - b", "a + b")))
    output = check.verification.output
    assert output.startswith("first\n") and "last\n" in output and "bytes left out" in output
    assert len(output) < OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS + 200


def test_the_verify_settings_find_the_tests_by_default_and_are_checked():
    assert settings.Settings().verify_command == "auto"
    config, warnings = settings.merge(
        settings.Settings(), {"verifyCommand": " pytest -q ", "verifyTimeout": 5, "maxVerifyAttempts": 0}
    )
    assert config.verify_command == "pytest -q" and config.verify_timeout == 5.0
    assert config.max_verify_attempts == 2 and "maxVerifyAttempts" in warnings[0]  # the default kept
    assert settings.merge(config, {"verifyCommand": ""})[0].verify_command is None


async def test_a_file_outside_every_folder_is_checked_alone(project: Path, tmp_path: Path):
    outside = tmp_path / "notes.py"
    outside.write_text("x = 1\n")
    (tmp_path / "neighbour.txt").write_text("not copied")
    sandbox = WorkspaceFiles([project], documents=[outside])
    runner = ToolRunner(sandbox)
    assert runner.proposals.propose_text(outside, "x = 2\n") is None
    check = Verifier("ls; false", 30, 3, sandbox)
    await check.check_latest(runner)
    assert check.verification.output.split("\n[exit")[0].split() == ["notes.py"]


# The server's own interpreter: the sandbox hides the home directory, and with it any other Python there.
PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


async def test_a_fix_says_that_the_check_failed_before_it_and_passes_after(project: Path):
    check = verifier(project, PYTEST, action="fix")
    check.look_before(project / "calc.py")
    before = await check.result_before()
    # The check ran on the workspace's code as it is, on a copy.
    assert before is not None and not before.passed
    assert "test_add" in before.output and "assert -1 == 5" in before.output
    runner = proposed(project, MODULE.replace("a - b", "a + b"))
    assert await check.check_latest(runner) is None
    result = check.verification.to_json()
    assert result["passedBefore"] is False and result["passed"] is True
    assert result["summary"] == f"verified: `{PYTEST}` passed (attempt 1); it failed before the edit"


async def test_an_edit_that_is_not_a_fix_is_not_checked_by_a_command_that_already_fails(project: Path):
    check = verifier(project, PYTEST, action="refactor")
    check.look_before(project / "calc.py")
    runner = proposed(project, '"""Arithmetic."""\n' + MODULE)
    # The edit stays, unchecked: a failure could not be told from the one that was there before.
    assert await check.check_latest(runner) is None and len(runner.proposals.edits) == 1
    result = check.verification.to_json()
    assert result["passed"] is None and result["attempts"] == 0 and result["passedBefore"] is False
    assert result["summary"] == f"not verified: `{PYTEST}` fails without the edit too, so it cannot tell"


async def test_a_check_that_passed_before_the_edit_says_so(project: Path):
    (project / "test_calc.py").write_text("def test_nothing():\n    pass\n")
    check = verifier(project, PYTEST, action="fix")
    check.look_before(project / "calc.py")
    assert (before := await check.result_before()) is not None and before.passed
    runner = proposed(project, MODULE.replace("a - b", "a + b"))
    assert await check.check_latest(runner) is None
    assert check.verification.summary().endswith("; it passed before the edit too")


def processes_running(*argv: str) -> list[int]:
    """The pids of the processes on this machine whose command line is argv (seen from outside any
    sandbox: a pid the check prints is its own namespace's)."""
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                found.append(int(entry.name))
        except OSError:  # it ended while we looked
            continue
    return found


async def test_a_look_before_that_still_runs_when_the_request_ends_is_killed(project: Path):
    check = verifier(project, "sleep 31.25 & wait", action="fix")
    check.look_before(project / "calc.py")
    deadline = time.monotonic() + 10
    while not processes_running("sleep", "31.25") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert processes_running("sleep", "31.25"), "the check never started its sleep"
    check.stop()
    with pytest.raises(asyncio.CancelledError):
        await check.result_before()
    # Everything the command started went with it, the sleep too.
    deadline = time.monotonic() + 5
    while processes_running("sleep", "31.25") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert processes_running("sleep", "31.25") == []


def test_a_failed_check_says_how_many_edits_it_checked():
    one = Verification(PYTEST, attempts=1, passed=False)
    assert one.summary() == f"not verified: `{PYTEST}` failed on the one edit it checked"
    three = Verification(PYTEST, attempts=3, passed=False)
    assert three.summary() == f"not verified: `{PYTEST}` failed on all 3 edits it checked"
