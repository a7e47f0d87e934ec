"""`make eval-codebase`: how well the workspace index finds the files a change is about (issue 45).

Each case in eval/codebase/cases.json is a commit of a public Python repository (queries.py says how
they were chosen); the query is the commit's subject, the gold answer the source files it changed,
and the workspace the repository's tree at the commit's parent (eval/chat/snapshots.py writes it).
Three rankers each give their top RANKED files:

- index: lsp_server.assistant.codebase's CodebaseIndex, built on the tree, then `rank_files`;
- grep:  the files holding the most distinct query words (case-insensitive substrings, as grep -i
         finds them), ties by the words' total occurrences;
- bm25:  Okapi BM25 (k1 1.5, b 0.75; the `bm25s` package) over whole files, with grep's words.

Scored per ranker: Hit@1 and Hit@5 (a gold file is first, or in the first five) and MRR (the mean of
1/rank of the first gold file, 0 when it is not among the RANKED). For the index also at the chunk
level: a hit of `search` that overlaps a line the commit changed (in the parent's numbering). Timed:
each index's build (one per distinct parent), its first query (which may include lazy work) and a
second, warm one, and the baselines' preparation and queries.

grep and bm25 see the files the index would on a folder that is no git repository: every file
outside dot-folders and SKIPPED_DIRS, not binary, at most MAX_FILE_BYTES; with --baselines-py only
the .py ones (docs and changelogs, which often repeat a subject's words, left out).

Prints one row per case (the rank of the first gold file per ranker, `-` past RANKED), then one table,
rankers side by side, per repository, for the chat eval's 30 cases, and for all; then the timings.
--json writes every case's ranks and top files, every build's counts and times, and the table. A run of
every case with this checkout's index replaces its section of docs/quality.md (harness/report.py; one
section with the baselines over every file, one with `--baselines-py`); a run of some cases, of another
index or of none writes nothing there, nor does one with `--no-docs`.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import importlib
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "chat"))

from choose import PULL_REQUEST  # noqa: E402  (eval/chat/choose.py)
from snapshots import CACHE, MIRRORS, MissingMirror, Repo  # noqa: E402

from harness import report  # noqa: E402

CASES = HERE / "cases.json"
HELD_OUT_CASES = HERE / "cases-held-out.json"  # queries.py --held-out
INDEX = "lsp_server.assistant.codebase:CodebaseIndex"
RANKED = 10  # the files each ranker gives; a gold file past them scores 0
CHUNKS = 10  # the index's hits looked at for the chunk-level score
SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", "build", "dist"})  # as the tools'
MAX_FILE_BYTES = 512 * 1024  # as the tools' sandbox
BASELINES = ("grep", "bm25")
WORD = re.compile(r"[a-z0-9]+")
STOP_WORDS = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be but by can could do does for from has have if in into is it its may not of "
        "on only or so than that the their then there these this those to too was we were when which while "
        "will with without would",
    )
)
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? ", re.MULTILINE)


# ---- the rankers ---------------------------------------------------------------------------------


def query_words(query: str) -> list[str]:
    """The query's distinct words, lowercased, without English function words or single letters."""
    return list(dict.fromkeys(w for w in WORD.findall(query.lower()) if len(w) > 1 and w not in STOP_WORDS))


def tree_files(root: Path, suffix: str = "") -> dict[str, str]:
    """Relative path -> lowercased text of every file the baselines rank (those ending in `suffix`)."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            path = Path(dirpath, name)
            if not name.endswith(suffix) or path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = path.read_bytes()
            if b"\0" in data[:8192]:
                continue
            found[path.relative_to(root).as_posix()] = data.decode("utf-8", errors="replace").lower()
    return found


def grep_rank(files: dict[str, str], words: Sequence[str], limit: int = RANKED) -> list[str]:
    counts = {path: [text.count(word) for word in words] for path, text in files.items()}
    matched = [(sum(1 for n in c if n), sum(c), path) for path, c in counts.items() if any(c)]
    return [path for _, _, path in sorted(matched, key=lambda m: (-m[0], -m[1], m[2]))[:limit]]


class WholeFileBM25:
    """BM25 over whole files, tokenized as grep's query words are (without dropping any)."""

    def __init__(self, files: dict[str, str]) -> None:
        import bm25s  # a test dependency: the reference of the index's scores

        self.paths = list(files)
        self.bm25 = bm25s.BM25(k1=1.5, b=0.75)
        self.bm25.index([WORD.findall(files[p]) or [""] for p in self.paths], show_progress=False)

    def rank(self, words: Sequence[str], limit: int = RANKED) -> list[str]:
        known = [word for word in words if word in self.bm25.vocab_dict]
        if not known:
            return []
        scores = self.bm25.get_scores(known)
        order = sorted((-float(s), p) for s, p in zip(scores, self.paths, strict=True) if s > 0)
        return [path for _, path in order[:limit]]


def load_index_class(spec: str) -> Callable[[list[Path]], Any] | str:
    """The index class named `module:Class`, or why it could not be imported."""
    module, _, name = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except Exception as exc:  # a module being written may fail in any way; the baselines still run
        return f"{spec}: {type(exc).__name__}: {exc}"


def source_of(index_class: Any) -> dict[str, str] | None:
    """The index module's file and the SHA-1 of its text: which version of a module being written ran."""
    path = getattr(sys.modules.get(getattr(index_class, "__module__", "")), "__file__", None)
    if index_class is None or path is None:
        return None
    return {"file": path, "sha1": hashlib.sha1(Path(path).read_bytes()).hexdigest()}


def count(index: Any, name: str) -> int | None:
    value = getattr(index, name, None)
    return value if isinstance(value, int) else None


# ---- a case ----------------------------------------------------------------------------------------


@dataclass
class Build:
    repo: str
    parent: str
    n_cases: int
    n_files: int | None = None  # the index's
    n_chunks: int | None = None
    t_build_s: float | None = None
    n_baseline_files: int = 0
    t_read_s: float = 0.0
    t_bm25_index_s: float = 0.0


@dataclass
class Result:
    id: str
    repo: str
    chat: bool
    query: str
    gold: list[str]
    ranks: dict[str, int | None] = field(default_factory=dict)  # ranker -> rank of the first gold file
    top: dict[str, list[str]] = field(default_factory=dict)  # ranker -> its first five files
    chunk_rank: int | None = None  # the first of the index's hits that overlaps a changed line
    t_query_ms: dict[str, float] = field(default_factory=dict)  # ranker -> ms; index_first: cold


def first_gold(ranked: Sequence[str], gold: Sequence[str]) -> int | None:
    return next((i for i, path in enumerate(ranked, 1) if path in gold), None)


def changed_lines(repo: Repo, case: dict) -> dict[str, list[tuple[int, int]]]:
    """Per gold file, the line ranges the commit changed, in the parent's numbering (an insertion:
    the lines either side of it)."""
    found: dict[str, list[tuple[int, int]]] = {}
    for path in case["gold"]:
        diff = repo.git("diff", "-U0", case["parent"], case["commit"], "--", path).stdout
        for match in HUNK.finditer(diff):
            start, length = int(match[1]), int(match[2] or 1)
            found.setdefault(path, []).append(
                (start, start + length - 1) if length else (max(start, 1), start + 1)
            )
    return found


def chunk_rank(hits: Sequence[Any], lines: dict[str, list[tuple[int, int]]]) -> int | None:
    for i, hit in enumerate(hits, 1):
        if any(a <= hit.end_line and hit.start_line <= b for a, b in lines.get(hit.path, ())):
            return i
    return None


def run_snapshot(
    root: Path, build: Build, cases: list[dict], repo: Repo, index_class: Any, suffix: str = ""
) -> list[Result]:
    """Every case whose workspace is `root`: one index build, one baseline preparation."""
    index = None
    if index_class is not None:
        started = time.perf_counter()
        index = index_class([root])
        index.build()
        build.t_build_s = time.perf_counter() - started
        build.n_files, build.n_chunks = count(index, "n_files"), count(index, "n_chunks")
    started = time.perf_counter()
    files = tree_files(root, suffix)
    build.n_baseline_files = len(files)
    build.t_read_s = time.perf_counter() - started
    started = time.perf_counter()
    bm25 = WholeFileBM25(files)
    build.t_bm25_index_s = time.perf_counter() - started

    results = []
    for case in cases:
        query = PULL_REQUEST.sub("", case["subject"]).strip()
        result = Result(case["id"], case["repo"], case.get("chat", False), query, case["gold"])
        ranked: dict[str, list[str]] = {}
        if index is not None:
            for label in ("index_first", "index"):  # the same query twice: cold, then warm
                started = time.perf_counter()
                ranked["index"] = [path for path, _ in index.rank_files(query, limit=RANKED)]
                result.t_query_ms[label] = (time.perf_counter() - started) * 1000
            result.chunk_rank = chunk_rank(index.search(query, limit=CHUNKS), changed_lines(repo, case))
        words = query_words(query)
        for name, rank in (("grep", partial(grep_rank, files)), ("bm25", bm25.rank)):
            started = time.perf_counter()
            ranked[name] = rank(words)
            result.t_query_ms[name] = (time.perf_counter() - started) * 1000
        for name, paths in ranked.items():
            result.ranks[name] = first_gold(paths, case["gold"])
            result.top[name] = paths[:5]
        results.append(result)
    return results


# ---- the report ----------------------------------------------------------------------------------


def scores(results: Sequence[Result], ranker: str) -> tuple[float, float, float]:
    ranks = [r.ranks.get(ranker) for r in results]
    n = len(ranks) or 1
    return (
        sum(1 for k in ranks if k == 1) / n,
        sum(1 for k in ranks if k is not None and k <= 5) / n,
        sum(1 / k for k in ranks if k is not None) / n,
    )


def table(results: Sequence[Result], rankers: Sequence[str]) -> tuple[str, dict[str, Any]]:
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(r.repo, []).append(r)
    if any(r.chat for r in results):
        groups["chat eval's cases"] = [r for r in results if r.chat]
    groups["all"] = list(results)
    head = f"{'':22} {'n':>4} " + " ".join(f"| {name:^17}" for name in rankers)
    sub = f"{'':22} {'':>4} " + " ".join(f"| {'H@1':>5} {'H@5':>5} {'MRR':>5}" for _ in rankers)
    lines = [head, sub]
    summary: dict[str, Any] = {}
    for group, members in groups.items():
        row = {name: scores(members, name) for name in rankers}
        summary[group] = {"n": len(members)} | {
            name: dict(zip(("hit1", "hit5", "mrr"), values, strict=True)) for name, values in row.items()
        }
        cells = " ".join("| " + " ".join(f"{v:5.2f}" for v in row[name]) for name in rankers)
        lines.append(f"{group:22} {len(members):4} {cells}")
    return "\n".join(lines), summary


def p50(values: Sequence[float | None]) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return "-"
    middle = statistics.median(present)
    return f"{middle:.0f}" if all(isinstance(v, int) for v in present) else f"{middle:.1f}"


def timings(builds: Sequence[Build], results: Sequence[Result]) -> str:
    columns = (
        ("builds", 6), ("cases", 5), ("files", 5), ("chunks", 6), ("build s", 7), ("max s", 6),
        ("first ms", 8), ("query ms", 8), ("files", 5), ("read s", 6), ("bm25 s", 6), ("grep ms", 7),
        ("bm25 ms", 7),
    )  # fmt: skip
    span = [sum(width + 1 for _, width in part) - 1 for part in (columns[:2], columns[2:8], columns[8:])]
    lines = [
        f"{'':14} {'':{span[0]}} {'index (p50; max s: the slowest build)':^{span[1]}} "
        f"{'grep, bm25 (p50)':^{span[2]}}",
        f"{'':14} " + " ".join(f"{name:>{width}}" for name, width in columns),
    ]
    for repo in dict.fromkeys(b.repo for b in builds):
        bs = [b for b in builds if b.repo == repo]
        rs = [r for r in results if r.repo == repo]
        t_build = [b.t_build_s for b in bs if b.t_build_s is not None]
        ms = [p50([r.t_query_ms.get(name) for r in rs]) for name in ("index_first", "index", *BASELINES)]
        values = (
            len(bs), len(rs), p50([b.n_files for b in bs]), p50([b.n_chunks for b in bs]), p50(t_build),
            f"{max(t_build):.1f}" if t_build else "-", ms[0], ms[1], p50([b.n_baseline_files for b in bs]),
            p50([b.t_read_s for b in bs]), p50([b.t_bm25_index_s for b in bs]), ms[2], ms[3],
        )  # fmt: skip
        lines.append(
            f"{repo:14} "
            + " ".join(f"{value:>{width}}" for value, (_, width) in zip(values, columns, strict=True))
        )
    return "\n".join(lines)


ABOUT = (
    "Each case is a commit of a public repository: the query is its subject, the workspace the repository "
    "at its parent, the gold answer the source files it changed (eval/codebase/README.md). Hit@1 and "
    "Hit@5: a gold file ranked first, or in the first five; MRR: the mean of 1/rank of the first gold "
    "file (0 past the tenth). grep ranks files by the distinct query words they hold, bm25 whole files "
    "by Okapi BM25; {baselines}. No model. Times are medians per repository; the first query builds "
    "the ranker."
)


def doc_section(
    summary: dict[str, Any],
    rankers: Sequence[str],
    builds: Sequence[Build],
    results: Sequence[Result],
    py: bool,
    held_out: bool = False,
) -> report.Section:
    """The rankers side by side per repository and for all, and the index's timings, as the doc's section."""
    header = ["repository", "cases"] + [
        f"{name} {score}" for name in rankers for score in ("Hit@1", "Hit@5", "MRR")
    ]
    rows = [
        [group, str(found["n"])]
        + [f"{found[name][score]:.2f}" for name in rankers for score in ("hit1", "hit5", "mrr")]
        for group, found in summary.items()
        if group != "index_chunks"
    ]
    timing_rows = []
    for repo in dict.fromkeys(b.repo for b in builds):
        bs = [b for b in builds if b.repo == repo]
        rs = [r for r in results if r.repo == repo]
        t_build = [b.t_build_s for b in bs if b.t_build_s is not None]
        timing_rows.append(
            [
                repo,
                str(len(bs)),
                p50([b.n_files for b in bs]),
                p50([b.n_chunks for b in bs]),
                p50(t_build),
                f"{max(t_build):.1f}" if t_build else "-",
                *(p50([r.t_query_ms.get(name) for r in rs]) for name in ("index_first", "index", *BASELINES)),
            ]
        )
    timing_header = (
        "repository", "builds", "files", "chunks", "build s", "slowest build s", "first query ms",
        "query ms", "grep ms", "bm25 ms",
    )  # fmt: skip
    lines = []
    if "index_chunks" in summary:
        chunks = summary["index_chunks"]
        lines.append(
            f"The index at the chunk level (a hit overlaps a line the commit changed): Hit@1 "
            f"{chunks['hit1']:.2f}, Hit@5 {chunks['hit5']:.2f}."
        )
    baselines = (
        "both over the .py files alone (`--baselines-py`)" if py else "both over every file the index sees"
    )
    key = "eval-codebase" + ("/baselines-py" if py else "") + ("/held-out" if held_out else "")
    title = "The workspace index against grep and BM25" + (" over .py files" if py else "")
    if held_out:
        title += ", on repositories held out while its ranking was tuned"
    return report.Section(
        key,
        title,
        report.Run.now(threads=1, model="none", figures="one run of each case"),
        [report.Table(header, rows), report.Table(timing_header, timing_rows)],
        about=ABOUT.format(baselines=baselines),
        lines=lines,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default="*", help="only the cases whose id matches this glob (tox-*)")
    parser.add_argument("--index", default=INDEX, help=f"the index class, module:Class ({INDEX})")
    parser.add_argument("--no-index", action="store_true", help="the baselines alone")
    parser.add_argument(
        "--baselines-py",
        action="store_true",
        help="grep and bm25 rank only .py files, as the gold files are (the index ranks every file)",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="the cases of the repositories held out while the ranking was tuned (cases-held-out.json); "
        "their own section in docs/quality.md",
    )
    parser.add_argument("--json", type=Path, help="also write every case's ranks, the builds and the table")
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help=f"where the mirrors are ({MIRRORS})")
    parser.add_argument("--snapshots", type=Path, default=CACHE, help=f"where the workspaces go ({CACHE})")
    parser.add_argument(
        "--no-docs",
        action="store_true",
        help="write nothing to docs/quality.md (by default a run of every case with this checkout's index "
        "replaces its section there)",
    )
    args = parser.parse_args()

    every = json.loads((HELD_OUT_CASES if args.held_out else CASES).read_text())
    cases = [case for case in every if fnmatch.fnmatch(case["id"], args.cases)]
    if not cases:
        raise SystemExit(f"no case matches {args.cases!r}")
    index_class = None if args.no_index else load_index_class(args.index)
    if isinstance(index_class, str):
        print(f"no index, baselines alone: {index_class}", file=sys.stderr)
        index_class = None
    rankers = ("index", *BASELINES) if index_class is not None else BASELINES

    by_snapshot: dict[tuple[str, str], list[dict]] = {}  # consecutive cases on one parent share a build
    for case in cases:
        by_snapshot.setdefault((case["repo"], case["parent"]), []).append(case)
    builds: list[Build] = []
    results: list[Result] = []
    for (name, parent), members in by_snapshot.items():
        repo = Repo(name, args.mirrors)
        try:
            root = repo.snapshot(parent, args.snapshots)
        except MissingMirror as exc:
            print(exc, file=sys.stderr)
            return 1
        build = Build(name, parent, len(members))
        done = run_snapshot(root, build, members, repo, index_class, ".py" if args.baselines_py else "")
        builds.append(build)
        results += done
        for r in done:
            ranks = " ".join(f"{name}={r.ranks[name] or '-':<2}" for name in rankers)
            chunk = f" chunk={r.chunk_rank or '-':<2}" if index_class is not None else ""
            print(f"{r.id:16} {ranks}{chunk} {r.query[:70]}", flush=True)

    text, summary = table(results, rankers)
    print(f"\nThe first gold file among each ranker's {RANKED} (MRR: 0 past them)\n{text}")
    if index_class is not None:
        n = len(results)
        chunk_ranks = Counter(min(r.chunk_rank or 99, 6) for r in results)
        hit1, hit5 = chunk_ranks[1] / n, sum(chunk_ranks[k] for k in range(1, 6)) / n
        summary["index_chunks"] = {"hit1": hit1, "hit5": hit5}
        print(f"\nindex, chunk level (a hit overlaps a changed line): Hit@1 {hit1:.2f}  Hit@5 {hit5:.2f}")
    print(
        f"\n{len(builds)} snapshots for {len(results)} cases; index build and first query "
        f"(any lazy work) once per snapshot\n{timings(builds, results)}"
    )
    if args.no_docs:
        pass
    elif len(cases) == len(every) and index_class is not None and args.index == INDEX:
        section = doc_section(summary, rankers, builds, results, args.baselines_py, args.held_out)
        report.write(report.QUALITY, [section], "`make eval-codebase`")
    else:
        print("docs/quality.md: nothing written: some cases, or another index than this checkout's, or none")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "index": args.index if index_class is not None else None,
                    "index_source": source_of(index_class),
                    "baselines_py": args.baselines_py,
                    "summary": summary,
                    "builds": [asdict(b) for b in builds],
                    "cases": [asdict(r) for r in results],
                },
                indent=2,
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
