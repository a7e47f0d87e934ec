---llama-lsp's own LSP methods, commands and payloads, and the code action kinds, for the Neovim plugin
---(docs/protocol.md documents them). LSP's own types are Neovim's (`lsp.Range`, ...). Generated from
---lsp_server/lsp/protocol_shapes.py, `make generate`: edit the declarations there, not this file.

---One turn's figures: every counter summed over its model requests (`steps`), so `nReused / nPrompt` is the
---turn's cache reuse; `tFirstTokenMs` is the first request's time to its first token.
---@class llama_lsp.TurnStats
---@field nPrompt integer
---@field nReused integer|nil  null: a remote backend that does not report its cached tokens (unknown, not 0).
---@field nEvaluated integer
---@field nGenerated integer
---@field nDrafted integer     Tokens drafted for speculative decoding; 0 when drafting is off or the backend
---                            does not draft.
---@field nAccepted integer    Of `nDrafted`, the tokens the model agreed with (0 <= nAccepted <= nDrafted).
---@field tPrefillMs number
---@field tFirstTokenMs number
---@field tDecodeMs number
---@field steps integer

---@class llama_lsp.ChatParams
---@field message string                     Not blank; at most 100,000 characters.
---@field textDocument? { uri: string }      An open document (`didOpen`).
---@field range? lsp.Range                   Needs `textDocument`.
---@field conversationId? string             Continue this conversation; without it a new one starts.
---@field partialResultToken? string|integer Stream the answer as `$/progress`.
---@field workDoneToken? string|integer

---@alias llama_lsp.FinishReason "stop"|"length"|"tool_calls"|"cancelled"|"error"

---@class llama_lsp.ToolCall
---@field name string
---@field arguments table<string, any>
---@field result string

---Whether a proposed edit was checked with `verifyCommand` (the project's tests with "auto"), run by the
---server on a temporary copy of the folder with the edit applied (exit status 0 passes).
---@class llama_lsp.Verification
---@field command string|nil          The command that ran; null when none is set, or "auto" found none.
---@field reason? string|nil          With "auto": why that command (runner, interpreter, test files), or why
---                                   none. Absent from older servers.
---@field droppedTests? string[]      Write tests: the tests that failed on the code as it is, dropped from
---                                   the file. Absent from older servers.
---@field settledValues? string[]     Write tests: the expected values the code did not give, now what it
---                                   gives ("test (line N): expected X, the code gives Y"). Absent from older
---                                   servers.
---@field rest? string|nil            With "auto": how the project's other test files went once the related
---                                   ones passed. Absent from older servers.
---@field passed boolean|nil          null: not checked (no command set, or no edit to check).
---@field passedBefore? boolean|nil   The command on the code without the edit (Fix, Refactor, Document); null
---                                   where it did not run. Absent from older servers.
---@field attempts integer
---@field sandbox? "bwrap"|"none"|nil The isolation the command ran under; null when it never ran. Absent from
---                                   older servers.
---@field output string               What the last check printed, already trimmed by the server (its head and
---                                   tail).
---@field summary string              One line for the user: "verified: `pytest -q` passed (attempt 2)", "not
---                                   verified: ...".

---@class llama_lsp.ChatResult
---@field conversationId string
---@field content string                 The answer, Markdown.
---@field finishReason llama_lsp.FinishReason
---@field toolCalls llama_lsp.ToolCall[]
---@field edit? lsp.WorkspaceEdit
---@field editError? string              Instead of `edit`, when the document changed meanwhile.
---@field verification? llama_lsp.Verification Only when the answer proposed an edit or a check ran.
---@field stats llama_lsp.TurnStats

---`$/progress` value for a chat's partialResultToken: the deltas concatenate to `content`.
---@class llama_lsp.ChatDelta
---@field delta string

---@alias llama_lsp.ServerState "loading"|"ready"|"busy"|"error"

---@class llama_lsp.StatusParams
---@field state llama_lsp.ServerState
---@field message? string
---@field queue? integer
---@field lastStats? llama_lsp.TurnStats The last turn's stats (as a chat result's `stats`).
---@field installModel? string           With `error`: the catalogue model whose installation is the fix.
---@field warm? string[]                 The open documents whose prompt is in the model's cache now
---                                      (background warming, the `warm` setting), by URI exactly as the
---                                      client opened them: a first question about one evaluates only the
---                                      question. Present in every notification once the model is ready; a
---                                      change to it sends one.

---`assistant/stats` takes no params, but goes out with an empty object: the server's custom-method path drops
---a request that has no `params` member at all (seen with pygls 2.1), leaving it unanswered.
---@alias llama_lsp.StatsParams table<string, nil>

---@class llama_lsp.StatsResult
---@field version? { server: string, native: string|nil } What `llama-lsp --version` prints: the package, and
---                                          the native library's build (null: not loaded). Absent from older
---                                          servers.
---@field state llama_lsp.ServerState
---@field model string
---@field error string|nil
---@field modelLoads integer                 Model loads since the server started: one, plus one per settings
---                                          change that needs a new engine.
---@field engine table<string, any>|nil
---@field totals llama_lsp.StatsResultTotals Every finished turn's figures summed; `cacheHitRate` is nReused /
---                                          nPrompt over the same requests.
---@field lastStats llama_lsp.TurnStats|nil
---@field lastCompletion? llama_lsp.CompletionStats|nil The last inline completion's figures; null before the
---                                          first one (absent from an older server).
---@field nextEdit? llama_lsp.NextEditStats  Absent from an older server.
---@field mcp? llama_lsp.McpStats            Absent from an older server.

---One inline completion (`textDocument/inlineCompletion`) as `assistant/stats` reports it. `cached`: the
---server answered from its recent completions without the model; then only `tMs` is given.
---@class llama_lsp.CompletionStats
---@field cached boolean
---@field tMs number
---@field nPrompt? integer
---@field nEvaluated? integer
---@field nGenerated? integer
---@field nDrafted? integer   As in TurnStats; absent from an older server.
---@field nAccepted? integer
---@field tPrefillMs? number
---@field tDecodeMs? number
---@field finishReason? llama_lsp.FinishReason

---A code action kind (lsp_server/assistant/actions).
---@alias llama_lsp.ActionKind "explain"|"fix"|"document"|"refactor"|"tests"

---The one argument of `llamaLsp.codeAction`, and the `data` of the server's code actions.
---@class llama_lsp.CodeActionArgs
---@field uri string
---@field range lsp.Range
---@field kind llama_lsp.ActionKind
---@field version? integer
---@field diagnostics? any[]        LSP Diagnostics: a `range` and a string `message` at least; 1,000 at most.
---@field conversationId? string    Continue this chat conversation, so that the action sees what was said in
---                                 it.

---The `data` of a code action after codeAction/resolve: its arguments, and an edit action's check.
---@class llama_lsp.ResolvedCodeActionData : llama_lsp.CodeActionArgs
---@field verification? llama_lsp.Verification

---`llamaLsp.codeAction`'s result: the chat result, plus whether the edit was applied.
---@class llama_lsp.CodeActionResult : llama_lsp.ChatResult
---@field applied? boolean
---@field failureReason? string
---@field verification? llama_lsp.Verification Present for every edit action (fix, document, refactor, tests);
---                             absent for explain.

---`assistant/searchCodebase`: the workspace index's chunks that best match `query`'s words.
---@class llama_lsp.SearchCodebaseParams
---@field query string   Words, identifiers or a sentence; not blank, at most 2,000 characters.
---@field limit? integer 1 to 50; the server's default is 10.

---One chunk of a file: a Python definition or block, or a window of lines.
---@class llama_lsp.SearchCodebaseHit
---@field uri string
---@field range lsp.Range The chunk's whole lines: `end` is the start of the line after it.
---@field score number    BM25, higher is better.
---@field snippet string  The chunk's first 8 lines as the file is on disk.
---@field symbol? string  `Class.method`, a function's name; absent for a window of lines.

---@class llama_lsp.SearchCodebaseResult
---@field results llama_lsp.SearchCodebaseHit[] Best first.
---@field indexed { files: integer, chunks: integer, ready: boolean } `ready` is false while the index is
---                                  being built (the results are those of the files indexed so far), and with
---                                  `codebaseIndex` off or no folder open (then `files` is 0).

---`assistant/nextEdit`: the edit the user is likely to make next in this document, from their recent edits
---(the ones the server saw through `didChange`).
---@class llama_lsp.NextEditParams
---@field textDocument { uri: string, version: integer } An open document.
---@field position lsp.Position The cursor.

---A suggested next edit, against the version the request named; apply it only to that version.
---@class llama_lsp.NextEdit
---@field edits lsp.TextEdit[] One or more edits, in document order, not overlapping; they may be away from
---                            the cursor.
---@field id string            Names it in `assistant/nextEditShown`, `...Accepted` and `...Rejected`.

---The params of `assistant/nextEditShown`, `assistant/nextEditAccepted` and `assistant/nextEditRejected`.
---@class llama_lsp.NextEditFeedback
---@field id string A `NextEdit`'s id.

---Next-edit suggestions since the server started, as `assistant/stats` reports them.
---@class llama_lsp.NextEditStats
---@field requests integer            Requests answered (with a suggestion or null).
---@field suggested integer           Of those, answered with a suggestion.
---@field shown integer
---@field accepted integer
---@field rejected integer
---@field last table<string, any>|nil The last request's figures (`tMs`, `nPrompt`, `nEvaluated`,
---                                   `nGenerated`, `nDrafted`, `nAccepted`, `outcome`); null before the
---                                   first.
---@field warm? { uri: string, firstLine: integer, version: integer }|nil The start of a suggestion's prompt
---                                   the slot holds now: the window of `uri` from `firstLine`, which a
---                                   suggestion for `version` starts with (read while the user typed); null:
---                                   none yet.

---One configured MCP server as `assistant/stats` reports it.
---@class llama_lsp.McpServerStats
---@field name string
---@field source string    Where it is configured: "settings", ".vscode/mcp.json" or ".mcp.json".
---@field state "stopped"|"starting"|"running"|"failed" "stopped": not started yet (a chat starts it), or
---                        stopped; "failed": it could not start, or it died.
---@field tools integer    The tools it lists (its last list while it is down).
---@field starts integer   Times it was started: one, plus one per restart.
---@field error string|nil Why it failed, with the last lines it wrote to stderr.

---The MCP servers and the tools the latest chat conversation was offered.
---@class llama_lsp.McpStats
---@field servers llama_lsp.McpServerStats[] In the order of the configuration.
---@field offered string[]                   The MCP tools the latest chat conversation was offered, as
---                                          `server.tool` (before any: the first ones, up to the limit per
---                                          conversation).
---@field leftOut string[]                   The other MCP tools: past the limit per conversation, or
---                                          (`mcpToolChoice` `"relevant"`) not matching its first message.

---The user's answer to `assistant/confirmToolCall`: run this call; run this tool's calls in this
---conversation; run this tool's calls while the server runs with this configuration; or not.
---@alias llama_lsp.ToolCallChoice "allow"|"allowConversation"|"allowAlways"|"deny"

---A call the model wants to make to an MCP tool that does not declare itself read-only.
---@class llama_lsp.ConfirmToolCallParams
---@field conversationId string
---@field server string                The MCP server's name, as configured.
---@field tool string                  The tool's name, as its server lists it.
---@field name string                  The tool as the model called it: `server.tool`.
---@field arguments table<string, any> The call's arguments, checked against the tool's schema.
---@field description string           The tool's description, as its server gives it.

---@class llama_lsp.ConfirmToolCallResult
---@field choice llama_lsp.ToolCallChoice

---The argument of `llamaLsp.showAnswer`.
---@class llama_lsp.ShowAnswerArgs
---@field conversationId string
---@field title string
---@field content string

---@class llama_lsp.StatsResultTotals
---@field requests integer
---@field nPrompt integer
---@field nReused integer|nil
---@field nEvaluated integer
---@field nGenerated integer
---@field nDrafted integer
---@field nAccepted integer
---@field tPrefillMs number
---@field tDecodeMs number
---@field steps integer
---@field cacheHitRate number|nil

---One of the server's code action kinds (lsp_server/assistant/actions).
---@class llama_lsp.Action
---@field kind llama_lsp.ActionKind
---@field title string              Offered as "Llama: <title>".
---@field lsp_kind string           Its LSP CodeActionKind.
---@field answers boolean           The server answers in words instead of with an edit.
---@field for_diagnostics boolean   About the diagnostics in range, which go with the request.

return {
  ---The name `vim.lsp` knows the plugin's clients by.
  CLIENT_NAME = "llama_lsp",
  ---A question, about a document or a selection or the workspace; the answer may propose an edit.
  CHAT = "assistant/chat",
  ---The server's state, its engine, and the figures of the turns so far.
  STATS = "assistant/stats",
  ---The workspace index's chunks that best match a query's words.
  SEARCH_CODEBASE = "assistant/searchCodebase",
  ---The edit the user is likely to make next, from their recent edits; null: nothing to suggest (also for a
  ---stale version, and when a newer request or an edit superseded this one).
  NEXT_EDIT = "assistant/nextEdit",
  ---The client showed the suggestion `id` (counted in `assistant/stats`).
  NEXT_EDIT_SHOWN = "assistant/nextEditShown",
  ---The user accepted the suggestion `id` (the client applied its edits).
  NEXT_EDIT_ACCEPTED = "assistant/nextEditAccepted",
  ---The user dismissed the suggestion `id` (Escape, or typing elsewhere).
  NEXT_EDIT_REJECTED = "assistant/nextEditRejected",
  ---The server's state (loading, ready, busy, error), sent when it changes.
  STATUS = "assistant/status",
  ---Asks the user whether a chat's call to an MCP tool that may change something may run. No answer (an
  ---error, MethodNotFound) is `deny`.
  CONFIRM_TOOL_CALL = "assistant/confirmToolCall",
  ---Resolves a code action and applies its edit through `workspace/applyEdit`.
  COMMAND_CODE_ACTION = "llamaLsp.codeAction",
  ---The command of an answer in words (Explain): the client shows it as a conversation.
  COMMAND_SHOW_ANSWER = "llamaLsp.showAnswer",
  -- The LSP error codes the server answers with
  ---A second `initialize`; a request after `shutdown`.
  INVALID_REQUEST = -32600,
  ---A method the server does not have (a server older than the client).
  METHOD_NOT_FOUND = -32601,
  ---Params that do not match this protocol; the message says which field.
  INVALID_PARAMS = -32602,
  ---After `$/cancelRequest`, or when a newer request for the same action on the same document supersedes it.
  REQUEST_CANCELLED = -32800,
  ---A stale document: not the version the request was about, or changed while the model worked.
  CONTENT_MODIFIED = -32801,
  ---No model, a prompt larger than the context, no applicable edit, a block too long to write again, engine
  ---and backend errors; the message names the fix where there is one.
  REQUEST_FAILED = -32803,
  ---@type llama_lsp.Action[]
  ACTIONS = {
    {
      kind = "explain",
      title = "Explain",
      lsp_kind = "refactor.llama.explain",
      answers = true,
      for_diagnostics = false,
    },
    {
      kind = "fix",
      title = "Fix",
      lsp_kind = "quickfix",
      answers = false,
      for_diagnostics = true,
    },
    {
      kind = "document",
      title = "Document",
      lsp_kind = "refactor.rewrite.llama.document",
      answers = false,
      for_diagnostics = false,
    },
    {
      kind = "refactor",
      title = "Refactor",
      lsp_kind = "refactor.rewrite.llama.refactor",
      answers = false,
      for_diagnostics = false,
    },
    {
      kind = "tests",
      title = "Write tests",
      lsp_kind = "refactor.llama.tests",
      answers = false,
      for_diagnostics = false,
    },
  },
}
