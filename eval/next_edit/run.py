"""`make eval-next-edit`: how often `assistant/nextEdit` suggests the edit a developer made next (issue 42).

Each case (build.py, from eval/next_edit/cases.json) is one file of a real commit: the user's edit is
the first hunk of its diff, the expected next edit the second; a file whose diff is a single hunk
expects no suggestion. One real server serves the whole run (the model loads once), driven through
the headless client as an editor drives it. Per case, in a fresh folder of the run's workspace:

1. `didOpen` the file as it was at the parent (version 1), then `didChange` with the user's edit
   (version 2, one range change);
2. wait until the server has read the start of the prompt a suggestion for version 2 begins with
   (`assistant/stats` nextEdit.warm names the document and version 2), as it does while a user types
   the edit: the latency measured is a warm file's; after WARM_TIMEOUT_S the case goes on, marked
   cold; then `assistant/nextEdit` at the cursor where the user's typing ended, timed from the
   request to its answer;
3. a suggestion is applied to the text after the user's edit and scored, then `assistant/nextEditShown`
   and `assistant/nextEditRejected` are sent for it; `assistant/stats` nextEdit.last gives the
   request's tokens; `didClose`.

Scores, for a case with a next edit: exact (the file after the suggestion equals the file at the
commit, trailing whitespace aside), none (null), wrong (anything else), and overlap (the lines the
suggestion changes meet the lines of the expected hunk; an exact answer overlaps). For a case without:
none (right) or suggested (wrong). The baseline (substitution.py: the user's substitution repeated at
its next occurrence) runs without a model in the same run and is scored the same way.

Prints one row per case, then the table: per repository, for the cases whose second hunk repeats the
first's substitution (renames), and for all; the model's and the baseline's figures side by side;
latency (p50, p90) and prompt tokens evaluated per request. --json writes every case's record. A run
of every case on this checkout's server replaces its section of docs/quality.md (harness/report.py),
keyed by the model; a run of some cases (--cases, --limit), --baseline-only, or --no-docs writes
nothing there.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import fnmatch
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcException  # noqa: E402
from substitution import suggest  # noqa: E402
from textedit import apply_edits, line_range_offsets, lsp_range, offset, same_text, split_lines  # noqa: E402

from harness import report  # noqa: E402
from lsp_server.clients.headless import HeadlessClient  # noqa: E402
from lsp_server.engine import models  # noqa: E402
from lsp_server.lsp import protocol  # noqa: E402

CASES_DIR = HERE.parent.parent / "build" / "eval-next-edit" / "cases"  # where build.py writes them
LOAD_TIMEOUT_S = 300
WARM_TIMEOUT_S = 300
WARM_POLL_S = 0.5
REQUEST_TIMEOUT_S = 300
METHOD_NOT_FOUND = -32601
LANGUAGE_IDS = {"python": "python", "go": "go"}


# ---- scoring ---------------------------------------------------------------------------------------


@dataclass
class Score:
    outcome: str  # next-edit case: exact, wrong, none; no-suggestion case: none, suggested
    overlap: bool = False  # the suggestion's changed lines meet the expected hunk's
    error: str = ""  # why a suggestion could not be applied (it counts as wrong)


def changed_lines(before: str, after: str) -> list[tuple[int, int]]:
    """The line ranges [start, end) of `before` that differ in `after`; an insertion between two lines
    counts as touching both."""
    matcher = difflib.SequenceMatcher(None, split_lines(before), split_lines(after), autojunk=False)
    return [widened(i1, i2) for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal"]


def widened(start: int, end: int) -> tuple[int, int]:
    return (start, end) if end > start else (max(start - 1, 0), start + 1)


def meets(ranges: Sequence[tuple[int, int]], target: tuple[int, int]) -> bool:
    return any(start < target[1] and target[0] < end for start, end in ranges)


def score(case: dict[str, Any], edits: Sequence[dict[str, Any]] | None) -> Score:
    """How a suggestion (LSP TextEdits against the text after the user's edit, or None) does on a case."""
    expects_edit = case["expected"] is not None
    if edits is None:
        return Score("none")
    try:
        result = apply_edits(case["after_user"], edits)
    except (ValueError, KeyError, TypeError) as exc:
        return Score("wrong" if expects_edit else "suggested", error=f"{type(exc).__name__}: {exc}")
    if not expects_edit:
        return Score("suggested")
    if same_text(result, case["expected"]):
        return Score("exact", overlap=True)
    hunk = case["next_edit"]
    target = widened(hunk["start_line"], hunk["end_line"])
    return Score("wrong", overlap=meets(changed_lines(case["after_user"], result), target))


def baseline_edits(case: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The baseline's suggestion for a case, as LSP TextEdits against the text after the user's edit."""
    user = case["user_edit"]
    before_lines = split_lines(case["before"])
    old_text = "".join(before_lines[user["start_line"] : user["end_line"]])
    after_user = case["after_user"]
    hunk_start, _ = line_range_offsets(after_user, user["start_line"], user["start_line"])
    found = suggest(after_user, hunk_start, old_text, user["new_text"], offset(after_user, case["cursor"]))
    if found is None:
        return None
    start, end, new_text = found
    return [{"range": lsp_range(after_user, start, end), "newText": new_text}]


# ---- the server --------------------------------------------------------------------------------------


class NotServed(Exception):
    """The server answers assistant/nextEdit with MethodNotFound: it has no next-edit suggestions."""


@dataclass
class Outcome:
    id: str
    repo: str
    kind: str
    language: str
    repeat: bool
    distance: int
    baseline: Score
    model: Score | None = None  # None: the model was not asked (--baseline-only, or not served)
    edits: list[dict[str, Any]] | None = None  # the model's suggestion as it came back
    baseline_edits: list[dict[str, Any]] | None = None
    error: str = ""  # the request failed or timed out
    cold: bool = False  # the next-edit slot was not seen warm within WARM_TIMEOUT_S
    t_warm_s: float | None = None
    t_ms: float | None = None  # the request, from sending it to its answer
    n_prompt: int | None = None  # assistant/stats nextEdit.last
    n_evaluated: int | None = None
    n_generated: int | None = None
    server_outcome: str = ""  # nextEdit.last.outcome: why the server answered as it did
    last: dict[str, Any] = field(default_factory=dict)  # nextEdit.last as the server gave it


class NextEditSession:
    """One server for the run: the model loads once; each case opens, edits, asks and closes its file."""

    def __init__(self, root: Path, options: dict[str, Any], server_log: bool):
        self.root = root
        self.options = options
        self.server_log = server_log
        self.client = HeadlessClient(verbose=server_log)

    async def start(self) -> None:
        await self.client.start("--log-level", "info" if self.server_log else "warning")
        await self.client.initialize_session(self.root, self.options)
        status = await asyncio.wait_for(self.client.wait_until_loaded(), LOAD_TIMEOUT_S)
        if status["state"] == protocol.ERROR:
            raise RuntimeError(f"the model did not load: {status.get('message', '')}")

    async def close(self) -> None:
        await self.client.close()

    async def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.client.request(protocol.STATS, None)
        return result

    async def wait_warm(self, uri: str, version: int, timeout_s: float) -> bool:
        """Until the server has read the start of the prompt a suggestion for this version of the document
        begins with (stats nextEdit.warm), as it does while a user types the edit. False after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            warm = (await self.stats()).get("nextEdit", {}).get("warm") or {}
            if warm.get("uri") == uri and warm.get("version") == version:
                return True
            await asyncio.sleep(WARM_POLL_S)
        return False

    async def run_case(self, case: dict[str, Any], outcome: Outcome, warm_timeout_s: float) -> None:
        path = self.root / case["id"] / case["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(case["before"], encoding="utf-8")
        uri = path.as_uri()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri, LANGUAGE_IDS[case["language"]], 1, case["before"])
            )
        )
        try:
            user = case["user_edit"]
            start, end = line_range_offsets(case["before"], user["start_line"], user["end_line"])
            change = lsp_range(case["before"], start, end)
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                    content_changes=[
                        types.TextDocumentContentChangePartial(
                            range=types.Range(
                                types.Position(**change["start"]), types.Position(**change["end"])
                            ),
                            text=user["new_text"],
                        )
                    ],
                )
            )
            started = time.monotonic()
            outcome.cold = not await self.wait_warm(uri, 2, warm_timeout_s)
            outcome.t_warm_s = time.monotonic() - started
            params = {"textDocument": {"uri": uri, "version": 2}, "position": case["cursor"]}
            started = time.monotonic()
            try:
                answer = await asyncio.wait_for(
                    self.client.request(protocol.NEXT_EDIT, params), REQUEST_TIMEOUT_S
                )
            except JsonRpcException as exc:
                if exc.code == METHOD_NOT_FOUND:
                    raise NotServed(str(exc.message)) from exc
                outcome.error = f"{exc.code}: {exc.message}"[:300]
                return
            except asyncio.TimeoutError:
                outcome.error = f"no answer within {REQUEST_TIMEOUT_S} s"
                return
            finally:
                outcome.t_ms = (time.monotonic() - started) * 1000
            outcome.edits = list(answer["edits"]) if answer else None
            outcome.model = score(case, outcome.edits)
            if answer:
                self.client.protocol.notify(protocol.NEXT_EDIT_SHOWN, {"id": answer["id"]})
                self.client.protocol.notify(protocol.NEXT_EDIT_REJECTED, {"id": answer["id"]})
            last = ((await self.stats()).get("nextEdit") or {}).get("last") or {}
            outcome.last = last
            outcome.n_prompt = last.get("nPrompt")
            outcome.n_evaluated = last.get("nEvaluated")
            outcome.n_generated = last.get("nGenerated")
            outcome.server_outcome = str(last.get("outcome", ""))
        finally:
            self.client.text_document_did_close(
                types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
            )


# ---- the report ------------------------------------------------------------------------------------


def percent(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def tally(outcomes: Sequence[Outcome], pick: Callable[[Outcome], Score | None]) -> dict[str, Any]:
    """Counts of each outcome for the cases with an edit and those without, for one suggester."""
    with_edit = [pick(o) for o in outcomes if o.kind == "next-edit"]
    without = [pick(o) for o in outcomes if o.kind == "no-suggestion"]
    scored = [s for s in with_edit if s is not None]
    unscored = [s for s in without if s is not None]
    return {
        "edit_cases": len(scored),
        "exact": sum(s.outcome == "exact" for s in scored),
        "overlap": sum(s.overlap for s in scored),
        "none": sum(s.outcome == "none" for s in scored),
        "wrong": sum(s.outcome == "wrong" for s in scored),
        "no_edit_cases": len(unscored),
        "no_edit_none": sum(s.outcome == "none" for s in unscored),
    }


def groups(outcomes: Sequence[Outcome]) -> dict[str, list[Outcome]]:
    found = {
        repo: [o for o in outcomes if o.repo == repo] for repo in dict.fromkeys(o.repo for o in outcomes)
    }
    found["renames (hunk 2 repeats hunk 1)"] = [o for o in outcomes if o.repeat]
    found["all"] = list(outcomes)
    return found


def figures(counts: dict[str, Any]) -> list[str]:
    """exact, overlap, none, wrong (of the cases with an edit) and none (of those without), as percents."""
    n = counts["edit_cases"]
    return [
        *(percent(counts[name], n) for name in ("exact", "overlap", "none", "wrong")),
        percent(counts["no_edit_none"], counts["no_edit_cases"]),
    ]


def summary(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    return {
        name: {
            "cases": len(members),
            "model": tally(members, lambda o: o.model),
            "baseline": tally(members, lambda o: o.baseline),
        }
        for name, members in groups(outcomes).items()
    }


def quantiles(values: Sequence[float | int | None]) -> tuple[str, str]:
    """p50 and p90 of the values present, as text ("-" for none)."""
    present = sorted(float(v) for v in values if v is not None)
    if not present:
        return "-", "-"
    if len(present) == 1:
        return f"{present[0]:.0f}", f"{present[0]:.0f}"
    cuts = statistics.quantiles(present, n=10, method="inclusive")
    return f"{statistics.median(present):.0f}", f"{cuts[8]:.0f}"


SCORE_COLUMNS = ("exact", "overlap", "none", "wrong", "none (no edit)")


def table_rows(table: dict[str, Any], with_model: bool) -> list[list[str]]:
    rows = []
    for name, found in table.items():
        model = figures(found["model"]) if with_model else ["-"] * len(SCORE_COLUMNS)
        rows.append(
            [
                name,
                str(found["baseline"]["edit_cases"]),
                str(found["baseline"]["no_edit_cases"]),
                *model,
                *figures(found["baseline"]),
            ]
        )
    return rows


def latency(outcomes: Sequence[Outcome]) -> dict[str, str]:
    asked = [o for o in outcomes if o.t_ms is not None]
    t50, t90 = quantiles([o.t_ms for o in asked])
    e50, e90 = quantiles([o.n_evaluated for o in asked])
    p50, _ = quantiles([o.n_prompt for o in asked])
    g50, _ = quantiles([o.n_generated for o in asked])
    return {
        "requests": str(len(asked)),
        "cold": str(sum(o.cold for o in asked)),
        "errors": str(sum(bool(o.error) for o in asked)),
        "ms p50": t50,
        "ms p90": t90,
        "nEvaluated p50": e50,
        "nEvaluated p90": e90,
        "nPrompt p50": p50,
        "nGenerated p50": g50,
    }


def print_table(table: dict[str, Any], outcomes: Sequence[Outcome], with_model: bool) -> None:
    width = max(len(name) for name in table)
    cells = " ".join(f"{c:>7}" for c in ("exact", "overlap", "none", "wrong", "none"))
    print(
        f"\n{'':{width}} {'cases':>11} | {'model: with an edit':^31} {'no edit':>7} "
        f"| {'baseline: with an edit':^31} {'no edit':>7}"
    )
    print(f"{'':{width}} {'edit':>5} {'none':>5} | {cells} | {cells}")
    for row in table_rows(table, with_model):
        name, n_edit, n_none, *scores = row
        print(
            f"{name:{width}} {n_edit:>5} {n_none:>5} | "
            + " ".join(f"{s:>7}" for s in scores[:5])
            + " | "
            + " ".join(f"{s:>7}" for s in scores[5:])
        )
    if with_model:
        shown = latency(outcomes)
        print("\n" + "  ".join(f"{name} {value}" for name, value in shown.items()))


def print_row(o: Outcome, header: bool = False) -> None:
    if header:
        print(f"{'case':<24} {'kind':<13} {'model':<9} {'ovl':<3} {'baseline':<9} {'ovl':<3} "
              f"{'ms':>6} {'eval':>5} {'gen':>4} {'warm s':>6} server")  # fmt: skip
    model = o.model.outcome if o.model else (f"error: {o.error}" if o.error else "-")
    numbers = (
        "-" if o.t_ms is None else f"{o.t_ms:.0f}",
        "-" if o.n_evaluated is None else str(o.n_evaluated),
        "-" if o.n_generated is None else str(o.n_generated),
        "-" if o.t_warm_s is None else f"{o.t_warm_s:.1f}",
    )
    print(
        f"{o.id:<24} {o.kind:<13} {model:<9} {'yes' if o.model and o.model.overlap else '-':<3} "
        f"{o.baseline.outcome:<9} {'yes' if o.baseline.overlap else '-':<3} "
        f"{numbers[0]:>6} {numbers[1]:>5} {numbers[2]:>4} {numbers[3]:>6} {o.server_outcome or '-'}"
        f"{' (cold)' if o.cold else ''}",
        flush=True,
    )


ABOUT = (
    "Each case is one file of a real commit made before 2024-06 (eval/next_edit/README.md): the first hunk "
    "of its diff is the user's edit, sent as a didChange to the file open at the parent, and "
    "assistant/nextEdit is asked at the cursor; the second hunk is the expected next edit, and a file "
    "whose diff is one hunk expects none. Exact: the file after the suggestion is the commit's (trailing "
    "whitespace aside); overlap: the suggestion changes lines of the expected hunk; none (no edit): the "
    "share of single-hunk cases answered null. The baseline repeats the user's substitution at its next "
    "occurrence. Renames: the cases whose second hunk repeats the first's substitution (10 of them, more "
    "than their share among the candidates). One server for the run; each request on the file already in "
    "the next-edit slot. Issue 42's goals: exact >= 40%, none (no edit) >= 85%, p50 <= 1,000 ms, p90 <= "
    "2,000 ms, nEvaluated <= 200 at 1 thread."
)


def doc_section(outcomes: Sequence[Outcome], args: argparse.Namespace) -> report.Section:
    table = summary(outcomes)
    header = (
        "cases", "with an edit", "without",
        *(f"model {name}" for name in SCORE_COLUMNS),
        *(f"baseline {name}" for name in SCORE_COLUMNS),
    )  # fmt: skip
    timing = latency(outcomes)
    key = (
        "eval-next-edit"
        if args.model == models.DEFAULT_MODEL
        else f"eval-next-edit/{report.key_part(args.model)}"
    )
    return report.Section(
        key,
        "Next-edit suggestions on real commits",
        report.Run.now(threads=args.threads, model=args.model, figures="one request per case"),
        [
            report.Table(header, table_rows(table, True)),
            report.Table(tuple(timing), [tuple(timing.values())]),
        ],
        about=ABOUT,
    )


# ---- the run -------------------------------------------------------------------------------------


def load_cases(folder: Path, pattern: str, limit: int | None) -> list[dict[str, Any]]:
    """The built cases whose id matches `pattern`: the next-edit cases, then the no-suggestion ones,
    each in cases.json's order (by repository, then date); `limit` of them evenly spaced over that
    list, so that a short run still has both kinds and most repositories."""
    order = {ref["id"]: i for i, ref in enumerate(json.loads((HERE / "cases.json").read_text()))}
    paths = [p for p in folder.glob("*.json") if fnmatch.fnmatch(p.stem, pattern)]
    cases = sorted(
        (json.loads(p.read_text()) for p in paths),
        key=lambda c: (c["kind"] != "next-edit", order.get(c["id"], len(order)), c["id"]),
    )
    if limit is not None and limit < len(cases):
        cases = [cases[round(i * (len(cases) - 1) / max(limit - 1, 1))] for i in range(limit)]
    return cases


def new_outcome(case: dict[str, Any]) -> Outcome:
    edits = baseline_edits(case)
    return Outcome(
        case["id"], case["repo"], case["kind"], case["language"], case["repeat"], case["distance"],
        baseline=score(case, edits), baseline_edits=edits,
    )  # fmt: skip


async def run_model(
    cases: Sequence[dict[str, Any]], outcomes: list[Outcome], args: argparse.Namespace
) -> str | None:
    """Asks the server about every case, filling in the outcomes; why it stopped early, if it did."""
    with tempfile.TemporaryDirectory(prefix="llama-lsp-eval-next-edit-") as temp:
        root, cache = Path(temp, "workspace"), Path(temp, "cache")
        root.mkdir()
        options: dict[str, Any] = {
            "model": args.model,
            "threads": args.threads,
            "cacheDir": str(cache),
            "codebaseIndex": False,  # the workspace is the cases' scratch files
            **dict(args.option),
        }
        session = NextEditSession(root, options, args.server_log)
        try:
            await session.start()
            for i, (case, outcome) in enumerate(zip(cases, outcomes, strict=True)):
                await session.run_case(case, outcome, args.warm_timeout)
                print_row(outcome, header=i == 0)
                if args.json:
                    write_json(args.json, args, outcomes)
        except NotServed as exc:
            return f"the server does not serve {protocol.NEXT_EDIT} ({exc}): the baseline alone"
        finally:
            await session.close()
    return None


def write_json(path: Path, args: argparse.Namespace, outcomes: Sequence[Outcome]) -> None:
    path.write_text(
        json.dumps(
            {
                "model": None if args.baseline_only else args.model,
                "threads": args.threads,
                "summary": summary(outcomes),
                "latency": latency(outcomes),
                "cases": [asdict(o) for o in outcomes],
            },
            indent=1,
        )
        + "\n"
    )


def option(text: str) -> tuple[str, Any]:
    name, _, value = text.partition("=")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="make eval-next-edit", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=models.DEFAULT_MODEL, help="a model name or a GGUF path")
    parser.add_argument("--threads", type=int, default=1, help="engine threads (0: the server's default)")
    parser.add_argument(
        "--cases", default="*", help="only the cases whose id matches this glob (flask-*, *-single-*)"
    )
    parser.add_argument(
        "--limit",
        type=int,
        help="only this many of the chosen cases, evenly spaced over them (all repositories)",
    )
    parser.add_argument("--json", type=Path, help="also write every case's record to this file")
    parser.add_argument(
        "--baseline-only", action="store_true", help="no server, no model: the baseline alone"
    )
    parser.add_argument(
        "--warm-timeout",
        type=float,
        default=WARM_TIMEOUT_S,
        help="seconds to wait for a file's next-edit slot",
    )
    parser.add_argument(
        "--option",
        type=option,
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="a server setting for the run (repeatable): --option warm=false --option contextSize=8192",
    )
    parser.add_argument("--server-log", action="store_true", help="show the server's log on stderr")
    parser.add_argument("--cases-dir", type=Path, default=CASES_DIR, help=f"the built cases ({CASES_DIR})")
    parser.add_argument(
        "--no-docs",
        action="store_true",
        help="write nothing to docs/quality.md (by default a run of every case replaces its section there)",
    )
    args = parser.parse_args()

    if not args.cases_dir.is_dir():
        print(f"no cases in {args.cases_dir}: run eval/next_edit/build.py first", file=sys.stderr)
        return 2
    every = load_cases(args.cases_dir, "*", None)
    cases = load_cases(args.cases_dir, args.cases, args.limit)
    if not cases:
        print(f"no case matches {args.cases!r} in {args.cases_dir}", file=sys.stderr)
        return 2
    outcomes = [new_outcome(case) for case in cases]
    stopped = None
    if not args.baseline_only:
        models.resolve(args.model)  # fails early, naming the install command, when the model is missing
        print(f"{len(cases)} cases, model {args.model}, {args.threads} thread(s)", flush=True)
        stopped = asyncio.run(run_model(cases, outcomes, args))
        if stopped:
            print(stopped, file=sys.stderr)
    if args.baseline_only or stopped:
        for i, outcome in enumerate(outcomes):
            print_row(outcome, header=i == 0)
    with_model = not args.baseline_only and not stopped
    table = summary(outcomes)
    print_table(table, outcomes, with_model)
    if args.json:
        write_json(args.json, args, outcomes)
    if args.no_docs:
        pass
    elif with_model and len(cases) == len(every) and not args.option:
        report.write(report.QUALITY, [doc_section(outcomes, args)], "`make eval-next-edit`")
    else:
        print("docs/quality.md: nothing written: some cases, the baseline alone, or server options")
    return 0


if __name__ == "__main__":
    sys.exit(main())
