"""Our server against llama.cpp's own llama-server, each driven the way its clients drive it.

Ours over stdio LSP as an editor drives it (the headless client's helpers: didOpen, didChange,
`assistant/chat`); llama-server over its OpenAI-compatible `/v1/chat/completions`, streamed, as a chat
client would, resending the whole conversation (and the file as it is now) with every question. Same
model, same threads, same answer length, greedy. Both times are measured here, on the client side:
request sent to the first streamed piece of the answer.

(A) follow-up after 5 s of reading; (E) follow-up asked 3 s after a line was inserted near the top
(the same conversation, one turn later, so (A) and (E) share one cold first question); (F) first
question on a file open for 10 s; (R) first question 1 s after a restart of our server; then (A) again
on a second llama-server without flash attention, as our engine runs on a CPU. Each run's file
starts with its own comment line, so neither side can reuse an earlier run's document. Then the cold
prefill speed of our engine at several prefill chunk sizes, beside llama-server's.
"""

from __future__ import annotations

import asyncio
import fnmatch
import http.client
import json
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from harness import llama_server, report
from lsp_server.clients.headless import HeadlessClient
from lsp_server.engine.local import EngineConfig
from lsp_server.engine.native import NativeEngine
from lsp_server.lsp import protocol
from lsp_server.lsp.chat import CHAT_HINT

from .parts import median, show
from .workload import FOLLOW_UP, QUESTIONS, chat

SERVER = llama_server.BINARY  # `make llama-server`
OVERRIDE = "LLAMA_LSP_LLAMA_SERVER"
DOC_NAME = "fnmatch.py"
DOC_SOURCE = Path(fnmatch.__file__)  # ~1,400 tokens of real Python, from the running interpreter
FIRST, AFTER_EDIT = QUESTIONS[0], QUESTIONS[2]
INSERTED = "# Patterns are cached: see _compile_pattern below.\n"  # (E): becomes line 3
# One thread for everything, on both sides. Our `threads` setting sets the engine's n_threads, and its
# n_threads_batch (prefill) follows n_threads when unset, so ours runs 1 and 1: llama-server gets -t 1 -tb 1.
THREADS = 1


@dataclass(frozen=True)
class Plan:
    model: Path
    runs: int
    read_s: float = 5.0  # (A): reading the first answer before the follow-up
    edit_s: float = 3.0  # (E): from the edit to the question
    open_s: float = 10.0  # (F): the file open before the first question
    reopen_s: float = 1.0  # (R): from didOpen after the restart to the question
    answer_tokens: int = 64
    chunks: tuple[int, ...] = (64, 128, 256, 512)  # prefill chunk sizes of our engine
    goals: bool = True  # False on the tiny model, where the goal lines mean nothing


@dataclass(frozen=True)
class Turn:
    """One answered question, as its client saw it."""

    ttft_ms: float  # request sent to the first streamed piece of the answer (to the end if none came)
    n_evaluated: int  # prompt tokens the model evaluated (the rest came from its cache)
    n_prompt: int
    content: str
    engine_ttft_ms: float | None = None  # ours: the server's own tFirstTokenMs
    steps: int = 1  # ours: model requests in the turn (tool rounds)
    conversation_id: str = ""  # ours
    n_reused: int | None = None  # ours: tokens the engine says it took from its cache (None: unknown)


def find_llama_server() -> Path | None:
    override = os.environ.get(OVERRIDE)
    path = Path(override) if override else SERVER
    return path if path.is_file() else None


def numbered(run_label: str) -> str:
    """The test document with a first line of its own, so that nothing of another run is reused."""
    return f"# bench {run_label}\n" + DOC_SOURCE.read_text(encoding="utf-8")


def with_line_inserted(text: str, line: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    return "".join([*lines[: line - 1], new, *lines[line - 1 :]])


# ---- llama-server over HTTP -----------------------------------------------------------------------


class LlamaServer:
    """A llama-server process on 127.0.0.1 (harness/llama_server.py starts and stops it), and the requests
    a streaming chat client sends it."""

    def __init__(self, port: int):
        self.port = port

    @classmethod
    @contextmanager
    def running(
        cls, binary: Path, plan: Plan, workdir: Path, flash_attn: str = "on"
    ) -> Iterator[LlamaServer]:
        options = ("-c", "8192", "-np", "1", "--cache-prompt", "--cache-reuse", "256")
        log = workdir / f"llama-server-fa-{flash_attn}.log"
        process = llama_server.LlamaServer(
            plan.model, plan.model.stem, log, *options, binary=binary, threads=THREADS, flash_attn=flash_attn
        )
        process.start()
        try:
            yield cls(process.port)
        finally:
            process.stop()

    def post(self, path: str, body: Any, method: str = "POST") -> tuple[int, Any]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            payload = None if body is None else json.dumps(body)
            connection.request(method, path, payload, {"Content-Type": "application/json"})
            response = connection.getresponse()
            data = response.read()
            return response.status, json.loads(data) if data else None
        finally:
            connection.close()

    def chat(self, messages: list[dict[str, Any]], plan: Plan) -> Turn:
        body = {
            "messages": messages,
            "stream": True,
            "cache_prompt": True,
            "max_tokens": plan.answer_tokens,
            "temperature": 0,
        }
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        try:
            started = time.perf_counter()
            connection.request(
                "POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"}
            )
            response = connection.getresponse()
            if response.status != 200:
                raise RuntimeError(f"llama-server answered {response.status}: {response.read()[:500]!r}")
            first: float | None = None
            pieces: list[str] = []
            timings: dict[str, Any] = {}
            for raw in response:  # server-sent events: `data: {json}` lines, then `data: [DONE]`
                line = raw.decode("utf-8").strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[len("data: ") :])
                for choice in event.get("choices") or []:
                    piece = (choice.get("delta") or {}).get("content")
                    if piece:
                        first = first or time.perf_counter()
                        pieces.append(piece)
                timings = event.get("timings") or timings
            ended = time.perf_counter()
        finally:
            connection.close()
        return Turn(
            ttft_ms=((first or ended) - started) * 1000,
            n_evaluated=int(timings.get("prompt_n", -1)),
            n_prompt=int(timings.get("prompt_n", 0)) + int(timings.get("cache_n", 0)),
            content="".join(pieces),
        )

    def cold_prefill(self, prompt: str) -> tuple[float, int]:
        """Tokens/s and tokens of one raw completion of a prompt the server has not seen."""
        status, result = self.post("/completion", {"prompt": prompt, "n_predict": 1, "cache_prompt": True})
        if status != 200:
            raise RuntimeError(f"llama-server answered {status}: {result}")
        return float(result["timings"]["prompt_per_second"]), int(result["timings"]["prompt_n"])

    def model_id(self) -> str:
        """The name the server serves its model under (our remote backend's `model`)."""
        status, listing = self.post("/v1/models", None, method="GET")
        if status != 200:
            raise RuntimeError(f"llama-server answered {status}: {listing}")
        return str(listing["data"][0]["id"])

    def count_tokens(self, text: str) -> int:
        _, result = self.post("/tokenize", {"content": text})
        return len(result["tokens"])


def theirs_without_flash_attention(binary: Path, plan: Plan, workdir: Path) -> list[Turn]:
    """(A) on a llama-server run as our engine runs on a CPU, without flash attention (its CPU kernel
    is slower at reading a few tokens over a long cache): how much of our lead is that setting."""
    turns = []
    with LlamaServer.running(binary, plan, workdir, flash_attn="off") as server:
        for run in range(1, plan.runs + 1):
            text = numbered(f"A without flash attention, run {run}")
            first = server.chat(chat(DOC_NAME, text, [FIRST]), plan)
            turns.append(server.chat(chat(DOC_NAME, text, [FIRST, FOLLOW_UP], [first.content]), plan))
    return turns


def theirs_follow_ups(server: LlamaServer, text: str, edited: str, plan: Plan) -> tuple[Turn, Turn]:
    """(A) and (E): a chat client resends everything, the file as it is now included. llama-server
    does nothing while the user reads, so this side skips the waits."""
    a1 = server.chat(chat(DOC_NAME, text, [FIRST]), plan)
    a2 = server.chat(chat(DOC_NAME, text, [FIRST, FOLLOW_UP], [a1.content]), plan)
    a3 = server.chat(chat(DOC_NAME, edited, [FIRST, FOLLOW_UP, AFTER_EDIT], [a1.content, a2.content]), plan)
    return a2, a3


# ---- our server over stdio LSP --------------------------------------------------------------------


class Ours:
    """Our server as a subprocess, and what an editor sends it about one open file."""

    def __init__(self, client: HeadlessClient, uri: str):
        self.client, self.uri = client, uri
        self.version = 0

    @classmethod
    async def start(cls, workspace: Path, options: dict[str, Any]) -> Ours:
        client = HeadlessClient()
        await client.start()
        await client.initialize_session(workspace, options)
        status = await client.wait_until_loaded()
        if status["state"] == protocol.ERROR:
            raise SystemExit(f"bench: our server did not load the model: {status.get('message')}")
        return cls(client, (workspace / DOC_NAME).as_uri())

    async def stop(self) -> None:
        await self.client.shutdown_session(timeout_s=120)  # saves slot state

    def open(self, text: str) -> None:
        self.version += 1
        item = types.TextDocumentItem(uri=self.uri, language_id="python", version=self.version, text=text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))

    def insert(self, line: int, text: str) -> None:
        """An incremental didChange, as VS Code sends for typing or a paste; `line` is 1-based."""
        self.version += 1
        at = types.Position(line=line - 1, character=0)
        change = types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=text)
        document = types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(document, [change]))

    def close(self) -> None:
        self.client.text_document_did_close(
            types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=self.uri))
        )

    async def ask(self, question: str, conversation_id: str = "") -> Turn:
        first: list[float] = []

        def on_piece(_piece: str) -> None:
            if not first:
                first.append(time.perf_counter())

        self.client.stream = on_piece
        params: dict[str, Any] = {"message": question, "textDocument": {"uri": self.uri}}
        params["partialResultToken"] = "bench"
        if conversation_id:
            params["conversationId"] = conversation_id
        started = time.perf_counter()
        result = await self.client.request(protocol.CHAT, params)
        ended = time.perf_counter()
        stats = result["stats"]
        return Turn(
            ttft_ms=((first[0] if first else ended) - started) * 1000,
            n_evaluated=stats["nEvaluated"],
            n_prompt=stats["nPrompt"],
            content=result["content"],
            engine_ttft_ms=stats["tFirstTokenMs"],
            steps=stats.get("steps", 1),
            conversation_id=result["conversationId"],
            n_reused=stats["nReused"],
        )


async def ours_follow_ups(server: Ours, text: str, plan: Plan) -> tuple[Turn, Turn]:
    server.open(text)
    a1 = await server.ask(FIRST)
    await asyncio.sleep(plan.read_s)
    a2 = await server.ask(FOLLOW_UP, a1.conversation_id)
    server.insert(3, INSERTED)
    await asyncio.sleep(plan.edit_s)
    a3 = await server.ask(AFTER_EDIT, a1.conversation_id)
    server.close()
    return a2, a3


async def ours_follow_up(server: Ours, text: str, plan: Plan) -> Turn:
    """(A) alone: the first question, reading its answer, the follow-up."""
    server.open(text)
    first = await server.ask(FIRST)
    await asyncio.sleep(plan.read_s)
    follow_up = await server.ask(FOLLOW_UP, first.conversation_id)
    server.close()
    return follow_up


async def ours_first_question(server: Ours, text: str, plan: Plan) -> Turn:
    server.open(text)
    await asyncio.sleep(plan.open_s)
    answer = await server.ask(FIRST)
    server.close()
    return answer


async def ours_after_restart(workspace: Path, options: dict[str, Any], text: str, plan: Plan) -> Turn:
    """The first question once, a clean shutdown, a new process on the same cache directory, the same
    file opened again and the same first question 1 s later."""
    server = await Ours.start(workspace, options)
    server.open(text)
    await server.ask(FIRST)
    await server.stop()
    server = await Ours.start(workspace, options)
    try:
        server.open(text)
        await asyncio.sleep(plan.reopen_s)
        return await server.ask(FIRST)
    finally:
        await server.stop()


# ---- the scenarios, side by side ------------------------------------------------------------------


@dataclass
class Scenario:
    key: str  # A, E, F or R
    label: str
    theirs: list[Turn] = field(default_factory=list)
    ours: list[Turn] = field(default_factory=list)

    def ttft(self, side: str) -> float:
        return median([t.ttft_ms for t in getattr(self, side)])

    def evaluated(self, side: str) -> float:
        return median([t.n_evaluated for t in getattr(self, side)])


def describe(turn: Turn) -> str:
    text = f"{turn.ttft_ms:,.0f} ms, {turn.n_evaluated:,} of {turn.n_prompt:,} evaluated"
    if turn.engine_ttft_ms is not None:
        text += f" (engine {turn.engine_ttft_ms:,.0f} ms"
        text += f", {turn.steps} model requests)" if turn.steps != 1 else ")"
    return text


def show_runs(scenario: Scenario) -> None:
    show(f"{scenario.label}")
    for i, (theirs, ours) in enumerate(zip(scenario.theirs, scenario.ours, strict=True)):
        show(f"    run {i + 1}: llama-server {describe(theirs)} | ours {describe(ours)}")


async def scenarios(server: LlamaServer, plan: Plan, workdir: Path) -> list[Scenario]:
    workspace = workdir / "workspace"
    workspace.mkdir()
    # No checks of proposed edits: llama-server, the other side, runs none.
    options: dict[str, Any] = {
        "model": str(plan.model),
        "threads": THREADS,
        "maxTokens": plan.answer_tokens,
        "verifyCommand": "",
    }
    options |= {"warm": True, "cacheDir": str(workdir / "cache")}  # `warm`: ignored by servers without it
    a = Scenario("A", f"(A) follow-up after {plan.read_s:g} s")
    e = Scenario("E", f"(E) follow-up {plan.edit_s:g} s after an edit")
    f = Scenario("F", f"(F) first question, file open {plan.open_s:g} s")
    ours = await Ours.start(workspace, options)
    try:
        for run in range(1, plan.runs + 1):
            text = numbered(f"A+E run {run}")
            edited = with_line_inserted(text, 3, INSERTED)
            (workspace / DOC_NAME).write_text(text, encoding="utf-8")
            theirs_a, theirs_e = await asyncio.to_thread(theirs_follow_ups, server, text, edited, plan)
            ours_a, ours_e = await ours_follow_ups(ours, text, plan)
            a.theirs.append(theirs_a)
            a.ours.append(ours_a)
            e.theirs.append(theirs_e)
            e.ours.append(ours_e)
            text = numbered(f"F run {run}")
            (workspace / DOC_NAME).write_text(text, encoding="utf-8")
            f.theirs.append(await asyncio.to_thread(server.chat, chat(DOC_NAME, text, [FIRST]), plan))
            f.ours.append(await ours_first_question(ours, text, plan))
    finally:
        await ours.stop()
    # llama-server keeps nothing across a restart: its (R) is the cold first question of (F).
    r = Scenario("R", f"(R) first question {plan.reopen_s:g} s after a restart", theirs=f.theirs)
    options["cacheDir"] = str(workdir / "restart-cache")
    for run in range(1, plan.runs + 1):
        text = numbered(f"R run {run}")
        (workspace / DOC_NAME).write_text(text, encoding="utf-8")
        r.ours.append(await ours_after_restart(workspace, options, text, plan))
    return [a, e, f, r]


async def backends(server: LlamaServer, plan: Plan, workdir: Path) -> dict[str, list[Turn]]:
    """(A) through our server on each of its backends: the model in its own process (local), and this
    llama-server as its remote backend (remote), one backend after the other."""
    workspace = workdir / "backends"
    workspace.mkdir()
    # No checks of proposed edits: llama-server, the other side, runs none.
    options: dict[str, Any] = {
        "model": str(plan.model),
        "threads": THREADS,
        "maxTokens": plan.answer_tokens,
        "verifyCommand": "",
    }
    remote = {"url": f"http://127.0.0.1:{server.port}/v1", "model": server.model_id()}
    turns: dict[str, list[Turn]] = {"local": [], "remote": []}
    for side, backend in (("local", "local"), ("remote", remote)):
        ours = await Ours.start(workspace, {**options, "backend": backend, "cacheDir": str(workdir / side)})
        try:
            for run in range(1, plan.runs + 1):
                text = numbered(f"{side} run {run}")
                (workspace / DOC_NAME).write_text(text, encoding="utf-8")
                turns[side].append(await ours_follow_up(ours, text, plan))
        finally:
            await ours.stop()
    return turns


def show_backends(turns: dict[str, list[Turn]]) -> list[tuple[str, ...]]:
    """Prints each run and the medians; returns the medians as the doc's rows."""
    local, remote = turns["local"], turns["remote"]
    for i, (ours, theirs) in enumerate(zip(local, remote, strict=True)):
        show(f"    run {i + 1}: local {describe(ours)} | remote {describe(theirs)}, {theirs.n_reused} cached")
    reported = [t.n_reused / t.n_prompt for t in remote if t.n_reused is not None and t.n_prompt]
    local_ttft, remote_ttft = median([t.ttft_ms for t in local]), median([t.ttft_ms for t in remote])
    cached = f"{median(reported):.1%}" if len(reported) == len(remote) else "not reported"
    show(
        f"(A) follow-up through our server, medians of {len(local)}: local {local_ttft:,.0f} ms, "
        f"remote (this llama-server) {remote_ttft:,.0f} ms, remote/local {remote_ttft / local_ttft:.2f}x; "
        f"cached fraction the server reported: {cached}"
    )
    return [
        (
            "local (the model in our server)",
            str(len(local)),
            f"{local_ttft:,.0f} ms",
            f"{median([t.n_evaluated for t in local]):,.0f}",
            "-",
            "1.00x",
        ),
        (
            "remote (this llama-server)",
            str(len(remote)),
            f"{remote_ttft:,.0f} ms",
            f"{median([t.n_evaluated for t in remote]):,.0f}",
            cached,
            f"{remote_ttft / local_ttft:.2f}x",
        ),
    ]


def verdict(plan: Plan, met: bool, text: str) -> str:
    if not plan.goals:
        return f"({text}: n/a)"
    return f"{text}: {'met' if met else 'MISSED'}"


def goals(plan: Plan, results: dict[str, Scenario], question_tokens: int) -> dict[str, str]:
    a, e, f, r = (results[k] for k in "AEFR")
    ratio = {k: s.ttft("ours") / s.ttft("theirs") for k, s in results.items()}
    f_time = f.ttft("ours") <= 1.2 * a.ttft("theirs")
    f_work = f.evaluated("ours") <= question_tokens + 64
    return {
        "A": verdict(plan, ratio["A"] <= 1.0, "ours <= llama-server"),
        "E": verdict(
            plan,
            e.evaluated("ours") <= 100 and ratio["E"] <= 0.2,
            "<= 100 evaluated and <= 0.2x llama-server",
        ),
        "F": verdict(
            plan, f_time and f_work, f"<= 1.2x llama-server's (A) and <= {question_tokens}+64 evaluated"
        ),
        "R": verdict(plan, r.ttft("ours") <= 1.5 * a.ttft("ours"), "<= 1.5x our (A)"),
    }


def table(rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to fit; the first and the last left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        cells = [
            cell.ljust(width) if i in (0, len(row) - 1) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        show("  ".join(cells).rstrip())


SCENARIO_HEADER = (
    "scenario",
    "N",
    "llama-server TTFT",
    "evaluated",
    "ours TTFT",
    "evaluated",
    "ours / theirs",
)


def scenario_row(s: Scenario) -> tuple[str, ...]:
    return (
        s.label,
        str(len(s.ours)),
        f"{s.ttft('theirs'):,.0f} ms",
        f"{s.evaluated('theirs'):,.0f}",
        f"{s.ttft('ours'):,.0f} ms",
        f"{s.evaluated('ours'):,.0f}",
        f"{s.ttft('ours') / s.ttft('theirs'):.2f}x",
    )


def plain_row(ours: Scenario, plain: list[Turn]) -> tuple[str, ...]:
    """(A) again, against the llama-server that runs without flash attention."""
    ttft = median([t.ttft_ms for t in plain])
    return (
        f"{ours.label}, llama-server with -fa off",
        str(len(plain)),
        f"{ttft:,.0f} ms",
        f"{median([t.n_evaluated for t in plain]):,.0f}",
        f"{ours.ttft('ours'):,.0f} ms",
        f"{ours.evaluated('ours'):,.0f}",
        f"{ours.ttft('ours') / ttft:.2f}x",
    )


def show_scenarios(plan: Plan, results: list[Scenario], question_tokens: int) -> None:
    by_key = {s.key: s for s in results}
    met = goals(plan, by_key, question_tokens)
    rows = [(*SCENARIO_HEADER, "goal")]
    rows += [(*scenario_row(s), met[key]) for key, s in by_key.items()]
    show("")
    table(rows)
    show(
        "TTFT: request sent to the first streamed piece of the answer, on each client's side. llama-server "
        "keeps nothing across a restart: its (R) is (F)'s cold first question. Our prompts are longer (the "
        "tool schemas, and a hint with a conversation's first question)."
    )


# ---- (item 6) cold prefill speed by chunk size ----------------------------------------------------


def prefill_speeds(server: LlamaServer, plan: Plan) -> report.Section:
    """Our engine opened once per chunk size (runs interleaved, so all see the same load), each run's
    prompt with a first line of its own; llama-server's raw /completion of the same prompts beside it."""
    engines = {
        chunk: NativeEngine(
            plan.model,
            EngineConfig(
                plan.model,
                n_ctx=8192,
                n_threads=THREADS,
                n_threads_batch=THREADS,
                n_slots=1,
                prefill_chunk=chunk,
            ).native_options(),
        )
        for chunk in plan.chunks
    }
    speeds: dict[str, list[float]] = {f"ours, chunk {chunk}": [] for chunk in plan.chunks}
    speeds["llama-server"] = []
    n_tokens = 0
    try:
        for run in range(1, plan.runs + 1):
            for chunk, engine in engines.items():
                prompt = f"{run}-{chunk}: prefill\n" + DOC_SOURCE.read_text(encoding="utf-8")
                stats = engine.generate({"prompt": prompt, "max_tokens": 1})["stats"]
                if stats["n_reused"]:
                    raise RuntimeError(f"a cold prefill reused {stats['n_reused']} tokens")
                speeds[f"ours, chunk {chunk}"].append(stats["n_evaluated"] / stats["t_prefill_ms"] * 1000)
                n_tokens = stats["n_evaluated"]
            prompt = f"{run}-server: prefill\n" + DOC_SOURCE.read_text(encoding="utf-8")
            speeds["llama-server"].append(server.cold_prefill(prompt)[0])
    finally:
        for engine in engines.values():
            engine.close()
    show(f"\nCold prefill, {n_tokens:,} tokens ({DOC_NAME}), {THREADS} thread, N={plan.runs}")
    rows = [("prefill", "N", "median tok/s", "runs")]
    for label, values in speeds.items():
        runs = " ".join(f"{v:.0f}" for v in values)
        rows.append((label, str(len(values)), f"{median(values):.1f}", runs))
    table(rows)
    return report.Section(
        f"bench/prefill/{report.key_part(plan.model.name)}",
        f"Cold prefill speed by chunk size ({plan.model.stem})",
        run_of(plan),
        [report.Table(("prefill", "N", "median tok/s"), [row[:3] for row in rows[1:]])],
        about=f"Prompt tokens read per second on a prompt neither side has seen ({DOC_NAME}, {n_tokens:,} "
        "tokens): our engine opened once per prefill chunk size, llama-server's raw `/completion` beside "
        "it, runs interleaved so that all see the same load.",
    )


def run_of(plan: Plan) -> report.Run:
    return report.Run.now(threads=THREADS, model=plan.model, figures=f"medians of {plan.runs}")


BACKENDS_ABOUT = (
    "(A) through our server over stdio LSP: the model in the server's own process, then this llama-server "
    "as its remote backend. The cached fraction is what the server reported."
)


def versus_about(plan: Plan) -> str:
    return (
        "Time to first token (TTFT), on each client's side, with the number of prompt tokens each side "
        "evaluated: our server driven over stdio LSP as an editor drives it, llama-server (built from the "
        "same pinned llama.cpp, `--cache-prompt --cache-reuse 256 -fa on`) as a chat client drives it, "
        f"resending the conversation and the file ({DOC_NAME}) with each question; answers of at most "
        f"{plan.answer_tokens} tokens, greedy. llama-server keeps nothing across a restart, so its (R) is "
        "(F)'s cold question."
    )


def run(
    plan: Plan, binary: Path, with_scenarios: bool, with_prefill: bool, with_backends: bool, with_typing: bool
) -> list[report.Section]:
    """Runs the parts asked for, prints their details; returns the doc's sections of those that ran."""
    sections: list[report.Section] = []
    model = report.key_part(plan.model.name)
    with (
        tempfile.TemporaryDirectory(prefix="llama-lsp-versus-") as tmp,
        LlamaServer.running(binary, plan, Path(tmp)) as server,
    ):
        show(
            f"\nversus llama-server: {plan.model.name}, {THREADS} thread, answers of at most "
            f"{plan.answer_tokens} tokens, medians of N={plan.runs}; TTFT measured by each client"
        )
        if with_scenarios:
            results = asyncio.run(scenarios(server, plan, Path(tmp)))
            for scenario in results:
                show_runs(scenario)
            question_tokens = server.count_tokens(f"{FIRST}\n\n{CHAT_HINT}")
            show_scenarios(plan, results, question_tokens)
            plain = theirs_without_flash_attention(binary, plan, Path(tmp))
            plain_ttft = median([t.ttft_ms for t in plain])
            show(
                f"(A) on llama-server without flash attention (-fa off), medians of {len(plain)}: "
                f"{plain_ttft:,.0f} ms, {median([t.n_evaluated for t in plain]):.0f} evaluated; "
                f"ours/that {results[0].ttft('ours') / plain_ttft:.2f}x. Our engine runs "
                "without it on a CPU (native/src/api.cpp says why); the goal's llama-server has it."
            )
            rows = [scenario_row(s) for s in results] + [plain_row(results[0], plain)]
            sections.append(
                report.Section(
                    f"bench/versus/{model}",
                    f"Our server against llama-server ({plan.model.stem})",
                    run_of(plan),
                    [report.Table(SCENARIO_HEADER, rows)],
                    about=versus_about(plan),
                )
            )
        if with_backends:
            show("\nour server on its two backends: the model in its process, and this llama-server")
            rows = show_backends(asyncio.run(backends(server, plan, Path(tmp))))
            sections.append(
                report.Section(
                    f"bench/backends/{model}",
                    f"A follow-up through our server, on each backend ({plan.model.stem})",
                    run_of(plan),
                    [
                        report.Table(
                            ("backend", "N", "TTFT", "evaluated", "cached (reported)", "vs local"), rows
                        )
                    ],
                    about=BACKENDS_ABOUT,
                )
            )
        if with_prefill:
            sections.append(prefill_speeds(server, plan))
        if with_typing:
            from . import completion  # it imports this module

            sections.append(completion.run(plan, server, Path(tmp)))
    return sections
