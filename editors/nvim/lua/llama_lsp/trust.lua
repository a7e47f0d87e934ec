---Folder trust: the settings that make the server run a folder's own code (its tests, its conftest.py) or
---start commands (the MCP servers of `mcpServers` and of the folder's .mcp.json) reach the server only for
---a folder the user has trusted, as VS Code's workspace trust does for the extension. The decision lives in
---Neovim's own trust database (|vim.secure|, `:trust`), one entry per folder, so it is remembered across
---restarts and shared with whatever else reads that database.
local config = require("llama_lsp.config")

local M = {}

-- begin settings: generated from lsp_server/lsp/settings.py, `make generate`
---The settings that make the server run the folder's code (declared `trusted_only`), and the
---value each has for a folder the user has not trusted.
M.UNTRUSTED = {
  verifyCommand = "",
  testDiagnostics = false,
  verifySandbox = "auto",
  mcpServers = {},
  mcpWorkspaceServers = false,
}
-- end settings

---Neovim records a folder's trust by its name from 0.11.2 on (`:trust` on a directory buffer, the
---"allow" of |vim.secure.read()|); before, it hashed a directory buffer's text, so no folder can be trusted.
M.SUPPORTED = vim.fn.has("nvim-0.11.2") == 1
M.UNSUPPORTED = "Neovim 0.11.2 or later can trust a folder (or set require_trust = false to run checks anywhere)"

local told = {} ---@type table<string, true>  folders whose notice has been shown

---The database's entry for a path, read as vim.secure reads it: vim.secure has no look-up that does not
---ask (|vim.secure.read()| prompts for a folder it does not know), and attaching a buffer must not ask.
---Entries are written only through vim.secure.trust.
---@param path string  a real path
---@return string?  "directory" for a trusted folder, "!" for a denied one, else a file's hash
local function entry(path)
  local file = io.open(vim.fs.joinpath(vim.fn.stdpath("state"), "trust"), "r")
  if not file then
    return nil
  end
  local contents = file:read("*a") or ""
  file:close()
  for line in vim.gsplit(contents, "\n", { plain = true }) do
    local hash, name = line:match("^(%S+) (.+)$")
    if name == path then
      return hash
    end
  end
end

---@param folder string
---@return string?
local function realpath(folder)
  return vim.uv.fs_realpath(vim.fs.normalize(folder))
end

---Whether checks may run in a folder: it is trusted in vim.secure's database, or the user turned folder
---trust off (`require_trust = false`).
---@param folder string
---@return boolean
function M.is_trusted(folder)
  if not config.options.require_trust then
    return true
  end
  local path = realpath(folder)
  return path ~= nil and entry(path) == "directory"
end

---The settings to send for a folder: as they are where it is trusted, else with `M.UNTRUSTED`'s values
---(a copy; the argument is not changed).
---@param settings llama_lsp.ServerSettings
---@param folder string
---@return llama_lsp.ServerSettings
function M.for_folder(settings, folder)
  if M.is_trusted(folder) then
    return settings
  end
  return vim.tbl_extend("force", settings, M.UNTRUSTED)
end

---Why the checks (and the MCP servers) that the settings ask for do not run in a folder, with the fix; nil
---when they run (it is trusted) or when the settings ask for none.
---@param folder string
---@return string?
function M.note(folder)
  local settings = config.server_settings()
  if vim.deep_equal(M.for_folder(settings, folder), settings) then
    return nil
  end
  -- MCP servers are named only where some are configured: otherwise nothing of them is held back.
  local what = vim.tbl_isempty(settings.mcpServers or {}) and "checks" or "checks and MCP servers"
  if not M.SUPPORTED then
    return string.format("%s are off in %s: %s", what, folder, M.UNSUPPORTED)
  end
  return string.format("%s are off in %s: it is not trusted; :LlamaTrust to trust it", what, folder)
end

---Tell the user, once per folder and session, that its checks are off and how to turn them on.
---@param folder string
function M.tell_once(folder)
  local note = not told[folder] and M.note(folder)
  if note then
    told[folder] = true
    vim.notify("llama-lsp: " .. note, vim.log.levels.INFO)
  end
end

---Record in vim.secure's database that a folder is trusted, or take that back (its entry is removed, so
---that vim.secure asks again where it asks).
---@param folder string
---@param trusted boolean
---@return boolean ok, string message  the folder's real path, or what went wrong
function M.set(folder, trusted)
  local path = realpath(folder)
  if not path or vim.fn.isdirectory(path) == 0 then
    return false, "no such folder: " .. folder
  end
  if trusted and not M.SUPPORTED then
    return false, M.UNSUPPORTED
  end
  -- vim.secure.trust writes its database there, and fails when the directory is missing.
  vim.fn.mkdir(vim.fn.stdpath("state"), "p")
  if not trusted then
    return vim.secure.trust({ action = "remove", path = path })
  end
  -- vim.secure.trust allows a buffer only, not a path: a buffer named after the folder, as `:trust` in a
  -- directory buffer does, gets the entry "directory" (trusted by its name, whatever it holds).
  local existed = vim.fn.bufexists(path) == 1
  local buf = vim.fn.bufadd(path)
  local called, ok, message = pcall(vim.secure.trust, { action = "allow", bufnr = buf })
  if not existed then
    vim.api.nvim_buf_delete(buf, { force = true })
  end
  if not called then
    return false, tostring(ok) -- the error
  end
  return ok, message
end

return M
