---Client calls that differ between Neovim versions: 0.11 made the client's methods take `self`,
---0.10 has plain functions.
local M = {}

local methods = vim.fn.has("nvim-0.11") == 1

---@return boolean ok, integer? request_id
function M.request(client, method, params, handler, bufnr)
  if methods then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.notify(client, method, params)
  if methods then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

---Route every request the client sends through `wrap(method, params, handler)`, which returns the
---handler to use instead (handler is nil when the caller left it to the client's handlers). On 0.11
---`client.request` takes `self`, and the deprecated call without it still works; 0.10's never does.
---@param client vim.lsp.Client
---@param wrap fun(method: string, params: any, handler?: function): function?
function M.wrap_requests(client, wrap)
  local request = client.request
  client.request = function(...)
    local args = vim.F.pack_len(...)
    local first = args[1] == client and 2 or 1 -- where `method` is
    args[first + 2] = wrap(args[first], args[first + 1], args[first + 2])
    args.n = math.max(args.n, first + 2)
    return request(vim.F.unpack_len(args))
  end
end

function M.cancel_request(client, id)
  if methods then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

return M
