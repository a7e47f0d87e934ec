-- Folder trust in headless Neovim, against the in-process stand-in (no model). Run by tests/test_nvim.py,
-- one scenario per Neovim, in this order, sharing one state directory (XDG_STATE_HOME, where vim.secure
-- keeps its database):
--   nvim --headless --clean -c "lua dofile('editors/nvim/tests/trust_test.lua')"
-- with LLAMA_LSP_WORKSPACE a folder holding code.py, and LLAMA_LSP_SCENARIO one of
--   untrusted   the folder gets the untrusted values and a notice; :LlamaTrust trusts it
--   remembered  a new Neovim: still trusted; :LlamaUntrust takes it back; require_trust = false
--   forgotten   a new Neovim: not trusted again
-- Prints "ok N - name" per step; the first failing step prints "not ok" with a traceback and exits 1.
local plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2))))
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd.runtime("plugin/llama_lsp.lua")

local llama = require("llama_lsp")
local trust = require("llama_lsp.trust")
local verification = require("llama_lsp.verification")

local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local test_steps = dofile(vim.fs.joinpath(here, "run_steps.lua"))
local wait_for = test_steps.wait_for
local fake = dofile(vim.fs.joinpath(here, "stand_in.lua")).new()

local folder = assert(vim.env.LLAMA_LSP_WORKSPACE, "LLAMA_LSP_WORKSPACE is not set")
local NOTICE = "llama-lsp: checks are off in " .. folder .. ": it is not trusted; :LlamaTrust to trust it"

local notes = {} ---@type string[]
vim.notify = function(message)
  table.insert(notes, message)
end

---setup() as a user writes it: checks with the default "auto", tests after each save, no sandbox.
local function setup(extra)
  llama.setup(vim.tbl_extend("force", {
    cmd = fake.cmd,
    filetypes = { "python" },
    init_options = { testDiagnostics = true, verifySandbox = "none" },
  }, extra or {}))
end

---Open code.py and wait for the stand-in; returns the client.
local function open()
  vim.cmd.edit(folder .. "/code.py")
  wait_for("the stand-in to attach", 5000, function()
    local client = llama.client_for(0)
    return client ~= nil and client.initialized
  end)
  return assert(llama.client_for(0))
end

---The trusted-only settings (the keys of trust.UNTRUSTED) of a settings table.
local function trusted_only(settings)
  if settings == nil then
    return nil
  end
  local picked = {}
  for key in pairs(trust.UNTRUSTED) do
    picked[key] = settings[key]
  end
  return picked
end

---The trusted-only settings as the server has them from the plugin, by each way it gets them:
---initializationOptions, the client's answer to a workspace/configuration request, and the last
---workspace/didChangeConfiguration.
local function received()
  local init = assert(fake.requests[1])
  assert(init.method == "initialize", vim.inspect(init))
  local answer = fake.dispatchers.server_request("workspace/configuration", { items = { { section = "llamaLsp" } } })
  local changes = vim.tbl_filter(function(n)
    return n.method == "workspace/didChangeConfiguration"
  end, fake.notifications)
  return {
    init = trusted_only(init.params.initializationOptions),
    pulled = trusted_only(answer[1]),
    changed = trusted_only(#changes > 0 and changes[#changes].params.settings.llamaLsp or nil),
  }
end

local AS_SET = { verifyCommand = "auto", testDiagnostics = true, verifySandbox = "none" }

---The server got `expected` by each of the ways named (`how`: keys of received()).
local function assert_received(expected, how)
  local got = received()
  for _, way in ipairs(how) do
    assert(vim.deep_equal(got[way], expected), way .. ": " .. vim.inspect(got))
  end
end

---What :checkhealth llama_lsp reports.
local function health_report()
  vim.cmd("checkhealth llama_lsp")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  vim.cmd.bwipeout()
  return report
end

local steps = {}
local function step(name, run)
  table.insert(steps, { name = name, run = run })
end

local scenario = vim.env.LLAMA_LSP_SCENARIO

if scenario == "untrusted" then
  step("an untrusted folder: the server gets the untrusted values, and the user is told once", function()
    setup()
    local client = open()
    -- What VS Code sends from an untrusted workspace: no checks, no tests after a save.
    assert(trust.UNTRUSTED.verifyCommand == "" and trust.UNTRUSTED.testDiagnostics == false)
    assert_received(trust.UNTRUSTED, { "init", "pulled" })
    assert(vim.deep_equal(notes, { NOTICE }), vim.inspect(notes))
    -- Said once: a second file of the folder, and setup() again, say nothing more.
    vim.fn.writefile({ "x = 1" }, folder .. "/other.py")
    vim.cmd.edit(folder .. "/other.py")
    wait_for("other.py to attach", 5000, function()
      return llama.client_for(0) ~= nil
    end)
    setup()
    assert_received(trust.UNTRUSTED, { "changed", "pulled" })
    assert(#notes == 1, vim.inspect(notes))
    -- An unchecked edit and :checkhealth say why, with the fix.
    local unchecked = { attempts = 0, output = "", summary = "not verified: no verifyCommand is set" }
    local summary = verification.describe(unchecked, client.root_dir)
    assert(summary == unchecked.summary .. " (" .. NOTICE:sub(#"llama-lsp: " + 1) .. ")", summary)
    local report = health_report()
    assert(report:find(NOTICE:sub(#"llama-lsp: " + 1), 1, true), report)
  end)

  step(":LlamaTrust records the folder in vim.secure's database, and the server gets the settings", function()
    vim.cmd.LlamaTrust()
    assert(notes[#notes] == "llama-lsp: " .. folder .. " is trusted: checks may run its tests", vim.inspect(notes))
    -- Neovim's own API reads the decision (it asks only about a folder it does not know).
    assert(vim.secure.read(folder) == true, "vim.secure does not trust " .. folder)
    local client = assert(llama.client_for(0))
    assert_received(AS_SET, { "changed", "pulled" })
    assert(health_report():find("checks run in " .. folder .. ": it is trusted", 1, true))
    local unchecked = { attempts = 0, output = "", summary = "not verified" }
    assert(verification.describe(unchecked, client.root_dir) == "not verified")
  end)
elseif scenario == "remembered" then
  step("a new Neovim: the folder is still trusted, and nothing is said", function()
    setup()
    open()
    assert_received(AS_SET, { "init", "pulled" })
    assert(#notes == 0, vim.inspect(notes))
  end)

  step(":LlamaUntrust takes it back: the server gets the untrusted values again", function()
    vim.cmd.LlamaUntrust(folder)
    assert(notes[#notes] == "llama-lsp: " .. folder .. " is not trusted: checks are off there", vim.inspect(notes))
    assert_received(trust.UNTRUSTED, { "changed", "pulled" })
    local database = vim.fs.joinpath(vim.fn.stdpath("state"), "trust")
    assert(not table.concat(vim.fn.readfile(database), "\n"):find(folder, 1, true), "still in " .. database)
  end)

  step("require_trust = false: every folder gets the settings as set", function()
    setup({ require_trust = false })
    assert_received(AS_SET, { "changed", "pulled" })
    assert(health_report():find("in every folder (require_trust = false)", 1, true))
  end)
elseif scenario == "forgotten" then
  step("a new Neovim after :LlamaUntrust: the folder is not trusted", function()
    setup()
    open()
    assert_received(trust.UNTRUSTED, { "init", "pulled" })
    assert(vim.deep_equal(notes, { NOTICE }), vim.inspect(notes))
  end)
else
  error("unknown LLAMA_LSP_SCENARIO: " .. tostring(scenario))
end

test_steps.run(steps)
