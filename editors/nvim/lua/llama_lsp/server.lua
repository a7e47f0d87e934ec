---Which server command the plugin runs: the `cmd` setting, else what the bootstrap both editors share
---(python/llama_lsp_bootstrap.py) finds: `llama-lsp` on PATH, a trusted root's .venv, the .venv of the
---checkout the plugin lives in, the newest server :LlamaInstall put in stdpath("data")/llama-lsp/server/.
---This module finds a Python to run the bootstrap with (`run`) and reads its JSON lines; install.lua shows
---its install.
local config = require("llama_lsp.config")
local trust = require("llama_lsp.trust")

local M = {}

---How `:checkhealth` names where the command came from.
M.SOURCES = {
  setting = "the `cmd` setting",
  PATH = "on PATH",
  workspace = "the folder's .venv",
  checkout = "the .venv of the plugin's checkout",
  installed = "installed by :LlamaInstall",
}

M.NOT_FOUND = "no server found: `llama-lsp` is not on PATH and :LlamaInstall has not installed one. "
  .. "Run :LlamaInstall (see :help llama_lsp-install), or set `cmd` in setup()."

M.PYTHON_HINT = "Install Python 3.10 or later with venv, e.g. sudo apt install python3 python3-venv"

-- lua/llama_lsp/server.lua -> the plugin's folder -> python/
M.BOOTSTRAP = vim.fs.joinpath(
  vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2))))),
  "python",
  "llama_lsp_bootstrap.py"
)

local UNUSABLE = 3 -- the bootstrap's exit status for "this Python cannot do it": the next one is tried

local warned, told_update = false, false
local found = {} ---@type table<string, llama_lsp.Located>  by root ("" for none)

---Where `:LlamaInstall` puts its servers, one directory per version.
---@return string
function M.root()
  return vim.fs.joinpath(vim.fn.stdpath("data"), "llama-lsp", "server")
end

---@class llama_lsp.BootstrapError
---@field error string
---@field step? string
---@field detail? string
---@field fix? string

---@class llama_lsp.RunOptions
---@field wait boolean              run to the end before returning
---@field python? string            the Python to run it with (default: the `python` option, else python3, python)
---@field on_event? fun(event: table)  a progress line: `progress` (with `step`, `steps`, `detail`) or `output`
---@field on_done fun(result?: table, err?: llama_lsp.BootstrapError)

---Run the bootstrap with the first Python that can: one that is not there, is older than 3.10, or
---(installing) has no venv, passes to the next. Its events and the end reach the callbacks in order, on
---the main loop.
---@param args string[]
---@param opts llama_lsp.RunOptions
function M.run(args, opts)
  local wanted = opts.python or config.options.python
  local tried = {}
  local pythons = {}
  for _, candidate in ipairs(wanted and { wanted } or { "python3", "python" }) do
    local path = vim.fn.exepath(candidate)
    if path == "" then
      table.insert(tried, candidate .. ": not found")
    else
      table.insert(pythons, { name = candidate, path = path })
    end
  end

  local function try(i)
    local python = pythons[i]
    if not python then
      return opts.on_done(nil, {
        step = "finding Python",
        error = string.format("no Python 3.10 or later with venv (%s)", table.concat(tried, "; ")),
        fix = M.PYTHON_HINT,
      })
    end
    local queue, last, partial, stderr = {}, nil, "", ""
    local function drain()
      while #queue > 0 do
        local event = table.remove(queue, 1)
        if opts.on_event then
          opts.on_event(event)
        end
      end
    end
    local function take(line)
      local ok, value = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
      if ok and type(value) == "table" then
        if value.progress or value.output then
          table.insert(queue, value)
        else
          last = value
        end
      end
    end
    local function finish(code)
      take(partial)
      partial = ""
      drain()
      if last and code ~= UNUSABLE then
        return opts.on_done(not last.error and last or nil, last.error and last or nil)
      end
      local said = last and last.error or vim.trim(stderr):match("([^\n]*)$")
      table.insert(tried, string.format("%s: %s", python.name, said ~= "" and said or ("exit " .. code)))
      try(i + 1)
    end
    local options = {
      text = true,
      stdout = function(_, data)
        if data then
          local lines = vim.split(partial .. data, "\n", { plain = true })
          partial = table.remove(lines)
          vim.tbl_map(take, lines)
          vim.schedule(drain) -- waiting too: vim.wait runs what is scheduled
        end
      end,
      stderr = function(_, data)
        stderr = (stderr .. (data or "")):sub(-4096)
      end,
    }
    local on_exit = not opts.wait and function(result)
      vim.schedule(function()
        finish(result.code)
      end)
    end or nil
    local cmd = vim.list_extend({ python.path, M.BOOTSTRAP }, args)
    local ok, process = pcall(vim.system, cmd, options, on_exit)
    if not ok then
      table.insert(tried, string.format("%s: %s", python.name, tostring(process)))
      return try(i + 1)
    end
    if opts.wait then
      finish(process:wait().code)
    end
  end
  try(1)
end

---@class llama_lsp.Located
---@field cmd string[]|function  the command to start the server with (`--stdio` included)
---@field source "setting"|"PATH"|"workspace"|"checkout"|"installed"
---@field path? string            the executable, when the command is a list
---@field version? string         the installed version (source "installed")
---@field update? string          a newer version :LlamaInstall would install (source "installed")
---@field installed? table[]      the servers :LlamaInstall installed, newest first (`version`, `dir`)

---What the bootstrap finds, without the `cmd` setting; nil and why when nothing. A found server is
---remembered for the root (until an install or `forget`): each buffer of the root asks again otherwise.
---@param root? string  the buffer's workspace root: its .venv counts when the folder is trusted
---@return llama_lsp.Located?, string? why
function M.find(root)
  local trusted = root ~= nil and trust.is_trusted(root)
  local key = trusted and root or ""
  if found[key] then
    return found[key]
  end
  local args = { "locate", "--root", M.root() }
  if trusted then
    vim.list_extend(args, { "--workspace", root })
  end
  local result, err
  M.run(args, {
    wait = true,
    on_done = function(r, e)
      result, err = r, e
    end,
  })
  if not result then
    return nil, err and string.format("%s. %s", err.error, err.fix or "")
  end
  if not result.command then
    return nil
  end
  local located = {
    cmd = vim.list_extend(vim.deepcopy(result.command), { "--stdio" }),
    source = result.source,
    path = result.command[1],
    version = result.version,
    update = result.update,
    installed = result.installed,
  }
  found[key] = located
  return located
end

---The server command to run: the `cmd` setting, else what the bootstrap finds; nil and why when none.
---@param root? string
---@return llama_lsp.Located?, string? why
function M.locate(root)
  local cmd = config.options.cmd
  if cmd ~= nil then
    return { cmd = cmd, source = "setting", path = type(cmd) == "table" and cmd[1] or nil }
  end
  local located, why = M.find(root)
  if located and located.update and not told_update then
    told_update = true
    vim.notify(
      string.format(
        "llama-lsp: llama-lsp %s can be installed (installed: %s): run :LlamaInstall",
        located.update,
        located.version
      ),
      vim.log.levels.INFO
    )
  end
  return located, why
end

---Say once per session that there is no server (every buffer that attaches would say it again).
---@param why? string  why nothing could be looked for (no Python)
function M.warn_missing(why)
  if not warned then
    warned = true
    vim.notify("llama-lsp: " .. M.NOT_FOUND .. (why and ("\n" .. why) or ""), vim.log.levels.ERROR)
  end
end

---After an install: the servers found before are looked for again, and a later miss is news again.
function M.forget()
  found, warned, told_update = {}, false, false
end

return M
