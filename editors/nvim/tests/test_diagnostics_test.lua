-- Failing tests as diagnostics (`testDiagnostics`), as a user of the plugin sees them: in a folder that is
-- not trusted no test runs; once it is trusted (:LlamaTrust), after `:write` the failures show as ordinary
-- diagnostics, the code actions there offer Fix, and a fix that makes the test pass clears them on the
-- next `:write`; :LlamaUntrust turns the tests off again. Against the real server, in a temporary
-- XDG_STATE_HOME (vim.secure's database). Run by tests/test_nvim_test_diagnostics.py:
--   nvim --headless --clean -c "lua dofile('editors/nvim/tests/test_diagnostics_test.lua')"
-- with LLAMA_LSP_CMD (a JSON list), LLAMA_LSP_MODEL, LLAMA_LSP_CACHE and LLAMA_LSP_WORKSPACE set: a project
-- whose shop.py has a bug in `total` (line 2) and raises in `discount` (line 7), and whose test_shop.py
-- fails test_total (line 5) and TestDiscount::test_too_much (line 14).
-- Prints "ok N - name" per step; the first failing step prints "not ok" with a traceback and exits 1.
local plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2))))
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd.runtime("plugin/llama_lsp.lua")

local llama = require("llama_lsp")
local project = assert(vim.env.LLAMA_LSP_WORKSPACE, "LLAMA_LSP_WORKSPACE is not set")
local shop_path, tests_path = project .. "/shop.py", project .. "/test_shop.py"
local SOURCE = "llama-lsp tests"
local TOTAL_FAILED = "test_shop.py::test_total failed: assert 4 == 3"

-- The server's messages (such as why the tests could not run) go to the report.
local notes = {} ---@type string[]
vim.notify = function(message, level)
  table.insert(notes, message)
  io.stdout:write(string.format("notify %s: %s\n", level or vim.log.levels.INFO, message))
end

local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local test_steps = dofile(vim.fs.joinpath(here, "run_steps.lua"))
local wait_for = test_steps.wait_for

---The test failures shown in a file, by 0-based line. The buffer of a file that is not open holds them
---too (the LSP client adds one), so `:lua vim.diagnostic.setqflist()` lists them.
---@return table<integer, vim.Diagnostic>
local function failures_in(path)
  local shown = {}
  for _, diagnostic in ipairs(vim.diagnostic.get(vim.fn.bufadd(path))) do
    if diagnostic.source == SOURCE then
      shown[diagnostic.lnum] = diagnostic
    end
  end
  return shown
end

---Whether a file shows failures on exactly these 0-based lines.
local function shown_on(path, lines)
  local shown = vim.tbl_keys(failures_in(path))
  table.sort(shown)
  return vim.deep_equal(shown, lines)
end

local function described()
  return vim.inspect({ shop = failures_in(shop_path), tests = failures_in(tests_path) })
end

local shop_buf

local steps = {}
local function step(name, run)
  table.insert(steps, { name = name, run = run })
end

step("setup with testDiagnostics = true, then attach", function()
  llama.setup({
    cmd = vim.json.decode(vim.env.LLAMA_LSP_CMD),
    filetypes = { "python" },
    init_options = {
      model = vim.env.LLAMA_LSP_MODEL,
      contextSize = 2048,
      cacheDir = vim.env.LLAMA_LSP_CACHE,
      warm = false, -- no background decoding: the tests are what this is about
      testDiagnostics = true,
    },
  })
  vim.cmd.edit(shop_path)
  shop_buf = vim.api.nvim_get_current_buf()
  wait_for("the client to attach", 30000, function()
    return llama.client_for(shop_buf) ~= nil
  end)
  -- The project's folder is the workspace folder: the server runs only the tests of files inside one.
  assert(llama.client_for(shop_buf).root_dir == project, llama.client_for(shop_buf).root_dir)
  -- Ready: the server has its settings from workspace/configuration too.
  wait_for("the server to be ready", 120000, function()
    return llama.status(shop_buf).state == "ready"
  end)
  assert(vim.tbl_isempty(failures_in(shop_path)), "failures before any save: " .. described())
  local notice = "llama-lsp: checks are off in " .. project .. ": it is not trusted; :LlamaTrust to trust it"
  assert(vim.tbl_contains(notes, notice), vim.inspect(notes))
end)

step("in a folder that is not trusted, :write runs no tests", function()
  vim.cmd.write()
  -- Trusted, the same write shows them in about a second (the next step); here none comes.
  vim.wait(5000)
  assert(vim.tbl_isempty(failures_in(shop_path)), "tests ran in an untrusted folder: " .. described())
end)

step(":LlamaTrust, then :write shows the failures on the code under test and on the tests", function()
  vim.cmd.LlamaTrust()
  vim.cmd.write()
  wait_for("the failures of the tests", 30000, function()
    return shown_on(shop_path, { 0, 6 }) and shown_on(tests_path, { 4, 13 })
  end)
  -- On `def total`, the function test_total calls; on the `raise` that test_too_much ran into.
  local on_shop = failures_in(shop_path)
  local total = on_shop[0]
  assert(vim.startswith(total.message, TOTAL_FAILED .. "\n"), total.message)
  assert(total.message:find("where 4 = total([1, 2])", 1, true), total.message)
  assert(total.severity == vim.diagnostic.severity.ERROR, vim.inspect(total))
  assert(total.col == 0 and total.end_lnum == 1 and total.end_col == 0, "not the whole line: " .. vim.inspect(total))
  assert(on_shop[6].message:find("test_too_much failed: ValueError: percent over 100", 1, true), on_shop[6].message)
  -- On the failing test's line, the same message.
  assert(failures_in(tests_path)[4].message == total.message, described())
end)

step("the code actions on `def total` offer Fix, about that failure", function()
  -- The menu of `vim.lsp.buf.code_action()`, as a user opens it on the line: its titles.
  local titles
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    titles = vim.tbl_map(opts.format_item, items)
    on_choice(nil) -- dismissed: nothing is applied
  end
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local ok, err = pcall(function()
    vim.lsp.buf.code_action()
    wait_for("the code action menu", 10000, function()
      return titles ~= nil
    end)
  end)
  vim.ui.select = select
  assert(ok, err)
  -- First in the menu, since it is about the failure on this line.
  assert(titles[1] == "Llama: Fix: " .. TOTAL_FAILED, vim.inspect(titles))
end)

step("fixed and written: test_total's failures go, test_too_much's stay", function()
  local fixed = "    return sum(prices)"
  assert(vim.api.nvim_buf_get_lines(shop_buf, 1, 2, false)[1] == "    return sum(prices) + 1")
  vim.api.nvim_buf_set_lines(shop_buf, 1, 2, false, { fixed })
  vim.cmd.write()
  wait_for("test_total's failures to go", 30000, function()
    return shown_on(shop_path, { 6 }) and shown_on(tests_path, { 13 })
  end)
  assert(failures_in(shop_path)[6].message:find("test_too_much failed", 1, true), described())
end)

step(":LlamaUntrust turns the tests off in the server, which clears their failures", function()
  vim.cmd.LlamaUntrust()
  wait_for("the failures to go", 10000, function()
    return shown_on(shop_path, {}) and shown_on(tests_path, {})
  end)
end)

test_steps.run(steps)
