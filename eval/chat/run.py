"""`make eval-chat`: chat's answers to questions about real repositories, with no document open.

Each case in eval/chat/cases.json is a commit of a public Python repository; the question asks which
source file implements what the commit's subject describes, and the gold answer is the files the commit
changed. For every case the real server starts (one per case, with an empty cache folder, so each starts
cold) through the headless client, with the repository's tree at the commit's parent as its only
workspace folder (eval/chat/snapshots.py) and no document open, and the question goes through
`assistant/chat` as an editor sends it. Recorded per case: the answer (`content`), `finishReason`, the
streamed text, the tool calls (name, arguments, the result's first line), seconds and tokens. Scored:

- right: the answer names a gold file, by a path that is the file's alone in the repository (its path
  from the root, or a shorter tail of it such as its name when no other file ends the same way);
- empty: the answer is empty or blank;
- markup: the answer or the streamed text holds chat-template markup (`<tool_call>`, `<tool_response>`,
  `<tools>`, their closing tags, `<|...|>`);
- repeated: tool calls identical (name and arguments) to an earlier call that failed or found nothing.

Prints one row per case and the totals; --json writes every record (after each case, so a long run that
stops keeps what it did). A run of every case on this checkout's server replaces its section of
docs/quality.md (harness/report.py), keyed by the model; a run of some cases (`--cases`), or of another
server (`--server-command`, `--server-cwd`), writes nothing there, nor does one with `--no-docs`.
`--codebase` asks each question with `@codebase` (the workspace code that best matches it read first),
for comparing chat with and without the index's chunks in its prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import json
import re
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException
from snapshots import CACHE, MIRRORS, MissingMirror, Repo, load_cases

from harness import report
from lsp_server.clients.headless import HeadlessClient
from lsp_server.engine import models
from lsp_server.lsp import protocol

HERE = Path(__file__).resolve().parent
LOAD_TIMEOUT_S = 300
CHAT_TIMEOUT_S = 1200
INDEX_TIMEOUT_S = 300
MARKUP = re.compile(r"</?tool_call>|</?tool_response>|</?tools>|<\|[^|\s]{1,40}\|>")
# Paths as an answer writes them: letters, digits and _ . / - ending in an extension.
PATH_LIKE = re.compile(r"[\w./-]*\w\.\w+")
FOUND_NOTHING = re.compile(r"^(Error: |No matches for |No files match |The workspace has no files)", re.M)


@dataclass
class Call:
    name: str
    arguments: Any
    result: str  # its first line
    found_nothing: bool  # an error, or no match


@dataclass
class Outcome:
    case: str
    repo: str
    question: str
    gold: list[str]
    content: str = ""
    finish_reason: str = ""
    streamed: str = ""  # the streamed pieces, joined
    calls: list[Call] = field(default_factory=list)
    error: str = ""  # the server's error, or a timeout: no answer came back
    named: list[str] = field(default_factory=list)  # the repository's files the answer names
    right: bool = False
    empty: bool = False
    markup: bool = False
    repeated: int = 0
    seconds: float = 0.0  # the question alone: its request to its result
    total_seconds: float = 0.0  # with the server's start and the model's load
    n_prompt: int = 0
    n_evaluated: int = 0
    n_generated: int = 0
    steps: int = 0
    t_prefill_ms: float = 0.0
    t_decode_ms: float = 0.0
    index_seconds: float | None = None  # waiting for the workspace index; None: the server keeps none


class ChatClient(HeadlessClient):
    """The headless client, starting whichever server command it is given."""

    async def start_command(self, command: list[str], cwd: Path, server_log: bool) -> None:
        arguments = [*command[1:], "--log-level", "info" if server_log else "warning"]
        await self.start_io(command[0], *arguments, cwd=str(cwd))
        self._drain = asyncio.create_task(self._forward_stderr())


def named_files(text: str, files: list[str]) -> list[str]:
    """The files of `files` (paths from the repository's root) that `text` names unambiguously: a path
    in the text that is a file's path, ends with it (an absolute path), or is a tail of it (from a `/`)
    that no other file has."""
    found: set[str] = set()
    for token in PATH_LIKE.findall(text):
        token = token.removeprefix("./").strip(".")
        within = [f for f in files if token == f or token.endswith("/" + f)]
        if within:
            found.add(max(within, key=len))
            continue
        tails = [f for f in files if f.endswith("/" + token)]
        if len(tails) == 1:
            found.add(tails[0])
    return sorted(found)


def repeated_calls(calls: list[Call]) -> int:
    """Calls identical (name, arguments) to an earlier one that failed or found nothing."""
    failed: set[str] = set()
    repeated = 0
    for call in calls:
        key = json.dumps([call.name, call.arguments], sort_keys=True)
        repeated += key in failed
        if call.found_nothing:
            failed.add(key)
    return repeated


def score(outcome: Outcome, files: list[str]) -> None:
    outcome.named = named_files(outcome.content, files)
    outcome.right = bool(set(outcome.named) & set(outcome.gold))
    outcome.empty = not outcome.content.strip()
    outcome.markup = bool(MARKUP.search(outcome.content) or MARKUP.search(outcome.streamed))
    outcome.repeated = repeated_calls(outcome.calls)


async def ask(
    case: dict[str, Any],
    workspace: Path,
    command: list[str],
    server_cwd: Path | None,
    options: dict[str, Any],
    server_log: bool,
    outcome: Outcome,
) -> None:
    client = ChatClient(verbose=server_log)
    pieces: list[str] = []
    client.stream = pieces.append
    await client.start_command(command, server_cwd or workspace, server_log)
    try:
        await client.initialize_session(workspace, options)
        status = await asyncio.wait_for(client.wait_until_loaded(), LOAD_TIMEOUT_S)
        if status["state"] == protocol.ERROR:
            outcome.error = f"the model did not load: {status.get('message', '')}"
            return
        outcome.index_seconds = await index_built(client)
        started = time.monotonic()
        try:
            answer = await asyncio.wait_for(
                client.request(protocol.CHAT, {"message": outcome.question, "partialResultToken": "chat"}),
                CHAT_TIMEOUT_S,
            )
        except JsonRpcException as exc:
            outcome.error = str(exc.message or type(exc).__name__)
            return
        except asyncio.TimeoutError:
            outcome.error = f"no answer within {CHAT_TIMEOUT_S} s"
            return
        finally:
            outcome.seconds = time.monotonic() - started
            outcome.streamed = "".join(pieces)
        outcome.content = answer.get("content") or ""
        outcome.finish_reason = answer.get("finishReason") or ""
        for call in answer.get("toolCalls") or []:
            result = str(call.get("result") or "")
            outcome.calls.append(
                Call(
                    call.get("name", ""),
                    call.get("arguments"),
                    result.split("\n", 1)[0][:300],
                    bool(FOUND_NOTHING.search(result)),
                )
            )
        stats = answer.get("stats") or {}
        outcome.n_prompt = stats.get("nPrompt", 0)
        outcome.n_evaluated = stats.get("nEvaluated", 0)
        outcome.n_generated = stats.get("nGenerated", 0)
        outcome.steps = stats.get("steps", 0)
        outcome.t_prefill_ms = stats.get("tPrefillMs", 0.0)
        outcome.t_decode_ms = stats.get("tDecodeMs", 0.0)
    finally:
        await client.close()


async def index_built(client: ChatClient) -> float | None:
    """Waits until the server's workspace index is built, as it is when a user asks a while after
    opening the folder (and after any restart: it is saved); the seconds waited, or None when the
    server keeps no index (a server from before it, or `codebaseIndex` off)."""
    started = time.monotonic()
    while time.monotonic() - started < INDEX_TIMEOUT_S:
        try:
            result = await client.request(protocol.SEARCH_CODEBASE, {"query": "index"})
        except JsonRpcException:
            return None
        if result["indexed"]["ready"]:
            return time.monotonic() - started
        if result["indexed"]["files"] == 0 and time.monotonic() - started > 5:
            return None  # no index is being built
        await asyncio.sleep(0.2)
    return None


def run_case(
    case: dict[str, Any], args: argparse.Namespace, command: list[str], workspace: Path, files: list[str]
) -> Outcome:
    question = f"@codebase {case['question']}" if args.codebase else case["question"]
    outcome = Outcome(case["id"], case["repo"], question, case["gold"])
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="llama-lsp-eval-chat-") as cache:
        options: dict[str, Any] = {
            "model": args.model,
            "threads": args.threads,
            "cacheDir": cache,
            **args.options,
        }
        try:
            asyncio.run(ask(case, workspace, command, args.server_cwd, options, args.server_log, outcome))
        except (JsonRpcException, asyncio.TimeoutError, OSError) as exc:
            outcome.error = outcome.error or f"{type(exc).__name__}: {exc}"[:300]
    outcome.total_seconds = time.monotonic() - started
    score(outcome, files)
    return outcome


def one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def calls_summary(calls: list[Call]) -> str:
    shown = []
    for call in calls:
        arguments = call.arguments if isinstance(call.arguments, dict) else {"": call.arguments}
        shown.append(f"{call.name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})")
    return "; ".join(shown)


def yes(value: bool) -> str:
    return "yes" if value else "-"


def print_row(o: Outcome, header: bool = False) -> None:
    if header:
        print(f"{'case':<16} {'right':<5} {'empty':<5} {'markup':<6} {'rep':>3} {'calls':>5} "
              f"{'finish':<10} {'s':>5} {'gen':>5}  answer | calls")  # fmt: skip
    answer = f"[error: {o.error}]" if o.error else repr(one_line(o.content, 70))
    print(
        f"{o.case:<16} {yes(o.right):<5} {yes(o.empty):<5} {yes(o.markup):<6} {o.repeated:>3} "
        f"{len(o.calls):>5} {o.finish_reason or '-':<10} {o.seconds:>5.0f} {o.n_generated:>5}  "
        f"{answer} | {one_line(calls_summary(o.calls), 120)}",
        flush=True,
    )


def print_totals(outcomes: list[Outcome]) -> None:
    n = len(outcomes)
    if not n:
        return
    print(
        f"\n{n} cases: right {sum(o.right for o in outcomes)}/{n}, empty {sum(o.empty for o in outcomes)}, "
        f"markup {sum(o.markup for o in outcomes)}, repeated calls {sum(o.repeated for o in outcomes)}, "
        f"errors {sum(bool(o.error) for o in outcomes)}, "
        f"median {statistics.median(o.seconds for o in outcomes):.0f} s a question "
        f"({statistics.median(o.total_seconds for o in outcomes):.0f} s with the server's start)"
    )


ABOUT = (
    "Each case is a commit of a public repository; the workspace is the repository at its parent, no file "
    "is open, and the question asks which source file implements what the commit's subject describes "
    "(eval/chat/README.md). Right: the answer names a file the commit changed. Markup: chat-template "
    "markup in the answer or the streamed text. Repeated: tool calls identical to an earlier one that "
    "failed or found nothing. One server per case, asked once its workspace index is built."
)


def doc_section(outcomes: list[Outcome], args: argparse.Namespace) -> report.Section:
    """The totals per repository and for all, as docs/quality.md's section."""
    groups = {
        repo: [o for o in outcomes if o.repo == repo] for repo in dict.fromkeys(o.repo for o in outcomes)
    }
    groups["all"] = outcomes
    rows = [
        (
            name,
            str(len(found)),
            f"{sum(o.right for o in found)} ({sum(o.right for o in found) / len(found):.0%})",
            str(sum(o.empty for o in found)),
            str(sum(o.markup for o in found)),
            str(sum(o.repeated for o in found)),
            str(sum(bool(o.error) for o in found)),
            f"{statistics.median(o.seconds for o in found):.0f}",
        )
        for name, found in groups.items()
    ]
    key = "eval-chat" if args.model == models.DEFAULT_MODEL else f"eval-chat/{report.key_part(args.model)}"
    return report.Section(
        key,
        "Chat about a whole repository, no file open",
        report.Run.now(threads=args.threads, model=args.model, figures="one run of each case"),
        [
            report.Table(
                ("repository", "cases", "right", "empty", "markup", "repeated calls", "errors", "median s"),
                rows,
            )
        ],
        about=ABOUT + " Seconds: the question alone, from its request to its answer.",
        lines=[f"Right: {', '.join(o.case for o in outcomes if o.right) or 'none'}."],
    )


def write_json(path: Path, args: argparse.Namespace, command: list[str], outcomes: list[Outcome]) -> None:
    report = {
        "model": args.model,
        "threads": args.threads,
        "serverCommand": command,
        "serverCwd": str(args.server_cwd) if args.server_cwd else None,
        "totals": {
            "cases": len(outcomes),
            "right": sum(o.right for o in outcomes),
            "empty": sum(o.empty for o in outcomes),
            "markup": sum(o.markup for o in outcomes),
            "repeated": sum(o.repeated for o in outcomes),
            "errors": sum(bool(o.error) for o in outcomes),
            "medianSeconds": statistics.median(o.seconds for o in outcomes) if outcomes else None,
        },
        "cases": [asdict(o) for o in outcomes],
    }
    path.write_text(json.dumps(report, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="make eval-chat", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=models.DEFAULT_MODEL, help="a model name or a GGUF path")
    parser.add_argument("--threads", type=int, default=0, help="engine threads (0: the server's default)")
    parser.add_argument("--cases", default="*", help="only the cases whose id matches this glob (tox-*)")
    parser.add_argument("--json", type=Path, help="also write the records to this file")
    parser.add_argument(
        "--server-command",
        default=f"{shlex.quote(sys.executable)} -m lsp_server --stdio",
        help="how to start the server (split as a shell would; `env VAR=...` to set variables); "
        "default: this Python's lsp_server",
    )
    parser.add_argument(
        "--server-cwd",
        type=Path,
        help="where the server starts (where `python -m lsp_server` finds its package); default: the "
        "case's workspace, as an editor starts it",
    )
    parser.add_argument("--server-log", action="store_true", help="show each server's log on stderr")
    parser.add_argument(
        "--codebase",
        action="store_true",
        help="ask each question with @codebase: the workspace code that best matches it is read first",
    )
    parser.add_argument(
        "--mirrors", type=Path, default=MIRRORS, help=f"the repositories' mirrors ({MIRRORS})"
    )
    parser.add_argument("--snapshots", type=Path, default=CACHE, help=f"where the workspaces go ({CACHE})")
    parser.add_argument(
        "--no-docs",
        action="store_true",
        help="write nothing to docs/quality.md (by default a run of every case on this checkout's server "
        "replaces its section there)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a server setting for every case (`--option codebaseIndex=false`); a run with one writes "
        "nothing to docs/quality.md",
    )
    args = parser.parse_args()
    args.options = {}
    for option in args.option:
        key, _, value = option.partition("=")
        args.options[key] = json.loads(value)
    every = load_cases()
    cases = [case for case in every if fnmatch.fnmatch(case["id"], args.cases)]
    if not cases:
        print(f"no cases match {args.cases!r} in {HERE / 'cases.json'}", file=sys.stderr)
        return 2
    models.resolve(args.model)  # fails early, naming the install command, if the model is missing
    command = shlex.split(args.server_command)
    workspaces: dict[str, tuple[Path, list[str]]] = {}
    try:
        for case in cases:
            repo = Repo(case["repo"], args.mirrors)
            folder = repo.snapshot(case["parent"], args.snapshots)
            workspaces[case["id"]] = (folder, repo.files(case["parent"]))
    except MissingMirror as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"{len(cases)} cases, model {args.model}, server: {' '.join(command)}", flush=True)
    outcomes: list[Outcome] = []
    for i, case in enumerate(cases):
        outcome = run_case(case, args, command, *workspaces[case["id"]])
        outcomes.append(outcome)
        print_row(outcome, header=i == 0)
        if args.json:
            write_json(args.json, args, command, outcomes)
    print_totals(outcomes)
    default_server = args.server_command == parser.get_default("server_command") and args.server_cwd is None
    if (
        not args.no_docs
        and len(cases) == len(every)
        and default_server
        and not args.codebase
        and not args.options
    ):
        report.write(report.QUALITY, [doc_section(outcomes, args)], "`make eval-chat`")
    elif not args.no_docs:
        print(
            "docs/quality.md: nothing written: some cases, @codebase, options, or another server than this "
            "checkout's"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
