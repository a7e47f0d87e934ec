"""The document-turn service: what chat and the code actions share, in one place.

It owns the conversations, the actions that are running (a newer one for the same document and kind
supersedes the older), the accounting of every turn's figures (one TurnStats record for the result,
`lastStats` and the totals), the check that a request is not about a stale document, and the tools'
view of the workspace (a WorkspaceFiles, which holds the path rule). A feature opens a DocumentTurn and works
through it; it never reaches into the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pygls.workspace import TextDocument, Workspace

from ..assistant.block_turn import BlockRequest, BlockTurn
from ..assistant.checks.sandbox import CheckSandbox
from ..assistant.checks.verifier import CheckPolicy, Verification, Verifier
from ..assistant.codebase import CodebaseIndex
from ..assistant.conversation import (
    Conversation,
    ConversationStore,
    TurnOptions,
    TurnResult,
    TurnStats,
    run_turn,
)
from ..assistant.tools.proposals import Admission
from ..assistant.tools.runner import ToolRunner
from ..assistant.tools.workspace_files import WorkspaceFiles
from ..engine import ChatEngine, ChatRequest
from . import documents, lsp_json, protocol
from .mcp import McpFeature
from .settings import Settings

log = logging.getLogger("llama_lsp.turns")

T = TypeVar("T")
# A turn's edits are checked as a chat's are, unless the request says otherwise (an action's policy).
CHECKED = CheckPolicy()


class ServerContext(Protocol):
    """What the service needs from the language server, and no more."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def settings(self) -> Settings: ...

    async def ready_engine(self) -> ChatEngine: ...

    def busy(self) -> AbstractContextManager[None]: ...

    @property
    def codebase_index(self) -> CodebaseIndex | None: ...

    @property
    def mcp(self) -> McpFeature: ...


@dataclass
class StatsBook:
    """Every finished turn's figures: the totals, and the last turn's record as it was answered."""

    requests: int = 0
    totals: TurnStats = field(default_factory=TurnStats)
    last: TurnStats | None = None

    def record(self, stats: TurnStats) -> None:
        self.requests += 1
        self.totals = self.totals.plus(stats)
        self.last = stats

    def totals_json(self) -> dict[str, Any]:
        totals = self.totals
        hit_rate = None  # unknown where a remote backend did not say
        if totals.n_reused is not None:
            hit_rate = round(totals.n_reused / totals.n_prompt, 4) if totals.n_prompt else 0.0
        summed = protocol.stats_json(totals)
        del summed["tFirstTokenMs"]  # one turn's wait: it does not add up across turns
        return {"requests": self.requests, **summed, "cacheHitRate": hit_rate}

    def last_json(self) -> dict[str, Any] | None:
        return protocol.stats_json(self.last) if self.last is not None else None


@dataclass
class DocumentTurn:
    """One request's work on one document (or on none, for a chat about the workspace)."""

    engine: ChatEngine
    settings: Settings
    conversation: Conversation
    runner: ToolRunner
    verifier: Verifier | None
    lsp_documents: Workspace  # the editor's open documents, which the edit is computed against
    uri: str | None = None
    path: Path | None = None
    document: TextDocument | None = None
    text: str = ""  # the document's text when the turn began
    result: TurnResult | None = None

    @property
    def workspace(self) -> WorkspaceFiles:
        return self.runner.workspace

    @property
    def shown_path(self) -> str:
        """The document's path as the model sees it (and names it back in tool calls)."""
        assert self.path is not None
        return self.workspace.display(self.path)

    def quote(self, selection: protocol.Range) -> str:
        """The selected text, as the editor counts positions."""
        assert self.document is not None
        return documents.selection_text(self.document, selection)

    def options(self, **changes: Any) -> TurnOptions:
        base = TurnOptions(
            max_tool_steps=self.settings.max_tool_steps,
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
        )
        return replace(base, **changes)

    async def ask(
        self, message: str, on_piece: Callable[[str], None] | None = None, **options: Any
    ) -> TurnResult:
        """The model answers `message`, using the tools as it needs; an edit it proposes is checked."""
        self.conversation.messages.append({"role": "user", "content": message})
        turn = await run_turn(
            self.engine, self.conversation, self.runner, self.options(**options), on_piece, self.verifier
        )
        return self._add(turn)

    async def write_block(self, block: BlockRequest, propose: Callable[[str], str | None]) -> TurnResult:
        """The model writes a whole block of code (lsp_server.assistant.rewrite, block_turn); `propose`
        turns it into an edit."""
        turn = BlockTurn(
            self.engine,
            self.conversation,
            self.runner,
            block,
            propose,
            self.settings.temperature,
            self.verifier,
        )
        return self._add(await turn.run())

    def _add(self, turn: TurnResult) -> TurnResult:
        self.result = turn if self.result is None else self.result.followed_by(turn)
        return self.result

    @property
    def checked_without_passing(self) -> bool:
        """Checks ran out, or a candidate failed one: another way of writing the edit would not help."""
        verifier = self.verifier
        return verifier is not None and (
            verifier.exhausted or verifier.verification.first_failure is not None
        )

    def reply(self) -> dict[str, Any]:
        """The turn as the protocol answers it (docs/protocol.md, `assistant/chat`)."""
        turn = self.result
        assert turn is not None
        return {
            "conversationId": self.conversation.id,
            "content": turn.content,
            "finishReason": turn.finish_reason,
            "toolCalls": [
                {"name": c.name, "arguments": c.arguments, "result": c.result} for c in turn.tool_calls
            ],
            "stats": protocol.stats_json(turn.stats),
        }

    def edit(self) -> types.WorkspaceEdit | None:
        """The proposed edits as a WorkspaceEdit against the documents as they are now.

        Raises StaleDocument when a document changed since its edit was written. When checks ran and
        none passed, the first candidate is the edit, marked as failed in `verification()`.
        """
        if self.verifier is not None:
            self.verifier.settle(self.runner)
        return documents.workspace_edit(self.lsp_documents, self.runner.proposals)

    def verification(self) -> dict[str, Any]:
        return (self.verifier.verification if self.verifier else Verification(None)).to_json()


class TurnService:
    """Opens DocumentTurns and keeps what outlives them: conversations, running actions, figures."""

    def __init__(self, server: ServerContext) -> None:
        self._server = server
        self.conversations = ConversationStore()
        self.stats = StatsBook()
        self._running: dict[tuple[str, str], asyncio.Future[Any]] = {}
        self._latest_conversation: dict[str, str] = {}  # document URI -> the last conversation about it
        # Called with the conversation as it stands after each answer (warming reads it ahead).
        self.on_answered: Callable[[ChatRequest], None] | None = None
        # Tasks cancelled because a newer request for the same work replaced them.
        self._superseded: weakref.WeakSet[asyncio.Future[Any]] = weakref.WeakSet()

    @contextlib.asynccontextmanager
    async def turn(
        self,
        uri: str | None,
        *,
        conversation_id: str | None = None,
        version: int | None = None,
        check_policy: CheckPolicy | None = CHECKED,
        admission: Admission | None = None,
        mcp_question: str | None = None,
    ) -> AsyncIterator[DocumentTurn]:
        """A turn on the open document `uri` (None: the workspace), in conversation `conversation_id`
        (None: a new one). `version` is the one the request was made for; proposed edits go through
        verifyCommand as `check_policy` says (None: they are not checked), and the request's ledger
        records what `admission` admits of each (None: the edit as it is). With `mcp_question` (chat:
        the user's message), a new conversation is offered the MCP servers' tools for it, and the turn
        may run those its conversation offers.

        The server shows itself busy while the turn runs; the turn's figures are recorded when it ends
        without an error, before the status says ready again, so that the status carries them.
        """
        path: Path | None = None
        document: TextDocument | None = None
        if uri is not None:
            document = documents.get_document(self._server.workspace, uri)
            path = documents.uri_to_path(uri)
            if document is None or path is None:
                raise protocol.ParamsError(f"unknown document {uri}: send textDocument/didOpen first")
            if version is not None and document.version != version:
                raise documents.StaleDocument(f"{uri} changed since the action was offered; request it again")
        engine = await self._server.ready_engine()
        settings = self._server.settings
        workspace = self._workspace(uri)
        verifier = None
        if check_policy is not None and settings.verify_command is not None:
            verifier = Verifier(
                settings.verify_command,
                settings.verify_timeout,
                settings.max_verify_attempts,
                workspace,
                CheckSandbox(settings.verify_sandbox),
                check_policy,
            )
        conversation = self.conversations.get_or_create(conversation_id)
        mcp = None
        if mcp_question is not None:
            await self._server.mcp.start_conversation(conversation, mcp_question)
            mcp = self._server.mcp.toolbox(conversation)
        text = document.source if document is not None else ""
        if path is not None:
            conversation.show_document(workspace.display(path), text)
        turn = DocumentTurn(
            engine,
            settings,
            conversation,
            ToolRunner(workspace, admission, self._server.codebase_index, mcp),
            verifier,
            self._server.workspace,
            uri,
            path,
            document,
            text,
        )
        with self._server.busy():
            try:
                yield turn
            finally:
                if verifier is not None:
                    verifier.stop()
            if turn.result is not None:
                self.stats.record(turn.result.stats)
        if uri is not None:
            self._latest_conversation[uri] = conversation.id
        if turn.result is not None and self.on_answered is not None:
            self.on_answered(self._request(conversation, conversation.messages, conversation.id))

    async def warm_requests(self, uri: str) -> list[ChatRequest]:
        """What the next question about the open document `uri` will start with, to read ahead: the
        last conversation about it with the document's change appended, then a new chat conversation's
        opening (the system prompt, the tools, the MCP servers' among them, and the document). Nothing
        for an unknown document."""
        shown = self._shown_document(uri)
        if shown is None:
            return []
        requests = []
        latest = self._latest_conversation.get(uri)
        if latest is not None and latest in self.conversations:
            conversation = self.conversations.get_or_create(latest)
            requests.append(self._request(conversation, conversation.messages_showing(*shown), latest))
        new = Conversation(id=new_conversation_slot(uri))
        await self._server.mcp.start_conversation(new, "")
        requests.append(self._request(new, new.messages_showing(*shown), new_conversation_slot(uri)))
        return requests

    async def mcp_warm_requests(self, uri: str, at_most: int) -> list[ChatRequest]:
        """More openings of a new conversation about the open document `uri` to read ahead, each with
        the MCP tools that a question naming one server gets (McpFeature.openings), at most `at_most`,
        each in a slot of its own: a question that names a server then reads only itself, as one that
        names none does. Nothing for an unknown document."""
        shown = self._shown_document(uri)
        if shown is None:
            return []
        requests = []
        for offered in await self._server.mcp.openings(at_most):
            new = Conversation(id=new_conversation_slot(uri))
            self._server.mcp.give(new, offered)
            slot = f"{new_conversation_slot(uri)}#mcp:{offered.tools[0].tool.server}"
            requests.append(self._request(new, new.messages_showing(*shown), slot))
        return requests

    def _shown_document(self, uri: str) -> tuple[str, str] | None:
        """An open document's path as the model sees it, and its text; None for an unknown one."""
        document = documents.get_document(self._server.workspace, uri)
        path = documents.uri_to_path(uri)
        if document is None or path is None:
            return None
        return self._workspace(uri).display(path), document.source

    @property
    def n_mcp_openings(self) -> int:
        """How many openings with MCP tools the latest mcp_warm_requests found (each takes a slot)."""
        return self._server.mcp.n_openings

    @staticmethod
    def _request(conversation: Conversation, messages: list[dict[str, Any]], slot: str) -> ChatRequest:
        # Every turn declares every tool of its conversation (run_turn), so the tools are part of the
        # prefix to warm.
        return ChatRequest(messages=list(messages), tools=conversation.tools(), slot=slot)

    def forget(self, uri: str) -> None:
        """The document was closed."""
        self._latest_conversation.pop(uri, None)

    def check_current(self, edit: types.WorkspaceEdit) -> None:
        """Raises StaleDocument if a document the edit changes moved on since it was computed."""
        documents.check_versions(self._server.workspace, edit)

    async def superseding(self, key: tuple[str, str], work: Coroutine[Any, Any, T], what: str) -> T:
        """Runs `work`, cancelling the earlier work under the same key (the same action on the same
        document); that one is answered RequestCancelled, saying it was superseded."""
        previous = self._running.get(key)
        if previous is not None and not previous.done():
            self._superseded.add(previous)
            previous.cancel()
        task = asyncio.ensure_future(work)
        self._running[key] = task
        try:
            return await task
        except asyncio.CancelledError:
            # A cancel from the client (or shutdown) goes on up, and the protocol layer answers it.
            if task in self._superseded:
                raise JsonRpcRequestCancelled(
                    f"superseded by a newer {what} request on this document"
                ) from None
            raise
        finally:
            if self._running.get(key) is task:
                del self._running[key]

    def _workspace(self, uri: str | None) -> WorkspaceFiles:
        """The tools' view of the workspace for a request about the document `uri`, if any."""
        lsp_documents = self._server.workspace
        roots = documents.workspace_roots(lsp_documents, uri)
        path = documents.uri_to_path(uri) if uri is not None else None
        if not roots:
            # No folder and no document: a chat in an editor opened on no folder. The tools stay declared,
            # so the prompt keeps its cached prefix, and answer the model that no folder is open. Lending
            # them the folders of open documents instead would open directories the user never chose.
            log.info("no workspace folder and no document: the tools have no files to work with")
        return WorkspaceFiles(
            roots,
            open_text=lambda p: documents.open_text(lsp_documents, p),
            # The document asked about is editable in place even when it lies outside every folder.
            documents=[path] if path is not None else [],
        )


def new_conversation_slot(uri: str) -> str:
    """The cache slot that holds a new conversation's opening about the document `uri`."""
    return f"document:{uri}"


def edit_json(edit: types.WorkspaceEdit) -> dict[str, Any]:
    """A WorkspaceEdit as plain JSON, to go inside one of our own results."""
    value: dict[str, Any] = lsp_json.to_json(edit)
    return value
