"""MCP tool servers, through the official SDK (`mcp`): the one module that speaks to them.

Each configured server is a connection owned by one asyncio task (the SDK's transports and sessions are
anyio task groups, entered and left in the same task): started when first needed, its tools listed
(all pages), its tool list listened to (the 2026 protocol's `subscriptions/listen`, or an older
server's `notifications/tools/list_changed`) and listed again when it changes. A call runs in the
caller's task with a timeout, and always ends with an outcome the model can read: a server that died
mid-call, one that does not answer, one that cannot start, or one that is waiting out its backoff give
an error as the tool's result, never a hung turn. A dead server is started again when next needed, no
sooner than its backoff (0 s after its first death, then doubling up to BACKOFF_MAX_S; reset once it
stayed up STABLE_S). Its last tool list stays known meanwhile, so the tools a chat offers do not change
because a server died. Output is cut at a bound, with a note. Plain Python, no LSP types.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal, TextIO

import anyio
from mcp import Client, StdioServerParameters, stdio_client
from mcp import types as mcp_types
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError

from ... import __version__
from .mcp_config import McpServerConfig

log = logging.getLogger("llama_lsp.mcp")

START_TIMEOUT_S = 60.0  # a server that has not listed its tools by then failed to start (npx may download)
CALL_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0  # the SDK closes stdin, waits, then terminates and kills: bounded well within this
BACKOFF_MAX_S = 300.0
STABLE_S = 60.0  # a server up this long is restarted at once when it dies
MAX_PAGES = 20  # of a tool listing: a paginator that never ends cannot hang a start
MAX_TOOLS_PER_SERVER = 200
OUTPUT_MAX_CHARS = 8_000  # what the model reads of one call; about 2,000 tokens of an 8,192-token slot
STDERR_TAIL_LINES = 20
STDERR_LINE_CHARS = 300

State = Literal["stopped", "starting", "running", "failed"]


@dataclass(frozen=True)
class McpTool:
    """A tool as its server lists it."""

    server: str
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool  # it declares readOnlyHint: true, so it runs without asking


@dataclass(frozen=True)
class CallOutcome:
    text: str
    ok: bool


class ServerUnavailable(Exception):
    """The server cannot take a call now; the message says why, for the model and the log."""


class _StderrTail:
    """A server's stderr: read on a thread from a pipe, each line logged at debug level, the last
    lines kept to say why it failed. A pipe rather than a file: a chatty server cannot fill a disk."""

    def __init__(self, server: str) -> None:
        self._lines: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.count = 0  # lines read so far: a mark to read only what came after it
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w")
        reader = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace")
        self._thread = threading.Thread(
            target=self._read, args=(reader, server), name=f"mcp-stderr-{server}", daemon=True
        )
        self._thread.start()

    def _read(self, reader: IO[str], server: str) -> None:
        with reader:
            for line in reader:
                line = line.rstrip()[:STDERR_LINE_CHARS]
                if line:
                    self._lines.append(line)
                    self.count += 1
                    log.debug("mcp %s: %s", server, line)

    def close_writer(self) -> None:
        """Our copy of the pipe's end: once the server has it, the reader sees the end when it exits."""
        with contextlib.suppress(OSError):
            self.writer.close()

    def tail(self, since: int = 0, wait_s: float = 0.2) -> str:
        """The last lines written after the mark `since` (at most 3)."""
        self._thread.join(wait_s)  # what a dying server wrote last may still be in the pipe
        fresh = min(self.count - since, len(self._lines), 3)
        return "; ".join(list(self._lines)[len(self._lines) - fresh :]) if fresh > 0 else ""


class McpServer:
    """One configured server's connection: its state, its last tool list, and its calls."""

    def __init__(self, config: McpServerConfig, default_cwd: Path | None = None) -> None:
        self.config = config
        self.default_cwd = default_cwd
        self.state: State = "stopped"
        self.tools: tuple[McpTool, ...] = ()
        self.listed = False  # its tools were listed at least once
        self.error: str | None = None
        self.starts = 0
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Event = asyncio.Event()  # set when a start ends, however it ends
        self._wake = asyncio.Event()
        self._stopping = False
        self._lost = False
        self._changed = False
        self._failures = 0  # starts in a row that failed or died soon after
        self._started_at = 0.0
        self._retry_at = 0.0
        self._stderr: _StderrTail | None = None
        self._mark = 0  # the server's stderr lines before the current start or call

    @property
    def name(self) -> str:
        return self.config.name

    def backoff_s(self) -> float:
        return 0.0 if self._failures <= 1 else min(2.0 ** (self._failures - 2), BACKOFF_MAX_S)

    async def start(self) -> None:
        """Starts the connection unless it runs, is starting, is stopping, or waits out its backoff; a
        connection still winding down after a death is waited for first."""
        if self._stopping or self.state in ("running", "starting"):
            return
        if self._task is not None and not self._task.done():
            with contextlib.suppress(asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._task), STOP_TIMEOUT_S)
            if self._stopping or self.state in ("running", "starting"):
                return
        if time.monotonic() < self._retry_at:
            return
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._lost = self._changed = False
        self.state = "starting"
        self.starts += 1
        self._task = asyncio.create_task(self._own(), name=f"mcp-{self.name}")

    async def wait_started(self, timeout_s: float) -> None:
        """Waits, at most timeout_s, for a start under way to end."""
        if self.state == "starting":
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._ready.wait()), timeout_s)

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), STOP_TIMEOUT_S)
            except (asyncio.TimeoutError, Exception):
                task.cancel()
        self.state = "stopped"

    async def call(
        self, tool: str, arguments: dict[str, Any], timeout_s: float = CALL_TIMEOUT_S
    ) -> CallOutcome:
        """Calls the tool; every failure is an outcome that says what happened."""
        try:
            client = await self._connected()
        except ServerUnavailable as exc:
            return CallOutcome(str(exc), ok=False)
        if self._stderr is not None:
            self._mark = self._stderr.count
        try:
            # The SDK's own timeout bounds the answer; this one also bounds a transport stuck writing.
            result = await asyncio.wait_for(
                client.call_tool(tool, arguments, read_timeout_seconds=timeout_s), timeout_s + 5
            )
        except (MCPError, asyncio.TimeoutError) as exc:
            code = exc.error.code if isinstance(exc, MCPError) else mcp_types.REQUEST_TIMEOUT
            if code == mcp_types.CONNECTION_CLOSED:
                self._died("it stopped while the call ran")
                return CallOutcome(
                    f"the MCP server {self.name} stopped while {tool} ran{self._why()}; it is started "
                    "again for the next call",
                    ok=False,
                )
            if code == mcp_types.REQUEST_TIMEOUT:
                return CallOutcome(f"{tool} did not answer within {timeout_s:g} s", ok=False)
            message = exc.error.message if isinstance(exc, MCPError) else str(exc)
            return CallOutcome(f"{tool} failed: {message[:500]}", ok=False)
        except Exception as exc:  # a result the SDK refused (schema, an input request): the model reads why
            log.info("mcp %s: %s failed: %r", self.name, tool, exc)
            return CallOutcome(f"{tool} failed: {str(exc)[:500] or type(exc).__name__}", ok=False)
        text = cut(result_text(result))
        return CallOutcome(text, ok=not result.is_error)

    async def _connected(self) -> Client:
        if self.state == "running" and self._client is not None and not self._lost:
            return self._client
        await self.start()
        await self.wait_started(START_TIMEOUT_S + 5)
        if self.state == "running" and self._client is not None:
            return self._client
        wait = self._retry_at - time.monotonic()
        later = f"; it is started again in {max(wait, 1):.0f} s" if wait > 0 else ""
        raise ServerUnavailable(
            f"the MCP server {self.name} is not running: {self.error or 'stopped'}{later}"
        )

    def _died(self, why: str) -> None:
        if self._lost or self._stopping:
            return
        self._lost = True
        self._wake.set()
        if time.monotonic() - self._started_at >= STABLE_S:
            self._failures = 0
        self._failures += 1
        self._retry_at = time.monotonic() + self.backoff_s()
        self.state = "failed"
        self.error = why + self._why()
        log.warning("MCP server %s (%s) stopped: %s", self.name, self.config.shown, self.error)

    def _why(self) -> str:
        tail = self._stderr.tail(self._mark) if self._stderr is not None else ""
        return f" (its last words: {tail})" if tail else ""

    def _parameters(self) -> StdioServerParameters | str:
        config = self.config
        if config.url is not None:
            return config.url
        assert config.command is not None
        cwd = config.cwd or (str(self.default_cwd) if self.default_cwd is not None else None)
        # The SDK passes the server only a few of our variables (HOME, PATH, USER, ...) and these.
        return StdioServerParameters(
            command=config.command, args=list(config.args), env=dict(config.env), cwd=cwd
        )

    async def _own(self) -> None:
        """The connection's life, from start to stop or death, in this one task."""
        self._stderr = _StderrTail(self.name)
        self._started_at = time.monotonic()
        params = self._parameters()
        # A URL is the SDK's streamable HTTP transport; a command its stdio transport, with the server's
        # stderr going to our pipe.
        transport = params if isinstance(params, str) else stdio_client(params, errlog=self._stderr.writer)
        client = Client(
            transport,
            message_handler=self._on_message,
            client_info=mcp_types.Implementation(name="llama-lsp", version=__version__),
            cache=None,  # a changed tool list is listed again, never served from a cache
            # Every request but a call (which has its own): the start's handshake and the listings. A
            # cancel scope around entering the client would not do: the client's own scopes outlive it.
            read_timeout_seconds=START_TIMEOUT_S,
        )
        try:
            async with contextlib.AsyncExitStack() as stack:
                try:
                    await stack.enter_async_context(client)
                    tools = await self._list(client)
                finally:
                    self._stderr.close_writer()
                self._set_tools(tools)
                self._client = client
                self.state, self.error = "running", None
                self._ready.set()
                log.info("MCP server %s started: %d tools", self.name, len(tools))
                async with anyio.create_task_group() as group:
                    if client.protocol_version >= "2026":
                        group.start_soon(self._listen, client)
                    await self._serve(client)
                    group.cancel_scope.cancel()
        except Exception as exc:  # could not start, or the connection broke: the next need starts it again
            if self.state == "starting":
                self._failures += 1
                self._retry_at = time.monotonic() + self.backoff_s()
                self.state = "failed"
                self.error = f"{_reason(exc)}{self._why()}"
                log.warning(
                    "MCP server %s (%s) failed to start: %s", self.name, self.config.shown, self.error
                )
            else:
                self._died(_reason(exc))
        finally:
            self._client = None
            if self.state == "running":
                self.state = "stopped" if self._stopping else "failed"
            self._ready.set()

    async def _serve(self, client: Client) -> None:
        """Until stopped or lost: lists the tools again whenever the server says they changed."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._stopping or self._lost:
                return
            if self._changed:
                self._changed = False
                try:
                    self._set_tools(await self._list(client))
                    log.info("MCP server %s changed its tools: %d now", self.name, len(self.tools))
                except MCPError as exc:
                    if exc.error.code == mcp_types.CONNECTION_CLOSED:
                        self._died("it stopped")
                        return
                    log.warning("MCP server %s: listing its tools again failed: %s", self.name, exc)

    async def _listen(self, client: Client) -> None:
        """The 2026 protocol sends change events only on a subscriptions/listen stream."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._changed = True
                    self._wake.set()
        except ListenNotSupportedError:
            return
        except Exception as exc:  # the stream broke with the connection, or the server refused it
            if isinstance(exc, MCPError) and exc.error.code != mcp_types.CONNECTION_CLOSED:
                log.info("MCP server %s: no change events: %s", self.name, exc)
                return
            self._died("it stopped")

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._changed = True
            self._wake.set()

    async def _list(self, client: Client) -> list[McpTool]:
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor or len(tools) >= MAX_TOOLS_PER_SERVER:
                break
        return [
            McpTool(
                server=self.name,
                name=tool.name,
                description=(tool.description or tool.title or "").strip(),
                input_schema=dict(tool.input_schema or {"type": "object"}),
                read_only=bool(tool.annotations is not None and tool.annotations.read_only_hint is True),
            )
            for tool in tools[:MAX_TOOLS_PER_SERVER]
        ]

    def _set_tools(self, tools: Iterable[McpTool]) -> None:
        self.tools = tuple(tools)
        self.listed = True

    def stats_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.config.source,
            "state": self.state,
            "tools": len(self.tools),
            "starts": self.starts,
            "error": self.error,
        }


class McpServers:
    """The configured servers, in the order of the configuration (which orders their tools too)."""

    def __init__(self) -> None:
        self._servers: dict[str, McpServer] = {}

    @property
    def servers(self) -> list[McpServer]:
        return list(self._servers.values())

    def server(self, name: str) -> McpServer | None:
        return self._servers.get(name)

    async def configure(self, configs: Iterable[McpServerConfig], default_cwd: Path | None = None) -> bool:
        """Takes a new configuration: a server whose configuration changed, or that is gone, is stopped;
        one that stayed the same keeps running. Returns whether anything changed."""
        wanted = {config.name: config for config in configs}
        kept = {
            name: server
            for name, server in self._servers.items()
            if wanted.get(name) == server.config and server.default_cwd == default_cwd
        }
        gone = [server for name, server in self._servers.items() if name not in kept]
        await asyncio.gather(*(server.stop() for server in gone))
        before = list(self._servers)
        self._servers = {
            name: kept.get(name) or McpServer(config, default_cwd) for name, config in wanted.items()
        }
        return bool(gone) or list(self._servers) != before

    async def tools(self, wait_s: float) -> list[McpTool]:
        """Every server's tools, in order; servers not yet running start now, and those starting are
        waited for, together at most wait_s (a slower one's tools come with a later call)."""
        await asyncio.gather(*(server.start() for server in self._servers.values()))
        await asyncio.gather(*(server.wait_started(wait_s) for server in self._servers.values()))
        return self.known_tools()

    def known_tools(self) -> list[McpTool]:
        """The tools known now, without starting anything: a dead server's last list included."""
        return [tool for server in self._servers.values() for tool in server.tools]

    def stats_json(self) -> list[dict[str, Any]]:
        return [server.stats_json() for server in self._servers.values()]

    async def close(self) -> None:
        await asyncio.gather(*(server.stop() for server in self._servers.values()))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ServerUnavailable):
        return str(exc)
    if isinstance(exc, MCPError):
        if exc.error.code == mcp_types.REQUEST_TIMEOUT:
            return f"it did not answer within {START_TIMEOUT_S:g} s"
        return exc.error.message
    if isinstance(exc, FileNotFoundError):
        return f"no such command: {exc.filename or exc}"
    inner = getattr(exc, "exceptions", None)  # an exception group (anyio's task groups raise them)
    if isinstance(inner, tuple) and inner:
        return "; ".join(_reason(one) for one in inner[:3])
    return str(exc)[:300] or type(exc).__name__


def result_text(result: mcp_types.CallToolResult) -> str:
    """What the model reads of a call's result: its text, and a line for each block it cannot read."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
            parts.append(f"[{block.type} ({block.mime_type}): not shown]")
        elif isinstance(block, mcp_types.ResourceLink):
            parts.append(f"[resource {block.uri}{': ' + block.name if block.name else ''}]")
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, mcp_types.TextResourceContents):
                parts.append(resource.text)
            else:
                parts.append(f"[binary resource {resource.uri}: not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts) if parts else "(no output)"


def cut(text: str, limit: int = OUTPUT_MAX_CHARS) -> str:
    """The text within `limit` characters, with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return (
        text[:limit].rstrip()
        + f"\n[cut: the tool's output was {len(text):,} characters; only the first {limit:,} are shown]"
    )
