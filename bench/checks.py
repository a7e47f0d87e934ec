"""(K) What a check costs on top of the tests it runs: the copy of the folder, the sandbox and the runner's
start (issue 29's goal: at most 2 s more when the related tests take under a second).

On an eval Fix task with its bug fixed (its module and its test file, a few tests that take milliseconds),
`"auto"` picks the command (test_discovery.py); that command runs straight in the folder, as a user
would run it, and as a check does (verify.run_on_copy: a fresh copy, in the check sandbox). No model.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from harness import report
from harness.eval_tasks import TASKS, Task
from lsp_server.assistant.checks.discovery import find_tests
from lsp_server.assistant.checks.sandbox import CheckSandbox
from lsp_server.assistant.checks.verifier import run_on_copy

from .parts import median, show

TASK = "fix_interval_merge"
GOAL_EXTRA_S = 2.0


def run(runs: int) -> report.Section:
    """Times the tests in the folder and as a check, prints both; returns them as the doc's section."""
    task = Task.load(TASKS / TASK)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        task.copy_to(root)
        shutil.copy(task.directory / "reference.py", root / task.file)  # fixed: the tests pass
        plan = find_tests(root, root / task.file)
        if plan.command is None:
            raise SystemExit(f"bench (K): {plan.reason}")
        sandbox = CheckSandbox()
        direct: list[float] = []
        checked: list[float] = []
        isolation = None
        for _ in range(runs):
            started = time.perf_counter()
            ran_here = subprocess.run(plan.command, shell=True, cwd=root, capture_output=True, check=False)
            direct.append(time.perf_counter() - started)
            started = time.perf_counter()
            ran = asyncio.run(run_on_copy(sandbox, plan.command, root, True, {}, timeout_s=60))
            checked.append(time.perf_counter() - started)
            if ran_here.returncode != 0:
                raise SystemExit(
                    f"bench (K): the fixed task's tests failed in the folder:\n{ran_here.stdout.decode()}"
                )
            if not ran.passed:
                raise SystemExit(f"bench (K): the fixed task's tests failed as a check:\n{ran.output}")
            isolation = ran.isolation
    extra = median(checked) - median(direct)
    show(f"\n(K) a check's cost on top of its tests ({TASK}, `{plan.command}`; medians of {runs} runs)")
    show(f"  the tests run in the folder:        {median(direct) * 1000:7.0f} ms")
    show(f"  the same as a check ({isolation}):       {median(checked) * 1000:7.0f} ms")
    goal = "met" if extra <= GOAL_EXTRA_S else "NOT met"
    show(
        f"  the check adds {extra * 1000:.0f} ms ({median(checked) / median(direct):.2f}x; goal <= "
        f"{GOAL_EXTRA_S:.0f} s: {goal})"
    )
    return report.Section(
        "bench/check",
        "What a check adds to the tests it runs",
        report.Run.now(threads="-", model="none", figures=f"medians of {runs}"),
        [
            report.Table(
                ("the task's tests", "median", "vs in the folder"),
                [
                    ("run in the folder", report.ms(median(direct) * 1000), "1.00x"),
                    (
                        f"run as a check ({isolation})",
                        report.ms(median(checked) * 1000),
                        report.ratio(median(checked) / median(direct)),
                    ),
                ],
            )
        ],
        about=f'An eval Fix task with its bug fixed ({TASK}): the command `"auto"` finds, run straight in '
        "the folder as a user would, and as a check runs it (a fresh copy of the folder, the sandbox, the "
        "runner's start). No model.",
    )
