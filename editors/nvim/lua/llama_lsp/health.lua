---`:checkhealth llama_lsp`: is the server found, does it start, is the model there and loaded, is
---inline completion on and offered.
local config = require("llama_lsp.config")
local protocol = require("llama_lsp.protocol")

local M = {}

local health = vim.health

---Run the server command with extra arguments; returns its exit code and output.
---@param args string[]
---@return integer, string
local function run(args)
  local command = vim.list_extend(config.base_command(), args)
  local ok, result = pcall(function()
    return vim.system(command, { text = true }):wait(60000)
  end)
  if not ok then
    return -1, tostring(result)
  end
  return result.code, vim.trim((result.stdout or "") .. (result.stderr or ""))
end

local function check_neovim()
  local version = vim.version()
  local text = string.format("Neovim %d.%d.%d", version.major, version.minor, version.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok(text)
  else
    health.error(text .. ": llama-lsp needs Neovim 0.10 or later")
  end
end

---@return boolean found
local function check_server()
  local executable = config.options.cmd[1]
  if vim.fn.executable(executable) == 0 then
    health.error(
      string.format("server command not found: %q", executable),
      { "Install llama-lsp (see its README), or set `cmd` in require('llama_lsp').setup()" }
    )
    return false
  end
  health.ok(string.format("server command: %s", vim.fn.exepath(executable)))
  local code, output = run({ "--version" })
  if code ~= 0 then
    health.error("the server does not start: " .. output, { "Run `llama-lsp --version` in a shell to see why" })
    return false
  end
  health.ok("server starts: " .. output)
  return true
end

local function check_model()
  local backend = config.options.init_options.backend
  if type(backend) == "table" then -- nothing to install here: the remote server has the model
    local model = backend.model or "the model it serves"
    health.info(string.format("model: %s at %s (backend)", tostring(model), tostring(backend.url)))
    return
  end
  local model = config.options.init_options.model
  local code, output = run(model and { "model", "path", model } or { "model", "path" })
  if code == 0 then
    health.ok("model installed: " .. output)
  else
    health.error(output, { "Install it with `llama-lsp model install NAME`" })
  end
end

local function check_verify()
  local command = config.server_settings().verifyCommand
  if command == "" then
    health.info("edit checks: off (see :help llama_lsp-verify)")
  else
    health.info(
      string.format("edit checks: `%s` runs code the model wrote, in a temporary copy of the folder", command)
    )
  end
end

local function check_completion()
  local opts = config.options.completion
  if not opts.enabled then
    health.info("inline completion: off (completion.enabled = false)")
    return
  end
  local shown_by = require("llama_lsp.completion").native() and "Neovim's vim.lsp.inline_completion"
    or string.format("the plugin, %d ms after typing pauses", opts.debounce_ms)
  local key = opts.accept_key and string.format("%s accepts", opts.accept_key) or "no accept key mapped"
  health.info(string.format("inline completion: on (shown by %s; %s)", shown_by, key))
end

local function check_clients()
  local clients = vim.lsp.get_clients({ name = protocol.CLIENT_NAME })
  if #clients == 0 then
    health.info("no server running yet: open a file that setup() attaches to")
    return
  end
  local llama = require("llama_lsp")
  for _, client in ipairs(clients) do
    local status = llama.client_status(client.id)
    local server = client.server_info or {}
    local where = string.format("%s %s at %s", server.name or "server", server.version or "?", client.root_dir or "?")
    if status.state == "ready" or status.state == "busy" then
      health.ok(string.format("%s: model loaded (%s)", where, status.state))
    elseif status.state == "error" then
      health.error(string.format("%s: %s", where, status.message or "error"))
    else
      health.warn(string.format("%s: %s", where, status.state), { "The model is still loading; check again soon" })
    end
    if require("llama_lsp.completion").advertised(client) then
      health.ok(string.format("%s: offers inline completion", where))
    elseif config.options.completion.enabled then
      health.warn(
        string.format("%s: does not offer inline completion", where),
        { "Update llama-lsp: inline completion needs a server that has it" }
      )
    else
      health.info(string.format("%s: does not offer inline completion", where))
    end
  end
end

function M.check()
  health.start("llama-lsp")
  check_neovim()
  if check_server() then
    check_model()
  end
  check_verify()
  check_completion()
  check_clients()
end

return M
