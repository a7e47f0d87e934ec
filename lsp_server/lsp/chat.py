"""The `assistant/chat` feature: a streamed, cancellable conversation about a document or the workspace."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from lsprotocol import types

from ..assistant import related
from . import documents, protocol
from .turns import DocumentTurn, TurnService, edit_json

# Small models shown the tools' schemas tend to answer "what does f do?" with a JSON call to f.
# The hint goes with a conversation's first question, not into the system prompt, so code actions keep
# their prompts; a follow-up goes without it, since it is in the conversation already, and so evaluates
# only itself.
CHAT_HINT = "(Answer in words. Use a tool only to read the workspace or to propose an edit.)"
# `@codebase` in a question asks for the workspace's code that best matches it to be read with it.
CODEBASE = re.compile(r"(?<![\w@])@codebase\b", re.IGNORECASE)
CITE_HINT = "(Name the files you use as `path:line`.)"


async def chat(
    turns: TurnService, params: protocol.ChatParams, send_progress: Callable[[types.ProgressParams], None]
) -> dict[str, Any]:
    def stream(piece: str) -> None:
        if params.partial_result_token is not None:
            send_progress(types.ProgressParams(token=params.partial_result_token, value={"delta": piece}))

    async with turns.turn(
        params.uri, conversation_id=params.conversation_id, mcp_question=params.message
    ) as turn:
        message = question = params.message
        about_codebase = bool(CODEBASE.search(question)) or turn.settings.chat_codebase == "always"
        if about_codebase:
            message = question = CODEBASE.sub("", question).strip() or question
        if params.range is not None:
            first, last = params.range.start.line + 1, params.range.end.line + 1
            message = f"About lines {first}-{last}:\n```\n{turn.quote(params.range)}\n```\n\n{message}"
        if about_codebase:
            message = await _with_codebase(turn, question, message)
        if not turn.conversation.has_answers:
            message = f"{message}\n\n{CHAT_HINT}"
        await turn.ask(message, on_piece=stream)
    result = turn.reply()
    try:
        edit = turn.edit()
    except documents.StaleDocument:
        result["editError"] = "the document changed while the answer was written; ask again"
        edit = None
    if edit is not None:
        result["edit"] = edit_json(edit)
    if edit is not None or (turn.verifier is not None and turn.verifier.verification.attempts):
        result["verification"] = turn.verification()
    return result


async def _with_codebase(turn: DocumentTurn, question: str, message: str) -> str:
    """The message after the workspace's code that best matches its question, as far as the index knows
    it by now (it may still be building: a question never waits for it)."""
    index = turn.runner.index
    if index is None:
        return message
    # Off the event loop: it reads files.
    found = await asyncio.to_thread(related.relevant_code, question, index)
    if not found:
        return message
    code = "\n\n".join(definition.as_markdown() for definition in found)
    return f"Code from the workspace that may answer it:\n{code}\n\n{message}\n\n{CITE_HINT}"
