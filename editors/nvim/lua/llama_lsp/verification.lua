---Edit checks (the server's `verifyCommand`): how a result's `verification` reads, the notification
---for code actions, and `:LlamaCheckOutput`, which shows what the last check printed.
local compat = require("llama_lsp.compat")
local protocol = require("llama_lsp.protocol")

local M = {}

---What the server says about checking an edit. JSON nulls arrive as nil (or vim.NIL).
---@class llama_lsp.Verification
---@field command? string|userdata  the verifyCommand; nil when none is set
---@field passed? boolean|userdata   nil: not checked
---@field attempts integer
---@field output string              what the last check printed, trimmed
---@field summary string             one line, e.g. "verified: `pytest -q` passed (attempt 2)"

local last ---@type llama_lsp.Verification?  the last one seen, for :LlamaCheckOutput
local output_buf ---@type integer?  the buffer :LlamaCheckOutput shows it in

---@param value any
---@return any  nil for JSON null
local function present(value)
  if value == vim.NIL then
    return nil
  end
  return value
end

---Whether a check ran and failed (not merely: nothing was checked).
---@param verification llama_lsp.Verification
---@return boolean
function M.failed(verification)
  return present(verification.passed) == false
end

---The one-line summary and the level to tell it at: WARN when the check failed, INFO otherwise. An edit
---left unchecked in a folder that is not trusted says so, and how to trust it: the server's own summary
---can only say that no command is set.
---@param verification llama_lsp.Verification
---@param folder? string  the folder of the server that checked it
---@return string summary, integer level
function M.describe(verification, folder)
  local summary = present(verification.summary)
  local passed = present(verification.passed)
  if type(summary) ~= "string" or summary == "" then
    summary = passed == true and "verified"
      or passed == false and "not verified: the check failed"
      or "not verified"
  end
  local untrusted = passed == nil and folder and require("llama_lsp.trust").note(folder)
  if untrusted then
    summary = string.format("%s (%s)", summary, untrusted)
  end
  return summary, M.failed(verification) and vim.log.levels.WARN or vim.log.levels.INFO
end

---The chat footer's line for a result's verification: the summary, and for a failed check where to
---see why. The caller highlights it as a warning when `M.failed()`.
---@param verification llama_lsp.Verification
---@param folder? string  the folder of the server that checked it
---@return string
function M.footer_line(verification, folder)
  local summary = M.describe(verification, folder)
  if M.failed(verification) then
    return "_" .. summary .. " (`:LlamaCheckOutput` shows why)_"
  end
  return "_" .. summary .. "_"
end

---Keep a result's verification for `:LlamaCheckOutput`.
---@param verification? llama_lsp.Verification
function M.remember(verification)
  if type(verification) == "table" then
    last = verification
  end
end

---The last verification seen, from the chat or a code action.
---@return llama_lsp.Verification?
function M.last()
  return last
end

---Tell the user how the check of a code action's edit went.
---@param verification? llama_lsp.Verification
---@param folder? string  the folder of the server that checked it
function M.notify(verification, folder)
  if type(verification) ~= "table" then
    return
  end
  M.remember(verification)
  local summary, level = M.describe(verification, folder)
  if M.failed(verification) then
    summary = summary .. " (:LlamaCheckOutput shows why)"
  end
  vim.notify("llama-lsp: " .. summary, level)
end

---The verification in a reply, for the requests whose replies carry one: `codeAction/resolve` (in the
---action's `data`) and `workspace/executeCommand` of `llamaLsp.codeAction` (in the result).
---@param method string
---@param params any
---@param result any
---@return llama_lsp.Verification?
function M.of_reply(method, params, result)
  if type(result) ~= "table" then
    return nil
  end
  if method == "codeAction/resolve" then
    return type(result.data) == "table" and result.data.verification or nil
  end
  local ours = type(params) == "table" and params.command == protocol.COMMAND_CODE_ACTION
  if method == "workspace/executeCommand" and ours then
    return result.verification
  end
end

---Notify the check of every code action this client resolves or runs. Neovim's own
---`vim.lsp.buf.code_action()` (and pickers that resolve the same way) hands `codeAction/resolve` a
---callback of its own, which the client's `handlers` never see; so the replies are watched as they
---come back to whichever handler asked, after that handler has applied the edit.
---@param client vim.lsp.Client
function M.watch(client)
  compat.wrap_requests(client, function(method, params, handler)
    if method ~= "codeAction/resolve" and method ~= "workspace/executeCommand" then
      return handler
    end
    local inner = handler or client.handlers[method] or vim.lsp.handlers[method]
    return function(err, result, ...)
      if inner then
        inner(err, result, ...)
      end
      if not err then
        M.notify(M.of_reply(method, params, result), client.root_dir)
      end
    end
  end)
end

---The lines `:LlamaCheckOutput` shows.
---@param verification llama_lsp.Verification
---@return string[]
function M.output_lines(verification)
  local lines = { (M.describe(verification)) }
  local command = present(verification.command)
  if command then
    table.insert(lines, "")
    table.insert(lines, "$ " .. command)
    vim.list_extend(lines, vim.split(present(verification.output) or "", "\n", { plain = true }))
  end
  return lines
end

---`:LlamaCheckOutput`: what the last check printed, in a scratch split (`q` closes it).
function M.show_output()
  if not last then
    vim.notify("llama-lsp: no edit has been checked yet", vim.log.levels.INFO)
    return
  end
  local lines = M.output_lines(last)
  local buf = output_buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, "llama-check")
    vim.keymap.set("n", "q", "<Cmd>close<CR>", { buffer = buf, desc = "llama-lsp: close" })
    output_buf = buf
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  local win = vim.fn.win_findbuf(buf)[1]
  if win then
    vim.api.nvim_set_current_win(win)
  else
    win = vim.api.nvim_open_win(buf, true, { split = "below", win = -1, height = math.min(#lines, 15) })
  end
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
end

return M
