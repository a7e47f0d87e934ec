---llama-lsp for Neovim: starts the server through `vim.lsp`, one client per workspace root, and
---tracks its status for statuslines. The chat lives in `llama_lsp.chat`, inline completion in
---`llama_lsp.completion`, next-edit suggestions in `llama_lsp.next_edit`; code actions are Neovim's own.
local compat = require("llama_lsp.compat")
local config = require("llama_lsp.config")
local protocol = require("llama_lsp.protocol")
local server = require("llama_lsp.server")
local trust = require("llama_lsp.trust")

local M = {}

---@class llama_lsp.Status
---@field state "stopped"|"loading"|"ready"|"busy"|"error"
---@field message? string
---@field queue? integer
---@field last_stats? table  the last request's stats: nPrompt, nReused, nGenerated, ...
---@field reuse? number      nReused / nPrompt of the last request, 0..1
---@field warm? string[]     URIs of the open documents whose prompt is in the cache now (nil until ready)
---@field buffer_warm? boolean  from status(bufnr) only: whether that buffer is in `warm` (nil: not known)

---@type table<integer, llama_lsp.Status> by client id
local statuses = {}
local last_client_id ---@type integer?

---@param stats? table
---@return number?
function M.reuse_of(stats)
  -- nReused is absent when a remote backend does not report its cached tokens: unknown, not 0.
  if stats and stats.nReused and (stats.nPrompt or 0) > 0 then
    return stats.nReused / stats.nPrompt
  end
end

local function on_status(_, result, ctx)
  local status = {
    state = result.state,
    message = result.message,
    queue = result.queue,
    last_stats = result.lastStats,
    reuse = M.reuse_of(result.lastStats),
    -- Present in every status once the model is ready; a change to it sends a status too.
    warm = type(result.warm) == "table" and result.warm or nil,
  }
  statuses[ctx.client_id] = status
  last_client_id = ctx.client_id
  -- Errors are not notified here: the server shows them with window/showMessage already.
  vim.api.nvim_exec_autocmds("User", { pattern = "LlamaLspStatus", modeline = false, data = status })
end

-- Partial results of a chat arrive as `$/progress` with our own tokens; everything else is ordinary
-- work-done progress (the model loading) for Neovim's handler.
local function on_progress(err, result, ctx, handler_config)
  if result and require("llama_lsp.chat").on_partial(result.token, result.value) then
    return
  end
  return vim.lsp.handlers["$/progress"](err, result, ctx, handler_config)
end

---The llama-lsp client serving a buffer, if any.
---@param bufnr? integer
---@return vim.lsp.Client?
function M.client_for(bufnr)
  return vim.lsp.get_clients({ name = protocol.CLIENT_NAME, bufnr = bufnr or 0 })[1]
end

---The workspace root a buffer's server runs in (one server per root): the nearest folder with a root
---marker, else the file's own folder; nil for a buffer that is no file.
---@param bufnr integer
---@return string?
function M.root_of(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].buftype ~= "" or name == "" then
    return nil
  end
  return vim.fs.root(bufnr, config.options.root_markers) or vim.fs.dirname(name)
end

---The `llamaLsp` settings for the server of a root: the options, less what the root's trust withholds.
---@param root string
---@return llama_lsp.ServerSettings
local function settings_for(root)
  return trust.for_folder(config.server_settings(), root)
end

---Start (or reuse) the server for this buffer's workspace root and attach the buffer.
---@param bufnr integer
---@return integer? client_id
function M.attach(bufnr)
  local root = M.root_of(bufnr)
  if not root then
    return nil
  end
  local found, why = server.locate(root)
  if not found then
    server.warn_missing(why)
    return nil
  end
  local settings = settings_for(root)
  trust.tell_once(root)
  return vim.lsp.start({
    name = protocol.CLIENT_NAME,
    cmd = found.cmd,
    root_dir = root,
    init_options = settings,
    -- The server pulls its `llamaLsp` section with workspace/configuration.
    settings = { llamaLsp = settings },
    handlers = {
      [protocol.STATUS] = on_status,
      ["$/progress"] = on_progress,
      -- A chat's call of an MCP tool that may change something asks the user first (vim.ui.select).
      [protocol.CONFIRM_TOOL_CALL] = require("llama_lsp.mcp").on_confirm_tool_call,
    },
    on_init = function(client)
      -- Code actions report whether their edit was checked (verifyCommand).
      require("llama_lsp.verification").watch(client)
    end,
    on_attach = function(client, attached)
      -- Inline completion (ghost text) in each buffer the server serves, and next-edit suggestions (after
      -- completion: while a suggestion is shown, its <Tab> calls through completion's).
      require("llama_lsp.completion").attach(client, attached)
      require("llama_lsp.next_edit").attach(client, attached)
    end,
    on_exit = function(_, _, client_id)
      statuses[client_id] = nil
    end,
  }, { bufnr = bufnr })
end

local function filetype_matches(bufnr)
  local filetypes = config.options.filetypes
  return filetypes == nil or vim.tbl_contains(filetypes, vim.bo[bufnr].filetype)
end

local function set_keymaps(keymaps)
  if not keymaps then
    return
  end
  if keymaps.chat then
    vim.keymap.set("n", keymaps.chat, "<Cmd>LlamaChat<CR>", { desc = "llama-lsp: ask in the chat" })
    vim.keymap.set("x", keymaps.chat, ":LlamaChat<CR>", { desc = "llama-lsp: ask about the selection" })
  end
  if keymaps.stop then
    vim.keymap.set("n", keymaps.stop, "<Cmd>LlamaStop<CR>", { desc = "llama-lsp: stop the answer" })
  end
  if keymaps.new then
    vim.keymap.set("n", keymaps.new, "<Cmd>LlamaNew<CR>", { desc = "llama-lsp: new conversation" })
  end
  if keymaps.code_action then
    vim.keymap.set({ "n", "x" }, keymaps.code_action, vim.lsp.buf.code_action, { desc = "llama-lsp: code actions" })
  end
end

---Send changed settings to the running servers; a new model or context size makes them reload. The
---buffers they serve take the new completion and next-edit options.
local function push_settings()
  for _, client in ipairs(vim.lsp.get_clients({ name = protocol.CLIENT_NAME })) do
    client.settings = { llamaLsp = settings_for(client.root_dir) }
    compat.notify(client, "workspace/didChangeConfiguration", { settings = client.settings })
  end
  -- A next-edit suggestion shown gives its keys back first, so that completion maps <Tab> over the
  -- mapping that was there before either.
  require("llama_lsp.next_edit").refresh()
  require("llama_lsp.completion").refresh()
end

---Trust a folder, or take that back (`:LlamaTrust`, `:LlamaUntrust`): recorded in vim.secure's database
---(llama_lsp.trust), and sent to the running servers.
---@param trusted boolean
---@param folder? string  default: the folder of the current buffer's server, else the root it would have
---@return boolean ok
function M.trust(trusted, folder)
  local client = M.client_for(0)
  folder = folder or (client and client.root_dir) or M.root_of(0)
  if not folder then
    vim.notify("llama-lsp: which folder? Open a file in it, or name it: :LlamaTrust {folder}", vim.log.levels.ERROR)
    return false
  end
  local ok, message = trust.set(folder, trusted)
  if not ok then
    vim.notify("llama-lsp: " .. message, vim.log.levels.ERROR)
    return false
  end
  push_settings()
  vim.notify(
    trusted and string.format("llama-lsp: %s is trusted: checks may run its tests", message)
      or string.format("llama-lsp: %s is not trusted: checks are off there", message),
    vim.log.levels.INFO
  )
  return true
end

local did_setup = false

---Attach the loaded buffers that setup() serves: the buffers opened before setup() ran, or (`unserved`)
---those that no server serves yet, after `:LlamaInstall` installed one.
---@param unserved? boolean
function M.attach_all(unserved)
  if not did_setup then
    return
  end
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if
      vim.api.nvim_buf_is_loaded(bufnr)
      and vim.bo[bufnr].filetype ~= ""
      and filetype_matches(bufnr)
      and not (unserved and M.client_for(bufnr))
    then
      M.attach(bufnr)
    end
  end
end

---Install the server into stdpath("data") (`:LlamaInstall`); see llama_lsp.install.
---@param opts? llama_lsp.InstallOptions
---@return boolean? ok, (llama_lsp.InstalledServer|string)? result
function M.install(opts)
  return require("llama_lsp.install").install(opts)
end

---Start serving; calling it again applies new options, and running servers take the new `init_options`
---(a setting left out keeps its value there, except `verifyCommand`, which is then turned off).
---@param opts? llama_lsp.Options
function M.setup(opts)
  config.setup(opts)
  push_settings()
  local group = vim.api.nvim_create_augroup("llama_lsp", { clear = true })
  vim.api.nvim_create_autocmd("FileType", {
    group = group,
    pattern = config.options.filetypes or "*",
    callback = function(args)
      M.attach(args.buf)
    end,
  })
  did_setup = true
  -- Buffers opened before setup() ran.
  M.attach_all()
  -- The "Explain" code action answers with this client-side command: show it in the chat.
  vim.lsp.commands[protocol.COMMAND_SHOW_ANSWER] = function(command, ctx)
    require("llama_lsp.chat").show_answer(command.arguments[1], ctx.client_id)
  end
  set_keymaps(config.options.keymaps)
end

---Whether the server has this buffer's prompt in its cache (background warming), so that a first
---question about it evaluates only the question; nil when that is not known (no server for the buffer,
---or its model not ready).
---@param bufnr? integer  default: the current buffer
---@return boolean?
function M.is_warm(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local client = M.client_for(bufnr)
  local status = client and statuses[client.id]
  if not status or not status.warm or (status.state ~= "ready" and status.state ~= "busy") then
    return nil
  end
  -- The URI as the client opened the buffer (textDocument/didOpen).
  return vim.tbl_contains(status.warm, vim.uri_from_bufnr(bufnr))
end

---The server's state, the last request's cache reuse and whether the buffer is warm, for statuslines.
---@param bufnr? integer  the buffer whose server to describe (default: current, else the last heard from)
---@return llama_lsp.Status
function M.status(bufnr)
  local client = M.client_for(bufnr)
  if client then
    -- A copy: the stored status is shared by every buffer of the server.
    local status = vim.tbl_extend("force", {}, M.client_status(client.id))
    status.buffer_warm = M.is_warm(bufnr)
    return status
  end
  return statuses[last_client_id] or { state = "stopped" }
end

---The status of one running server.
---@param client_id integer
---@return llama_lsp.Status
function M.client_status(client_id)
  return statuses[client_id] or { state = "loading" }
end

---A short statusline string such as "llama: ready" or "llama: 96% cached", with ", warm" when the
---buffer's prompt is in the cache.
---@param bufnr? integer
---@return string
function M.statusline(bufnr)
  local status = M.status(bufnr)
  local text = "llama: " .. status.state
  if status.state == "ready" and status.reuse then
    text = string.format("llama: %d%% cached", math.floor(status.reuse * 100 + 0.5))
  end
  if status.buffer_warm then
    text = text .. ", warm"
  end
  return text
end

return M
