"""(I) What the workspace index costs at 1 thread (issue 45's goals): building, reloading, updating and
searching lsp_server.assistant.codebase's CodebaseIndex, its memory, and a chat's first token while
the server builds it.

The corpus is real code any machine has: the .py files of the standard library of the Python running
the bench, a sample of 1,000 spread over all of it (copied into a temporary folder, never indexed in
place), and 10,000 as ten copies of that sample in separate folders. The queries are real text: the
first sentence of the docstrings of functions in the sample.

The index's figures come from a worker process per size (`python -m bench.index --worker ...`) started
with OMP_NUM_THREADS and OPENBLAS_NUM_THREADS at 1, set before numpy and bm25s are imported; its RSS is
read from /proc/self/status before the build and after the queries. The chat is a real server over
stdio (the headless client) on the 10,000-file workspace, asked right after `initialized`, with the
index on and off, on a fresh cacheDir each run (so the index is built cold).
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import gc
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from harness import report

SAMPLE_FILES = 1_000
COPIES = 10  # the large corpus: this many copies of the sample
N_UPDATES = 20
N_QUERIES = 50  # after the first
CHAT_RUNS = 3
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

GOAL_COLD_S = 30.0  # 1,000 files
GOAL_RELOAD_S = 1.0  # 1,000 files
GOAL_UPDATE_MS = 100.0
GOAL_QUERY_MS = 50.0
GOAL_RSS_MB = 100.0  # 10,000 files

SAVED_EDIT = b"\n# saved again by the bench\n"
CHAT_QUESTION = "What does this file do? Answer in one sentence."
CHAT_MAX_TOKENS = 16


def show(line: str) -> None:
    print(line, flush=True)


# ---- the corpus -----------------------------------------------------------------------------------


def stdlib() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_files(n_files: int) -> list[Path]:
    """n_files .py files of the standard library, evenly spread over its sorted paths (not the first
    packages of the alphabet), leaving out third-party packages, caches and files the index skips
    as too large."""
    from lsp_server.assistant.tools.workspace_files import MAX_FILE_BYTES, SKIPPED_DIRS

    root = stdlib()
    found = sorted(
        path
        for path in root.rglob("*.py")
        if not any(
            part in SKIPPED_DIRS or part.startswith(".") or part in ("site-packages", "dist-packages")
            for part in path.relative_to(root).parts[:-1]
        )
        and path.is_file()
        and not path.is_symlink()
        and path.stat().st_size <= MAX_FILE_BYTES
    )
    if len(found) < n_files:
        raise SystemExit(f"bench (I): {root} has {len(found)} Python files, fewer than {n_files}")
    step = len(found) / n_files
    return [found[int(i * step)] for i in range(n_files)]


def write_corpus(target: Path, files: Sequence[Path], copies: int) -> tuple[Path, Path]:
    """The sample copied into target/sample, and `copies` copies of it in target/copies/copy-NN;
    returns both folders."""
    source = stdlib()
    sample = target / "sample"
    for path in files:
        copy = sample / path.relative_to(source)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    large = target / "copies"
    for number in range(copies):
        shutil.copytree(sample, large / f"copy-{number:02d}")
    return sample, large


def python_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.py"))


_SENTENCE_END = re.compile(r"\.(\s|$)")


def docstring_queries(root: Path, count: int, seed: int = 45) -> list[str]:
    """`count` first sentences of the docstrings of functions under root (4 to 25 words each),
    drawn with a fixed seed."""
    found: dict[str, None] = {}
    for path in python_files(root):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
            sentence = _SENTENCE_END.split(paragraph, maxsplit=1)[0].strip()
            if 4 <= len(sentence.split()) <= 25:
                found.setdefault(sentence, None)
    candidates = list(found)
    if not candidates:
        raise SystemExit(f"bench (I): no docstrings to make queries from under {root}")
    return random.Random(seed).sample(candidates, min(count, len(candidates)))


# ---- the index's figures (in the worker process) ----------------------------------------------------


@dataclass
class Figures:
    """One corpus' figures, as the worker measured them."""

    n_listed: int
    n_files: int
    n_chunks: int
    skipped: dict[str, int]
    cold_s: float
    save_s: float
    saved_bytes: int
    first_query_ms: float
    query_ms: list[float]
    update_ms: list[float]
    query_after_update_ms: float  # from the last ranker and the changed files (a refresh starts)
    refresh_ms: float  # from that query's answer to the refreshed ranker in place (in its thread)
    reload_s: float  # a fresh index: load + build (which stats every file)
    reread_on_reload: int  # files build() read again on reload: 0 when nothing changed
    rss_before_kb: int
    rss_after_kb: int
    hwm_kb: int  # VmHWM once the queries are done

    @property
    def query_p50_ms(self) -> float:
        return statistics.median(self.query_ms)

    @property
    def update_p50_ms(self) -> float:
        return statistics.median(self.update_ms)

    @property
    def file_ms(self) -> float:
        """One file's work in the cold build, on average."""
        return self.cold_s * 1000 / max(self.n_files, 1)


def memory_kb() -> dict[str, int]:
    """VmRSS and VmHWM of this process, in kB (Linux)."""
    found = {}
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0])
    return found


def spread(items: Sequence[Path], count: int) -> list[Path]:
    step = max(len(items) / max(count, 1), 1)
    return [items[int(i * step)] for i in range(min(count, len(items)))]


def measure(root: Path, queries: Sequence[str], workdir: Path, n_updates: int = N_UPDATES) -> Figures:
    """Builds the index of root cold, saves it, queries it (the first query, then the rest), updates
    files one by one as a save would, and reloads it in a fresh index. Memory is read around the build,
    save and queries: what a server holding this index grew by."""
    from lsp_server.assistant.codebase import CodebaseIndex

    gc.collect()
    before = memory_kb()
    index = CodebaseIndex([root])
    started = time.perf_counter()
    index.build()
    cold_s = time.perf_counter() - started
    n_listed = len(index.listed_files())
    saved = workdir / "index.json.gz"
    started = time.perf_counter()
    index.save(saved)
    save_s = time.perf_counter() - started
    first_query_ms = timed_ms(index.search, queries[0])
    query_ms = [timed_ms(index.search, query) for query in queries[1:]]
    gc.collect()
    after = memory_kb()

    update_ms = []
    for path in spread(python_files(root), n_updates):
        original, status = path.read_bytes(), path.stat()
        path.write_bytes(original + SAVED_EDIT)
        update_ms.append(timed_ms(index.update, path))
        # Back as it was, time included: the saved index still describes the folder for the reload.
        path.write_bytes(original)
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    query_after_update_ms = timed_ms(index.search, queries[0])
    refresh_ms = timed_ms(index.refreshed)
    n_files, n_chunks, skipped = index.n_files, index.n_chunks, dict(index.skipped.counts)
    del index
    gc.collect()

    reloaded = CodebaseIndex([root])
    started = time.perf_counter()
    if not reloaded.load(saved):
        raise SystemExit(f"bench (I): the saved index {saved} did not load")
    load_s = time.perf_counter() - started
    loaded = dict(reloaded._files)  # which entries build() replaces: the files it read again
    started = time.perf_counter()
    reloaded.build()
    reload_s = load_s + time.perf_counter() - started
    reread = sum(1 for shown, entry in reloaded._files.items() if loaded.get(shown) is not entry)
    return Figures(
        n_listed=n_listed,
        n_files=n_files,
        n_chunks=n_chunks,
        skipped=skipped,
        cold_s=cold_s,
        save_s=save_s,
        saved_bytes=saved.stat().st_size,
        first_query_ms=first_query_ms,
        query_ms=query_ms,
        update_ms=update_ms,
        query_after_update_ms=query_after_update_ms,
        refresh_ms=refresh_ms,
        reload_s=reload_s,
        reread_on_reload=reread,
        rss_before_kb=before["VmRSS"],
        rss_after_kb=after["VmRSS"],
        hwm_kb=after["VmHWM"],
    )


def timed_ms(function: Any, *arguments: Any) -> float:
    started = time.perf_counter()
    function(*arguments)
    return (time.perf_counter() - started) * 1000


def measure_in_worker(root: Path, queries: Sequence[str], workdir: Path, n_updates: int) -> Figures:
    """`measure` in a fresh process at 1 thread: numpy's and bm25s's thread pools read these variables
    when first imported, and this process imported them long ago."""
    workdir.mkdir(parents=True, exist_ok=True)
    query_file = workdir / "queries.json"
    query_file.write_text(json.dumps(list(queries)), encoding="utf-8")
    command = [sys.executable, "-m", "bench.index", "--worker", str(root), str(query_file), str(workdir)]
    ran = subprocess.run(
        [*command, "--updates", str(n_updates)],
        cwd=report.ROOT,
        env={**os.environ, **ONE_THREAD},
        capture_output=True,
        text=True,
        check=False,
    )
    if ran.returncode != 0:
        raise SystemExit(f"bench (I): the worker failed:\n{ran.stdout}\n{ran.stderr}")
    return Figures(**json.loads(ran.stdout.strip().splitlines()[-1]))


def worker(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.index")
    parser.add_argument("--worker", nargs=3, metavar=("ROOT", "QUERIES", "WORKDIR"), required=True)
    parser.add_argument("--updates", type=int, default=N_UPDATES)
    args = parser.parse_args(argv)
    root, query_file, workdir = (Path(p) for p in args.worker)
    queries = json.loads(query_file.read_text(encoding="utf-8"))
    print(json.dumps(asdict(measure(root, queries, workdir, args.updates))), flush=True)


def show_figures(label: str, f: Figures) -> None:
    skipped = ", ".join(f"{n} {why}" for why, n in sorted(f.skipped.items())) or "none"
    show(
        f"  {label}: {f.n_files:,} files indexed of {f.n_listed:,} listed, {f.n_chunks:,} chunks "
        f"(skipped: {skipped})"
    )
    show(
        f"    cold build {f.cold_s:.1f} s ({f.file_ms:.1f} ms a file); save {f.save_s:.2f} s, "
        f"{f.saved_bytes / 1e6:.1f} MB"
    )
    show(
        f"    reload (load + build) {f.reload_s:.2f} s, {f.reread_on_reload} files read again; "
        f"update median {f.update_p50_ms:.1f} ms (of {len(f.update_ms)}, max {max(f.update_ms):.1f} ms)"
    )
    q = sorted(f.query_ms)
    show(
        f"    first query {f.first_query_ms:,.0f} ms; then p50 {f.query_p50_ms:.1f} ms, max {q[-1]:.1f} ms "
        f"(of {len(q)}); first query after an update {f.query_after_update_ms:,.0f} ms, the ranker "
        f"refreshed {f.refresh_ms:,.0f} ms after it"
    )
    show(
        f"    RSS {f.rss_before_kb / 1024:.0f} -> {f.rss_after_kb / 1024:.0f} MB "
        f"(+{mb(f.rss_after_kb - f.rss_before_kb):.0f} MB), VmHWM {f.hwm_kb / 1024:.0f} MB "
        f"(+{mb(f.hwm_kb - f.rss_before_kb):.0f} MB over the start)"
    )


def mb(kb: int) -> float:
    return kb / 1024


# ---- a chat while the server builds the index -------------------------------------------------------


@dataclass(frozen=True)
class ChatTurn:
    indexing: bool
    ttft_ms: float  # client side: the request sent (right after `initialized`) to its first piece
    engine_ttft_ms: float  # the engine's tFirstTokenMs
    steps: int
    n_prompt: int = 0
    loaded_ms: float = 0.0  # from the request to the status that says the model is loaded
    indexed_files: int | None = None  # with the index on: files indexed when the answer ended
    index_ready: bool | None = None


@dataclass
class ChatFigures:
    on: list[ChatTurn] = field(default_factory=list)
    off: list[ChatTurn] = field(default_factory=list)

    def median(self, indexing: bool, engine: bool = False) -> float:
        turns = self.on if indexing else self.off
        return statistics.median(t.engine_ttft_ms if engine else t.ttft_ms for t in turns)

    def median_loaded(self, indexing: bool) -> float:
        return statistics.median(t.loaded_ms for t in (self.on if indexing else self.off))

    @property
    def delay_ms(self) -> float:
        return self.median(True) - self.median(False)

    @property
    def ratio(self) -> float:
        return self.median(True) / self.median(False)


async def chat_once(model: Path, workspace: Path, document: Path, indexing: bool, cache: Path) -> ChatTurn:
    from lsprotocol import types

    from lsp_server.clients.headless import HeadlessClient
    from lsp_server.lsp import protocol

    options: dict[str, Any] = {
        "model": str(model),
        "threads": 1,
        "maxTokens": CHAT_MAX_TOKENS,
        "verifyCommand": "",
        "warm": False,  # a warmed document would make the model busy before the question
        "codebaseIndex": indexing,
        "cacheDir": str(cache),
    }
    client = HeadlessClient()
    await client.start()
    try:
        await client.initialize_session(workspace, options)
        uri = document.as_uri()
        item = types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=document.read_text(encoding="utf-8")
        )
        client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        loaded: list[float] = []
        waiting = asyncio.ensure_future(client.wait_until_loaded())
        waiting.add_done_callback(lambda _done: loaded.append(time.perf_counter()))
        first: list[float] = []
        client.stream = lambda _piece: None if first else first.append(time.perf_counter())
        params = {"message": CHAT_QUESTION, "textDocument": {"uri": uri}, "partialResultToken": "bench"}
        started = time.perf_counter()
        result = await client.request(protocol.CHAT, params)
        ended = time.perf_counter()
        files, ready = None, None
        if indexing:
            indexed = (await client.request(protocol.SEARCH_CODEBASE, {"query": "file", "limit": 1}))[
                "indexed"
            ]
            files, ready = indexed["files"], indexed["ready"]
        stats = result["stats"]
        return ChatTurn(
            indexing,
            ((first[0] if first else ended) - started) * 1000,
            stats["tFirstTokenMs"],
            stats.get("steps", 1),
            stats["nPrompt"],
            ((loaded[0] if loaded else ended) - started) * 1000,
            files,
            ready,
        )
    finally:
        await client.close()


async def chat_while_indexing(
    model: Path, workspace: Path, document: Path, runs: int, workdir: Path
) -> ChatFigures:
    """Runs with the index on and off, interleaved (the order swapped every run) so that both see the
    same machine; each on a fresh cacheDir."""
    figures = ChatFigures()
    for run in range(runs):
        for indexing in (True, False) if run % 2 == 0 else (False, True):
            side = "on" if indexing else "off"
            turn = await chat_once(model, workspace, document, indexing, workdir / f"chat-{side}-{run}")
            (figures.on if indexing else figures.off).append(turn)
            where = f"; {turn.indexed_files:,} files indexed, ready {turn.index_ready}" if indexing else ""
            show(
                f"    run {run + 1}, index {side}: first token {turn.ttft_ms:,.0f} ms, the model loaded "
                f"at {turn.loaded_ms:,.0f} ms (engine {turn.engine_ttft_ms:,.0f} ms; {turn.n_prompt:,} "
                f"prompt tokens, {turn.steps} step(s)){where}"
            )
    return figures


def chat_document(large: Path) -> Path:
    """The file the chat is about: the first copy's Python file whose size is nearest 1 KB (a short
    prompt: the runs stay short on a CPU)."""
    files = python_files(large / "copy-00") if (large / "copy-00").is_dir() else python_files(large)
    return min(files, key=lambda path: (abs(path.stat().st_size - 1000), str(path)))


# ---- the table ------------------------------------------------------------------------------------

HEADER = ("figure", "goal", "measured", "result")


def verdict(met: bool) -> str:
    return "pass" if met else "FAIL"


def rows(small: Figures, large: Figures, chat: ChatFigures | None) -> list[tuple[str, str, str, str]]:
    s, n = f"{small.n_files:,}", f"{large.n_files:,}"
    table = [
        (
            f"cold build, {s} files",
            f"<= {GOAL_COLD_S:.0f} s",
            f"{small.cold_s:.1f} s",
            verdict(small.cold_s <= GOAL_COLD_S),
        ),
        (f"cold build, {n} files", "(report)", f"{large.cold_s:.1f} s", "-"),
        (
            f"reload at the next start, nothing changed, {s} files",
            f"<= {GOAL_RELOAD_S:.0f} s",
            f"{small.reload_s:.2f} s",
            verdict(small.reload_s <= GOAL_RELOAD_S),
        ),
        (f"reload at the next start, nothing changed, {n} files", "(report)", f"{large.reload_s:.2f} s", "-"),
    ]
    for size, f in ((s, small), (n, large)):
        table.append(
            (
                f"a saved file indexed again, median of {len(f.update_ms)}, {size} files",
                f"<= {GOAL_UPDATE_MS:.0f} ms",
                f"{f.update_p50_ms:.1f} ms",
                verdict(f.update_p50_ms <= GOAL_UPDATE_MS),
            )
        )
    for size, f in ((s, small), (n, large)):
        table.append(
            (f"first query after the build, {size} files", "(report)", report.ms(f.first_query_ms), "-")
        )
        table.append(
            (
                f"query p50 of {len(f.query_ms)} more, {size} files",
                f"<= {GOAL_QUERY_MS:.0f} ms",
                f"{f.query_p50_ms:.1f} ms",
                verdict(f.query_p50_ms <= GOAL_QUERY_MS),
            )
        )
    for size, f in ((s, small), (n, large)):
        table.append(
            (
                f"first query after a saved file, {size} files",
                "(report)",
                report.ms(f.query_after_update_ms),
                "-",
            )
        )
        table.append(
            (
                f"the ranker refreshed in the background after that query, {size} files",
                "(report)",
                report.ms(f.refresh_ms),
                "-",
            )
        )
    growth, peak = mb(large.rss_after_kb - large.rss_before_kb), mb(large.hwm_kb - large.rss_before_kb)
    table += [
        (
            f"RSS growth: build, save, {len(large.query_ms) + 1} queries, {n} files",
            f"<= {GOAL_RSS_MB:.0f} MB",
            f"{growth:.0f} MB",
            verdict(growth <= GOAL_RSS_MB),
        ),
        (f"peak RSS growth (VmHWM over VmRSS before), {n} files", "(report)", f"{peak:.0f} MB", "-"),
    ]
    if chat is None:
        table.append(("chat's first token while the index builds", "-", "not measured", "-"))
        return table
    one_file = large.file_ms
    table += [
        (
            f"chat's first token while {n} files are indexed, against index off (medians of {len(chat.on)})",
            f"delay <= one file's work ({one_file:.0f} ms)",
            f"{chat.median(True):,.0f} ms vs {chat.median(False):,.0f} ms: {chat.delay_ms:+,.0f} ms, "
            f"{chat.ratio:.2f}x",
            verdict(chat.delay_ms <= one_file),
        ),
        (
            "the same: the model loaded (a status) after the request",
            "(report)",
            f"{chat.median_loaded(True):,.0f} ms vs {chat.median_loaded(False):,.0f} ms",
            "-",
        ),
        (
            "the same: the engine's own tFirstTokenMs",
            "(report)",
            f"{chat.median(True, engine=True):,.0f} ms vs {chat.median(False, engine=True):,.0f} ms: "
            f"{chat.median(True, engine=True) / chat.median(False, engine=True):.2f}x",
            "-",
        ),
    ]
    return table


def print_table(table: Sequence[Sequence[str]]) -> None:
    lines = [HEADER, *table]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    show("")
    for line in lines:
        show("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


ABOUT = (
    "At 1 thread (OMP_NUM_THREADS and OPENBLAS_NUM_THREADS 1, set for a worker process before numpy and "
    "bm25s load), on the .py files of the standard library of the Python that ran the bench: {small:,} "
    "spread over it, copied into a temporary folder, and {large:,} as {copies} copies of those in separate "
    "folders. Cold build: `CodebaseIndex.build()` on a new index. Reload: a fresh index, `load` of the "
    "saved file (.npz) and `build` (which only stats the files; none is read again). A saved file: "
    "{updates} files across the folder, each written with a line more and `update`d. Queries: the first "
    "sentences of "
    "function docstrings of the corpus, drawn with a fixed seed, through `search` (10 results with their "
    "snippets); the build leaves the ranker made. After the saved files, a query answers from the last "
    "ranker and the changed files' new chunks, and starts the ranker's refresh in a thread: the time from "
    "that answer to the refreshed ranker in place is given too. Memory: VmRSS of the "
    "worker before the build and after the build, the save and the queries, and its VmHWM then. Chat: a "
    "real server over stdio on the {large:,}-file workspace (1 thread, fresh cacheDir each run, "
    "`warm` off), a {tokens}-token answer about one open file asked right after `initialized`, the index "
    "on and off in turn; the time from the request to its first streamed piece, model load included. "
    "One file's work is the cold build's time per file at {large:,} files."
)


def section(
    small: Figures, large: Figures, chat: ChatFigures | None, model: Path | None, copies: int
) -> report.Section:
    return report.Section(
        "bench/index",
        "The workspace index: what it costs at 1 thread",
        report.Run.now(
            threads=1,
            model=model if model is not None else "none",
            figures=f"medians; chat: medians of {len(chat.on) if chat else 0} runs each way",
            notes=f"corpus: Python {sys.version.split()[0]}'s standard library",
        ),
        [report.Table(HEADER, rows(small, large, chat))],
        about=ABOUT.format(
            small=small.n_files,
            large=large.n_files,
            copies=copies,
            updates=len(small.update_ms),
            tokens=CHAT_MAX_TOKENS,
        ),
    )


def run(
    model: Path | None, runs: int = CHAT_RUNS, sample_files: int = SAMPLE_FILES, copies: int = COPIES
) -> report.Section:
    """Every figure, printed as it comes, then the table; returns the table as the doc's section. No
    model: no chat."""
    started = time.perf_counter()
    show(f"\n(I) the workspace index at 1 thread, on {stdlib()}")
    with tempfile.TemporaryDirectory(prefix="llama-lsp-bench-index-") as tmp:
        workdir = Path(tmp)
        sample, large = write_corpus(workdir / "corpus", stdlib_files(sample_files), copies)
        queries = docstring_queries(sample, N_QUERIES + 1)
        show(
            f"  corpus copied: {sample_files:,} files, and {copies} copies "
            f"({time.perf_counter() - started:.0f} s)"
        )
        small_figures = measure_in_worker(sample, queries, workdir / "small", N_UPDATES)
        show_figures(f"{sample_files:,} files", small_figures)
        large_figures = measure_in_worker(large, queries, workdir / "large", N_UPDATES)
        show_figures(f"{sample_files * copies:,} files", large_figures)
        chat = None
        if model is not None:
            document = chat_document(large)
            show(
                f"  chat about {document.relative_to(large)}, asked right after `initialized`, index on "
                "and off:"
            )
            os.environ.update(ONE_THREAD)  # the servers inherit it
            chat = asyncio.run(chat_while_indexing(model, large, document, runs, workdir))
    print_table(rows(small_figures, large_figures, chat))
    show(
        f"\nran {time.perf_counter() - started:.0f} s; load average "
        + "/".join(f"{x:.2f}" for x in os.getloadavg())
    )
    return section(small_figures, large_figures, chat, model, copies)


if __name__ == "__main__":
    worker(sys.argv[1:])
