"""Would re-ranking the index's hits with the resident model's embeddings pay? (issue 45: "a re-rank from
the resident model only if it pays"). A measurement; the product does not re-rank.

Per case of eval/codebase/cases.json (the same workspaces, queries and gold files as run.py) the index
(`CodebaseIndex`) is built on the tree and asked for its top K chunks (`search(query, K)`). Each chunk's
text, with its path and symbol as a header, is cut to TOKENS tokens of the model's vocabulary; the query
and the chunks are embedded by llama.cpp's own server (`llama-server --embeddings --pooling mean`, the
default model, normalised vectors) and the chunks ordered three ways:

- bm25:   the index's order (its scores);
- cosine: by the cosine of the chunk's vector and the query's;
- rrf:    reciprocal rank fusion of the two, 1/(RRF_K + bm25 rank) + 1/(RRF_K + cosine rank).

Files are ranked as `rank_files` ranks them (a file where its best chunk is): in the order they first
appear among the K chunks, then the files of the index's own `rank_files(query, 10)` not among them, cut
at run.RANKED. So bm25 here is the index as run.py scores it (checked per case), and a re-rank can only
move the files the K chunks hold: `ceiling` is the share of cases whose gold file is among them or in
bm25's first five, the best Hit@5 any re-rank of K chunks could reach. Scored as run.py scores: Hit@1,
Hit@5, MRR of the first gold file.

Costs: the tokens embedded per query (the query and its K chunks), the server's embedding throughput
(tokens per second of its own request times, at --threads), and from those the seconds a query would
wait with nothing cached; and, for one snapshot of each repository, what embedding every chunk of its
index ahead (at index time) would take. Vectors are cached by their tokens (CACHE_DIR) so that a chunk
unchanged between two cases' parents, or a run again, is embedded once; the costs count every chunk,
and the first TIMED cases are embedded even when cached, to time a query with nothing cached.

    .venv/bin/python eval/codebase/rerank.py                          # every case
    .venv/bin/python eval/codebase/rerank.py --every 2 --json rr.json  # every other case
    .venv/bin/python eval/codebase/rerank.py --every 7 --start 0,3     # cases 0, 3, 7, 10, 14, ...
    .venv/bin/python eval/codebase/rerank.py --dry                     # no embedding: ceiling, tokens

Writes its section of docs/quality.md only when run on every case (or with --docs on a stated subset).
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import json
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(HERE), str(HERE.parent / "chat")]

from choose import PULL_REQUEST  # noqa: E402  (eval/chat/choose.py)
from run import CASES, RANKED, Result, first_gold, table  # noqa: E402  (eval/codebase/run.py)
from snapshots import CACHE, MIRRORS, MissingMirror, Repo  # noqa: E402  (eval/chat/snapshots.py)

from harness import report  # noqa: E402
from lsp_server.assistant.codebase import CodebaseIndex  # noqa: E402
from lsp_server.engine import models  # noqa: E402

SERVER = ROOT / "build" / "native" / "bin" / "llama-server"
MODEL = models.DEFAULT_MODEL
K = 20  # chunks re-ranked per query
TOKENS = 256  # a chunk's tokens embedded, header included
RRF_K = 60  # the usual constant of reciprocal rank fusion
CACHE_DIR = models.cache_root() / "eval-rerank"
RANKERS = ("bm25", "cosine", "rrf")
TIMED = 3  # cases embedded with no cache, for the cost of a query
NOT_FELT_S = 1.0  # more a search or a chat question may wait: "not seconds more" (issue 45)
AHEAD_REPOS = ("psf/black", "pallets/flask")  # whose whole index is costed as embedded at index time


# ---- the embedding server ------------------------------------------------------------------------


class Embedder:
    """llama-server in embeddings mode (mean pooling), started for this run; vectors cached by tokens."""

    def __init__(self, model: Path, threads: int, tokens: int, cache: Path | None) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        batch = max(512, tokens + 16)  # a sequence is pooled whole: it must fit one micro-batch
        self.command = [
            str(SERVER), "-m", str(model), "--embeddings", "--pooling", "mean", "-t", str(threads),
            "-c", str(batch), "-b", str(batch), "-ub", str(batch), "-np", "1",
            "--host", "127.0.0.1", "--port", str(port), "--no-webui",
        ]  # fmt: skip
        self.log = (cache or Path("/tmp")) / "server.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("w") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT)
        self.key_part = f"{model.name}:{model.stat().st_size}:mean"
        self.cache_file = cache / f"{model.stem}.jsonl" if cache else None
        self.cache: dict[str, np.ndarray] = {}
        if self.cache_file and self.cache_file.exists():
            for line in self.cache_file.read_text().splitlines():
                entry = json.loads(line)
                self.cache[entry["key"]] = np.frombuffer(base64.b64decode(entry["v"]), dtype=np.float32)
        self.n_embedded = 0  # tokens the server embedded in this run (cache misses)
        self.t_embed_s = 0.0
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"llama-server exited {self.process.returncode}; see {self.log}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise SystemExit(f"llama-server not ready in 300 s; see {self.log}")

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            self.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=600) as answer:
            return json.loads(answer.read())

    def tokenize(self, text: str) -> list[int]:
        return list(self._post("/tokenize", {"content": text})["tokens"])

    def embed(self, tokens: Sequence[int], fresh: bool = False) -> tuple[np.ndarray, float | None]:
        """The sequence's vector (unit length), and the seconds the server took (None: cached); `fresh`:
        embedded even when cached, to time it."""
        key = hashlib.sha1(f"{self.key_part}:{','.join(map(str, tokens))}".encode()).hexdigest()
        if key in self.cache and not fresh:
            return self.cache[key], None
        started = time.perf_counter()
        answer = self._post("/embedding", {"content": list(tokens)})
        seconds = time.perf_counter() - started
        vector = np.asarray(answer[0]["embedding"][0], dtype=np.float32)
        vector /= np.linalg.norm(vector) or 1.0
        self.cache[key] = vector
        self.n_embedded += len(tokens)
        self.t_embed_s += seconds
        if self.cache_file:
            with self.cache_file.open("a") as out:
                out.write(json.dumps({"key": key, "v": base64.b64encode(vector.tobytes()).decode()}) + "\n")
        return vector, seconds

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


# ---- a case ----------------------------------------------------------------------------------------


@dataclass
class Case(Result):
    n_candidates: int = 0  # distinct files among the K chunks
    ceiling: bool = False  # a gold file among them or in bm25's first five
    n_tokens: int = 0  # embedded for this query: the query and its K chunks, cut
    t_embed_s: float | None = None  # the server's time for them, when none was cached
    n_cached: int = 0


def chunk_text(root: Path, path: str, start: int, end: int, symbol: str | None) -> str:
    try:
        lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    header = f"# {path}" + (f" · {symbol}" if symbol else "")
    return header + "\n" + "\n".join(lines[start - 1 : end])


def files_of(chunk_paths: Sequence[str], fill: Sequence[str]) -> list[str]:
    """Files in the order their chunks first appear, then `fill`'s others, cut at RANKED."""
    return list(dict.fromkeys([*chunk_paths, *fill]))[:RANKED]


def rerank_case(
    case: dict, root: Path, embedder: Embedder, k: int, tokens: int, embed: bool = True, fresh: bool = False
) -> tuple[Case, CodebaseIndex]:
    query = PULL_REQUEST.sub("", case["subject"]).strip()
    result = Case(case["id"], case["repo"], case.get("chat", False), query, case["gold"])
    index = CodebaseIndex([root])
    index.build()
    hits = index.search(query, limit=k)
    indexed = [path for path, _ in index.rank_files(query, limit=RANKED)]
    paths = [hit.path for hit in hits]
    orders: dict[str, list[int]] = {"bm25": list(range(len(hits)))}
    texts = [chunk_text(root, h.path, h.start_line, h.end_line, h.symbol) for h in hits]
    sequences = [embedder.tokenize(query)[:tokens]] + [embedder.tokenize(t)[:tokens] for t in texts]
    result.n_tokens = sum(map(len, sequences))
    if embed:
        vectors, seconds = [], []
        for sequence in sequences:
            vector, took = embedder.embed(sequence, fresh)
            vectors.append(vector)
            seconds.append(took)
        result.n_cached = sum(1 for s in seconds if s is None)
        result.t_embed_s = None if result.n_cached else sum(s for s in seconds if s is not None)
        cosines = np.array([float(vectors[0] @ v) for v in vectors[1:]])
        by_cosine = sorted(range(len(hits)), key=lambda i: (-cosines[i], i))
        cosine_rank = {i: r for r, i in enumerate(by_cosine, 1)}
        orders["cosine"] = by_cosine
        orders["rrf"] = sorted(
            range(len(hits)), key=lambda i: (-(1 / (RRF_K + i + 1) + 1 / (RRF_K + cosine_rank[i])), i)
        )
    for name, order in orders.items():
        ranked = files_of([paths[i] for i in order], indexed)
        result.ranks[name] = first_gold(ranked, case["gold"])
        result.top[name] = ranked[:5]
    if result.top["bm25"] != indexed[:5]:
        print(f"{case['id']}: bm25 from K chunks differs from rank_files: {indexed[:5]}", file=sys.stderr)
    result.ranks["index"] = first_gold(indexed, case["gold"])
    candidates = set(paths)
    result.n_candidates = len(candidates)
    result.ceiling = any(g in candidates or g in indexed[:5] for g in case["gold"])
    return result, index


@dataclass
class Ahead:
    """Embedding every chunk of one snapshot's index ahead, at index time."""

    repo: str
    parent: str
    n_chunks: int = 0
    n_tokens: int = 0  # each chunk cut at TOKENS
    n_tokens_uncut: int = 0
    t_tokenize_s: float = 0.0


def ahead_cost(
    repo: str, parent: str, root: Path, index: CodebaseIndex, embedder: Embedder, tokens: int
) -> Ahead:
    ahead = Ahead(repo, parent)
    started = time.perf_counter()
    for path, chunk in index.chunks():  # every chunk, as the index holds them
        text = chunk_text(root, path, chunk.start_line, chunk.end_line, chunk.symbol)
        n = len(embedder.tokenize(text))
        ahead.n_chunks += 1
        ahead.n_tokens += min(n, tokens)
        ahead.n_tokens_uncut += n
    ahead.t_tokenize_s = time.perf_counter() - started
    return ahead


# ---- the report ----------------------------------------------------------------------------------


@dataclass
class Costs:
    threads: int
    k: int
    tokens: int
    n_tokens_p50: float = 0.0
    n_tokens_max: int = 0
    tok_per_s: float = 0.0  # the server's, over every embedding it did in this run
    s_per_query_p50: float = 0.0  # n_tokens_p50 / tok_per_s
    s_per_query_measured_p50: float | None = None  # cases with nothing cached
    ahead: list[dict[str, Any]] = field(default_factory=list)


def ceiling_line(results: Sequence[Case], k: int) -> str:
    n = len(results) or 1
    return (
        f"ceiling (a gold file among the {k} chunks' files or bm25's first five): "
        f"{sum(r.ceiling for r in results) / n:.2f}; files among the chunks: p50 "
        f"{statistics.median(r.n_candidates for r in results):.0f}"
    )


def cost_rows(costs: Costs) -> list[list[str]]:
    """What a re-rank would cost: per query, and per index embedded ahead."""
    rate = costs.tok_per_s
    rows = [
        [
            "a query (the query and its chunks)",
            f"{costs.n_tokens_p50:.0f} (max {costs.n_tokens_max})",
            f"{costs.s_per_query_p50:.0f}" if rate else "-",
            f"{costs.s_per_query_measured_p50:.0f}" if costs.s_per_query_measured_p50 else "-",
        ]
    ]
    for a in costs.ahead:
        rows.append(
            [
                f"ahead: every chunk of {a['repo']} @ {a['parent'][:10]} ({a['n_chunks']} chunks; "
                f"{a['n_tokens_uncut']} tokens uncut)",
                str(a["n_tokens"]),
                f"{a['s']:.0f} ({a['s'] / 60:.0f} min)" if rate else "-",
                "-",
            ]
        )
    return rows


COST_HEADER = ("embedded", "tokens", "s at the measured rate", "s measured (p50, nothing cached)")


def verdicts(summary: dict[str, Any], costs: Costs) -> list[str]:
    """Issue 45's rule: kept only if file-level Hit@5 rises by 5 points or more at a cost not felt (here:
    under NOT_FELT_S more per query)."""
    found = summary["all"]
    lines = []
    for name in RANKERS[1:]:
        gain = found[name]["hit5"] - found["bm25"]["hit5"]
        gain1 = found[name]["hit1"] - found["bm25"]["hit1"]
        pays = gain >= 0.05 - 1e-9 and costs.s_per_query_p50 < NOT_FELT_S
        lines.append(
            f"{name}: Hit@5 {gain:+.2f} against bm25, Hit@1 {gain1:+.2f}, "
            f"{costs.s_per_query_p50:.0f} s more per query: "
            + (
                "pays"
                if pays
                else f"does not pay (issue 45: Hit@5 +0.05 or more, under {NOT_FELT_S:.0f} s more a query)"
            )
        )
    return lines


def doc_section(
    summary: dict[str, Any], results: Sequence[Case], costs: Costs, subset: str
) -> report.Section:
    header = ["repository", "cases"] + [f"{name} {s}" for name in RANKERS for s in ("Hit@1", "Hit@5", "MRR")]
    rows = [
        [group, str(found["n"])]
        + [f"{found[name][s]:.2f}" for name in RANKERS for s in ("hit1", "hit5", "mrr")]
        for group, found in summary.items()
    ]
    return report.Section(
        "eval-codebase/rerank",
        "Re-ranking the index's chunks with the model's embeddings",
        report.Run.now(threads=costs.threads, model=MODEL, figures="one run of each case", notes=subset),
        [report.Table(header, rows), report.Table(COST_HEADER, cost_rows(costs))],
        about=(
            f"The index's top {costs.k} chunks per case (eval/codebase/rerank.py), each cut to "
            f"{costs.tokens} tokens with its path and symbol as a header, embedded with the query by "
            "llama-server (`--embeddings --pooling mean`); cosine orders them by cosine, rrf fuses that "
            f"with bm25's order (1/({RRF_K}+rank) each); files ranked by their best chunk, as the index "
            "ranks them; bm25 is the index alone on the same cases. The rate is the server's over this "
            f"run ({costs.tok_per_s:.1f} tokens/s at {costs.threads} thread(s), beside other work)."
        ),
        lines=[f"- {line}" for line in (ceiling_line(results, costs.k), *verdicts(summary, costs))],
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default="*", help="only the cases whose id matches this glob (tox-*)")
    parser.add_argument("--every", type=int, default=1, help="every Nth of those cases (2: every other)")
    parser.add_argument(
        "--start", default="0", help="where --every starts, or several starts: 0,3 (cases 0, 3, 7, 10, ...)"
    )
    parser.add_argument("--k", type=int, default=K, help=f"chunks re-ranked per query ({K})")
    parser.add_argument("--tokens", type=int, default=TOKENS, help=f"a chunk's tokens embedded ({TOKENS})")
    parser.add_argument("--threads", type=int, default=2, help="the server's threads (2)")
    parser.add_argument("--model", default=MODEL, help=f"a model name or .gguf path ({MODEL})")
    parser.add_argument("--dry", action="store_true", help="no embeddings: bm25, the ceiling and tokens")
    parser.add_argument("--no-ahead", action="store_true", help="skip costing a whole index embedded ahead")
    parser.add_argument(
        "--timed",
        type=int,
        default=TIMED,
        help=f"the first N cases embedded even when cached, to time a query with nothing cached ({TIMED})",
    )
    parser.add_argument("--no-cache", action="store_true", help=f"embed everything again ({CACHE_DIR})")
    parser.add_argument("--json", type=Path, help="also write every case's ranks and the costs")
    parser.add_argument(
        "--docs", action="store_true", help="write the section of docs/quality.md on a subset too"
    )
    parser.add_argument("--mirrors", type=Path, default=MIRRORS, help=f"where the mirrors are ({MIRRORS})")
    parser.add_argument("--snapshots", type=Path, default=CACHE, help=f"where the workspaces go ({CACHE})")
    args = parser.parse_args()

    every = json.loads(CASES.read_text())
    matching = [case for case in every if fnmatch.fnmatch(case["id"], args.cases)]
    starts = {int(start) for start in args.start.split(",")}
    cases = [case for i, case in enumerate(matching) if i % args.every in starts]
    if not cases:
        raise SystemExit(f"no case matches {args.cases!r}")
    model = models.resolve(args.model)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that the server is stopped too
    embedder = Embedder(model, args.threads, args.tokens, None if args.no_cache else CACHE_DIR)
    results: list[Case] = []
    last: dict[str, tuple[str, Path, CodebaseIndex]] = {}
    try:
        for case in cases:
            repo = Repo(case["repo"], args.mirrors)
            try:
                root = repo.snapshot(case["parent"], args.snapshots)
            except MissingMirror as exc:
                print(exc, file=sys.stderr)
                return 1
            result, index = rerank_case(
                case, root, embedder, args.k, args.tokens, not args.dry, fresh=len(results) < args.timed
            )
            results.append(result)
            last[case["repo"]] = (case["parent"], root, index)
            ranks = " ".join(f"{name}={result.ranks.get(name) or '-':<2}" for name in RANKERS)
            took = f"{result.t_embed_s:5.0f}s" if result.t_embed_s is not None else "     "
            print(
                f"{result.id:16} {ranks} files={result.n_candidates:<2} tok={result.n_tokens:<5} {took} "
                f"{result.query[:60]}",
                flush=True,
            )
        rankers = ("bm25",) if args.dry else RANKERS
        text, summary = table(results, rankers)
        print(f"\nThe first gold file among each ranker's {RANKED} (MRR: 0 past them)\n{text}\n")
        costs = Costs(args.threads, args.k, args.tokens)
        measured = [r.t_embed_s for r in results if r.t_embed_s is not None]
        costs.n_tokens_p50 = statistics.median(r.n_tokens for r in results)
        costs.n_tokens_max = max(r.n_tokens for r in results)
        costs.tok_per_s = embedder.n_embedded / embedder.t_embed_s if embedder.t_embed_s else 0.0
        costs.s_per_query_p50 = costs.n_tokens_p50 / costs.tok_per_s if costs.tok_per_s else 0.0
        costs.s_per_query_measured_p50 = statistics.median(measured) if measured else None
        if not args.no_ahead:
            for name in AHEAD_REPOS:
                if name in last:
                    parent, root, index = last[name]
                    ahead = ahead_cost(name, parent, root, index, embedder, args.tokens)
                    seconds = ahead.n_tokens / costs.tok_per_s if costs.tok_per_s else 0.0
                    costs.ahead.append(asdict(ahead) | {"s": seconds})
        print(ceiling_line(results, args.k))
        print(report.Table(COST_HEADER, cost_rows(costs)).markdown())
        if not args.dry:
            print(f"server: {costs.tok_per_s:.1f} tokens/s at {costs.threads} thread(s)")
            print("\n".join(verdicts(summary, costs)))
    finally:
        embedder.close()

    subset = (
        ""
        if len(cases) == len(every)
        else f"{len(cases)} of {len(every)} cases: {args.cases}, every {args.every} from {args.start}"
    )
    if not args.dry and (not subset or args.docs):
        report.write(
            report.QUALITY, [doc_section(summary, results, costs, subset)], "`python eval/codebase/rerank.py`"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {"summary": summary, "costs": asdict(costs), "cases": [asdict(r) for r in results]}, indent=2
            )
            + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
