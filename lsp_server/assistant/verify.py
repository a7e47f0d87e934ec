"""Checking proposed edits: the user's command runs on a copy of the folder with the edit applied.

Only when the `verifyCommand` setting is set, and never in the real workspace: each check copies the
folder that holds the edited file into a fresh temporary directory (leaving out version control,
virtual environments and caches; a file outside every folder goes there alone), writes the request's
proposed files there, and runs the command in
it with a timeout, a scrubbed environment, no network where the OS allows it (`unshare -rn`), and a
bounded output. Exit status 0 passes. A failed check's trimmed output goes back to the model, which
tries again; when no attempt passes, the first failed candidate is returned marked as failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .proposals import Checkpoint
from .sandbox import SKIPPED_DIRS, Sandbox
from .tools import ToolRunner

log = logging.getLogger("llama_lsp.verify")

OUTPUT_HEAD_CHARS = 1_000  # what the command printed first (the command line, collection errors)
OUTPUT_TAIL_CHARS = 3_000  # and last (a test runner's summary)
COPY_MAX_FILES = 20_000
COPY_MAX_BYTES = 512 * 1024 * 1024
# Besides SKIPPED_DIRS (.git, node_modules, .venv, ...): environments and caches that are not the code.
NOT_COPIED = SKIPPED_DIRS | {"venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache"}
# The variables a test command needs to find its tools and decode text; nothing else is passed on, so
# keys and tokens in the editor's environment never reach code the model wrote.
KEPT_VARIABLES = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    output: str  # trimmed
    seconds: float


@dataclass
class Verification:
    """What was checked for one request: the attempts, and the result of the edit returned."""

    command: str | None
    attempts: int = 0
    passed: bool | None = None  # None: nothing was checked (no command set, or no edit proposed)
    output: str = ""
    # The first failed candidate (the greedy one) and its check: what comes back when none passes.
    first_failure: tuple[Checkpoint, CheckResult] | None = None
    passed_before: bool | None = None  # the command on the code without the edit; None: not run

    def to_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "passed": self.passed,
            "passedBefore": self.passed_before,
            "attempts": self.attempts,
            "output": self.output,
            "summary": self.summary(),
        }

    def summary(self) -> str:
        """One line for the user: whether the edit was checked, and how it went."""
        if self.command is None:
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
            return said
        if self.attempts == 1:  # the other candidates, if any, repeated that edit
            return f"not verified: `{self.command}` failed on the one edit it checked"
        return f"not verified: `{self.command}` failed on all {self.attempts} attempts"


class Verifier:
    """Runs the check for one request's edits, at most `max_attempts` times."""

    def __init__(self, command: str, timeout_s: float, max_attempts: int, sandbox: Sandbox) -> None:
        self.command = command
        self.timeout_s = timeout_s
        self.max_attempts = max_attempts
        self.sandbox = sandbox
        self.verification = Verification(command)
        self._before: asyncio.Future[CheckResult] | None = None
        self._checks_fixes = True

    @property
    def exhausted(self) -> bool:
        return self.verification.attempts >= self.max_attempts

    def look_before(self, path: Path, fixing: bool) -> None:
        """Starts the command on the code as it is, before any edit to `path`, in the background.

        A fix is expected to turn a failing check into a passing one, and the summary says whether it
        did. Any other edit is checked only when the command passed before it, since a command that
        already fails cannot tell a good edit from a bad one.
        """
        self._checks_fixes = fixing
        self._before = asyncio.ensure_future(self._run({}, path))

    async def result_before(self) -> CheckResult | None:
        """The look before the edit, once it finished; None when there was none."""
        if self._before is None:
            return None
        result = await self._before
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
        if before is not None and not before.passed and not self._checks_fixes:
            return None  # it failed without the edit: the edit stays, unchecked, and the summary says so
        if self.exhausted:
            runner.proposals.withdraw_latest()
            return "No more checks are left for this request."
        self.verification.attempts += 1
        state = runner.proposals.checkpoint()
        result = await self._run(runner.proposals.changed_texts(), runner.proposals.edits[-1].path)
        log.info("check %d: %s in %.1f s", self.verification.attempts, result.passed, result.seconds)
        self.verification.output = result.output
        if result.passed:
            self.verification.passed = True
            return None
        self.verification.passed = False
        if self.verification.first_failure is None:
            self.verification.first_failure = (state, result)
        runner.proposals.withdraw_latest()
        return (
            f"That change was checked with `{self.command}`, which failed:\n```\n{result.output}\n```\n"
            "Find what is wrong and write it again."
        )

    def settle(self, runner: ToolRunner) -> None:
        """When no edit passed: bring back the first failed candidate (greedy, so the likeliest), marked
        as failed. The user sees it, and why it failed, rather than nothing."""
        if runner.proposals.edits or self.verification.first_failure is None:
            return
        state, result = self.verification.first_failure
        runner.proposals.restore(state)
        self.verification.passed = False
        self.verification.output = result.output

    async def _run(self, texts: dict[Path, str], edited: Path) -> CheckResult:
        started = time.monotonic()
        folder = next((r for r in self.sandbox.roots if edited.is_relative_to(r)), None)
        # A file outside every folder is checked alone: its directory may be anything (a home folder).
        root = folder or edited.parent
        # The command may leave read-only files behind: they must not turn a check into an error.
        with tempfile.TemporaryDirectory(prefix="llama-lsp-check-", ignore_cleanup_errors=True) as scratch:
            copy = Path(scratch) / root.name
            try:
                if folder is not None:
                    await asyncio.to_thread(_copy_folder, root, copy)
                else:
                    copy.mkdir()
            except CopyRefused as exc:
                return CheckResult(False, f"could not copy the folder to check the edit: {exc}", 0.0)
            for path, text in texts.items():
                if path.is_relative_to(root):
                    target = copy / path.relative_to(root)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, encoding="utf-8")
            command = self.command.replace("{file}", shlex.quote(edited.relative_to(root).as_posix()))
            passed, output = await _run_command(command, copy, Path(scratch), self.timeout_s)
        return CheckResult(passed, output, time.monotonic() - started)


class CopyRefused(Exception):
    """The folder is too large to copy for each check."""


def _copy_folder(source: Path, target: Path) -> None:
    files = 0
    size = 0

    def ignore(directory: str, names: list[str]) -> set[str]:
        nonlocal files, size
        skipped = {n for n in names if n in NOT_COPIED or n.endswith(".egg-info")}
        for name in names:
            if name in skipped:
                continue
            path = Path(directory, name)
            if path.is_file():
                files += 1
                size += path.stat().st_size
        if files > COPY_MAX_FILES or size > COPY_MAX_BYTES:
            raise CopyRefused(f"{source} holds more than {COPY_MAX_FILES} files or {COPY_MAX_BYTES >> 20} MB")
        return skipped

    shutil.copytree(source, target, symlinks=True, ignore=ignore)


async def _run_command(command: str, cwd: Path, scratch: Path, timeout_s: float) -> tuple[bool, str]:
    """Runs `command` with `sh -c` in cwd; (exit status 0, trimmed output). Killed, with its whole
    process group, at the timeout or when the request is cancelled."""
    home = scratch / "home"
    home.mkdir()
    env = {name: os.environ[name] for name in KEPT_VARIABLES if name in os.environ}
    # No bytecode: two candidates written within the same second could otherwise share a stale .pyc.
    env.update(HOME=str(home), TMPDIR=str(scratch), PYTHONDONTWRITEBYTECODE="1", CI="1")
    argv = ["sh", "-c", command]
    if _can_drop_network():
        argv = ["unshare", "-rn", *argv]
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so the kill reaches what it started
    )
    output = _BoundedOutput()

    async def finish() -> int:
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            output.add(chunk)
        return await process.wait()

    try:
        status = await asyncio.wait_for(finish(), timeout_s)
    except asyncio.TimeoutError:
        _kill_group(process)
        await process.wait()
        return False, f"{output.text()}\n[killed: the check took longer than {timeout_s:g} s]"
    except asyncio.CancelledError:
        _kill_group(process)
        with contextlib.suppress(Exception):
            await asyncio.shield(process.wait())
        raise
    text = output.text()
    if status != 0:
        text += f"\n[exit status {status}]"
    return status == 0, text


def _kill_group(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


@cache
def _can_drop_network() -> bool:
    """Whether `unshare -rn` works here (user namespaces may be disabled, or it may be missing)."""
    if shutil.which("unshare") is None:
        return False
    try:
        return subprocess.run(["unshare", "-rn", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


class _BoundedOutput:
    """Keeps the head and the tail of what a command prints, however much it prints."""

    def __init__(self) -> None:
        self.head = b""
        self.tail = b""
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = OUTPUT_HEAD_CHARS - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > OUTPUT_TAIL_CHARS:
            self.dropped += len(self.tail) - OUTPUT_TAIL_CHARS
            self.tail = self.tail[-OUTPUT_TAIL_CHARS:]

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes left out ...]\n" if self.dropped else ""
        return self.head.decode(errors="replace") + middle + self.tail.decode(errors="replace")
