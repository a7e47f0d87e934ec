"""(M) What MCP servers cost a chat's first token (issue 43's goal: no later than without them, once the
servers have started), at 1 thread.

The workspace is harness/published_mcp.py's git repository; `inventory.py` is open in our server over stdio
LSP, as an editor drives it. Three ways, each a fresh server per run (a fresh cacheDir): no MCP server;
the three published servers of `make eval-mcp` (git, time, memory: 23 tools) with `mcpToolChoice`
"relevant"; the same with "first". Each run waits until the servers run and the document's chat prompts
have been read ahead (the `warm` status: with "relevant", also the prompt with each of the first two
servers' tools, git's and time's, as the default 4 slots allow), then asks one question in a new
conversation, about the open file: one that names no MCP server, or one that names git. Per question:
the time from the request to the first streamed piece (client side), the engine's time to its first
token of the first model request (`tFirstTokenMs`), and the prompt tokens it evaluated (the rest came
from the cache).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import published_mcp, report

from .parts import show
from .versus import THREADS, Ours, Turn, table

DOC_NAME = "inventory.py"
QUESTIONS = (
    ("it names no MCP server", "What does Inventory.value return? One sentence."),
    ("it names git", "What changed in the last git commit? One sentence."),
)
WAYS = (("no MCP server", None), ('3 servers, "relevant"', "relevant"), ('3 servers, "first"', "first"))
ANSWER_TOKENS = 16
RUNS = 3
START_TIMEOUT_S = 120.0


@dataclass
class Measured:
    way: str
    question: str
    turns: list[Turn]


async def one_run(model: Path, choice: str | None, question: str, folder: Path) -> Turn:
    workspace, memory_file = folder / "shop", folder / "memory.jsonl"
    published_mcp.make_workspace(workspace)
    published_mcp.seed_memory(memory_file)
    options: dict[str, Any] = {
        "model": str(model),
        "threads": THREADS,
        "cacheDir": str(folder / "cache"),
        "maxTokens": ANSWER_TOKENS,
        "maxToolSteps": 1,  # the answer's start is measured, not what a tool would find
        "codebaseIndex": False,
        "nextEdit": False,
        "mcpWorkspaceServers": False,
    }
    if choice is not None:
        options["mcpServers"] = published_mcp.server_configs(published_mcp.SERVERS, workspace, memory_file)
        options["mcpToolChoice"] = choice
    server = await Ours.start(workspace, options)
    server.uri = (workspace / DOC_NAME).as_uri()
    try:
        server.open((workspace / DOC_NAME).read_text())
        await asyncio.wait_for(server.client.wait_until_warm(server.uri), START_TIMEOUT_S)
        if choice is not None:
            await asyncio.wait_for(servers_running(server), START_TIMEOUT_S)
        return await server.ask(question)
    finally:
        await server.stop()


async def servers_running(server: Ours) -> None:
    while True:
        stats = await server.client.request("assistant/stats", {})
        states = [s["state"] for s in stats["mcp"]["servers"]]
        if len(states) == len(published_mcp.SERVERS) and all(state == "running" for state in states):
            return
        await asyncio.sleep(0.2)


def median(values: list[float]) -> str:
    return f"{statistics.median(values):,.0f}"


def run(model: Path, runs: int = RUNS) -> report.Section:
    missing = published_mcp.missing()
    if missing:
        raise SystemExit(f"bench: {missing}")
    show(f"\n(M) a chat's first token with MCP servers configured, {THREADS} thread, {model.name}")
    measured: list[Measured] = []
    for label, question in QUESTIONS:
        for way, choice in WAYS:
            turns = []
            for i in range(runs):
                with tempfile.TemporaryDirectory(prefix="llama-lsp-bench-mcp-") as folder:
                    turn = asyncio.run(one_run(model, choice, question, Path(folder)))
                show(
                    f"  {label}, {way}, run {i + 1}: first piece {turn.ttft_ms:,.0f} ms, engine "
                    f"{turn.engine_ttft_ms or 0:,.0f} ms, evaluated {turn.n_evaluated} of {turn.n_prompt}"
                )
                turns.append(turn)
            measured.append(Measured(way, label, turns))
    rows = []
    for m in measured:
        without = next(x for x in measured if x.question == m.question and x.way == WAYS[0][0])
        ratio = statistics.median(t.engine_ttft_ms or 0 for t in m.turns) / max(
            statistics.median(t.engine_ttft_ms or 0 for t in without.turns), 1e-9
        )
        rows.append(
            (
                m.question,
                m.way,
                median([t.ttft_ms for t in m.turns]),
                median([t.engine_ttft_ms or 0 for t in m.turns]),
                median([float(t.n_evaluated) for t in m.turns]),
                f"{ratio:.2f}x",
            )
        )
    header = ("question", "servers", "first piece ms", "engine first token ms", "evaluated", "vs none")
    table([header, *rows])
    named = [m for m in measured if m.question == QUESTIONS[1][0]]
    prompts = ", ".join(f"{m.way} {median([float(t.n_prompt) for t in m.turns])}" for m in named)
    # Where the tokens evaluated are the same, what is left of the difference is the prompt's length:
    # the question and the first token attend over the tools' schemas too.
    lines = [f"Prompt tokens of the question that names git (medians): {prompts}."]
    show(lines[0])
    return report.Section(
        f"bench/mcp/{report.key_part(model.name)}",
        "MCP servers and a chat's first token",
        report.Run.now(
            threads=THREADS, model=model.name, figures=f"medians of {runs} runs, a fresh server each"
        ),
        [report.Table(header, rows)],
        about=__doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else "",
        lines=lines,
    )
