"""Inline completion while typing: our server against llama-server's /infill, as llama.vim calls it.

A ~2,000-token file (the standard library's glob.py, from the running interpreter) is typed at its end:
its last HELD_BACK non-blank lines are held back and typed again, one word at a time, with a completion
request at each pause (the start of each line, after its indentation, and after each word). Each
request waits for the previous answer: a typist who pauses long enough for the debounce every time.

- Ours: over stdio LSP as an editor drives it (didOpen, incremental didChange, inlineCompletion); our
  server keeps its own cache of recent completions.
- llama-server: `/infill` with llama.vim's request (the lines above as input_prefix, at most 256; the
  line up to the cursor as prompt; its samplers, n_predict, time limits and cache_prompt), started with
  `--cache-reuse 256` as llama.vim's README says. llama.vim's client-side cache (a completion stays
  offered while the user types what it said) is applied on this side, by the same rule as ours.

Printed: time to a completion (client side) p50 and p90 over the typing requests (the first, cold
request apart), prompt tokens evaluated per request, and the exact-match rate: at the start of each
held-back line, whether the completion's first line is that line.
"""

from __future__ import annotations

import asyncio
import glob as glob_module
import json as json_module
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from harness import report
from lsp_server.assistant.infill import Around, RecentCompletions
from lsp_server.clients.headless import HeadlessClient
from lsp_server.lsp import protocol

from .parts import show
from .versus import THREADS, LlamaServer, Ours, Plan, table

DOC_NAME = "glob.py"
DOC_SOURCE = Path(glob_module.__file__)  # ~2,000 tokens, 250 lines
HELD_BACK = 16
N_PREFIX_LINES = 256  # llama.vim's defaults
LLAMA_VIM_REQUEST = {
    "input_extra": [],
    "n_predict": 128,
    "top_k": 40,
    "top_p": 0.90,
    "samplers": ["top_k", "top_p", "infill"],
    "stream": False,
    "cache_prompt": True,
    "t_max_prompt_ms": 500,
    "t_max_predict_ms": 1000,
}


@dataclass(frozen=True)
class Pause:
    """A point where the typist pauses: the file's lines above, and the current line up to the cursor."""

    above: list[str]
    typed: str
    line: str  # the whole held-back line (what a completion at its start should say)
    at_line_start: bool


def pauses(lines: list[str], held_back: int) -> list[Pause]:
    """Where completions are requested while the last `held_back` non-blank lines are typed again."""
    held = [n for n, line in enumerate(lines) if line.strip()][-held_back:]
    found = []
    for n in held:
        line = lines[n]
        indent = line[: len(line) - len(line.lstrip())]
        found.append(Pause(lines[:n], indent, line, True))
        for at, char in enumerate(line):
            if char == " " and at > len(indent) and line[at - 1] != " ":
                found.append(Pause(lines[:n], line[: at + 1], line, False))
    return found


def matches(completion: str, pause: Pause) -> bool:
    first = completion.split("\n")[0].rstrip()
    return bool(first) and pause.typed + first == pause.line.rstrip()


@dataclass
class Side:
    name: str
    times_ms: list[float] = field(default_factory=list)
    evaluated: list[int] = field(default_factory=list)
    generated: list[int] = field(default_factory=list)
    exact: list[bool] = field(default_factory=list)
    first_ms: float = 0.0
    first_evaluated: int = 0

    def record(
        self, pause: Pause, elapsed_ms: float, counts: tuple[int, int], completion: str, first: bool
    ) -> None:
        """One request: its time, its (prompt tokens evaluated, tokens generated), what it offered."""
        if first:
            self.first_ms, self.first_evaluated = elapsed_ms, counts[0]
        else:
            self.times_ms.append(elapsed_ms)
            self.evaluated.append(counts[0])
            self.generated.append(counts[1])
        if pause.at_line_start:
            self.exact.append(matches(completion, pause))


def comparison_rows(rows: list[list[str]], sides: Sequence[Any]) -> Callable[[str, list[float], str], None]:
    """Adds the rows both typing comparisons print (cold request, p50, p90, tokens evaluated), each with
    the second side's ratio to the first; returns the function that adds another such row."""

    def row(label: str, values: list[float], fmt: str) -> None:
        ratio = values[1] / values[0] if values[0] else float("inf")
        rows.append([label, *(fmt.format(v) for v in values), f"{ratio:.2f}x"])

    row("first request (cold), ms", [s.first_ms for s in sides], "{:,.0f}")
    row("time to a completion p50, ms", [percentile(s.times_ms, 50) for s in sides], "{:,.0f}")
    row("time to a completion p90, ms", [percentile(s.times_ms, 90) for s in sides], "{:,.0f}")
    row(
        "prompt tokens evaluated per request (mean)", [statistics.fmean(s.evaluated) for s in sides], "{:.1f}"
    )
    return row


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


# ---- llama-server, as llama.vim calls it -------------------------------------------------------------


def theirs(server: LlamaServer, all_pauses: list[Pause]) -> Side:
    side = Side("llama-server /infill")
    cache = RecentCompletions()  # llama.vim's client-side cache, by our rule
    for number, pause in enumerate(all_pauses):
        around = Around("\n".join(pause.above) + "\n", pause.typed, "", "")
        started = time.perf_counter()
        completion = cache.get(around, DOC_NAME)
        counts = (0, 0)
        if completion is None:
            body = {
                **LLAMA_VIM_REQUEST,
                "input_prefix": "".join(line + "\n" for line in pause.above[-N_PREFIX_LINES:]),
                "input_suffix": "",
                "prompt": pause.typed,
                "n_indent": len(pause.typed) - len(pause.typed.lstrip()),
            }
            status, result = server.post("/infill", body)
            if status != 200:
                raise RuntimeError(f"llama-server answered {status}: {result}")
            completion = str(result["content"]).rstrip()
            counts = (int(result["timings"]["prompt_n"]), int(result["timings"]["predicted_n"]))
            cache.put(around.key(DOC_NAME), completion)
        side.record(pause, (time.perf_counter() - started) * 1000, counts, completion, number == 0)
    return side


# ---- ours over stdio LSP -----------------------------------------------------------------------------


async def ours(plan: Plan, workdir: Path, all_pauses: list[Pause]) -> Side:
    options = {"model": str(plan.model), "threads": THREADS, "cacheDir": str(workdir / "cache")}
    server = await Ours.start(workdir, options)
    try:
        return await type_in(server.client, (workdir / DOC_NAME).as_uri(), all_pauses)
    finally:
        await server.stop()


# After each request's answer (bench/next_edit.py's hook): the pause, the document's version, the cursor,
# and when the change before it was sent (time.perf_counter()); the typist goes on when it returns.
AfterAnswer = Callable[[Pause, int, types.Position, float], Awaitable[None]]


async def type_in(
    client: HeadlessClient, uri: str, all_pauses: list[Pause], after: AfterAnswer | None = None
) -> Side:
    """Opens the document as the first pause has it and types the rest, a completion request at each
    pause, each after the previous answer; the server stays up."""
    side = Side("ours")
    text = "".join(line + "\n" for line in all_pauses[0].above) + all_pauses[0].typed
    version = 1
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text))
    )
    for number, pause in enumerate(all_pauses):
        wanted = "".join(line + "\n" for line in pause.above) + pause.typed
        changed_at = time.perf_counter()
        if wanted != text:  # typed since the last pause: the keystrokes, as one incremental change
            assert wanted.startswith(text)
            change = types.TextDocumentContentChangePartial(
                range=types.Range(end_of(text), end_of(text)), text=wanted[len(text) :]
            )
            version = number + 2
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(version=version, uri=uri), [change]
                )
            )
            text = wanted
        started = time.perf_counter()
        result = await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Automatic
                ),
                text_document=types.TextDocumentIdentifier(uri),
                position=end_of(text),
            )
        )
        elapsed_ms = (time.perf_counter() - started) * 1000
        items = result.items if isinstance(result, types.InlineCompletionList) else result or []
        completion = str(items[0].insert_text) if items else ""
        last: dict[str, Any] = (await client.request(protocol.STATS, None))["lastCompletion"] or {}
        counts = (int(last.get("nEvaluated", 0)), int(last.get("nGenerated", 0)))
        side.record(pause, elapsed_ms, counts, completion, number == 0)
        if after is not None:
            await after(pause, version, end_of(text), changed_at)
    return side


def end_of(text: str) -> types.Position:
    lines = text.split("\n")
    return types.Position(len(lines) - 1, len(lines[-1]))


def run(plan: Plan, server: LlamaServer, workdir: Path) -> report.Section:
    """Types the file on both sides, prints the table; returns it as the doc's section."""
    lines = DOC_SOURCE.read_text(encoding="utf-8").splitlines()
    all_pauses = pauses(lines, HELD_BACK)
    n_tokens = server.count_tokens("\n".join(lines))
    show(
        f"\ninline completion while typing: {DOC_NAME} ({len(lines)} lines, {n_tokens} tokens), its last "
        f"{HELD_BACK} lines typed again: {len(all_pauses)} requests on each side"
    )
    sides = [theirs(server, all_pauses), asyncio.run(ours(plan, workdir, all_pauses))]
    rows = [["", *(side.name for side in sides), "ours / theirs"]]

    row = comparison_rows(rows, sides)
    row("tokens generated per request (mean)", [statistics.fmean(s.generated) for s in sides], "{:.1f}")
    row("exact match at line start", [sum(s.exact) / len(s.exact) for s in sides], "{:.0%}")
    table(rows)
    section = report.Section(
        f"bench/typing/{report.key_part(plan.model.name)}",
        f"Inline completion while typing ({plan.model.stem})",
        report.Run.now(threads=THREADS, model=plan.model, figures="one run, percentiles over the requests"),
        [report.Table(["measurement", *rows[0][1:]], rows[1:])],
        about=f"The interpreter's {DOC_NAME} ({len(lines)} lines, {n_tokens:,} tokens) typed at its end: its "
        f"last {HELD_BACK} lines typed again a word at a time, {len(all_pauses)} requests on each side, each "
        "after the previous answer. llama-server gets llama.vim's `/infill` request and client-side cache, "
        "started with `--cache-reuse 256`; ours is driven over stdio LSP. Exact match: at the start of a "
        "held-back line, the completion's first line is that line.",
    )
    if plan.goals:
        p50, p90 = ([percentile(s.times_ms, q) for s in sides] for q in (50, 90))
        tokens = [statistics.fmean(s.evaluated) for s in sides]
        checks = {
            "p50 ≤ 1.0x": p50[1] <= p50[0],
            "p90 ≤ 1.0x": p90[1] <= p90[0],
            "tokens per request ≤ theirs": tokens[1] <= tokens[0],
            "exact match ≥ theirs": sum(sides[1].exact) >= sum(sides[0].exact),
        }
        show("goals: " + "; ".join(f"{name} {'met' if met else 'MISSED'}" for name, met in checks.items()))
    return section


# ---- other files in the prompt (completionRecentFiles) ---------------------------------------------------

# The standard library's json package: the user opened the package's modules, then types the end of
# json/tool.py, which calls json.load/loads/dump with dump's keyword arguments (defined in __init__.py).
PACKAGE = Path(json_module.__file__).parent
OPENED_FIRST = ("json/__init__.py", "json/decoder.py", "json/encoder.py")
TYPED = "json/tool.py"
OTHER_FILES_HELD_BACK = 24


async def ours_with_other_files(plan: Plan, workdir: Path, all_pauses: list[Pause], on: bool) -> Side:
    """Opens OPENED_FIRST, then types TYPED, with completionRecentFiles on or off."""
    options = {
        "model": str(plan.model),
        "threads": THREADS,
        "cacheDir": str(workdir / "cache"),
        "completionRecentFiles": on,
        "warm": False,  # each way reads the same prompts on its first request: no warming race
    }
    server = await Ours.start(workdir, options)
    try:
        for name in OPENED_FIRST:
            server.client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    types.TextDocumentItem(
                        (workdir / name).as_uri(), "python", 1, (workdir / name).read_text()
                    )
                )
            )
        side = await type_in(server.client, (workdir / TYPED).as_uri(), all_pauses)
        side.name = f"ours, other files {'on' if on else 'off'}"
        return side
    finally:
        await server.stop()


def run_other_files(plan: Plan, workdir: Path) -> report.Section:
    """Types json/tool.py's end with the package's other modules open, other files off and on."""
    for name in (*OPENED_FIRST, TYPED):  # copied at run time from the running interpreter
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text((PACKAGE / Path(name).name).read_text(encoding="utf-8"), encoding="utf-8")
    lines = (workdir / TYPED).read_text(encoding="utf-8").splitlines()
    all_pauses = pauses(lines, OTHER_FILES_HELD_BACK)
    show(
        f"\ninline completion with other files open: {', '.join(OPENED_FIRST)} opened, then {TYPED}'s last "
        f"{OTHER_FILES_HELD_BACK} lines typed again: {len(all_pauses)} requests a way"
    )
    sides = [asyncio.run(ours_with_other_files(plan, workdir, all_pauses, on)) for on in (False, True)]
    rows = [["", *(side.name for side in sides), "on / off"]]

    row = comparison_rows(rows, sides)
    row("exact match at line start", [sum(s.exact) / len(s.exact) for s in sides], "{:.0%}")
    rows.append(["line starts matched", *(f"{sum(s.exact)} of {len(s.exact)}" for s in sides), ""])
    table(rows)
    return report.Section(
        f"bench/typing-other-files/{report.key_part(plan.model.name)}",
        f"Inline completion with other files open ({plan.model.stem})",
        report.Run.now(
            threads=THREADS, model=plan.model, figures="one run a way, percentiles over the requests"
        ),
        [report.Table(["measurement", *rows[0][1:]], rows[1:])],
        about=f"The interpreter's json package: {', '.join(OPENED_FIRST)} opened, then the last "
        f"{OTHER_FILES_HELD_BACK} lines of {TYPED} typed again a word at a time ({len(all_pauses)} "
        "requests a way, each after the previous answer), over stdio LSP with the setting "
        "completionRecentFiles off, then on (chunks of the other files most like the text around the "
        "cursor before the file). One run a way, one after the other on a shared machine: the times are "
        "noisy, the matches are not. llama-server was not run with the same chunks.",
    )
