"""The `assistant/chat` feature: a streamed, cancellable conversation about a document or the workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from . import documents, protocol
from .conversation import TurnOptions, TurnResult, run_turn
from .tools import ToolRunner
from .verify import Verification

if TYPE_CHECKING:
    from .server import AssistantServer


# Small models shown the tools' schemas tend to answer "what does f do?" with a JSON call to f.
# The hint goes with each question, not into the system prompt, so code actions keep their prompts.
CHAT_HINT = "(Answer in words. Use a tool only to read the workspace or to propose an edit.)"


async def chat(server: AssistantServer, params: protocol.ChatParams) -> dict[str, Any]:
    engine = await server.ready_engine()
    conversation = server.conversations.get_or_create(params.conversation_id)
    message = params.message
    start_version: int | None = None
    workspace = server.tool_workspace(uri=params.uri)
    if params.uri is not None:
        document = documents.get_document(server.workspace, params.uri)
        path = documents.uri_to_path(params.uri)
        if document is None or path is None:
            raise protocol.ParamsError(f"unknown document {params.uri}: send textDocument/didOpen first")
        start_version = document.version
        conversation.show_document(workspace.display(path), document.source)
        if params.range is not None:
            first, last = params.range.start.line + 1, params.range.end.line + 1
            quoted = documents.selection_text(document, params.range)
            message = f"About lines {first}-{last}:\n```\n{quoted}\n```\n\n{message}"
    conversation.messages.append({"role": "user", "content": f"{message}\n\n{CHAT_HINT}"})

    def stream(piece: str) -> None:
        if params.partial_result_token is not None:
            server.progress(types.ProgressParams(token=params.partial_result_token, value={"delta": piece}))

    runner = ToolRunner(workspace)
    verifier = server.verifier(workspace)
    options = TurnOptions(
        max_tool_steps=server.settings.max_tool_steps,
        max_tokens=server.settings.max_tokens,
        temperature=server.settings.temperature,
    )
    with server.busy():
        turn = await run_turn(engine, conversation, runner, options, stream, verifier)
        if verifier is not None:
            verifier.settle(runner)
        server.remember_stats(turn)  # before busy ends, so that the "ready" status carries these stats
    result = turn_json(conversation.id, turn)
    edit = documents.workspace_edit(server.workspace, runner)
    if edit is not None:
        if params.uri is not None and server.document_version(params.uri) != start_version:
            result["editError"] = "the document changed while the answer was written; ask again"
        else:
            result["edit"] = server.protocol._converter.unstructure(edit)  # plain JSON inside our result
    if edit is not None or (verifier is not None and verifier.verification.attempts):
        result["verification"] = (verifier.verification if verifier else Verification(None)).to_json()
    return result


def turn_json(conversation_id: str, turn: TurnResult) -> dict[str, Any]:
    stats = protocol.stats_json(turn.first_stats)
    stats.update(
        nEvaluated=turn.n_evaluated,
        nGenerated=turn.n_generated,
        tPrefillMs=round(turn.t_prefill_ms, 1),
        tDecodeMs=round(turn.t_decode_ms, 1),
        steps=turn.steps,
    )
    return {
        "conversationId": conversation_id,
        "content": turn.content,
        "finishReason": turn.finish_reason,
        "toolCalls": [
            {"name": c.name, "arguments": c.arguments, "result": c.result} for c in turn.tool_calls
        ],
        "stats": stats,
    }
