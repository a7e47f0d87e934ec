---The llama-lsp protocol's custom names, declared once for Lua (docs/protocol.md has the payloads).
return {
  CLIENT_NAME = "llama_lsp",
  CHAT = "assistant/chat",
  STATS = "assistant/stats",
  STATUS = "assistant/status",
  COMMAND_CODE_ACTION = "llamaLsp.codeAction",
  COMMAND_SHOW_ANSWER = "llamaLsp.showAnswer",
  REQUEST_CANCELLED = -32800,
}
