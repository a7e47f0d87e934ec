---The chat buffer: questions go to `assistant/chat`, answers stream in from partial results.
---One chat per Neovim instance; it continues one conversation until `:LlamaNew`. The files an answer
---cites (`shop/prices.py:3`, relative to the workspace folder) open from it: the buffer's 'path' is
---the chat server's folders, for gf and gF; <CR> opens one in the window you came from, only when it
---is a file inside such a folder.
local config = require("llama_lsp.config")
local compat = require("llama_lsp.compat")
local protocol = require("llama_lsp.protocol")
local verification = require("llama_lsp.verification")

local M = {}

local TOKEN_PREFIX = "llama-lsp-chat-"
local NAMESPACE = vim.api.nvim_create_namespace("llama_lsp.chat")

---@class llama_lsp.ChatRequest
---@field client_id integer
---@field id integer       the LSP request id, for $/cancelRequest
---@field token string     the partialResultToken its deltas arrive with
---@field streamed string  the answer so far
---@field n_partials integer
---@field answer_line integer  the 0-based line where the answer starts in the chat buffer

local session = {
  buf = nil, ---@type integer?
  client_id = nil, ---@type integer?  the server the conversation lives in
  conversation_id = nil, ---@type string?
  source_buf = nil, ---@type integer?  the document last asked about
  request = nil, ---@type llama_lsp.ChatRequest?
  pending_edit = nil, ---@type { edit: table, client_id: integer }?
  last = nil, ---@type { result?: table, error?: table, cancelled?: boolean, n_partials: integer }?
  n_requests = 0,
}

-- ---- the buffer and its window ----------------------------------------------------------------------

local function chat_buffer()
  if session.buf and vim.api.nvim_buf_is_valid(session.buf) then
    return session.buf
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "llama-chat")
  vim.bo[buf].filetype = "llamachat"
  vim.bo[buf].modifiable = false
  vim.keymap.set("n", "<C-c>", M.stop, { buffer = buf, desc = "llama-lsp: stop the answer" })
  vim.keymap.set("n", "<CR>", function()
    if not M.open_reference() then
      vim.cmd("normal! " .. vim.v.count1 .. "\r") -- not on a reference: <CR> as ever
    end
  end, { buffer = buf, desc = "llama-lsp: open the file reference under the cursor" })
  session.buf = buf
  return buf
end

-- ---- file references ----------------------------------------------------------------------------------

---The folders of a server's workspace, where the files its answers cite are.
---@param client vim.lsp.Client?
---@return string[]
local function folders_of(client)
  if not client then
    return {}
  end
  local folders = {}
  for _, folder in ipairs(client.workspace_folders or {}) do
    table.insert(folders, vim.fs.normalize(vim.uri_to_fname(folder.uri)))
  end
  if #folders == 0 and client.root_dir then
    folders = { vim.fs.normalize(client.root_dir) }
  end
  return folders
end

---The chat buffer's 'path' is the folders of the server it talks to, so that gf, gF and CTRL-W f find
---the files of its answers there (and nowhere else: not in the current directory).
---@param client vim.lsp.Client?
local function follow_folders(client)
  local folders = folders_of(client)
  if #folders > 0 then
    local escaped = vim.tbl_map(function(folder)
      return vim.fn.escape(folder, "\\ ,")
    end, folders)
    vim.bo[chat_buffer()].path = table.concat(escaped, ",")
  end
end

---A file reference as answers write it: a path whose last part has a suffix, then maybe `:line`,
---`:line:col` or `:line-line`; around it, code-span backticks, brackets or punctuation. Whether it is a
---file of the workspace is resolve_reference's to say.
---@param word string
---@return { path: string, line?: integer, column?: integer }?
function M.parse_reference(word)
  word = word:gsub("^[%(%[\"'`]+", ""):gsub("[%)%]\"'`.,;:!?]+$", "")
  local path, rest = word:match("^([%w_@+~%-%./]+)(.*)$")
  if not path or not path:match("[^/]%.%a%w*$") then
    return nil
  end
  local line, column = rest:match("^:(%d+):(%d+)$")
  if not line then
    line = rest:match("^:(%d+)$") or rest:match("^:(%d+)%-%d+$")
  end
  if rest ~= "" and not line then
    return nil
  end
  line, column = tonumber(line), tonumber(column)
  return {
    path = path,
    line = line and line > 0 and line or nil,
    column = line and line > 0 and column and column > 0 and column or nil,
  }
end

---Whether `path` is `folder` or lies under it (both absolute, normalised).
local function inside(folder, path)
  return path == folder or vim.startswith(path, folder:gsub("/$", "") .. "/")
end

---The file a reference names in the first of `folders` that has it; nil when none does, or when it (or a
---symlink on the way) leads out of the folder. Only relative paths without `.` or `..` parts.
---@param reference { path: string }
---@param folders string[]
---@return string?
function M.resolve_reference(reference, folders)
  for part in vim.gsplit(reference.path, "/", { plain = true }) do
    if part == "" or part == "." or part == ".." then
      return nil -- also an absolute path: its first part is ""
    end
  end
  for _, folder in ipairs(folders) do
    local candidate = vim.fs.normalize(folder .. "/" .. reference.path)
    local real_folder, real_file = vim.uv.fs_realpath(folder), vim.uv.fs_realpath(candidate)
    local stat = real_file and vim.uv.fs_stat(real_file)
    if real_folder and real_file and inside(real_folder, real_file) and stat and stat.type == "file" then
      return candidate
    end
  end
  return nil
end

---The reference under the cursor in the chat buffer, if any.
---@return { path: string, line?: integer, column?: integer }?
function M.reference_at_cursor()
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2] + 1
  if line:sub(col, col):match("^%s?$") then
    return nil
  end
  local first = col
  while first > 1 and not line:sub(first - 1, first - 1):match("%s") do
    first = first - 1
  end
  local last = line:find("%s", col) or #line + 1
  return M.parse_reference(line:sub(first, last - 1))
end

---Open the file reference under the cursor: in the window you came to the chat from (else a new split),
---at its line and column. Only a file inside a workspace folder of the chat's server opens; another
---reference says so. Returns false when the cursor is on no reference (or on a word such as `os.path`,
---with no folder or line, that names no file).
---@return boolean
function M.open_reference()
  local reference = M.reference_at_cursor()
  if not reference then
    return false
  end
  local client = session.client_id and vim.lsp.get_client_by_id(session.client_id)
  local file = M.resolve_reference(reference, folders_of(client))
  if not file and not reference.line and not reference.path:find("/", 1, true) then
    return false -- `os.path`, `item.price`: a word that only looked like a file name
  end
  if not file then
    vim.notify(
      string.format("llama-lsp: %s is not a file in the workspace of the chat's server", reference.path),
      vim.log.levels.WARN
    )
    return true
  end
  local chat_win = vim.api.nvim_get_current_win()
  local target = vim.fn.win_getid(vim.fn.winnr("#"))
  if target == 0 or target == chat_win or vim.bo[vim.api.nvim_win_get_buf(target)].buftype ~= "" then
    target = nil
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if win ~= chat_win and vim.bo[vim.api.nvim_win_get_buf(win)].buftype == "" then
        target = win
        break
      end
    end
  end
  if target then
    vim.api.nvim_set_current_win(target)
  else
    vim.cmd("aboveleft split")
  end
  vim.cmd.edit(vim.fn.fnameescape(file))
  local last = vim.api.nvim_buf_line_count(0)
  local row = math.min(reference.line or 1, last)
  local text = vim.api.nvim_buf_get_lines(0, row - 1, row, false)[1] or ""
  vim.api.nvim_win_set_cursor(0, { row, math.max(math.min((reference.column or 1) - 1, #text - 1), 0) })
  return true
end

---Show the chat in a split of the current tab, or reuse the window already showing it.
local function chat_window()
  local buf = chat_buffer()
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if vim.api.nvim_win_get_buf(win) == buf then
      return win
    end
  end
  local layout = config.options.chat
  local vertical = layout.position == "right" or layout.position == "left"
  local win = vim.api.nvim_open_win(buf, false, {
    split = layout.position,
    win = -1,
    width = vertical and layout.size or nil,
    height = not vertical and layout.size or nil,
  })
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.wo[win].number = false
  return win
end

---Run `change` on the buffer with it briefly modifiable, then keep every window that showed the
---end of the chat at its end, so a streaming answer stays in view.
local function write(change)
  local buf = chat_buffer()
  local last_before = vim.api.nvim_buf_line_count(buf)
  local following = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local at_end = vim.api.nvim_win_get_cursor(win)[1] >= last_before
    following[win] = at_end or win ~= vim.api.nvim_get_current_win()
  end
  vim.bo[buf].modifiable = true
  change(buf)
  vim.bo[buf].modifiable = false
  local last = vim.api.nvim_buf_line_count(buf)
  for win, follow in pairs(following) do
    if follow then
      vim.api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
end

---Append whole lines, after a blank line unless the chat is empty.
---@param lines string[]
local function append_lines(lines)
  write(function(buf)
    local count = vim.api.nvim_buf_line_count(buf)
    local empty = count == 1 and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ""
    if empty then
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    else
      vim.api.nvim_buf_set_lines(buf, count, count, false, { "", unpack(lines) })
    end
  end)
end

---Continue the last line with streamed text, which may hold newlines.
---@param text string
local function append_text(text)
  write(function(buf)
    local count = vim.api.nvim_buf_line_count(buf)
    local pieces = vim.split(text, "\n", { plain = true })
    pieces[1] = vim.api.nvim_buf_get_lines(buf, count - 1, count, false)[1] .. pieces[1]
    vim.api.nvim_buf_set_lines(buf, count - 1, count, false, pieces)
  end)
end

-- ---- answers -----------------------------------------------------------------------------------------

---"1728 of 1800 prompt tokens cached (96%) · 40 tokens · 1.3 s"; with speculative decoding (nDrafted > 0)
---"1728 of 1800 prompt tokens cached (96%) · 40 tokens · 38 of 40 drafted accepted · 1.3 s". The drafted
---part is left out when nothing was drafted (drafting off, a backend that does not draft, an older server).
---@param stats table
---@return string
function M.describe_stats(stats)
  local reuse = require("llama_lsp").reuse_of(stats) or 0
  local seconds = ((stats.tPrefillMs or 0) + (stats.tDecodeMs or 0)) / 1000
  local drafted = ""
  if (stats.nDrafted or 0) > 0 then
    drafted = string.format(" · %d of %d drafted accepted", stats.nAccepted or 0, stats.nDrafted)
  end
  return string.format(
    "%d of %d prompt tokens cached (%d%%) · %d tokens%s · %.1f s",
    stats.nReused or 0,
    stats.nPrompt or 0,
    math.floor(reuse * 100 + 0.5),
    stats.nGenerated or 0,
    drafted,
    seconds
  )
end

---The lines under an answer: the proposed edit, whether it was checked, the stats. The second value is
---the index of the line to highlight as a warning (a failed check), if any.
---@param result table  an `assistant/chat` result
---@param folder? string  the folder of the server that answered
---@return string[] lines, integer? warning
function M.footer(result, folder)
  local lines, warning = {}, nil
  if result.edit then
    table.insert(lines, "_An edit is proposed: `:LlamaApply` applies it._")
  elseif result.editError then
    table.insert(lines, "_The proposed edit was dropped: " .. result.editError .. "_")
  end
  if type(result.verification) == "table" then
    table.insert(lines, verification.footer_line(result.verification, folder))
    if verification.failed(result.verification) then
      warning = #lines
    end
  end
  if result.stats then
    table.insert(lines, "_" .. M.describe_stats(result.stats) .. "_")
  end
  return lines, warning
end

---@param req llama_lsp.ChatRequest
local function finish(req, err, result)
  if session.request ~= req then
    return -- stopped already; this is the server's late answer
  end
  session.request = nil
  if err then
    if err.code == protocol.REQUEST_CANCELLED then
      append_lines({ "_(stopped)_" })
      session.last = { cancelled = true, n_partials = req.n_partials }
    else
      append_lines({ "**Error:** " .. (err.message or vim.inspect(err)) })
      session.last = { error = err, n_partials = req.n_partials }
    end
    return
  end
  session.conversation_id = result.conversationId
  if (result.content or "") ~= req.streamed then
    -- The answer is the result's content; the streamed deltas were its preview.
    write(function(buf)
      local lines = vim.split(result.content or "", "\n", { plain = true })
      vim.api.nvim_buf_set_lines(buf, req.answer_line, -1, false, lines)
    end)
  end
  if result.edit then
    session.pending_edit = { edit = result.edit, client_id = req.client_id }
  end
  verification.remember(result.verification)
  local client = vim.lsp.get_client_by_id(req.client_id)
  local footer, warning = M.footer(result, client and client.root_dir)
  if #footer > 0 then
    append_lines(footer)
  end
  if warning then
    local buf = chat_buffer()
    local row = vim.api.nvim_buf_line_count(buf) - #footer + warning - 1
    vim.api.nvim_buf_set_extmark(buf, NAMESPACE, row, 0, { end_col = #footer[warning], hl_group = "DiagnosticWarn" })
  end
  session.last = { result = result, n_partials = req.n_partials }
end

---Route a `$/progress` notification: true when it belongs to a chat answer.
---@param token any
---@param value any
---@return boolean
function M.on_partial(token, value)
  local req = session.request
  if not (req and req.token == token) then
    -- Deltas of a stopped answer can still arrive; they are ours to drop.
    return type(token) == "string" and vim.startswith(token, TOKEN_PREFIX)
  end
  if type(value) == "table" and type(value.delta) == "string" then
    req.streamed = req.streamed .. value.delta
    req.n_partials = req.n_partials + 1
    append_text(value.delta)
  end
  return true
end

---@param source integer?
---@return vim.lsp.Client?, integer?
local function client_and_document(source)
  if source == session.buf then
    source = session.source_buf
  end
  local llama = require("llama_lsp")
  local client = source and vim.api.nvim_buf_is_valid(source) and llama.client_for(source) or nil
  if client then
    return client, source
  end
  -- From the chat itself with no document: go on in the conversation's server.
  if session.client_id then
    return vim.lsp.get_client_by_id(session.client_id), nil
  end
  return nil, nil
end

---@class llama_lsp.AskOptions
---@field bufnr? integer   the document (default: the current buffer, or the last one asked about)
---@field range? table     an LSP range in that document

---Ask in the chat. The answer streams into the chat buffer.
---@param message string
---@param opts? llama_lsp.AskOptions
function M.ask(message, opts)
  opts = opts or {}
  if message == nil or vim.trim(message) == "" then
    vim.ui.input({ prompt = "Ask llama: " }, function(input)
      if input and vim.trim(input) ~= "" then
        M.ask(input, opts)
      end
    end)
    return
  end
  local client, source = client_and_document(opts.bufnr or vim.api.nvim_get_current_buf())
  if not client then
    vim.notify(
      "llama-lsp: no server for this buffer. Call require('llama_lsp').setup() and open a file it attaches to.",
      vim.log.levels.ERROR
    )
    return
  end
  if session.request then
    vim.notify("llama-lsp: still answering; :LlamaStop stops it", vim.log.levels.WARN)
    return
  end
  if session.client_id ~= client.id then
    session.conversation_id = nil -- conversations live in one server
  end
  session.client_id = client.id
  follow_folders(client)
  session.source_buf = source or session.source_buf
  session.n_requests = session.n_requests + 1

  local token = TOKEN_PREFIX .. session.n_requests
  local params = { message = message, conversationId = session.conversation_id, partialResultToken = token }
  local header = { "## You", "" }
  vim.list_extend(header, vim.split(message, "\n", { plain = true }))
  if source then
    params.textDocument = { uri = vim.uri_from_bufnr(source) }
    params.range = opts.range
    local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(source), ":~:.")
    if opts.range then
      local first, last = opts.range.start.line + 1, opts.range["end"].line + 1
      table.insert(header, string.format("_(about lines %d–%d of %s)_", first, last, name))
    end
  end
  vim.list_extend(header, { "", "## Llama", "", "" }) -- the answer streams into the last line
  chat_window()
  append_lines(header)

  ---@type llama_lsp.ChatRequest
  local req = {
    client_id = client.id,
    id = -1,
    token = token,
    streamed = "",
    n_partials = 0,
    answer_line = vim.api.nvim_buf_line_count(chat_buffer()) - 1,
  }
  session.request = req
  local ok, id = compat.request(client, protocol.CHAT, params, function(err, result)
    finish(req, err, result)
  end, source)
  if not ok then
    session.request = nil
    append_lines({ "**Error:** the server is not running" })
    return
  end
  req.id = id
end

---Stop the answer being written. Returns whether there was one.
---@return boolean
function M.stop()
  local req = session.request
  if not req then
    return false
  end
  session.request = nil
  local client = vim.lsp.get_client_by_id(req.client_id)
  if client then
    compat.cancel_request(client, req.id)
  end
  append_lines({ "_(stopped)_" })
  session.last = { cancelled = true, n_partials = req.n_partials }
  return true
end

---Forget the conversation and clear the chat.
function M.new()
  M.stop()
  session.conversation_id = nil
  session.pending_edit = nil
  session.last = nil
  if session.buf and vim.api.nvim_buf_is_valid(session.buf) then
    write(function(buf)
      vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
      vim.api.nvim_buf_clear_namespace(buf, NAMESPACE, 0, -1)
    end)
  end
end

---Apply the edit the last answer proposed, through Neovim's own workspace-edit code.
function M.apply()
  local pending = session.pending_edit
  local client = pending and vim.lsp.get_client_by_id(pending.client_id)
  if not (pending and client) then
    vim.notify("llama-lsp: no proposed edit to apply", vim.log.levels.WARN)
    return
  end
  session.pending_edit = nil
  vim.lsp.util.apply_workspace_edit(pending.edit, client.offset_encoding)
end

---Show an answer that arrived another way (the "Explain" code action) and continue its conversation.
---@param answer { conversationId: string, title: string, content: string }
---@param client_id integer
function M.show_answer(answer, client_id)
  session.client_id = client_id
  follow_folders(vim.lsp.get_client_by_id(client_id))
  session.conversation_id = answer.conversationId
  chat_window()
  local lines = { "## " .. (answer.title or "Llama"), "" }
  vim.list_extend(lines, vim.split(answer.content or "", "\n", { plain = true }))
  append_lines(lines)
end

---What the chat holds now: for statuslines and tests.
function M.info()
  return {
    buf = session.buf,
    conversation_id = session.conversation_id,
    answering = session.request ~= nil,
    n_partials = session.request and session.request.n_partials or nil,
    last = session.last,
  }
end

return M
