-- What the test scripts share: `run` runs a script's steps in order, one TAP-like line each
-- ("ok N - name"), and exits Neovim: 1 at the first failure (with its traceback), 0 once every step
-- passed and the servers stopped; `wait_for` waits for a condition or fails the step, naming it.
local M = {}

function M.wait_for(what, timeout_ms, condition)
  if not vim.wait(timeout_ms, condition, 20) then
    error("timed out after " .. timeout_ms .. " ms waiting for " .. what, 2)
  end
end

function M.run(steps)
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
end

return M
