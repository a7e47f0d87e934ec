---Which server command the plugin runs: the `cmd` setting, else `llama-lsp` on PATH, else the one
---`:LlamaInstall` put in stdpath("data")/llama-lsp/server/<version>.
local config = require("llama_lsp.config")

local M = {}

---How `:checkhealth` names where the command came from.
M.SOURCES = {
  setting = "the `cmd` setting",
  path = "on PATH",
  installed = "installed by :LlamaInstall",
}

M.NOT_FOUND = "no server found: `llama-lsp` is not on PATH and :LlamaInstall has not installed one. "
  .. "Run :LlamaInstall (see :help llama_lsp-install), or set `cmd` in setup()."

---The version directory an install is writing now: not a server yet.
---@type string?
M.installing = nil

local warned = false

---Where `:LlamaInstall` puts its servers, one directory per version.
---@return string
function M.root()
  return vim.fs.joinpath(vim.fn.stdpath("data"), "llama-lsp", "server")
end

---Whether version `a` is newer than `b` (PEP 440-ish strings such as "0.1.0" or "0.2.0.dev1").
---@param a string
---@param b string
---@return boolean
function M.newer(a, b)
  local ok_a, va = pcall(vim.version.parse, a, { strict = false })
  local ok_b, vb = pcall(vim.version.parse, b, { strict = false })
  if ok_a and ok_b and va and vb and vim.version.cmp(va, vb) ~= 0 then
    return vim.version.cmp(va, vb) > 0
  end
  return a > b
end

---@class llama_lsp.InstalledServer
---@field version string
---@field dir string
---@field executable string

---The servers `:LlamaInstall` installed, newest first (after an install there is one).
---@return llama_lsp.InstalledServer[]
function M.installed()
  local root = M.root()
  local found = {}
  if vim.fn.isdirectory(root) == 0 then
    return found
  end
  for name, kind in vim.fs.dir(root) do
    local dir = vim.fs.joinpath(root, name)
    local executable = vim.fs.joinpath(dir, "bin", "llama-lsp")
    if kind == "directory" and dir ~= M.installing and vim.fn.executable(executable) == 1 then
      table.insert(found, { version = name, dir = dir, executable = executable })
    end
  end
  table.sort(found, function(a, b)
    return M.newer(a.version, b.version)
  end)
  return found
end

---@class llama_lsp.Located
---@field cmd string[]|function  the command to start the server with (`--stdio` included)
---@field source "setting"|"path"|"installed"
---@field path? string            the executable, when the command is a list
---@field version? string         the installed version (source "installed")

---The server command to run, or nil when there is none.
---@return llama_lsp.Located?
function M.locate()
  local cmd = config.options.cmd
  if cmd ~= nil then
    return { cmd = cmd, source = "setting", path = type(cmd) == "table" and cmd[1] or nil }
  end
  local on_path = vim.fn.exepath("llama-lsp")
  if on_path ~= "" then
    return { cmd = { "llama-lsp", "--stdio" }, source = "path", path = on_path }
  end
  local installed = M.installed()[1]
  if installed then
    return {
      cmd = { installed.executable, "--stdio" },
      source = "installed",
      path = installed.executable,
      version = installed.version,
    }
  end
  return nil
end

---Say once per session that there is no server (every buffer that attaches would say it again).
function M.warn_missing()
  if not warned then
    warned = true
    vim.notify("llama-lsp: " .. M.NOT_FOUND, vim.log.levels.ERROR)
  end
end

---After an install: a later miss is news again.
function M.reset_warning()
  warned = false
end

return M
