"""Checking proposed edits: the user's command runs on a copy of the folder with the edit applied.

Only when the `verifyCommand` setting is set, and never in the real workspace: each check copies the
folder that holds the edited file into a fresh temporary directory (a file outside every folder goes
there alone), writes the request's proposed files there, and runs the command in it, in the sandbox
check_sandbox.py sets up (or refuses to run it, when none can be set up and `verifySandbox` allows no
other way). Exit status 0 passes. A failed check's trimmed output goes back to the model, which tries
again; when no attempt passes, the first failed candidate is returned marked as failed.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shlex
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..tools.proposals import Checkpoint, ProposedEdit
from ..tools.runner import ToolRunner, counted
from ..tools.workspace_files import WorkspaceFiles
from . import passing_tests
from .discovery import TestPlan, find_tests
from .sandbox import (
    OUTPUT_TAIL_CHARS,
    CheckSandbox,
    CopyRefused,
    SandboxUnavailable,
    copy_folder,
    left_out_note,
    trimmed,
)

log = logging.getLogger("llama_lsp.verify")


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    output: str  # trimmed
    seconds: float
    command: str
    timed_out: bool = False
    # The output at more length, for reading every failure (CheckPolicy.report_chars); else "".
    report: str = ""
    rest: str | None = None  # after the related tests, how the other test files went (Verifier._the_rest)
    broke_rest: bool = False  # the related tests passed, and the other test files broke with the edit


@dataclass
class Verification:
    """What was checked for one request: the attempts, and the result of the edit returned."""

    command: str | None
    auto: bool = False  # verifyCommand "auto": `command` is what it found, once a check looked
    reason: str | None = None  # with "auto": why that command (runner, interpreter, test files)
    attempts: int = 0
    passed: bool | None = None  # None: nothing was checked (no command set, or no edit proposed)
    output: str = ""
    # The first failed candidate (the greedy one) and its check: what comes back when none passes.
    first_failure: tuple[Checkpoint, CheckResult] | None = None
    passed_before: bool | None = None  # the command on the code without the edit; None: not run
    sandbox: str | None = None  # the isolation the command ran under ("bwrap", "none"); None: it never ran
    # Write tests: the tests of the new file that failed on the code as it is, dropped from it; and how
    # many it had.
    dropped_tests: list[str] = field(default_factory=list)
    written_tests: int = 0
    # Write tests: the expected values of the new file that the code did not give, set to what it gives.
    settled_values: list[passing_tests.SettledValue] = field(default_factory=list)
    refused: str | None = None  # why the command could not run at all (no sandbox); None: it could
    rest: str | None = None  # with "auto": how the project's other test files went, for the edit returned
    broke_rest: bool = False  # with "auto": the edit returned passed its related tests, and broke the others

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "reason": self.reason,
            "passed": self.passed,
            "passedBefore": self.passed_before,
            "attempts": self.attempts,
            "sandbox": self.sandbox,
            "droppedTests": self.dropped_tests,
            "settledValues": [str(value) for value in self.settled_values],
            "rest": self.rest,
            "output": self.output,
            "summary": self.summary(),
        }

    def summary(self) -> str:
        """One line for the user: whether the edit was checked, and how it went."""
        if self.refused is not None:
            return f"not verified: the check did not run: {self.refused}"
        if self.command is None and not self.auto:
            return "not verified: it parses, but no verifyCommand is set to check it"
        if self.passed is None and self.passed_before is False:
            return f"not verified: `{self.command}` fails without the edit too, so it cannot tell"
        if self.passed is None:
            return "not verified: no edit was checked"
        if self.passed:
            said = f"verified: `{self.command}` passed (attempt {self.attempts})"
            if self.passed_before is False:
                said += "; it failed before the edit"
            elif self.passed_before:  # then it may not exercise what a fix changes
                said += "; it passed before the edit too"
            if self.settled_values:
                said += (
                    f"; {counted(len(self.settled_values), 'expected value')} written did not match the code "
                    f"and now say what it gives (check that it is right): "
                    + "; ".join(map(str, self.settled_values))
                )
            if self.dropped_tests:
                said += (
                    f"; {len(self.dropped_tests)} of {self.written_tests} tests written failed on the code "
                    f"as it is and were dropped: {', '.join(self.dropped_tests)}"
                )
            if self.rest:
                said += f"; {self.rest}"
            return said
        if self.broke_rest:
            return f"not verified: `{self.command}` passed, but {self.rest}"
        if self.attempts == 1:  # the other candidates, if any, repeated that edit
            said = f"not verified: `{self.command}` failed on the one edit it checked"
        else:
            each = "both" if self.attempts == 2 else f"all {self.attempts}"
            said = f"not verified: `{self.command}` failed on {each} edits it checked"
        return f"{said}; {self.rest}" if self.rest else said


AUTO = "auto"
# How long a test run took, as pytest ("2 failed, 3 passed in 0.05s", "in 61.20s (0:01:01)") and unittest
# ("Ran 3 tests in 0.001s") end their reports.
_DURATION = re.compile(
    r"(\b(?:passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|"
    r"no tests ran|tests?)) in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?"
)
# The other test files run only with at least this much of verifyTimeout left after the related ones.
REST_MIN_S = 2.0


@dataclass(frozen=True)
class CheckPolicy:
    """How one action's check treats its edits (an action kind's check_policy(); chat: the default).

    `looks_before`: the check also runs on the code as it is, in the background while the model writes,
    so that the summary can say what a pass is worth; an edit is then checked only when that passed,
    since a check that already fails cannot tell a good edit from a bad one, unless `fixing`: a check
    that failed before is expected to pass after. A kind with more to do when a check fails (Write tests
    keeps the tests that pass) overrides the methods."""

    looks_before: bool = False
    fixing: bool = False
    # Characters of the output's end kept in CheckResult.report for after_failure; 0: no report.
    report_chars: int = 0
    # When nothing passed, the first failed candidate comes back, marked as failed (Verifier.settle).
    returns_failed_candidate: bool = True

    async def after_failure(self, verifier: Verifier, runner: ToolRunner, failed: CheckResult) -> CheckResult:
        """What can still be made of the latest edit, whose check failed: `failed` when nothing."""
        return failed

    def retry_message(self, failed: CheckResult, output: str) -> str:
        """What the model reads about a failed check (`output`: its output without durations)."""
        return (
            f"That change was checked with `{failed.command}`, which failed:\n```\n{output}\n```\n"
            "Find what is wrong and write it again."
        )


class Verifier:
    """Runs the check for one request's edits, at most `max_attempts` times, in `check_sandbox`, as the
    request's `policy` says.

    `command` "auto" finds the tests of the first file checked (test_discovery.py) and runs that
    command for every check of the request, so that before and after are the same check."""

    def __init__(
        self,
        command: str,
        timeout_s: float,
        max_attempts: int,
        workspace: WorkspaceFiles,
        check_sandbox: CheckSandbox | None = None,
        policy: CheckPolicy | None = None,
    ) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.workspace = workspace
        self.check_sandbox = check_sandbox or CheckSandbox()
        self.verification = Verification(None, auto=True) if command == AUTO else Verification(command)
        self._before: asyncio.Future[CheckResult | None] | None = None
        self._plan: TestPlan | None = None  # what "auto" found
        self._rest_before: CheckResult | None = None  # the other test files on the code without the edit
        self.policy = policy or CheckPolicy()

    @property
    def exhausted(self) -> bool:
        return self.verification.attempts >= self.max_attempts

    def look_before(self, path: Path) -> None:
        """Starts the command on the code as it is, before any edit to `path`, in the background, where
        the policy looks before (CheckPolicy.looks_before)."""
        if self.policy.looks_before:
            self._before = asyncio.ensure_future(self._run({}, path))

    async def result_before(self) -> CheckResult | None:
        """The look before the edit, once it finished; None when there was none, or it could not run."""
        if self._before is None:
            return None
        result = await self._before
        if result is not None:
            self.verification.passed_before = result.passed
        return result

    def stop(self) -> None:
        """The request ended: a look before it that still runs is killed (see _run_command)."""
        if self._before is not None and not self._before.done():
            self._before.cancel()

    async def check_latest(self, runner: ToolRunner) -> str | None:
        """Checks the runner's edits as they stand after an edit was just recorded.

        None when they pass. Otherwise the latest edit is withdrawn (kept as a candidate) and the
        return value says why, for the model to read.
        """
        before = await self.result_before()
        if before is not None and not before.passed and not self.policy.fixing:
            return None  # it failed without the edit: the edit stays, unchecked, and the summary says so
        if not await self._can_run():
            return None  # no sandbox: the edit stays, unchecked, and the summary says why
        if self.exhausted:
            runner.proposals.withdraw_latest()
            return "No more checks are left for this request."
        state = runner.proposals.checkpoint()
        result = await self._run(runner.proposals.changed_texts(), runner.proposals.edits[-1].path)
        if result is None:
            return None  # "auto" found nothing to run: the edit stays, unchecked, and the summary says why
        self.verification.attempts += 1
        log.info("check %d: %s in %.1f s", self.verification.attempts, result.passed, result.seconds)
        self.verification.output = result.output
        if not result.passed:
            result = await self.policy.after_failure(self, runner, result)
        if result.passed:
            result = await self._the_rest(runner, result)
            self.verification.output = result.output
        self.verification.rest, self.verification.broke_rest = result.rest, result.broke_rest
        if result.passed:
            self.verification.passed = True
            return None
        self.verification.passed = False
        if self.verification.first_failure is None:
            self.verification.first_failure = (state, result)
        runner.proposals.withdraw_latest()
        return self.policy.retry_message(result, without_durations(result.output))

    async def _the_rest(self, runner: ToolRunner, passed: CheckResult) -> CheckResult:
        """After `passed`, the check of the related tests: the project's other test files (auto's
        `rest_command`) on the same edits, in what is left of verifyTimeout. Their failed result when they
        fail with the edits and pass without them; else `passed`. Either says how they went (`rest`)."""
        plan = self._plan
        if plan is None or plan.rest_command is None:
            return passed
        others = "the other test file" if len(plan.rest) == 1 else f"the other {len(plan.rest)} test files"
        left = self.timeout_s - passed.seconds
        if left < REST_MIN_S:
            return replace(passed, rest=f"{others} did not run: verifyTimeout was used up")
        edited = runner.proposals.edits[-1].path
        after = await self._run(runner.proposals.changed_texts(), edited, plan.rest_command, left)
        if after is None:
            return passed
        if after.passed:
            return replace(passed, rest=f"{others} passed too")
        if after.timed_out:
            return replace(passed, rest=f"{others} did not finish within verifyTimeout")
        if self._rest_before is None:  # once per request: the code without the edits does not change
            self._rest_before = await self._run({}, edited, plan.rest_command, self.timeout_s)
        if self._rest_before is None or not self._rest_before.passed:
            return replace(passed, rest=f"{others} failed without the edit too, so not counted")
        log.info("the edit broke %s", others)
        return replace(after, rest=f"{others} passed without the edit and failed with it", broke_rest=True)

    async def recheck(self, runner: ToolRunner, text: str) -> CheckResult | None:
        """The latest edit, a new file, recorded again as `text` and checked; None when it cannot run."""
        edit = runner.proposals.edits[-1]
        runner.proposals.withdraw_latest()
        runner.proposals.record(ProposedEdit(edit.path, None, text), None, text)
        return await self._run(runner.proposals.changed_texts(), edit.path)

    def settle(self, runner: ToolRunner) -> None:
        """When no edit passed: bring back the first failed candidate (greedy, so the likeliest), marked
        as failed. The user sees it, and why it failed, rather than nothing, unless the policy says a
        failed candidate is no use (new tests that fail)."""
        if (
            runner.proposals.edits
            or self.verification.first_failure is None
            or not self.policy.returns_failed_candidate
        ):
            return
        state, result = self.verification.first_failure
        runner.proposals.restore(state)
        self.verification.passed = False
        self.verification.output = result.output
        self.verification.rest, self.verification.broke_rest = result.rest, result.broke_rest

    async def _can_run(self) -> bool:
        """Whether the command can run here; when it cannot, `verification.refused` says why."""
        if self.verification.refused is None:
            try:
                await self.check_sandbox.isolation()
            except SandboxUnavailable as exc:
                log.warning("checks do not run: %s", exc)
                self.verification.refused = str(exc)
                self.verification.output = str(exc)
        return self.verification.refused is None

    async def _run(
        self, texts: dict[Path, str], edited: Path, command: str | None = None, timeout_s: float | None = None
    ) -> CheckResult | None:
        """The check (or `command`) on the code with `texts` written over it; None when it cannot run
        (_can_run)."""
        if not await self._can_run():
            return None
        started = time.monotonic()
        folder = next((r for r in self.workspace.roots if edited.is_relative_to(r)), None)
        # A file outside every folder is checked alone: its directory may be anything (a home folder).
        root = folder or edited.parent
        if self.command == AUTO:
            plan = self._plan = await asyncio.to_thread(find_tests, root, edited)
            log.info("auto: %s: %s", plan.command, plan.reason)
            self.command = plan.command or ""
            self.verification.command, self.verification.reason = plan.command, plan.reason
            if plan.command is None:
                self.verification.refused = plan.reason
        if self.verification.refused is not None:
            return None
        command = command or self.command.replace("{file}", shlex.quote(edited.relative_to(root).as_posix()))
        timeout_s = timeout_s or self.timeout_s
        tail_chars = self.policy.report_chars or OUTPUT_TAIL_CHARS
        ran = await run_on_copy(
            self.check_sandbox, command, root, folder is not None, texts, timeout_s, tail_chars
        )
        if ran.isolation is not None:
            self.verification.sandbox = ran.isolation
        report = ran.output if self.policy.report_chars else ""
        seconds = time.monotonic() - started
        return CheckResult(ran.passed, trimmed(ran.output), seconds, command, ran.timed_out, report=report)


@dataclass(frozen=True)
class CopyRun:
    """How a command went on a copy of a folder."""

    passed: bool
    output: str  # what was left out of the copy, then the command's trimmed output
    isolation: str | None  # "bwrap" or "none"; None: the folder could not be copied, nothing ran
    copy: Path  # where the copy was (gone now): the absolute paths in the output start with it
    timed_out: bool = False  # killed at timeout_s


async def run_on_copy(
    check_sandbox: CheckSandbox,
    command: str,
    root: Path,
    copy_root: bool,
    texts: dict[Path, str],
    timeout_s: float,
    tail_chars: int = OUTPUT_TAIL_CHARS,
) -> CopyRun:
    """Runs `command` in `check_sandbox` on a fresh copy of the folder `root` (or, when not copy_root, an
    empty folder of its name: a file outside every folder is checked alone) with `texts` written over it."""
    # The command may leave read-only files behind: they must not turn a check into an error.
    with tempfile.TemporaryDirectory(prefix="llama-lsp-check-", ignore_cleanup_errors=True) as scratch:
        copy = Path(scratch) / "copy" / root.name
        copy.parent.mkdir()
        left_out: list[str] = []
        try:
            if copy_root:
                left_out = await asyncio.to_thread(copy_folder, root, copy)
            else:
                copy.mkdir()
        except CopyRefused as exc:
            return CopyRun(False, f"could not copy the folder to check the edit: {exc}", None, copy)
        for path, text in texts.items():
            if path.is_relative_to(root):
                target = copy / path.relative_to(root)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        venvs_of = root if copy_root else None
        ran = await check_sandbox.run(
            command, copy, Path(scratch), timeout_s, venvs_of=venvs_of, tail_chars=tail_chars
        )
    return CopyRun(ran.passed, left_out_note(left_out) + ran.output, ran.isolation, copy, ran.timed_out)


def without_durations(output: str) -> str:
    """A check's output as the model reads it: without how long the tests took, which changes from run
    to run, so that the same request still gives the same tokens (a model reads a failed check when it
    writes a test file again, or when an edit tool's call was checked)."""
    return _DURATION.sub(r"\1", output)
