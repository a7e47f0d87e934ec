"""Inline completion (`textDocument/inlineCompletion`): ghost text at the cursor while the user types.

The model fills in the middle (assistant.infill has the text rules) in the engine's completion slot,
which reuses the longest common prefix of consecutive prompts: a keystroke re-reads only the line being
typed and what follows it. Before the file, the prompt has a few chunks of other files the user opened
or edited recently (assistant.recent_chunks picks them; the completionRecentFiles setting). Chat goes
first: an answer stops a completion at its next token. The client cancels a request once the user types
on ($/cancelRequest), which stops it too.
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument

from ..assistant import infill
from ..assistant.recent_chunks import CONTEXT_LINES, RecentChunks
from ..assistant.recent_chunks import Chunk as RecentChunk
from ..engine import InfillRequest
from . import documents, protocol
from .turns import ServerContext

log = logging.getLogger("llama_lsp.completion")

MAX_TOKENS = 96


class InlineCompletion:
    """Answers inline completion requests; keeps the recent results."""

    def __init__(self, server: ServerContext):
        self._server = server
        self._recent = infill.RecentCompletions()
        self._other_files = RecentChunks()
        self._said_unsupported = False
        self.last: dict[str, Any] | None = None  # the last completion's figures (assistant/stats)

    async def complete(self, params: types.InlineCompletionParams) -> types.InlineCompletionList:
        settings = self._server.settings
        nothing = types.InlineCompletionList(items=[])
        if not settings.completion:
            return nothing
        uri = params.text_document.uri
        document = documents.get_document(self._server.workspace, uri)
        if document is None:
            raise protocol.ParamsError(f"unknown document {uri}: send textDocument/didOpen first")
        position = params.position
        line_start = document.offset_at_position(types.Position(position.line, 0))
        column = document.offset_at_position(position) - line_start
        around = infill.around_cursor(document.source, position.line, column)
        if around is None:
            return nothing
        chunks = self._other_chunks(document, around, position.line)
        request = self._request(document, around, chunks)
        extra_key = "\0".join(name + "\0" + text for name, text in request.extra)
        started = time.monotonic()
        completion = self._recent.get(around, request.filename, extra_key)
        if completion is not None:
            self.last = {"cached": True, "tMs": round((time.monotonic() - started) * 1000, 1)}
        else:
            completion = await self._generate(around, request, chunks)
            if completion is None:
                return nothing
            self._recent.put(around.key(request.filename, extra_key), completion)
        if not completion:
            return nothing
        return types.InlineCompletionList(
            items=[types.InlineCompletionItem(insert_text=completion, range=types.Range(position, position))]
        )

    # Document events (server.py), after pygls has applied them: what the ring buffer of other files'
    # chunks sees.
    def opened(self, uri: str) -> None:
        document = documents.get_document(self._server.workspace, uri)
        if document is not None:
            self._other_files.opened(document.uri, self._shown_name(document), document.source)

    def changed(self, params: types.DidChangeTextDocumentParams) -> None:
        document = documents.get_document(self._server.workspace, params.text_document.uri)
        if document is None:
            return
        lines = [
            change.range.start.line
            for change in params.content_changes
            if isinstance(change, types.TextDocumentContentChangePartial)
        ]
        self._other_files.edited(document.uri, self._shown_name(document), document.source, lines)

    def saved(self, uri: str) -> None:
        document = documents.get_document(self._server.workspace, uri)
        if document is not None:
            self._other_files.saved(document.uri, self._shown_name(document), document.source)

    def closed(self, uri: str) -> None:
        """Closed, or its file deleted."""
        self._other_files.closed(unquote(uri))

    def warm_request(self, uri: str) -> InfillRequest | None:
        """What typing anywhere in the open document `uri` starts from, to read ahead: its lines as the
        lines above a cursor at its end (a completion then shares them up to the cursor's line)."""
        document = documents.get_document(self._server.workspace, uri)
        if document is None or not self._server.settings.completion:
            return None
        line = len(document.lines)
        around = infill.around_cursor(document.source, line, 0)
        if around is None:
            return None
        return self._request(document, around, self._other_chunks(document, around, line))

    def _request(
        self, document: TextDocument, around: infill.Around, chunks: list[RecentChunk]
    ) -> InfillRequest:
        filename, repo = documents.shown_name(self._server.workspace, documents.uri_to_path(document.uri))
        return InfillRequest(
            prefix=around.prefix,
            prompt=around.prompt,
            suffix=around.suffix,
            filename=filename,
            repo=repo,
            extra=[(chunk.name, chunk.text) for chunk in chunks],
            max_tokens=MAX_TOKENS,
        )

    async def _generate(
        self, around: infill.Around, request: InfillRequest, chunks: list[RecentChunk]
    ) -> str | None:
        """The model's completion as shown; None when there is none to remember (stopped for chat)."""
        engine = await self._server.ready_engine()
        if not engine.can_complete:
            if not self._said_unsupported:
                self._said_unsupported = True
                log.warning(
                    "no inline completion: %s",
                    "the model has no fill-in-the-middle tokens"
                    if self._server.settings.backend is None
                    else "it needs the local backend",
                )
            return None
        ending = infill.Ending(around, self._server.settings.completion_time_budget_ms / 1000)
        started = time.monotonic()
        result = await engine.complete(request, ending.keep_going)
        stats = result.stats
        self.last = {
            "cached": False,
            "tMs": round((time.monotonic() - started) * 1000, 1),
            "nPrompt": stats.n_prompt,
            "nEvaluated": stats.n_evaluated,
            "nGenerated": stats.n_generated,
            "nDrafted": stats.n_drafted,
            "nAccepted": stats.n_accepted,
            "tPrefillMs": round(stats.t_prefill_ms, 1),
            "tDecodeMs": round(stats.t_decode_ms, 1),
            "finishReason": result.finish_reason,
            "extra": [chunk.place for chunk in chunks],  # other files' chunks in the prompt, path:lines
        }
        log.info("completion: %s", self.last)
        if result.finish_reason in ("cancelled", "error"):
            return None
        return ending.shown(result.content)

    def _other_chunks(self, document: TextDocument, around: infill.Around, line: int) -> list[RecentChunk]:
        """The chunks of recently opened and edited files most like the text around the cursor."""
        if not self._server.settings.completion_recent_files:
            return []
        lines_above = around.prefix.splitlines(keepends=True)[-CONTEXT_LINES:]
        return self._other_files.pick(
            document.uri, line, "".join(lines_above) + around.prompt + around.suffix
        )

    def _shown_name(self, document: TextDocument) -> str:
        name, _ = documents.shown_name(self._server.workspace, documents.uri_to_path(document.uri))
        return name or document.uri
