-- What the test scripts share: `run` runs a script's steps in order, one TAP-like line each
-- ("ok N - name"), and exits Neovim: 1 at the first failure (with its traceback), 0 once every step
-- passed and the servers stopped; `wait_for` waits for a condition or fails the step, naming it;
-- `in_insert_mode` types in Insert mode as a user does, waiting between keys.
local M = {}

function M.wait_for(what, timeout_ms, condition)
  if not vim.wait(timeout_ms, condition, 20) then
    error("timed out after " .. timeout_ms .. " ms waiting for " .. what, 2)
  end
end

---Run `body` in Insert mode, as a user types. `keys` (such as "GA") start Insert mode; `body(ui)` runs as a
---coroutine whose waits hand control back to Neovim, which handles typed keys, timers and the server's
---answers only while no Lua runs. `ui.type(keys)` types keys (mappings apply), `ui.wait_for(what,
---timeout_ms, condition)` and `ui.sleep(ms)` wait. <Esc> ends Insert mode once `body` returns or fails;
---a failure is raised here.
function M.in_insert_mode(keys, body)
  local waiting ---@type { what: string, deadline: number, condition: fun(): boolean }?
  local outcome ---@type { ok: boolean, err?: string }?
  local function now_ms()
    return vim.uv.hrtime() / 1e6
  end
  local ui = {
    type = function(typed)
      vim.api.nvim_feedkeys(vim.keycode(typed), "mt", false)
      coroutine.yield()
    end,
    wait_for = function(what, timeout_ms, condition)
      coroutine.yield({ what = what, deadline = now_ms() + timeout_ms, condition = condition })
    end,
    sleep = function(ms)
      local until_ms = now_ms() + ms
      coroutine.yield({
        what = "the sleep",
        deadline = math.huge,
        condition = function()
          return now_ms() >= until_ms
        end,
      })
    end,
  }
  local co = coroutine.create(body)
  local timer = assert(vim.uv.new_timer())
  local function finish(ok, err)
    outcome = { ok = ok, err = err }
    timer:stop()
    timer:close()
    vim.api.nvim_feedkeys(vim.keycode("<Esc>"), "n", false)
  end
  timer:start(
    20,
    20,
    vim.schedule_wrap(function()
      if outcome then
        return
      end
      if waiting then
        local ok, done = pcall(waiting.condition)
        if not ok then
          return finish(false, done)
        elseif not done then
          if now_ms() > waiting.deadline then
            finish(false, "timed out waiting for " .. waiting.what)
          end
          return
        end
        waiting = nil
      end
      local ok, yielded = coroutine.resume(co, ui)
      if not ok then
        finish(false, debug.traceback(co, yielded))
      elseif coroutine.status(co) == "dead" then
        finish(true)
      else
        waiting = yielded
      end
    end)
  )
  -- Returns once Insert mode ends ("!": not when the keys run out).
  vim.api.nvim_feedkeys(vim.keycode(keys), "x!", false)
  assert(outcome, "Insert mode ended before the test did")
  if not outcome.ok then
    error(outcome.err, 0)
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
