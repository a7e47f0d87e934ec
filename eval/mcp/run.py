"""`make eval-mcp`: does chat call the right tool, with valid arguments, once MCP servers add theirs?

Each case in eval/mcp/cases.json is a prompt that needs one tool: of a published MCP server (the
reference git, time and memory servers, pinned and installed by `make published-mcp`) or one of chat's
own four (`builtin`). The servers are configured as a user configures them, in `mcpServers`, and the real
language server runs with the real model through the headless client, one server process per
configuration, each case a new conversation with no document open.

Configurations (the servers always listed in the order git, time, memory):

- `builtin`: no MCP server; the builtin cases (chat's own tools, the reference for "does not drop");
- `1 server`: each MCP case with only its own server;
- `2 servers`: each MCP case with its own server and one more (git+time, time+memory, git+memory);
- `3 servers`: every case, the builtin ones too, with all three.

Scored on the turn's first tool call, the one the model chooses from the question alone: **right** when
its name is one the case expects and each argument the case names matches its pattern; **valid** when
the server took its arguments (they fit the tool's schema). `maxToolSteps` is 2 and `maxTokens` 160, so
the answer after the call stays short: what follows the first call is not scored. A call to a tool that
asks for consent is declined, so the workspace and the knowledge graph stay as the eval made them.

The workspace is a small git repository this script writes into $TMPDIR/llama-lsp-eval-mcp (three commits, a
branch, a staged and an unstaged change), the knowledge graph a file it seeds; nothing is downloaded
but the pinned servers. `--option KEY=JSON` passes a server setting (`--option mcpToolChoice='"first"'`),
for comparing how the tools are chosen; a run with options writes nothing to docs/quality.md.
"""

from __future__ import annotations

import argparse
import asyncio
import fnmatch
import json
import re
import shlex
import shutil
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pygls.exceptions import JsonRpcException

from harness import published_mcp, report
from lsp_server.clients.headless import HeadlessClient
from lsp_server.engine import models
from lsp_server.lsp import protocol

HERE = Path(__file__).resolve().parent
PAIRS = {"git": ("git", "time"), "time": ("time", "memory"), "memory": ("git", "memory")}
LOAD_TIMEOUT_S = 300
CHAT_TIMEOUT_S = 600
# What the server answers a call whose arguments it refuses (an MCP tool's schema; chat's own tools'
# checks in assistant/tools/schemas.py), or a call of a tool it does not have.
REFUSED = re.compile(
    r"do not fit its schema|has no argument|needs the argument|must be an? |are not valid JSON|"
    r"must be a JSON object|that is the schema of|there is no tool named"
)
ANSWER_CHARS = 300
DECLINED = "the user declined this call"  # a write tool's call, declined here after it was checked


@dataclass
class Outcome:
    case: str
    server: str  # whose tool the case needs
    config: str  # builtin, 1 server, 2 servers, 3 servers
    servers: list[str]
    message: str
    calls: list[dict[str, Any]] = field(default_factory=list)  # name, arguments, the result's first line
    offered: list[str] = field(default_factory=list)  # the MCP tools the conversation offered
    answer: str = ""  # the answer's first ANSWER_CHARS (what a case without a call said instead)
    right: bool = False
    valid: bool = False
    ran: bool = False  # valid, and the tool answered without an error (or the call was declined)
    error: str = ""
    seconds: float = 0.0
    n_prompt: int = 0
    n_evaluated: int = 0


def score(outcome: Outcome, expect: dict[str, dict[str, str]]) -> None:
    if not outcome.calls:
        return
    first = outcome.calls[0]
    outcome.valid = not REFUSED.search(first["result"])
    result = first["result"]
    outcome.ran = outcome.valid and (not result.startswith("Error") or DECLINED in result)
    patterns = expect.get(first["name"])
    if patterns is None or not outcome.valid:
        return
    arguments = first["arguments"] if isinstance(first["arguments"], dict) else {}
    outcome.right = all(
        key in arguments and re.search(pattern, json.dumps(arguments[key]), re.I)
        for key, pattern in patterns.items()
    )


async def run_config(
    names: tuple[str, ...], cases: list[dict[str, Any]], config: str, args: argparse.Namespace
) -> list[Outcome]:
    """One server process with these MCP servers; each case a new conversation."""
    outcomes = [Outcome(case["id"], case["server"], config, list(names), case["message"]) for case in cases]
    temp = published_mcp.same_folder_every_run("llama-lsp-eval-mcp")  # single cases moved by its name
    try:
        workspace, memory_file = temp / "shop", temp / "memory.jsonl"
        published_mcp.make_workspace(workspace)
        published_mcp.seed_memory(memory_file)
        options: dict[str, Any] = {
            "model": args.model,
            "threads": args.threads,
            "cacheDir": str(temp / "cache"),
            "maxToolSteps": 2,
            "maxTokens": 160,
            "mcpServers": published_mcp.server_configs(names, workspace, memory_file),
            "mcpWorkspaceServers": False,
            **args.options,
        }
        client = HeadlessClient(verbose=args.server_log)

        @client.feature(protocol.CONFIRM_TOOL_CALL)
        def on_confirm(_params: Any) -> dict[str, str]:
            return {"choice": "deny"}

        command = shlex.split(args.server_command or "")
        await client.start("--log-level", "info" if args.server_log else "warning", command=command)
        try:
            await client.initialize_session(workspace, options)
            status = await asyncio.wait_for(client.wait_until_loaded(), LOAD_TIMEOUT_S)
            if status["state"] == protocol.ERROR:
                raise RuntimeError(f"the model did not load: {status.get('message', '')}")
            for case, outcome in zip(cases, outcomes, strict=True):
                await ask(client, outcome)
                score(outcome, case["expect"])
                print_row(outcome)
        finally:
            await client.close()
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return outcomes


async def ask(client: HeadlessClient, outcome: Outcome) -> None:
    started = time.monotonic()
    try:
        answer = await asyncio.wait_for(
            client.request(protocol.CHAT, {"message": outcome.message}), CHAT_TIMEOUT_S
        )
    except (JsonRpcException, asyncio.TimeoutError) as exc:
        outcome.error = f"{type(exc).__name__}: {exc}"[:300]
        return
    finally:
        outcome.seconds = time.monotonic() - started
    for call in answer.get("toolCalls") or []:
        result = str(call.get("result") or "")
        outcome.calls.append(
            {"name": call.get("name", ""), "arguments": call.get("arguments"), "result": result[:300]}
        )
    outcome.answer = str(answer.get("content") or "")[:ANSWER_CHARS]
    stats = answer.get("stats") or {}
    outcome.n_prompt, outcome.n_evaluated = stats.get("nPrompt", 0), stats.get("nEvaluated", 0)
    mcp = (await client.request(protocol.STATS, {})).get("mcp") or {}
    outcome.offered = list(mcp.get("offered") or [])


def print_row(o: Outcome) -> None:
    first = o.calls[0] if o.calls else None
    call = f"{first['name']}({json.dumps(first['arguments'])[:70]})" if first else (o.error or "no call")
    mark = "right" if o.right else ("valid" if o.valid else "-")
    result = " ".join(first["result"].split())[:60] if first else ""
    print(
        f"  {o.config:<9} {o.case:<20} {mark:<5} {o.seconds:5.1f}s {o.n_evaluated:5d}  {call} -> {result}",
        flush=True,
    )


def rate(found: list[Outcome], attribute: str) -> str:
    if not found:
        return ""
    hits = sum(getattr(o, attribute) for o in found)
    return f"{hits}/{len(found)} ({hits / len(found):.0%})"


def totals(outcomes: list[Outcome]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for config in ("builtin", "1 server", "2 servers", "3 servers"):
        mine = [o for o in outcomes if o.config == config]
        if not mine:
            continue
        mcp = [o for o in mine if o.server != "builtin"]
        builtin = [o for o in mine if o.server == "builtin"]
        seconds = statistics.median(o.seconds for o in mine)
        rows.append(
            (
                config,
                rate(mcp, "right"),
                rate(mcp, "valid"),
                rate(mcp, "ran"),
                rate(builtin, "right"),
                rate(builtin, "valid"),
                f"{seconds:.0f}",
            )
        )
    return rows


HEADER = (
    "servers",
    "MCP cases right",
    "MCP cases valid",
    "MCP tool ran",
    "builtin cases right",
    "builtin cases valid",
    "median s",
)
ABOUT = (
    "Chat's first tool call on prompts that need one tool (eval/mcp/README.md): 20 that need a published "
    "MCP server's (git, time, memory: the reference servers, pinned) and 8 that need chat's own. Right: "
    "the tool the case expects, with the arguments it names; valid: the server took the arguments (they "
    "fit the tool's schema); ran: and the tool answered without an error (a write the eval declined "
    "counts). "
    "Each case a new conversation, no document open; the servers in the order git, time, memory."
)


def doc_section(outcomes: list[Outcome], args: argparse.Namespace) -> report.Section:
    key = "eval-mcp" if args.model == models.DEFAULT_MODEL else f"eval-mcp/{report.key_part(args.model)}"
    wrong = [f"{o.case} ({o.config})" for o in outcomes if not o.right]
    return report.Section(
        key,
        "MCP tools in chat: the right tool called",
        report.Run.now(threads=args.threads, model=args.model, figures="one run of each case"),
        [report.Table(HEADER, totals(outcomes))],
        about=ABOUT,
        lines=[f"Not right: {', '.join(wrong) or 'none'}."],
    )


def write_json(path: Path, args: argparse.Namespace, outcomes: list[Outcome]) -> None:
    record = {
        "model": args.model,
        "options": args.options,
        "totals": [dict(zip(HEADER, row, strict=True)) for row in totals(outcomes)],
        "cases": [asdict(o) for o in outcomes],
    }
    path.write_text(json.dumps(record, indent=2) + "\n")


def plan(
    cases: list[dict[str, Any]], configs: list[str]
) -> list[tuple[str, tuple[str, ...], list[dict[str, Any]]]]:
    """(configuration, its servers, its cases) for each server process to run."""
    builtin = [c for c in cases if c["server"] == "builtin"]
    runs: list[tuple[str, tuple[str, ...], list[dict[str, Any]]]] = []
    if "builtin" in configs and builtin:
        runs.append(("builtin", (), builtin))
    for config, servers_of in (("1 server", lambda s: (s,)), ("2 servers", lambda s: PAIRS[s])):
        if config in configs:
            for server in published_mcp.SERVERS:
                mine = [c for c in cases if c["server"] == server]
                if mine:
                    runs.append((config, servers_of(server), mine))
    if "3 servers" in configs and cases:
        runs.append(("3 servers", published_mcp.SERVERS, cases))
    return runs


def rescore(path: Path) -> int:
    """The totals of a saved run, scored as this script scores now."""
    expect = {case["id"]: case["expect"] for case in json.loads((HERE / "cases.json").read_text())["cases"]}
    outcomes = []
    for record in json.loads(path.read_text())["cases"]:
        outcome = Outcome(**{**record, "right": False, "valid": False, "ran": False})
        score(outcome, expect[outcome.case])
        outcomes.append(outcome)
    print(report.Table(HEADER, totals(outcomes)).markdown())
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="make eval-mcp", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=models.DEFAULT_MODEL, help="a model name or a GGUF path")
    parser.add_argument("--threads", type=int, default=0, help="engine threads (0: the server's default)")
    parser.add_argument("--cases", default="*", help="only the cases whose id matches this glob (git-*)")
    parser.add_argument(
        "--configs",
        default="builtin,1 server,2 servers,3 servers",
        help="which configurations, comma-separated",
    )
    parser.add_argument("--option", action="append", default=[], metavar="KEY=JSON", help="a server setting")
    parser.add_argument("--json", type=Path, help="also write the records to this file")
    parser.add_argument("--server-log", action="store_true", help="show the server's log on stderr")
    parser.add_argument("--no-docs", action="store_true", help="write nothing to docs/quality.md")
    parser.add_argument(
        "--server-command",
        help="how to start the server (split as a shell would), e.g. a frozen copy's; default: this "
        "Python's lsp_server. A run with one writes nothing to docs/quality.md",
    )
    parser.add_argument(
        "--rescore", type=Path, metavar="JSON", help="score a run's --json file again and print its totals"
    )
    args = parser.parse_args()
    if args.rescore:
        return rescore(args.rescore)
    args.options = {}
    for option in args.option:
        key, _, value = option.partition("=")
        args.options[key] = json.loads(value)
    every = json.loads((HERE / "cases.json").read_text())["cases"]
    cases = [case for case in every if fnmatch.fnmatch(case["id"], args.cases)]
    configs = [config.strip() for config in args.configs.split(",")]
    missing = published_mcp.missing()
    if missing:
        print(missing, file=sys.stderr)
        return 2
    models.resolve(args.model)
    outcomes: list[Outcome] = []
    for config, names, mine in plan(cases, configs):
        print(f"{config}: {', '.join(names) or 'no MCP server'} ({len(mine)} cases)", flush=True)
        outcomes += asyncio.run(run_config(names, mine, config, args))
        if args.json:
            write_json(args.json, args, outcomes)
    print(report.Table(HEADER, totals(outcomes)).markdown())
    whole = len(cases) == len(every) and len(configs) == 4 and not args.options and not args.server_command
    if not args.no_docs and whole:
        report.write(report.QUALITY, [doc_section(outcomes, args)], "`make eval-mcp`")
    elif not args.no_docs:
        print("docs/quality.md: nothing written: some cases or configurations, or options")
    return 0


if __name__ == "__main__":
    sys.exit(main())
