---`:LlamaInstall`: the bootstrap both editors share (python/llama_lsp_bootstrap.py, run by server.lua)
---installs the server into a virtualenv of its own, stdpath("data")/llama-lsp/server/<version>, from the
---wheel given, else the newest `dist/` wheel of the checkout the plugin lives in, else that checkout's
---source; this module shows its progress with vim.notify. In the background in a normal session, waited
---for when Neovim is headless (lazy.nvim's `build` step) or when asked to. A failed install leaves no
---version directory behind; a successful one removes the other versions.
local server = require("llama_lsp.server")

local M = {}

local INFO, WARN, ERROR = vim.log.levels.INFO, vim.log.levels.WARN, vim.log.levels.ERROR

M.PYTHON_HINT = server.PYTHON_HINT
local TAIL_LINES = 12
-- A source build prints little for minutes: the step's latest line now and then says it is alive.
local PROGRESS_EVERY_MS = 15000

local running = false

local function notify(message, level)
  vim.notify("llama-lsp: " .. message, level or INFO)
end

---The bootstrap's progress lines as notifications: each step, and its output's latest line every 15 s
---and when the step ends.
---@return fun(event: table)  on_event
---@return fun()              flush: shows the latest line if it has not been
local function progress()
  local prefix, latest, shown_at = "", nil, vim.uv.now()
  local function flush()
    if latest then
      notify(prefix .. latest)
      latest = nil
    end
  end
  return function(event)
    if event.progress then
      flush()
      prefix = event.step and string.format("[%d/%d] ", event.step, event.steps) or ""
      notify(prefix .. event.progress .. (event.detail and (": " .. event.detail) or ""))
      shown_at = vim.uv.now()
    elseif event.output then
      latest = event.output
      if vim.uv.now() - shown_at >= PROGRESS_EVERY_MS then
        shown_at = vim.uv.now()
        flush()
      end
    end
  end, flush
end

---@class llama_lsp.InstalledServer
---@field version string
---@field dir string
---@field executable string

---@class llama_lsp.InstallOptions
---@field wheel? string    the wheel to install (default: the checkout's newest dist/ wheel, else its source)
---@field python? string   the Python to make the virtualenv with (default: the `python` option, else
---                        `python3`, then `python`, on PATH)
---@field wait? boolean    return only once done (default: when Neovim is headless, as in lazy.nvim's build)
---@field on_done? fun(ok: boolean, result: llama_lsp.InstalledServer|string)

---Install the server. Waiting: returns `ok, result` (the installed server, or the error message);
---otherwise returns nothing and `on_done` gets them. Progress and errors go through vim.notify.
---@param opts? llama_lsp.InstallOptions
---@return boolean? ok, (llama_lsp.InstalledServer|string)? result
function M.install(opts)
  opts = opts or {}
  vim.validate({
    ["opts.wheel"] = { opts.wheel, "string", true },
    ["opts.python"] = { opts.python, "string", true },
    ["opts.wait"] = { opts.wait, "boolean", true },
    ["opts.on_done"] = { opts.on_done, "function", true },
  })
  if running then
    local message = "an install is running already"
    notify(message, WARN)
    return false, message
  end
  local wait = opts.wait == true or (opts.wait == nil and #vim.api.nvim_list_uis() == 0)
  local args = { "install", "--root", server.root(), "--prune" }
  if opts.wheel then
    vim.list_extend(args, { "--wheel", vim.fn.fnamemodify(vim.fn.expand(opts.wheel), ":p") })
  end
  local on_event, flush = progress()
  local outcome
  running = true
  server.run(args, {
    wait = wait,
    python = opts.python,
    on_event = on_event,
    on_done = function(result, err)
      running = false
      flush()
      if result then
        local executable = result.command[1]
        server.forget()
        notify(string.format("llama-lsp %s installed: %s", result.version, executable))
        require("llama_lsp").attach_all(true)
        outcome = { true, { version = result.version, dir = result.dir, executable = executable } }
      else
        local detail = vim.split(err.detail or "", "\n", { trimempty = true })
        local tail = vim.list_slice(detail, math.max(#detail - TAIL_LINES + 1, 1))
        local message = ":LlamaInstall: " .. err.error
        if #tail > 0 then
          message = message .. ":\n" .. table.concat(tail, "\n")
        end
        if err.fix and err.fix ~= "" then
          message = message .. "\n" .. err.fix
        end
        notify(message, ERROR)
        outcome = { false, message }
      end
      if opts.on_done then
        opts.on_done(outcome[1], outcome[2])
      end
    end,
  })
  if wait then
    return outcome[1], outcome[2]
  end
end

return M
