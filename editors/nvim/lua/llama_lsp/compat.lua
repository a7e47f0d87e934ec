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

function M.cancel_request(client, id)
  if methods then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

return M
