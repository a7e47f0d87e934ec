"""A small MCP server written with the official SDK, run over stdio by tests/test_mcp.py.

    python tests/mcp_test_server.py [--tools NAME,NAME,...] [--fail-start]

Its tools: `lookup_ticket` (read-only: it declares readOnlyHint), `create_note` (a write: each call is
appended to the file $MCP_TEST_NOTES), `broken` (an error result), `crash` (the process exits mid-call),
`hang` (never answers), `flood` (a megabyte of text) and `add_tool` (adds `added_tool` and tells the
client that the list changed). `--tools` keeps only the named ones; `--fail-start` writes why to stderr
and exits before speaking MCP. Each start is appended to $MCP_TEST_STARTS, so a test can count restarts.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

TICKETS = {
    "ABC-12": "ABC-12: the login page crashes on Safari 17. Status: open. Assignee: Priya Raman.",
    "ABC-13": "ABC-13: export to CSV drops the header row. Status: fixed in 2.4.1. Assignee: Tom Okafor.",
}
FLOOD_CHARS = 1_000_000


def lookup_ticket(ticket: str) -> str:
    """Look up a ticket of the issue tracker by its id, such as ABC-12: its title, status and assignee."""
    return TICKETS.get(ticket.strip().upper(), f"No ticket {ticket} in the tracker.")


def create_note(title: str, body: str) -> str:
    """Create a note in the team's notebook."""
    with open(os.environ["MCP_TEST_NOTES"], "a", encoding="utf-8") as notes:
        notes.write(f"{title}: {body}\n")
    return f"Created the note {title!r}."


def broken() -> str:
    """A tool that always fails."""
    raise ToolError("the tracker's database is locked")


def crash() -> str:
    """A tool whose server dies while it runs."""
    sys.stderr.write("mcp_test_server: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


async def hang() -> str:
    """A tool that never answers."""
    await asyncio.sleep(3600)
    return "too late"


def flood() -> str:
    """A tool whose output is far too long."""
    return "".join(f"line {n}: " + "x" * 70 + "\n" for n in range(FLOOD_CHARS // 80))


def added_tool() -> str:
    """A tool that exists only after add_tool ran."""
    return "the added tool ran"


def build(names: set[str] | None) -> MCPServer:
    server = MCPServer("llama-lsp-test")

    def offer(fn, read_only: bool = False) -> None:  # type: ignore[no-untyped-def]
        if names is None or fn.__name__ in names:
            server.add_tool(fn, annotations=ToolAnnotations(read_only_hint=True) if read_only else None)

    async def add_tool(ctx: Context) -> str:
        """Add a tool to this server."""
        server.add_tool(added_tool, annotations=ToolAnnotations(read_only_hint=True))
        # Both ways a server says so: the 2026 protocol's subscriptions/listen stream, and the older
        # protocols' notification (the client gets the one its connection's version carries).
        await ctx.notify_tools_changed()
        try:
            await ctx.session.send_tool_list_changed()
        except Exception as exc:  # not part of a 2026 connection
            sys.stderr.write(f"mcp_test_server: no list_changed notification: {exc}\n")
        return "added added_tool"

    offer(lookup_ticket, read_only=True)
    offer(create_note)
    offer(broken, read_only=True)
    offer(crash, read_only=True)
    offer(hang, read_only=True)
    offer(flood, read_only=True)
    offer(add_tool)
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", default=None)
    parser.add_argument("--fail-start", action="store_true")
    args = parser.parse_args()
    starts = os.environ.get("MCP_TEST_STARTS")
    if starts:
        with open(starts, "a", encoding="utf-8") as log:
            log.write(f"{os.getpid()}\n")
    if args.fail_start:
        sys.stderr.write("mcp_test_server: cannot open the tracker's database\n")
        sys.exit(2)
    build(set(args.tools.split(",")) if args.tools else None).run("stdio")


if __name__ == "__main__":
    main()
