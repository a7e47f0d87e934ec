-- The plugin end to end in headless Neovim, against the real server and model, in the order a user
-- meets it. Run by tests/test_nvim.py:
--   nvim --headless --clean -c "lua dofile('editors/nvim/tests/plugin_test.lua')"
-- (not `-l`: with `-l` Neovim exits when it waits for a key, and the completion steps type in Insert mode)
-- with LLAMA_LSP_CMD (a JSON list), LLAMA_LSP_MODEL (chat), LLAMA_LSP_EDIT_MODEL (code actions),
-- LLAMA_LSP_WORKSPACE and LLAMA_LSP_CACHE set. Optional: LLAMA_LSP_BACKEND (JSON), the `backend` setting
-- (a remote server answers instead of the model in the server's process); LLAMA_LSP_STEPS (a JSON list
-- of step names), only these steps, in this order.
-- Without LLAMA_LSP_WORKSPACE it runs the offline steps instead: the plugin against an in-process stand-in
-- for the server that answers with canned results, so no server or model is needed.
-- Prints "ok N - name" per step; the first failing step prints "not ok" with a traceback and exits 1.
local plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2))))
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd.runtime("plugin/llama_lsp.lua")

local workspace = vim.env.LLAMA_LSP_WORKSPACE
local backend = vim.env.LLAMA_LSP_BACKEND and vim.json.decode(vim.env.LLAMA_LSP_BACKEND)
local llama = require("llama_lsp")
local chat = require("llama_lsp.chat")
local protocol = require("llama_lsp.protocol")
local verification = require("llama_lsp.verification")

local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local test_steps = dofile(vim.fs.joinpath(here, "run_steps.lua"))
local wait_for = test_steps.wait_for
local in_insert_mode = test_steps.in_insert_mode

local function chat_text()
  return table.concat(vim.api.nvim_buf_get_lines(chat.info().buf, 0, -1, false), "\n")
end

---Ask through the command, as a user types it, and wait for the answer.
local function ask(command)
  vim.cmd(command)
  wait_for("the answer to " .. command, 180000, function()
    return not chat.info().answering
  end)
  local last = assert(chat.info().last, "no answer recorded")
  assert(last.result, "the chat failed: " .. vim.inspect(last))
  return last.result, last.n_partials
end

---The ghost text's extmarks in a buffer (Neovim's own namespace where it shows them, on 0.12+).
local function ghost_marks(buf)
  local completion = require("llama_lsp.completion")
  local ns = completion.info().namespace
  if completion.native() then
    ns = vim.api.nvim_get_namespaces()["nvim.lsp.inline_completion"] or -1
  end
  return vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
end

local steps, offline_steps = {}, {}
local function step(name, run)
  table.insert(steps, { name = name, run = run })
end
local function offline_step(name, run)
  table.insert(offline_steps, { name = name, run = run })
end

-- ---- offline: the plugin against a stand-in server ------------------------------------------------

local PASSED = {
  command = "pytest -q {file}",
  passed = true,
  attempts = 2,
  output = "1 passed in 0.01s",
  summary = "verified: `pytest -q {file}` passed (attempt 2)",
}
local FAILED = {
  command = "pytest -q",
  passed = false,
  attempts = 3,
  output = "E   assert -900.0 == 90.0\n1 failed in 0.02s\n[exit status 1]",
  summary = "not verified: `pytest -q` failed on all 3 attempts",
}
-- As the client decodes it: JSON nulls in objects become nil.
local UNCHECKED = {
  attempts = 0,
  output = "",
  summary = "not verified: it parses, but no verifyCommand is set to check it",
}

local fake = dofile(vim.fs.joinpath(here, "stand_in.lua")).new()
local fake_server = fake.cmd

---Capture vim.notify while `run(seen)` runs; returns the messages as { msg, level } (`seen`, which
---`run` may wait on).
local function notifications_during(run)
  local seen, original = {}, vim.notify
  vim.notify = function(msg, level)
    table.insert(seen, { msg = msg, level = level })
  end
  local ok, err = pcall(run, seen)
  vim.notify = original
  assert(ok, err)
  return seen
end

local fake_buf

offline_step("the verification summaries: passed, failed, unchecked", function()
  local levels = vim.log.levels
  local cases = {
    { PASSED, PASSED.summary, levels.INFO, false },
    { FAILED, FAILED.summary, levels.WARN, true },
    { UNCHECKED, UNCHECKED.summary, levels.INFO, false },
    -- JSON nulls kept as vim.NIL still read as "not checked".
    {
      vim.tbl_extend("force", UNCHECKED, { command = vim.NIL, passed = vim.NIL }),
      UNCHECKED.summary,
      levels.INFO,
      false,
    },
    -- No summary from the server: a plain one stands in.
    { { passed = false, attempts = 1, output = "" }, "not verified: the check failed", levels.WARN, true },
  }
  for _, case in ipairs(cases) do
    local v, summary, level, failed = unpack(case)
    local text, got_level = verification.describe(v)
    assert(text == summary and got_level == level, vim.inspect({ v, text, got_level }))
    assert(verification.failed(v) == failed, vim.inspect(v))
  end
  local stats = { nPrompt = 100, nReused = 90, nGenerated = 20, tPrefillMs = 100, tDecodeMs = 400 }
  local stats_line = "_" .. chat.describe_stats(stats) .. "_"
  local edit = { changes = {} }
  local function footer(result)
    local lines, warning = chat.footer(result)
    return { lines = lines, warning = warning }
  end
  local expected = {
    [PASSED] = { "_An edit is proposed: `:LlamaApply` applies it._", "_" .. PASSED.summary .. "_", stats_line },
    [FAILED] = {
      "_An edit is proposed: `:LlamaApply` applies it._",
      "_" .. FAILED.summary .. " (`:LlamaCheckOutput` shows why)_",
      stats_line,
    },
    [UNCHECKED] = { "_An edit is proposed: `:LlamaApply` applies it._", "_" .. UNCHECKED.summary .. "_", stats_line },
  }
  for v, lines in pairs(expected) do
    local got = footer({ content = "", edit = edit, verification = v, stats = stats })
    assert(vim.deep_equal(got.lines, lines), vim.inspect(got))
    assert(got.warning == (v == FAILED and 2 or nil), vim.inspect(got))
  end
  -- No verification (no edit, no check): the footer is as before.
  local plain = footer({ content = "", stats = stats })
  assert(vim.deep_equal(plain.lines, { stats_line }) and plain.warning == nil, vim.inspect(plain))
  -- The stats line: speculative decoding's drafted tokens only when some were drafted.
  local described = chat.describe_stats(stats)
  assert(described == "90 of 100 prompt tokens cached (90%) · 20 tokens · 0.5 s", described)
  local no_drafts = chat.describe_stats(vim.tbl_extend("force", stats, { nDrafted = 0, nAccepted = 0 }))
  assert(no_drafts == described, no_drafts)
  local speculative = chat.describe_stats(vim.tbl_extend("force", stats, { nDrafted = 20, nAccepted = 18 }))
  local expected_speculative = "90 of 100 prompt tokens cached (90%) · 20 tokens · 18 of 20 drafted accepted · 0.5 s"
  assert(speculative == expected_speculative, speculative)
  -- What :LlamaCheckOutput shows.
  local shown = verification.output_lines(FAILED)
  assert(vim.deep_equal(shown, {
    FAILED.summary,
    "",
    "$ pytest -q",
    "E   assert -900.0 == 90.0",
    "1 failed in 0.02s",
    "[exit status 1]",
  }), vim.inspect(shown))
  assert(vim.deep_equal(verification.output_lines(UNCHECKED), { UNCHECKED.summary }))
end)

offline_step("setup passes the verify and backend settings to the server", function()
  llama.setup({
    filetypes = { "python" },
    init_options = {
      verifyCommand = "pytest -q {file}",
      verifySandbox = "none",
      verifyTimeout = 30,
      maxVerifyAttempts = 2,
      warm = false,
    },
  })
  -- setup() only takes a command list; the stand-in goes in behind it.
  require("llama_lsp.config").options.cmd = fake_server
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  -- Trusted, as a user trusts a folder (trust_test.lua has the folder that is not).
  vim.cmd.LlamaTrust(dir)
  vim.fn.writefile({ "def f(x):", "    return x" }, dir .. "/code.py")
  vim.cmd.edit(dir .. "/code.py")
  fake_buf = vim.api.nvim_get_current_buf()
  wait_for("the stand-in to attach", 5000, function()
    local client = llama.client_for(fake_buf)
    return client ~= nil and client.initialized
  end)
  local init = fake.requests[1]
  assert(init.method == "initialize", vim.inspect(init))
  local sent = init.params.initializationOptions
  assert(sent.verifyCommand == "pytest -q {file}" and sent.verifyTimeout == 30, vim.inspect(sent))
  assert(sent.maxVerifyAttempts == 2 and sent.verifySandbox == "none", vim.inspect(sent))
  assert(sent.warm == false, "the warm setting did not reach the server: " .. vim.inspect(sent))
  assert(vim.deep_equal(llama.client_for(fake_buf).settings.llamaLsp, sent), "workspace/configuration differs")
  -- Left out of a later setup(), verifyCommand goes back to the default in the running server, not kept.
  llama.setup({ filetypes = { "python" }, init_options = { verifyTimeout = 30 } })
  require("llama_lsp.config").options.cmd = fake_server
  local change = fake.notifications[#fake.notifications]
  assert(change.method == "workspace/didChangeConfiguration", vim.inspect(change))
  assert(change.params.settings.llamaLsp.verifyCommand == "auto", vim.inspect(change))
  -- false turns checks off.
  llama.setup({ filetypes = { "python" }, init_options = { verifyCommand = false } })
  require("llama_lsp.config").options.cmd = fake_server
  local off = fake.notifications[#fake.notifications]
  assert(off.params.settings.llamaLsp.verifyCommand == "", vim.inspect(off))
  -- And a check without a sandbox goes back to the sandbox.
  assert(change.params.settings.llamaLsp.verifySandbox == "auto", vim.inspect(change))
  -- The same for a backend: left out, the running server goes back to its own model.
  assert(sent.backend == "local", vim.inspect(sent))
  local remote = { url = "http://gpu-box:8080/v1", model = "m" }
  llama.setup({ filetypes = { "python" }, init_options = { backend = remote } })
  require("llama_lsp.config").options.cmd = fake_server
  change = fake.notifications[#fake.notifications]
  assert(vim.deep_equal(change.params.settings.llamaLsp.backend, remote), vim.inspect(change))
  llama.setup({ filetypes = { "python" }, init_options = { verifyTimeout = 30 } })
  require("llama_lsp.config").options.cmd = fake_server
  change = fake.notifications[#fake.notifications]
  assert(change.params.settings.llamaLsp.backend == "local", vim.inspect(change))
end)

offline_step("the chat footer shows the check, a failed one as a warning", function()
  local client = assert(llama.client_for(fake_buf))
  local function answer(v)
    fake.replies["assistant/chat"] = {
      conversationId = "c1",
      content = "Here is a fix.",
      edit = { changes = {} },
      verification = v,
      stats = { nPrompt = 10, nReused = 5, nGenerated = 3, tPrefillMs = 10, tDecodeMs = 10 },
    }
    vim.cmd.buffer(fake_buf)
    vim.cmd("LlamaChat Fix it")
    wait_for("the answer", 5000, function()
      return not chat.info().answering
    end)
    assert(chat.info().last.result, vim.inspect(chat.info().last))
  end
  local ns = vim.api.nvim_create_namespace("llama_lsp.chat")
  local function warnings()
    local rows = {}
    for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(chat.info().buf, ns, 0, -1, { details = true })) do
      assert(mark[4].hl_group == "DiagnosticWarn", vim.inspect(mark))
      table.insert(rows, vim.api.nvim_buf_get_lines(chat.info().buf, mark[2], mark[2] + 1, false)[1])
    end
    return rows
  end
  answer(PASSED)
  assert(chat_text():find("Here is a fix.\n\n_An edit is proposed", 1, true), chat_text())
  assert(chat_text():find("\n_" .. PASSED.summary .. "_\n_", 1, true), chat_text())
  assert(#warnings() == 0, vim.inspect(warnings()))
  answer(FAILED)
  local failed_line = "_" .. FAILED.summary .. " (`:LlamaCheckOutput` shows why)_"
  assert(chat_text():find("\n" .. failed_line .. "\n", 1, true), chat_text())
  assert(vim.deep_equal(warnings(), { failed_line }), vim.inspect(warnings()))
  -- The output of the failed check is one command away.
  vim.cmd("LlamaCheckOutput")
  local shown = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  assert(vim.api.nvim_buf_get_name(0):match("llama%-check$"), vim.api.nvim_buf_get_name(0))
  assert(vim.deep_equal(shown, verification.output_lines(FAILED)), vim.inspect(shown))
  vim.cmd("close")
  answer(UNCHECKED)
  assert(chat_text():find("\n_" .. UNCHECKED.summary .. "_\n", 1, true), chat_text())
  assert(#warnings() == 1, "an unchecked edit was highlighted")
  -- A plain answer (no edit, no check) gets no verification line.
  answer(nil)
  local tail = vim.api.nvim_buf_get_lines(chat.info().buf, -3, -1, false)
  assert(not table.concat(tail, "\n"):find("verif", 1, true), vim.inspect(tail))
  vim.cmd("LlamaNew")
  assert(#warnings() == 0 and chat_text() == "")
end)

offline_step("code actions tell whether their edit was checked", function()
  local uri = vim.uri_from_bufnr(fake_buf)
  fake.replies["textDocument/codeAction"] = {
    { title = "Llama: Fix", kind = "quickfix", data = { uri = uri, kind = "fix" } },
  }
  local edit_count = 0
  local function resolve_with(v)
    fake.replies["codeAction/resolve"] = function(action)
      edit_count = edit_count + 1
      local resolved = vim.deepcopy(action)
      resolved.edit = {
        changes = {
          [uri] = {
            {
              range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 0 } },
              newText = "# fixed\n",
            },
          },
        },
      }
      resolved.data.verification = v
      return resolved
    end
  end
  vim.cmd.buffer(fake_buf)
  local levels = vim.log.levels
  for _, case in ipairs({ { FAILED, levels.WARN }, { PASSED, levels.INFO }, { UNCHECKED, levels.INFO } }) do
    local v, level = unpack(case)
    resolve_with(v)
    local lines_before = vim.api.nvim_buf_line_count(fake_buf)
    local seen = notifications_during(function()
      vim.lsp.buf.code_action({ apply = true })
      wait_for("the edit", 5000, function()
        return vim.api.nvim_buf_line_count(fake_buf) > lines_before
      end)
    end)
    assert(#seen == 1, vim.inspect(seen))
    local expected = "llama-lsp: " .. v.summary
    if v == FAILED then
      expected = expected .. " (:LlamaCheckOutput shows why)"
    end
    assert(seen[1].msg == expected and seen[1].level == level, vim.inspect(seen))
    assert(verification.last() ~= nil and verification.last().summary == v.summary)
  end
  assert(edit_count == 3)
  -- The executeCommand form reports it too (with the default handler), and other commands say nothing.
  local client = assert(llama.client_for(fake_buf))
  fake.replies["workspace/executeCommand"] = function(params)
    if params.command == "llamaLsp.codeAction" then
      return { content = "", applied = true, verification = FAILED }
    end
    return { verification = PASSED } -- not ours to report
  end
  local compat = require("llama_lsp.compat")
  local seen = notifications_during(function()
    local done = 0
    local function count()
      done = done + 1
    end
    local ours = { command = "llamaLsp.codeAction", arguments = { {} } }
    compat.request(client, "workspace/executeCommand", ours, nil, fake_buf) -- the client's default handler
    compat.request(client, "workspace/executeCommand", { command = "other", arguments = {} }, count, fake_buf)
    compat.request(client, "workspace/executeCommand", ours, count, fake_buf)
    wait_for("the commands", 5000, function()
      return done == 2
    end)
    vim.wait(50)
  end)
  assert(#seen == 2, vim.inspect(seen))
  for _, message in ipairs(seen) do
    assert(message.level == levels.WARN and message.msg:find(FAILED.summary, 1, true), vim.inspect(seen))
  end
end)

---The current quickfix list: its title, items, and window (0: not open).
local function quickfix()
  return vim.fn.getqflist({ title = 0, items = 0, winid = 0, nr = 0 })
end

---The real path of a quickfix item's file.
local function item_path(item)
  local name = vim.api.nvim_buf_get_name(item.bufnr)
  return vim.uv.fs_realpath(name) or vim.fs.normalize(name)
end

---Run a `:LlamaSearch` that finds nothing, and wait for what it says; asserts that no quickfix list
---was made. Returns the one message.
local function search_finding_nothing(command)
  local lists = vim.fn.getqflist({ nr = "$" }).nr
  local seen = notifications_during(function(seen)
    vim.cmd(command)
    wait_for("the message of " .. command, 30000, function()
      return #seen > 0
    end)
  end)
  assert(#seen == 1 and seen[1].level == vim.log.levels.INFO, vim.inspect(seen))
  assert(vim.fn.getqflist({ nr = "$" }).nr == lists, "an empty quickfix list was made")
  return seen[1].msg
end

offline_step(":LlamaSearch: the results in the quickfix list, or a message when there are none", function()
  vim.cmd.buffer(fake_buf)
  local dir = vim.fs.dirname(vim.api.nvim_buf_get_name(fake_buf))
  local code_uri, notes_uri = vim.uri_from_bufnr(fake_buf), vim.uri_from_fname(dir .. "/notes.txt")
  local function range(first, after)
    return { start = { line = first, character = 0 }, ["end"] = { line = after, character = 0 } }
  end
  local reply = {
    results = {
      { uri = code_uri, range = range(0, 2), score = 3.5, snippet = "def f(x):\n    return x", symbol = "f" },
      -- A window of lines: no symbol, and a snippet that starts with blank lines.
      { uri = notes_uri, range = range(40, 80), score = 1.25, snippet = "\n   \n  returns x as it is\nmore" },
    },
    indexed = { files = 2, chunks = 3, ready = false },
  }
  fake.replies["assistant/searchCodebase"] = function()
    return reply
  end
  local seen = notifications_during(function()
    vim.cmd("LlamaSearch  what returns x ")
    wait_for("the quickfix list", 5000, function()
      return quickfix().title == "llama-lsp: what returns x"
    end)
  end)
  local sent = fake.requests[#fake.requests]
  assert(sent.method == "assistant/searchCodebase", vim.inspect(sent))
  assert(vim.deep_equal(sent.params, { query = "what returns x" }), vim.inspect(sent.params))
  local list = quickfix()
  assert(list.winid ~= 0 and vim.api.nvim_get_current_win() == list.winid, "the quickfix list did not open")
  local got = vim.tbl_map(function(item)
    return { vim.api.nvim_buf_get_name(item.bufnr), item.lnum, item.end_lnum, item.text }
  end, list.items)
  assert(vim.deep_equal(got, {
    { vim.api.nvim_buf_get_name(fake_buf), 1, 2, "f: def f(x):" },
    { vim.fs.normalize(dir .. "/notes.txt"), 41, 80, "returns x as it is" },
  }), vim.inspect(got))
  -- Results from an index still being built say so.
  local building = "llama-lsp: the index is still being built (2 files so far): more may match once it is done"
  assert(#seen == 1 and seen[1].msg == building, vim.inspect(seen))

  -- From the quickfix list, a buffer no server serves: the running server answers.
  assert(vim.bo.buftype == "quickfix" and llama.client_for(0) == nil)
  reply = { results = {}, indexed = { files = 2, chunks = 3, ready = true } }
  local message = search_finding_nothing("LlamaSearch nothing at all")
  assert(message == 'llama-lsp: no results for "nothing at all"', message)
  reply = { results = {}, indexed = { files = 1, chunks = 0, ready = false } }
  message = search_finding_nothing("LlamaSearch nothing yet")
  assert(message == 'llama-lsp: no results for "nothing yet": the index is still being built (1 file so far)', message)
  reply = { results = {}, indexed = { files = 0, chunks = 0, ready = false } }
  message = search_finding_nothing("LlamaSearch nothing yet")
  local off = 'llama-lsp: no results for "nothing yet": the index is still being built (0 files so far), or '
    .. "`codebaseIndex` is off"
  assert(message == off, message)
  assert(quickfix().title == "llama-lsp: what returns x", quickfix().title)
  vim.cmd.cclose()
  vim.cmd.buffer(fake_buf)
end)

offline_step("the statusline says whether the buffer is warm", function()
  local client = assert(llama.client_for(fake_buf))
  -- A second buffer of the same server, whose name needs percent-encoding in its URI.
  local other_path = vim.fs.dirname(vim.api.nvim_buf_get_name(fake_buf)) .. "/other file.py"
  vim.fn.writefile({ "x = 1" }, other_path)
  vim.cmd.edit(vim.fn.fnameescape(other_path))
  local other_buf = vim.api.nvim_get_current_buf()
  wait_for("the second buffer to attach", 5000, function()
    local c = llama.client_for(other_buf)
    return c ~= nil and c.id == client.id
  end)
  -- The URIs exactly as the client opened them: what the server sends back in `warm`.
  local opened = {}
  for _, n in ipairs(fake.notifications) do
    if n.method == "textDocument/didOpen" then
      opened[n.params.textDocument.uri] = true
    end
  end
  local uri, other_uri = vim.uri_from_bufnr(fake_buf), vim.uri_from_bufnr(other_buf)
  assert(opened[uri] and opened[other_uri], vim.inspect({ opened = opened, uri = uri, other = other_uri }))
  assert(other_uri:find("%20", 1, true), other_uri)

  local heard = {}
  local group = vim.api.nvim_create_augroup("llama_lsp_test_status", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "LlamaLspStatus",
    callback = function(args)
      table.insert(heard, args.data)
    end,
  })
  ---Feed the client's `assistant/status` handler a notification, as the server sends it.
  local function status(params)
    local before = #heard
    fake.dispatchers.notification("assistant/status", params)
    wait_for("the status notification to be handled", 5000, function()
      return #heard > before
    end)
  end

  status({ state = "ready", message = "m ready", warm = { uri } })
  assert(vim.deep_equal(heard[#heard].warm, { uri }), vim.inspect(heard[#heard]))
  assert(llama.statusline(fake_buf) == "llama: ready, warm", llama.statusline(fake_buf))
  assert(llama.statusline(other_buf) == "llama: ready", llama.statusline(other_buf))
  assert(llama.is_warm(fake_buf) == true and llama.is_warm(other_buf) == false)
  assert(llama.status(fake_buf).buffer_warm == true and llama.status(other_buf).buffer_warm == false)
  -- The default is the current buffer (other_buf now).
  assert(llama.statusline() == "llama: ready" and llama.is_warm() == false, llama.statusline())
  vim.cmd.buffer(fake_buf)
  assert(llama.statusline() == "llama: ready, warm", llama.statusline())

  -- The list changes: a status says so; the cache reuse and the warmth show together.
  local stats = { nPrompt = 200, nReused = 150, nGenerated = 3 }
  status({ state = "ready", lastStats = stats, warm = { other_uri, uri } })
  assert(llama.statusline(fake_buf) == "llama: 75% cached, warm", llama.statusline(fake_buf))
  assert(llama.statusline(other_buf) == "llama: 75% cached, warm", llama.statusline(other_buf))
  status({ state = "busy", queue = 1, warm = { other_uri } })
  assert(llama.statusline(fake_buf) == "llama: busy", llama.statusline(fake_buf))
  assert(llama.statusline(other_buf) == "llama: busy, warm", llama.statusline(other_buf))
  status({ state = "ready", warm = {} })
  assert(llama.statusline(other_buf) == "llama: ready" and llama.is_warm(other_buf) == false)
  -- Reloading: no list, so nothing is known to be warm.
  status({ state = "ready", warm = { uri } })
  status({ state = "loading", message = "loading m" })
  assert(llama.statusline(fake_buf) == "llama: loading", llama.statusline(fake_buf))
  assert(llama.is_warm(fake_buf) == nil and llama.status(fake_buf).buffer_warm == nil)
  -- A buffer no server serves is not warm, whatever the list says.
  vim.cmd.enew()
  assert(llama.is_warm() == nil)
  vim.cmd.buffer(fake_buf)
  status({ state = "ready", warm = { uri } })
  assert(llama.statusline(fake_buf) == "llama: ready, warm", llama.statusline(fake_buf))
  vim.api.nvim_del_augroup_by_id(group)
end)

---The stand-in's inline completion requests so far.
local function inline_requests()
  return vim.tbl_filter(function(r)
    return r.method == "textDocument/inlineCompletion"
  end, fake.requests)
end

local calc_buf

offline_step("inline completion: ghost text after a pause, typing cancels and dismisses, <Tab> accepts", function()
  local completion = require("llama_lsp.completion")
  -- setup() sent the completion settings with the others.
  local sent = fake.requests[1].params.initializationOptions
  assert(sent.completion == true and sent.completionTimeBudgetMs == 1000, vim.inspect(sent))
  local path = vim.fs.dirname(vim.api.nvim_buf_get_name(fake_buf)) .. "/calc.py"
  vim.fn.writefile({ "def add(a, b):", "    return" }, path)
  vim.cmd.edit(path)
  calc_buf = vim.api.nvim_get_current_buf()
  wait_for("calc.py to attach", 5000, function()
    return llama.client_for(calc_buf) ~= nil
  end)
  assert(completion.advertised(llama.client_for(calc_buf)))
  local uri = vim.uri_from_bufnr(calc_buf)
  local hold = true -- leave the requests unanswered, as a server still generating
  local suggestion = " a + b\n\n    # and more\n    pass"
  fake.replies["textDocument/inlineCompletion"] = function(params)
    if hold then
      return fake.NO_REPLY
    end
    return { items = { { insertText = suggestion, range = { start = params.position, ["end"] = params.position } } } }
  end
  local function line()
    return vim.api.nvim_buf_get_lines(calc_buf, 1, 2, false)[1]
  end
  local before = #inline_requests()
  in_insert_mode("GA", function(ui)
    ui.wait_for("a request once typing pauses", 5000, function()
      return #inline_requests() == before + 1
    end)
    local first = inline_requests()[before + 1]
    assert(first.params.textDocument.uri == uri, vim.inspect(first))
    assert(vim.deep_equal(first.params.position, { line = 1, character = 10 }), vim.inspect(first))
    assert(first.params.context.triggerKind == 2, vim.inspect(first))
    -- Typing on cancels it; the next request goes once typing pauses again, and its answer shows.
    hold = false
    ui.type("x")
    ui.wait_for("the ghost text", 5000, function()
      return #ghost_marks(calc_buf) == 1
    end)
    if not completion.native() then
      local cancelled = vim.tbl_filter(function(n)
        return n.method == "$/cancelRequest" and n.params.id == first.id
      end, fake.notifications)
      assert(#cancelled == 1, "the stale request was not cancelled")
      local second = inline_requests()[before + 2]
      assert(vim.deep_equal(second.params.position, { line = 1, character = 11 }), vim.inspect(second))
      assert(#inline_requests() == before + 2, vim.inspect(inline_requests()))
      local mark = ghost_marks(calc_buf)[1]
      local row, col, details = mark[2], mark[3], mark[4]
      assert(row == 1 and col == 11, vim.inspect(mark))
      assert(details.virt_text_pos == "inline", vim.inspect(details))
      assert(vim.deep_equal(details.virt_text, { { " a + b", "LlamaGhostText" } }), vim.inspect(details))
      local expected_lines = {
        { { "", "LlamaGhostText" } },
        { { "    # and more", "LlamaGhostText" } },
        { { "    pass", "LlamaGhostText" } },
      }
      assert(vim.deep_equal(details.virt_lines, expected_lines), vim.inspect(details))
      assert(vim.api.nvim_get_hl(0, { name = "LlamaGhostText" }).link == "Comment")
      assert(completion.visible() and completion.info().shown == suggestion)
    end
    -- Typing dismisses it (the next request stays unanswered, so nothing comes back).
    hold = true
    ui.type("<BS>")
    ui.wait_for("the ghost text to go", 5000, function()
      return #ghost_marks(calc_buf) == 0 and #inline_requests() >= before + 3
    end)
    -- With nothing shown, <Tab> does what it does (Python's ftplugin: spaces to the next 'softtabstop').
    ui.type("<Tab>")
    ui.wait_for("a Tab", 5000, function()
      return line() == "    return  "
    end)
    hold = false
    ui.type("<BS>")
    ui.wait_for("the ghost text at the end of `return`", 5000, function()
      local marks = ghost_marks(calc_buf)
      return #marks == 1 and marks[1][3] == 10
    end)
    ui.type("<Tab>")
    ui.wait_for("the suggestion to be inserted", 5000, function()
      return vim.api.nvim_buf_line_count(calc_buf) == 5
    end)
    local lines = vim.api.nvim_buf_get_lines(calc_buf, 0, -1, false)
    assert(vim.deep_equal(lines, { "def add(a, b):", "    return a + b", "", "    # and more", "    pass" }), vim.inspect(lines))
    assert(vim.deep_equal(vim.api.nvim_win_get_cursor(0), { 5, 8 }), vim.inspect(vim.api.nvim_win_get_cursor(0)))
    assert(#ghost_marks(calc_buf) == 0)
  end)
  -- Leaving Insert mode cancels what is pending and shows nothing.
  vim.wait(300)
  assert(#ghost_marks(calc_buf) == 0 and not completion.visible())
  assert(not completion.info().pending, vim.inspect(completion.info()))
end)

offline_step("inline completion: enabled = false sends no request; the options reach the server", function()
  local completion = require("llama_lsp.completion")
  llama.setup({ filetypes = { "python" }, init_options = { verifyTimeout = 30 }, completion = { enabled = false } })
  require("llama_lsp.config").options.cmd = fake_server
  local change = fake.notifications[#fake.notifications]
  assert(change.method == "workspace/didChangeConfiguration", vim.inspect(change))
  assert(change.params.settings.llamaLsp.completion == false, vim.inspect(change))
  local function insert_mapping(key)
    return vim.api.nvim_buf_call(calc_buf, function()
      return vim.fn.maparg(key, "i", false, true)
    end)
  end
  -- No mapping of ours (Neovim 0.11 has a global one, for snippets).
  assert(insert_mapping("<Tab>").buffer ~= 1, vim.inspect(insert_mapping("<Tab>")))
  fake.replies["textDocument/inlineCompletion"] = function(params)
    return { items = { { insertText = " a", range = { start = params.position, ["end"] = params.position } } } }
  end
  vim.cmd.buffer(calc_buf)
  local before = #inline_requests()
  in_insert_mode("GA", function(ui)
    ui.type("x")
    ui.sleep(600)
    ui.type("<Tab>")
    ui.sleep(600)
  end)
  assert(#inline_requests() == before, vim.inspect(inline_requests()))
  assert(#ghost_marks(calc_buf) == 0)
  local last = vim.api.nvim_buf_get_lines(calc_buf, 4, 5, false)[1]
  assert(last == "    passx   ", vim.inspect(last)) -- <Tab>: spaces to the next 'softtabstop'
  -- On again, with another key and time budget.
  llama.setup({
    filetypes = { "python" },
    init_options = { verifyTimeout = 30 },
    completion = { accept_key = "<C-l>", time_budget_ms = 300 },
  })
  require("llama_lsp.config").options.cmd = fake_server
  change = fake.notifications[#fake.notifications]
  local settings = change.params.settings.llamaLsp
  assert(settings.completion == true and settings.completionTimeBudgetMs == 300, vim.inspect(settings))
  assert(insert_mapping("<Tab>").buffer ~= 1, vim.inspect(insert_mapping("<Tab>")))
  assert(insert_mapping("<C-L>").buffer == 1, vim.inspect(insert_mapping("<C-L>")))
  llama.setup({ filetypes = { "python" }, init_options = { verifyTimeout = 30 } })
  require("llama_lsp.config").options.cmd = fake_server
  assert(insert_mapping("<Tab>").buffer == 1 and vim.tbl_isempty(insert_mapping("<C-L>")))
  vim.cmd.buffer(fake_buf)
end)

offline_step("the stand-in stops", function()
  vim.lsp.stop_client(vim.lsp.get_clients())
  wait_for("the client to stop", 5000, function()
    return #vim.lsp.get_clients() == 0
  end)
end)

offline_step(":LlamaSearch with no server running says so", function()
  local lists = vim.fn.getqflist({ nr = "$" }).nr
  local seen = notifications_during(function()
    vim.cmd("LlamaSearch restock")
  end)
  assert(#seen == 1 and seen[1].level == vim.log.levels.ERROR, vim.inspect(seen))
  assert(seen[1].msg:find("^llama%-lsp: no server is running"), seen[1].msg)
  assert(vim.fn.getqflist({ nr = "$" }).nr == lists)
end)

-- ---- against the real server and model -------------------------------------------------------------

local source_buf

local function options(model)
  return {
    cmd = vim.json.decode(vim.env.LLAMA_LSP_CMD),
    filetypes = { "python" },
    init_options = {
      model = model,
      contextSize = 4096,
      slots = 2,
      maxTokens = 160,
      cacheDir = vim.env.LLAMA_LSP_CACHE,
      backend = backend,
    },
  }
end

step("setup, then attach", function()
  -- Trusted, so that the code action's edit is checked with the workspace's tests.
  vim.cmd.LlamaTrust(workspace)
  llama.setup(options(vim.env.LLAMA_LSP_MODEL))
  vim.cmd.edit(workspace .. "/inventory.py")
  source_buf = vim.api.nvim_get_current_buf()
  wait_for("the client to attach", 30000, function()
    return llama.client_for(source_buf) ~= nil
  end)
  local client = assert(llama.client_for(source_buf))
  assert(client.root_dir == workspace, "root " .. tostring(client.root_dir))
  wait_for("the model to load", 120000, function()
    return llama.status(source_buf).state == "ready"
  end)
  if backend then -- the remote server answers, not a model in the server's process
    local message = llama.status(source_buf).message
    assert(message == backend.model .. " at " .. backend.url .. " ready", message)
  end
  -- A second file in the same root shares the client.
  vim.cmd.edit(workspace .. "/stock.py")
  wait_for("stock.py to attach", 10000, function()
    return llama.client_for(0) ~= nil
  end)
  assert(llama.client_for(0).id == client.id, "a second client for the same root")
  assert(#vim.lsp.get_clients({ name = "llama_lsp" }) == 1)
  vim.cmd.buffer(source_buf)
end)

local first_conversation

step(":LlamaChat streams an answer", function()
  local result, n_partials = ask("LlamaChat What does restock do?")
  assert(n_partials > 3, "only " .. n_partials .. " partial results")
  assert(vim.trim(result.content) ~= "", "empty answer")
  assert(vim.bo[chat.info().buf].filetype == "llamachat")
  local text = chat_text()
  assert(text:find("## You\n\nWhat does restock do?", 1, true), text)
  assert(text:find("## Llama\n\n" .. result.content .. "\n\n_", 1, true), "the answer is not in the chat:\n" .. text)
  -- The chat opened in a split and the cursor stayed in the source.
  assert(#vim.fn.win_findbuf(chat.info().buf) == 1)
  assert(vim.api.nvim_get_current_buf() == source_buf)
  first_conversation = assert(chat.info().conversation_id)
end)

step("a follow-up reuses the cache, according to the stats", function()
  local result = ask("LlamaChat What does it return?")
  assert(chat.info().conversation_id == first_conversation, "the follow-up started a new conversation")
  local stats = result.stats
  assert(stats.nReused > 0 and stats.nReused / stats.nPrompt > 0.5, vim.inspect(stats))
  assert(chat_text():find("prompt tokens cached", 1, true), "no stats line in the chat")
  wait_for("the status to report the reuse", 5000, function()
    return llama.status(source_buf).reuse ~= nil and llama.status(source_buf).state == "ready"
  end)
  assert(llama.statusline(source_buf):match("^llama: %d+%% cached$"), llama.statusline(source_buf))
  -- In visual mode the selection goes as the range.
  vim.api.nvim_win_set_cursor(0, { 18, 0 })
  vim.cmd("normal! Vj")
  vim.cmd("normal! \27") -- leave visual mode; the marks stay
  local selected = ask("'<,'>LlamaChat Is this correct?")
  assert(chat_text():find("about lines 18–19 of", 1, true), "the range is not shown")
  assert(selected.stats.nPrompt > 0)
end)

step(":LlamaStop cancels", function()
  local mapping = vim.api.nvim_buf_call(chat.info().buf, function()
    return vim.fn.maparg("<C-c>", "n", false, true)
  end)
  assert(mapping.buffer == 1 and mapping.callback == chat.stop, "<C-c> does not stop in the chat buffer")
  vim.cmd("LlamaChat Write a long essay on stock keeping, with many sections.")
  wait_for("the answer to start", 60000, function()
    return (chat.info().n_partials or 0) >= 2 or not chat.info().answering
  end)
  assert(chat.info().answering, "the answer ended before it could be stopped")
  local stopped_at = vim.uv.hrtime()
  vim.cmd("LlamaStop")
  assert(not chat.info().answering and chat.info().last.cancelled)
  assert(chat_text():find("_(stopped)_", 1, true))
  -- The server stops too: it is idle again well before it could have finished 160 tokens.
  wait_for("the server to go idle", 5000, function()
    return llama.status(source_buf).state == "ready"
  end)
  local idle_ms = (vim.uv.hrtime() - stopped_at) / 1e6
  assert(idle_ms < 2000, string.format("the server was busy %.0f ms after the stop", idle_ms))
  vim.cmd("LlamaNew")
  assert(chat_text() == "" and chat.info().conversation_id == nil)
end)

step(":LlamaSearch puts the index's best matches in the quickfix list, or says there are none", function()
  local client = assert(llama.client_for(source_buf))
  vim.cmd.buffer(source_buf)
  -- The index is built in the background once the server starts: wait until it is, so that what is
  -- checked is its ranking.
  wait_for("the workspace index", 120000, function()
    local response = client:request_sync(protocol.SEARCH_CODEBASE, { query = "restock" }, 10000, source_buf)
    return response ~= nil and response.result ~= nil and response.result.indexed.ready == true
  end)
  local seen = notifications_during(function()
    vim.cmd("LlamaSearch restock an item")
    wait_for("the quickfix list", 30000, function()
      return quickfix().title == "llama-lsp: restock an item"
    end)
  end)
  for _, note in ipairs(seen) do -- nothing about the search (the server may say other things)
    assert(not note.msg:find("no results", 1, true) and not note.msg:find("index", 1, true), vim.inspect(seen))
  end
  local list = quickfix()
  assert(list.winid ~= 0, "the quickfix list did not open")
  local first = assert(list.items[1], "no results")
  local restock_line
  for n, line in ipairs(vim.api.nvim_buf_get_lines(source_buf, 0, -1, false)) do
    if vim.startswith(line, "def restock(") then
      restock_line = n
    end
  end
  assert(item_path(first) == vim.uv.fs_realpath(workspace .. "/inventory.py"), vim.inspect(list.items))
  assert(first.lnum == restock_line, vim.inspect({ restock_line = restock_line, first = first }))
  assert(vim.startswith(first.text, "restock: def restock("), first.text)
  -- A query nothing matches leaves a message, not an empty list; from the quickfix window, which no
  -- server serves, the running one answers.
  assert(vim.bo.buftype == "quickfix")
  local message = search_finding_nothing("LlamaSearch zqxvtw qqjjkk")
  assert(message == 'llama-lsp: no results for "zqxvtw qqjjkk"', message)
  assert(quickfix().title == "llama-lsp: restock an item")
  vim.cmd.cclose()
  vim.cmd.buffer(source_buf)
end)

step("inline completion: ghost text in Insert mode, <Tab> accepts it", function()
  local completion = require("llama_lsp.completion")
  vim.fn.writefile({ "def add(a, b):", "    return" }, workspace .. "/calc.py")
  vim.cmd.edit(workspace .. "/calc.py")
  local buf = vim.api.nvim_get_current_buf()
  wait_for("calc.py to attach", 10000, function()
    return llama.client_for(buf) ~= nil
  end)
  assert(completion.advertised(llama.client_for(buf)), "the server does not offer inline completion")
  local shown, cursor
  in_insert_mode("GA", function(ui)
    ui.wait_for("the ghost text", 120000, function()
      return #ghost_marks(buf) > 0
    end)
    local mark = ghost_marks(buf)[1]
    assert(mark[2] == 1 and mark[3] == 10, vim.inspect(mark))
    shown = completion.info().shown
    ui.type("<Tab>")
    ui.wait_for("the completion to be inserted", 5000, function()
      return vim.api.nvim_buf_get_lines(buf, 1, 2, false)[1] ~= "    return"
    end)
    cursor = vim.api.nvim_win_get_cursor(0)
  end)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  assert(#lines[2] > #"    return" and vim.startswith(lines[2], "    return"), vim.inspect(lines))
  if shown then -- the plugin's own ghost text (0.10/0.11): exactly it went in, and the cursor to its end
    local expected = vim.split("def add(a, b):\n    return" .. shown, "\n", { plain = true })
    assert(vim.deep_equal(lines, expected), vim.inspect({ lines = lines, shown = shown }))
    assert(vim.deep_equal(cursor, { #lines, #lines[#lines] }), vim.inspect({ cursor = cursor, lines = lines }))
  end
  vim.cmd.buffer(source_buf)
end)

step("a code action edits the buffer", function()
  -- Edits need the larger model (the test model's do not apply). Calling setup() again sends the
  -- new settings to the running server, which reloads.
  local edit_model = vim.env.LLAMA_LSP_EDIT_MODEL
  llama.setup(options(edit_model))
  wait_for("the server to load " .. edit_model, 120000, function()
    return llama.status(source_buf).message == edit_model .. " ready"
  end)
  vim.cmd.edit(workspace .. "/stock.py")
  local buf = vim.api.nvim_get_current_buf()
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  vim.lsp.buf.code_action({
    apply = true,
    filter = function(action)
      return action.title == "Llama: Document"
    end,
    range = { start = { 1, 0 }, ["end"] = { #before, 0 } },
  })
  wait_for("the edit", 300000, function()
    return #vim.api.nvim_buf_get_lines(buf, 0, -1, false) > #before
  end)
  local after = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  local function count(text)
    return select(2, after:gsub(vim.pesc(text), ""))
  end
  assert(count('"""') >= 2 or count("#") >= 1, "no docstring or comment in:\n" .. after)
  for _, line in ipairs(before) do
    assert(count(vim.trim(line)) == 1, "not exactly one `" .. vim.trim(line) .. "` in:\n" .. after)
  end
  assert(vim.bo[buf].modified, "the edit went to disk, not to the buffer")
end)

step("a question whose search finds nothing still gets an answer in the chat", function()
  -- The test model then repeats its call and writes calls as text: the reply is still an answer (its
  -- own, asked once more with the tools off, or the server's account of what it looked for).
  vim.cmd("LlamaNew")
  local result = ask(
    "LlamaChat Use the search tool to find the text 'zqx vtw eviction' in the workspace, then tell me which file has it."
  )
  assert(vim.trim(result.content) ~= "", "empty answer: " .. vim.inspect(result))
  for _, marker in ipairs({ "<tool_call>", "<tool_response>", "<tools>", "<|" }) do
    assert(not result.content:find(marker, 1, true), "the template's " .. marker .. " in the answer: " .. result.content)
  end
  local text = chat_text()
  assert(text:find("## Llama\n\n" .. result.content, 1, true), "the answer is not in the chat:\n" .. text)
end)

step("gF and <CR> on a file reference in the chat open it at its line", function()
  local client = assert(llama.client_for(source_buf))
  local parent = vim.fs.dirname(workspace)
  vim.fn.mkdir(workspace .. "/shop", "p")
  vim.fn.writefile({ '"""Prices."""', "", "PRICE = 3", "" }, workspace .. "/shop/prices.py")
  -- A root marker, as a project has: shop/prices.py is then the workspace's, not a root (and server) of its own.
  vim.fn.writefile({}, workspace .. "/pyproject.toml")
  vim.fn.writefile({ "SECRET = 1" }, parent .. "/outside.py")
  -- Neovim's own 'path' would look in the current directory: here it has no shop/, the workspace does.
  local cwd = vim.fn.getcwd()
  vim.cmd.cd(parent)
  vim.cmd("LlamaNew")
  -- An answer that cites files, as `@codebase` asks the model to; shown as the Explain action shows its.
  chat.show_answer({
    conversationId = "references",
    title = "Llama: Explain",
    content = "The price is set in `shop/prices.py:3`, not in ../outside.py:1 or os.path.\n\nAsk on.",
  }, client.id)
  local chat_buf = chat.info().buf
  assert(vim.bo[chat_buf].path == workspace, "the chat's 'path' is " .. vim.bo[chat_buf].path)
  local chat_win = assert(vim.fn.win_findbuf(chat_buf)[1], "the chat is not shown")
  local prices = vim.uv.fs_realpath(workspace .. "/shop/prices.py")
  ---Put the cursor in the chat on `text` of the answer.
  local function cursor_on(text)
    vim.api.nvim_set_current_win(chat_win)
    vim.api.nvim_win_set_buf(chat_win, chat_buf)
    for row, line in ipairs(vim.api.nvim_buf_get_lines(chat_buf, 0, -1, false)) do
      local col = line:find(text, 1, true)
      if col then
        vim.api.nvim_win_set_cursor(chat_win, { row, col - 1 })
        return
      end
    end
    error(text .. " is not in the chat:\n" .. chat_text())
  end
  local function at()
    local name = vim.api.nvim_buf_get_name(0)
    return { vim.uv.fs_realpath(name) or name, vim.api.nvim_win_get_cursor(0)[1] }
  end

  -- gF: Neovim's own, in the chat's window, finds the file through 'path'.
  cursor_on("shop/prices.py:3")
  vim.cmd("normal! gF")
  assert(vim.deep_equal(at(), { prices, 3 }), vim.inspect(at()))
  assert(vim.api.nvim_get_current_win() == chat_win)

  -- <CR>: in the window the chat was come to from; the chat stays.
  vim.cmd.wincmd("p")
  local other_win = vim.api.nvim_get_current_win()
  assert(other_win ~= chat_win)
  vim.cmd.buffer(source_buf)
  cursor_on("prices.py:3") -- anywhere on the reference
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
  assert(vim.api.nvim_get_current_win() == other_win, "<CR> did not go to the window the chat came from")
  assert(vim.deep_equal(at(), { prices, 3 }), vim.inspect(at()))
  assert(vim.api.nvim_win_get_buf(chat_win) == chat_buf, "the chat window no longer shows the chat")
  assert(#vim.lsp.get_clients({ name = "llama_lsp" }) == 1, "shop/prices.py started a server of its own")

  -- A reference out of the workspace opens nothing and says so; a word that names no file is <CR> as ever.
  vim.cmd.buffer(source_buf)
  cursor_on("../outside.py:1")
  local seen = notifications_during(function()
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
  end)
  assert(#seen == 1 and seen[1].level == vim.log.levels.WARN, vim.inspect(seen))
  assert(seen[1].msg:find("../outside.py is not a file in the workspace", 1, true), seen[1].msg)
  assert(vim.api.nvim_get_current_win() == chat_win and vim.api.nvim_get_current_buf() == chat_buf)
  cursor_on("os.path")
  local row = vim.api.nvim_win_get_cursor(chat_win)[1]
  seen = notifications_during(function()
    vim.api.nvim_feedkeys(vim.keycode("<CR>"), "mx", false)
  end)
  assert(#seen == 0, vim.inspect(seen))
  assert(vim.api.nvim_get_current_buf() == chat_buf)
  assert(vim.api.nvim_win_get_cursor(chat_win)[1] == row + 1, "<CR> on a word did not move down")

  vim.cmd("LlamaNew")
  vim.cmd.cd(cwd)
  vim.cmd.wincmd("p")
  vim.cmd.buffer(source_buf)
end)

step(":checkhealth reports OK", function()
  vim.cmd("checkhealth llama_lsp")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert(report:find("OK server starts: llama%-lsp"), report)
  assert(report:find("OK model installed", 1, true), report)
  assert(report:find("model loaded", 1, true), report)
  assert(report:find("inline completion: on", 1, true), report)
  assert(report:find("offers inline completion", 1, true), report)
  assert(not report:find("ERROR", 1, true), report)
end)

if not workspace then
  steps = offline_steps
end
if vim.env.LLAMA_LSP_STEPS then
  local by_name = {}
  for _, s in ipairs(steps) do
    by_name[s.name] = s
  end
  steps = vim.tbl_map(function(name)
    return assert(by_name[name], "no step named " .. name)
  end, vim.json.decode(vim.env.LLAMA_LSP_STEPS))
end
test_steps.run(steps)
