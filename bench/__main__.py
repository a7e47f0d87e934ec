"""Command line of `python -m bench` (`make bench`): the engine's four measurements and their summary
table, then our server against llama-server (versus.py) and the cold prefill speeds, what a check
adds (checks.py), what the workspace index costs (index.py) and next-edit suggestions (next_edit.py).

Each part that runs replaces its own section of docs/performance.md (harness/report.py), keyed by the
part and the model, as soon as it is done: `--only` writes only the parts it runs, `--quick` (a random
model) and `--no-docs` write nothing."""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

from harness import report
from lsp_server.engine import models

from . import checks, completion, index, mcp, next_edit, rewrite, versus
from .baseline import find_decode_loop
from .parts import (
    Row,
    Settings,
    big_document,
    decode_speed,
    follow_up_latency,
    open_engine,
    restart_latency,
    show,
    slots_prefill,
)


def summary(rows: list[Row]) -> None:
    table = [("measurement", "N", "ours", "reference", "ratio", "goal")]
    table += [(r.label, str(r.runs), r.ours, r.reference, r.ratio, r.goal) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(5)]
    show("")
    for line in table:
        cells = [line[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(line[1:5], widths[1:], strict=True)]
        show("  ".join([*cells, line[5]]).rstrip())


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


ENGINE_ABOUT = (
    "In-process, through the engine alone: (a) a follow-up question on a 2,000-token document with its "
    "slot warm, against the same prompt on a cleared engine; (b) decode speed against llama.cpp's plain "
    "decode loop (bench/baseline.py) on the same prompt and threads; (c) prompt tokens evaluated by 15 "
    "interleaved requests on three files, with 3 slots against 1 (a count, one run); (d) the follow-up "
    "after the slots were saved, the engine closed, reopened and restored, against cold."
)


def run(settings: Settings, label: str) -> report.Section:
    """The four measurements and their summary; returns the summary as the doc's section."""
    binary = find_decode_loop()
    started = time.perf_counter()
    show(f"bench: {label}: {settings.model.name}, medians of N runs; load average {load()} (1/5/15 min)")
    engine = open_engine(settings)
    threads = int(engine.info()["n_threads"])
    try:
        text = big_document(engine, settings)
        # Order: (b) and (c) first; (a) leaves one warm slot that (d) saves and restores.
        b = decode_speed(engine, binary, settings)
        c = slots_prefill(engine, settings)
        a = follow_up_latency(engine, text, settings)
        engine, d = restart_latency(engine, text, settings)
    finally:
        engine.close()
    summary([a, b, c, d])
    show(
        f"\nran {time.perf_counter() - started:.0f} s; load average now {load()}. Shared machine: times are "
        "medians and move with whatever else runs; (c) is a token count and does not."
    )
    return report.Section(
        f"bench/engine/{report.key_part(settings.model.name)}",
        f"The engine: follow-ups, decode speed, slots, restarts ({settings.model.stem})",
        report.Run.now(threads=threads, model=settings.model, figures=f"medians of {settings.runs}"),
        [
            report.Table(
                ("measurement", "N", "ours", "reference", "ratio"),
                [(r.label, str(r.runs), r.ours, r.reference, r.ratio) for r in (a, b, c, d)],
            )
        ],
        about=ENGINE_ABOUT,
    )


PARTS = ("engine", "versus", "backends", "prefill", "typing", "rewrite", "check", "index", "next-edit", "mcp")


def against_llama_server(plan: versus.Plan, parts: set[str], quick: bool) -> list[report.Section]:
    binary = versus.find_llama_server()
    if binary is None:
        message = f"{versus.SERVER} is missing; run `make llama-server` (or set {versus.OVERRIDE})"
        if quick:  # a smoke run does not build llama.cpp a second time
            show(f"\nbench: skipping versus and prefill: {message}")
            return []
        raise SystemExit(f"bench: {message}")
    started = time.perf_counter()
    show(f"\nload average {load()} (1/5/15 min)")
    sections = versus.run(
        plan, binary, "versus" in parts, "prefill" in parts, "backends" in parts, "typing" in parts
    )
    show(f"\nran {time.perf_counter() - started:.0f} s; load average now {load()}")
    return sections


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="smoke run on a tiny random model (numbers mean nothing)"
    )
    parser.add_argument(
        "--runs",
        type=int,
        help="runs behind each median (default 5; with --quick 2, and 1 for versus and prefill)",
    )
    parser.add_argument(
        "--model",
        help=f"model name or GGUF path (default: {models.TEST_MODEL}; for rewrite {models.DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--only",
        choices=PARTS,
        action="append",
        help="run only this part (repeatable): engine (a)-(d), versus (A)-(R), backends (A) through our "
        "server, local and on llama-server, prefill, typing (inline completion against /infill), rewrite "
        "(W): a code action's block with and without drafting, and on llama-server's drafting settings "
        "(the default model), check (K): what a check adds to the tests it runs (no model), index (I): the "
        "workspace index's build, reload, update, query and memory at 1 thread on the standard library, and "
        "a chat's first token while it builds, next-edit (N): a suggestion's latency on a warm file at 1 "
        "thread against llama-server sent the same prompts, and completion and chat with suggestions off "
        "and on (the test model, or --model; 5-15 minutes a model on 2 cores), mcp (M): a chat's first "
        "token with the published MCP servers of eval-mcp configured, against none (`make published-mcp`)",
    )
    parser.add_argument(
        "--rewrite-tasks", help=f"eval tasks for (W), a glob (default: {', '.join(rewrite.DEFAULT_TASKS)})"
    )
    parser.add_argument(
        "--no-docs",
        action="store_true",
        help=f"write nothing to {report.PERFORMANCE.relative_to(report.ROOT)} (by default each part that "
        "runs replaces its own section there; --quick never writes)",
    )
    args = parser.parse_args(argv)
    parts = set(args.only or PARTS)
    logging.getLogger("llama_lsp.native").setLevel(logging.ERROR)  # llama.cpp's load warnings are noise here

    def document(*sections: report.Section) -> None:
        if not args.no_docs:
            report.write(report.PERFORMANCE, sections, "`make bench`")

    if not args.quick:
        model = models.resolve(args.model or models.TEST_MODEL)
        if "engine" in parts:
            document(run(Settings(model, runs=args.runs or 5), "full run"))
        if parts & {"versus", "backends", "prefill", "typing"}:
            document(*against_llama_server(versus.Plan(model, runs=args.runs or 5), parts, quick=False))
        if "typing" in parts:  # other files in the prompt, ours off and on (no llama-server)
            with tempfile.TemporaryDirectory() as tmp:
                document(completion.run_other_files(versus.Plan(model, runs=1), Path(tmp)))
        if "rewrite" in parts:
            binary = versus.find_llama_server()
            if binary is None:
                raise SystemExit(f"bench: {versus.SERVER} is missing; run `make llama-server`")
            # Code actions are measured on the model users run them with; minutes per task and way.
            default = models.resolve(args.model or models.DEFAULT_MODEL)
            document(*rewrite.run(default, binary, runs=args.runs or 1, task_glob=args.rewrite_tasks))
        if "check" in parts:
            document(checks.run(runs=args.runs or 5))
        if "index" in parts:
            document(index.run(model, runs=args.runs or index.CHAT_RUNS))
        if "next-edit" in parts:
            binary = versus.find_llama_server()
            if binary is None:
                raise SystemExit(f"bench: {versus.SERVER} is missing; run `make llama-server`")
            document(*next_edit.run(model, binary))
        if "mcp" in parts:
            document(mcp.run(model, runs=args.runs or mcp.RUNS))
        return
    from harness.tiny_model import write_tiny_model  # needs the [test] extra (gguf)

    with tempfile.TemporaryDirectory() as tmp:
        model = write_tiny_model(Path(tmp) / "tiny.gguf", fim=True)  # FIM tokens: `typing` completes
        if "engine" in parts:
            quick = Settings(
                model, runs=args.runs or 2, doc_tokens=1000, decode_tokens=32, answer_tokens=8, goals=False
            )
            run(quick, "quick smoke run (tiny random model)")
        if parts & {"versus", "backends", "prefill", "typing"}:
            plan = versus.Plan(
                model,
                runs=args.runs or 1,
                read_s=0.1,
                edit_s=0.1,
                open_s=0.1,
                reopen_s=0.1,
                answer_tokens=8,
                chunks=(64, 512),
                goals=False,
            )
            against_llama_server(plan, parts, quick=True)
        if "check" in parts:
            checks.run(runs=args.runs or 2)
        if "index" in parts:  # a small corpus, no chat: a smoke run of the index's figures
            index.run(None, sample_files=100, copies=2)
        if "next-edit" in parts:  # every step on the tiny model, two lines typed; no llama-server: no (N2)
            next_edit.run(model, versus.find_llama_server(), quick=True)


if __name__ == "__main__":
    main()
