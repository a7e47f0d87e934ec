-- Next-edit suggestions (llama_lsp.next_edit) in headless Neovim, as a user meets them: rename a
-- parameter, see the rest of the rename suggested where it applies, <Tab> there, <Tab> to accept; <Esc>
-- dismisses; <Tab> with nothing shown is <Tab>. Run by tests/test_nvim_next_edit.py:
--   nvim --headless --clean -c "lua dofile('editors/nvim/tests/next_edit_test.lua')"
-- With LLAMA_LSP_WORKSPACE (a folder holding prices.py and orders.py, both SOURCE below), LLAMA_LSP_CMD
-- (a JSON list), LLAMA_LSP_MODEL and LLAMA_LSP_CACHE: against the real server and model. Without LLAMA_LSP_WORKSPACE: the offline steps,
-- against the in-process stand-in (stand_in.lua), which answers what each step sets, so that what the
-- plugin sends, shows and keys can be checked exactly.
-- Prints "ok N - name" per step; the first failing step prints "not ok" with a traceback and exits 1.
local plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2))))
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd.runtime("plugin/llama_lsp.lua")

local workspace = vim.env.LLAMA_LSP_WORKSPACE
local llama = require("llama_lsp")
local next_edit = require("llama_lsp.next_edit")
local protocol = require("llama_lsp.protocol")

local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local test_steps = dofile(vim.fs.joinpath(here, "run_steps.lua"))
local wait_for, in_insert_mode = test_steps.wait_for, test_steps.in_insert_mode

local steps, offline_steps = {}, {}
local function step(name, run)
  table.insert(steps, { name = name, run = run })
end
local function offline_step(name, run)
  table.insert(offline_steps, { name = name, run = run })
end

-- ---- what both kinds of steps look at -----------------------------------------------------------------

---The suggestion's extmarks in a buffer, with their details.
local function marks(buf)
  return vim.api.nvim_buf_get_extmarks(buf, next_edit.info().namespace, 0, -1, { details = true })
end

---The extmarks of one kind: "delete" (the struck text), "add" (new text, inline or lines), "sign", "hint".
local function marks_of(buf, kind)
  local found = {}
  for _, mark in ipairs(marks(buf)) do
    local d = mark[4]
    local is = {
      delete = d.hl_group == "LlamaNextEditDelete",
      add = (d.virt_text and d.virt_text[1][2] == "LlamaNextEditAdd") or d.virt_lines ~= nil,
      sign = d.sign_text ~= nil,
      hint = d.virt_text and d.virt_text[1][2] == "LlamaNextEditHint",
    }
    if is[kind] then
      table.insert(found, mark)
    end
  end
  return found
end

---The hint's row (0-based) and text.
local function hint(buf)
  local mark = marks_of(buf, "hint")[1]
  return mark and mark[2], mark and vim.trim(mark[4].virt_text[1][1])
end

---The buffer-local mapping of a key in a mode, or nil.
local function buffer_mapping(buf, mode, key)
  local map = vim.api.nvim_buf_call(buf, function()
    return vim.fn.maparg(key, mode, false, true)
  end)
  return map.buffer == 1 and map or nil
end

local function line(buf, row)
  return vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1]
end

---The server's next-edit counts (assistant/stats).
local function stats(client, buf)
  local response = assert(client:request_sync(protocol.STATS, {}, 10000, buf), "no answer to assistant/stats")
  assert(not response.err, vim.inspect(response.err))
  return assert(response.result.nextEdit, "assistant/stats has no nextEdit: " .. vim.inspect(response.result))
end

-- ---- offline: against the stand-in ----------------------------------------------------------------

-- Non-ASCII before the cursor and before the edit: positions go in UTF-16, extmarks in bytes.
local OFFLINE_SOURCE = {
  "def total_prïce(items, tax_rate):",
  "    subtotal = sum(item.price for item in items)",
  '    return "€" + str(subtotal * (1 + tax_rate))',
}

local fake = dofile(vim.fs.joinpath(here, "stand_in.lua")).new()
local buf ---@type integer

---The stand-in's next-edit requests so far.
local function requests()
  return vim.tbl_filter(function(r)
    return r.method == protocol.NEXT_EDIT
  end, fake.requests)
end

---The stand-in's next-edit notifications so far, as "shown s1", "accepted s1", ...
local function feedback()
  local names = {
    [protocol.NEXT_EDIT_SHOWN] = "shown",
    [protocol.NEXT_EDIT_ACCEPTED] = "accepted",
    [protocol.NEXT_EDIT_REJECTED] = "rejected",
  }
  local seen = {}
  for _, n in ipairs(fake.notifications) do
    if names[n.method] then
      table.insert(seen, names[n.method] .. " " .. n.params.id)
    end
  end
  return seen
end

---The edit that renames `tax_rate` to `tax` on line 3 (1-based) of the buffer, in UTF-16 as a server
---sends it.
local function rename_on_line_3()
  local text = line(buf, 3)
  local first = assert(text:find("tax_rate", 1, true), text) - 1
  local function character(byte)
    return vim.str_utfindex(text, "utf-16", byte)
  end
  return {
    range = {
      start = { line = 2, character = character(first) },
      ["end"] = { line = 2, character = character(first + #"tax_rate") },
    },
    newText = "tax",
  }
end

---A suggestion that makes line 1's `def` an `async def`.
local function async_def(id)
  return {
    edits = {
      {
        range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 3 } },
        newText = "async def",
      },
    },
    id = id,
  }
end

---Run Normal mode keys that change the buffer, and fire the TextChanged that Neovim's main loop fires
---after them (a test script runs inside a command, where the main loop is not running).
local function change_in_normal_mode(typed)
  vim.api.nvim_feedkeys(typed, "mx", false)
  vim.api.nvim_exec_autocmds("TextChanged", { buffer = buf, modeline = false })
end

local function setup(opts)
  llama.setup(vim.tbl_deep_extend("force", {
    filetypes = { "python" },
    init_options = { nextEditDelayMs = 150, warm = false },
    completion = { enabled = false },
  }, opts or {}))
  -- setup() only takes a command list; the stand-in goes in behind it.
  require("llama_lsp.config").options.cmd = fake.cmd
end

offline_step("a pause in typing asks once, with the buffer's LSP version and the cursor in UTF-16", function()
  setup()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, "p")
  vim.fn.writefile(OFFLINE_SOURCE, dir .. "/prices.py")
  vim.cmd.edit(dir .. "/prices.py")
  buf = vim.api.nvim_get_current_buf()
  wait_for("the stand-in to attach", 5000, function()
    local client = llama.client_for(buf)
    return client ~= nil and client.initialized
  end)
  local sent = fake.requests[1].params.initializationOptions
  assert(sent.nextEditDelayMs == 150, vim.inspect(sent))
  assert(next_edit.info().enabled and next_edit.info().delay_ms == 150, vim.inspect(next_edit.info()))
  local hold = true -- unanswered, as a server still working
  fake.replies[protocol.NEXT_EDIT] = function(params)
    if hold then
      return fake.NO_REPLY
    end
    if params.position.line == 0 and line(buf, 1):find("tax)", 1, true) then
      return { edits = { rename_on_line_3() }, id = "s1" }
    end
    return vim.NIL
  end
  vim.wait(300)
  assert(#requests() == 0, "a request with no typing: " .. vim.inspect(requests()))
  -- Rename tax_rate: in Insert mode before the ")", five backspaces.
  in_insert_mode("gg0f)i", function(ui)
    ui.type("<BS><BS><BS>") -- quicker than the pause: no request yet
    ui.wait_for("a request once typing pauses", 5000, function()
      return #requests() == 1
    end)
    local first = requests()[1]
    assert(first.params.textDocument.uri == vim.uri_from_bufnr(buf), vim.inspect(first))
    local version = first.params.textDocument.version
    assert(version == vim.lsp.util.buf_versions[buf], vim.inspect({ first, vim.lsp.util.buf_versions[buf] }))
    -- "def total_prïce(items, tax_r": 29 bytes, 28 UTF-16 code units (ï is two bytes, one unit).
    assert(vim.deep_equal(vim.api.nvim_win_get_cursor(0), { 1, 29 }), vim.inspect(vim.api.nvim_win_get_cursor(0)))
    assert(vim.deep_equal(first.params.position, { line = 0, character = 28 }), vim.inspect(first.params))
    -- The server had that version's text before the request (the client flushes didChange first).
    local changes = vim.tbl_filter(function(n)
      return n.method == "textDocument/didChange"
    end, fake.notifications)
    assert(changes[#changes].params.textDocument.version == version, vim.inspect(changes[#changes]))
    -- Typing again cancels it; one request follows the next pause.
    hold = false
    ui.type("<BS><BS>")
    ui.wait_for("the suggestion", 5000, function()
      return next_edit.info().shown ~= nil
    end)
    local cancelled = vim.tbl_filter(function(n)
      return n.method == "$/cancelRequest" and n.params.id == first.id
    end, fake.notifications)
    assert(#cancelled == 1, "the request the typing made stale was not cancelled")
    assert(#requests() == 2, vim.inspect(requests()))
    assert(requests()[2].params.textDocument.version == vim.lsp.util.buf_versions[buf])
    assert(line(buf, 1) == "def total_prïce(items, tax):", line(buf, 1))
  end)
end)

offline_step("the suggestion shows where it applies, away from the cursor; <Tab> goes there, <Tab> accepts", function()
  -- After the step above: s1 shown, Normal mode on line 1.
  local text = line(buf, 3)
  local first = text:find("tax_rate", 1, true) - 1
  assert(vim.deep_equal(feedback(), { "shown s1" }), vim.inspect(feedback()))
  local delete = marks_of(buf, "delete")
  assert(#delete == 1, vim.inspect(marks(buf)))
  local row, col, details = delete[1][2], delete[1][3], delete[1][4]
  assert(row == 2 and col == first and details.end_row == 2 and details.end_col == first + 8, vim.inspect(delete))
  local add = marks_of(buf, "add")
  assert(#add == 1 and add[1][2] == 2 and add[1][3] == first + 8, vim.inspect(add))
  assert(add[1][4].virt_text_pos == "inline" and add[1][4].virt_text[1][1] == "tax", vim.inspect(add))
  local sign = marks_of(buf, "sign")
  assert(#sign == 1 and sign[1][2] == 2, vim.inspect(sign))
  assert(vim.trim(sign[1][4].sign_text) == "»" and sign[1][4].sign_hl_group == "LlamaNextEditSign", vim.inspect(sign))
  local hint_row, hint_text = hint(buf)
  local expected_hint = "<Tab>: go to the suggested edit (line 3)"
  assert(hint_row == 0 and hint_text == expected_hint, vim.inspect({ hint_row, hint_text }))
  -- Linked to standard groups, so that colorschemes colour them.
  for name, link in pairs({
    LlamaNextEditDelete = "DiffDelete",
    LlamaNextEditAdd = "DiffAdd",
    LlamaNextEditSign = "DiagnosticSignHint",
    LlamaNextEditHint = "Comment",
  }) do
    assert(vim.api.nvim_get_hl(0, { name = name }).link == link, name)
  end
  assert(vim.api.nvim_get_hl(0, { name = "LlamaNextEditStrike" }).strikethrough == true)
  -- Its keys are the buffer's while it is shown.
  for _, mode in ipairs({ "i", "n" }) do
    assert(buffer_mapping(buf, mode, "<Tab>"), mode .. " <Tab> is not mapped")
    assert(buffer_mapping(buf, mode, "<Esc>"), mode .. " <Esc> is not mapped")
  end
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local version = next_edit.info().shown.version
  local n_requests = #requests()
  in_insert_mode("A", function(ui)
    ui.type("<Tab>")
    ui.wait_for("the cursor on the suggestion", 5000, function()
      return vim.api.nvim_win_get_cursor(0)[1] == 3
    end)
    assert(vim.deep_equal(vim.api.nvim_win_get_cursor(0), { 3, first }), vim.inspect(vim.api.nvim_win_get_cursor(0)))
    assert(vim.api.nvim_get_mode().mode == "i", "the jump left Insert mode")
    assert(vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), before), "the jump changed the text")
    local row_now, text_now = hint(buf)
    assert(row_now == 2 and text_now == "<Tab>: accept the suggested edit, <Esc>: dismiss it", text_now)
    ui.type("<Tab>")
    ui.wait_for("the edit", 5000, function()
      return line(buf, 3) ~= text
    end)
    assert(line(buf, 3) == '    return "€" + str(subtotal * (1 + tax))', line(buf, 3))
    -- The cursor after the new text.
    local cursor = vim.api.nvim_win_get_cursor(0)
    assert(vim.deep_equal(cursor, { 3, first + 3 }), vim.inspect(cursor))
    assert(#marks(buf) == 0, vim.inspect(marks(buf)))
    assert(vim.deep_equal(feedback(), { "shown s1", "accepted s1" }), vim.inspect(feedback()))
    -- Chained: the next request goes at once, for the version the edit made.
    ui.wait_for("the chained request", 2000, function()
      return #requests() == n_requests + 1
    end)
    local chained = requests()[n_requests + 1]
    assert(chained.params.textDocument.version > version, vim.inspect(chained))
    -- "€" is three bytes and one UTF-16 code unit.
    local character = first + 3 - 2
    assert(vim.deep_equal(chained.params.position, { line = 2, character = character }), vim.inspect(chained.params))
    -- It was asked for, not set off by the edit's own change: no request is cancelled, no second follows.
    ui.sleep(400)
    assert(#requests() == n_requests + 1, vim.inspect(requests()))
    for _, mode in ipairs({ "i", "n" }) do
      assert(not buffer_mapping(buf, mode, "<Tab>") and not buffer_mapping(buf, mode, "<Esc>"), "keys still mapped")
    end
  end)
end)

---Wait (in Normal mode) until the stand-in's suggestion `id` is shown.
local function shown(id)
  wait_for("suggestion " .. id, 5000, function()
    local info = next_edit.info().shown
    return info ~= nil and info.id == id
  end)
end

offline_step("<Esc> dismisses as rejected and still does what it does; so does a change elsewhere", function()
  -- A suggestion that adds a line: shown as a virtual line where it goes.
  fake.replies[protocol.NEXT_EDIT] = function()
    return {
      edits = {
        {
          range = { start = { line = 1, character = 0 }, ["end"] = { line = 1, character = 0 } },
          newText = '    """The total, with tax."""\n',
        },
      },
      id = "s2",
    }
  end
  vim.cmd("normal! 0")
  next_edit.request()
  shown("s2")
  local add = marks_of(buf, "add")
  assert(#add == 1 and add[1][2] == 1 and add[1][4].virt_lines_above, vim.inspect(add))
  local docstring = { { '    """The total, with tax."""', "LlamaNextEditAdd" } }
  assert(vim.deep_equal(add[1][4].virt_lines, { docstring }), vim.inspect(add))
  assert(#marks_of(buf, "delete") == 0, "an insertion struck text through")
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  -- <Esc> in Insert mode: dismissed, and Insert mode ends.
  vim.api.nvim_feedkeys(vim.keycode("i<Esc>"), "mx", false)
  assert(vim.api.nvim_get_mode().mode == "n", vim.api.nvim_get_mode().mode)
  assert(next_edit.info().shown == nil and #marks(buf) == 0, vim.inspect(marks(buf)))
  assert(vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), before), "<Esc> changed the text")
  assert(feedback()[#feedback()] == "rejected s2", vim.inspect(feedback()))
  assert(not buffer_mapping(buf, "i", "<Esc>") and not buffer_mapping(buf, "n", "<Tab>"))
  -- <Esc> in Normal mode.
  fake.replies[protocol.NEXT_EDIT] = async_def("s3")
  next_edit.request()
  shown("s3")
  vim.api.nvim_feedkeys(vim.keycode("<Esc>"), "mx", false)
  assert(next_edit.info().shown == nil and feedback()[#feedback()] == "rejected s3", vim.inspect(feedback()))
  -- A change anywhere else dismisses it, and a new request follows the pause.
  fake.replies[protocol.NEXT_EDIT] = async_def("s4")
  next_edit.request()
  shown("s4")
  local n_requests = #requests()
  change_in_normal_mode("Gx")
  assert(next_edit.info().shown == nil and feedback()[#feedback()] == "rejected s4", vim.inspect(feedback()))
  wait_for("the request after the change", 2000, function()
    return #requests() == n_requests + 1
  end)
  shown("s4") -- the stand-in suggests it again
  change_in_normal_mode("u") -- undo is a change too
  assert(next_edit.info().shown == nil, "undo left the suggestion shown")
  wait_for("the suggestion after the undo", 2000, function()
    return next_edit.info().shown ~= nil
  end)
  vim.api.nvim_feedkeys(vim.keycode("<Esc>"), "mx", false)
end)

offline_step("what does not fit the buffer, a stale answer, null and errors show nothing", function()
  local function answer_with(reply)
    fake.replies[protocol.NEXT_EDIT] = reply
    local errors_before = vim.v.errmsg
    next_edit.request()
    wait_for("the answer", 2000, function()
      return not next_edit.info().pending
    end)
    vim.wait(50)
    assert(next_edit.info().shown == nil and #marks(buf) == 0, vim.inspect({ reply = reply, marks = marks(buf) }))
    assert(vim.v.errmsg == errors_before, vim.v.errmsg)
  end
  local function edit(first_line, first_char, last_line, last_char)
    return {
      range = {
        start = { line = first_line, character = first_char },
        ["end"] = { line = last_line, character = last_char },
      },
      newText = "x",
    }
  end
  local n_shown = #feedback()
  answer_with(vim.NIL)
  answer_with({ edits = {}, id = "e0" })
  answer_with({ edits = { edit(9, 0, 9, 1) }, id = "e1" }) -- no such line
  answer_with({ edits = { edit(0, 200, 0, 201) }, id = "e2" }) -- past the end of the line
  answer_with({ edits = { edit(0, 4, 0, 8), edit(0, 6, 0, 9) }, id = "e3" }) -- overlapping
  answer_with({ edits = { edit(1, 0, 1, 1), edit(0, 0, 0, 1) }, id = "e4" }) -- out of order
  answer_with({ edits = { { range = edit(0, 0, 0, 1).range } }, id = "e5" }) -- no newText
  answer_with({ edits = { edit(0, 0, 0, 1) } }) -- no id
  answer_with(fake.error(-32603, "internal error"))
  -- Stale: the buffer changed between the request and the answer (here before the client saw it).
  answer_with(function()
    vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "# stale" })
    return { edits = { edit(1, 0, 1, 3) }, id = "e6" }
  end)
  fake.replies[protocol.NEXT_EDIT] = vim.NIL
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, {})
  assert(#feedback() == n_shown, "shown was sent for a suggestion not shown: " .. vim.inspect(feedback()))
  -- An older server (MethodNotFound): asked no more.
  answer_with(fake.error(-32601, "Method Not Found: assistant/nextEdit"))
  local client = assert(llama.client_for(buf))
  assert(vim.tbl_contains(next_edit.info().unsupported, client.id), vim.inspect(next_edit.info()))
  local n_requests = #requests()
  next_edit.request()
  change_in_normal_mode("Gx")
  vim.wait(400)
  assert(#requests() == n_requests, "asked a server without assistant/nextEdit again")
end)

offline_step("with nothing shown <Tab> and <Esc> do what they did, another mapping's too", function()
  -- A new server for the buffer (the last one has no assistant/nextEdit).
  vim.lsp.stop_client(vim.lsp.get_clients())
  wait_for("the client to stop", 5000, function()
    return #vim.lsp.get_clients() == 0
  end)
  llama.attach(buf)
  wait_for("the stand-in to attach again", 5000, function()
    local client = llama.client_for(buf)
    return client ~= nil and client.initialized
  end)
  fake.replies[protocol.NEXT_EDIT] = vim.NIL
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, OFFLINE_SOURCE)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "" })
  -- Python's ftplugin: <Tab> puts spaces to the next 'softtabstop'.
  vim.api.nvim_win_set_cursor(0, { 4, 0 })
  in_insert_mode("A", function(ui)
    ui.type("<Tab>")
    ui.wait_for("a Tab", 2000, function()
      return line(buf, 4) == "    "
    end)
  end)
  -- A buffer-local <Tab> of another plugin, whose callback changes the text: hidden while a suggestion
  -- is shown, and put back once it goes.
  local calls = 0
  vim.keymap.set("i", "<Tab>", function()
    calls = calls + 1
    vim.api.nvim_put({ "TAB" }, "c", false, true)
  end, { buffer = buf, desc = "another plugin's Tab" })
  fake.replies[protocol.NEXT_EDIT] = async_def("s5")
  next_edit.request()
  shown("s5")
  assert(buffer_mapping(buf, "i", "<Tab>").desc ~= "another plugin's Tab")
  vim.api.nvim_feedkeys(vim.keycode("<Esc>"), "mx", false)
  local restored = buffer_mapping(buf, "i", "<Tab>")
  assert(restored and restored.desc == "another plugin's Tab", vim.inspect(restored))
  fake.replies[protocol.NEXT_EDIT] = vim.NIL
  vim.api.nvim_win_set_cursor(0, { 4, 0 })
  in_insert_mode("A", function(ui)
    ui.type("<Tab>")
    ui.wait_for("the other Tab", 2000, function()
      return calls == 1
    end)
  end)
  assert(line(buf, 4) == "    TAB", vim.inspect(line(buf, 4)))
  vim.keymap.del("i", "<Tab>", { buffer = buf })
end)

offline_step("inline completion's ghost text keeps <Tab> while both are shown", function()
  local completion = require("llama_lsp.completion")
  if completion.native() then
    return -- Neovim 0.12's own: its ghost text is checked through its namespace, as in plugin_test.lua
  end
  setup({ completion = { enabled = true, debounce_ms = 100 } })
  fake.replies["textDocument/inlineCompletion"] = function(params)
    return { items = { { insertText = "+ 1", range = { start = params.position, ["end"] = params.position } } } }
  end
  fake.replies[protocol.NEXT_EDIT] = async_def("s6")
  vim.api.nvim_win_set_cursor(0, { 4, 0 })
  in_insert_mode("S    x = 1 ", function(ui)
    ui.wait_for("both suggestions", 5000, function()
      return completion.visible() and next_edit.info().shown ~= nil
    end)
    ui.type("<Tab>")
    ui.wait_for("the completion", 2000, function()
      return line(buf, 4) == "    x = 1 + 1"
    end)
    -- That was a change elsewhere: the suggestion went.
    assert(feedback()[#feedback()] == "rejected s6", vim.inspect(feedback()))
  end)
  fake.replies["textDocument/inlineCompletion"] = { items = {} }
  setup()
end)

offline_step("nextEdit = false asks nothing; the keys are set in setup()", function()
  setup({ init_options = { nextEdit = false } })
  local change = fake.notifications[#fake.notifications]
  assert(change.method == "workspace/didChangeConfiguration", vim.inspect(change))
  assert(change.params.settings.llamaLsp.nextEdit == false, vim.inspect(change))
  local n_requests = #requests()
  in_insert_mode("A", function(ui)
    ui.type("y")
    ui.sleep(400)
  end)
  next_edit.request()
  assert(#requests() == n_requests, vim.inspect(requests()))
  -- On again, with other keys: <C-j> takes <Tab>'s part, and nothing takes <Esc>'s.
  setup({ next_edit = { accept_key = "<C-j>", dismiss_key = false } })
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, OFFLINE_SOURCE)
  fake.replies[protocol.NEXT_EDIT] = function()
    return { edits = { rename_on_line_3() }, id = "s7" }
  end
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  next_edit.request()
  shown("s7")
  assert(buffer_mapping(buf, "n", "<C-J>") and not buffer_mapping(buf, "n", "<Tab>"))
  assert(not buffer_mapping(buf, "n", "<Esc>") and not buffer_mapping(buf, "i", "<Esc>"))
  local _, text = hint(buf)
  assert(text == "<C-j>: go to the suggested edit (line 3)", text)
  vim.api.nvim_feedkeys(vim.keycode("<C-j>"), "mx", false)
  assert(vim.api.nvim_win_get_cursor(0)[1] == 3)
  _, text = hint(buf)
  assert(text == "<C-j>: accept the suggested edit", text)
  vim.api.nvim_feedkeys(vim.keycode("<C-j>"), "mx", false)
  fake.replies[protocol.NEXT_EDIT] = vim.NIL -- for the request that chains on
  assert(line(buf, 3) == '    return "€" + str(subtotal * (1 + tax))', line(buf, 3))
  assert(feedback()[#feedback()] == "accepted s7", vim.inspect(feedback()))
  setup()
end)

offline_step(":checkhealth says whether next-edit suggestions are on, and their keys", function()
  vim.cmd("checkhealth llama_lsp")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  local expected = "next-edit suggestions: on (asked 150 ms after typing pauses; <Tab> goes to a suggestion and "
    .. "accepts it, <Esc> dismisses it)"
  assert(report:find(expected, 1, true), report)
  vim.cmd.close()
end)

-- ---- against the real server and model -------------------------------------------------------------

local SOURCE = {
  "def total_price(items, tax_rate):",
  "    subtotal = sum(item.price for item in items)",
  "    return subtotal * (1 + tax_rate)",
}

local client ---@type vim.lsp.Client

---What the plugin last heard from the server, for a failure's message (the server's log has why).
local function answered()
  local info = next_edit.info()
  return vim.inspect({ last_answer = info.last_answer, n_requests = info.n_requests, shown = info.shown })
end

---Open a file of the workspace that holds SOURCE and wait until the client serves it.
---@return integer bufnr
local function open(name)
  vim.cmd.edit(workspace .. "/" .. name)
  local opened = vim.api.nvim_get_current_buf()
  assert(vim.deep_equal(vim.api.nvim_buf_get_lines(opened, 0, -1, false), SOURCE))
  wait_for(name .. " to attach", 30000, function()
    return llama.client_for(opened) ~= nil
  end)
  return opened
end

---In Insert mode, as a user types: rename `tax_rate` to `tax` in the signature (five backspaces before
---the ")"), wait for a suggestion, then run `and_then(ui)` still in Insert mode.
local function rename_tax_rate(and_then)
  local ok, err = pcall(in_insert_mode, "gg0f)i", function(ui)
    for _ = 1, #"_rate" do
      ui.type("<BS>")
      ui.sleep(60) -- a user's pace, quicker than the pause
    end
    ui.wait_for("a suggestion", 180000, function()
      return next_edit.info().shown ~= nil
    end)
    and_then(ui)
  end)
  if not ok then
    error(tostring(err) .. "\nthe plugin last heard: " .. answered(), 0)
  end
end

---Assert that the suggestion's extmarks change line 3 only (0-based row 2).
local function marks_on_line_3(buf)
  local drawn = vim.list_extend(marks_of(buf, "delete"), marks_of(buf, "add"))
  assert(#drawn > 0, vim.inspect(marks(buf)))
  for _, mark in ipairs(drawn) do
    assert(mark[2] == 2, "a mark off line 3: " .. vim.inspect({ shown = next_edit.info().shown, marks = marks(buf) }))
  end
  assert(marks_of(buf, "sign")[1][2] == 2, vim.inspect(marks(buf)))
end

step("setup, then attach", function()
  llama.setup({
    cmd = vim.json.decode(vim.env.LLAMA_LSP_CMD),
    filetypes = { "python" },
    init_options = {
      model = vim.env.LLAMA_LSP_MODEL,
      contextSize = 4096,
      slots = 2,
      cacheDir = vim.env.LLAMA_LSP_CACHE,
      verifyCommand = false,
    },
    -- Inline completion would show ghost text at the cursor too, and its <Tab> comes first.
    completion = { enabled = false },
  })
  local buf = open("prices.py")
  client = assert(llama.client_for(buf))
  wait_for("the model to load", 180000, function()
    return llama.status(buf).state == "ready"
  end)
end)

step("rename a parameter: the rest of the rename is suggested on line 3; <Tab> goes there, <Tab> accepts", function()
  local buf = vim.api.nvim_get_current_buf()
  rename_tax_rate(function(ui)
    marks_on_line_3(buf)
    assert(vim.api.nvim_win_get_cursor(0)[1] == 1)
    assert(hint(buf) == 0, vim.inspect(marks(buf))) -- "<Tab>: go to ..." on the cursor's line
    local shown = next_edit.info().shown
    ui.type("<Tab>")
    ui.wait_for("the cursor on line 3", 5000, function()
      return vim.api.nvim_win_get_cursor(0)[1] == 3
    end)
    assert(line(buf, 3) == SOURCE[3], "the jump changed the text")
    ui.type("<Tab>")
    ui.wait_for("the edit", 5000, function()
      return line(buf, 3) ~= SOURCE[3]
    end)
    local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
    local renamed = { "def total_price(items, tax):", SOURCE[2], "    return subtotal * (1 + tax)" }
    assert(vim.deep_equal(lines, renamed), vim.inspect({ suggested = shown, lines = lines }))
  end)
  local counted = stats(client, buf)
  assert(counted.suggested >= 1 and counted.shown >= 1 and counted.accepted >= 1, vim.inspect(counted))
end)

step("<Esc> dismisses a suggestion: the buffer stays as it is, and the server counts it rejected", function()
  -- The chained request after the accept (whatever it answers) is done with first.
  wait_for("the chained request to be answered", 180000, function()
    return not next_edit.info().pending
  end)
  next_edit.dismiss("rejected")
  local rejected_before = stats(client, 0).rejected
  -- The same rename in a second file of the workspace.
  local buf = open("orders.py")
  rename_tax_rate(function()
    marks_on_line_3(buf)
  end)
  -- The test left Insert mode with a <Esc> of its own, past the mapping: the suggestion is still shown.
  assert(next_edit.info().shown, "the suggestion went when Insert mode ended")
  local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  -- <Esc> in Insert mode, as it is typed.
  vim.api.nvim_feedkeys(vim.keycode("a<Esc>"), "mx", false)
  assert(vim.api.nvim_get_mode().mode == "n", vim.api.nvim_get_mode().mode)
  assert(next_edit.info().shown == nil and #marks(buf) == 0, vim.inspect(marks(buf)))
  assert(vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), before), "<Esc> changed the text")
  wait_for("the server to count the rejection", 5000, function()
    return stats(client, buf).rejected == rejected_before + 1
  end)
end)

step("with nothing shown <Tab> inserts an indent as before", function()
  local buf = vim.api.nvim_get_current_buf()
  assert(next_edit.info().shown == nil)
  vim.api.nvim_buf_set_lines(buf, -1, -1, false, { "" })
  local last = vim.api.nvim_buf_line_count(buf)
  vim.api.nvim_win_set_cursor(0, { last, 0 })
  in_insert_mode("A", function(ui)
    ui.type("<Tab>")
    ui.wait_for("the indent", 2000, function()
      return line(buf, last) == "    "
    end)
  end)
end)

if not workspace then
  steps = offline_steps
end
test_steps.run(steps)
