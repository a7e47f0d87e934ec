---The llama-lsp protocol's custom names, declared once for Lua (docs/protocol.md has the payloads).

---The `assistant/status` notification's params, as the client decodes them.
---@class llama_lsp.StatusParams
---@field state "loading"|"ready"|"busy"|"error"
---@field message? string
---@field queue? integer
---@field lastStats? table       the last turn's stats (as a chat result's `stats`)
---@field installModel? string   with "error": the catalogue model whose installation is the fix
---@field warm? string[]         URIs (as the client opened them) of the open documents whose prompt is in
---                              the cache now; in every status once the model is ready, and a change to it
---                              sends a status

return {
  CLIENT_NAME = "llama_lsp",
  CHAT = "assistant/chat",
  STATS = "assistant/stats",
  STATUS = "assistant/status",
  SEARCH_CODEBASE = "assistant/searchCodebase",
  COMMAND_CODE_ACTION = "llamaLsp.codeAction",
  COMMAND_SHOW_ANSWER = "llamaLsp.showAnswer",
  REQUEST_CANCELLED = -32800,
}
