-- An in-process stand-in for the server, for the test scripts that run the plugin without a model:
-- `vim.lsp.start` takes a function as `cmd`, and this one answers with canned results.
local M = {}

---A new stand-in. `fake.cmd` is the server command to start it with; `fake.replies[method]` is the result
---of a request, or a function of the params that returns it (`fake.NO_REPLY`: no answer;
---`fake.error(code, message)`: a JSON-RPC error). It records what
---it was sent (`fake.requests`, with their ids, and `fake.notifications`); `fake.dispatchers` sends to the
---client (`fake.dispatchers.notification(method, params)`).
function M.new()
  local fake = { replies = {}, requests = {}, notifications = {}, NO_REPLY = {} }
  local errors = setmetatable({}, { __mode = "k" }) -- the replies fake.error made

  function fake.error(code, message)
    local reply = { code = code, message = message }
    errors[reply] = true
    return reply
  end

  function fake.cmd(dispatchers)
    fake.dispatchers = dispatchers
    local closing, next_id = false, 0
    local function exit(signal)
      if not closing then
        closing = true
        vim.schedule(function()
          dispatchers.on_exit(0, signal)
        end)
      end
    end
    return {
      request = function(method, params, callback, notify_reply_callback)
        next_id = next_id + 1
        local id = next_id
        table.insert(fake.requests, { method = method, params = params, id = id })
        vim.schedule(function()
          local reply = fake.replies[method]
          if type(reply) == "function" then
            reply = reply(params)
          end
          if reply == fake.NO_REPLY then
            return
          end
          if errors[reply] then
            callback(reply, nil)
          else
            callback(nil, reply)
          end
          if notify_reply_callback then
            notify_reply_callback(id)
          end
        end)
        return true, id
      end,
      notify = function(method, params)
        table.insert(fake.notifications, { method = method, params = params })
        if method == "exit" then
          exit(0)
        end
        return true
      end,
      is_closing = function()
        return closing
      end,
      terminate = function()
        exit(15)
      end,
    }
  end

  fake.replies["initialize"] = {
    capabilities = {
      textDocumentSync = 1,
      codeActionProvider = { resolveProvider = true },
      executeCommandProvider = { commands = { "llamaLsp.codeAction" } },
      inlineCompletionProvider = vim.empty_dict(),
    },
    serverInfo = { name = "fake-llama-lsp", version = "0" },
  }
  return fake
end

return M
