"""`make eval`: how often the code actions' edits are right, on tasks the model has not been tuned to.

Each task in eval/tasks/ is a small module with a pytest test that decides (see eval/README.md). For
every task the real server runs the action through the headless client's LSP path, as an editor does
(one server per task, so each starts with a fresh cache), the returned WorkspaceEdit is applied to a
temporary copy of the task, and the copy is checked:

- fix: an edit came back, it applies, the file parses, and the task's tests pass;
- document: also the code is unchanged (the syntax tree without docstrings is the same), the target
  got a docstring, and the tests still pass;
- tests: the created test file parses, its tests are collected and pass on the module, and how many of
  the task's mutants (realistic bugs) they catch.

The model's code runs only inside those temporary copies. Prints one row per task and the totals.

Each kind whose tasks the run covered all of (every Document task, every Fix task, ...) replaces its
section of docs/quality.md, keyed by the kind, the check (`--verify`) and the model (harness/report.py):
a run of some of a kind's tasks (`--tasks 'fix_*'`) writes nothing for that kind, since its share of
right edits would read as the whole's. `--no-docs` writes nothing.

`--split` runs the fix tasks split across two files (harness/eval_tasks.split_module): the definition
holding the bug stays, the module's other definitions move to `<module>_support.py`, so that what the
fixed code uses is defined in another file, as the workspace index's definitions in the prompt are
for. A task whose split changes what its tests decide is left out, and said so. `--no-index` turns the
server's workspace index off (`codebaseIndex` false): no definitions from other files in the prompt.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.uris import to_fs_path

from harness import report as docs
from harness.eval_tasks import TASKS, Task
from lsp_server.assistant.edits import unified_diff
from lsp_server.assistant.rewrite import python_code_changed
from lsp_server.clients.ask import apply_workspace_edit
from lsp_server.clients.headless import run_code_action
from lsp_server.engine import models

PYTEST_TIMEOUT_S = 120
ACTION_TIMEOUT_S = 1800


@dataclass
class Outcome:
    task: str
    kind: str
    edit: bool = False  # the action returned an edit
    applies: bool = False
    parses: bool = False
    passed: bool = False  # fix: tests pass; document: code kept + docstring + tests pass; tests: tests pass
    detail: str = ""  # why not, or what was measured (mutants caught)
    seconds: float = 0.0  # the whole task: the server's start, the model's load, the action
    action_seconds: float = 0.0  # the action alone: its request to its result
    n_generated: int = 0
    n_evaluated: int = 0
    verified: bool | None = None  # the server's own check (with --verify): None when nothing was checked
    checks: int = 0  # how many times the server ran it
    mutants: int = 0  # tests: the task's mutants, and how many its passing tests catch
    caught: int = 0
    diff: str = ""  # what the edit changes, for reading the failures afterwards (--json)


def verify_command(task: Task, verify: str) -> str:
    """What `--verify` sets as verifyCommand: the task's tests, or the created test file for Write tests;
    `--verify auto` leaves finding them to the server.

    The server runs it on its own copy of the task; the tests that decide the row run afterwards here.
    """
    if verify == "auto":
        return "auto"
    pytest = f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {sys.executable} -m pytest -q -p no:cacheprovider"
    return f"{pytest} {{file}}" if task.kind == "tests" else pytest


async def run_action(
    task: Task,
    workdir: Path,
    model: str,
    threads: int,
    verify: str | None,
    server_log: bool,
    warm_first: bool,
    index: bool = True,
) -> tuple[dict[str, Any] | str, dict, float]:
    """Starts a server in workdir, resolves the task's code action; returns (resolved action or the
    server's error, stats, seconds from the action's request to its result). A split task (two files)
    with the index on is asked once the index is built, so that its prompt has what the code uses
    from the other file (the index never holds an action up: it may still be building)."""
    options: dict[str, Any] = {"model": model, "threads": threads, "cacheDir": str(workdir.parent / "cache")}
    options["codebaseIndex"] = index
    options["verifyCommand"] = verify_command(task, verify) if verify else ""  # "": unchecked, not "auto"
    return await run_code_action(
        workdir,
        workdir / task.file,
        (task.first_line - 1, task.last_line - 1),
        task.kind,
        options,
        problem=task.problem if task.kind == "fix" else "",
        timeout_s=ACTION_TIMEOUT_S,
        server_log=server_log,
        warm_first=warm_first,
        wait_for_index=index and task.texts is not None,
    )


def pytest(workdir: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    # The project's own pytest plugins (pytest-asyncio, pytest-lsp) have nothing to do with the tasks.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments]
    try:
        return subprocess.run(
            command, cwd=workdir, env=env, capture_output=True, text=True, timeout=PYTEST_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, 124, "", f"pytest timed out after {PYTEST_TIMEOUT_S} s")


def split_check(task: Task) -> tuple[Task | None, str]:
    """`task` split across two files (Task.as_split), if the split decides what the task did: its tests
    fail on the split module with the bug and pass on it with the definition from reference.py. Returns
    (the split task, "") or (None, why it is left out)."""
    try:
        split = task.as_split()
    except ValueError as exc:
        return None, str(exc)
    assert split.fixed is not None
    with tempfile.TemporaryDirectory(prefix=f"llama-lsp-split-{task.name}-") as temp:
        workdir = Path(temp)
        split.copy_to(workdir)
        before = pytest(workdir)
        if before.returncode != 1:
            return None, f"the bug's tests do not fail once split ({last_line(before)})"
        (workdir / split.file).write_text(split.fixed, encoding="utf-8")
        after = pytest(workdir)
        if after.returncode != 0:
            return None, f"the fix's tests do not pass once split ({last_line(after)})"
    return split, ""


def split_tasks(tasks: list[Task]) -> tuple[list[Task], dict[str, str]]:
    """The fix tasks among `tasks` split (split_check), two at a time; and those left out, with why."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        checked = list(pool.map(split_check, [task for task in tasks if task.kind == "fix"]))
    fixes = [task for task in tasks if task.kind == "fix"]
    kept = [split for split, _ in checked if split is not None]
    left_out = {task.name: why for task, (split, why) in zip(fixes, checked, strict=True) if split is None}
    return kept, left_out


def last_line(result: subprocess.CompletedProcess[str]) -> str:
    """pytest's summary line ("1 failed, 4 passed in 0.05s"), or the last thing it said."""
    lines = result.stdout.strip().splitlines() or result.stderr.strip().splitlines()
    return lines[-1][:120] if lines else f"exit {result.returncode}"


def find_symbol(tree: ast.Module, symbol: str) -> ast.AST | None:
    scope: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in symbol.split("."):
        node = next(
            (
                n
                for n in scope
                if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        scope = node.body  # type: ignore[attr-defined]
    return node


def check(task: Task, workdir: Path, resolved: dict[str, Any], outcome: Outcome) -> None:
    edit = resolved.get("edit")
    if not edit:
        outcome.detail = "no edit"
        return
    outcome.edit = True
    module = workdir / task.file
    before = module.read_text(encoding="utf-8")
    try:
        after = apply_workspace_edit(edit, {module.as_uri(): before})
    except Exception as exc:
        outcome.detail = f"does not apply: {exc}"
        return
    for uri, text in after.items():
        path = Path(to_fs_path(uri) or uri)
        if not path.resolve().is_relative_to(workdir.resolve()):
            outcome.detail = f"edits outside the task: {path}"
            return
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        outcome.diff += unified_diff(path.resolve().relative_to(workdir.resolve()).as_posix(), old, text)
        path.write_text(text, encoding="utf-8")
    outcome.applies = True
    try:
        for text in after.values():
            ast.parse(text)
    except SyntaxError as exc:
        outcome.detail = f"does not parse: {exc.msg} (line {exc.lineno})"
        return
    outcome.parses = True
    if task.kind == "fix":
        result = pytest(workdir)
        outcome.passed = result.returncode == 0
        outcome.detail = last_line(result)
    elif task.kind == "document":
        check_document(task, workdir, before, outcome)
    else:
        check_tests(task, workdir, after, outcome)


def check_document(task: Task, workdir: Path, before: str, outcome: Outcome) -> None:
    after = (workdir / task.file).read_text(encoding="utf-8")
    if python_code_changed(before, after):
        outcome.detail = "the code changed"
        return
    target = find_symbol(ast.parse(after), task.symbol)
    if target is None or ast.get_docstring(target) is None:  # type: ignore[arg-type]
        outcome.detail = f"{task.symbol} has no docstring"
        return
    result = pytest(workdir)
    outcome.passed = result.returncode == 0
    outcome.detail = "code kept, docstring added" if outcome.passed else last_line(result)


def check_tests(task: Task, workdir: Path, after: dict[str, str], outcome: Outcome) -> None:
    created = [
        Path(to_fs_path(uri) or uri) for uri in after if Path(to_fs_path(uri) or uri).name != task.file
    ]
    if not created:
        outcome.detail = "no test file created"
        return
    names = [str(path.relative_to(workdir)) for path in created]
    result = pytest(workdir, *names)
    collected = "passed" in result.stdout or "failed" in result.stdout
    outcome.passed = result.returncode == 0 and collected
    if not outcome.passed:
        outcome.detail = last_line(result)
        return
    module = workdir / task.file
    original = module.read_text(encoding="utf-8")
    mutants = task.mutated(original)
    caught = 0
    for mutated in mutants:
        module.write_text(mutated, encoding="utf-8")
        caught += pytest(workdir, *names).returncode != 0
    module.write_text(original, encoding="utf-8")
    outcome.mutants, outcome.caught = len(mutants), caught
    outcome.detail = f"{last_line(result)}; caught {caught} of {len(mutants)} mutants"


def run_task(
    task: Task,
    model: str,
    threads: int,
    verify: str | None,
    server_log: bool = False,
    warm_first: bool = False,
    index: bool = True,
) -> Outcome:
    outcome = Outcome(task.name, task.kind)
    with tempfile.TemporaryDirectory(prefix=f"llama-lsp-eval-{task.name}-") as temp:
        workdir = Path(temp) / "project"
        workdir.mkdir()
        task.copy_to(workdir)
        started = time.monotonic()
        try:
            resolved, stats, outcome.action_seconds = asyncio.run(
                run_action(task, workdir, model, threads, verify, server_log, warm_first, index)
            )
        except (JsonRpcException, asyncio.TimeoutError, StopIteration) as exc:
            outcome.seconds = outcome.action_seconds = time.monotonic() - started  # no finer figure
            outcome.detail = f"no edit: {getattr(exc, 'message', None) or type(exc).__name__}"[:200]
            return outcome
        outcome.seconds = time.monotonic() - started
        outcome.n_generated = stats["totals"]["nGenerated"]
        outcome.n_evaluated = stats["totals"]["nEvaluated"]
        if isinstance(resolved, str):  # the server's error: no edit came back
            outcome.detail = f"no edit: {resolved}"[:200]
            return outcome
        verification = (resolved.get("data") or {}).get("verification") or {}
        outcome.verified, outcome.checks = verification.get("passed"), verification.get("attempts", 0)
        check(task, workdir, resolved, outcome)
    return outcome


def yes(value: bool) -> str:
    return "yes" if value else "-"


def print_table(outcomes: list[Outcome]) -> None:
    header = (
        "task",
        "kind",
        "edit",
        "applies",
        "parses",
        "passes",
        "checked",
        "s",
        "action s",
        "gen",
        "eval",
        "detail",
    )
    rows = [
        (
            o.task,
            o.kind,
            yes(o.edit),
            yes(o.applies),
            yes(o.parses),
            yes(o.passed),
            "-" if o.verified is None else f"{'passed' if o.verified else 'failed'} ({o.checks})",
            f"{o.seconds:.0f}",
            f"{o.action_seconds:.0f}",
            str(o.n_generated),
            str(o.n_evaluated),
            o.detail[:70],
        )
        for o in outcomes
    ]
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header) - 1)]
    for row in [header, *rows]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)), row[-1])
    print()
    for kind in ("fix", "document", "tests", None):
        chosen = [o for o in outcomes if kind is None or o.kind == kind]
        if not chosen:
            continue
        n = len(chosen)
        seconds = statistics.median(o.seconds for o in chosen)
        action_seconds = statistics.median(o.action_seconds for o in chosen)
        print(
            f"{kind or 'all':<9} {n:>2} tasks: edit {sum(o.edit for o in chosen)}/{n}, "
            f"applies {sum(o.applies for o in chosen)}/{n}, parses {sum(o.parses for o in chosen)}/{n}, "
            f"passes {sum(o.passed for o in chosen)}/{n} ({sum(o.passed for o in chosen) / n:.0%}), "
            f"median {seconds:.0f} s (the action alone {action_seconds:.0f} s)"
            + (
                f", said verified {sum(o.verified is True for o in chosen)}/{n}"
                if any(o.verified is not None for o in chosen)
                else ""
            )
        )


def main() -> int:
    parser = argparse.ArgumentParser(prog="make eval", description=__doc__)
    parser.add_argument("--model", default=models.DEFAULT_MODEL, help="a model name or a GGUF path")
    parser.add_argument("--threads", type=int, default=0, help="engine threads (0: the server's default)")
    parser.add_argument("--tasks", default="*", help="only the tasks whose directory matches this glob")
    parser.add_argument("--json", type=Path, help="also write the outcomes to this file")
    parser.add_argument(
        "--verify",
        nargs="?",
        const="task",
        choices=["task", "auto"],
        help="set verifyCommand to the task's tests, so that the server checks and retries its edits; "
        '`--verify auto`: to "auto", which finds them',
    )
    parser.add_argument(
        "--server-log",
        action="store_true",
        help="show each server's log on stderr (why each block was refused, each check)",
    )
    parser.add_argument(
        "--write-tests-from-fixes",
        action="store_true",
        help="run Write tests on the chosen fix tasks instead: on the fixed module, for the function that "
        "held the bug, which is the mutant its tests should catch",
    )
    parser.add_argument(
        "--warm-first",
        action="store_true",
        help="ask for each action once the server has read its file into the cache, as in an editor where "
        "the file has been open a while (the action's time then leaves out reading the file)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="tasks run at once, each with its own server (mind --threads)"
    )
    parser.add_argument(
        "--split",
        action="store_true",
        help="run the fix tasks split across two files: the definition holding the bug in the module, its "
        "other definitions in <module>_support.py (those whose split changes what their tests decide are "
        "left out, and listed)",
    )
    parser.add_argument(
        "--no-index",
        action="store_true",
        help="turn the server's workspace index off (codebaseIndex false): no definitions from other files "
        "in a Fix's prompt",
    )
    parser.add_argument(
        "--no-docs",
        action="store_true",
        help="write nothing to docs/quality.md (by default each kind whose tasks all ran replaces its "
        "section there)",
    )
    args = parser.parse_args()
    tasks = [Task.load(d) for d in sorted(TASKS.glob(args.tasks)) if (d / "task.json").is_file()]
    if args.write_tests_from_fixes:
        tasks = [task.as_write_tests() for task in tasks if task.kind == "fix"]
    left_out: dict[str, str] = {}
    if args.split:
        tasks, left_out = split_tasks(tasks)
        print(f"split across two files: {len(tasks)} fix tasks kept, {len(left_out)} left out", flush=True)
        for name, why in left_out.items():
            print(f"  left out {name}: {why}", flush=True)
    if not tasks:
        print(f"no tasks match {args.tasks!r} in {TASKS}", file=sys.stderr)
        return 2
    models.resolve(args.model)  # fails early, naming the install command, if the model is missing
    checked = {None: "", "task": ", edits checked with the task's tests (verifyCommand)"}.get(
        args.verify, ', edits checked with verifyCommand "auto"'
    )
    index = "" if not args.no_index else ", the workspace index off (codebaseIndex false)"
    print(f"{len(tasks)} tasks, model {args.model}{checked}{index}", flush=True)
    outcomes = []

    def run(task: Task) -> Outcome:
        return run_task(
            task, args.model, args.threads, args.verify, args.server_log, args.warm_first, not args.no_index
        )

    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        finished = pool.map(run, tasks)
        for task, outcome in zip(tasks, finished, strict=True):
            report(task, outcome)
            outcomes.append(outcome)
    print()
    print_table(outcomes)
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2))
    if not args.no_docs:
        every = [Task.load(d) for d in sorted(TASKS.iterdir()) if (d / "task.json").is_file()]
        if args.write_tests_from_fixes:
            every = [task.as_write_tests() for task in every if task.kind == "fix"]
        if args.split:  # the split-able ones: a task left out counts as run
            every = [task for task in every if task.kind == "fix" and task.name not in left_out]
        complete = complete_kinds(outcomes, every)
        docs.write(
            docs.QUALITY,
            doc_sections([o for o in outcomes if o.kind in complete], args, left_out),
            "`make eval`",
        )
        partial = sorted({o.kind for o in outcomes} - complete)
        if partial:
            print(
                f"docs/quality.md: nothing written for {', '.join(partial)}: not every task of the kind ran"
            )
    return 0


KIND_TITLES = {"fix": "Fix", "document": "Document", "tests": "Write tests"}
CHECK_TITLES = {
    None: "unchecked",
    "task": "checked with the task's own tests",
    "auto": 'checked with `"auto"` (the default)',
}
JUDGED = {
    "fix": "Right: an edit came back, it applies, parses, and the task's tests pass.",
    "document": "Right: every line of code is kept (the syntax tree without docstrings is the same), the "
    "symbol has a docstring, and the task's tests still pass.",
    "tests": "Right: the new test file is collected and passes on the module as it is; a mutant is one of "
    "the task's realistic bugs, caught when the file's tests fail on it.",
}
ABOUT = (
    "Each task is a small module written for this project (eval/README.md). One server per task, with a "
    "fresh cache; the action is resolved as an editor resolves it and its WorkspaceEdit applied to a copy. "
    "Said verified: the server's own check passed. Seconds: the whole task (the server's start, the "
    "model's load, the action), and the action alone, from its request to its result."
)


def complete_kinds(outcomes: list[Outcome], every: list[Task]) -> set[str]:
    """The kinds whose every task ran."""
    ran = {o.task for o in outcomes}
    return {
        kind for kind in {o.kind for o in outcomes} if all(t.name in ran for t in every if t.kind == kind)
    }


def doc_sections(
    outcomes: list[Outcome], args: argparse.Namespace, left_out: dict[str, str] | None = None
) -> list[docs.Section]:
    """docs/quality.md's section for each kind among outcomes: its totals, the tasks whose edit was right."""
    sections = []
    from_fixes = args.write_tests_from_fixes
    split = getattr(args, "split", False)
    no_index = getattr(args, "no_index", False)
    for kind, title in KIND_TITLES.items():
        chosen = [o for o in outcomes if o.kind == kind]
        if not chosen:
            continue
        label = "tests-from-fixes" if from_fixes else "fix-split" if split else kind
        key = f"eval/{label}/{'unchecked' if args.verify is None else args.verify}"
        if no_index:
            key += "/no-index"
        if args.model != models.DEFAULT_MODEL:
            key += f"/{docs.key_part(args.model)}"
        if from_fixes:
            title = "Write tests on the Fix tasks' fixed modules (the bug is the mutant)"
        if split:
            title = "Fix, the tasks split across two files (the other definitions in `<module>_support.py`)"
            title += (
                ", the workspace index off (no definitions from other files in the prompt)"
                if no_index
                else ", the definitions from other files in the prompt"
            )
        elif no_index:
            title += ", the workspace index off"
        header = [
            "tasks",
            "an edit",
            "applies",
            "parses",
            "right",
            "said verified",
            "median s",
            "median s, action",
        ]
        n = len(chosen)
        passed = sum(o.passed for o in chosen)
        row = [
            str(n),
            str(sum(o.edit for o in chosen)),
            str(sum(o.applies for o in chosen)),
            str(sum(o.parses for o in chosen)),
            f"{passed} ({passed / n:.0%})",
            str(sum(o.verified is True for o in chosen)) if args.verify else "-",
            f"{statistics.median(o.seconds for o in chosen):.0f}",
            f"{statistics.median(o.action_seconds for o in chosen):.0f}",
        ]
        if kind == "tests":
            header.append("catch a mutant")
            row.append(str(sum(o.passed and o.caught > 0 for o in chosen)))
        notes = [
            "asked once the file was in the cache (--warm-first)" if args.warm_first else "asked cold",
            f"{args.jobs} tasks at once" if args.jobs > 1 else "one task at a time",
        ]
        right = ", ".join(o.task for o in chosen if o.passed) or "none"
        lines = [f"Right: {right}."]
        if split:
            lines.append(
                "The definitions from other files (related.used_definitions, from the workspace index's "
                + (
                    "symbol table) were not in the prompt: `codebaseIndex` false."
                    if no_index
                    else "symbol table) were in the prompt where the fixed code uses a function or "
                    "class of the other file: `codebaseIndex` on, each action asked once the index was "
                    "built."
                )
            )
            if left_out:
                lines.append(
                    f"Left out, {len(left_out)} of the {n + len(left_out)} Fix tasks: "
                    + "; ".join(f"{name} ({why})" for name, why in sorted(left_out.items()))
                    + "."
                )
        sections.append(
            docs.Section(
                key,
                f"{title}, {CHECK_TITLES[args.verify]}",
                docs.Run.now(
                    threads=args.threads,
                    model=args.model,
                    figures="one run of each task",
                    notes="; ".join(notes),
                ),
                [docs.Table(header, [row])],
                about=f"{JUDGED[kind]} {ABOUT}",
                lines=lines,
            )
        )
    return sections


def report(task: Task, outcome: Outcome) -> None:
    """One line as each task finishes (in order), so that a long run shows its progress."""
    verdict = "passes" if outcome.passed else "fails"
    checked = (
        ""
        if outcome.verified is None
        else f" [check {'passed' if outcome.verified else 'failed'}, {outcome.checks} runs]"
    )
    seconds = f"{outcome.seconds:.0f} s, the action {outcome.action_seconds:.0f} s"
    print(f"  {task.name}: {verdict} ({seconds}){checked} {outcome.detail}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
