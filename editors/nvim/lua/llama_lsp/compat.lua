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

---@return { err: lsp.ResponseError?, result: any }? response, string? err
function M.request_sync(client, method, params, timeout_ms, bufnr)
  if methods then
    return client:request_sync(method, params, timeout_ms, bufnr)
  end
  return client.request_sync(method, params, timeout_ms, bufnr)
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

---The byte index in `line` of the LSP character `index` in `encoding` ("utf-8", "utf-16" or "utf-32");
---nil when the line is shorter than that. 0.11 took the encoding as a name; 0.10 has a flag for UTF-16
---(and counts UTF-32 without it), and raises where 0.11 rounds to the line's end.
---@param line string
---@param index integer
---@param encoding string
---@return integer?
function M.byte_index(line, index, encoding)
  if encoding == "utf-8" then
    return index <= #line and index or nil
  end
  if methods then
    if index > vim.str_utfindex(line, encoding) then
      return nil
    end
    return vim.str_byteindex(line, encoding, index, false)
  end
  local ok, byte = pcall(vim.str_byteindex, line, index, encoding == "utf-16")
  return ok and byte or nil
end

function M.cancel_request(client, id)
  if methods then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

return M
