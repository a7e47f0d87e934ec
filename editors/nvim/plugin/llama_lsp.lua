-- llama-lsp's commands. Nothing starts until require("llama_lsp").setup() is called.
if vim.g.loaded_llama_lsp then
  return
end
vim.g.loaded_llama_lsp = true

---The range a `:LlamaChat` was given, as an LSP range: the visual selection when the command came from
---visual mode (character-wise when it was), else whole lines.
local function command_range(opts)
  if opts.range == 0 then
    return nil
  end
  local client = require("llama_lsp").client_for(0)
  local encoding = client and client.offset_encoding or "utf-16"
  local first, last = vim.api.nvim_buf_get_mark(0, "<"), vim.api.nvim_buf_get_mark(0, ">")
  local from_visual = first[1] == opts.line1 and last[1] == opts.line2 and vim.fn.visualmode() == "v"
  if not from_visual then
    local last_line = vim.api.nvim_buf_get_lines(0, opts.line2 - 1, opts.line2, false)[1] or ""
    first, last = { opts.line1, 0 }, { opts.line2, math.max(#last_line - 1, 0) }
  end
  return vim.lsp.util.make_given_range_params(first, last, 0, encoding).range
end

vim.api.nvim_create_user_command("LlamaChat", function(opts)
  require("llama_lsp.chat").ask(opts.args, { range = command_range(opts) })
end, { nargs = "*", range = true, desc = "Ask llama-lsp about this file, or the selected lines" })

vim.api.nvim_create_user_command("LlamaStop", function()
  require("llama_lsp.chat").stop()
end, { desc = "Stop llama-lsp's answer" })

vim.api.nvim_create_user_command("LlamaNew", function()
  require("llama_lsp.chat").new()
end, { desc = "Start a new llama-lsp conversation" })

vim.api.nvim_create_user_command("LlamaApply", function()
  require("llama_lsp.chat").apply()
end, { desc = "Apply the edit llama-lsp's last answer proposed" })

vim.api.nvim_create_user_command("LlamaSearch", function(opts)
  require("llama_lsp.search").search(opts.args)
end, { nargs = "*", desc = "Search the workspace with llama-lsp's index; the results go to the quickfix list" })

vim.api.nvim_create_user_command("LlamaCheckOutput", function()
  require("llama_lsp.verification").show_output()
end, { desc = "Show what llama-lsp's last edit check printed" })

vim.api.nvim_create_user_command("LlamaTrust", function(opts)
  require("llama_lsp").trust(true, opts.args ~= "" and opts.args or nil)
end, { nargs = "?", complete = "dir", desc = "Trust this folder: llama-lsp's checks may run its tests" })

vim.api.nvim_create_user_command("LlamaUntrust", function(opts)
  require("llama_lsp").trust(false, opts.args ~= "" and opts.args or nil)
end, { nargs = "?", complete = "dir", desc = "Take back the trust in this folder: llama-lsp's checks stop" })

vim.api.nvim_create_user_command("LlamaInstall", function(opts)
  require("llama_lsp.install").install({
    wheel = opts.args ~= "" and opts.args or nil,
    -- Headless (lazy.nvim's build step) waits anyway.
    wait = opts.bang or nil,
  })
end, {
  nargs = "?",
  bang = true,
  complete = "file",
  desc = "Install the llama-lsp server into Neovim's data directory (!: wait for it)",
})
