"""The four measurements. Each prints its details as it goes and returns one row of the summary table.

(a) follow-up latency, warm slot vs cleared engine; (b) decode speed, engine vs llama.cpp's plain loop;
(c) prefill work on an interleaved three-document workload, 3 slots vs 1; (d) latency after a restart
with saved slots vs cold.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_server.engine.native import NativeEngine

from .baseline import decode_loop
from .workload import FOLLOW_UP, QUESTIONS, ROOT, Messages, chat, count_tokens, document

SLOT = "doc"  # the conversation key of (a) and (d)
DOC_NAME = "lsp_server.py"


@dataclass(frozen=True)
class Settings:
    model: Path
    runs: int  # repetitions behind each timed median
    doc_tokens: int = 2000  # (a), (d)
    small_doc_tokens: int = 400  # (c)
    decode_prompt_tokens: int = 200  # (b)
    decode_tokens: int = 128  # (b)
    answer_tokens: int = 16  # each chat turn's max_tokens
    n_ctx: int = 4096  # per slot
    goals: bool = True  # False on the tiny model, where the goal lines mean nothing


@dataclass(frozen=True)
class Row:
    label: str
    runs: int
    ours: str
    reference: str
    ratio: str
    goal: str = ""


def open_engine(settings: Settings, n_slots: int = 3) -> NativeEngine:
    return NativeEngine(settings.model, {"n_ctx": settings.n_ctx, "n_slots": n_slots})


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def ms(values: Sequence[float]) -> str:
    return " ".join(f"{v:,.0f}" for v in values) + " ms"


def goal(settings: Settings, met: bool, text: str) -> str:
    if not settings.goals:
        return f"({text}: n/a)"
    return f"{text}: {'met' if met else 'MISSED'}"


def show(line: str) -> None:
    print(line, flush=True)


# ---- (a) and (d): time to first token of a follow-up turn ----------------------------------------


def big_document(engine: NativeEngine, settings: Settings) -> str:
    return document(engine, sorted((ROOT / "lsp_server").rglob("*.py")), settings.doc_tokens)


def first_turn(engine: NativeEngine, text: str, run: int, settings: Settings) -> Messages:
    """Answers a first question in SLOT; returns the follow-up turn's messages."""
    question = QUESTIONS[run % len(QUESTIONS)]
    request = {"messages": chat(DOC_NAME, text, [question]), "max_tokens": settings.answer_tokens}
    answer = engine.generate({**request, "slot": SLOT})
    return chat(DOC_NAME, text, [question, FOLLOW_UP], [answer["content"]])


def first_token(engine: NativeEngine, messages: Messages) -> dict[str, Any]:
    stats: dict[str, Any] = engine.generate({"messages": messages, "max_tokens": 1, "slot": SLOT})["stats"]
    return stats


def cold_first_token(engine: NativeEngine, messages: Messages) -> dict[str, Any]:
    engine.clear()
    stats = first_token(engine, messages)
    if stats["n_reused"]:
        raise RuntimeError(f"a request after clear() reused {stats['n_reused']} tokens")
    return stats


def report_ttft(name: str, runs: Sequence[dict[str, Any]]) -> float:
    times = [s["t_first_token_ms"] for s in runs]
    evaluated = median([s["n_evaluated"] for s in runs])
    show(f"    {name}: median {median(times):,.0f} ms  (runs {ms(times)}; evaluated {evaluated:.0f} tokens)")
    return median(times)


def follow_up_latency(engine: NativeEngine, text: str, settings: Settings) -> Row:
    engine.clear()
    warm: list[dict[str, Any]] = []
    cold: list[dict[str, Any]] = []
    for run in range(settings.runs):
        messages = first_turn(engine, text, run, settings)
        warm.append(first_token(engine, messages))
        cold.append(cold_first_token(engine, messages))
    show(
        f"(a) time to first token, follow-up turn: {count_tokens(engine, text):,}-token document, "
        f"prompt ~{median([s['n_prompt'] for s in cold]):,.0f} tokens, N={settings.runs}"
    )
    ratio = report_ttft("cold", cold) / report_ttft("warm", warm)
    show(f"    cold/warm: {ratio:.1f}x")
    return Row(
        "(a) follow-up TTFT",
        settings.runs,
        f"{median([s['t_first_token_ms'] for s in warm]):,.0f} ms warm",
        f"{median([s['t_first_token_ms'] for s in cold]):,.0f} ms cold",
        f"{ratio:.1f}x",
        goal(settings, ratio >= 20, ">= 20x"),
    )


def restart_latency(engine: NativeEngine, text: str, settings: Settings) -> tuple[NativeEngine, Row]:
    """Save, close, reopen, restore, then the follow-up; returns the engine it ends with."""
    restored: list[dict[str, Any]] = []
    cold: list[dict[str, Any]] = []
    reopen_s: list[float] = []
    for run in range(settings.runs):
        messages = first_turn(engine, text, run, settings)
        with tempfile.TemporaryDirectory(prefix="llama-lsp-bench-") as state_dir:
            saved = engine.save_slots(state_dir)["saved"]
            engine.close()
            started = time.perf_counter()
            engine = open_engine(settings)
            known = engine.restore_slots(state_dir)["known"]
            reopen_s.append(time.perf_counter() - started)
            if saved != 1 or known != 1:
                show(f"    note: saved {saved} slots, restored {known} (expected 1 and 1)")
            restored.append(first_token(engine, messages))
        cold.append(cold_first_token(engine, messages))
    show(f"(d) time to first token after a restart (save, close, open, restore), N={settings.runs}")
    show(f"    open + restore: median {median(reopen_s):.2f} s (not in the times below)")
    ratio = report_ttft("cold", cold) / report_ttft("restored", restored)
    show(f"    cold/restored: {ratio:.1f}x")
    row = Row(
        "(d) TTFT after restart",
        settings.runs,
        f"{median([s['t_first_token_ms'] for s in restored]):,.0f} ms restored",
        f"{median([s['t_first_token_ms'] for s in cold]):,.0f} ms cold",
        f"{ratio:.1f}x",
    )
    return engine, row


# ---- (b) decode speed -----------------------------------------------------------------------------


def decode_speed(engine: NativeEngine, binary: Path, settings: Settings) -> Row:
    info = engine.info()
    n_threads, n_threads_batch = int(info["n_threads"]), int(info["n_threads_batch"])
    prompt = document(engine, [ROOT / "lsp_server" / "engine" / "local.py"], settings.decode_prompt_tokens)
    ours: list[float] = []
    theirs: list[float] = []
    notes: set[str] = set()
    for _ in range(settings.runs):  # interleaved, so both see the same machine load
        pieces: list[str] = []
        result = engine.generate({"prompt": prompt, "max_tokens": settings.decode_tokens}, pieces.append)
        stats = result["stats"]
        ours.append(stats["n_generated"] / stats["t_decode_ms"] * 1000)
        plain = decode_loop(
            binary,
            settings.model,
            prompt,
            settings.decode_tokens,
            n_threads,
            n_threads_batch,
            info["flash_attn"],
        )
        theirs.append(plain["n_generated"] / plain["decode_s"])
        if stats["n_generated"] != settings.decode_tokens or plain["n_generated"] != settings.decode_tokens:
            notes.add(f"token counts differ: engine {stats['n_generated']}, loop {plain['n_generated']}")
        if result["tokens"] != plain["tokens"]:
            notes.add("greedy tokens differ (prompt chunking changes logits slightly)")
    ratio = median(ours) / median(theirs)
    show(
        f"(b) decode speed, {settings.decode_tokens} tokens after a {count_tokens(engine, prompt)}-token "
        f"prompt, n_threads={n_threads} (batch {n_threads_batch}), N={settings.runs}"
    )
    show(f"    engine (NativeEngine.generate): median {median(ours):.1f} tok/s  (runs {fmt(ours)})")
    show(f"    llama.cpp plain loop:           median {median(theirs):.1f} tok/s  (runs {fmt(theirs)})")
    for note in sorted(notes):
        show(f"    note: {note}")
    show(f"    engine/loop: {ratio:.1%}")
    return Row(
        f"(b) decode tok/s, {n_threads} thread(s)",
        settings.runs,
        f"{median(ours):.1f} engine",
        f"{median(theirs):.1f} llama.cpp",
        f"{ratio:.1%}",
        goal(settings, ratio >= 0.95, ">= 95%"),
    )


def fmt(values: Sequence[float]) -> str:
    return " ".join(f"{v:.1f}" for v in values)


# ---- (c) prefill work with several slots ----------------------------------------------------------

TURNS = {
    "chat": ("What does this file do?", "Which part is the most fragile?", "How would you test it?"),
    "action": ("Write a docstring for the first function.", "Now make it one line."),
}
# Rounds over the three documents: chat, its follow-up, a new conversation, then both continue.
PLAN = (("chat", 0), ("chat", 1), ("action", 0), ("chat", 2), ("action", 1))
SMALL_DOCS = ("lsp_server/engine/models.py", "lsp_server/engine/native.py", "lsp_server/clients/ask.py")


def run_workload(engine: NativeEngine, docs: dict[str, str], settings: Settings) -> tuple[int, int, float]:
    """Returns tokens evaluated, prompt tokens in all, and seconds."""
    history: dict[str, list[tuple[str, str]]] = {}
    evaluated = prompted = 0
    started = time.perf_counter()
    for kind, turn in PLAN:
        for name, text in docs.items():
            key = f"{kind}:{name}"
            done = history.setdefault(key, [])
            questions = [q for q, _ in done] + [TURNS[kind][turn]]
            messages = chat(name, text, questions, [a for _, a in done])
            result = engine.generate(
                {"messages": messages, "max_tokens": settings.answer_tokens, "slot": key}
            )
            done.append((questions[-1], result["content"]))
            evaluated += result["stats"]["n_evaluated"]
            prompted += result["stats"]["n_prompt"]
    return evaluated, prompted, time.perf_counter() - started


def slots_prefill(engine: NativeEngine, settings: Settings) -> Row:
    docs = {Path(p).name: document(engine, [ROOT / p], settings.small_doc_tokens) for p in SMALL_DOCS}
    sizes = ", ".join(str(count_tokens(engine, text)) for text in docs.values())
    engine.clear()
    three, prompted, three_s = run_workload(engine, docs, settings)
    single_engine = open_engine(settings, n_slots=1)
    try:
        one, _, one_s = run_workload(single_engine, docs, settings)
    finally:
        single_engine.close()
    n_requests = len(PLAN) * len(docs)
    show(
        f"(c) prefill tokens evaluated, {n_requests} interleaved requests on 3 documents ({sizes} tokens), "
        f"{prompted:,} prompt tokens in all (a count, not timed; one run)"
    )
    show(f"    n_slots=3: {three:,} evaluated  ({three_s:.1f} s)")
    show(f"    n_slots=1: {one:,} evaluated  ({one_s:.1f} s)")
    show(f"    1 slot / 3 slots: {one / max(three, 1):.1f}x")
    return Row(
        "(c) prefill tokens, 3 docs",
        1,
        f"{three:,} (3 slots)",
        f"{one:,} (1 slot)",
        f"{one / max(three, 1):.1f}x",
    )
