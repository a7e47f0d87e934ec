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

---One of `assistant/searchCodebase`'s results: a chunk of a workspace file.
---@class llama_lsp.SearchResult
---@field uri string
---@field range lsp.Range      the chunk's whole lines (`end` is the start of the line after it)
---@field score number         BM25, higher is better
---@field snippet string       the chunk's first 8 lines, as the file is on disk
---@field symbol? string       `Class.method`, a function's name; nil for a window of lines

---`assistant/searchCodebase`'s result: `results` best first; `indexed` says how far the index got.
---@class llama_lsp.SearchCodebaseResult
---@field results llama_lsp.SearchResult[]
---@field indexed { files: integer, chunks: integer, ready: boolean }  ready: false while being built

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
