---MCP tool servers (docs/protocol.md, "MCP tool servers"), the Neovim side: the user's consent to a chat's
---call of an MCP tool that may change something (`assistant/confirmToolCall`, asked with vim.ui.select),
---and how `:checkhealth` describes the MCP servers of `assistant/stats`. The servers themselves run in
---the language server; which ones it may start is the `mcpServers` / `mcpWorkspaceServers` settings,
---which llama_lsp.trust withholds from a folder not trusted.
local compat = require("llama_lsp.compat")
local protocol = require("llama_lsp.protocol")

local M = {}

---The choices offered, in order, with the answer each gives.
---@type { label: string, choice: llama_lsp.ToolCallChoice }[]
M.CHOICES = {
  { label = "Allow", choice = "allow" },
  { label = "Allow for this conversation", choice = "allowConversation" },
  { label = "Always allow this tool", choice = "allowAlways" },
  { label = "Deny", choice = "deny" },
}

---What cancelling the question (or a UI that fails) answers: the call does not run.
---@type llama_lsp.ToolCallChoice
M.DENY = "deny"

-- A call's arguments may hold a whole file: the question shows their start, and says how long they were.
local ARGUMENTS_MAX_CHARS = 400

---The call's arguments as one line of JSON, cut to ARGUMENTS_MAX_CHARS characters.
---@param arguments any
---@return string
function M.describe_arguments(arguments)
  local text
  if type(arguments) ~= "table" or vim.tbl_isempty(arguments) then
    -- An empty table would encode as `[]`; the model sent an object.
    text = "{}"
  else
    local ok, encoded = pcall(vim.json.encode, arguments)
    text = ok and encoded or vim.inspect(arguments, { newline = " ", indent = "" })
  end
  local length = vim.fn.strchars(text)
  if length > ARGUMENTS_MAX_CHARS then
    text = string.format("%s… (%d characters)", vim.fn.strcharpart(text, 0, ARGUMENTS_MAX_CHARS), length)
  end
  return text
end

---The question vim.ui.select shows: which tool of which server, with which arguments. One line, since
---several UIs show a prompt as a title.
---@param params llama_lsp.ConfirmToolCallParams
---@return string
function M.prompt(params)
  return string.format(
    "llama-lsp: run the MCP tool %s (server %s) with %s?",
    tostring(params.tool),
    tostring(params.server),
    M.describe_arguments(params.arguments)
  )
end

---Ask the user about a call and give the choice to `on_choice` (M.DENY when the question is cancelled).
---@param params llama_lsp.ConfirmToolCallParams
---@param on_choice fun(choice: llama_lsp.ToolCallChoice)
function M.ask(params, on_choice)
  local answered = false
  local function answer(choice)
    if not answered then -- a UI that calls back twice answers once
      answered = true
      on_choice(choice)
    end
  end
  local ok, err = pcall(vim.ui.select, M.CHOICES, {
    prompt = M.prompt(params),
    kind = "llama_lsp.confirm_tool_call",
    format_item = function(item)
      return item.label
    end,
  }, function(item)
    answer(item and item.choice or M.DENY)
  end)
  if not ok then
    vim.notify("llama-lsp: could not ask about the tool call, so it is denied: " .. tostring(err), vim.log.levels.WARN)
    answer(M.DENY)
  end
end

---The handler of `assistant/confirmToolCall`, a request from the server.
---
---Neovim answers a server's request with what its handler returns (vim.lsp.rpc's handle_body sends the
---handler's `result, err`), so a handler cannot answer later from a callback, and returning vim.NIL would
---answer `null` at once (which the server takes for "deny"). But since Neovim 0.9 (neovim#21026) rpc.lua
---runs each server request's handler inside a coroutine (`vim.schedule(coroutine.wrap(...))`) and sends
---the response once that coroutine returns; Neovim's own window/showMessageRequest handler relies on it.
---This does the same: it yields, and vim.ui.select's callback resumes it with the choice, so an
---asynchronous vim.ui.select (telescope, dressing, snacks) works and the editor is not blocked while the
---user reads the question. The resume is scheduled because the default vim.ui.select calls back at once,
---before the handler has yielded. Called outside a coroutine (by other code, directly), it waits with
---vim.wait, which serves a synchronous vim.ui.select only.
---@param params llama_lsp.ConfirmToolCallParams
---@return llama_lsp.ConfirmToolCallResult
function M.on_confirm_tool_call(_, params, _)
  local co, is_main = coroutine.running()
  if co and not is_main then
    M.ask(params, function(choice)
      vim.schedule(function()
        coroutine.resume(co, choice)
      end)
    end)
    return { choice = coroutine.yield() }
  end
  local chosen ---@type llama_lsp.ToolCallChoice?
  M.ask(params, function(choice)
    chosen = choice
  end)
  -- The server denies a call whose answer takes 10 minutes; waiting longer helps nobody.
  vim.wait(10 * 60 * 1000, function()
    return chosen ~= nil
  end, 50)
  return { choice = chosen or M.DENY }
end

---The MCP servers a running server reports (`assistant/stats`' `mcp`); nil and why when it does not
---answer, or is older than MCP.
---@param client vim.lsp.Client
---@param timeout_ms? integer
---@return llama_lsp.McpStats?, string? why
function M.stats(client, timeout_ms)
  local response, err = compat.request_sync(client, protocol.STATS, {}, timeout_ms or 5000)
  if not response then
    return nil, tostring(err or "no answer")
  end
  if response.err then
    return nil, response.err.message or vim.inspect(response.err)
  end
  local mcp = response.result and response.result.mcp
  if type(mcp) ~= "table" then
    return nil, "the server reports no MCP servers (a server older than MCP)"
  end
  return mcp
end

---One line per MCP server for `:checkhealth`: its level ("ok", "info", "warn", "error") and what to say.
---@param mcp llama_lsp.McpStats
---@return { level: string, text: string }[]
function M.health_lines(mcp)
  local lines = {}
  for _, s in ipairs(mcp.servers or {}) do
    local where = string.format("MCP server %s (%s)", s.name, s.source)
    local tools = string.format("%d tool%s", s.tools or 0, s.tools == 1 and "" or "s")
    if s.state == "running" then
      table.insert(lines, { level = "ok", text = string.format("%s: running, %s", where, tools) })
    elseif s.state == "failed" then
      local why = vim.trim(tostring(s.error or "no reason given")):gsub("\n", " | ")
      table.insert(lines, { level = "error", text = string.format("%s: failed: %s", where, why) })
    elseif s.state == "starting" then
      table.insert(lines, { level = "info", text = where .. ": starting" })
    else
      table.insert(lines, { level = "info", text = where .. ": not started yet (a chat starts it)" })
    end
  end
  if mcp.leftOut and #mcp.leftOut > 0 then
    table.insert(lines, {
      level = "info",
      text = string.format(
        "%d MCP tool%s not offered to the latest chat (not relevant to it, or over the limit): %s",
        #mcp.leftOut,
        #mcp.leftOut == 1 and " is" or "s are",
        table.concat(mcp.leftOut, ", ")
      ),
    })
  end
  return lines
end

return M
