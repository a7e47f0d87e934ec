---Inline completion (ghost text) from the server's `textDocument/inlineCompletion`. On Neovim 0.12+
---Neovim's own `vim.lsp.inline_completion` shows it; on 0.10/0.11 this module does: a request after
---typing pauses, the suggestion as virtual text at the cursor, and a key that accepts it.
local compat = require("llama_lsp.compat")
local config = require("llama_lsp.config")
local keys = require("llama_lsp.keys")

local M = {}

local METHOD = "textDocument/inlineCompletion"
local HIGHLIGHT = "LlamaGhostText"
local NAMESPACE = vim.api.nvim_create_namespace("llama_lsp.completion")
local TRIGGER_AUTOMATIC = 2 -- the context's triggerKind; 1 is Invoked (by the user)

---@class llama_lsp.CompletionRequest
---@field client_id integer
---@field id? integer         the LSP request id, for $/cancelRequest
---@field bufnr integer
---@field tick integer        the buffer's changedtick when it was sent
---@field cursor integer[]    (1,0)-indexed, as nvim_win_get_cursor

---@class llama_lsp.Suggestion
---@field bufnr integer
---@field tick integer
---@field cursor integer[]
---@field text string         what accepting inserts at the cursor
---@field extmark integer

local state = {
  timer = nil, ---@type uv.uv_timer_t?  the debounce
  request = nil, ---@type llama_lsp.CompletionRequest?  the one in flight
  shown = nil, ---@type llama_lsp.Suggestion?
  mapped = {}, ---@type table<integer, string>  bufnr -> the accept key mapped there
  n_requests = 0,
}

local function set_highlight()
  vim.api.nvim_set_hl(0, HIGHLIGHT, { link = "Comment", default = true })
end
set_highlight()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("llama_lsp.completion", { clear = true }),
  callback = set_highlight,
})

---Neovim's own inline completion (0.12+), or nil where the plugin shows the ghost text itself.
---@return table?
function M.native()
  if vim.fn.has("nvim-0.12") == 1 then
    return vim.lsp.inline_completion
  end
end

---@return boolean
local function enabled()
  return config.options.completion.enabled == true
end

---Whether the server offers inline completion (an older llama-lsp does not).
---@param client vim.lsp.Client
---@return boolean
function M.advertised(client)
  local capabilities = client.server_capabilities or {}
  return capabilities.inlineCompletionProvider ~= nil and capabilities.inlineCompletionProvider ~= false
end

---@return boolean
local function in_insert_mode()
  return vim.api.nvim_get_mode().mode:sub(1, 1) == "i"
end

-- ---- showing and dismissing -------------------------------------------------------------------------

---Hide the suggestion, if one is shown.
function M.dismiss()
  local shown = state.shown
  state.shown = nil
  if shown and vim.api.nvim_buf_is_valid(shown.bufnr) then
    pcall(vim.api.nvim_buf_del_extmark, shown.bufnr, NAMESPACE, shown.extmark)
  end
end

---Stop the debounce and cancel the request in flight (the server stops generating).
local function cancel()
  if state.timer then
    state.timer:stop()
  end
  local req = state.request
  state.request = nil
  if req and req.id then
    local client = vim.lsp.get_client_by_id(req.client_id)
    if client then
      compat.cancel_request(client, req.id)
    end
  end
end

---Whether the buffer and the cursor are still where `at` (a request or a suggestion) was made.
---@param at { bufnr: integer, tick: integer, cursor: integer[] }
---@return boolean
local function still_at(at)
  return vim.api.nvim_get_current_buf() == at.bufnr
    and vim.api.nvim_buf_get_changedtick(at.bufnr) == at.tick
    and vim.deep_equal(vim.api.nvim_win_get_cursor(0), at.cursor)
end

---Whether a suggestion is shown at the cursor now.
---@return boolean
function M.visible()
  return state.shown ~= nil and still_at(state.shown)
end

---Virtual text can't show a tab as the buffer would: spaces instead.
---@param line string
---@return string
local function displayed(line)
  return (line:gsub("\t", string.rep(" ", vim.bo.tabstop)))
end

---@param req llama_lsp.CompletionRequest
---@param text string
local function show(req, text)
  M.dismiss()
  local lines = vim.split(text, "\n", { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    table.insert(virt_lines, { { displayed(lines[i]), HIGHLIGHT } })
  end
  local row, col = req.cursor[1] - 1, req.cursor[2]
  local mark = {
    virt_lines = #virt_lines > 0 and virt_lines or nil,
    hl_mode = "combine",
  }
  if lines[1] ~= "" then
    -- Inline: text right of the cursor moves over, as it will when the suggestion is accepted. In
    -- Insert mode the cursor shows before it.
    mark.virt_text = { { displayed(lines[1]), HIGHLIGHT } }
    mark.virt_text_pos = "inline"
  end
  local extmark = vim.api.nvim_buf_set_extmark(req.bufnr, NAMESPACE, row, col, mark)
  state.shown = { bufnr = req.bufnr, tick = req.tick, cursor = req.cursor, text = text, extmark = extmark }
end

---The text of the first item that inserts plain text at the cursor, the only kind the server sends.
---@param result any  InlineCompletionList or InlineCompletionItem[]
---@param position { line: integer, character: integer }
---@return string?
local function insertion(result, position)
  if type(result) ~= "table" then
    return nil
  end
  for _, item in ipairs(result.items or result) do
    local range = item.range
    local at_cursor = range == nil
      or (
        range.start.line == position.line
        and range.start.character == position.character
        and range["end"].line == position.line
        and range["end"].character == position.character
      )
    if type(item.insertText) == "string" and item.insertText ~= "" and at_cursor then
      return (item.insertText:gsub("\r\n", "\n"))
    end
  end
end

---@param req llama_lsp.CompletionRequest
local function on_result(req, position, err, result)
  if state.request ~= req then
    return -- cancelled, or a newer request went out
  end
  state.request = nil
  if err or not in_insert_mode() or not still_at(req) then
    return -- errors are in the server's log; a completion is not worth a message
  end
  local text = insertion(result, position)
  if text then
    show(req, text)
  end
end

-- ---- requesting ---------------------------------------------------------------------------------------

---Ask the server for a completion at the cursor now (the debounce does this while typing). Cancels the
---request in flight, if any.
---@param trigger_kind? integer  1: invoked by the user, 2 (default): automatic
function M.request(trigger_kind)
  if M.native() then
    return -- Neovim requests itself
  end
  cancel()
  M.dismiss()
  local bufnr = vim.api.nvim_get_current_buf()
  if not enabled() or not in_insert_mode() or vim.fn.pumvisible() == 1 then
    return
  end
  local client = require("llama_lsp").client_for(bufnr)
  if not client or not M.advertised(client) then
    return
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = trigger_kind or TRIGGER_AUTOMATIC }
  ---@type llama_lsp.CompletionRequest
  local req = {
    client_id = client.id,
    bufnr = bufnr,
    tick = vim.api.nvim_buf_get_changedtick(bufnr),
    cursor = vim.api.nvim_win_get_cursor(0),
  }
  state.request = req
  state.n_requests = state.n_requests + 1
  -- With the buffer, the client sends the pending changes first.
  local ok, id = compat.request(client, METHOD, params, function(err, result)
    on_result(req, params.position, err, result)
  end, bufnr)
  if not ok then
    state.request = nil
    return
  end
  req.id = id
end

---Typing or moving: the suggestion goes, and a new request follows once typing pauses.
local function on_typing()
  cancel()
  M.dismiss()
  if not enabled() then
    return
  end
  state.timer = state.timer or vim.uv.new_timer()
  state.timer:start(
    config.options.completion.debounce_ms,
    0,
    vim.schedule_wrap(function()
      M.request(TRIGGER_AUTOMATIC)
    end)
  )
end

local function on_leave()
  cancel()
  M.dismiss()
end

-- ---- accepting ----------------------------------------------------------------------------------------

---Insert the suggestion at the cursor and leave the cursor at its end. Returns whether there was one.
---@return boolean
function M.accept()
  local native = M.native()
  if native then
    return native.get()
  end
  if not M.visible() then
    M.dismiss()
    return false
  end
  local shown = assert(state.shown)
  M.dismiss()
  local lines = vim.split(shown.text, "\n", { plain = true })
  local row, col = shown.cursor[1] - 1, shown.cursor[2]
  vim.api.nvim_buf_set_text(shown.bufnr, row, col, row, col, lines)
  local last = lines[#lines]
  vim.api.nvim_win_set_cursor(0, { row + #lines, (#lines == 1 and col or 0) + #last })
  return true
end

local ACCEPT_DESC = "llama-lsp: accept the inline completion"

---The accept key's mapping: accept when a suggestion is shown, else what the key did before.
---@param key string
---@param before? table
---@return string
local function accept_or(key, before)
  local native = M.native()
  if native then
    if native.get() then -- Neovim applies it once the mapping returns
      return ""
    end
  elseif M.visible() then
    -- Through <Cmd>: an expression mapping may not change the text itself.
    return "<Cmd>lua require('llama_lsp.completion').accept()<CR>"
  end
  return keys.fall_back(key, before)
end

-- ---- attaching ----------------------------------------------------------------------------------------

---Set up (or, after a new setup(), redo) completion for a buffer the client serves.
---@param client vim.lsp.Client
---@param bufnr integer
function M.attach(client, bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local opts = config.options.completion
  local group = vim.api.nvim_create_augroup("llama_lsp.completion." .. bufnr, { clear = true })
  if state.mapped[bufnr] then
    pcall(vim.keymap.del, "i", state.mapped[bufnr], { buffer = bufnr })
    state.mapped[bufnr] = nil
  end
  if state.shown and state.shown.bufnr == bufnr then
    on_leave()
  end
  local native = M.native()
  if native then
    -- Neovim requests, shows and accepts; the setting turns it on or off for this server only.
    native.enable(opts.enabled and M.advertised(client), { client_id = client.id })
  end
  if not (opts.enabled and M.advertised(client)) then
    return
  end
  if not native then
    vim.api.nvim_create_autocmd({ "InsertEnter", "TextChangedI", "CursorMovedI" }, {
      group = group,
      buffer = bufnr,
      callback = on_typing,
    })
    vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, { group = group, buffer = bufnr, callback = on_leave })
  end
  local key = opts.accept_key
  if key then
    -- The mapping ours hides (Neovim 0.11 maps <Tab> to jump in a snippet, for one).
    local before = keys.hidden(bufnr, "i", key, ACCEPT_DESC)
    vim.keymap.set("i", key, function()
      return accept_or(key, before)
    end, { buffer = bufnr, expr = true, desc = ACCEPT_DESC })
    state.mapped[bufnr] = key
  end
end

---Apply the current options to every buffer the servers serve (after a new setup()).
function M.refresh()
  for _, client in ipairs(vim.lsp.get_clients({ name = require("llama_lsp.protocol").CLIENT_NAME })) do
    for bufnr in pairs(client.attached_buffers or {}) do
      M.attach(client, bufnr)
    end
  end
end

---What completion is doing now: for statuslines and tests.
function M.info()
  return {
    native = M.native() ~= nil,
    namespace = NAMESPACE,
    pending = state.request ~= nil,
    shown = state.shown and state.shown.text or nil,
    n_requests = state.n_requests,
  }
end

return M
