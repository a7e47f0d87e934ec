"""Command line of `python -m bench` (`make bench`): the engine's four measurements and their summary
table, then our server against llama-server (versus.py) and the cold prefill speeds."""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from pathlib import Path

from lsp_server.engine import models

from . import checks, rewrite, versus
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


def run(settings: Settings, label: str) -> None:
    binary = find_decode_loop()
    started = time.perf_counter()
    show(f"bench: {label}: {settings.model.name}, medians of N runs; load average {load()} (1/5/15 min)")
    engine = open_engine(settings)
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


PARTS = ("engine", "versus", "backends", "prefill", "typing", "rewrite", "check")


def against_llama_server(plan: versus.Plan, parts: set[str], quick: bool) -> None:
    binary = versus.find_llama_server()
    if binary is None:
        message = f"{versus.SERVER} is missing; run `make llama-server` (or set {versus.OVERRIDE})"
        if quick:  # a smoke run does not build llama.cpp a second time
            show(f"\nbench: skipping versus and prefill: {message}")
            return
        raise SystemExit(f"bench: {message}")
    started = time.perf_counter()
    show(f"\nload average {load()} (1/5/15 min)")
    versus.run(plan, binary, "versus" in parts, "prefill" in parts, "backends" in parts, "typing" in parts)
    show(f"\nran {time.perf_counter() - started:.0f} s; load average now {load()}")


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
        "(the default model), check (K): what a check adds to the tests it runs (no model)",
    )
    parser.add_argument(
        "--rewrite-tasks", help=f"eval tasks for (W), a glob (default: {', '.join(rewrite.DEFAULT_TASKS)})"
    )
    args = parser.parse_args(argv)
    parts = set(args.only or PARTS)
    logging.getLogger("llama_lsp.native").setLevel(logging.ERROR)  # llama.cpp's load warnings are noise here
    if not args.quick:
        model = models.resolve(args.model or models.TEST_MODEL)
        if "engine" in parts:
            run(Settings(model, runs=args.runs or 5), "full run")
        if parts & {"versus", "backends", "prefill", "typing"}:
            against_llama_server(versus.Plan(model, runs=args.runs or 5), parts, quick=False)
        if "rewrite" in parts:
            binary = versus.find_llama_server()
            if binary is None:
                raise SystemExit(f"bench: {versus.SERVER} is missing; run `make llama-server`")
            # Code actions are measured on the model users run them with; minutes per task and way.
            default = models.resolve(args.model or models.DEFAULT_MODEL)
            rewrite.run(default, binary, runs=args.runs or 1, task_glob=args.rewrite_tasks)
        if "check" in parts:
            checks.run(runs=args.runs or 5)
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


if __name__ == "__main__":
    main()
