"""Next-edit suggestions (`assistant/nextEdit`): the edit the user is likely to make next, from the edits
the server saw through didChange (assistant.next_edit has the text rules).

A suggestion is computed in its own slot of the engine ("next-edit"), queued and stopped as a completion
is: it waits while a chat answer or a code action runs, and one that arrives stops it at its next token.
A newer request for the same document, or an edit to it, supersedes the one being computed, which
then answers null; so does a request about a version that is not the document's. The window of the file
a prompt starts with is read into the slot in the background when a document opens, and when a request
finds nothing to follow yet, so that the suggestion after the next edit evaluates little more than it.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

from ..assistant import next_edit
from ..engine import ChatEngine, ChatRequest, EngineError
from . import documents, protocol
from .settings import Settings

log = logging.getLogger("llama_lsp.next_edit")

SLOT = "next-edit"  # the engine slot every suggestion is computed in
MAX_SUGGESTIONS_KEPT = 64  # ids whose feedback is still counted


class NextEditContext(Protocol):
    @property
    def workspace(self) -> Workspace: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def engine(self) -> ChatEngine | None: ...

    async def ready_engine(self) -> ChatEngine: ...


@dataclass(frozen=True)
class WarmWindow:
    """The start of a suggestion's prompt as the slot holds it: a document's window of its text."""

    uri: str
    first: int
    key: int  # the messages' hash: a window of the same lines whose text changed is another
    messages: list[dict[str, str]] = field(compare=False)
    # The latest version of the document whose suggestion starts with it (assistant/stats says so: the
    # eval asks once the window around an edit is read, as a user who typed it would)
    version: int = field(default=0, compare=False)

    @classmethod
    def of(cls, uri: str, prompt: next_edit.Prompt, version: int) -> WarmWindow:
        stable = prompt.stable_part
        return cls(uri, prompt.window_first, hash(tuple(m["content"] for m in stable)), stable, version)


class NextEdits:
    """Keeps the recent edits of the open documents and answers next-edit requests."""

    def __init__(self, server: NextEditContext):
        self._server = server
        self.history = next_edit.EditHistory()
        self._running: dict[str, asyncio.Task[Any]] = {}  # per document: the model's work for its request
        self._warming: tuple[WarmWindow, asyncio.Task[None]] | None = None
        self._warm: WarmWindow | None = None  # what the slot holds
        self._ids = itertools.count(1)
        self._open_suggestions: dict[str, set[str]] = {}  # id -> the feedback counted for it
        self.counts = {"requests": 0, "suggested": 0, "shown": 0, "accepted": 0, "rejected": 0}
        self.last: dict[str, Any] | None = None

    # ---- the documents, as the editor changes them ------------------------------------------------------

    def opened(self, uri: str) -> None:
        document = documents.get_document(self._server.workspace, uri)
        if document is None:
            return
        self.history.opened(uri, self._shown_path(document), document.source)
        self._warm_window(uri, 0, document.version or 0)

    def changed(self, uri: str) -> None:
        self._supersede(uri)
        document = documents.get_document(self._server.workspace, uri)
        if document is None:
            return
        path = self._shown_path(document)
        self.history.changed(uri, path, document.source)
        hunks = self.history.recent(uri)
        if hunks and hunks[-1].path == path:
            # The suggestion after this edit starts with the window around it: read it while the user types.
            self._warm_window(uri, hunks[-1].line + max(hunks[-1].after_lines - 1, 0), document.version or 0)

    def closed(self, uri: str) -> None:
        self._supersede(uri)
        self.history.closed(uri)

    def engine_changed(self) -> None:
        """A new engine holds nothing of what the last one read."""
        self._warm = None

    def stop_all(self) -> None:
        for uri in list(self._running):
            self._supersede(uri)
        if self._warming is not None:
            self._warming[1].cancel()

    # ---- requests ---------------------------------------------------------------------------------------

    async def suggest(self, params: protocol.NextEditParams) -> dict[str, Any] | None:
        """The suggestion for the document at `params.version`, or None."""
        self._supersede(params.uri)
        started = time.monotonic()
        outcome, suggestion, stats = await self._suggest(params)
        self.counts["requests"] += 1
        if suggestion is not None:
            self.counts["suggested"] += 1
        self.last = {"outcome": outcome, "tMs": round((time.monotonic() - started) * 1000, 1), **stats}
        log.info("next edit: %s", self.last)
        return suggestion

    def feedback(self, method: str, suggestion_id: str) -> None:
        """Counts what the client did with a suggestion, once per kind of feedback; unknown ids are ignored
        (a suggestion from before a restart)."""
        seen = self._open_suggestions.get(suggestion_id)
        kind = {
            protocol.NEXT_EDIT_SHOWN: "shown",
            protocol.NEXT_EDIT_ACCEPTED: "accepted",
            protocol.NEXT_EDIT_REJECTED: "rejected",
        }[method]
        if seen is None or kind in seen:
            return
        seen.add(kind)
        self.counts[kind] += 1

    def stats_json(self) -> dict[str, Any]:
        warm = None
        if self._warm is not None:
            warm = {"uri": self._warm.uri, "firstLine": self._warm.first, "version": self._warm.version}
        return {**self.counts, "last": self.last, "warm": warm}

    async def _suggest(
        self, params: protocol.NextEditParams
    ) -> tuple[str, dict[str, Any] | None, dict[str, Any]]:
        """(what happened, the suggestion or None, the model's figures)."""
        if not self._server.settings.next_edit:
            return "off", None, {}
        document = documents.get_document(self._server.workspace, params.uri)
        if document is None:
            raise protocol.ParamsError(f"unknown document {params.uri}: send textDocument/didOpen first")
        if document.version != params.version:
            return "stale", None, {}
        history = self.history.get(params.uri)
        if history is None:
            return "too large", None, {}
        hunks = self.history.recent(params.uri)
        position = types.Position(params.position.line, params.position.character)
        cursor = document.offset_at_position(position)
        if not hunks:  # nothing to follow yet: read the window the next edit's prompt will start with
            self._warm_window(params.uri, params.position.line, params.version)
            return "no edits", None, {}
        repeated = next_edit.repeat_substitution(history, hunks, cursor)
        if repeated is not None:
            return "repeated", self._offer(document, repeated), {}
        prompt = next_edit.build_prompt(history, hunks, params.position.line)
        if not prompt.region.text.strip():
            return "no region", None, {}  # an empty document, or the cursor past its end
        task = asyncio.ensure_future(self._generate(prompt))
        self._running[params.uri] = task
        try:
            await asyncio.wait({task})  # returns when the work ends, or is cancelled by _supersede
        except asyncio.CancelledError:  # the request itself ($/cancelRequest, shutdown)
            task.cancel()
            raise
        finally:
            if self._running.get(params.uri) is task:
                del self._running[params.uri]
        if task.cancelled():
            return "superseded", None, {}
        answer, stats = task.result()
        self._warm = WarmWindow.of(params.uri, prompt, params.version)
        if answer is None:
            return stats.get("finishReason", "failed"), None, stats  # stopped for chat, cut short, failed
        log.debug("next-edit answer: %r", answer)
        if document.version != params.version or self.history.get(params.uri) is not history:
            return "stale", None, stats
        edits = next_edit.suggestion(history, prompt, answer)
        if not edits:
            return "no change", None, stats
        return "suggested", self._offer(document, edits), stats

    def _offer(self, document: TextDocument, edits: list[next_edit.TextEdit]) -> dict[str, Any]:
        """The suggestion as the client gets it, under a new id."""
        suggestion_id = f"ne-{next(self._ids)}"
        self._remember(suggestion_id)
        return {"edits": [_text_edit(document, edit) for edit in edits], "id": suggestion_id}

    async def _generate(self, prompt: next_edit.Prompt) -> tuple[str | None, dict[str, Any]]:
        """The model's answer, complete up to the region's closing marker (None: cut short or stopped for
        chat), and its figures."""
        engine = await self._server.ready_engine()
        request = _request(prompt)
        copying = next_edit.Copying(prompt.region)
        try:
            result = await engine.suggest(request, copying.keep_going)
        except EngineError as exc:  # no room in the context, a backend down: no suggestion, no error
            log.info("no next edit: %s", exc)
            return None, {}
        stats = result.stats
        figures = {
            "nPrompt": stats.n_prompt,
            "nEvaluated": stats.n_evaluated,
            "nGenerated": stats.n_generated,
            "nDrafted": stats.n_drafted,
            "nAccepted": stats.n_accepted,
            "finishReason": result.finish_reason,
        }
        if result.finish_reason != "stop":  # cut short ("length"), stopped for chat, failed
            return None, figures
        return copying.completed(result.content), figures

    def _supersede(self, uri: str) -> None:
        task = self._running.pop(uri, None)
        if task is not None:
            task.cancel()

    def _remember(self, suggestion_id: str) -> None:
        self._open_suggestions[suggestion_id] = set()
        while len(self._open_suggestions) > MAX_SUGGESTIONS_KEPT:
            del self._open_suggestions[next(iter(self._open_suggestions))]

    # ---- warming ----------------------------------------------------------------------------------------

    def _warm_window(self, uri: str, cursor_line: int, version: int) -> None:
        """Reads the start of the prompt of a suggestion asked with the cursor on `cursor_line` into the
        slot, in the background (it yields to any request)."""
        if not self._server.settings.next_edit or not self._server.settings.warm:
            return
        history = self.history.get(uri)
        if history is None:
            return
        prompt = next_edit.build_prompt(history, self.history.recent(uri), cursor_line)
        wanted = WarmWindow.of(uri, prompt, version)
        if wanted == self._warm:
            self._warm = wanted  # held already: now for this version too
            return
        if self._warming is not None and self._warming[0] == wanted:
            self._warming = (wanted, self._warming[1])  # being read: for this version too
            return
        if self._warming is not None:
            self._warming[1].cancel()
        self._warming = (wanted, asyncio.ensure_future(self._read(wanted)))

    async def _read(self, wanted: WarmWindow) -> None:
        try:
            engine = await self._server.ready_engine()
            if not engine.can_warm:
                return
            job = engine.warm(ChatRequest(messages=wanted.messages, slot=SLOT))
            try:
                result = await job.wait()
            except asyncio.CancelledError:
                job.cancel()  # the engine keeps what it read
                raise
            if result.finish_reason == "stop" and self._warming is not None:
                self._warm = self._warming[0]  # `wanted`, for the latest version that asked for it
        except (EngineError, Exception) as exc:  # no model yet, no free slot: nothing to warm
            log.debug("not warming the next-edit window of %s: %s", wanted.uri, exc)
        finally:
            if self._warming is not None and self._warming[1] is asyncio.current_task():
                self._warming = None

    def _shown_path(self, document: TextDocument) -> str:
        path = documents.uri_to_path(document.uri)
        name, _ = documents.shown_name(self._server.workspace, path)
        return name or document.uri


def _request(prompt: next_edit.Prompt) -> ChatRequest:
    return ChatRequest(
        messages=[*prompt.messages, {"role": "assistant", "content": prompt.answer_start}],
        continue_answer=True,
        max_tokens=prompt.max_tokens,
        stop=[next_edit.END],
        slot=SLOT,
    )


def _text_edit(document: TextDocument, edit: next_edit.TextEdit) -> dict[str, Any]:
    start = document.client_position_at_offset(edit.start)
    end = document.client_position_at_offset(edit.end)
    return {
        "range": {
            "start": {"line": start.line, "character": start.character},
            "end": {"line": end.line, "character": end.character},
        },
        "newText": edit.new_text,
    }
