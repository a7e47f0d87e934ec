-- MCP tool servers (llama_lsp.mcp) in headless Neovim, as a user meets them: a chat's call of a write tool
-- asks with vim.ui.select and runs only when allowed, a read-only tool does not ask, :checkhealth names
-- the servers, and nothing starts in a folder not trusted. Run by tests/test_nvim_mcp.py:
--   nvim --headless --clean -c "lua dofile('editors/nvim/tests/mcp_test.lua')"
-- With LLAMA_LSP_WORKSPACE (a folder holding standup.py, trusted here), LLAMA_LSP_UNTRUSTED (a folder
-- holding code.py and a .mcp.json), LLAMA_LSP_MCP_SERVERS (the `mcpServers` setting, JSON), MCP_TEST_NOTES
-- (the file the test MCP server's create_note appends to), MCP_TEST_STARTS (the file each start of the
-- untrusted folder's server would append to), LLAMA_LSP_CMD, LLAMA_LSP_MODEL and LLAMA_LSP_CACHE: against
-- the real server, model and MCP server. Without LLAMA_LSP_WORKSPACE: the offline steps, no server at all:
-- the handler as Neovim's rpc.lua runs it, in a coroutine, with asynchronous and failing UIs.
-- Prints "ok N - name" per step; the first failing step prints "not ok" with a traceback and exits 1.
local plugin_dir = vim.fs.dirname(vim.fs.dirname(vim.fs.normalize(debug.getinfo(1, "S").source:sub(2))))
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd.runtime("plugin/llama_lsp.lua")

local workspace = vim.env.LLAMA_LSP_WORKSPACE
local llama = require("llama_lsp")
local chat = require("llama_lsp.chat")
local mcp = require("llama_lsp.mcp")
local protocol = require("llama_lsp.protocol")
local trust = require("llama_lsp.trust")

local here = vim.fs.dirname(debug.getinfo(1, "S").source:sub(2))
local test_steps = dofile(vim.fs.joinpath(here, "run_steps.lua"))
local wait_for = test_steps.wait_for

local steps, offline_steps = {}, {}
local function step(name, run)
  table.insert(steps, { name = name, run = run })
end
local function offline_step(name, run)
  table.insert(offline_steps, { name = name, run = run })
end

-- ---- the user, as vim.ui.select meets them -------------------------------------------------------------

-- vim.ui.select is the documented place for a UI to plug in (telescope and dressing replace it); this
-- one records each question and picks `user.pick` (nil: cancels) after `user.delay_ms`, later than the
-- call returns, as an asynchronous picker does.
local user = { pick = "Deny", delay_ms = 50, asked = {} }
vim.ui.select = function(items, opts, on_choice)
  local labels = vim.tbl_map(opts.format_item or tostring, items)
  table.insert(user.asked, { prompt = opts.prompt, kind = opts.kind, labels = labels })
  local pick = user.pick
  vim.defer_fn(function()
    for index, label in ipairs(labels) do
      if label == pick then
        return on_choice(items[index], index)
      end
    end
    on_choice(nil, nil)
  end, user.delay_ms)
end

local ALL_CHOICES = { "Allow", "Allow for this conversation", "Always allow this tool", "Deny" }

---The handler as Neovim's rpc.lua calls it for a server's request: in a coroutine, its return value the
---answer. Returns a function that gives the answer once there is one (nil before).
local function server_asks(params)
  local answer
  local run = coroutine.wrap(function()
    answer = mcp.on_confirm_tool_call(nil, params, { method = protocol.CONFIRM_TOOL_CALL, client_id = 1 })
  end)
  vim.schedule(run)
  return function()
    return answer
  end
end

local CALL = {
  conversationId = "c1",
  server = "tracker",
  tool = "create_note",
  name = "tracker.create_note",
  arguments = { title = "standup", body = "ship 2.4.2 on Friday" },
  description = "Create a note in the team's notebook.",
}

-- ---- offline ----------------------------------------------------------------------------------------

offline_step("the question shows the tool, its server and its arguments, and waits for an asynchronous UI", function()
  for _, pick in ipairs({ "Allow", "Allow for this conversation", "Always allow this tool", "Deny" }) do
    user.pick, user.asked, user.delay_ms = pick, {}, 200
    local answer = server_asks(CALL)
    wait_for("the question", 2000, function()
      return #user.asked == 1
    end)
    assert(answer() == nil, "answered before the user chose: " .. vim.inspect(answer()))
    wait_for("the answer", 5000, function()
      return answer() ~= nil
    end)
    local wanted = ({
      Allow = "allow",
      ["Allow for this conversation"] = "allowConversation",
      ["Always allow this tool"] = "allowAlways",
      Deny = "deny",
    })[pick]
    assert(vim.deep_equal(answer(), { choice = wanted }), vim.inspect(answer()))
    local asked = user.asked[1]
    assert(vim.deep_equal(asked.labels, ALL_CHOICES), vim.inspect(asked))
    assert(asked.kind == "llama_lsp.confirm_tool_call", vim.inspect(asked))
    for _, shown in ipairs({ "create_note", "server tracker", '"title":"standup"', '"body":"ship 2.4.2 on Friday"' }) do
      assert(asked.prompt:find(shown, 1, true), string.format("%q is not in %q", shown, asked.prompt))
    end
    assert(not asked.prompt:find("\n", 1, true), "the prompt is one line: " .. asked.prompt)
  end
end)

offline_step("cancelling is deny, and so is a UI that fails", function()
  user.pick, user.asked, user.delay_ms = nil, {}, 10
  local answer = server_asks(CALL)
  wait_for("the answer", 5000, function()
    return answer() ~= nil
  end)
  assert(vim.deep_equal(answer(), { choice = "deny" }), vim.inspect(answer()))

  local select, told = vim.ui.select, {}
  local notify = vim.notify
  vim.ui.select = function()
    error("the picker broke")
  end
  vim.notify = function(message)
    table.insert(told, message)
  end
  local ok, failing = pcall(function()
    local broken = server_asks(CALL)
    wait_for("the answer", 5000, function()
      return broken() ~= nil
    end)
    return broken()
  end)
  vim.ui.select, vim.notify = select, notify
  assert(ok, failing)
  assert(vim.deep_equal(failing, { choice = "deny" }), vim.inspect(failing))
  assert(#told == 1 and told[1]:find("the picker broke", 1, true), vim.inspect(told))
end)

offline_step("long arguments are cut, and empty ones are an object", function()
  local long = mcp.describe_arguments({ body = string.rep("é", 2000) })
  assert(vim.fn.strchars(long) < 450, long)
  assert(vim.endswith(long, "… (2011 characters)"), long)
  assert(mcp.describe_arguments(vim.empty_dict()) == "{}")
  assert(mcp.describe_arguments({}) == "{}")
end)

offline_step("an MCP server's empty env goes out as an object; untrusted, no servers go out", function()
  local folder = vim.fn.tempname()
  vim.fn.mkdir(folder, "p")
  require("llama_lsp.config").setup({
    init_options = { mcpServers = { tracker = { command = "tracker-mcp", args = {}, env = {} } } },
  })
  local settings = require("llama_lsp.config").server_settings()
  local sent = vim.json.encode(settings.mcpServers)
  assert(sent:find('"env":{}', 1, true) and sent:find('"args":[]', 1, true), sent)
  local untrusted = trust.for_folder(settings, folder)
  assert(vim.tbl_isempty(untrusted.mcpServers) and untrusted.mcpWorkspaceServers == false, vim.inspect(untrusted))
  assert(trust.note(folder):find("checks and MCP servers are off in", 1, true), trust.note(folder))
end)

offline_step(":checkhealth's lines: running with the tool count, a failed one with why, tools left out", function()
  local lines = mcp.health_lines({
    servers = {
      { name = "tracker", source = "settings", state = "running", tools = 2, starts = 1 },
      { name = "db", source = ".mcp.json", state = "failed", tools = 0, starts = 1, error = "exit 2\ncannot open" },
      { name = "docs", source = ".vscode/mcp.json", state = "stopped", tools = 0, starts = 0 },
    },
    offered = {},
    leftOut = { "docs.search" },
  })
  assert(
    vim.deep_equal(lines, {
      { level = "ok", text = "MCP server tracker (settings): running, 2 tools" },
      { level = "error", text = "MCP server db (.mcp.json): failed: exit 2 | cannot open" },
      { level = "info", text = "MCP server docs (.vscode/mcp.json): not started yet (a chat starts it)" },
      { level = "info", text = "1 MCP tool is not offered to the latest chat (not relevant to it, or over the limit): docs.search" },
    }),
    vim.inspect(lines)
  )
end)

-- ---- against the real server ----------------------------------------------------------------------

local client ---@type vim.lsp.Client
local source_buf ---@type integer

---The server's `assistant/stats` `mcp`.
local function mcp_stats(of_client)
  return assert(mcp.stats(of_client, 10000))
end

local function notes()
  local file = io.open(vim.env.MCP_TEST_NOTES or "", "r")
  if not file then
    return ""
  end
  local text = file:read("*a")
  file:close()
  return text
end

---Ask through the command in a new conversation, as a user types it, and wait for the answer.
local function ask(question)
  vim.cmd("LlamaNew")
  vim.api.nvim_set_current_buf(source_buf)
  vim.cmd("LlamaChat " .. question)
  wait_for("the answer to " .. question, 150000, function()
    return not chat.info().answering
  end)
  local last = assert(chat.info().last, "no answer recorded")
  assert(last.result, "the chat failed: " .. vim.inspect(last))
  return last.result
end

---The names of the tools an answer called, and the result of the first call of `name`.
local function calls(result)
  local names, results = {}, {}
  for _, call in ipairs(result.toolCalls or {}) do
    table.insert(names, call.name)
    results[call.name] = results[call.name] or call.result
  end
  return names, results
end

-- The test model writes `tracker.create_note` as a call when the question names it (tests/test_mcp.py).
local CREATE_NOTE = "Use tracker.create_note to create a note titled standup with the body: ship 2.4.2 on Friday."

step("setup in a trusted folder, then attach: the MCP server starts", function()
  assert(trust.set(workspace, true))
  llama.setup({
    cmd = vim.json.decode(vim.env.LLAMA_LSP_CMD),
    init_options = {
      model = vim.env.LLAMA_LSP_MODEL,
      contextSize = 4096,
      slots = 2,
      maxTokens = 160,
      cacheDir = vim.env.LLAMA_LSP_CACHE,
      verifyCommand = false,
      codebaseIndex = false,
      nextEdit = false,
      mcpServers = vim.json.decode(vim.env.LLAMA_LSP_MCP_SERVERS),
    },
    completion = { enabled = false },
  })
  vim.cmd.edit(workspace .. "/standup.py")
  source_buf = vim.api.nvim_get_current_buf()
  wait_for("standup.py to attach", 30000, function()
    return llama.client_for(source_buf) ~= nil
  end)
  client = assert(llama.client_for(source_buf))
  wait_for("the model to load", 120000, function()
    return llama.status(source_buf).state == "ready"
  end)
  -- Warming the chat's prompt about the opened file needs the tools: the MCP server starts.
  wait_for("the MCP server to run", 60000, function()
    local servers = mcp_stats(client).servers
    return #servers == 2 and servers[1].state == "running" and servers[2].state == "running"
  end)
end)

step("a read-only tool runs without asking", function()
  user.pick, user.asked = "Deny", {} -- whatever else the model tries is denied
  local result = ask("What is the status of ticket ABC-12 in the issue tracker, and who has it?")
  local names, results = calls(result)
  assert(vim.tbl_contains(names, "tracker.lookup_ticket"), vim.inspect(result))
  assert(results["tracker.lookup_ticket"]:find("Priya Raman", 1, true), vim.inspect(result))
  for _, asked in ipairs(user.asked) do
    assert(not asked.prompt:find("lookup_ticket", 1, true), "a read-only tool asked: " .. asked.prompt)
  end
  assert(notes() == "", "a note was written: " .. notes())
end)

step("a published server's tool (the reference filesystem server, from npm) runs without asking", function()
  user.pick, user.asked = "Deny", {}
  local result = ask("Call files.list_directory with the path " .. workspace .. ".")
  local names, results = calls(result)
  assert(vim.tbl_contains(names, "files.list_directory"), vim.inspect(result))
  assert(results["files.list_directory"]:find("standup.py", 1, true), vim.inspect(result))
  assert(#user.asked == 0, vim.inspect(user.asked))
end)

step("a write tool asks with the tool, its server and its arguments; Allow runs it", function()
  user.pick, user.asked = "Allow", {}
  local result = ask(CREATE_NOTE)
  local names = calls(result)
  assert(vim.tbl_contains(names, "tracker.create_note"), vim.inspect(result))
  assert(#user.asked == 1, vim.inspect({ asked = user.asked, result = result }))
  local asked = user.asked[1]
  assert(vim.deep_equal(asked.labels, ALL_CHOICES), vim.inspect(asked))
  for _, shown in ipairs({ "create_note", "server tracker", "standup" }) do
    assert(asked.prompt:find(shown, 1, true), string.format("%q is not in %q", shown, asked.prompt))
  end
  wait_for("the note", 5000, function()
    return notes():find("standup", 1, true) ~= nil
  end)
end)

step("Deny: the tool does not run, and the model reads that the user declined", function()
  local before = notes()
  user.pick, user.asked = "Deny", {}
  local result = ask(CREATE_NOTE)
  local names, results = calls(result)
  assert(vim.tbl_contains(names, "tracker.create_note"), vim.inspect(result))
  assert(#user.asked == 1 and user.asked[1].prompt:find("create_note", 1, true), vim.inspect(user.asked))
  assert(results["tracker.create_note"]:find("declined", 1, true), vim.inspect(result))
  assert(notes() == before, "the denied call wrote: " .. notes())
end)

step(":checkhealth names the MCP servers running, with their tool counts", function()
  vim.cmd("checkhealth llama_lsp")
  local report = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  local line = report:match("[^\n]*MCP server tracker %(settings%): running, 2 tools")
  assert(line and line:find("OK", 1, true), report)
  assert(report:find("MCP server files (settings): running, 14 tools", 1, true), report)
  vim.cmd.bwipeout()
end)

step("an untrusted folder: no MCP server starts, neither the setting's nor the folder's .mcp.json", function()
  local untrusted = vim.env.LLAMA_LSP_UNTRUSTED
  assert(not trust.is_trusted(untrusted))
  vim.cmd.edit(untrusted .. "/code.py")
  local buf = vim.api.nvim_get_current_buf()
  wait_for("code.py to attach", 30000, function()
    return llama.client_for(buf) ~= nil
  end)
  local other = assert(llama.client_for(buf))
  assert(other.id ~= client.id, "the untrusted folder shares the trusted folder's server")
  -- Warming the chat's prompt about code.py is where a trusted folder's servers start.
  wait_for("code.py's prompt to be warm", 120000, function()
    return llama.is_warm(buf) == true
  end)
  assert(vim.deep_equal(mcp_stats(other).servers, {}), vim.inspect(mcp_stats(other)))
  assert(vim.fn.filereadable(vim.env.MCP_TEST_STARTS) == 0, "an MCP server started in the untrusted folder")
end)

if not workspace then
  steps = offline_steps
end
test_steps.run(steps)
