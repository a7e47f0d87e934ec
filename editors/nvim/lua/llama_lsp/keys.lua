---Keys the plugin takes only while it has something to do with them (<Tab> to accept a suggestion,
---<Esc> to dismiss one): otherwise the key does what it did before, through the mapping ours hides (a
---user's, another plugin's, Neovim's own <Tab> that jumps in snippets), or as the key itself.
local M = {}

local pending_callback ---@type function?  a hidden mapping's callback, for <Cmd> to run

---The mapping of `key` in `mode` that a buffer-local mapping of ours hides (the buffer's own, else the
---global one), if any. A mapping described as `own_desc` is one of ours: nothing to call through.
---@param bufnr integer
---@param mode string
---@param key string
---@param own_desc string
---@return table?  as maparg() describes it
function M.hidden(bufnr, mode, key, own_desc)
  local map = vim.api.nvim_buf_call(bufnr, function()
    return vim.fn.maparg(key, mode, false, true)
  end)
  if vim.tbl_isempty(map) or map.desc == own_desc then
    return nil
  end
  return map
end

---What the key does when ours has nothing to do: the hidden mapping, or else the key itself.
---@param key string
---@param before? table  from `hidden`
---@return string  keys for an expression mapping to return
function M.fall_back(key, before)
  if not before then
    return key
  end
  if before.callback and before.expr == 1 then
    local keys = before.callback()
    return type(keys) == "string" and keys or ""
  end
  if before.callback then
    -- Through <Cmd>, as it may change the text, which an expression mapping may not.
    pending_callback = before.callback
    return "<Cmd>lua require('llama_lsp.keys').run_pending()<CR>"
  end
  if before.expr == 1 then
    return vim.api.nvim_eval(before.rhs)
  end
  if before.noremap == 0 then
    -- Keys that may be mapped themselves, which what an expression mapping returns may not be.
    vim.api.nvim_feedkeys(vim.keycode(before.rhs), "im", false)
    return ""
  end
  return before.rhs
end

---Run the hidden mapping's callback that `fall_back` handed over.
function M.run_pending()
  local callback = pending_callback
  pending_callback = nil
  if callback then
    callback()
  end
end

---@class llama_lsp.TakenKey
---@field bufnr integer
---@field mode string
---@field key string
---@field desc string
---@field before? table  the mapping it hides

---Map `key` in `mode` for the buffer, for a while, as an expression mapping: `handler(fall_back)`
---returns the keys to run, or nil to do what the key did before; `fall_back()` gives the keys that do
---that. `release` gives the key back.
---@param bufnr integer
---@param mode string
---@param key string
---@param desc string  names the mapping, and tells ours from others
---@param handler fun(fall_back: fun(): string): string?
---@return llama_lsp.TakenKey
function M.take(bufnr, mode, key, desc, handler)
  local before = M.hidden(bufnr, mode, key, desc)
  local function fall_back()
    return M.fall_back(key, before)
  end
  vim.keymap.set(mode, key, function()
    return handler(fall_back) or fall_back()
  end, { buffer = bufnr, expr = true, desc = desc })
  return { bufnr = bufnr, mode = mode, key = key, desc = desc, before = before }
end

---Give a key back: remove our mapping and put back the buffer's own mapping that it replaced. A mapping
---someone made over ours meanwhile stays.
---@param taken llama_lsp.TakenKey
function M.release(taken)
  if not vim.api.nvim_buf_is_valid(taken.bufnr) then
    return
  end
  local current = vim.api.nvim_buf_call(taken.bufnr, function()
    return vim.fn.maparg(taken.key, taken.mode, false, true)
  end)
  if current.buffer ~= 1 or current.desc ~= taken.desc then
    return
  end
  pcall(vim.keymap.del, taken.mode, taken.key, { buffer = taken.bufnr })
  local before = taken.before
  if before and before.buffer == 1 then
    vim.api.nvim_buf_call(taken.bufnr, function()
      vim.fn.mapset(taken.mode, false, before)
    end)
  end
end

return M
