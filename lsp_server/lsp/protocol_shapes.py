"""llama-lsp's own protocol as data: each custom message (method or command, its params, result and partial
results), the shapes of their payloads field by field, the LSP error codes the clients tell apart, and the
code action kinds as the clients offer them.

This is the declaration the clients' protocol modules are generated from (`make generate`, dev/generate:
editors/vscode/src/protocol.ts, editors/nvim/lua/llama_lsp/protocol.lua, package.json's action commands and
docs/protocol.md's tables); tests/test_protocol_generated.py fails when one of them is stale. The names
are protocol.py's constants, which the server uses; the shapes are what the server sends and takes, written
for the clients (the server builds its payloads as plain JSON and parses params in protocol.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from lsprotocol import types

from ..assistant.actions import ACTIONS, Output
from . import protocol

# --- the type language -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Scalar:
    name: Literal["string", "integer", "number", "boolean", "null", "unknown", "never"]


@dataclass(frozen=True)
class StringLiteral:
    value: str


@dataclass(frozen=True)
class ListOf:
    item: Type


@dataclass(frozen=True)
class MapOf:
    """An object whose keys are any strings, each with a value of one type."""

    value: Type


@dataclass(frozen=True)
class Union:
    options: tuple[Type, ...]


@dataclass(frozen=True)
class Field:
    name: str  # as on the wire
    type: Type
    doc: str = ""
    optional: bool = False  # may be absent (not the same as null, which `type` says)


@dataclass(frozen=True)
class Inline:
    """An object with no name of its own."""

    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Interface:
    """A named object."""

    name: str
    doc: str
    fields: tuple[Field, ...]
    extends: Interface | None = None
    # LSP's own type, of which the TypeScript declares the part the server uses (the extension's
    # protocol module stays free of vscode and the language client) and Lua names Neovim's `lsp.<name>`.
    lsp: bool = False


@dataclass(frozen=True)
class Alias:
    """A named type that is no object: a union of literals, say."""

    name: str
    doc: str
    type: Type


Type: TypeAlias = Scalar | StringLiteral | ListOf | MapOf | Union | Inline | Interface | Alias

STRING, INTEGER, NUMBER = Scalar("string"), Scalar("integer"), Scalar("number")
BOOLEAN, NULL, UNKNOWN, NEVER = Scalar("boolean"), Scalar("null"), Scalar("unknown"), Scalar("never")


def one_of(*options: Type) -> Union:
    return Union(options)


def nullable(type_: Type) -> Union:
    return Union((type_, NULL))


def literals(*values: str) -> Union:
    return Union(tuple(StringLiteral(value) for value in values))


def obj(*fields: Field) -> Inline:
    return Inline(fields)


def field(name: str, type_: Type, doc: str = "") -> Field:
    return Field(name, type_, doc)


def optional(name: str, type_: Type, doc: str = "") -> Field:
    return Field(name, type_, doc, optional=True)


# --- LSP's own types, the part the server uses ------------------------------------------------------

Position = Interface("Position", "", (field("line", INTEGER), field("character", INTEGER)), lsp=True)
Range = Interface("Range", "", (field("start", Position), field("end", Position)), lsp=True)
TextEdit = Interface("TextEdit", "", (field("range", Range), field("newText", STRING)), lsp=True)
TextDocumentEdit = Interface(
    "TextDocumentEdit",
    "",
    (
        field("textDocument", obj(field("uri", STRING), field("version", nullable(INTEGER)))),
        field("edits", ListOf(TextEdit)),
    ),
    lsp=True,
)
CreateFile = Interface(
    "CreateFile",
    "",
    (
        field("kind", StringLiteral("create")),
        field("uri", STRING),
        optional("options", obj(optional("overwrite", BOOLEAN), optional("ignoreIfExists", BOOLEAN))),
    ),
    lsp=True,
)
WorkspaceEdit = Interface(
    "WorkspaceEdit",
    "The subset of LSP's WorkspaceEdit the server produces (documentChanges), plus plain `changes`.",
    (
        optional("documentChanges", ListOf(one_of(TextDocumentEdit, CreateFile))),
        optional("changes", MapOf(ListOf(TextEdit))),
    ),
    lsp=True,
)

# --- payloads --------------------------------------------------------------------------------------

TurnStats = Interface(
    "TurnStats",
    "One turn's figures: every counter summed over its model requests (`steps`), so `nReused / nPrompt` "
    "is the turn's cache reuse; `tFirstTokenMs` is the first request's time to its first token.",
    (
        field("nPrompt", INTEGER),
        field(
            "nReused",
            nullable(INTEGER),
            "null: a remote backend that does not report its cached tokens (unknown, not 0).",
        ),
        field("nEvaluated", INTEGER),
        field("nGenerated", INTEGER),
        field(
            "nDrafted",
            INTEGER,
            "Tokens drafted for speculative decoding; 0 when drafting is off or the backend does not draft.",
        ),
        field(
            "nAccepted",
            INTEGER,
            "Of `nDrafted`, the tokens the model agreed with (0 <= nAccepted <= nDrafted).",
        ),
        field("tPrefillMs", NUMBER),
        field("tFirstTokenMs", NUMBER),
        field("tDecodeMs", NUMBER),
        field("steps", INTEGER),
    ),
)

ChatParams = Interface(
    "ChatParams",
    "",
    (
        field("message", STRING, "Not blank; at most 100,000 characters."),
        optional("textDocument", obj(field("uri", STRING)), "An open document (`didOpen`)."),
        optional("range", Range, "Needs `textDocument`."),
        optional("conversationId", STRING, "Continue this conversation; without it a new one starts."),
        optional("partialResultToken", one_of(STRING, INTEGER), "Stream the answer as `$/progress`."),
        optional("workDoneToken", one_of(STRING, INTEGER)),
    ),
)

FinishReason = Alias("FinishReason", "", literals("stop", "length", "tool_calls", "cancelled", "error"))

ToolCall = Interface(
    "ToolCall",
    "",
    (field("name", STRING), field("arguments", MapOf(UNKNOWN)), field("result", STRING)),
)

Verification = Interface(
    "Verification",
    'Whether a proposed edit was checked with `verifyCommand` (the project\'s tests with "auto"), run by '
    "the server on a temporary copy of the folder with the edit applied (exit status 0 passes).",
    (
        field(
            "command", nullable(STRING), 'The command that ran; null when none is set, or "auto" found none.'
        ),
        optional(
            "reason",
            nullable(STRING),
            'With "auto": why that command (runner, interpreter, test '
            "files), or why none. Absent from older servers.",
        ),
        optional(
            "droppedTests",
            ListOf(STRING),
            "Write tests: the tests that failed on the code as it is, "
            "dropped from the file. Absent from older servers.",
        ),
        optional(
            "settledValues",
            ListOf(STRING),
            "Write tests: the expected values the code did not give, "
            'now what it gives ("test (line N): expected X, the code gives Y"). Absent from older '
            "servers.",
        ),
        optional(
            "rest",
            nullable(STRING),
            'With "auto": how the project\'s other test files went once the '
            "related ones passed. Absent from older servers.",
        ),
        field("passed", nullable(BOOLEAN), "null: not checked (no command set, or no edit to check)."),
        optional(
            "passedBefore",
            nullable(BOOLEAN),
            "The command on the code without the edit (Fix, "
            "Refactor, Document); null where it did not run. Absent from older servers.",
        ),
        field("attempts", INTEGER),
        optional(
            "sandbox",
            nullable(literals("bwrap", "none")),
            "The isolation the command ran under; null when it never ran. Absent from older servers.",
        ),
        field(
            "output",
            STRING,
            "What the last check printed, already trimmed by the server (its head and tail).",
        ),
        field(
            "summary",
            STRING,
            'One line for the user: "verified: `pytest -q` passed (attempt 2)", "not verified: ...".',
        ),
    ),
)

ChatResult = Interface(
    "ChatResult",
    "",
    (
        field("conversationId", STRING),
        field("content", STRING, "The answer, Markdown."),
        field("finishReason", FinishReason),
        field("toolCalls", ListOf(ToolCall)),
        optional("edit", WorkspaceEdit),
        optional("editError", STRING, "Instead of `edit`, when the document changed meanwhile."),
        optional("verification", Verification, "Only when the answer proposed an edit or a check ran."),
        field("stats", TurnStats),
    ),
)

ChatDelta = Interface(
    "ChatDelta",
    "`$/progress` value for a chat's partialResultToken: the deltas concatenate to `content`.",
    (field("delta", STRING),),
)

ServerState = Alias("ServerState", "", literals(*protocol.STATES))

StatusParams = Interface(
    "StatusParams",
    "",
    (
        field("state", ServerState),
        optional("message", STRING),
        optional("queue", INTEGER),
        optional("lastStats", TurnStats, "The last turn's stats (as a chat result's `stats`)."),
        optional("installModel", STRING, "With `error`: the catalogue model whose installation is the fix."),
        optional(
            "warm",
            ListOf(STRING),
            "The open documents whose prompt is in the model's cache now "
            "(background warming, the `warm` setting), by URI exactly as the client opened them: a first "
            "question about one evaluates only the question. Present in every notification once the model "
            "is ready; a change to it sends one.",
        ),
    ),
)

StatsParams = Alias(
    "StatsParams",
    "`assistant/stats` takes no params, but goes out with an empty object: the server's custom-method path "
    "drops a request that has no `params` member at all (seen with pygls 2.1), leaving it unanswered.",
    MapOf(NEVER),
)

CompletionStats = Interface(
    "CompletionStats",
    "One inline completion (`textDocument/inlineCompletion`) as `assistant/stats` reports it. `cached`: the "
    "server answered from its recent completions without the model; then only `tMs` is given.",
    (
        field("cached", BOOLEAN),
        field("tMs", NUMBER),
        optional("nPrompt", INTEGER),
        optional("nEvaluated", INTEGER),
        optional("nGenerated", INTEGER),
        optional("nDrafted", INTEGER, "As in TurnStats; absent from an older server."),
        optional("nAccepted", INTEGER),
        optional("tPrefillMs", NUMBER),
        optional("tDecodeMs", NUMBER),
        optional("finishReason", FinishReason),
    ),
)

NextEditStats = Interface(
    "NextEditStats",
    "Next-edit suggestions since the server started, as `assistant/stats` reports them.",
    (
        field("requests", INTEGER, "Requests answered (with a suggestion or null)."),
        field("suggested", INTEGER, "Of those, answered with a suggestion."),
        field("shown", INTEGER),
        field("accepted", INTEGER),
        field("rejected", INTEGER),
        field(
            "last",
            nullable(MapOf(UNKNOWN)),
            "The last request's figures (`tMs`, `nPrompt`, `nEvaluated`, `nGenerated`, `nDrafted`, "
            "`nAccepted`, `outcome`); null before the first.",
        ),
        optional(
            "warm",
            nullable(obj(field("uri", STRING), field("firstLine", INTEGER), field("version", INTEGER))),
            "The start of a suggestion's prompt the slot holds now: the window of `uri` from `firstLine`, "
            "which a suggestion for `version` starts with (read while the user typed); null: none yet.",
        ),
    ),
)

McpServerStats = Interface(
    "McpServerStats",
    "One configured MCP server as `assistant/stats` reports it.",
    (
        field("name", STRING),
        field("source", STRING, 'Where it is configured: "settings", ".vscode/mcp.json" or ".mcp.json".'),
        field(
            "state",
            literals("stopped", "starting", "running", "failed"),
            '"stopped": not started yet (a chat starts it), or stopped; "failed": it could not start, '
            "or it died.",
        ),
        field("tools", INTEGER, "The tools it lists (its last list while it is down)."),
        field("starts", INTEGER, "Times it was started: one, plus one per restart."),
        field("error", nullable(STRING), "Why it failed, with the last lines it wrote to stderr."),
    ),
)

McpStats = Interface(
    "McpStats",
    "The MCP servers and the tools the latest chat conversation was offered.",
    (
        field("servers", ListOf(McpServerStats), "In the order of the configuration."),
        field(
            "offered",
            ListOf(STRING),
            "The MCP tools the latest chat conversation was offered, as `server.tool` (before any: the "
            "first ones, up to the limit per conversation).",
        ),
        field(
            "leftOut",
            ListOf(STRING),
            "The other MCP tools: past the limit per conversation, or (`mcpToolChoice` "
            '`"relevant"`) not matching its first message.',
        ),
    ),
)

StatsResult = Interface(
    "StatsResult",
    "",
    (
        optional(
            "version",
            obj(field("server", STRING), field("native", nullable(STRING))),
            "What "
            "`llama-lsp --version` prints: the package, and the native library's build (null: not "
            "loaded). Absent from older servers.",
        ),
        field("state", ServerState),
        field("model", STRING),
        field("error", nullable(STRING)),
        field(
            "modelLoads",
            INTEGER,
            "Model loads since the server started: one, plus one per settings change "
            "that needs a new engine.",
        ),
        field("engine", nullable(MapOf(UNKNOWN))),
        field(
            "totals",
            obj(
                field("requests", INTEGER),
                field("nPrompt", INTEGER),
                field("nReused", nullable(INTEGER)),
                field("nEvaluated", INTEGER),
                field("nGenerated", INTEGER),
                field("nDrafted", INTEGER),
                field("nAccepted", INTEGER),
                field("tPrefillMs", NUMBER),
                field("tDecodeMs", NUMBER),
                field("steps", INTEGER),
                field("cacheHitRate", nullable(NUMBER)),
            ),
            "Every finished turn's figures summed; `cacheHitRate` is nReused / nPrompt over the same "
            "requests.",
        ),
        field("lastStats", nullable(TurnStats)),
        optional(
            "lastCompletion",
            nullable(CompletionStats),
            "The last inline completion's figures; null before the first one (absent from an older server).",
        ),
        optional("nextEdit", NextEditStats, "Absent from an older server."),
        optional("mcp", McpStats, "Absent from an older server."),
    ),
)

ActionKind = Alias(
    "ActionKind", "A code action kind (lsp_server/assistant/actions).", literals(*protocol.ACTION_KINDS)
)

CodeActionArgs = Interface(
    "CodeActionArgs",
    "The one argument of `llamaLsp.codeAction`, and the `data` of the server's code actions.",
    (
        field("uri", STRING),
        field("range", Range),
        field("kind", ActionKind),
        optional("version", INTEGER),
        optional(
            "diagnostics",
            ListOf(UNKNOWN),
            "LSP Diagnostics: a `range` and a string `message` at least; 1,000 at most.",
        ),
        optional(
            "conversationId",
            STRING,
            "Continue this chat conversation, so that the action sees what was said in it.",
        ),
    ),
)

ResolvedCodeActionData = Interface(
    "ResolvedCodeActionData",
    "The `data` of a code action after codeAction/resolve: its arguments, and an edit action's check.",
    (optional("verification", Verification),),
    extends=CodeActionArgs,
)

CodeActionResult = Interface(
    "CodeActionResult",
    "`llamaLsp.codeAction`'s result: the chat result, plus whether the edit was applied.",
    (
        optional("applied", BOOLEAN),
        optional("failureReason", STRING),
        optional(
            "verification",
            Verification,
            "Present for every edit action (fix, document, refactor, tests); absent for explain.",
        ),
    ),
    extends=ChatResult,
)

SearchCodebaseParams = Interface(
    "SearchCodebaseParams",
    "`assistant/searchCodebase`: the workspace index's chunks that best match `query`'s words.",
    (
        field(
            "query",
            STRING,
            f"Words, identifiers or a sentence; not blank, at most {protocol.MAX_QUERY_CHARS:,} characters.",
        ),
        optional("limit", INTEGER, "1 to 50; the server's default is 10."),
    ),
)

SearchCodebaseHit = Interface(
    "SearchCodebaseHit",
    "One chunk of a file: a Python definition or block, or a window of lines.",
    (
        field("uri", STRING),
        field("range", Range, "The chunk's whole lines: `end` is the start of the line after it."),
        field("score", NUMBER, "BM25, higher is better."),
        field("snippet", STRING, "The chunk's first 8 lines as the file is on disk."),
        optional("symbol", STRING, "`Class.method`, a function's name; absent for a window of lines."),
    ),
)

SearchCodebaseResult = Interface(
    "SearchCodebaseResult",
    "",
    (
        field("results", ListOf(SearchCodebaseHit), "Best first."),
        field(
            "indexed",
            obj(field("files", INTEGER), field("chunks", INTEGER), field("ready", BOOLEAN)),
            "`ready` is false while the index is being built (the results are those of the files indexed "
            "so far), and with `codebaseIndex` off or no folder open (then `files` is 0).",
        ),
    ),
)

NextEditParams = Interface(
    "NextEditParams",
    "`assistant/nextEdit`: the edit the user is likely to make next in this document, from their recent "
    "edits (the ones the server saw through `didChange`).",
    (
        field("textDocument", obj(field("uri", STRING), field("version", INTEGER)), "An open document."),
        field("position", Position, "The cursor."),
    ),
)

NextEdit = Interface(
    "NextEdit",
    "A suggested next edit, against the version the request named; apply it only to that version.",
    (
        field(
            "edits",
            ListOf(TextEdit),
            "One or more edits, in document order, not overlapping; they may be away from the cursor.",
        ),
        field("id", STRING, "Names it in `assistant/nextEditShown`, `...Accepted` and `...Rejected`."),
    ),
)

NextEditFeedback = Interface(
    "NextEditFeedback",
    "The params of `assistant/nextEditShown`, `assistant/nextEditAccepted` and `assistant/nextEditRejected`.",
    (field("id", STRING, "A `NextEdit`'s id."),),
)

ToolCallChoice = Alias(
    "ToolCallChoice",
    "The user's answer to `assistant/confirmToolCall`: run this call; run this tool's calls in this "
    "conversation; run this tool's calls while the server runs with this configuration; or not.",
    literals("allow", "allowConversation", "allowAlways", "deny"),
)

ConfirmToolCallParams = Interface(
    "ConfirmToolCallParams",
    "A call the model wants to make to an MCP tool that does not declare itself read-only.",
    (
        field("conversationId", STRING),
        field("server", STRING, "The MCP server's name, as configured."),
        field("tool", STRING, "The tool's name, as its server lists it."),
        field("name", STRING, "The tool as the model called it: `server.tool`."),
        field("arguments", MapOf(UNKNOWN), "The call's arguments, checked against the tool's schema."),
        field("description", STRING, "The tool's description, as its server gives it."),
    ),
)

ConfirmToolCallResult = Interface(
    "ConfirmToolCallResult",
    "",
    (field("choice", ToolCallChoice),),
)

ShowAnswerArgs = Interface(
    "ShowAnswerArgs",
    "The argument of `llamaLsp.showAnswer`.",
    (field("conversationId", STRING), field("title", STRING), field("content", STRING)),
)

# Every named type, in the order the generated files declare them.
SHAPES: tuple[Interface | Alias, ...] = (
    Position,
    Range,
    TextEdit,
    TextDocumentEdit,
    CreateFile,
    WorkspaceEdit,
    TurnStats,
    ChatParams,
    FinishReason,
    ToolCall,
    Verification,
    ChatResult,
    ChatDelta,
    ServerState,
    StatusParams,
    StatsParams,
    StatsResult,
    CompletionStats,
    ActionKind,
    CodeActionArgs,
    ResolvedCodeActionData,
    CodeActionResult,
    SearchCodebaseParams,
    SearchCodebaseHit,
    SearchCodebaseResult,
    NextEditParams,
    NextEdit,
    NextEditFeedback,
    NextEditStats,
    McpServerStats,
    McpStats,
    ToolCallChoice,
    ConfirmToolCallParams,
    ConfirmToolCallResult,
    ShowAnswerArgs,
)

# --- messages --------------------------------------------------------------------------------------

MessageKind = Literal["request", "notification", "command", "client command"]


@dataclass(frozen=True)
class Message:
    """A custom method, or a command of `workspace/executeCommand` ("client command": one the client
    runs, which the server names in a code action)."""

    name: str  # protocol.py's constant
    kind: MessageKind
    doc: str
    params: Type | None = None  # a command's one argument
    result: Type | None = None
    partial: Interface | None = None  # the `$/progress` value of a partialResultToken
    from_server: bool = False  # a notification or request the server sends


MESSAGES: tuple[Message, ...] = (
    Message(
        protocol.CHAT,
        "request",
        "A question, about a document or a selection or the workspace; the answer may propose an edit.",
        ChatParams,
        ChatResult,
        partial=ChatDelta,
    ),
    Message(
        protocol.STATS,
        "request",
        "The server's state, its engine, and the figures of the turns so far.",
        StatsParams,
        StatsResult,
    ),
    Message(
        protocol.SEARCH_CODEBASE,
        "request",
        "The workspace index's chunks that best match a query's words.",
        SearchCodebaseParams,
        SearchCodebaseResult,
    ),
    Message(
        protocol.NEXT_EDIT,
        "request",
        "The edit the user is likely to make next, from their recent edits; null: nothing to suggest (also "
        "for a stale version, and when a newer request or an edit superseded this one).",
        NextEditParams,
        nullable(NextEdit),
    ),
    Message(
        protocol.NEXT_EDIT_SHOWN,
        "notification",
        "The client showed the suggestion `id` (counted in `assistant/stats`).",
        NextEditFeedback,
    ),
    Message(
        protocol.NEXT_EDIT_ACCEPTED,
        "notification",
        "The user accepted the suggestion `id` (the client applied its edits).",
        NextEditFeedback,
    ),
    Message(
        protocol.NEXT_EDIT_REJECTED,
        "notification",
        "The user dismissed the suggestion `id` (Escape, or typing elsewhere).",
        NextEditFeedback,
    ),
    Message(
        protocol.STATUS,
        "notification",
        "The server's state (loading, ready, busy, error), sent when it changes.",
        StatusParams,
        from_server=True,
    ),
    Message(
        protocol.CONFIRM_TOOL_CALL,
        "request",
        "Asks the user whether a chat's call to an MCP tool that may change something may run. No answer "
        "(an error, MethodNotFound) is `deny`.",
        ConfirmToolCallParams,
        ConfirmToolCallResult,
        from_server=True,
    ),
    Message(
        protocol.COMMAND_CODE_ACTION,
        "command",
        "Resolves a code action and applies its edit through `workspace/applyEdit`.",
        CodeActionArgs,
        CodeActionResult,
    ),
    Message(
        protocol.COMMAND_SHOW_ANSWER,
        "client command",
        "The command of an answer in words (Explain): the client shows it as a conversation.",
        ShowAnswerArgs,
    ),
)

# --- error codes -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ErrorCode:
    name: str  # as LSP names it
    code: int
    doc: str  # when the server answers with it

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", int(self.code))  # lsprotocol's enums, as plain numbers


ERROR_CODES: tuple[ErrorCode, ...] = (
    ErrorCode(
        "InvalidRequest",
        types.ErrorCodes.InvalidRequest,
        "A second `initialize`; a request after `shutdown`.",
    ),
    ErrorCode(
        "MethodNotFound",
        types.ErrorCodes.MethodNotFound,
        "A method the server does not have (a server older than the client).",
    ),
    ErrorCode(
        "InvalidParams",
        types.ErrorCodes.InvalidParams,
        "Params that do not match this protocol; the message says which field.",
    ),
    ErrorCode(
        "RequestCancelled",
        types.LSPErrorCodes.RequestCancelled,
        "After `$/cancelRequest`, or when a newer request for the same action on the same document "
        "supersedes it.",
    ),
    ErrorCode(
        "ContentModified",
        types.LSPErrorCodes.ContentModified,
        "A stale document: not the version the request was about, or changed while the model worked.",
    ),
    ErrorCode(
        "RequestFailed",
        types.LSPErrorCodes.RequestFailed,
        "No model, a prompt larger than the context, no applicable edit, a block too long to write again, "
        "engine and backend errors; the message names the fix where there is one.",
    ),
)

# --- code actions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClientAction:
    """A code action kind as a client offers it as a command of its own."""

    kind: str  # CodeActionArgs.kind
    title: str  # offered as "Llama: <title>"
    lsp_kind: str  # its CodeActionKind
    answers: bool  # answers in words (shown as a conversation), not with an edit
    for_diagnostics: bool  # about the diagnostics in range, which go with the request


CLIENT_ACTIONS: tuple[ClientAction, ...] = tuple(
    ClientAction(
        kind=action.name,
        title=action.title,
        lsp_kind=action.lsp_kind,
        answers=action.output is Output.ANSWER,
        for_diagnostics=action.for_diagnostics,
    )
    for action in ACTIONS
)
