---`:LlamaSearch`: the workspace index's best chunks for a query (`assistant/searchCodebase`), as a
---quickfix list, best first.
local compat = require("llama_lsp.compat")
local protocol = require("llama_lsp.protocol")

local M = {}

---@class llama_lsp.SearchOptions
---@field bufnr? integer  whose server to ask (default: the current buffer's, else any running one)
---@field limit? integer  results at most, 1 to 50 (default: the server's, 10)

---The server to ask: the buffer's, else (a buffer no server serves, such as the quickfix list) the one
---whose folder holds the working directory, else any running one.
---@param bufnr integer
---@return vim.lsp.Client?
local function client_for(bufnr)
  local client = require("llama_lsp").client_for(bufnr)
  if client then
    return client
  end
  local running = vim.lsp.get_clients({ name = protocol.CLIENT_NAME })
  local cwd = vim.fs.normalize(vim.fn.getcwd())
  for _, candidate in ipairs(running) do
    local root = candidate.root_dir and vim.fs.normalize(candidate.root_dir)
    if root and (cwd == root or vim.startswith(cwd, root .. "/")) then
      return candidate
    end
  end
  return running[1]
end

---The first line of a snippet that is not blank, trimmed.
---@param snippet string
---@return string
local function first_line(snippet)
  for _, line in ipairs(vim.split(snippet or "", "\n", { plain = true })) do
    if line:find("%S") then
      return vim.trim(line)
    end
  end
  return ""
end

---A result as a quickfix item: the chunk's first line, its symbol and first line of code as the text.
---@param result llama_lsp.SearchCodebaseHit
---@return table
function M.quickfix_item(result)
  local start, stop = result.range.start, result.range["end"]
  local line = first_line(result.snippet)
  local text = line
  if type(result.symbol) == "string" and result.symbol ~= "" then
    text = line ~= "" and (result.symbol .. ": " .. line) or result.symbol
  end
  -- `end` is the start of the line after the chunk, unless it points inside a line.
  local end_lnum = stop.character == 0 and stop.line or stop.line + 1
  return {
    filename = vim.uri_to_fname(result.uri),
    lnum = start.line + 1,
    end_lnum = math.max(end_lnum, start.line + 1),
    text = text,
  }
end

---What to say about an index that is still being built, or nil once it is ready.
---@param indexed { files: integer, chunks: integer, ready: boolean }
---@return string?
function M.building_note(indexed)
  if type(indexed) ~= "table" or indexed.ready ~= false then
    return nil
  end
  local files = tonumber(indexed.files) or 0
  local note = string.format("the index is still being built (%d %s so far)", files, files == 1 and "file" or "files")
  if files == 0 then
    -- The server answers the same way with codebaseIndex off, or no folder open.
    note = note .. ", or `codebaseIndex` is off"
  end
  return note
end

---Show a search's result: the quickfix list, opened, or a message when nothing matched.
---@param query string
---@param result llama_lsp.SearchCodebaseResult
local function show(query, result)
  local results = type(result) == "table" and result.results or nil
  local building = M.building_note(type(result) == "table" and result.indexed or nil)
  if type(results) ~= "table" or #results == 0 then
    local message = string.format('llama-lsp: no results for "%s"', query)
    if building then
      message = message .. ": " .. building
    end
    vim.notify(message, vim.log.levels.INFO)
    return
  end
  vim.fn.setqflist({}, " ", { title = "llama-lsp: " .. query, items = vim.tbl_map(M.quickfix_item, results) })
  vim.cmd.copen()
  if building then
    vim.notify("llama-lsp: " .. building .. ": more may match once it is done", vim.log.levels.INFO)
  end
end

---Search the workspace for `query` (`:LlamaSearch`); the results go to the quickfix list, which opens.
---Without a query you are prompted for one.
---@param query? string
---@param opts? llama_lsp.SearchOptions
function M.search(query, opts)
  opts = opts or {}
  if query == nil or vim.trim(query) == "" then
    vim.ui.input({ prompt = "Search the workspace: " }, function(input)
      if input and vim.trim(input) ~= "" then
        M.search(input, opts)
      end
    end)
    return
  end
  query = vim.trim(query)
  local bufnr = opts.bufnr or vim.api.nvim_get_current_buf()
  local client = client_for(bufnr)
  if not client then
    vim.notify(
      "llama-lsp: no server is running. Call require('llama_lsp').setup() and open a file of the workspace.",
      vim.log.levels.ERROR
    )
    return
  end
  local params = { query = query, limit = opts.limit }
  local ok = compat.request(client, protocol.SEARCH_CODEBASE, params, function(err, result)
    if err then
      vim.notify("llama-lsp: the search failed: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    show(query, result)
  end, client.attached_buffers[bufnr] and bufnr or nil)
  if not ok then
    vim.notify("llama-lsp: the server is not running", vim.log.levels.ERROR)
  end
end

return M
