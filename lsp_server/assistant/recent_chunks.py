"""Inline completion's context from other files: a ring buffer of chunks of the files the user opened,
edited or saved recently, and the few of them a completion puts before the file it completes (as
llama.vscode's ring buffer of extra context, picked here by similarity). Plain text: no LSP, no model.

The chunks go first in the prompt, so they must stay the same while the user types: a different choice
makes the model read them and the whole file above the cursor again. So a document keeps its choice until
its cursor moves REPICK_LINES lines away from where it was made, or a chosen chunk leaves the ring, or the
ring gained chunks since and the cursor changed lines; the chosen chunks go in the order they entered the
ring (oldest first), so that a new one changes only the end of the extra text.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from .codebase import words

# 32 chunks of at most 64 lines: llama.vscode keeps 16 and sends them all; a completion here takes only
# the few most similar ones, so a larger pool costs no prompt tokens, and its memory (~100 KB of text and
# word sets) stays small.
RING_CHUNKS = 32
CHUNK_LINES = 64
FILE_SHARE = 16  # chunks of one file in the ring at most: an opened file never pushes out all others
EDITED_LINES = 8  # the latest edited lines of a file remembered until its chunks are cut again
# The extra text a completion takes, in tokens. Each different choice is read again with the whole file
# above the cursor; at ~100 tokens/s (the 0.5B at 1 thread) 512 tokens are about 5 s, once.
TOKEN_BUDGET = 512
CHARS_PER_TOKEN = 3  # a low estimate for code in Qwen2.5-Coder's vocabulary: the budget is not exceeded
CONTEXT_LINES = 32  # the lines above the cursor (and up to SUFFIX lines below) it is compared with
REPICK_LINES = 16
MIN_LINES = 4  # of a chunk cut to fit the budget
MIN_CHARS = 160  # budget left under which no more chunks are tried


@dataclass(frozen=True)
class Chunk:
    """Lines start..end (1-based, inclusive) of an open document."""

    uri: str
    name: str  # the file's path as prompts name it
    start_line: int
    end_line: int
    text: str
    words: frozenset[str] = field(repr=False)

    @property
    def place(self) -> str:
        """Where it is, as the stats show it: `path:start-end`."""
        return f"{self.name}:{self.start_line}-{self.end_line}"


@dataclass
class _Stale:
    """A document edited since its chunks were cut: cut again only when another file wants them, so
    that typing costs nothing here."""

    name: str
    text: str
    edited: list[int]  # 0-based lines, latest last


@dataclass(frozen=True)
class _Choice:
    line: int
    generation: int
    chunks: tuple[Chunk, ...]  # as chosen (a chunk may be cut to fit the budget)


def cut(text: str) -> list[tuple[int, int, str]]:
    """A file's chunks as (first line, last line, text): a new one at each top-level line that follows
    a blank line or ends a decorator run (where definitions start), and at CHUNK_LINES lines at most."""
    lines = text.splitlines(keepends=True)
    chunks = []
    start = 0
    for number in range(1, len(lines) + 1):
        at_end = number == len(lines)
        if not at_end:
            line = lines[number]
            top_level = bool(line.strip()) and not line[0].isspace() and not line.startswith((")", "]", "}"))
            follows_blank = not lines[number - 1].strip()
            boundary = top_level and follows_blank and number - start >= 4
        if at_end or boundary or number - start >= CHUNK_LINES:
            body = "".join(lines[start:number])
            if body.strip():
                chunks.append((start + 1, number, body))
            start = number
    return chunks


def _head(chunk: Chunk, chars: int) -> Chunk | None:
    """The chunk, or its first lines that fit in `chars` (a definition's head says most: its signature
    and docstring); None when fewer than MIN_LINES fit."""
    if len(chunk.text) <= chars:
        return chunk
    lines = chunk.text.splitlines(keepends=True)
    kept: list[str] = []
    for line in lines:
        if sum(map(len, kept)) + len(line) > chars:
            break
        kept.append(line)
    if len(kept) < MIN_LINES:
        return None
    return replace(chunk, end_line=chunk.start_line + len(kept) - 1, text="".join(kept))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


class RecentChunks:
    """The ring buffer, and each document's current choice from it."""

    def __init__(self, size: int = RING_CHUNKS, token_budget: int = TOKEN_BUDGET):
        self._ring: OrderedDict[tuple[str, int], Chunk] = OrderedDict()  # oldest first
        self._stale: dict[str, _Stale] = {}
        self._choices: dict[str, _Choice] = {}
        self._generation = 0  # counts the ring's admissions
        self._size = size
        self._budget_chars = token_budget * CHARS_PER_TOKEN

    def __len__(self) -> int:
        return len(self._ring)

    def opened(self, uri: str, name: str, text: str) -> None:
        """A document opened (or saved): its first chunks enter as the newest."""
        self._stale.pop(uri, None)
        self._admit(uri, name, text, edited=[])

    def edited(self, uri: str, name: str, text: str, lines: Iterable[int]) -> None:
        """A document changed at `lines` (0-based; none: anywhere)."""
        stale = self._stale.setdefault(uri, _Stale(name, text, []))
        stale.name, stale.text = name, text
        for line in lines:
            if line in stale.edited:
                stale.edited.remove(line)
            stale.edited.append(line)
        del stale.edited[:-EDITED_LINES]

    def saved(self, uri: str, name: str, text: str) -> None:
        stale = self._stale.pop(uri, None)
        self._admit(uri, name, text, edited=stale.edited if stale else [])

    def closed(self, uri: str) -> None:
        """A document closed or its file deleted: its chunks go."""
        self._stale.pop(uri, None)
        self._choices.pop(uri, None)
        for key in [key for key in self._ring if key[0] == uri]:
            del self._ring[key]

    def chunks(self) -> list[Chunk]:
        """The ring, oldest first (chunks of documents edited since they were cut included as cut)."""
        return list(self._ring.values())

    def pick(self, uri: str, line: int, context: str) -> list[Chunk]:
        """The chunks a completion at `line` of document `uri` puts first: its current choice, or a new
        one of the chunks of other documents most similar to `context` (the text around the cursor)
        within the token budget."""
        for other in [other for other in self._stale if other != uri]:
            stale = self._stale.pop(other)
            self._admit(other, stale.name, stale.text, stale.edited)
        choice = self._choices.get(uri)
        if choice is not None and all((c.uri, c.start_line) in self._ring for c in choice.chunks):
            moved = abs(line - choice.line)
            if moved < REPICK_LINES and (choice.generation == self._generation or moved == 0):
                return list(choice.chunks)
        wanted = words(context)
        chosen = self._choose(uri, frozenset(wanted)) if wanted else []
        self._choices[uri] = _Choice(line, self._generation, tuple(chosen))
        return chosen

    def _choose(self, uri: str, context: frozenset[str]) -> list[Chunk]:
        scored = [
            (jaccard(chunk.words, context), order, chunk)
            for order, chunk in enumerate(self._ring.values())
            if chunk.uri != uri
        ]
        scored.sort(key=lambda item: (-item[0], -item[1]))  # most similar, then newest
        chosen: list[tuple[int, Chunk]] = []
        left = self._budget_chars
        for score, order, chunk in scored:
            if score <= 0 or left < MIN_CHARS:
                break
            fitted = _head(chunk, left - len(chunk.name) - 2)
            if fitted is not None:
                chosen.append((order, fitted))
                left -= len(fitted.text) + len(chunk.name) + 2
        return [chunk for _, chunk in sorted(chosen, key=lambda item: item[0])]  # ring order: see the top

    def _admit(self, uri: str, name: str, text: str, edited: list[int]) -> None:
        """Cuts the document again and puts its chunks in: those with edited lines newest, then its
        first ones, FILE_SHARE at most."""
        for key in [key for key in self._ring if key[0] == uri]:
            del self._ring[key]
        pieces = cut(text)
        touched = [p for p in pieces if any(p[0] <= line + 1 <= p[1] for line in edited)]
        rest = [p for p in pieces if p not in touched]
        kept = rest[: max(FILE_SHARE - len(touched), 0)] + touched[-FILE_SHARE:]
        for start, end, body in kept:
            self._ring[(uri, start)] = Chunk(uri, name, start, end, body, frozenset(words(body)))
            self._ring.move_to_end((uri, start))
        while len(self._ring) > self._size:
            self._ring.popitem(last=False)
        self._generation += 1
