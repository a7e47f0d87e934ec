---`:LlamaInstall`: puts the server in a virtualenv of its own, stdpath("data")/llama-lsp/server/<version>,
---from a wheel, else the newest `dist/` wheel of the checkout the plugin lives in, else that checkout's
---source. The steps run through vim.system: in the background in a normal session, waited for when
---Neovim is headless (lazy.nvim's `build` step) or when asked to. A failed install leaves no version
---directory behind; a successful one removes the other versions.
local config = require("llama_lsp.config")
local server = require("llama_lsp.server")

local M = {}

local INFO, WARN, ERROR = vim.log.levels.INFO, vim.log.levels.WARN, vim.log.levels.ERROR

M.PYTHON_HINT = "Python 3.10 or later with venv, e.g. sudo apt install python3 python3-venv"
-- Exit 3: too old. A missing venv or ensurepip (Debian's python3-venv) fails the import instead.
local PROBE = "import sys, venv, ensurepip; print('%d.%d.%d' % sys.version_info[:3]); "
  .. "sys.exit(0 if sys.version_info >= (3, 10) else 3)"
local SOURCE_HINT = "Building from source needs a C++ compiler, CMake and git "
  .. "(e.g. sudo apt install build-essential cmake git); or run `make dist` in the checkout and :LlamaInstall the wheel"
local WHEEL_HINT = "Check the wheel (`make dist` in the checkout builds it) and that pip can reach PyPI "
  .. "for the dependencies"
local TAIL_LINES = 12
-- A source build prints little for minutes: pip's latest line now and then says it is alive.
local PROGRESS_EVERY_MS = 15000

local running = false

local function notify(message, level)
  vim.notify("llama-lsp: " .. message, level or INFO)
end

---The checkout the plugin lives in (the plugin is editors/nvim of the repository), or nil.
---@return string?
function M.checkout_root()
  local source = debug.getinfo(1, "S").source:sub(2)
  local file = vim.uv.fs_realpath(source) or vim.fn.fnamemodify(source, ":p")
  -- lua/llama_lsp/install.lua -> the plugin root -> editors -> the checkout
  local plugin_root = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(file)))
  local root = vim.fs.dirname(vim.fs.dirname(plugin_root))
  local pyproject = vim.fs.joinpath(root, "pyproject.toml")
  if vim.fn.filereadable(pyproject) == 1 then
    for _, line in ipairs(vim.fn.readfile(pyproject)) do
      if line:match('^name%s*=%s*"llama%-lsp"') then
        return root
      end
    end
  end
  return nil
end

---The version in a wheel's file name (llama_lsp-VERSION-TAGS.whl), or nil.
---@param path string
---@return string?
function M.wheel_version(path)
  return vim.fs.basename(path):match("^llama_lsp%-([^%-]+)%-.+%.whl$")
end

---The `[project]` version in a checkout's pyproject.toml.
---@param root string
---@return string?
local function source_version(root)
  local section
  for _, line in ipairs(vim.fn.readfile(vim.fs.joinpath(root, "pyproject.toml"))) do
    section = line:match("^%[([^%]]+)%]") or section
    local version = section == "project" and line:match('^version%s*=%s*"([^"]+)"')
    if version then
      return version
    end
  end
  return nil
end

---@class llama_lsp.Package
---@field spec string      what pip installs: a wheel's path or the checkout's root
---@field version string
---@field source boolean   a checkout to build (llama.cpp compiles: minutes)

---What to install: the wheel given, else the checkout's newest dist/ wheel, else the checkout itself.
---@param wheel? string
---@return llama_lsp.Package?, string? error
function M.find_package(wheel)
  if wheel then
    local path = vim.fn.fnamemodify(vim.fn.expand(wheel), ":p")
    if vim.fn.filereadable(path) == 0 then
      return nil, string.format("no such wheel: %s", path)
    end
    local version = M.wheel_version(path)
    if not version then
      return nil, string.format("not a llama-lsp wheel (llama_lsp-VERSION-...whl): %s", path)
    end
    return { spec = path, version = version, source = false }
  end
  local root = M.checkout_root()
  if not root then
    return nil,
      "the plugin is not inside a llama-lsp checkout, so there is nothing to install from: "
        .. "give a wheel, :LlamaInstall path/to/llama_lsp-VERSION-...whl"
  end
  local wheels = vim.tbl_filter(function(path)
    return M.wheel_version(path) ~= nil
  end, vim.fn.glob(vim.fs.joinpath(root, "dist", "llama_lsp-*.whl"), false, true))
  table.sort(wheels, function(a, b)
    local va, vb = M.wheel_version(a), M.wheel_version(b)
    if va ~= vb then
      return server.newer(va, vb)
    end
    return vim.fn.getftime(a) > vim.fn.getftime(b)
  end)
  if wheels[1] then
    return { spec = wheels[1], version = M.wheel_version(wheels[1]), source = false }
  end
  local version = source_version(root)
  if not version then
    return nil, string.format("no version in %s/pyproject.toml", root)
  end
  return { spec = root, version = version, source = true }
end

---@class llama_lsp.Job
---@field wait boolean   run each step to its end before returning (headless, `!`, `wait = true`)
---@field dir? string    the version directory, once the install writes it

---@class llama_lsp.Ran
---@field code integer
---@field lines string[]  the last lines of stdout and stderr together, blank ones left out

---Run a command to its end: waiting for it, or yielding the install's coroutine until it exits.
---@param job llama_lsp.Job
---@param cmd string[]
---@param on_line? fun(line: string)  each line as it comes (in a fast callback: schedule what it does)
---@return llama_lsp.Ran
local function exec(job, cmd, on_line)
  local lines = {}
  local function add(line)
    line = line:gsub("\r", "")
    if vim.trim(line) ~= "" then
      table.insert(lines, line)
      if #lines > 200 then
        table.remove(lines, 1)
      end
      if on_line then
        on_line(line)
      end
    end
  end
  local partial = {}
  local function collect(stream)
    partial[stream] = ""
    return function(_, data)
      if data then
        local parts = vim.split(partial[stream] .. data, "\n", { plain = true })
        partial[stream] = table.remove(parts)
        vim.tbl_map(add, parts)
      end
    end
  end
  local co = coroutine.running()
  local options = {
    text = true,
    stdout = collect("stdout"),
    stderr = collect("stderr"),
    env = { PIP_NO_INPUT = "1", PYTHONUNBUFFERED = "1" },
  }
  local on_exit = not job.wait and function(result)
    vim.schedule(function()
      M._resume(job, co, result)
    end)
  end or nil
  local ok, process = pcall(vim.system, cmd, options, on_exit)
  if not ok then -- not executable
    return { code = -1, lines = { tostring(process) } }
  end
  local result = job.wait and process:wait() or coroutine.yield()
  for _, rest in pairs(partial) do
    add(rest)
  end
  return { code = result.code, lines = lines }
end

---The first Python of the candidates that is 3.10+ with venv and ensurepip.
---@return string? python, string version_or_tried
local function find_python(job, wanted)
  local tried = {}
  for _, candidate in ipairs(wanted and { wanted } or { "python3", "python" }) do
    local path = vim.fn.exepath(candidate)
    if path == "" then
      table.insert(tried, candidate .. ": not found")
    else
      local ran = exec(job, { path, "-c", PROBE })
      if ran.code == 0 then
        return path, ran.lines[1] or "?"
      elseif ran.code == 3 then
        table.insert(tried, string.format("%s: Python %s is older than 3.10", path, ran.lines[1] or "?"))
      else
        table.insert(tried, string.format("%s: %s", path, ran.lines[#ran.lines] or ("exit " .. ran.code)))
      end
    end
  end
  return nil, table.concat(tried, "; ")
end

---Remove what the failed install wrote (the version directory, and the parents it left empty) and say
---which step failed, how it ended, and what to install.
---@return false, string
local function fail(job, step, ran, hint)
  if job.dir then
    vim.fn.delete(job.dir, "rf")
    vim.fn.delete(server.root(), "d") -- only when empty
    vim.fn.delete(vim.fs.dirname(server.root()), "d")
  end
  server.installing = nil
  local message = string.format(":LlamaInstall failed: %s", step)
  if ran then
    local tail = vim.list_slice(ran.lines, math.max(#ran.lines - TAIL_LINES + 1, 1))
    message = string.format("%s (exit %d):\n%s", message, ran.code, table.concat(tail, "\n"))
  end
  if hint then
    message = message .. "\n" .. hint
  end
  notify(message, ERROR)
  return false, message
end

---@return boolean ok, llama_lsp.InstalledServer|string result_or_error
local function run(job, opts)
  local python, found = find_python(job, opts.python or config.options.python)
  if not python then
    return fail(job, "no Python to make the server's virtualenv with: " .. found, nil, "Install " .. M.PYTHON_HINT)
  end
  local package, err = M.find_package(opts.wheel)
  if not package then
    return fail(job, err)
  end
  local dir = vim.fs.joinpath(server.root(), package.version)
  local executable = vim.fs.joinpath(dir, "bin", "llama-lsp")
  if package.source then
    notify(
      string.format(
        "building llama-lsp %s from %s: pip compiles llama.cpp, which takes ~10-20 minutes "
          .. "(`make dist` there builds a wheel that installs in seconds)",
        package.version,
        package.spec
      )
    )
  else
    notify(string.format("installing llama-lsp %s from %s", package.version, package.spec))
  end
  job.dir = dir
  server.installing = dir
  vim.fn.delete(dir, "rf") -- a reinstall starts clean
  vim.fn.mkdir(server.root(), "p")

  notify(string.format("[1/3] %s -m venv %s (Python %s)", python, dir, found))
  local ran = exec(job, { python, "-m", "venv", dir })
  if ran.code ~= 0 then
    return fail(job, "python -m venv", ran, "Install " .. M.PYTHON_HINT)
  end

  notify(string.format("[2/3] pip install %s", package.spec))
  local latest, last_shown = nil, vim.uv.now()
  local pip = { vim.fs.joinpath(dir, "bin", "python"), "-m", "pip", "install", "--disable-pip-version-check" }
  ran = exec(job, vim.list_extend(pip, { package.spec }), function(line)
    latest = line
    if vim.uv.now() - last_shown >= PROGRESS_EVERY_MS then
      last_shown = vim.uv.now()
      vim.schedule(function()
        notify("pip: " .. latest)
      end)
    end
  end)
  if ran.code ~= 0 then
    return fail(job, "pip install " .. package.spec, ran, package.source and SOURCE_HINT or WHEEL_HINT)
  end
  notify("pip: " .. (ran.lines[#ran.lines] or "done"))

  notify("[3/3] llama-lsp --version")
  ran = exec(job, { executable, "--version" })
  local expected = "llama-lsp " .. package.version
  if ran.code ~= 0 or ran.lines[1] ~= expected then
    return fail(
      job,
      string.format("llama-lsp --version (expected %q first)", expected),
      ran,
      "The installed server does not run here: install a wheel built for this machine (`make dist` in the checkout)"
    )
  end

  -- Only now: a failed upgrade keeps the version that worked.
  server.installing = nil
  for _, name in ipairs(vim.fn.readdir(server.root())) do
    if name ~= package.version then
      vim.fn.delete(vim.fs.joinpath(server.root(), name), "rf")
    end
  end
  server.reset_warning()
  notify(string.format("llama-lsp %s installed: %s", package.version, executable))
  require("llama_lsp").attach_all(true)
  return true, { version = package.version, dir = dir, executable = executable }
end

---Continue an install's coroutine; an error inside it still cleans up and is reported.
function M._resume(job, co, ...)
  local ok, err = coroutine.resume(co, ...)
  if not ok then
    running = false
    fail(job, "an error in the plugin: " .. debug.traceback(co, err))
  end
end

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
  ---@type llama_lsp.Job
  local job = { wait = opts.wait == true or (opts.wait == nil and #vim.api.nvim_list_uis() == 0) }
  local outcome
  running = true
  local co = coroutine.create(function()
    outcome = { run(job, opts) }
    running = false
    if opts.on_done then
      opts.on_done(outcome[1], outcome[2])
    end
  end)
  M._resume(job, co)
  if job.wait then
    if not outcome then -- the coroutine failed: _resume reported it
      return false, "the install failed"
    end
    return outcome[1], outcome[2]
  end
end

return M
