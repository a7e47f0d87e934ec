"""llama-lsp's own LSP method and command names, and the parsers of their params.

The names are declared once, here; protocol_shapes.py declares the messages and their payloads as data,
from which the clients' protocol modules and docs/protocol.md's tables are generated (`make generate`).
Params of custom methods arrive as plain JSON; the parsers here validate them and raise ParamsError with
a message that says what is wrong, which the server answers as InvalidParams.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..assistant.actions import ACTIONS

CHAT = "assistant/chat"
STATS = "assistant/stats"
STATUS = "assistant/status"  # notification, server -> client
CONFIRM_TOOL_CALL = "assistant/confirmToolCall"  # request, server -> client: may this MCP tool call run?
SEARCH_CODEBASE = "assistant/searchCodebase"
NEXT_EDIT = "assistant/nextEdit"
# notifications, client -> server: what became of a suggestion (its `id`), counted in assistant/stats
NEXT_EDIT_SHOWN = "assistant/nextEditShown"
NEXT_EDIT_ACCEPTED = "assistant/nextEditAccepted"
NEXT_EDIT_REJECTED = "assistant/nextEditRejected"

# workspace/executeCommand equivalents of the code actions, for clients without codeAction/resolve
COMMAND_CODE_ACTION = "llamaLsp.codeAction"  # args: [{uri, range, kind}]
COMMAND_SHOW_ANSWER = "llamaLsp.showAnswer"  # args: [{conversationId, title, content}] (client-side)

ACTION_KINDS = tuple(action.name for action in ACTIONS)

# Status notification states
LOADING, READY, BUSY, ERROR = "loading", "ready", "busy", "error"
STATES = (LOADING, READY, BUSY, ERROR)

MAX_MESSAGE_CHARS = 100_000
MAX_DIAGNOSTICS = 1000  # per code action: the problems in a selection, each of which its prompt lists


class ParamsError(ValueError):
    """Params that do not match the protocol; the message is shown to the client."""


@dataclass(frozen=True)
class Position:
    line: int
    character: int


@dataclass(frozen=True)
class Range:
    start: Position
    end: Position


@dataclass(frozen=True)
class ChatParams:
    message: str
    uri: str | None = None
    range: Range | None = None
    conversation_id: str | None = None
    partial_result_token: int | str | None = None
    work_done_token: int | str | None = None


@dataclass(frozen=True)
class CodeActionRequest:
    """What a lazy code action (or its command) carries until it is resolved."""

    uri: str
    range: Range
    kind: str
    version: int | None = None
    diagnostics: tuple[dict[str, Any], ...] = ()
    conversation_id: str | None = None  # continue this conversation (a chat about the same document)


def to_plain(value: Any) -> Any:
    """pygls hands custom params over as namedtuples: turn them back into JSON-like values."""
    if hasattr(value, "_asdict"):
        return {k: to_plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def _object(value: Any, what: str) -> dict[str, Any]:
    value = to_plain(value)
    if not isinstance(value, dict):
        raise ParamsError(f"{what} must be an object")
    return value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParamsError(f"{what} must be a non-negative integer")
    return value


def _token(value: Any, what: str) -> int | str | None:
    if value is None or (isinstance(value, int | str) and not isinstance(value, bool)):
        return value
    raise ParamsError(f"{what} must be a string or an integer")


def parse_position(value: Any, what: str) -> Position:
    obj = _object(value, what)
    return Position(_int(obj.get("line"), f"{what}.line"), _int(obj.get("character"), f"{what}.character"))


def parse_range(value: Any, what: str = "range") -> Range:
    obj = _object(value, what)
    start, end = (
        parse_position(obj.get("start"), f"{what}.start"),
        parse_position(obj.get("end"), f"{what}.end"),
    )
    if (end.line, end.character) < (start.line, start.character):
        raise ParamsError(f"{what} ends before it starts")
    return Range(start, end)


def parse_uri(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ParamsError(f"{what} must be a non-empty string")
    return value


def parse_chat_params(raw: Any) -> ChatParams:
    params = _object(raw, "params")
    message = params.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ParamsError("message must be a non-empty string")
    if len(message) > MAX_MESSAGE_CHARS:
        raise ParamsError(f"message is longer than {MAX_MESSAGE_CHARS} characters")
    uri = None
    if params.get("textDocument") is not None:
        uri = parse_uri(_object(params["textDocument"], "textDocument").get("uri"), "textDocument.uri")
    range_ = parse_range(params["range"]) if params.get("range") is not None else None
    if range_ is not None and uri is None:
        raise ParamsError("range needs a textDocument")
    return ChatParams(
        message=message,
        uri=uri,
        range=range_,
        conversation_id=_conversation_id(params.get("conversationId")),
        partial_result_token=_token(params.get("partialResultToken"), "partialResultToken"),
        work_done_token=_token(params.get("workDoneToken"), "workDoneToken"),
    )


@dataclass(frozen=True)
class SearchParams:
    query: str
    limit: int = 10


MAX_QUERY_CHARS = 2_000


def parse_search_params(raw: Any) -> SearchParams:
    params = _object(raw, "params")
    query = params.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ParamsError("query must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ParamsError(f"query is longer than {MAX_QUERY_CHARS} characters")
    limit = params.get("limit", 10)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 50:
        raise ParamsError("limit must be an integer from 1 to 50")
    return SearchParams(query, limit)


@dataclass(frozen=True)
class NextEditParams:
    uri: str
    version: int
    position: Position


def parse_next_edit_params(raw: Any) -> NextEditParams:
    params = _object(raw, "params")
    document = _object(params.get("textDocument"), "textDocument")
    version = document.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ParamsError("textDocument.version must be an integer")
    return NextEditParams(
        uri=parse_uri(document.get("uri"), "textDocument.uri"),
        version=version,
        position=parse_position(params.get("position"), "position"),
    )


def parse_suggestion_id(raw: Any) -> str:
    """The `id` of a next-edit notification."""
    suggestion_id = _object(raw, "params").get("id")
    if not isinstance(suggestion_id, str) or not suggestion_id or len(suggestion_id) > 100:
        raise ParamsError("id must be a non-empty string of at most 100 characters")
    return suggestion_id


def parse_code_action_request(raw: Any) -> CodeActionRequest:
    data = _object(raw, "arguments")
    kind = data.get("kind")
    if kind not in ACTION_KINDS:
        raise ParamsError(f"kind must be one of {', '.join(ACTION_KINDS)}")
    version = data.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise ParamsError("version must be an integer")
    diagnostics = data.get("diagnostics") or []
    if not isinstance(diagnostics, list):
        raise ParamsError("diagnostics must be a list")
    if len(diagnostics) > MAX_DIAGNOSTICS:
        raise ParamsError(f"diagnostics has more than {MAX_DIAGNOSTICS} entries")
    return CodeActionRequest(
        uri=parse_uri(data.get("uri"), "uri"),
        range=parse_range(data.get("range")),
        kind=kind,
        version=version,
        diagnostics=tuple(parse_diagnostic(d, f"diagnostics[{n}]") for n, d in enumerate(diagnostics)),
        conversation_id=_conversation_id(data.get("conversationId")),
    )


def parse_diagnostic(value: Any, what: str) -> dict[str, Any]:
    """An LSP Diagnostic as plain JSON, checked in what the prompt and the tools read of it: its range,
    message, severity and source (the rest, such as `code` or `data`, is kept as it came)."""
    diagnostic = _object(value, what)
    parse_range(diagnostic.get("range"), f"{what}.range")
    message = diagnostic.get("message")
    if not isinstance(message, str):
        raise ParamsError(f"{what}.message must be a string")
    if len(message) > MAX_MESSAGE_CHARS:
        raise ParamsError(f"{what}.message is longer than {MAX_MESSAGE_CHARS} characters")
    severity = diagnostic.get("severity")
    if severity is not None and (isinstance(severity, bool) or not isinstance(severity, int)):
        raise ParamsError(f"{what}.severity must be an integer")
    if diagnostic.get("source") is not None and not isinstance(diagnostic["source"], str):
        raise ParamsError(f"{what}.source must be a string")
    return diagnostic


def _conversation_id(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ParamsError("conversationId must be a non-empty string")
    return value


def stats_json(stats: Any) -> dict[str, Any]:
    """A turn's figures (conversation.TurnStats) in the protocol's camelCase: the counters the engine
    reports per request, summed over the turn's `steps`, with the same names end to end."""
    return {
        "nPrompt": stats.n_prompt,
        "nReused": stats.n_reused,
        "nEvaluated": stats.n_evaluated,
        "nGenerated": stats.n_generated,
        "nDrafted": stats.n_drafted,
        "nAccepted": stats.n_accepted,
        "tPrefillMs": round(stats.t_prefill_ms, 1),
        "tFirstTokenMs": round(stats.t_first_token_ms, 1),
        "tDecodeMs": round(stats.t_decode_ms, 1),
        "steps": stats.steps,
    }
