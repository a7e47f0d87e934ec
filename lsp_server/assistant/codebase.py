"""The workspace index: every file's code as chunks that a question in words can find, ranked lexically.

A chunk is a unit a reader would point at: in Python (the standard library's `ast`) a function, a
method, a small class whole, or a run of module-level statements; in other files a window of
CHUNK_LINES lines. Each chunk is counted as words (identifiers split at snake_case and camelCase,
lowercased, a plural's or a tense's ending cut, English function words left out), its path's and
symbol's words counted PATH_WEIGHT and SYMBOL_WEIGHT times more, and ranked with BM25 (Lucene's
variant, as the `bm25s` package scores it). A test file's chunks count TEST_WEIGHT as much, and
documentation's PROSE_WEIGHT: a test or a changelog that merely names a function should not outrank
the code that implements it.

A chunk is kept as its words' ids and counts (a file's chunks in three flat arrays), not as text: a
workspace of ten thousand files holds millions of words. The ranker is the matrix of every chunk's BM25
term scores, built with numpy from those arrays when a search first needs it after a change: bm25s
builds the same matrix with a Python loop per chunk, seconds for a large workspace at every edit (a test
holds the two to the same scores).

The files are git's (`git ls-files`: tracked and untracked, not ignored) where the folder is a
repository, else every file the tools see (tools/workspace_files.py); binary, generated-looking
(minified) and huge files are skipped and counted. An index is saved as JSON and loaded back, each
file re-read only when its size or modification time changed. A build may run in a thread while
searches and updates come from another. Plain Python; no LSP types, no model.
"""

from __future__ import annotations

import ast
import functools
import gzip
import json
import logging
import os
import re
import subprocess
import threading
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .languages import belongs_to_tests
from .tools.schemas import glob_regex
from .tools.workspace_files import MAX_FILE_BYTES, SKIPPED_DIRS, ToolError, WorkspaceFiles

log = logging.getLogger("llama_lsp.codebase")

FORMAT_VERSION = 2  # of the saved index: another is read as none
CHUNK_LINES = 40  # a window of a file that is not Python, and the longest run of module-level lines
MAX_FILES = 20_000
MAX_CHUNK_WORDS = 2_000  # a chunk's words past these are not counted (a data table, a long literal)
PATH_WEIGHT = 3
SYMBOL_WEIGHT = 3
TEST_WEIGHT = 0.5
PROSE_WEIGHT = 0.5  # documentation: it describes the code, but the question is for the code
LONG_LINE_CHARS = 1_000  # a file with such lines is minified or generated: not code to read
SNIPPET_LINES = 8
# BM25's parameters, bm25s's defaults (Lucene's variant).
BM25_K1 = 1.5
BM25_B = 0.75
MAX_COUNT = 0xFFFF  # a word's count in one chunk, at most (its array holds 16 bits)

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
    snake_case and camelCase, lowercased, without short and common words, a plural's or a tense's
    ending cut so that `handles` finds `handler`."""
    found = []
    for token in _IDENTIFIER.findall(text):
        for part in _PART.findall(token):
            word = part.lower()
            if len(word) < 3 or word in _STOP_WORDS:
                continue
            found.append(_stem(word))
    return found


def _stem(word: str) -> str:
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 4:
            return word[: -len(ending)]
    return word


def is_prose(path: str) -> bool:
    """Whether a path is documentation rather than code: text, Markdown, reStructuredText, a changelog."""
    name = path.lower().rsplit("/", 1)[-1]
    return name.endswith((".md", ".rst", ".txt", ".adoc")) or name.startswith(
        ("changelog", "changes", "history", "news")
    )


def file_weight(path: str) -> float:
    """How much a file's chunks count: a test or a document that names the code counts less than it."""
    # Any file of the tests, not only those a check runs (languages.is_test_file): a fixture or a spec
    # names the code as much as a test does.
    if belongs_to_tests(path):
        return TEST_WEIGHT
    return PROSE_WEIGHT if is_prose(path) else 1.0


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
    """One indexed file: its chunks, and their words as ids (the index's vocabulary) with counts, chunk
    after chunk: chunk i's are terms[ends[i-1]:ends[i]]."""

    size: int
    mtime_ns: int
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


class CodebaseIndex:
    """The index of the files under `roots` (the workspace folders)."""

    def __init__(
        self, roots: Iterable[Path], exclude: Iterable[str] = (), max_file_bytes: int = MAX_FILE_BYTES
    ) -> None:
        self.workspace = WorkspaceFiles(list(roots))
        self.exclude = tuple(exclude)  # globs over a file's shown path (codebaseExclude)
        self.max_file_bytes = max_file_bytes
        self._files: dict[str, _File] = {}  # by shown path
        self._vocabulary: dict[str, int] = {}  # word -> id; grows, never shrinks (a few MB at most)
        self._symbols: dict[str, list[tuple[str, int, int]]] | None = None  # made when first asked
        # A build runs in a thread while searches and updates come from the server's: the files and the
        # ranker change under this lock (a file is read and cut into chunks outside it).
        self._lock = threading.RLock()
        self.skipped = Skipped()
        self._ranker: _Ranker | None = None  # rebuilt on the next search after a change
        self.ready = False  # every file was indexed once

    @property
    def n_files(self) -> int:
        return len(self._files)

    @property
    def n_chunks(self) -> int:
        return sum(len(entry.chunks) for entry in self._files.values())

    # ---- building ----------------------------------------------------------------------------------

    def listed_files(self) -> dict[str, Path]:
        """The files to index, shown path -> path: git's where a folder is a repository (.gitignore
        respected), else every file the tools see."""
        found: dict[str, Path] = {}
        walked: dict[Path, str] | None = None  # every folder's files, walked once where git lists none
        for root in self.workspace.roots:
            tracked = _git_files(root)
            if tracked is None and walked is None:
                walked = self.workspace.files()
            paths = tracked if tracked is not None else [p for p in walked or {} if p.is_relative_to(root)]
            for path in paths:
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
        and forgets the files that are gone. `pause` is called between files (it may wait while the
        model works); `progress(done, total)` now and then."""
        self.skipped = Skipped()
        listed = self.listed_files()
        with self._lock:
            for gone in set(self._files) - set(listed):
                del self._files[gone]
            self._changed()
        total = len(listed)
        for done, (shown, path) in enumerate(sorted(listed.items()), 1):
            if pause is not None:
                pause()
            self._refresh(shown, path)
            if progress is not None and (done % 50 == 0 or done == total):
                progress(done, total)
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
        cut = [(chunk, sorted(Counter(chunk_words).items())) for chunk, chunk_words in chunks_of(shown, text)]
        indexed = self._file(status.st_size, status.st_mtime_ns, cut)
        with self._lock:
            self._files[shown] = indexed
            self._changed()

    def _file(
        self, size: int, mtime_ns: int, cut: Sequence[tuple[Chunk, Iterable[tuple[str, int]]]]
    ) -> _File:
        """A file's entry from its chunks, each with its words and their counts."""
        terms, counts, ends = array("I"), array("H"), array("I")
        vocabulary = self._vocabulary
        with self._lock:  # the vocabulary grows from the build's thread and the server's
            for _, chunk_counts in cut:
                for word, count in chunk_counts:
                    terms.append(vocabulary.setdefault(word, len(vocabulary)))
                    counts.append(min(count, MAX_COUNT))
                ends.append(len(terms))
        return _File(size, mtime_ns, [chunk for chunk, _ in cut], terms, counts, ends)

    def _forget(self, shown: str) -> None:
        with self._lock:
            if self._files.pop(shown, None) is not None:
                self._changed()

    def _changed(self) -> None:
        """The files changed: the ranker and the symbol table are made again when next needed."""
        self._ranker = None
        self._symbols = None

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

    # ---- searching ---------------------------------------------------------------------------------

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        """The chunks that best match the words of `query`, best first."""
        hits = []
        for shown, chunk, score in self._best_chunks(query, limit):
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
        """The files whose best chunk best matches `query`, best first."""
        best: dict[str, float] = {}
        for shown, _chunk, score in self._best_chunks(query, max(limit * 20, 100)):
            best.setdefault(shown, round(score, 4))
        return sorted(best.items(), key=lambda item: -item[1])[:limit]

    def definitions(self, name: str) -> list[tuple[str, int, int]]:
        """Where the function, class or method `name` is defined (the symbol table of the chunks, Python
        only): (shown path, first line, last line) each, in path order."""
        with self._lock:
            if self._symbols is None:
                table: dict[str, list[tuple[str, int, int]]] = {}
                for shown in sorted(self._files):
                    for chunk in self._files[shown].chunks:
                        if chunk.symbol is not None:
                            where = (shown, chunk.start_line, chunk.end_line)
                            table.setdefault(chunk.symbol.rsplit(".", 1)[-1], []).append(where)
                self._symbols = table
            return list(self._symbols.get(name, []))

    def _best_chunks(self, query: str, limit: int) -> list[tuple[str, Chunk, float]]:
        with self._lock:
            wanted = [
                self._vocabulary[word] for word in dict.fromkeys(words(query)) if word in self._vocabulary
            ]
            if not wanted or not self._files:
                return []
            if self._ranker is None:
                self._ranker = _Ranker(self._files, len(self._vocabulary))
            ranker = self._ranker
        scores = ranker.scores(wanted)
        top = (
            np.argpartition(-scores, min(limit, len(scores) - 1))[:limit]
            if len(scores) > limit
            else np.arange(len(scores))
        )
        found = sorted(
            ((float(scores[i]), int(i)) for i in top if scores[i] > 0), key=lambda item: (-item[0], item[1])
        )
        return [(*ranker.chunks[i], score) for score, i in found]

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
        """Writes the index to `target` (gzipped JSON), through a temporary file and a rename."""
        with self._lock:
            indexed = dict(self._files)
            names = {number: word for word, number in self._vocabulary.items()}
        files = {shown: _saved_file(entry, names) for shown, entry in indexed.items()}
        payload = {
            "version": FORMAT_VERSION,
            "roots": [str(root) for root in self.workspace.roots],
            "files": files,
        }
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(target.name + f".{os.getpid()}.tmp")
        with gzip.open(temporary, "wt", encoding="utf-8", compresslevel=3) as out:
            json.dump(payload, out, separators=(",", ":"))
        os.replace(temporary, target)

    def load(self, source: Path) -> bool:
        """Reads an index saved for these folders; False (and nothing read) when there is none, or it is
        another version's, another folder's or unreadable: it is untrusted input, checked as read."""
        try:
            with gzip.open(source, "rt", encoding="utf-8") as saved:
                payload = json.load(saved)
            if payload.get("version") != FORMAT_VERSION:
                return False
            if payload.get("roots") != [str(root) for root in self.workspace.roots]:
                return False
            files = {shown: self._loaded_file(entry) for shown, entry in payload["files"].items()}
        except (OSError, ValueError, TypeError, KeyError, AttributeError, EOFError, OverflowError) as exc:
            log.info("no saved index read from %s: %s", source, exc)
            return False
        with self._lock:
            self._files = files
            self._changed()
        return True

    def _loaded_file(self, entry: Any) -> _File:
        size, mtime_ns, chunks = entry
        if not isinstance(size, int) or not isinstance(mtime_ns, int):
            raise TypeError("size and time must be integers")
        cut: list[tuple[Chunk, Iterable[tuple[str, int]]]] = []
        for start, end, symbol, text, counts in chunks:
            if not (isinstance(start, int) and isinstance(end, int) and isinstance(text, str)):
                raise TypeError("a chunk's lines must be integers and its words text")
            if symbol is not None and not isinstance(symbol, str):
                raise TypeError("a chunk's symbol must be text")
            names = text.split()
            if not isinstance(counts, list) or len(counts) != len(names):
                raise TypeError("a chunk's counts must be a list, one per word")
            if not all(isinstance(count, int) and 0 < count <= MAX_COUNT for count in counts):
                raise ValueError("a word's count must be a positive integer")
            cut.append((Chunk(start, end, symbol), zip(names, counts, strict=True)))
        return self._file(size, mtime_ns, cut)


def _saved_file(entry: _File, names: dict[int, str]) -> list[Any]:
    chunks = []
    begin = 0
    for chunk, end in zip(entry.chunks, entry.ends, strict=True):
        chunk_words = " ".join(names[term] for term in entry.terms[begin:end])
        chunks.append(
            [chunk.start_line, chunk.end_line, chunk.symbol, chunk_words, list(entry.counts[begin:end])]
        )
        begin = end
    return [entry.size, entry.mtime_ns, chunks]


class _Ranker:
    """BM25 over every chunk of the index, as it was when built: the matrix of each word's score in each
    chunk, column by word (CSC), as bm25s builds it (its Lucene variant, its defaults)."""

    def __init__(self, files: dict[str, _File], vocabulary_size: int) -> None:
        shown_paths = sorted(files)
        self.chunks: list[tuple[str, Chunk]] = [
            (shown, chunk) for shown in shown_paths for chunk in files[shown].chunks
        ]
        indexed = [files[shown] for shown in shown_paths]
        terms = np.concatenate(
            [np.frombuffer(f.terms, dtype=np.uint32) for f in indexed] or [np.empty(0, np.uint32)]
        )
        counts = np.concatenate(
            [np.frombuffer(f.counts, dtype=np.uint16) for f in indexed] or [np.empty(0, np.uint16)]
        )
        ends = np.concatenate(
            [
                np.frombuffer(f.ends, dtype=np.uint32).astype(np.int64) + offset
                for f, offset in zip(indexed, _offsets(indexed), strict=True)
            ]
            or [np.empty(0, np.int64)]
        )
        n_chunks = len(self.chunks)
        per_chunk = np.diff(ends, prepend=0)
        chunk_of = np.repeat(np.arange(n_chunks, dtype=np.int64), per_chunk)
        tf = counts.astype(np.float32)
        # A chunk with no words is one empty word to bm25s: its length is 1.
        lengths = np.maximum(np.bincount(chunk_of, weights=counts, minlength=n_chunks), 1)
        frequencies = np.bincount(terms, minlength=vocabulary_size)
        idf = np.log(1 + (n_chunks - frequencies + 0.5) / (frequencies + 0.5)).astype(np.float32)
        length_norm = BM25_K1 * ((1 - BM25_B) + BM25_B * lengths / lengths.mean()) if n_chunks else lengths
        scores = (idf[terms] * (tf / (length_norm[chunk_of] + tf))).astype(np.float32)
        by_word = np.argsort(terms, kind="stable")
        self._rows = chunk_of[by_word].astype(np.int32)
        self._data = scores[by_word]
        self._starts = np.concatenate([[0], np.cumsum(frequencies)])
        self._weights = np.array([file_weight(shown) for shown, _ in self.chunks])

    def scores(self, query: list[int]) -> np.ndarray:
        """Each chunk's score for the words `query` (ids, each once), its file's weight applied."""
        total = np.zeros(len(self.chunks), dtype=np.float32)
        for term in query:
            if term < len(self._starts) - 1:
                begin, end = self._starts[term], self._starts[term + 1]
                total[self._rows[begin:end]] += self._data[begin:end]  # a chunk once per word
        return total * self._weights


def _offsets(files: list[_File]) -> list[int]:
    """Where each file's words start in the words of all of them."""
    offsets, at = [], 0
    for entry in files:
        offsets.append(at)
        at += len(entry.terms)
    return offsets


# ---- chunks ---------------------------------------------------------------------------------------------


def chunks_of(shown: str, text: str) -> list[tuple[Chunk, list[str]]]:
    """A file's chunks and the words each is counted as: Python's definitions, or windows of lines."""
    path_words = words(shown.replace("/", " ").replace(".", " "))
    spans: list[tuple[int, int, str | None]]
    if shown.endswith(".py"):
        try:
            spans = _python_spans(text)
        except (SyntaxError, ValueError, RecursionError):
            spans = _windows(text)
    else:
        spans = _windows(text)
    lines = text.splitlines()
    chunks = []
    for start, end, symbol in spans:
        body = words("\n".join(lines[start - 1 : end]))[:MAX_CHUNK_WORDS]
        named = words(symbol or "") * SYMBOL_WEIGHT
        chunks.append((Chunk(start, end, symbol), body + named + path_words * PATH_WEIGHT))
    return chunks or [(Chunk(1, 1, None), path_words * PATH_WEIGHT)]


def _windows(text: str) -> list[tuple[int, int, str | None]]:
    n = max(len(text.splitlines()), 1)
    return [(start, min(start + CHUNK_LINES - 1, n), None) for start in range(1, n + 1, CHUNK_LINES)]


def _python_spans(text: str) -> list[tuple[int, int, str | None]]:
    """Python's units: each function; each class whole when it is short, else its head and each
    method; runs of other module-level statements, CHUNK_LINES at most."""
    tree = ast.parse(text)
    spans: list[tuple[int, int, str | None]] = []
    loose: list[tuple[int, int]] = []  # module-level statements not yet in a span

    def flush() -> None:
        while loose:
            start = loose[0][0]
            end = start
            while loose and loose[0][1] - start < CHUNK_LINES:
                end = loose.pop(0)[1]
            if end == start and loose and loose[0][0] == start:  # one statement longer than a window
                end = loose.pop(0)[1]
            spans.append((start, end, None))

    for node in tree.body:
        start, end = _lines_of(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            flush()
            spans.append((start, end, node.name))
        elif isinstance(node, ast.ClassDef):
            flush()
            spans.extend(_class_spans(node, start, end))
        else:
            loose.append((start, end))
    flush()
    return spans


def _class_spans(node: ast.ClassDef, start: int, end: int) -> list[tuple[int, int, str | None]]:
    methods = [item for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)]
    if end - start < 2 * CHUNK_LINES or not methods:
        return [(start, end, node.name)]
    spans: list[tuple[int, int, str | None]] = []
    head_end = _lines_of(methods[0])[0] - 1
    spans.append((start, max(head_end, start), node.name))
    for method in methods:
        first, last = _lines_of(method)
        spans.append((first, last, f"{node.name}.{method.name}"))
    return spans


def _lines_of(node: ast.stmt) -> tuple[int, int]:
    decorators = getattr(node, "decorator_list", [])
    start = min([node.lineno, *(d.lineno for d in decorators)])
    return start, node.end_lineno or node.lineno


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
