---Next-edit suggestions (`assistant/nextEdit`): once typing pauses in a buffer the server serves, and
---right after a suggestion is accepted (to chain the next), the plugin asks for the edit the user is
---likely to make next. The server answers with edits against the version it was asked about, often away
---from the cursor (the rest of a rename). They show as extmarks: the text they replace struck through,
---the new text beside or below it, a sign, and a hint of what <Tab> does. While one is shown, <Tab> goes
---to it, then applies it; <Esc> dismisses it; any other change to the buffer dismisses it too. Every
---suggestion shown ends accepted or rejected, and the server counts each.
local compat = require("llama_lsp.compat")
local config = require("llama_lsp.config")
local keys = require("llama_lsp.keys")
local protocol = require("llama_lsp.protocol")

local M = {}

local NAMESPACE = vim.api.nvim_create_namespace("llama_lsp.next_edit")
-- The server's default for `nextEditDelayMs` and its bounds (lsp_server/lsp/settings.py).
local DEFAULT_DELAY_MS, MIN_DELAY_MS, MAX_DELAY_MS = 400, 100, 5000
local ACCEPT_DESC = "llama-lsp: go to the next-edit suggestion, or accept it"
local DISMISS_DESC = "llama-lsp: dismiss the next-edit suggestion"
local SIGN = "»"

-- Linked to standard groups, so that any colorscheme colours them; `default`: a user's own wins.
local HIGHLIGHTS = {
  LlamaNextEditDelete = { link = "DiffDelete" }, -- the text a suggestion replaces
  LlamaNextEditStrike = { strikethrough = true }, -- over it, so that it reads as removed in any colours
  LlamaNextEditAdd = { link = "DiffAdd" }, -- the text it puts there
  LlamaNextEditSign = { link = "DiagnosticSignHint" },
  LlamaNextEditHint = { link = "Comment" }, -- what the accept key does
}

local function set_highlights()
  for name, attributes in pairs(HIGHLIGHTS) do
    vim.api.nvim_set_hl(0, name, vim.tbl_extend("force", attributes, { default = true }))
  end
end
set_highlights()
vim.api.nvim_create_autocmd("ColorScheme", {
  group = vim.api.nvim_create_augroup("llama_lsp.next_edit", { clear = true }),
  callback = set_highlights,
})

---@class llama_lsp.NextEditRequest
---@field client_id integer
---@field id? integer       the LSP request id, for $/cancelRequest
---@field bufnr integer
---@field version integer   the LSP version of the buffer it was asked about

---One edit of a suggestion where the buffer has it: 0-based rows, byte columns.
---@class llama_lsp.PlacedEdit
---@field start_row integer
---@field start_col integer
---@field end_row integer
---@field end_col integer
---@field new_text string

---@class llama_lsp.ShownNextEdit
---@field id string
---@field client_id integer
---@field bufnr integer
---@field version integer            the only version its edits apply to
---@field edits lsp.TextEdit[]       as the server sent them
---@field placed llama_lsp.PlacedEdit[]
---@field taken llama_lsp.TakenKey[] the keys mapped while it is shown
---@field hint? integer              the extmark that says what the accept key does

local state = {
  timer = nil, ---@type uv.uv_timer_t?  the pause in typing
  request = nil, ---@type llama_lsp.NextEditRequest?  the one in flight
  shown = nil, ---@type llama_lsp.ShownNextEdit?
  seen_tick = {}, ---@type table<integer, integer>  bufnr -> the changedtick already handled
  unsupported = {}, ---@type table<integer, true>  client ids of servers without assistant/nextEdit
  n_requests = 0,
  last_answer = nil, ---@type { err?: table, result?: table }?  for tests and :checkhealth
}

---Whether suggestions are on: the `nextEdit` server setting, read where the others are.
---@return boolean
function M.enabled()
  return config.options.init_options.nextEdit ~= false
end

---The pause in typing before a request: the `nextEditDelayMs` server setting.
---@return integer
function M.delay_ms()
  local delay = tonumber(config.options.init_options.nextEditDelayMs) or DEFAULT_DELAY_MS
  return math.floor(math.min(math.max(delay, MIN_DELAY_MS), MAX_DELAY_MS))
end

---@param client_id integer
---@param method string
---@param id string
local function tell(client_id, method, id)
  local client = vim.lsp.get_client_by_id(client_id)
  if client then
    compat.notify(client, method, { id = id })
  end
end

-- ---- placing a suggestion in the buffer -------------------------------------------------------------

---An LSP position as (row, byte column) in the buffer, or nil where the buffer has no such position. The
---end of the buffer may be given as the line after the last.
---@return integer? row, integer? col
local function buffer_position(bufnr, position, encoding)
  local row, character = position.line, position.character
  if type(row) ~= "number" or type(character) ~= "number" or row < 0 or character < 0 then
    return nil
  end
  local line_count = vim.api.nvim_buf_line_count(bufnr)
  if row == line_count and character == 0 then
    local last = vim.api.nvim_buf_get_lines(bufnr, line_count - 1, line_count, false)[1]
    return line_count - 1, #last
  end
  if row >= line_count then
    return nil
  end
  local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1]
  local col = compat.byte_index(line, character, encoding)
  if not col then
    return nil
  end
  return row, col
end

---The suggestion's edits where the buffer has them, or nil when any of them does not fit the buffer (a
---suggestion is shown whole or not at all).
---@param bufnr integer
---@param edits any
---@param encoding string
---@return llama_lsp.PlacedEdit[]?
function M.place(bufnr, edits, encoding)
  if type(edits) ~= "table" or #edits == 0 then
    return nil
  end
  local placed = {}
  for _, edit in ipairs(edits) do
    local range = type(edit) == "table" and edit.range
    if type(range) ~= "table" or type(edit.newText) ~= "string" then
      return nil
    end
    local start_row, start_col = buffer_position(bufnr, range.start or {}, encoding)
    local end_row, end_col = buffer_position(bufnr, range["end"] or {}, encoding)
    if not (start_row and end_row) or end_row < start_row or (end_row == start_row and end_col < start_col) then
      return nil
    end
    local last = placed[#placed]
    if last and (start_row < last.end_row or (start_row == last.end_row and start_col < last.end_col)) then
      return nil -- out of order or overlapping: not what the protocol sends
    end
    table.insert(placed, {
      start_row = start_row,
      start_col = start_col,
      end_row = end_row,
      end_col = end_col,
      new_text = (edit.newText:gsub("\r\n?", "\n")),
    })
  end
  return placed
end

---Virtual text can't show a tab as the buffer would: spaces instead.
---@param bufnr integer
---@param line string
---@return string
local function displayed(bufnr, line)
  return (line:gsub("\t", string.rep(" ", vim.bo[bufnr].tabstop)))
end

---The edit that changes the cursor's line, if any.
---@param shown llama_lsp.ShownNextEdit
---@return llama_lsp.PlacedEdit?
local function edit_at_cursor(shown)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  for _, edit in ipairs(shown.placed) do
    if row >= edit.start_row and row <= edit.end_row then
      return edit
    end
  end
end

---The edit the accept key goes to: the first at or below the cursor, else the first.
---@param shown llama_lsp.ShownNextEdit
---@return llama_lsp.PlacedEdit
local function target(shown)
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  for _, edit in ipairs(shown.placed) do
    if edit.start_row >= row then
      return edit
    end
  end
  return shown.placed[1]
end

---@param key string|false
---@return string?
local function key_name(key)
  return key and key ~= "" and key or nil
end

---The hint of what the accept key does: at the end of the cursor's line while the suggestion is away
---from it, at the end of the suggestion's line once the cursor is there.
---@param shown llama_lsp.ShownNextEdit
local function update_hint(shown)
  if shown.hint then
    pcall(vim.api.nvim_buf_del_extmark, shown.bufnr, NAMESPACE, shown.hint)
    shown.hint = nil
  end
  local opts = config.options.next_edit
  local accept, dismiss = key_name(opts.accept_key), key_name(opts.dismiss_key)
  if vim.api.nvim_get_current_buf() ~= shown.bufnr or not accept then
    return
  end
  local row, text
  local here = edit_at_cursor(shown)
  if here then
    row = here.start_row
    text = accept .. ": accept the suggested edit" .. (dismiss and (", " .. dismiss .. ": dismiss it") or "")
  else
    row = vim.api.nvim_win_get_cursor(0)[1] - 1
    text = string.format("%s: go to the suggested edit (line %d)", accept, target(shown).start_row + 1)
  end
  shown.hint = vim.api.nvim_buf_set_extmark(shown.bufnr, NAMESPACE, row, 0, {
    virt_text = { { "  " .. text, "LlamaNextEditHint" } },
    virt_text_pos = "eol",
    hl_mode = "combine",
  })
end

---Draw one edit: the text it replaces struck through; the new text beside it (inside a line) or the
---lines as they will read below it (across lines).
---@param bufnr integer
---@param edit llama_lsp.PlacedEdit
local function draw(bufnr, edit)
  local replaces = edit.start_row ~= edit.end_row or edit.start_col ~= edit.end_col
  if replaces then
    for _, group in ipairs({ "LlamaNextEditDelete", "LlamaNextEditStrike" }) do
      vim.api.nvim_buf_set_extmark(bufnr, NAMESPACE, edit.start_row, edit.start_col, {
        end_row = edit.end_row,
        end_col = edit.end_col,
        hl_group = group,
        hl_mode = "combine",
      })
    end
  end
  local new_lines = vim.split(edit.new_text, "\n", { plain = true })
  if #new_lines == 1 and edit.start_row == edit.end_row then
    if edit.new_text ~= "" then
      vim.api.nvim_buf_set_extmark(bufnr, NAMESPACE, edit.end_row, edit.end_col, {
        virt_text = { { displayed(bufnr, edit.new_text), "LlamaNextEditAdd" } },
        virt_text_pos = "inline",
        hl_mode = "combine",
      })
    end
    return
  end
  local old = vim.api.nvim_buf_get_lines(bufnr, edit.start_row, edit.end_row + 1, false)
  local before, after = old[1]:sub(1, edit.start_col), old[#old]:sub(edit.end_col + 1)
  local new = vim.split(before .. edit.new_text .. after, "\n", { plain = true })
  -- Lines the edit leaves as they are (the one a line is added before or after) are not shown again.
  local same_first, same_last = 0, 0
  while same_first < math.min(#old, #new) and old[same_first + 1] == new[same_first + 1] do
    same_first = same_first + 1
  end
  while
    same_first + same_last < math.min(#old, #new) and old[#old - same_last] == new[#new - same_last]
  do
    same_last = same_last + 1
  end
  local shown_lines = vim.list_slice(new, same_first + 1, #new - same_last)
  if #shown_lines == 0 then
    return
  end
  -- Below the last line it changes; above the first line it keeps after it, where it only adds lines.
  local row, above = edit.end_row - same_last, false
  if same_last > 0 then
    row, above = edit.end_row - same_last + 1, true
  end
  vim.api.nvim_buf_set_extmark(bufnr, NAMESPACE, row, 0, {
    virt_lines = vim.tbl_map(function(line)
      return { { displayed(bufnr, line), "LlamaNextEditAdd" } }
    end, shown_lines),
    virt_lines_above = above,
  })
end

-- ---- showing and dismissing -------------------------------------------------------------------------

---Hide the suggestion, give its keys back, and tell the server how it ended: "accepted" or "rejected"
---(nil: tell it nothing).
---@param outcome? "accepted"|"rejected"
function M.dismiss(outcome)
  local shown = state.shown
  if not shown then
    return
  end
  state.shown = nil
  if vim.api.nvim_buf_is_valid(shown.bufnr) then
    vim.api.nvim_buf_clear_namespace(shown.bufnr, NAMESPACE, 0, -1)
  end
  for _, taken in ipairs(shown.taken) do
    keys.release(taken)
  end
  if outcome then
    local method = outcome == "accepted" and protocol.NEXT_EDIT_ACCEPTED or protocol.NEXT_EDIT_REJECTED
    tell(shown.client_id, method, shown.id)
  end
end

---Dismiss the suggestion as the user's rejection (the dismiss key, a change elsewhere).
function M.reject()
  M.dismiss("rejected")
end

---Whether a suggestion is shown in the current buffer.
---@return boolean
function M.visible()
  return state.shown ~= nil and state.shown.bufnr == vim.api.nvim_get_current_buf()
end

---Whether inline completion shows ghost text in the current buffer: its key accepts that first.
---@return boolean
local function ghost_text_shown()
  local completion = require("llama_lsp.completion")
  if not completion.native() then
    return completion.visible()
  end
  -- Neovim's own (0.12+) has no query that leaves the suggestion in place; its extmarks tell.
  local ns = vim.api.nvim_get_namespaces()["nvim.lsp.inline_completion"]
  return ns ~= nil and #vim.api.nvim_buf_get_extmarks(0, ns, 0, -1, { limit = 1 }) > 0
end

---Whether the accept key should leave the suggestion alone and do what it did: a completion menu, the
---inline completion's ghost text at the cursor, or a snippet's next field has it.
---@return boolean
local function key_belongs_elsewhere()
  if vim.fn.pumvisible() == 1 then
    return true
  end
  if vim.api.nvim_get_mode().mode:sub(1, 1) ~= "i" then
    return false
  end
  return ghost_text_shown() or (vim.snippet ~= nil and vim.snippet.active({ direction = 1 }))
end

---Map the keys while the suggestion is shown; `dismiss` gives them back.
---@param shown llama_lsp.ShownNextEdit
local function take_keys(shown)
  local opts = config.options.next_edit
  local bufnr = shown.bufnr
  local function ours()
    return state.shown == shown and M.visible()
  end
  for _, mode in ipairs({ "i", "n" }) do
    if key_name(opts.accept_key) then
      table.insert(
        shown.taken,
        keys.take(bufnr, mode, opts.accept_key, ACCEPT_DESC, function()
          if ours() and not key_belongs_elsewhere() then
            -- Through <Cmd>: an expression mapping may not move the cursor or change the text.
            return "<Cmd>lua require('llama_lsp.next_edit').tab()<CR>"
          end
        end)
      )
    end
    if key_name(opts.dismiss_key) then
      table.insert(
        shown.taken,
        keys.take(bufnr, mode, opts.dismiss_key, DISMISS_DESC, function(fall_back)
          if ours() then
            -- Dismissed, and then the key does what it does (<Esc> leaves Insert mode).
            return "<Cmd>lua require('llama_lsp.next_edit').reject()<CR>" .. fall_back()
          end
        end)
      )
    end
  end
end

---@param req llama_lsp.NextEditRequest
---@param result llama_lsp.NextEdit
local function show(req, result)
  local client = vim.lsp.get_client_by_id(req.client_id)
  if not client or type(result.id) ~= "string" then
    return
  end
  local placed = M.place(req.bufnr, result.edits, client.offset_encoding)
  if not placed then
    return
  end
  M.dismiss("rejected")
  ---@type llama_lsp.ShownNextEdit
  local shown = {
    id = result.id,
    client_id = req.client_id,
    bufnr = req.bufnr,
    version = req.version,
    edits = result.edits,
    placed = placed,
    taken = {},
  }
  local signed = {}
  for _, edit in ipairs(placed) do
    draw(req.bufnr, edit)
    if not signed[edit.start_row] then
      signed[edit.start_row] = true
      vim.api.nvim_buf_set_extmark(req.bufnr, NAMESPACE, edit.start_row, 0, {
        sign_text = SIGN,
        sign_hl_group = "LlamaNextEditSign",
      })
    end
  end
  state.shown = shown
  update_hint(shown)
  take_keys(shown)
  tell(req.client_id, protocol.NEXT_EDIT_SHOWN, shown.id)
end

---@param req llama_lsp.NextEditRequest
local function on_result(req, err, result)
  if state.request ~= req then
    return -- cancelled, or a newer request went out
  end
  state.request = nil
  state.last_answer = { err = err, result = result }
  if err then
    -- An older server: stop asking it. Other errors are in the server's log; not worth a message.
    if err.code == protocol.METHOD_NOT_FOUND then
      state.unsupported[req.client_id] = true
    end
    return
  end
  if type(result) ~= "table" or vim.api.nvim_get_current_buf() ~= req.bufnr then
    return -- nothing to suggest (null), or the user went to another buffer
  end
  if vim.lsp.util.buf_versions[req.bufnr] ~= req.version then
    return -- the buffer changed since: the edits are against text that is gone
  end
  show(req, result)
end

-- ---- requesting ---------------------------------------------------------------------------------------

---Stop waiting for a pause and cancel the request in flight (the server stops working on it).
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

---Ask the server for a suggestion for the current buffer now, at the cursor (a pause in typing and an
---accepted suggestion do this). Cancels the request in flight; a suggestion shown goes as rejected.
function M.request()
  cancel()
  M.dismiss("rejected")
  local bufnr = vim.api.nvim_get_current_buf()
  if not M.enabled() then
    return
  end
  local client = require("llama_lsp").client_for(bufnr)
  if not client or state.unsupported[client.id] then
    return
  end
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  -- The version the client sent the text with; the request below sends pending changes first.
  local version = vim.lsp.util.buf_versions[bufnr]
  params.textDocument.version = version
  ---@type llama_lsp.NextEditRequest
  local req = { client_id = client.id, bufnr = bufnr, version = version }
  state.request = req
  state.n_requests = state.n_requests + 1
  local ok, id = compat.request(client, protocol.NEXT_EDIT, params, function(err, result)
    on_result(req, err, result)
  end, bufnr)
  if not ok then
    state.request = nil
    return
  end
  req.id = id
end

---The buffer changed: a suggestion shown there goes (the user typed something else), the request in
---flight is cancelled, and a new one follows once typing pauses.
---@param bufnr integer
local function on_change(bufnr)
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  if state.seen_tick[bufnr] == tick then
    return -- a change already handled (an accepted suggestion, or TextChanged after TextChangedI)
  end
  state.seen_tick[bufnr] = tick
  cancel()
  if state.shown and state.shown.bufnr == bufnr then
    M.dismiss("rejected")
  end
  if not M.enabled() then
    return
  end
  state.timer = state.timer or vim.uv.new_timer()
  state.timer:start(
    M.delay_ms(),
    0,
    vim.schedule_wrap(function()
      if vim.api.nvim_get_current_buf() == bufnr then
        M.request()
      end
    end)
  )
end

-- ---- the keys -----------------------------------------------------------------------------------------

---Move the cursor to the suggestion's edit (the first at or below it, else the first).
function M.jump()
  local shown = state.shown
  if not shown or vim.api.nvim_get_current_buf() ~= shown.bufnr then
    return
  end
  local edit = target(shown)
  vim.api.nvim_win_set_cursor(0, { edit.start_row + 1, edit.start_col })
  update_hint(shown)
end

---Apply the suggestion, if the buffer is still the version it was made for, and ask for the next one.
---The cursor goes to the end of the edit it was at. Returns whether it was applied.
---@return boolean
function M.accept()
  local shown = state.shown
  if not shown or vim.api.nvim_get_current_buf() ~= shown.bufnr then
    return false
  end
  local client = vim.lsp.get_client_by_id(shown.client_id)
  if not client or vim.lsp.util.buf_versions[shown.bufnr] ~= shown.version then
    M.dismiss("rejected")
    return false
  end
  -- Where the new text of the edit at the cursor will end: a mark with right gravity at the end of what
  -- it replaces moves there with the text.
  local edit = edit_at_cursor(shown) or target(shown)
  local mark = vim.api.nvim_buf_set_extmark(shown.bufnr, NAMESPACE, edit.end_row, edit.end_col, {
    right_gravity = true,
  })
  vim.lsp.util.apply_text_edits(vim.deepcopy(shown.edits), shown.bufnr, client.offset_encoding)
  local cursor = vim.api.nvim_buf_get_extmark_by_id(shown.bufnr, NAMESPACE, mark, {})
  -- This change is the suggestion's, not the user's typing: on_change leaves it (and the chained
  -- request) alone.
  state.seen_tick[shown.bufnr] = vim.api.nvim_buf_get_changedtick(shown.bufnr)
  M.dismiss("accepted")
  if cursor[1] then
    pcall(vim.api.nvim_win_set_cursor, 0, { cursor[1] + 1, cursor[2] })
  end
  -- Chain: the next edit of the same change (the rename's next occurrence).
  M.request()
  return true
end

---What the accept key does while a suggestion is shown: go to it when it is away from the cursor's
---line, accept it when it is on it.
function M.tab()
  local shown = state.shown
  if not shown then
    return
  end
  if edit_at_cursor(shown) then
    M.accept()
  else
    M.jump()
  end
end

-- ---- attaching ----------------------------------------------------------------------------------------

---Ask for suggestions in a buffer the client serves (after a new setup() too).
---@param client vim.lsp.Client
---@param bufnr integer
function M.attach(client, bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  -- Changes made before this are the file as opened, not the user's typing.
  state.seen_tick[bufnr] = vim.api.nvim_buf_get_changedtick(bufnr)
  local group = vim.api.nvim_create_augroup("llama_lsp.next_edit." .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      on_change(bufnr)
    end,
  })
  vim.api.nvim_create_autocmd({ "CursorMoved", "CursorMovedI" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      if state.shown and state.shown.bufnr == bufnr then
        update_hint(state.shown)
      end
    end,
  })
  vim.api.nvim_create_autocmd("LspDetach", {
    group = group,
    buffer = bufnr,
    callback = function(args)
      if args.data and args.data.client_id == client.id then
        if state.request and state.request.bufnr == bufnr then
          cancel()
        end
        if state.shown and state.shown.bufnr == bufnr then
          M.dismiss("rejected")
        end
      end
    end,
  })
  vim.api.nvim_create_autocmd("BufUnload", {
    group = group,
    buffer = bufnr,
    callback = function()
      if state.shown and state.shown.bufnr == bufnr then
        M.dismiss("rejected")
      end
      state.seen_tick[bufnr] = nil
    end,
  })
end

---After a new setup(): what is shown goes (its keys may have changed), and with `nextEdit` off nothing
---more is asked.
function M.refresh()
  cancel()
  M.dismiss("rejected")
  for _, client in ipairs(vim.lsp.get_clients({ name = protocol.CLIENT_NAME })) do
    for bufnr in pairs(client.attached_buffers or {}) do
      M.attach(client, bufnr)
    end
  end
end

---What next-edit suggestions are doing now: for statuslines, :checkhealth and tests.
function M.info()
  local shown = state.shown
  return {
    enabled = M.enabled(),
    delay_ms = M.delay_ms(),
    namespace = NAMESPACE,
    pending = state.request ~= nil,
    shown = shown and { id = shown.id, bufnr = shown.bufnr, version = shown.version, edits = shown.edits } or nil,
    n_requests = state.n_requests,
    last_answer = state.last_answer,
    unsupported = vim.tbl_keys(state.unsupported),
  }
end

return M
