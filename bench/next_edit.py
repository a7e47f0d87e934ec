"""(N) Next-edit suggestions at 1 thread (issue 42's goals): how long one takes on a warm file, against
llama-server sent the same prompts, and what suggestions cost inline completion and chat.

The file is the interpreter's glob.py (bench/completion.py's, about 250 lines), opened in our server over
stdio LSP as an editor drives it, the server's `threads` 1; one server at a time, never two sides at once.

(N1) On a warm file: once the server holds the file's window where the edits will be (a request with no
     edits yet warms it; `assistant/stats` -> `nextEdit.warm` says when), a scripted sequence of edits
     (EDITS: parameters renamed in def signatures and at their uses, a call's argument changed, a keyword
     added to calls), each typed as an editor sends it, one incremental didChange per keystroke, and each
     followed, after nextEditDelayMs of no typing, by `assistant/nextEdit` for the version and cursor then.
     Per request: its time from request to answer (client side) and `nextEdit.last` (outcome, prompt
     tokens, evaluated, generated, drafted, accepted).
(N2) llama-server (the same pinned llama.cpp, `-fa off`, its ngram-simple drafting) sent the same prompts:
     the bench keeps the history of edits as the server does (lsp_server.assistant.next_edit, fed the same
     texts), builds each prompt with build_prompt, renders it with our engine's chat template (the messages
     and the answer's start, continued) and streams that text from `/completion` with cache_prompt, the
     same max_tokens and stop, closing the stream by the rule our engine ends an answer with
     (next_edit.Copying). Warmed first the same way: the no-edits prompt, one token.
(N3) Completion and chat with suggestions off and on: bench/completion.py's typing session in two fresh
     servers, `nextEdit` false, then true; with it on, `assistant/nextEdit` goes nextEditDelayMs after the
     change at each line's pause (the typist pauses LINE_PAUSE_S there, then types on: a suggestion still
     being computed is superseded, as in an editor). Chat: in (N1)'s server, once its edits are done (the
     file warm), a conversation about the file, then follow-ups each asked right after an edit
     (CHAT_EDITS), with suggestions off and on in turn (didChangeConfiguration); with them on, the
     suggestion's request goes first and the chat comes while it is being computed.
"""

from __future__ import annotations

import ast
import asyncio
import dataclasses
import http.client
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from harness import llama_server, report
from lsp_server.assistant import next_edit
from lsp_server.engine.native import NativeEngine
from lsp_server.lsp import protocol
from lsp_server.lsp.settings import SECTION, Settings

from . import completion
from .parts import show
from .versus import THREADS, LlamaServer, Ours, Turn, table

DOC_NAME = completion.DOC_NAME
DOC_SOURCE = completion.DOC_SOURCE
DELAY_S = Settings().next_edit_delay_ms / 1000  # the editors' pause before they ask
KEYSTROKE_S = 0.08  # between the keystrokes of an edit
READ_S = 1.0  # (N1): after an answer, before the next edit
LINE_PAUSE_S = 1.5  # (N3): the typist's pause at the end of each line
HELD_BACK = 10  # (N3): lines typed again (bench/completion.py's own part types 16)
CHAT_MODES = ("off", "on", "on", "off", "off", "on")  # (N3): each way in turn, so drift falls on both
CHAT_QUESTION = "What did my last edit change?"
CHAT_GAP_S = 0.1  # (N3): from the suggestion's request to the chat's
CHAT_TOKENS = 32  # (N3): an answer's max tokens
WARM_TIMEOUT_S = 900.0
THEIR_OPTIONS = (
    "-c",
    "8192",
    "-np",
    "1",
    "--cache-prompt",
    "--cache-reuse",
    "256",
    "--spec-type",
    "ngram-simple",
)
GOAL_P50_MS, GOAL_P90_MS, GOAL_EVALUATED = 1000.0, 2000.0, 200
NEAR = 1.1  # "on / off near 1.0": at most this
CACHED_MS = 20.0  # a completion faster than this came from the server's cache (no model)


# ---- the edits --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    """One edit, typed in the first line that holds `line_has`: `old` selected and typed over by `new`, or
    (`old` empty) `new` typed right before the last `before` of that line."""

    kind: str
    line_has: str
    old: str
    new: str
    before: str = ""


# All in glob.py's lines 97-128: one window of the file (tests/test_bench_next_edit.py checks it). Our server
# answers a substitution made again (X by Y within a line, X still in the file: the rest of a rename, the
# same argument changed) without the model; an insertion, or an edit next to the last one, goes to the model.
EDITS = (
    Edit("rename a parameter", "def _glob1(", "dironly", "dirs_only"),
    Edit("rename at its use", "names = _listdir(dirname, dir_fd, dironly)", "dironly", "dirs_only"),
    Edit("add a keyword to a call", "names = _listdir(dirname, dir_fd, dirs_only)", "", ", sort=True", ")"),
    Edit("rename a parameter", "def glob1(dirname, pattern)", "pattern", "pat"),
    Edit("rename at its use", "return _glob1(dirname, pattern, None, False)", "pattern", "pat"),
    Edit(
        "change a call's argument",
        "return _glob0(dirname, pattern, None, False)",
        "pattern",
        "os.fspath(pattern)",
    ),
    Edit("change a call's argument", "return _glob1(dirname, pat, None, False)", "pat", "os.fspath(pat)"),
    Edit(
        "add a keyword to a call",
        "return _glob0(dirname, os.fspath(",
        "",
        ", include_hidden=True",
        before=")",
    ),
    Edit(
        "add a keyword to a call",
        "return _glob1(dirname, os.fspath(",
        "",
        ", include_hidden=True",
        before=")",
    ),
    Edit("rename a parameter", "def _glob0(dirname, basename,", "basename", "name"),
    Edit("rename at its use", "_lexists(_join(dirname, basename), dir_fd)", "basename", "name"),
    Edit("add a keyword to a call", "if _isdir(dirname, dir_fd)", "", ", strict=True", before=")"),
)
# (N3) the edits before the chats, in _iglob (after EDITS): insertions, so that each suggestion is the model's
CHAT_EDITS = tuple(
    Edit("add a keyword to a call", line, "", ", strict=True", before=")")
    for line in (
        "dirname, basename = os.path.split(pathname)",
        "if _lexists(_join(root_dir, pathname), dir_fd)",
        "if _isdir(_join(root_dir, dirname), dir_fd)",
        "if dirname != pathname and has_magic(dirname)",
        "if has_magic(basename)",
        "yield os.path.join(dirname, name)",
    )
)


@dataclass(frozen=True)
class Keystroke:
    """One incremental change: line `line`'s characters [start, end) replaced by `text`; `after` is the
    document's text then."""

    line: int
    start: int
    end: int
    text: str
    after: str


@dataclass(frozen=True)
class Step:
    """An edit as typed: where it starts (the cursor before it), its keystrokes, the cursor after it."""

    edit: Edit
    start: types.Position
    keystrokes: list[Keystroke]
    cursor: types.Position

    @property
    def text(self) -> str:
        return self.keystrokes[-1].after


def typed(text: str, edit: Edit) -> Step:
    """The edit's keystrokes on `text`: the first types over the selection, each next one inserts."""
    lines = text.split("\n")
    number = next((n for n, line in enumerate(lines) if edit.line_has in line), None)
    if number is None:
        raise ValueError(f"{DOC_SOURCE}: no line holds {edit.line_has!r} (another Python's glob.py?)")
    line = lines[number]
    at = line.index(edit.old) if edit.old else line.rindex(edit.before)
    end = at + len(edit.old)
    keystrokes = []
    pieces = list(edit.new) or [""]
    for i, piece in enumerate(pieces):
        start = at + i
        stop = end if i == 0 else start
        line = line[:start] + piece + line[stop:]
        lines[number] = line
        keystrokes.append(Keystroke(number, start, stop, piece, "\n".join(lines)))
    return Step(edit, types.Position(number, at), keystrokes, types.Position(number, at + len(edit.new)))


def script(text: str, edits: Sequence[Edit] = EDITS) -> list[Step]:
    steps = []
    for edit in edits:
        steps.append(typed(text, edit))
        text = steps[-1].text
    return steps


def parses(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


# ---- figures ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One next-edit request as its client saw it."""

    ms: float  # request to answer, client side
    outcome: str
    n_prompt: int = 0
    n_evaluated: int = 0
    n_generated: int = 0
    n_drafted: int = 0
    n_accepted: int = 0
    t_prompt_ms: float | None = None  # llama-server's own timings: reading the prompt
    t_answer_ms: float | None = None  # and writing the answer

    @classmethod
    def from_last(cls, ms: float, last: dict[str, Any] | None) -> Answer:
        last = last or {}
        outcome = str(last.get("outcome", "?"))
        if outcome == "length" or (outcome == "cancelled" and last.get("finishReason") == "length"):
            outcome = "cut short"  # the answer reached max_tokens before the region's end
        return cls(
            ms,
            outcome,
            int(last.get("nPrompt", 0)),
            int(last.get("nEvaluated", 0)),
            int(last.get("nGenerated", 0)),
            int(last.get("nDrafted", 0)),
            int(last.get("nAccepted", 0)),
        )


def percentile(values: Sequence[float], q: int) -> float:
    return completion.percentile(list(values), q)


def outcomes(answers: Sequence[Answer]) -> str:
    return ", ".join(f"{name} {count}" for name, count in Counter(a.outcome for a in answers).most_common())


def modelled(answers: Sequence[Answer]) -> list[Answer]:
    """The requests the model answered (not stale, superseded, busy or without edits)."""
    return [a for a in answers if a.n_prompt > 0]


def describe(answer: Answer) -> str:
    return (
        f"{answer.ms:,.0f} ms, {answer.outcome}; {answer.n_evaluated:,} of {answer.n_prompt:,} evaluated, "
        f"{answer.n_generated} generated, {answer.n_accepted}/{answer.n_drafted} drafts accepted"
    )


# ---- (N1) ours -------------------------------------------------------------------------------------------


class Editor:
    """What an editor sends our server about one open document."""

    def __init__(self, server: Ours, uri: str):
        self.server, self.client, self.uri = server, server.client, uri
        self.version = 0

    def open(self, text: str) -> None:
        self.version = 1
        item = types.TextDocumentItem(uri=self.uri, language_id="python", version=self.version, text=text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))

    async def type(self, step: Step) -> None:
        for number, key in enumerate(step.keystrokes):
            if number:
                await asyncio.sleep(KEYSTROKE_S)
            self.version += 1
            change = types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(key.line, key.start), types.Position(key.line, key.end)),
                text=key.text,
            )
            document = types.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version)
            self.client.text_document_did_change(types.DidChangeTextDocumentParams(document, [change]))

    async def next_edit(self, cursor: types.Position, version: int | None = None) -> tuple[Any, Answer]:
        """The request for the version now (or `version`), and its figures from `nextEdit.last`."""
        params = {
            "textDocument": {"uri": self.uri, "version": self.version if version is None else version},
            "position": {"line": cursor.line, "character": cursor.character},
        }
        started = time.perf_counter()
        result = await self.client.request(protocol.NEXT_EDIT, params)
        ms = (time.perf_counter() - started) * 1000
        return result, Answer.from_last(ms, (await self.stats())["last"])

    async def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = (await self.client.request(protocol.STATS, None))["nextEdit"]
        return stats

    async def wait_for_window(self, first_line: int) -> float:
        """Seconds until the server says it holds the window that starts at `first_line`."""
        started = time.perf_counter()
        while time.perf_counter() - started < WARM_TIMEOUT_S:
            warm = (await self.stats())["warm"]
            if warm and warm["uri"] == self.uri and warm["firstLine"] == first_line:
                return time.perf_counter() - started
            await asyncio.sleep(1.0)
        raise RuntimeError(
            f"the next-edit window at line {first_line + 1} was not warm after {WARM_TIMEOUT_S} s"
        )

    def configure(self, **values: Any) -> None:
        self.client.workspace_did_change_configuration(types.DidChangeConfigurationParams({SECTION: values}))


def server_options(model: Path, workdir: Path, name: str, **more: Any) -> dict[str, Any]:
    return {
        "model": str(model),
        "threads": THREADS,
        "cacheDir": str(workdir / f"cache-{name}"),  # fresh: nothing of an earlier server is restored
        "verifyCommand": "",
        **more,
    }


def window_of(text: str, cursor: types.Position) -> int:
    """The first line of the window a request with no edits at `cursor` warms (as the server computes it)."""
    history = next_edit.EditHistory()
    history.opened("", DOC_NAME, text)
    known = history.get("")
    assert known is not None
    return next_edit.build_prompt(known, [], cursor.line).window_first


@dataclass
class Ours1:
    answers: list[Answer] = field(default_factory=list)
    warm_s: float = 0.0
    window_line: int = 0


async def ours_on_warm_file(
    model: Path, workdir: Path, text: str, steps: list[Step], chats: Chats, more: dict[str, Any]
) -> Ours1:
    """(N1), then (N3)'s chats in the same server."""
    (workdir / DOC_NAME).write_text(text, encoding="utf-8")
    server = await Ours.start(workdir, server_options(model, workdir, "n1", maxTokens=CHAT_TOKENS, **more))
    editor = Editor(server, (workdir / DOC_NAME).as_uri())
    figures = Ours1(window_line=window_of(text, steps[0].start))
    try:
        editor.open(text)
        started = time.perf_counter()
        result, answer = await editor.next_edit(steps[0].start)  # no edits yet: warms the window there
        if result is not None or answer.outcome != "no edits":
            raise RuntimeError(f"a request with no edits answered {result!r} ({answer.outcome})")
        await editor.wait_for_window(figures.window_line)
        figures.warm_s = time.perf_counter() - started
        show(f"  (N1) window from line {figures.window_line + 1} warm after {figures.warm_s:.1f} s")
        for step in steps:
            await editor.type(step)
            await asyncio.sleep(DELAY_S)
            _, answer = await editor.next_edit(step.cursor)
            figures.answers.append(answer)
            show(f"    {step.edit.kind} (line {step.cursor.line + 1}): {describe(answer)}")
            await asyncio.sleep(READ_S)
        await chat_after_edits(Ours(server.client, editor.uri), editor, steps[-1].text, chats)
    finally:
        await server.stop()
    return figures


# ---- (N2) llama-server, the same prompts ------------------------------------------------------------------


@dataclass
class Theirs:
    answers: list[Answer] = field(default_factory=list)
    n_prompt: list[int] = field(default_factory=list)  # our rendering's token count, per request
    warm_ms: float = 0.0


def render(engine: NativeEngine, prompt: next_edit.Prompt) -> tuple[str, int]:
    """The text our engine's chat template makes of the request the server sends, and its token count."""
    messages = [*prompt.messages, {"role": "assistant", "content": prompt.answer_start}]
    rendered = engine.tokenize({"messages": messages, "continue_answer": True})
    return str(rendered["prompt"]), len(rendered["tokens"])


@dataclass(frozen=True)
class Streamed:
    ms: float  # request to the answer's end (or to where the client stopped it)
    content: str  # the answer after the start it continues
    stop_type: str  # llama-server's ("word", "eos", "limit"), or "client": stopped by the copying rule
    timings: dict[str, Any]


def ask_theirs(
    server: LlamaServer, text: str, max_tokens: int, copying: next_edit.Copying | None = None, start: str = ""
) -> Streamed:
    """`/completion`, streamed with its timings; with `copying`, the stream is closed as soon as the rule
    our server applies says the answer is done (llama-server then stops), as a client of it would."""
    body = {
        "prompt": text,
        "n_predict": max_tokens,
        "stop": [next_edit.END],
        "temperature": 0,
        "cache_prompt": True,
        "stream": True,
        "timings_per_token": True,
    }
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    pieces: list[str] = []
    timings: dict[str, Any] = {}
    stop_type = ""
    try:
        started = time.perf_counter()
        connection.request("POST", "/completion", json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        if response.status != 200:
            raise RuntimeError(f"llama-server answered {response.status}: {response.read()[:500]!r}")
        for raw in response:  # server-sent events: `data: {json}` lines
            line = raw.decode("utf-8").strip()
            if not line.startswith("data: "):
                continue
            event = json.loads(line[len("data: ") :])
            pieces.append(str(event.get("content") or ""))
            timings = event.get("timings") or timings
            if event.get("stop"):
                stop_type = str(event.get("stop_type", ""))
                break
            if copying is not None and not copying.keep_going(start + "".join(pieces)):
                stop_type = "client"
                break
        ms = (time.perf_counter() - started) * 1000
    finally:
        connection.close()  # mid-stream: llama-server sees it and stops the answer
    return Streamed(ms, "".join(pieces), stop_type, timings)


def theirs_on_warm_file(server: LlamaServer, engine: NativeEngine, text: str, steps: list[Step]) -> Theirs:
    uri = "file:///" + DOC_NAME
    history = next_edit.EditHistory()
    history.opened(uri, DOC_NAME, text)
    figures = Theirs()
    doc = history.get(uri)
    assert doc is not None
    warm = next_edit.build_prompt(doc, [], steps[0].start.line)
    figures.warm_ms = ask_theirs(server, render(engine, warm)[0], 1).ms
    show(f"  (N2) llama-server read the no-edits prompt in {figures.warm_ms:,.0f} ms")
    for step in steps:
        for key in step.keystrokes:
            history.changed(uri, DOC_NAME, key.after)
        doc = history.get(uri)
        assert doc is not None
        prompt = next_edit.build_prompt(doc, history.recent(uri), step.cursor.line)
        rendered, n_prompt = render(engine, prompt)
        copying = next_edit.Copying(prompt.region)
        result = ask_theirs(server, rendered, prompt.max_tokens, copying, prompt.answer_start)
        if result.stop_type == "limit":
            outcome = "cut short"
        else:
            edits = next_edit.suggestion(doc, prompt, copying.completed(prompt.answer_start + result.content))
            outcome = "suggested" if edits else "no change"
        timings = result.timings
        figures.answers.append(
            Answer(
                result.ms,
                outcome,
                int(timings.get("prompt_n", 0)) + int(timings.get("cache_n", 0)),
                int(timings.get("prompt_n", 0)),
                int(timings.get("predicted_n", 0)),
                int(timings.get("draft_n", 0)),
                int(timings.get("draft_n_accepted", 0)),
                t_prompt_ms=float(timings.get("prompt_ms", 0)),
                t_answer_ms=float(timings.get("predicted_ms", 0)),
            )
        )
        figures.n_prompt.append(n_prompt)
        show(f"    {step.edit.kind} (line {step.cursor.line + 1}): {describe(figures.answers[-1])}")
    return figures


def llama_server_running(binary: Path, model: Path, workdir: Path) -> llama_server.LlamaServer:
    log = workdir / "llama-server-next-edit.log"
    process = llama_server.LlamaServer(
        model, model.stem, log, *THEIR_OPTIONS, binary=binary, threads=THREADS, flash_attn="off"
    )
    return process.start()


# ---- (N3) completion and chat, suggestions off and on -----------------------------------------------------


@dataclass
class Typing:
    mode: str
    side: completion.Side
    suggestions: list[Answer] = field(default_factory=list)
    resumed: list[bool] = field(default_factory=list)  # per side.times_ms: the first after a line's pause

    def after_pause(self, resumed: bool) -> list[float]:
        """The completions' times right after a line's pause (where a suggestion was asked), or the rest."""
        return [ms for ms, flag in zip(self.side.times_ms, self.resumed, strict=True) if flag == resumed]


@dataclass
class Chats:
    modes: tuple[str, ...] = CHAT_MODES
    ttft_ms: dict[str, list[float]] = field(default_factory=lambda: {"off": [], "on": []})
    turns: list[tuple[str, Turn]] = field(default_factory=list)
    suggestions: list[Answer] = field(default_factory=list)


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


async def sleep_until(moment: float) -> None:
    await asyncio.sleep(max(0.0, moment - time.perf_counter()))


async def typing_session(
    model: Path,
    workdir: Path,
    pauses: list[completion.Pause],
    on: bool,
    more: dict[str, Any],
) -> Typing:
    """One server, the typing session."""
    mode = "on" if on else "off"
    options = server_options(model, workdir, f"n3-{mode}", nextEdit=on, **more)
    server = await Ours.start(workdir, options)
    editor = Editor(server, (workdir / DOC_NAME).as_uri())
    pending: list[asyncio.Task[Answer]] = []

    async def suggest(version: int, cursor: types.Position) -> Answer:
        return (await editor.next_edit(cursor, version))[1]

    async def after(pause: completion.Pause, version: int, cursor: types.Position, changed_at: float) -> None:
        if not pause.at_line_start:
            return
        if on:
            await sleep_until(changed_at + DELAY_S)
            pending.append(asyncio.ensure_future(suggest(version, cursor)))
        await sleep_until(changed_at + LINE_PAUSE_S)

    try:
        side = await completion.type_in(editor.client, editor.uri, pauses, after)
        # side.times_ms leaves out the first request: the n-th is pauses[n + 1]'s, typed after pauses[n].
        resumed = [pause.at_line_start for pause in pauses[: len(side.times_ms)]]
        result = Typing(mode, side, list(await asyncio.gather(*pending)), resumed)
        show(f"    {mode}: " + " ".join(f"{ms:.0f}" for ms in side.times_ms) + " ms")
    finally:
        await server.stop()
    return result


async def chat_after_edits(chat: Ours, editor: Editor, text: str, chats: Chats) -> None:
    """A first question (not timed), then each follow-up asked right after an edit, suggestions off and
    on in turn."""
    started = time.perf_counter()
    first = await chat.ask(CHAT_QUESTION)
    show(
        f"  (N3) first question (not timed): {time.perf_counter() - started:.1f} s, "
        f"{first.n_evaluated:,} evaluated"
    )
    steps = script(text, CHAT_EDITS[: len(chats.modes)])
    for mode, step in zip(chats.modes, steps, strict=True):
        editor.configure(nextEdit=mode == "on")
        await asyncio.sleep(READ_S)
        await editor.type(step)
        await asyncio.sleep(DELAY_S)
        pending = asyncio.ensure_future(editor.next_edit(step.cursor)) if mode == "on" else None
        await asyncio.sleep(CHAT_GAP_S)
        turn = await chat.ask(CHAT_QUESTION, first.conversation_id)
        chats.ttft_ms[mode].append(turn.ttft_ms)
        chats.turns.append((mode, turn))
        note = ""
        if pending is not None:
            answer = (await pending)[1]
            chats.suggestions.append(answer)
            note = f"; the suggestion: {answer.outcome} after {answer.ms:,.0f} ms"
        show(
            f"    suggestions {mode}: chat's first token {turn.ttft_ms:,.0f} ms, {turn.n_evaluated:,} of "
            f"{turn.n_prompt:,} evaluated, {turn.steps} model requests{note}"
        )
    editor.configure(nextEdit=True)


# ---- the part ---------------------------------------------------------------------------------------------


def verdict(met: bool, goals: bool = True) -> str:
    if not goals:  # the tiny model: the goals mean nothing
        return "n/a"
    return "pass" if met else "FAIL"


def ratio(on: float, off: float) -> str:
    return f"{on / off:.2f}x" if off else "-"


def latency_rows(ours: Ours1, theirs: Theirs | None, goals: bool = True) -> list[tuple[str, ...]]:
    """Times over every request (what a user waits for: the server answers some without the model, such
    as the rest of a rename), and over those the model answered, against llama-server on the same
    prompts; token counts over the model's requests."""
    everything = ours.answers
    by_model = [n for n, answer in enumerate(everything) if answer.n_prompt > 0]
    a = [everything[n] for n in by_model]
    b_all = theirs.answers if theirs is not None else []
    b = [b_all[n] for n in by_model] if b_all else []
    n_all, n_model = len(everything), len(a)

    def figure(values: Sequence[float], q: int | None) -> float | None:
        """The q-th percentile (None: the mean); None for no values."""
        if not values:
            return None
        return statistics.fmean(values) if q is None else percentile(values, q)

    def row(
        label: str, goal: float | None, mine: Sequence[float], other: Sequence[float], q: int | None, fmt: str
    ) -> tuple[str, ...]:
        x, y = figure(mine, q), figure(other, q)
        return (
            label,
            "(report)" if goal is None else f"<= {goal:,.0f}",
            "-" if x is None else fmt.format(x),
            "-" if goal is None or x is None else verdict(x <= goal, goals),
            "-" if y is None else fmt.format(y),
            "-" if x is None or y is None else ratio(x, y),
        )

    def ms(answers: Sequence[Answer]) -> list[float]:
        return [x.ms for x in answers]

    def evaluated(answers: Sequence[Answer]) -> list[float]:
        return [x.n_evaluated for x in answers]

    def prompt(answers: Sequence[Answer]) -> list[float]:
        return [x.n_prompt for x in answers]

    def generated(answers: Sequence[Answer]) -> list[float]:
        return [x.n_generated for x in answers]

    rows = [
        row(
            f"time to an answer p50, ms, all {n_all} requests",
            GOAL_P50_MS,
            ms(everything),
            ms(b_all),
            50,
            "{:,.0f}",
        ),
        row(
            f"time to an answer p90, ms, all {n_all} requests",
            GOAL_P90_MS,
            ms(everything),
            ms(b_all),
            90,
            "{:,.0f}",
        ),
        row(f"time p50, ms, the {n_model} the model answered", None, ms(a), ms(b), 50, "{:,.0f}"),
        row(f"time p90, ms, the {n_model} the model answered", None, ms(a), ms(b), 90, "{:,.0f}"),
        row(
            "prompt tokens evaluated p50 (the model's)",
            GOAL_EVALUATED,
            evaluated(a),
            evaluated(b),
            50,
            "{:,.0f}",
        ),
        row(
            "prompt tokens evaluated p90 (the model's)",
            GOAL_EVALUATED,
            evaluated(a),
            evaluated(b),
            90,
            "{:,.0f}",
        ),
        row("prompt tokens p50 (the model's)", None, prompt(a), prompt(b), 50, "{:,.0f}"),
        row("prompt tokens p90 (the model's)", None, prompt(a), prompt(b), 90, "{:,.0f}"),
        row("tokens generated, mean (the model's)", None, generated(a), generated(b), None, "{:.1f}"),
        (
            "drafted tokens accepted (the model's)",
            "(report)",
            f"{sum(x.n_accepted for x in a)} of {sum(x.n_drafted for x in a)}",
            "-",
            f"{sum(x.n_accepted for x in b)} of {sum(x.n_drafted for x in b)}" if b else "-",
            "-",
        ),
        ("outcomes", "(report)", outcomes(everything), "-", outcomes(b_all) if b_all else "-", "-"),
    ]
    if b:  # where llama-server's time goes (our server's nextEdit.last has no such split)
        rows += [
            (
                f"{name} p50, ms (llama-server's timings, the model's)",
                "(report)",
                "-",
                "-",
                f"{percentile([getattr(x, key) or 0.0 for x in b], 50):,.0f}",
                "-",
            )
            for name, key in (("reading the prompt", "t_prompt_ms"), ("writing the answer", "t_answer_ms"))
        ]
    return rows


LATENCY_HEADER = ("figure", "goal", "ours", "result", "llama-server", "ours / theirs")
INTERFERENCE_HEADER = ("figure", "goal", "suggestions off", "suggestions on", "on / off")


def interference_rows(off: Typing, on: Typing, chats: Chats, goals: bool = True) -> list[tuple[str, ...]]:
    def near(a: float, b: float) -> str:
        return verdict(b <= a * NEAR, goals) if a else "-"

    rows: list[tuple[str, ...]] = []
    for q in (50, 90):
        x, y = percentile(off.side.times_ms, q), percentile(on.side.times_ms, q)
        rows.append(
            (
                f"completion p{q}, ms",
                f"on / off <= {NEAR:.1f}x",
                f"{x:,.0f}",
                f"{y:,.0f}",
                f"{ratio(y, x)} ({near(x, y)})",
            )
        )
    # The same requests in the same order on both sides: each one's on / off, where the model answered both
    # (the server's cache of recent completions answers the others at once). Robust where p50 is not: the
    # times are bimodal (cached and not), and a few moved cached ones move the median.
    paired = [
        b / a for a, b in zip(off.side.times_ms, on.side.times_ms, strict=True) if min(a, b) >= CACHED_MS
    ]
    if paired:
        x = statistics.median(paired)
        rows.append(
            (
                f"completion, each request on / off, median ({len(paired)} not cached)",
                f"<= {NEAR:.1f}x",
                "-",
                "-",
                f"{x:.2f}x ({verdict(x <= NEAR, goals)})",
            )
        )
    for resumed, where in ((True, "right after a line's pause"), (False, "within a line")):
        xs, ys = off.after_pause(resumed), on.after_pause(resumed)
        if xs and ys:
            x, y = percentile(xs, 50), percentile(ys, 50)
            label = f"completion p50 {where} ({len(ys)}), ms"
            rows.append((label, "(report)", f"{x:,.0f}", f"{y:,.0f}", ratio(y, x)))
    x, y = statistics.fmean(off.side.evaluated), statistics.fmean(on.side.evaluated)
    rows.append(
        ("completion: prompt tokens evaluated (mean)", "(report)", f"{x:.1f}", f"{y:.1f}", ratio(y, x))
    )
    if chats.ttft_ms["off"] and chats.ttft_ms["on"]:
        x, y = statistics.median(chats.ttft_ms["off"]), statistics.median(chats.ttft_ms["on"])
        n = len(chats.ttft_ms["on"])
        rows.append(
            (
                f"chat's first token after an edit (median of {n}), ms",
                f"on / off <= {NEAR:.1f}x",
                f"{x:,.0f}",
                f"{y:,.0f}",
                f"{ratio(y, x)} ({near(x, y)})",
            )
        )
    rows.append(("suggestions while typing", "(report)", "-", outcomes(on.suggestions) or "none", "-"))
    if chats.suggestions:
        rows.append(("suggestions before the chats", "(report)", "-", outcomes(chats.suggestions), "-"))
    return rows


ABOUT_LATENCY = (
    "The interpreter's {doc} ({lines} lines) open in our server over stdio LSP, `threads` 1; the window of "
    "the file where the edits are (from line {window}) read first ({warm_s:.0f} s after a request with no "
    "edits). Then {n} edits typed one keystroke per incremental didChange (parameters renamed in def "
    "signatures and at their uses, a call's argument changed, a keyword added to calls), each followed "
    "{delay_ms} ms later by `assistant/nextEdit`: its time from request to answer on the client's side, and "
    "the figures of `nextEdit.last`. llama-server (same model, `-t 1 -fa off --spec-type ngram-simple "
    "--cache-prompt`) gets the same prompts, built by the server's own `build_prompt` from the same edits "
    "and rendered by our engine's chat template (the same token counts), streamed from `/completion` with "
    "the same max_tokens and stop and closed by the same rule our engine ends an answer with (the model "
    "copying the region's lines again after its change); warmed with the no-edits prompt first. Its outcome "
    "is what our rules make of its answer; cut short: max_tokens reached (the region's characters / 3 + 48). "
    "Our server answers a substitution made again (the rest of a rename, the same argument changed) without "
    "the model: times are given over all requests and over those the model answered (llama-server's over "
    "the same prompts), token counts over the model's."
)
ABOUT_INTERFERENCE = (
    "bench/completion.py's typing session ({doc}'s last {held} lines typed again, {requests} completions) "
    "in two fresh servers, `nextEdit` off, then on; with it on, `assistant/nextEdit` goes {delay_ms} ms "
    "after the change at each line's {pause:g} s pause (a suggestion not done when typing resumes is "
    "superseded). Completion percentiles leave out the first, cold request; both sessions make the same "
    "requests in the same order, so each one's on / off is a ratio too (the median over those neither "
    "side answered from its cache of recent completions, under {cached:.0f} ms). Chat: in the server of the "
    "latency part once its edits are done, a conversation about the file (its first question not timed), "
    "then {rounds} follow-ups each asked right after an edit (a keyword added: the model's to follow), "
    "suggestions off and on in "
    "turn (with them on, the suggestion's request {gap_ms:.0f} ms before the chat's); the time from the "
    "chat request to its first streamed piece. A 2-core machine shared with other work: times are noisy, "
    "token counts are not."
)


def run(model: Path, binary: Path | None, quick: bool = False) -> list[report.Section]:
    """(N1)-(N3) on one model, printed as they come; returns the doc's two sections."""
    started, load_at_start = time.perf_counter(), load()
    # The checkout as the servers start (the commit is read now: the tree may move while the part runs).
    run_line = report.Run.now(threads=THREADS, model=model, figures="one run, percentiles over the requests")
    text = DOC_SOURCE.read_text(encoding="utf-8")
    steps = script(text)
    lines = text.splitlines()
    pauses = completion.pauses(lines, 2 if quick else HELD_BACK)
    show(
        f"\n(N) next-edit suggestions: {model.name}, {THREADS} thread, {DOC_NAME} ({len(lines)} lines), "
        f"{len(steps)} edits; nextEditDelayMs {DELAY_S * 1000:.0f}"
    )
    # The tiny model's tokenizer makes long prompts of the file: a larger context for --quick.
    more: dict[str, Any] = {"contextSize": 32768} if quick else {}
    chats = Chats(modes=("off", "on")) if quick else Chats()
    with tempfile.TemporaryDirectory(prefix="llama-lsp-bench-next-edit-") as tmp:
        workdir = Path(tmp)
        (workdir / "n1").mkdir()
        ours = asyncio.run(ours_on_warm_file(model, workdir / "n1", text, steps, chats, more))
        theirs = None
        if binary is not None:
            engine = NativeEngine(model, {"n_ctx": 512, "n_slots": 1})  # renders prompts; reads nothing
            process = llama_server_running(binary, model, workdir)
            try:
                theirs = theirs_on_warm_file(LlamaServer(process.port), engine, text, steps)
            finally:
                process.stop()
                engine.close()
            same = sum(
                x.n_prompt == y for x, y in zip(ours.answers, theirs.n_prompt, strict=True) if x.n_prompt
            )
            show(
                f"  our rendering of the prompts has the server's token count in {same} of "
                f"{len(modelled(ours.answers))}"
            )
        else:
            show(f"  (N2) skipped: {binary} missing")
        workspace = workdir / "n3"
        workspace.mkdir()
        (workspace / DOC_NAME).write_text(text, encoding="utf-8")
        show(f"  (N3) typing {len(pauses)} pauses, suggestions off")
        off = asyncio.run(typing_session(model, workspace, pauses, on=False, more=more))
        show(f"  (N3) typing {len(pauses)} pauses, suggestions on")
        on = asyncio.run(typing_session(model, workspace, pauses, on=True, more=more))
    latency = latency_rows(ours, theirs, goals=not quick)
    interference = interference_rows(off, on, chats, goals=not quick)
    show("")
    table([LATENCY_HEADER, *latency])
    show("")
    table([INTERFERENCE_HEADER, *interference])
    show(
        f"\nran {time.perf_counter() - started:.0f} s. A shared machine: times are noisy, token counts "
        "are not."
    )
    key = report.key_part(model.name)
    notes = f"load average {load_at_start} at the start, {load()} at the end (1 min)"
    run_line = dataclasses.replace(run_line, notes=notes)
    return [
        report.Section(
            f"bench/next-edit/{key}",
            f"Next-edit suggestions on a warm file ({model.stem})",
            run_line,
            [report.Table(LATENCY_HEADER, latency)],
            about=ABOUT_LATENCY.format(
                doc=DOC_NAME,
                lines=len(lines),
                window=ours.window_line + 1,
                warm_s=ours.warm_s,
                n=len(steps),
                delay_ms=round(DELAY_S * 1000),
            ),
        ),
        report.Section(
            f"bench/next-edit-cost/{key}",
            f"What next-edit suggestions cost completion and chat ({model.stem})",
            run_line,
            [report.Table(INTERFERENCE_HEADER, interference)],
            about=ABOUT_INTERFERENCE.format(
                doc=DOC_NAME,
                held=len({p.line for p in pauses}),
                requests=len(pauses),
                delay_ms=round(DELAY_S * 1000),
                pause=LINE_PAUSE_S,
                rounds=len(chats.modes),
                gap_ms=CHAT_GAP_S * 1000,
                cached=CACHED_MS,
            ),
        ),
    ]
