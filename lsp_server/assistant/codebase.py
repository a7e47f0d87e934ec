"""The workspace index: every file's code as chunks that a question in words can find, ranked lexically.

A chunk is a unit a reader would point at: a function, a method, a small class whole, or a run of
the code between definitions, where languages.outline knows the file's language (Python through the
standard library's `ast`, the others through tree-sitter's grammars: one parse per file); in other
files, and in one that does not parse, a window of CHUNK_LINES lines. Each chunk is counted as words
(identifiers split at snake_case and camelCase, lowercased, stemmed by Snowball's English stemmer,
English function words left out), its path's and symbol's words counted PATH_WEIGHT and SYMBOL_WEIGHT
times more, and ranked with BM25 (Lucene's variant, as the `bm25s` package scores it); a query's word
that no chunk holds is looked for as words written together (`envlogdir`: env_log_dir). A test file's
chunks count TEST_WEIGHT as much, documentation's PROSE_WEIGHT and configuration's CONFIGURATION_WEIGHT:
a test, a changelog or a settings file that merely names a function should not outrank the code that
implements it.

A chunk is kept as its words' ids and counts, not as text: a workspace of ten thousand files holds
millions of words. Once indexed, every chunk lives in the ranker (`_Ranker`), once: its lines and symbol
in arrays, its words as postings column by word (chunk number and count, 6 bytes each; the BM25 score
of a word in a chunk is computed when a query asks for the word, in bm25s's precision, so the scores
are bm25s's to the bit: a test holds them to it). A ranker never changes; a changed file waits as its
own cut (`_Cut`) until a new ranker merges it in, in one pass over the postings and in a thread of its
own, started by the search that finds it (CodebaseIndex says what a search sees meanwhile). For
10,000 files of the standard library (7 million postings) its arrays take 50 MB, where every file's own
arrays, their chunks as objects and a matrix of scores beside them took three times that.

The files are git's (`git ls-files`: tracked and untracked, not ignored) where the folder is a
repository, else every file the tools see (tools/workspace_files.py); binary, generated-looking
(minified) and huge files are skipped and counted. An index is saved as its ranker's arrays (numpy's
.npz, no pickle, every array checked when read) and loaded back, each file re-read only when its size or
modification time changed. A build may run in a thread while
searches and updates come from another. Plain Python; no LSP types, no model.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import itertools
import json
import logging
import os
import re
import subprocess
import sys
import threading
import zipfile
import zlib
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import Stemmer

from . import languages
from .tools.schemas import glob_regex
from .tools.workspace_files import MAX_FILE_BYTES, SKIPPED_DIRS, ToolError, WorkspaceFiles

log = logging.getLogger("llama_lsp.codebase")

FORMAT_VERSION = 5  # of the saved index: another is read as none (5: words stemmed by Snowball)
CHUNK_LINES = 40  # a window of a file that is not Python, and the longest run of module-level lines
MAX_FILES = 20_000
MERGE_FILES = 1_000  # a build merges the files it has read into the ranker every this many
LIST_PAUSE_EVERY = 500  # listing the files to index pauses (for the model's work) every this many
MAX_CHUNK_WORDS = 2_000  # a chunk's words past these are not counted (a data table, a long literal)
PATH_WEIGHT = 3
SYMBOL_WEIGHT = 3
TEST_WEIGHT = 0.5
PROSE_WEIGHT = 0.5  # documentation: it describes the code, but the question is for the code
CONFIGURATION_WEIGHT = 0.5  # settings, build files, licenses, data: they name the code's options, not it
LONG_LINE_CHARS = 1_000  # a file with such lines is minified or generated: not code to read
SNIPPET_LINES = 8
# A file's rank (rank_files): the code a change is about often has several chunks that match its words
# (the function, its caller, the class), where a file that merely mentions them has one; counting each
# further chunk at a decaying weight ranked the changed file in the first five for 0.89 -> 0.93 of
# eval/codebase's cases and 0.91 -> 0.94 of its held-out repositories' (docs/quality.md).
FILE_CHUNK_DECAY = 0.3
FILE_RANK_CHUNKS = 500  # the best chunks a file ranking adds up
# BM25's parameters, bm25s's defaults (Lucene's variant).
BM25_K1 = 1.5
BM25_B = 0.75
MAX_COUNT = 0xFFFF  # a word's count in one chunk, at most (its array holds 16 bits)
# A query's word the index lacks is looked for as words written together (envlogdir) when it is this
# long, in parts of MIN_JOINED_PART letters or more (shorter ones split almost any word).
MIN_JOINED_PART = 3
MAX_JOINED_CHARS = 40

# English function words: they say nothing about where the code is.
_STOP_WORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "from",
        "into",
        "when",
        "what",
        "which",
        "where",
        "there",
        "their",
        "then",
        "than",
        "them",
        "they",
        "have",
        "has",
        "had",
        "not",
        "are",
        "was",
        "were",
        "been",
        "being",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "does",
        "did",
        "doing",
        "done",
        "its",
        "also",
        "only",
        "just",
        "more",
        "most",
        "some",
        "such",
        "each",
        "other",
        "any",
        "all",
        "both",
        "how",
        "why",
        "who",
        "whom",
        "whose",
    ]
)
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_PART = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def words(text: str) -> list[str]:
    """The words of text that may name code, in order, repeated as they are: identifiers split at
    snake_case and camelCase, lowercased, without short and common words, stemmed so that `handles`
    finds `handle` and `handling`."""
    found = []
    for token in _IDENTIFIER.findall(text):
        for part in _PART.findall(token):
            word = part.lower()
            if len(word) < 3 or word in _STOP_WORDS:
                continue
            found.append(_stem(word))
    return found


_stemmers = threading.local()  # a Stemmer keeps state between calls: one per thread


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    """A word's stem by Snowball's English stemmer (bm25s's own choice, through PyStemmer): `handles`,
    `handled` and `handling` are `handl`, `classes` is `class`, `proxies` and `proxy` are `proxi`."""
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    return str(stemmer.stemWord(word))


def query_words(query: str, vocabulary: Mapping[str, int]) -> list[str]:
    """The words a search looks for: the query's words, each that the index does not hold split into
    words it does where it can (`envlogdir`: env, log, dir; `tomllib`: toml, lib), since a name is often
    written in prose as one word where the code splits it (env_log_dir)."""
    return [part for word in words(query) for part in _joined_words(word, vocabulary)]


def _joined_words(word: str, vocabulary: Mapping[str, int]) -> list[str]:
    """`word`'s split into the fewest words of `vocabulary` (MIN_JOINED_PART letters each at least), or
    [word] where it is one of them, or is short or long (a hash), or has no such split."""
    if word in vocabulary or not 2 * MIN_JOINED_PART <= len(word) <= MAX_JOINED_CHARS:
        return [word]
    fewest: list[list[str] | None] = [[]] + [None] * len(word)  # fewest[i]: the best split of word[:i]
    for end in range(MIN_JOINED_PART, len(word) + 1):
        for start in range(end - MIN_JOINED_PART + 1):
            before = fewest[start]
            if before is None:
                continue
            part = _stem(word[start:end])
            current = fewest[end]
            if part in vocabulary and (current is None or len(before) + 1 < len(current)):
                fewest[end] = [*before, part]
    return fewest[-1] or [word]


def is_prose(path: str) -> bool:
    """Whether a path is documentation rather than code: text, Markdown, reStructuredText, a changelog."""
    name = path.lower().rsplit("/", 1)[-1]
    return name.endswith((".md", ".rst", ".txt", ".adoc")) or name.startswith(
        ("changelog", "changes", "history", "news")
    )


def is_configuration(path: str) -> bool:
    """Whether a path is configuration or data rather than code: settings (YAML, TOML, INI, JSON...),
    a dotfile, a build or container recipe, a license, an image written as text (SVG)."""
    name = path.lower().rsplit("/", 1)[-1]
    return (
        name.endswith(_CONFIGURATION_SUFFIXES)
        or name.startswith((".", "license", "licence", "copying", "notice", "dockerfile", "makefile"))
        or name in ("authors", "contributors", "codeowners")
    )


_CONFIGURATION_SUFFIXES = (
    *(".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".json", ".jsonc", ".lock", ".xml", ".plist"),
    *(".csv", ".tsv", ".svg", ".properties", ".env"),
)


def file_weight(path: str) -> float:
    """How much a file's chunks count: a test, a document or a configuration file that names the code
    counts less than the code."""
    # Any file of the tests, not only those a check runs (languages.is_test_file): a fixture or a spec
    # names the code as much as a test does.
    if languages.belongs_to_tests(path):
        return TEST_WEIGHT
    if is_prose(path):
        return PROSE_WEIGHT
    return CONFIGURATION_WEIGHT if is_configuration(path) else 1.0


@dataclass(frozen=True)
class Chunk:
    """A unit of a file the index ranks: lines start..end (1-based, inclusive) and what it defines."""

    start_line: int
    end_line: int
    symbol: str | None


@dataclass(frozen=True)
class Hit:
    """A chunk a query found."""

    path: str  # relative to the first folder (absolute in others), `/`-separated
    start_line: int
    end_line: int
    score: float
    symbol: str | None
    snippet: str  # its first lines


@dataclass(slots=True)
class _File:
    """An indexed file as it was on disk when read: one whose size or time differs is read again."""

    size: int
    mtime_ns: int


@dataclass(slots=True)
class _Cut:
    """A file's chunks and their words as ids (the index's vocabulary) with counts, chunk after chunk:
    chunk i's are terms[ends[i-1]:ends[i]]. Held only until the ranker takes the file in."""

    chunks: list[Chunk]
    terms: array[int]  # "I"
    counts: array[int]  # "H"
    ends: array[int]  # "I"


@dataclass
class Skipped:
    """What the index left out, by why."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, why: str) -> None:
        self.counts[why] = self.counts.get(why, 0) + 1


class Stopped(Exception):
    """Raised by a `pause` to end the background work that called it (the server is shutting down)."""


_ABSENT = object()


class CodebaseIndex:
    """The index of the files under `roots` (the workspace folders).

    Its content is a ranker, built at some point, and the changes since: each changed file's new chunks
    (a `_Cut`), or None for a file gone. A search ranks the ranker's chunks, less those of the changed
    files, together with the changed files' new chunks scored by the ranker's statistics, and starts a
    refresh in a thread: a new ranker with the changes merged in (0.1 to 0.5 s at 10,000 files), which
    replaces the old one when it is done. A search never waits for it; until then a changed file ranks
    about where it will (the statistics lack its change), and one removed is not found."""

    def __init__(
        self,
        roots: Iterable[Path],
        exclude: Iterable[str] = (),
        max_file_bytes: int = MAX_FILE_BYTES,
        pause: Callable[[], None] | None = None,
    ) -> None:
        self.workspace = WorkspaceFiles(list(roots))
        self.exclude = tuple(exclude)  # globs over a file's shown path (codebaseExclude)
        self.max_file_bytes = max_file_bytes
        # Called between pieces of background work (a build's files, a refresh's steps): it may wait
        # while the model works, or raise Stopped.
        self.pause = pause
        self._files: dict[str, _File] = {}  # by shown path
        self._vocabulary: dict[str, int] = {}  # word -> id; grows, never shrinks (a few MB at most)
        self._ranker = _Ranker.empty()
        self._pending: dict[str, _Cut | None] = {}  # by shown path: changed since the ranker was built
        self._overlay: _Ranker | None = None  # the pending cuts as a ranker, made when a search needs it
        # A build runs in a thread while searches and updates come from the server's: the files, the
        # pending changes and the ranker change under this lock (a file is read and cut into chunks, and
        # a ranker merged, outside it).
        self._lock = threading.RLock()
        self._merging = threading.Lock()  # one merge at a time: each starts from the last one's ranker
        self._refreshing: threading.Thread | None = None
        self.skipped = Skipped()
        self.ready = False  # every file was indexed once

    @property
    def n_files(self) -> int:
        return len(self._files)

    @property
    def n_chunks(self) -> int:
        with self._lock:
            ranker, pending = self._ranker, dict(self._pending)
        stale = sum(end - begin for begin, end in ranker.chunk_ranges(pending))
        return ranker.n_chunks - stale + sum(len(cut.chunks) for cut in pending.values() if cut is not None)

    # ---- building ----------------------------------------------------------------------------------

    def listed_files(self, pause: Callable[[], None] | None = None) -> dict[str, Path]:
        """The files to index, shown path -> path: git's where a folder is a repository (.gitignore
        respected), else every file the tools see. `pause` is called now and then (background work: a
        walk of 10,000 files is 0.4 s of Python, which would slow the server's requests meanwhile)."""
        found: dict[str, Path] = {}
        walked: dict[Path, str] | None = None  # every folder's files, walked once where git lists none
        for root in self.workspace.roots:
            tracked = _git_files(root)
            if tracked is None and walked is None:
                walked = self.workspace.files(pause=pause)
            paths = tracked if tracked is not None else [p for p in walked or {} if p.is_relative_to(root)]
            for number, path in enumerate(paths):
                if pause is not None and number % LIST_PAUSE_EVERY == 0:
                    pause()
                if len(found) >= MAX_FILES:
                    self.skipped.add(f"past {MAX_FILES} files")
                    continue
                shown = self.workspace.display(path)
                if excluded(shown, self.exclude):
                    self.skipped.add("excluded (codebaseExclude)")
                    continue
                found.setdefault(shown, path)
        return found

    def build(
        self,
        pause: Callable[[], None] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Indexes every file that is new or changed since it was indexed (all of them the first time),
        and forgets the files that are gone; the ranker has them all when it returns. `pause` (else the
        index's own) is called between files (it may wait while the model works); `progress(done,
        total)` now and then."""
        pause = pause or self.pause
        self.skipped = Skipped()
        listed = self.listed_files(pause)
        for gone in set(self._files) - set(listed):
            self._forget(gone)
        total = len(listed)
        for done, (shown, path) in enumerate(sorted(listed.items()), 1):
            if pause is not None:
                pause()
            self._refresh(shown, path)
            if progress is not None and (done % 50 == 0 or done == total):
                progress(done, total)
            # Merged as it goes: a search during the build ranks what is read so far without cutting
            # thousands of files into a ranker of their own, and the files' cuts do not pile up.
            if len(self._pending) >= MERGE_FILES:
                self._merge_pending(pause)
        self._merge_pending(pause)
        self.ready = True

    def update(self, path: Path, text: str | None = None) -> None:
        """Indexes one file again (a save, a change, a new file): with `text`, as the editor holds it;
        a file that is gone, or outside the folders, is forgotten."""
        try:
            path = path.resolve()
        except (OSError, RuntimeError):
            return
        if not self.workspace.contains(path) or not _listable(self.workspace.display(path)):
            return
        shown = self.workspace.display(path)
        if excluded(shown, self.exclude):
            self._forget(shown)
            return
        if text is None and not path.is_file():
            self._forget(shown)
            return
        self._refresh(shown, path, text)

    def _refresh(self, shown: str, path: Path, text: str | None = None) -> None:
        try:
            status = path.stat()
        except OSError:
            self._forget(shown)
            return
        if status.st_size > self.max_file_bytes:  # also one indexed before the bound was lowered
            self.skipped.add(f"over {self.max_file_bytes >> 10} KB")
            self._forget(shown)
            return
        known = self._files.get(shown)
        if (
            text is None
            and known is not None
            and (known.size, known.mtime_ns) == (status.st_size, status.st_mtime_ns)
        ):
            return
        if text is None:
            text = self._read(path, status.st_size)
            if text is None:
                self._forget(shown)
                return
        cut = self._cut(
            (chunk, sorted(Counter(chunk_words).items())) for chunk, chunk_words in chunks_of(shown, text)
        )
        with self._lock:
            self._files[shown] = _File(status.st_size, status.st_mtime_ns)
            self._pending[shown] = cut
            self._overlay = None

    def _cut(self, chunks: Iterable[tuple[Chunk, Iterable[tuple[str, int]]]]) -> _Cut:
        """A file's cut from its chunks, each with its words and their counts."""
        kept, terms, counts, ends = [], array("I"), array("H"), array("I")
        vocabulary = self._vocabulary
        with self._lock:  # the vocabulary grows from the build's thread and the server's
            for chunk, chunk_counts in chunks:
                for word, count in chunk_counts:
                    terms.append(vocabulary.setdefault(word, len(vocabulary)))
                    counts.append(min(count, MAX_COUNT))
                ends.append(len(terms))
                kept.append(chunk)
        return _Cut(kept, terms, counts, ends)

    def _forget(self, shown: str) -> None:
        with self._lock:
            if self._files.pop(shown, None) is None:
                return
            if self._ranker.has(shown):
                self._pending[shown] = None
            else:
                self._pending.pop(shown, None)
            self._overlay = None

    def _read(self, path: Path, size: int) -> str | None:
        try:
            data = path.read_bytes()
        except OSError:
            self.skipped.add("unreadable")
            return None
        if b"\0" in data[:8192]:
            self.skipped.add("binary")
            return None
        text = data.decode("utf-8", errors="replace")
        if any(len(line) > LONG_LINE_CHARS for line in text.splitlines()[:200]):
            self.skipped.add("minified or generated")
            return None
        return text

    # ---- the ranker ---------------------------------------------------------------------------------

    def _merge_pending(self, pause: Callable[[], None] | None = None) -> None:
        """A new ranker: the last one with the pending changes merged in (those that come meanwhile
        stay pending). `pause` is called between its steps (a tenth of a second each at 10,000 files)."""
        with self._merging:
            with self._lock:
                changes, base, n_words = dict(self._pending), self._ranker, len(self._vocabulary)
            if not changes:
                return
            merged = base.merged(changes, n_words, pause)
            with self._lock:
                self._ranker = merged
                for shown, change in changes.items():
                    if self._pending.get(shown, _ABSENT) is change:
                        del self._pending[shown]
                self._overlay = None
            del base, changes
            _return_freed_memory()

    def _start_refresh(self) -> None:
        """Merges the pending changes in a thread, unless one does already (called under the lock)."""
        if self._refreshing is not None and self._refreshing.is_alive():
            return
        self._refreshing = threading.Thread(target=self._refresh_ranker, name="codebase-ranker", daemon=True)
        self._refreshing.start()

    def _refresh_ranker(self) -> None:
        try:
            if self.pause is not None:
                self.pause()
            self._merge_pending(self.pause)
        except Stopped:
            pass
        except Exception:  # a bug of ours: searches go on from the last ranker and the pending changes
            log.exception("the index's ranker was not refreshed")

    def refreshed(self, timeout: float | None = None) -> bool:
        """Waits up to `timeout` s for a refresh under way to end; whether none is under way now."""
        thread = self._refreshing
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    # ---- searching ---------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        """The chunks that best match the words of `query`, best first: each by its own score and its
        file's other matching chunks (_with_file_evidence)."""
        hits = []
        found = self._with_file_evidence(self._best_chunks(query, max(limit, FILE_RANK_CHUNKS)))
        for shown, chunk, score in found[:limit]:
            hits.append(
                Hit(
                    shown,
                    chunk.start_line,
                    chunk.end_line,
                    round(score, 4),
                    chunk.symbol,
                    self._snippet(shown, chunk),
                )
            )
        return hits

    def rank_files(self, query: str, limit: int = 10) -> list[tuple[str, float]]:
        """The files of search's chunks, best first, each with its best chunk's score there: its file's
        score (_with_file_evidence)."""
        best: dict[str, float] = {}
        for shown, _chunk, score in self._with_file_evidence(self._best_chunks(query, FILE_RANK_CHUNKS)):
            best.setdefault(shown, round(score, 4))
        return list(best.items())[:limit]

    @staticmethod
    def _with_file_evidence(found: list[tuple[str, Chunk, float]]) -> list[tuple[str, Chunk, float]]:
        """The chunks `found` (best first) scored again with their file's evidence, best first: a file's
        score is its best chunk's, plus FILE_CHUNK_DECAY times its second best's, that squared times its
        third's...; its best chunk gets that score, and each other chunk its own plus what the file's
        other chunks add (so a file's chunks stay in their order, after its best)."""
        total: dict[str, float] = {}
        weight: dict[str, float] = {}
        for shown, _chunk, score in found:
            current = weight.get(shown, 1.0)
            total[shown] = total.get(shown, 0.0) + current * score
            weight[shown] = current * FILE_CHUNK_DECAY
        best: dict[str, float] = {}
        for shown, _chunk, score in found:
            best.setdefault(shown, score)
        rescored = [(shown, chunk, score + total[shown] - best[shown]) for shown, chunk, score in found]
        return sorted(rescored, key=lambda item: -item[2])  # stable: ties keep _best_chunks' order

    def chunks(self) -> list[tuple[str, Chunk]]:
        """Every chunk of the index, with its file's shown path, in path order."""
        with self._lock:
            ranker, pending = self._ranker, dict(self._pending)
        found = [(shown, chunk) for shown, chunk in ranker.chunks() if shown not in pending]
        found += [(shown, chunk) for shown, cut in pending.items() if cut is not None for chunk in cut.chunks]
        return sorted(found, key=lambda item: (item[0], item[1].start_line))

    def definitions(self, name: str, language: str = "python") -> list[tuple[str, int, int]]:
        """Where the function, class or method `name` is defined in files of `language` (languages.py's
        name: a Python block's names are Python's; the symbol table holds every outlined language's):
        (shown path, first line, last line) each, in path order."""
        with self._lock:
            ranker, pending = self._ranker, dict(self._pending)
        found = [place for place in ranker.definitions(name) if place[0] not in pending]
        for shown, cut in pending.items():
            for chunk in cut.chunks if cut is not None else ():
                if chunk.symbol is not None and chunk.symbol.rsplit(".", 1)[-1] == name:
                    found.append((shown, chunk.start_line, chunk.end_line))
        return sorted(place for place in found if _language_of(place[0]) == language)

    def _best_chunks(self, query: str, limit: int) -> list[tuple[str, Chunk, float]]:
        with self._lock:
            wanted = [
                self._vocabulary[word]
                for word in dict.fromkeys(query_words(query, self._vocabulary))
                if word in self._vocabulary
            ]
            if not wanted:
                return []
            ranker, pending, overlay = self._ranker, dict(self._pending), self._overlay
            if pending and overlay is None:  # milliseconds for the few files an edit changes
                cuts = {shown: cut for shown, cut in pending.items() if cut is not None}
                overlay = self._overlay = _Ranker.empty().merged(cuts, len(self._vocabulary))
            if pending:
                self._start_refresh()
        scores = ranker.scores(wanted)
        for begin, end in ranker.chunk_ranges(pending):  # the changed files' chunks as they were
            scores[begin:end] = 0
        found = [(score, *ranker.chunk(i)) for score, i in _top(scores, limit)]
        if overlay is not None:
            # The changed files' new chunks, scored by the ranker's statistics (its chunks' number and
            # average length, its words' frequencies): near what the refreshed ranker will give them,
            # whose statistics count the change too.
            found += [(score, *overlay.chunk(i)) for score, i in _top(overlay.scores(wanted, ranker), limit)]
            found.sort(key=lambda item: (-item[0], item[1], item[2]))
        del scores
        _return_freed_memory()  # the scores' temporaries (_return_freed_memory says why)
        return [(shown, chunk, score) for score, shown, _position, chunk in found[:limit]]

    def _snippet(self, shown: str, chunk: Chunk) -> str:
        try:
            path = self.workspace.resolve(shown)
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except (OSError, ToolError):  # gone since, or refused by the path rule
            return ""
        return "\n".join(
            lines[chunk.start_line - 1 : min(chunk.end_line, chunk.start_line + SNIPPET_LINES - 1)]
        )

    # ---- saving ------------------------------------------------------------------------------------

    def save(self, target: Path) -> None:
        """Writes the index to `target` (numpy's .npz, deflated: a third of the arrays' size, for a
        tenth of a second more at load at 10,000 files; the ranker's arrays as they are), through a
        temporary file and a rename."""
        self._merge_pending(self.pause)
        with self._lock:
            ranker, pending = self._ranker, set(self._pending)
            # A file changed since the merge is saved as of no time: the next start reads it again.
            stamps = [self._files.get(shown) if shown not in pending else None for shown in ranker.paths]
            vocabulary = list(itertools.islice(self._vocabulary, ranker.n_words))
        arrays = ranker.saved()
        header = {"version": FORMAT_VERSION, "roots": [str(root) for root in self.workspace.roots]}
        arrays["header"] = _text_array(json.dumps(header))
        arrays["stamps"] = np.array(
            [(stamp.size, stamp.mtime_ns) if stamp is not None else (-1, -1) for stamp in stamps], np.int64
        ).reshape(-1, 2)
        arrays["words"] = _text_array("\0".join(vocabulary))
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(target.name + f".{os.getpid()}.tmp")
        with open(temporary, "wb") as out:
            np.savez_compressed(out, allow_pickle=False, **arrays)
        os.replace(temporary, target)
        del arrays
        _return_freed_memory()  # the file's copies of the arrays

    def load(self, source: Path) -> bool:
        """Reads an index saved for these folders; False (and nothing read) when there is none, or it is
        another version's, another folder's or unreadable: it is untrusted input, checked as read."""
        try:
            with np.load(source, allow_pickle=False) as saved:
                arrays = {name: saved[name] for name in saved.files}
            header = json.loads(_array_text(arrays["header"]))
            if not isinstance(header, dict) or header.get("version") != FORMAT_VERSION:
                return False
            if header.get("roots") != [str(root) for root in self.workspace.roots]:
                return False
            words_text = _array_text(arrays["words"])
            vocabulary_list = words_text.split("\0") if words_text else []
            vocabulary = {word: number for number, word in enumerate(vocabulary_list)}
            if len(vocabulary) != len(vocabulary_list):
                raise ValueError("a word is saved twice")
            ranker = _Ranker.loaded(arrays, len(vocabulary))
            stamps = _checked(arrays["stamps"], np.int64, (len(ranker.paths), 2))
        except (OSError, ValueError, TypeError, KeyError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
            log.info("no saved index read from %s: %s", source, exc)
            return False
        with self._lock:
            self._vocabulary = vocabulary
            self._files = {
                shown: _File(int(size), int(mtime_ns))
                for shown, (size, mtime_ns) in zip(ranker.paths, stamps.tolist(), strict=True)
            }
            self._ranker = ranker
            self._pending = {}
            self._overlay = None
        _return_freed_memory()  # the file's copies of the arrays
        return True


def _top(scores: np.ndarray, limit: int) -> list[tuple[float, int]]:
    """The `limit` best scores above 0 with their positions, best first, ties in position order."""
    top = (
        np.argpartition(-scores, min(limit, len(scores) - 1))[:limit]
        if len(scores) > limit
        else np.arange(len(scores))
    )
    return sorted(
        ((float(scores[i]), int(i)) for i in top if scores[i] > 0), key=lambda item: (-item[0], item[1])
    )


class _Ranker:
    """The chunks of a set of files and BM25 over them (bm25s's Lucene variant, its defaults), as they
    were when built; never changed after, so a search may use it while a newer one is merged.

    Files in path order, their chunks in file order, each chunk's lines, symbol and length (words
    counted), and the words' postings column by word (CSC, as bm25s holds its matrix): chunk numbers
    and counts, 6 bytes a posting. A word's score in a chunk is computed when a query asks for the word
    rather than held (it changes with every chunk added), with the same operations in the same
    precision as bm25s, so the scores are the same to the bit."""

    def __init__(
        self,
        paths: list[str],
        first_chunk: np.ndarray,
        lines: np.ndarray,
        lengths: np.ndarray,
        symbols: np.ndarray,
        starts: np.ndarray,
        rows: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        self.paths = paths  # sorted
        self.first_chunk = first_chunk  # int64, len(paths) + 1: file i's chunks are [first[i], first[i+1])
        self.lines = lines  # int32 (chunks, 2): first and last line
        self.lengths = lengths  # uint32: the words a chunk is counted as
        self.symbols = symbols  # object: str or None
        self.starts = starts  # int64, words + 1: word w's postings are [starts[w], starts[w+1])
        self.rows = rows  # int32: a posting's chunk
        self.counts = counts  # uint16: the word's count in that chunk
        n_chunks = len(lengths)
        # A chunk with no words is one empty word to bm25s: its length is 1.
        bm25_lengths = np.maximum(lengths, 1).astype(np.float64)
        self.average_length = float(bm25_lengths.mean()) if n_chunks else 1.0
        self._length_norm = self.length_norm(bm25_lengths)
        frequencies = np.diff(starts)
        self._idf = _idf(n_chunks, frequencies)
        weights = np.array([file_weight(shown) for shown in paths], dtype=np.float64)
        self._weights = np.repeat(weights, np.diff(first_chunk))
        self._symbol_table: dict[str, array[int]] | None = None  # made when first asked

    @classmethod
    def empty(cls) -> _Ranker:
        return cls(
            [],
            np.zeros(1, np.int64),
            np.empty((0, 2), np.int32),
            np.empty(0, np.uint32),
            np.empty(0, object),
            np.zeros(1, np.int64),
            np.empty(0, np.int32),
            np.empty(0, np.uint16),
        )

    @property
    def n_chunks(self) -> int:
        return len(self.lengths)

    @property
    def n_words(self) -> int:
        return len(self.starts) - 1

    def length_norm(self, bm25_lengths: np.ndarray) -> np.ndarray:
        """BM25's k1 * (1 - b + b * length / average length), per chunk, by this ranker's average."""
        return BM25_K1 * ((1 - BM25_B) + BM25_B * bm25_lengths / self.average_length)

    def idf(self, word: int) -> np.floating[Any]:
        return self._idf[word] if word < len(self._idf) else _idf(self.n_chunks, np.zeros(1, np.int64))[0]

    def has(self, shown: str) -> bool:
        return self._file_number(shown) is not None

    def chunk_ranges(self, shown_paths: Iterable[str]) -> list[tuple[int, int]]:
        """The chunk numbers of those files this ranker holds: [begin, end) each."""
        numbers = [number for number in map(self._file_number, shown_paths) if number is not None]
        return [(int(self.first_chunk[number]), int(self.first_chunk[number + 1])) for number in numbers]

    def _file_number(self, shown: str) -> int | None:
        at = bisect.bisect_left(self.paths, shown)
        return at if at < len(self.paths) and self.paths[at] == shown else None

    def chunk(self, number: int) -> tuple[str, int, Chunk]:
        """Chunk `number`: its file's shown path, its place in the file, and its lines and symbol."""
        file = int(np.searchsorted(self.first_chunk, number, side="right")) - 1
        start, end = self.lines[number].tolist()
        return self.paths[file], number - int(self.first_chunk[file]), Chunk(start, end, self.symbols[number])

    def chunks(self) -> Iterable[tuple[str, Chunk]]:
        for file, shown in enumerate(self.paths):
            for number in range(int(self.first_chunk[file]), int(self.first_chunk[file + 1])):
                start, end = self.lines[number].tolist()
                yield shown, Chunk(start, end, self.symbols[number])

    def definitions(self, name: str) -> list[tuple[str, int, int]]:
        if self._symbol_table is None:  # a race makes it twice at worst, the same
            table: dict[str, array[int]] = {}
            for number, symbol in enumerate(self.symbols.tolist()):
                if symbol is not None:
                    table.setdefault(symbol.rsplit(".", 1)[-1], array("I")).append(number)
            self._symbol_table = table
        places = []
        for number in self._symbol_table.get(name, ()):
            shown, _position, chunk = self.chunk(number)
            places.append((shown, chunk.start_line, chunk.end_line))
        return places

    def scores(self, query: list[int], statistics: _Ranker | None = None) -> np.ndarray:
        """Each chunk's score for the words `query` (ids, each once), its file's weight applied; by the
        chunk count, average length and word frequencies of `statistics` where given (a ranker of a few
        changed files, scored as if among the others), else by its own."""
        like = statistics if statistics is not None and statistics.n_chunks else self
        norm = (
            self._length_norm
            if like is self
            else like.length_norm(np.maximum(self.lengths, 1).astype(np.float64))
        )
        total = np.zeros(self.n_chunks, dtype=np.float32)
        for term in query:
            if term < self.n_words:
                begin, end = self.starts[term], self.starts[term + 1]
                rows = self.rows[begin:end]
                counts = self.counts[begin:end].astype(np.float32)
                # bm25s's operations in its precision (float64 with a float32 idf, stored as float32),
                # in place: fewer temporaries of a common word's length at each query.
                score = norm[rows]
                score += counts
                np.divide(counts, score, out=score)
                score *= like.idf(term)
                total[rows] += score.astype(np.float32)
        return total * self._weights

    def merged(
        self, changes: Mapping[str, _Cut | None], n_words: int, pause: Callable[[], None] | None = None
    ) -> _Ranker:
        """A new ranker: this one's files, each changed one with its new cut (None: gone), over a
        vocabulary of n_words. The postings are merged in one pass (no sort of them all); `pause` is
        called between the steps."""
        pause = pause or (lambda: None)
        old_file = {shown: number for number, shown in enumerate(self.paths) if shown not in changes}
        cuts = {shown: cut for shown, cut in changes.items() if cut is not None}
        paths = sorted([*old_file, *cuts])
        old_sizes = np.diff(self.first_chunk)
        sizes = np.array(
            [old_sizes[old_file[shown]] if shown in old_file else len(cuts[shown].chunks) for shown in paths],
            dtype=np.int64,
        )
        first_chunk = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        n_chunks = int(first_chunk[-1])

        # Where each of this ranker's chunks goes (-1: its file changed or is gone).
        shift = np.zeros(len(self.paths), np.int64)
        kept_files = np.zeros(len(self.paths), bool)
        for number, shown in enumerate(paths):
            if shown in old_file:
                shift[old_file[shown]] = first_chunk[number] - self.first_chunk[old_file[shown]]
                kept_files[old_file[shown]] = True
        kept_chunks = np.flatnonzero(np.repeat(kept_files, old_sizes))
        moved_to = kept_chunks + np.repeat(shift, old_sizes)[kept_chunks]
        remap = np.full(self.n_chunks, -1, np.int32)  # int32: indexing the postings with it makes P of them
        remap[kept_chunks] = moved_to

        lines = np.empty((n_chunks, 2), np.int32)
        lengths = np.empty(n_chunks, np.uint32)
        symbols = np.empty(n_chunks, object)
        lines[moved_to], lengths[moved_to], symbols[moved_to] = (
            self.lines[kept_chunks],
            self.lengths[kept_chunks],
            self.symbols[kept_chunks],
        )

        # The cuts' postings, and their chunks' lines, symbols and lengths.
        new_terms, new_rows, new_counts = [], [], []
        for number, shown in enumerate(paths):
            cut = cuts.get(shown)
            if cut is None:
                continue
            begin = int(first_chunk[number])
            ends = np.frombuffer(cut.ends, dtype=np.uint32).astype(np.int64)
            counts = np.frombuffer(cut.counts, dtype=np.uint16)
            at = slice(begin, begin + len(cut.chunks))
            lines[at] = [(chunk.start_line, chunk.end_line) for chunk in cut.chunks]
            symbols[at] = [None if chunk.symbol is None else sys.intern(chunk.symbol) for chunk in cut.chunks]
            per_chunk = np.diff(ends, prepend=0)
            counted = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
            lengths[at] = np.diff(counted[np.concatenate([[0], ends])])
            new_terms.append(np.frombuffer(cut.terms, dtype=np.uint32))
            new_rows.append(np.repeat(np.arange(begin, begin + len(cut.chunks), dtype=np.int32), per_chunk))
            new_counts.append(counts)

        pause()
        # This ranker's postings of the chunks kept, renumbered; still by word, each word's in order.
        postings_remap = remap[self.rows]
        dropped = np.flatnonzero(postings_remap < 0)
        kept_frequencies = np.diff(self.starts)
        if len(dropped):
            dropped_words = np.searchsorted(self.starts, dropped, side="right") - 1
            kept_frequencies = kept_frequencies - np.bincount(dropped_words, minlength=self.n_words)
            keep = postings_remap >= 0
            kept_rows, kept_counts = postings_remap[keep], self.counts[keep]
        else:
            kept_rows, kept_counts = postings_remap, self.counts
        del postings_remap
        kept_frequencies = np.concatenate([kept_frequencies, np.zeros(n_words - self.n_words, np.int64)])

        pause()
        # The new postings go after each word's kept ones: one insertion pass over them all.
        terms = np.concatenate(new_terms) if new_terms else np.empty(0, np.uint32)
        order = np.argsort(terms, kind="stable")
        terms = terms[order].astype(np.int64)
        kept_starts = np.concatenate([[0], np.cumsum(kept_frequencies)])
        where = kept_starts[terms + 1]
        rows = np.insert(kept_rows, where, np.concatenate(new_rows)[order] if new_rows else [])
        counts = np.insert(kept_counts, where, np.concatenate(new_counts)[order] if new_counts else [])
        frequencies = kept_frequencies + np.bincount(terms, minlength=n_words)
        starts = np.concatenate([[0], np.cumsum(frequencies)]).astype(np.int64)
        return _Ranker(paths, first_chunk, lines, lengths, symbols, starts, rows, counts)

    def saved(self) -> dict[str, np.ndarray]:
        """The arrays `loaded` reads back."""
        return {
            "paths": _text_array("\0".join(self.paths)),
            "first_chunk": self.first_chunk,
            "lines": self.lines,
            "lengths": self.lengths,
            "symbols": _text_array("\0".join(symbol or "" for symbol in self.symbols.tolist())),
            "starts": self.starts,
            "rows": self.rows,
            "counts": self.counts,
        }

    @classmethod
    def loaded(cls, arrays: dict[str, np.ndarray], n_words: int) -> _Ranker:
        """The ranker of arrays read from a file: every shape, type and bound checked (ValueError)."""
        paths_text = _array_text(arrays["paths"])
        paths = paths_text.split("\0") if paths_text else []
        if paths != sorted(set(paths)) or not all(paths):
            raise ValueError("the paths must be distinct, named and sorted")
        first_chunk = _checked(arrays["first_chunk"], np.int64, (len(paths) + 1,))
        if first_chunk[0] != 0 or np.any(np.diff(first_chunk) < 1):
            raise ValueError("every file has chunks, in order")
        n_chunks = int(first_chunk[-1])
        lines = _checked(arrays["lines"], np.int32, (n_chunks, 2))
        lengths = _checked(arrays["lengths"], np.uint32, (n_chunks,))
        symbols_text = _array_text(arrays["symbols"])
        symbol_list = symbols_text.split("\0") if n_chunks else []
        if len(symbol_list) != n_chunks:
            raise ValueError("one symbol a chunk")
        symbols = np.empty(n_chunks, object)
        symbols[:] = [sys.intern(symbol) if symbol else None for symbol in symbol_list]
        starts = _checked(arrays["starts"], np.int64, (n_words + 1,))
        if starts[0] != 0 or np.any(np.diff(starts) < 0):
            raise ValueError("the words' postings must be in order")
        rows = _checked(arrays["rows"], np.int32, (int(starts[-1]),))
        counts = _checked(arrays["counts"], np.uint16, (int(starts[-1]),))
        if len(rows) and (rows.min() < 0 or rows.max() >= n_chunks or counts.min() < 1):
            raise ValueError("a posting names no chunk, or no count")
        return cls(paths, first_chunk, lines, lengths, symbols, starts, rows, counts)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def _return_freed_memory() -> None:
    """Gives the memory freed since back to the system (glibc's malloc_trim, where there is one). A
    merge frees arrays of tens of MB, and a build's files leave much more freed in small pieces; once
    glibc has seen a large block freed it serves blocks of that size from its heap, whose free pages it
    keeps until tens of MB are free at its top: without this a 10,000-file index held twice its size.
    Called after each large piece of work (a merge, a save, a load) and each search: at 10,000 files a
    search's temporaries (about 10 MB of scores) left 15 MB held after 50 searches, and giving them back
    costs each search about 5 ms (the trim, and the page faults of the next search's), at a p50 of 5 ms
    without it: the memory bound is a goal, and 10 ms is a fifth of the 50 ms a search may take."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _idf(n_chunks: int, frequencies: np.ndarray) -> np.ndarray:
    """BM25's inverse document frequency, as bm25s computes it (float64, kept as float32)."""
    return np.log(1 + (n_chunks - frequencies + 0.5) / (frequencies + 0.5)).astype(np.float32)


def _checked(values: np.ndarray, dtype: type[np.generic], shape: tuple[int, ...]) -> np.ndarray:
    if values.dtype != dtype or values.shape != shape:
        raise ValueError(f"expected {np.dtype(dtype)} {shape}, found {values.dtype} {values.shape}")
    return values


def _text_array(text: str) -> np.ndarray:
    return np.frombuffer(text.encode("utf-8", errors="surrogateescape"), dtype=np.uint8)


def _array_text(values: np.ndarray) -> str:
    if values.dtype != np.uint8 or values.ndim != 1:
        raise ValueError("text must be saved as bytes")
    return values.tobytes().decode("utf-8", errors="surrogateescape")


# ---- chunks ---------------------------------------------------------------------------------------------


def chunks_of(shown: str, text: str) -> list[tuple[Chunk, list[str]]]:
    """A file's chunks and the words each is counted as: its definitions and the code between them
    where its language is outlined (languages.outline), else windows of lines."""
    path_words = words(shown.replace("/", " ").replace(".", " "))
    items = languages.outline(PurePosixPath(shown).suffix, text)
    spans = _spans(items) if items is not None else _windows(1, max(len(text.splitlines()), 1))
    lines = text.splitlines()
    chunks = []
    for start, end, symbol in spans:
        body = words("\n".join(lines[start - 1 : end]))[:MAX_CHUNK_WORDS]
        named = words(symbol or "") * SYMBOL_WEIGHT
        chunks.append((Chunk(start, end, symbol), body + named + path_words * PATH_WEIGHT))
    return chunks or [(Chunk(1, 1, None), path_words * PATH_WEIGHT)]


def _language_of(shown: str) -> str | None:
    language = languages.for_suffix(PurePosixPath(shown).suffix)
    return language.name if language is not None else None


def _windows(first: int, last: int) -> list[tuple[int, int, str | None]]:
    return [
        (start, min(start + CHUNK_LINES - 1, last), None) for start in range(first, last + 1, CHUNK_LINES)
    ]


def _spans(items: Iterable[languages.Item], scope: str = "") -> list[tuple[int, int, str | None]]:
    """The chunks of a file's items (or a class's members, named within `scope`), in every language:
    each function whole; each class whole when it is short, else its head (up to its first definition)
    and its members as a file's items; the code between definitions in runs of CHUNK_LINES lines at
    most, a statement longer than two windows in windows (a module wrapped in one call, a table)."""
    spans: list[tuple[int, int, str | None]] = []
    loose: list[tuple[int, int]] = []  # code between definitions not yet in a span

    def flush() -> None:
        while loose:
            start = loose[0][0]
            end = start
            while loose and loose[0][1] - start < CHUNK_LINES:
                end = loose.pop(0)[1]
            if end == start and loose and loose[0][0] == start:  # one statement longer than a window
                end = loose.pop(0)[1]
                if end - start >= 2 * CHUNK_LINES:
                    spans.extend(_windows(start, end))
                    continue
            spans.append((start, end, None))

    for item in items:
        if item.name is None:
            loose.append((item.start_line, item.end_line))
            continue
        flush()
        name = scope + item.name
        members = list(item.members)
        first = next((at for at, member in enumerate(members) if member.name is not None), None)
        if not item.container or item.end_line - item.start_line < 2 * CHUNK_LINES or first is None:
            spans.append((item.start_line, item.end_line, name))
            continue
        spans.append((item.start_line, max(members[first].start_line - 1, item.start_line), name))
        spans.extend(_spans(members[first:], name + "."))
    flush()
    return spans


def excluded(shown: str, patterns: Iterable[str]) -> bool:
    """Whether a file's shown path, or one of its folders, matches one of the globs: `*` and `?` within a
    name, `**` across folders; a pattern without `/` matches a name at any depth, as in `.gitignore`."""
    parts = shown.split("/")
    paths = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
    for pattern in patterns:
        regex = _exclude_regex(pattern.strip("/"))
        if regex is not None and any(
            regex.fullmatch(name) for name in (parts if "/" not in pattern.strip("/") else paths)
        ):
            return True
    return False


@functools.cache
def _exclude_regex(pattern: str) -> re.Pattern[str] | None:
    """A pattern of codebaseExclude, anchored at the folder (the tools' glob rules); None for one that is
    no valid glob, which then leaves out nothing."""
    try:
        return glob_regex("/" + pattern)
    except ToolError:
        return None


def _listable(shown: str) -> bool:
    """Whether a file a change names may be indexed: not in a hidden, dependency or build folder (a
    client's file events name those too)."""
    folders = shown.split("/")[:-1]
    return not any(folder in SKIPPED_DIRS or folder.startswith(".") for folder in folders)


def _git_files(root: Path) -> list[Path] | None:
    """The files git would commit in root (tracked, or untracked and not ignored); None where root is
    not in a git work tree or git is missing."""
    if not (root / ".git").exists():
        return None
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            capture_output=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    paths = []
    for name in listed.decode("utf-8", errors="surrogateescape").split("\0"):
        if name:
            path = root / name
            if path.is_file() and not path.is_symlink():
                paths.append(path)
    return paths
