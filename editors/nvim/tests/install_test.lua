-- :LlamaInstall in headless Neovim, for real: the bootstrap, Python, venv and pip run. Run by
-- tests/test_nvim_install.py from a copy of the plugin outside the checkout (as a user installs the folder):
--   nvim --headless --clean -c "lua dofile('<copy>/tests/install_test.lua')"
-- with XDG_DATA_HOME a temporary directory, PATH as the scenario needs it, and LLAMA_LSP_SCENARIO one of
--   install    LLAMA_LSP_WHEEL installed with the command (headless: it waits), then the chat and
--              :checkhealth on the installed server (LLAMA_LSP_MODEL, LLAMA_LSP_WORKSPACE, LLAMA_LSP_CACHE)
--   no-python  PATH without any Python: the error names what to install, and nothing is written
--   corrupt    LLAMA_LSP_WHEEL is not a zip file, installed in the background: the error names the step
-- Prints every notification as "notify LEVEL: message", "ok N - name" per step; the first failing step
-- prints "not ok" with a traceback and exits 1.
local plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2))))
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd.runtime("plugin/llama_lsp.lua")

local llama = require("llama_lsp")
local server = require("llama_lsp.server")
local install = require("llama_lsp.install")

local notes = {} ---@type { message: string, level: integer }[]
vim.notify = function(message, level)
  table.insert(notes, { message = message, level = level or vim.log.levels.INFO })
  io.stdout:write(string.format("notify %s: %s\n", level or vim.log.levels.INFO, message))
end

---The notifications since `from` (an index into `notes`) at `level`, joined.
local function noted(from, level)
  local texts = {}
  for i = from + 1, #notes do
    if level == nil or notes[i].level == level then
      table.insert(texts, notes[i].message)
    end
  end
  return table.concat(texts, "\n")
end

local function has(text, part)
  assert(text:find(part, 1, true), string.format("%q not in:\n%s", part, text))
end

local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local test_steps = dofile(vim.fs.joinpath(here, "run_steps.lua"))
local wait_for = test_steps.wait_for

local wheel = vim.env.LLAMA_LSP_WHEEL
local version_dir = vim.fs.joinpath(server.root(), vim.fs.basename(wheel):match("^llama_lsp%-([^%-]+)%-") or "?")
local ERROR = vim.log.levels.ERROR
local steps = {}
local function step(name, run)
  table.insert(steps, { name = name, run = run })
end

local scenario = vim.env.LLAMA_LSP_SCENARIO

if scenario == "install" then
  local workspace = vim.env.LLAMA_LSP_WORKSPACE
  local source_buf

  step("without a server, opening a file says to run :LlamaInstall", function()
    assert(vim.fn.exepath("llama-lsp") == "", "llama-lsp is on PATH: " .. vim.fn.exepath("llama-lsp"))
    local before = #notes
    llama.setup({
      filetypes = { "python" },
      init_options = {
        model = vim.env.LLAMA_LSP_MODEL,
        contextSize = 4096,
        slots = 2,
        maxTokens = 96,
        cacheDir = vim.env.LLAMA_LSP_CACHE,
        warm = false,
      },
    })
    vim.cmd.edit(workspace .. "/inventory.py")
    source_buf = vim.api.nvim_get_current_buf()
    has(noted(before, ERROR), "Run :LlamaInstall")
    assert(llama.client_for(source_buf) == nil, "a client without a server")
  end)

  step(":LlamaInstall WHEEL installs the server and removes the other versions", function()
    local before = #notes
    vim.cmd("LlamaInstall " .. vim.fn.fnameescape(wheel))
    -- Headless: the command returned when it was done.
    local said = noted(before)
    for _, part in ipairs({
      "[1/3] creating the virtualenv: ",
      "-m venv",
      "[2/3] installing the server with pip: pip install " .. wheel,
      "[2/3] Successfully installed",
      "[3/3] checking llama-lsp --version",
    }) do
      has(said, part)
    end
    has(said, "llama-lsp 0.1.0 installed: " .. version_dir .. "/bin/llama-lsp")
    assert(noted(before, ERROR) == "", noted(before, ERROR))
    local entries = vim.fn.readdir(server.root())
    assert(vim.deep_equal(entries, { "0.1.0" }), vim.inspect(entries)) -- 0.0.9 is gone
    local found = assert(server.locate(), "no server found after the install")
    assert(found.source == "installed" and found.path == version_dir .. "/bin/llama-lsp", vim.inspect(found))
  end)

  step("the open file attaches to the installed server, and :LlamaChat answers", function()
    wait_for("the client to attach", 30000, function()
      return llama.client_for(source_buf) ~= nil
    end)
    local client = assert(llama.client_for(source_buf))
    assert(client.config.cmd[1] == version_dir .. "/bin/llama-lsp", vim.inspect(client.config.cmd))
    wait_for("the model to load", 120000, function()
      return llama.status(source_buf).state == "ready"
    end)
    local chat = require("llama_lsp.chat")
    vim.cmd("LlamaChat What does restock do?")
    wait_for("the answer", 180000, function()
      return not chat.info().answering
    end)
    local last = assert(chat.info().last, "no answer recorded")
    assert(last.result and vim.trim(last.result.content) ~= "", "no answer: " .. vim.inspect(last))
  end)

  step(":checkhealth names the installed server and its version", function()
    vim.cmd("checkhealth llama_lsp")
    local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    has(report, "OK server: " .. version_dir .. "/bin/llama-lsp (installed by :LlamaInstall)")
    has(report, "OK server starts: llama-lsp 0.1.0\n")
    has(report, "OK native library 0.1.0 (ABI ")
    assert(not report:find("ERROR", 1, true), report)
  end)
elseif scenario == "no-python" then
  step(":LlamaInstall without a Python names what to install and writes nothing", function()
    assert(vim.fn.exepath("python3") == "" and vim.fn.exepath("python") == "", "a Python is on PATH")
    local before = #notes
    vim.cmd("LlamaInstall " .. vim.fn.fnameescape(wheel))
    local errors = noted(before, ERROR)
    has(errors, "Python 3.10 or later with venv, e.g. sudo apt install python3 python3-venv")
    has(errors, "python3: not found; python: not found")
    assert(vim.fn.isdirectory(vim.fs.dirname(server.root())) == 0, "the install wrote " .. server.root())
  end)

  step("install() says the same, and opening a file says why no server is found", function()
    local ok, message = install.install({ wait = true })
    assert(ok == false and message:find("python3-venv", 1, true), vim.inspect({ ok, message }))
    assert(vim.fn.isdirectory(vim.fs.dirname(server.root())) == 0, "the install wrote " .. server.root())
    local found, why = server.locate()
    assert(found == nil and why:find("python3: not found; python: not found", 1, true), vim.inspect({ found, why }))
  end)

  step("no server: :checkhealth says to run :LlamaInstall", function()
    vim.cmd("checkhealth llama_lsp")
    local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
    has(report, "ERROR no server found")
    has(report, "Run :LlamaInstall: it installs the server into " .. server.root())
  end)
elseif scenario == "corrupt" then
  step("a corrupt wheel, in the background: the error names pip, no version directory remains", function()
    local before, outcome = #notes, nil
    local returned = { llama.install({
      wheel = wheel,
      wait = false,
      on_done = function(ok, result)
        outcome = { ok = ok, result = result }
      end,
    }) }
    assert(#returned == 0 and outcome == nil, "install() did not return before the install ended")
    wait_for("the install to fail", 120000, function()
      return outcome ~= nil
    end)
    assert(outcome.ok == false, vim.inspect(outcome))
    local errors = noted(before, ERROR)
    assert(errors == "llama-lsp: " .. outcome.result, vim.inspect({ errors = errors, outcome = outcome }))
    has(errors, ":LlamaInstall: installing the server with pip failed (exit 1):\n")
    has(errors, "the wheel is whole (`make dist` in a llama-lsp checkout builds it)")
    has(noted(before), "[2/3] installing the server with pip: pip install " .. wheel)
    assert(vim.fn.isdirectory(version_dir) == 0, version_dir .. " remains")
    -- The version that was there before stays.
    assert(vim.deep_equal(vim.fn.readdir(server.root()), { "0.0.9" }), vim.inspect(vim.fn.readdir(server.root())))
    assert(server.locate() == nil or server.locate().source ~= "installed")
  end)
else
  error("LLAMA_LSP_SCENARIO: " .. tostring(scenario))
end

test_steps.run(steps)
