-- The plugin end to end in headless Neovim, against the real server and model, in the order a user
-- meets it. Run by tests/test_nvim.py:
--   nvim --headless --clean -l editors/nvim/tests/plugin_test.lua
-- with LLAMA_LSP_CMD (a JSON list), LLAMA_LSP_MODEL (chat), LLAMA_LSP_EDIT_MODEL (code actions),
-- LLAMA_LSP_WORKSPACE and LLAMA_LSP_CACHE set.
-- Prints "ok N - name" per step; the first failing step prints "not ok" with a traceback and exits 1.
local plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2))))
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd.runtime("plugin/llama_lsp.lua")

local workspace = assert(vim.env.LLAMA_LSP_WORKSPACE, "LLAMA_LSP_WORKSPACE is not set")
local llama = require("llama_lsp")
local chat = require("llama_lsp.chat")

local function wait_for(what, timeout_ms, condition)
  if not vim.wait(timeout_ms, condition, 20) then
    error("timed out after " .. timeout_ms .. " ms waiting for " .. what, 2)
  end
end

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

local steps = {}
local function step(name, run)
  table.insert(steps, { name = name, run = run })
end

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
    },
  }
end

step("setup, then attach", function()
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

step(":checkhealth reports OK", function()
  vim.cmd("checkhealth llama_lsp")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  assert(report:find("OK server starts: llama%-lsp"), report)
  assert(report:find("OK model installed", 1, true), report)
  assert(report:find("model loaded", 1, true), report)
  assert(not report:find("ERROR", 1, true), report)
end)

for index, current in ipairs(steps) do
  local ok, err = xpcall(current.run, debug.traceback)
  if ok then
    io.stdout:write(string.format("ok %d - %s\n", index, current.name))
  else
    io.stdout:write(string.format("not ok %d - %s\n%s\n", index, current.name, err))
    os.exit(1)
  end
end

vim.lsp.stop_client(vim.lsp.get_clients())
vim.wait(5000, function()
  return #vim.lsp.get_clients() == 0
end)
os.exit(0)
