"""The `assistant/chat` feature: a streamed, cancellable conversation about a document or the workspace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lsprotocol import types

from . import documents, protocol
from .turns import TurnService, edit_json

# Small models shown the tools' schemas tend to answer "what does f do?" with a JSON call to f.
# The hint goes with a conversation's first question, not into the system prompt, so code actions keep
# their prompts; a follow-up goes without it, since it is in the conversation already, and so evaluates
# only itself.
CHAT_HINT = "(Answer in words. Use a tool only to read the workspace or to propose an edit.)"


async def chat(
    turns: TurnService, params: protocol.ChatParams, send_progress: Callable[[types.ProgressParams], None]
) -> dict[str, Any]:
    def stream(piece: str) -> None:
        if params.partial_result_token is not None:
            send_progress(types.ProgressParams(token=params.partial_result_token, value={"delta": piece}))

    async with turns.turn(params.uri, conversation_id=params.conversation_id) as turn:
        message = params.message
        if params.range is not None:
            first, last = params.range.start.line + 1, params.range.end.line + 1
            message = f"About lines {first}-{last}:\n```\n{turn.quote(params.range)}\n```\n\n{message}"
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
