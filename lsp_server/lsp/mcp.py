"""MCP tool servers as the language server keeps them: which servers the configuration names, the tools
a new chat conversation is offered, the user's consent asked through the editor, and the figures.

The configuration is the `mcpServers` setting, then (with `mcpWorkspaceServers`) each workspace folder's
`.vscode/mcp.json` and `.mcp.json`; both settings are trusted-only, so an untrusted workspace has neither
(VS Code withholds `mcpServers` and sends `mcpWorkspaceServers: false`, as Neovim does for a folder the
user has not trusted): nothing starts there. The configuration is read again for every new conversation
(a project file may have changed) and on every settings change, which stops the servers that left it;
nothing starts until a chat, or the warming of a chat's prompt, needs the tools. The SDK is imported only
once a server is configured: it costs a second at start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from pygls.workspace import Workspace

from ..assistant import prompts
from ..assistant.conversation import Conversation
from ..assistant.tools.mcp_config import (
    MAX_LOCAL_TOOLS,
    MAX_REMOTE_TOOLS,
    McpConfigError,
    McpServerConfig,
    expand,
    project_servers,
)
from . import documents, protocol
from .settings import Settings

if TYPE_CHECKING:
    from ..assistant.tools.mcp_servers import McpServers, McpTool
    from ..assistant.tools.mcp_tools import Choice, ConsentRequest, McpToolbox, Offer

log = logging.getLogger("llama_lsp.mcp")

# How long a new conversation waits for servers still starting; a slower one's tools come with a later
# conversation (its start goes on meanwhile).
START_WAIT_S = 15.0
# How long the user may take to answer a consent request before it counts as "deny".
CONSENT_TIMEOUT_S = 600.0


class McpContext(Protocol):
    @property
    def workspace(self) -> Workspace: ...

    @property
    def settings(self) -> Settings: ...


class McpFeature:
    """The server's MCP servers and the user's standing consent."""

    def __init__(
        self,
        server: McpContext,
        warn: Callable[[str], None],
        send_request: Callable[[str, Any], Awaitable[Any]],
    ) -> None:
        self._server = server
        self._warn = warn  # a message the user sees
        self._send_request = send_request  # a request to the client, answered
        self._servers: McpServers | None = None  # created with the first configured server
        self._consent: Any = None
        self._configs: tuple[McpServerConfig, ...] = ()
        self._latest_offer: Offer | None = None  # the latest conversation's tools, for the stats
        self.n_openings = 0  # openings read ahead with MCP tools, as the latest `openings` found them
        self._warned: set[str] = set()
        self._lock = asyncio.Lock()

    # ---- the configuration ------------------------------------------------------------------------

    def configured(self) -> tuple[McpServerConfig, ...]:
        """The servers the settings and the workspace's files name now, expanded; each bad one is left
        out with a warning (once)."""
        settings = self._server.settings
        roots = documents.workspace_roots(self._server.workspace)
        found: list[McpServerConfig] = list(settings.mcp_servers)
        if settings.mcp_workspace_servers:
            for root in roots:
                servers, warnings = project_servers(root)
                found.extend(servers)
                for warning in warnings:
                    self._warn_once(f"llama-lsp: MCP configuration {warning}")
        chosen: dict[str, McpServerConfig] = {}
        folder = roots[0] if roots else None
        for config in found:
            if config.name in chosen:
                self._warn_once(
                    f"llama-lsp: MCP server {config.name} of {config.source} left out: "
                    f"{chosen[config.name].source} names a server {config.name} too"
                )
                continue
            try:
                chosen[config.name] = expand(config, folder)
            except McpConfigError as exc:
                self._warn_once(f"llama-lsp: MCP server left out: {exc}")
        return tuple(chosen.values())

    def _warn_once(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s", message)
            self._warn(message)

    async def refresh(self) -> McpServers | None:
        """Takes the configuration as it is now: servers that left it stop (none starts here)."""
        async with self._lock:
            configs = self.configured()
            if configs == self._configs and (self._servers is not None or not configs):
                return self._servers
            if self._servers is None:
                if not configs:
                    return None
                from ..assistant.tools.mcp_servers import McpServers
                from ..assistant.tools.mcp_tools import Consent

                self._servers, self._consent = McpServers(), Consent()
            before = {config.name: config for config in self._configs}
            for config in configs:
                if before.get(config.name, config) != config:
                    self._consent.forget_server(config.name)
            roots = documents.workspace_roots(self._server.workspace)
            await self._servers.configure(configs, roots[0] if roots else None)
            self._configs = configs
            self._latest_offer = None  # of servers that may be gone
            return self._servers

    def settings_changed(self) -> None:
        if self._servers is not None or self._server.settings.mcp_servers:
            task = asyncio.ensure_future(self.refresh())
            task.add_done_callback(_log_failure)

    # ---- chat -------------------------------------------------------------------------------------

    async def offer(self, question: str) -> Offer | None:
        """The MCP tools a new chat conversation that starts with `question` gets (starting the servers
        that are not running); None when no server is configured."""
        tools = await self._tools()
        if tools is None:
            return None
        from ..assistant.tools.mcp_tools import offer

        relevant = self._server.settings.mcp_tool_choice == "relevant"
        return offer(tools, self._limit(), question if relevant else None)

    async def openings(self, at_most: int) -> list[Offer]:
        """The MCP tools of the new conversations whose opening is read ahead besides the one without
        any: with the relevant tools chosen, what a question that names one server alone gets, for the
        first `at_most` servers whose tools fit (servers not running start); none otherwise (the one
        read ahead has the first tools, which every conversation gets)."""
        if at_most <= 0 or self._server.settings.mcp_tool_choice != "relevant":
            self.n_openings = 0
            return []
        tools = await self._tools()
        from ..assistant.tools.mcp_tools import server_offers

        found = server_offers(tools, self._limit())[:at_most] if tools else []
        self.n_openings = len(found)
        return found

    async def _tools(self) -> list[McpTool] | None:
        servers = await self.refresh()
        if servers is None or not self._configs:
            return None
        return await servers.tools(START_WAIT_S)

    def _limit(self) -> int:
        return MAX_REMOTE_TOOLS if self._server.settings.backend is not None else MAX_LOCAL_TOOLS

    async def start_conversation(self, conversation: Conversation, question: str) -> None:
        """Fixes a new chat conversation's MCP tools, which its prompts declare from now on: those for
        its first message, `question` ("" to read a conversation's opening ahead: with the relevant
        tools chosen, none)."""
        if conversation.started:
            return
        offered = await self.offer(question)
        if offered is None:
            return
        self.give(conversation, offered)
        if question:
            self._latest_offer = offered

    def give(self, conversation: Conversation, offered: Offer) -> None:
        """Makes `offered` a new conversation's MCP tools: its prompts declare them from now on."""
        conversation.extra_tools = offered.schemas
        conversation.offer = offered.tools
        roots = documents.workspace_roots(self._server.workspace)
        if offered.tools and roots:
            conversation.messages[0] = prompts.system_message(str(roots[0]))

    def toolbox(self, conversation: Conversation) -> McpToolbox | None:
        """What runs the MCP tools a chat conversation offers; None when it offers none."""
        if not conversation.offer or self._servers is None:
            return None
        from ..assistant.tools.mcp_tools import McpToolbox

        return McpToolbox(conversation.id, conversation.offer, self._servers, self._consent, self.confirm)

    async def confirm(self, request: ConsentRequest) -> Choice:
        """Asks the editor whether the call may run; anything but an answer is "deny"."""
        from ..assistant.tools.mcp_tools import CHOICES

        params = {
            "conversationId": request.conversation_id,
            "server": request.server,
            "tool": request.tool,
            "name": request.name,
            "arguments": request.arguments,
            "description": request.description,
        }
        try:
            answer = await asyncio.wait_for(
                self._send_request(protocol.CONFIRM_TOOL_CALL, params), CONSENT_TIMEOUT_S
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # MethodNotFound from a client without it, an error, no answer in time
            log.info("%s got no answer (%r): the call is denied", protocol.CONFIRM_TOOL_CALL, exc)
            return "deny"
        answer = protocol.to_plain(answer)
        choice = answer.get("choice") if isinstance(answer, dict) else None
        if choice not in CHOICES:
            log.info("%s answered %r: the call is denied", protocol.CONFIRM_TOOL_CALL, answer)
            return "deny"
        return choice

    # ---- figures and lifecycle ----------------------------------------------------------------------

    def stats_json(self) -> dict[str, Any]:
        """`assistant/stats`'s `mcp`: the servers, and the MCP tools the latest chat conversation was
        offered and not (before any: what the first ones would be of the tools known now; nothing is
        started for it)."""
        if self._servers is None:
            return {"servers": [], "offered": [], "leftOut": []}
        from ..assistant.tools.mcp_tools import offer

        offered = self._latest_offer
        if offered is None:
            offered = offer(self._servers.known_tools(), self._limit())
        return {
            "servers": self._servers.stats_json(),
            "offered": [tool.name for tool in offered.tools],
            "leftOut": list(offered.left_out),
        }

    async def close(self) -> None:
        if self._servers is not None:
            await self._servers.close()


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("MCP configuration failed", exc_info=task.exception())
