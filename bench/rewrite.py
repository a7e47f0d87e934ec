"""(W) Rewrites: how fast a code action writes its block with speculative decoding, against our engine
without drafting and against llama-server's own speculative settings, on the same prompts.

For each chosen Document and Fix task of the eval (eval/tasks/), the real code action runs through our
server as `make eval` runs it (the headless client, a fresh server, no checks). Only who answers differs
from row to row:

  ours, drafting off     the local engine with `speculative: false`
  ours, drafting on      the local engine as shipped
  llama-server <how>     our server with `backend` pointing at llama-server started with that drafting
                         (`--spec-type` n-gram types, or `-md` with the 0.5B model as a draft model)

so every row reads the same prompts by construction: our server builds them, with its tools. One
thread each, greedy, `-fa off` for llama-server (its faster CPU setting). Decode speed is the action's
generated tokens over its decode time (llama-server's own `predicted_ms`); a code action's time is its
resolve, from the request to the result, prompt reading included (not the server's start or the model's
load).
"""

from __future__ import annotations

import asyncio
import fnmatch
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness import llama_server, report
from harness.eval_tasks import TASKS, Task
from lsp_server.clients.headless import run_code_action
from lsp_server.engine import models

from .parts import median, show

DEFAULT_TASKS = ("doc_cron", "fix2_semver")
ABOUT = (
    "The eval's Document and Fix actions through our server (a fresh server, no checks); only who answers "
    "differs: our engine with drafting off or on, or llama-server as the remote backend with each of its "
    "drafting settings (`-fa off`). Decode speed is the action's generated tokens over its decode time; "
    "the action's seconds include reading its prompt."
)
THREADS = 1
DRAFT_MODEL = models.TEST_MODEL  # the 0.5B: the same vocabulary as the default 1.5B


@dataclass(frozen=True)
class Way:
    """One way of answering: our engine's settings, or llama-server's options."""

    label: str
    settings: dict[str, Any] | None = None  # ours
    server_options: tuple[str, ...] | None = None  # llama-server


@dataclass
class Result:
    task: str
    tokens_per_s: float
    seconds: float
    n_generated: int
    n_drafted: int
    n_accepted: int


def ways(draft_model: Path | None) -> list[Way]:
    found = [
        Way("ours, drafting off", settings={"speculative": False}),
        Way("ours, drafting on", settings={"speculative": True}),
        Way("llama-server ngram-mod", server_options=("--spec-type", "ngram-mod")),
        Way("llama-server ngram-simple", server_options=("--spec-type", "ngram-simple")),
        Way("llama-server, no drafting", server_options=()),
        Way("llama-server ngram-map-k", server_options=("--spec-type", "ngram-map-k")),
    ]
    if draft_model is not None:
        found.append(
            Way(
                "llama-server -md 0.5B",
                server_options=("-md", str(draft_model), "-td", str(THREADS), "-tbd", str(THREADS)),
            )
        )
    return found


def run_task(name: str, model: Path, options: dict[str, Any], workdir: Path, kind: str = "") -> Result:
    """One code action on a fresh copy of the task (its own kind, or `kind`), answered as `options` say."""
    task = Task.load(TASKS / name)
    kind = kind or task.kind
    project = workdir / f"{name}-{time.monotonic_ns()}"
    project.mkdir(parents=True)
    task.copy_to(project)
    # No checks: this measures writing the block, not the task's tests.
    settings = {
        "model": str(model),
        "threads": THREADS,
        "cacheDir": str(project / ".cache"),
        "verifyCommand": "",
        **options,
    }
    resolved, stats, seconds = asyncio.run(
        run_code_action(
            project,
            project / task.file,
            (task.first_line - 1, task.last_line - 1),
            kind,
            settings,
            problem=task.problem if kind == "fix" else "",
        )
    )
    if isinstance(resolved, str):  # no edit came back: the answers were still written, and timed
        show(f"  ({name}: {resolved[:160]})")
    totals = stats["totals"]
    decode_s = totals["tDecodeMs"] / 1000
    return Result(
        name,
        totals["nGenerated"] / decode_s if decode_s else 0.0,
        seconds,
        totals["nGenerated"],
        totals.get("nDrafted", 0),
        totals.get("nAccepted", 0),
    )


def answer(way: Way, model: Path, tasks: list[str], runs: int, workdir: Path, binary: Path) -> list[Result]:
    if way.settings is not None:
        return [run_task(t, model, way.settings, workdir) for t in tasks for _ in range(runs)]
    assert way.server_options is not None
    server = llama_server.LlamaServer(
        model,
        model.stem,
        workdir / "llama-server-rewrite.log",
        "-c",
        "8192",
        "-np",
        "1",
        *way.server_options,
        binary=binary,
        threads=THREADS,
        flash_attn="off",
    )
    server.start()
    try:
        backend_options = {"backend": {**server.backend(), "timeout": 1800}}
        return [run_task(t, model, backend_options, workdir) for t in tasks for _ in range(runs)]
    finally:
        server.stop()


def run(model: Path, binary: Path, runs: int, task_glob: str | None = None) -> list[report.Section]:
    """Runs (W), prints its table; returns the doc's sections: the ways, and prose with and without drafts."""
    tasks = sorted(p.name for p in TASKS.iterdir() if fnmatch.fnmatch(p.name, task_glob)) if task_glob else []
    tasks = [t for t in tasks if Task.load(TASKS / t).kind in ("fix", "document")] or list(DEFAULT_TASKS)
    try:
        draft_model: Path | None = models.resolve(DRAFT_MODEL)
    except models.ModelError:
        draft_model = None
    show(
        f"\n(W) rewrites: {', '.join(tasks)}; {runs} run(s) each; {model.name}, {THREADS} thread; "
        "decode tok/s is the median over the tasks' actions"
    )
    with tempfile.TemporaryDirectory(prefix="llama-lsp-bench-explain-") as temp:
        # Prose, where drafts rarely match: an Explain of the first task, which writes words, not code;
        # off and on take turns, so that a busier minute of the machine does not fall on one of them.
        speeds: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(runs):
            for label, on in (("off", False), ("on", True)):
                result = run_task(tasks[0], model, {"speculative": on}, Path(temp), "explain")
                speeds[label].append(result.tokens_per_s)
        prose = {label: median(found) for label, found in speeds.items()}
    show(
        f"\nprose (Explain of {tasks[0]}): drafting off {prose['off']:.1f} tok/s, on {prose['on']:.1f} tok/s"
    )
    table = [("way", "decode tok/s", "vs off", "action s", "generated", "drafted", "accepted")]
    medians: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="llama-lsp-bench-rewrite-") as temp:
        for way in ways(draft_model if draft_model != model else None):
            try:
                results = answer(way, model, tasks, runs, Path(temp), binary)
            except (RuntimeError, OSError) as exc:  # a llama-server option this build lacks, say
                show(f"  {way.label}: failed: {str(exc)[:300]}")
                continue
            speed = median([r.tokens_per_s for r in results])
            medians[way.label] = speed
            off = medians.get("ours, drafting off")
            table.append(
                (
                    way.label,
                    f"{speed:.1f}",
                    f"{speed / off:.2f}x" if off else "-",
                    f"{median([r.seconds for r in results]):.0f}",
                    str(sum(r.n_generated for r in results)),
                    str(sum(r.n_drafted for r in results)),
                    str(sum(r.n_accepted for r in results)),
                )
            )
            show(
                f"  {way.label}: "
                + "; ".join(f"{r.task} {r.tokens_per_s:.1f} tok/s, {r.seconds:.0f} s" for r in results)
            )
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    show("")
    for row in table:
        show(
            "  ".join(
                [row[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True))]
            )
        )
    run_facts = report.Run.now(
        threads=THREADS,
        model=model,
        figures=f"{runs} run(s) of each task, medians over the tasks' actions",
        notes=f"tasks: {', '.join(tasks)}",
    )
    name = report.key_part(model.name)
    sections = [
        report.Section(
            f"bench/rewrite/{name}",
            f"Code actions: speculative decoding, ours and llama-server's ({model.stem})",
            run_facts,
            [report.Table(table[0], table[1:])],
            about=ABOUT,
        ),
        report.Section(
            f"bench/prose/{name}",
            f"Prose with drafting on and off ({model.stem})",
            replace(
                run_facts, figures=f"medians of {runs}, off and on taking turns", notes=f"task: {tasks[0]}"
            ),
            [
                report.Table(
                    ("answer", "drafting off", "drafting on", "on / off"),
                    [
                        (
                            f"Explain of {tasks[0]}",
                            f"{prose['off']:.1f} tok/s",
                            f"{prose['on']:.1f} tok/s",
                            f"{prose['on'] / prose['off']:.2f}x" if prose["off"] else "-",
                        )
                    ],
                )
            ],
            about="An answer in words, where drafts rarely match: what drafting costs when it has nothing "
            "to copy.",
        ),
    ]
    ours = medians.get("ours, drafting on")
    off = medians.get("ours, drafting off")
    show(f"goal: prose with drafting on >= 0.95x off: {prose['on'] / prose['off']:.2f}x")
    theirs = {k: v for k, v in medians.items() if k.startswith("llama-server") and "no drafting" not in k}
    if ours and off:
        show(f"goal: drafting on >= 2.5x off: {ours / off:.2f}x")
    if ours and theirs:
        best = max(theirs, key=lambda k: theirs[k])
        show(f"goal: ours >= 1.0x llama-server's best drafting ({best}): {ours / theirs[best]:.2f}x")
    return sections
