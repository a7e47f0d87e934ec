"""Write tests: a new test file for the function or class that holds the selection, written whole.

Its check keeps only the tests that pass on the code as it is (KeepPassingTests): the code is taken to be
right, so an expected value the code does not give is set to what it gives, and a test that still fails
is dropped; when none passes there is no edit rather than a failing one. A failed check goes back to the
model, which writes the file again after reading what the code really gives.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ..checks import passing_tests
from ..checks.verifier import CheckPolicy, CheckResult, Verifier
from ..tools.runner import ToolRunner
from .base import REWRITE_MAX_FACTOR, Action

log = logging.getLogger("llama_lsp.write_tests")

# Runs that set wrong expected values to the code's results, before the failing tests go. A run shows
# one failing assertion per test, and a test may assert several values.
SETTLE_ROUNDS = 10
# Every failure of the file is read, which the usual head and tail of a check's output may cut.
REPORT_TAIL_CHARS = 32_000


@dataclass(frozen=True)
class WriteTests(Action):
    def definitions_budget(self) -> int:
        return 0

    def check_policy(self) -> CheckPolicy | None:
        return KeepPassingTests()

    def reads_failed_checks(self) -> bool:
        return True

    def write_tokens(self, code: str, max_tokens: int) -> int:
        """At least twice maxTokens: a test file is usually longer than the code it tests, and one cut off
        cannot parse; at most REWRITE_MAX_FACTOR times it."""
        return min(max(2 * max_tokens, len(code) // 2), REWRITE_MAX_FACTOR * max_tokens)

    def propose_block(
        self, runner: ToolRunner, path: Path, source: str, first: int, last: int, test_file: str, code: str
    ) -> str | None:
        if test_file.endswith(".py"):
            code = passing_tests.without_redefined_tests(passing_tests.complete_tests(code))
            code = passing_tests.with_missing_imports(code, source, path.stem)
        return runner.propose_file(test_file, code)


@dataclass(frozen=True)
class KeepPassingTests(CheckPolicy):
    """A new test file that fails its check keeps the tests that pass: the failing ones are dropped and
    the rest checked again. When none passes, no candidate comes back."""

    report_chars: int = REPORT_TAIL_CHARS
    returns_failed_candidate: bool = False

    async def after_failure(self, verifier: Verifier, runner: ToolRunner, failed: CheckResult) -> CheckResult:
        """The latest edit, a new test file whose check failed, recorded again with the expected values
        the code does not give set to what it gives, then without the tests that still fail, and checked
        again after each; `failed` as it was when that cannot be done."""
        result = failed
        edit = runner.proposals.edits[-1]
        if edit.kind != "create":
            return result
        written = text = runner.proposals.changed_texts()[edit.path]
        settled: list[passing_tests.SettledValue] = []
        # Each run shows one failing assertion per test: a test with two wrong values needs two.
        for _ in range(SETTLE_ROUNDS):
            settled_text, more = passing_tests.settle_expected_values(text, result.report, edit.path.name)
            # A value set before fails again: it differs from run to run (a loop, a clock), so the test goes.
            if not more or {(v.test, v.line) for v in more} & {(v.test, v.line) for v in settled}:
                break
            again = await verifier.recheck(runner, settled_text)
            if again is None:
                return result
            text, result = settled_text, again
            settled += more
            log.info("set %d expected values of %s to the code's results", len(more), edit.path.name)
            if result.passed:
                break
        if not result.passed:
            failing = passing_tests.failed_tests(result.report, edit.path.name)
            kept = passing_tests.without_tests(text, failing) if failing else None
            again = await verifier.recheck(runner, kept) if kept is not None and failing is not None else None
            if again is None or not again.passed:
                return result  # check_latest withdraws the file, as it would the whole one
            log.info(
                "dropped %d failing tests of %s:\n%s",
                len(failing or ()),
                edit.path.name,
                "\n".join(
                    line for line in result.report.splitlines() if line.startswith(("FAILED ", "ERROR "))
                ),
            )
            verifier.verification.dropped_tests = sorted("::".join(test) for test in failing or ())
            result = again
        verifier.verification.output = result.output
        # The values kept: those of a test dropped after all are not in the file.
        dropped = set(verifier.verification.dropped_tests)
        verifier.verification.settled_values = [
            value for value in settled if value.test.split("::", 1)[-1] not in dropped
        ]
        verifier.verification.written_tests = passing_tests.count_tests(written)
        return result

    def retry_message(self, failed: CheckResult, output: str) -> str:
        # The code is as it should be: what the tests expect is wrong.
        return (
            f"Every test in that file failed (or none ran) on the code as it is, with `{failed.command}`:"
            f"\n```\n{output}\n```\nThe code is correct. Write the test file again, with the "
            "results the code really gives."
        )
