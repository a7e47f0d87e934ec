---`:checkhealth llama_lsp`: which server is found and where (the setting, PATH, a .venv, :LlamaInstall),
---does it start and which version, is the model there and loaded, do checks run (which folders are
---trusted), are inline completion and next-edit suggestions on and offered, which MCP servers run (and
---why one failed).
local config = require("llama_lsp.config")
local mcp = require("llama_lsp.mcp")
local protocol = require("llama_lsp.protocol")
local server = require("llama_lsp.server")
local trust = require("llama_lsp.trust")

local M = {}

local health = vim.health

---Run the server's command with extra arguments; returns its exit code and output.
---@param cmd string[]  the command that starts the server
---@param args string[]
---@return integer, string
local function run(cmd, args)
  local command = vim.list_extend(config.base_command(cmd), args)
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

---Which server, where from (the setting, PATH, a .venv, :LlamaInstall) and its version.
---@return string[]? cmd  the server's command, when it starts
local function check_server()
  local root = vim.lsp.get_clients({ name = protocol.CLIENT_NAME })[1]
  local found, why = server.locate(root and root.root_dir or nil)
  if not found then
    health.error(server.NOT_FOUND .. (why and (" " .. why) or ""), {
      "Run :LlamaInstall: it installs the server into " .. server.root(),
      "Or install llama-lsp on PATH (see its README), or set `cmd` in require('llama_lsp').setup()",
    })
    return nil
  end
  if type(found.cmd) ~= "table" then
    health.info("server: a Lua function (" .. server.SOURCES.setting .. ")")
    return nil
  end
  local executable = found.cmd[1]
  if vim.fn.executable(executable) == 0 then
    health.error(
      string.format("server command not found: %q (%s)", executable, server.SOURCES[found.source]),
      { "Fix `cmd` in require('llama_lsp').setup(), or leave it out and run :LlamaInstall" }
    )
    return nil
  end
  health.ok(string.format("server: %s (%s)", vim.fn.exepath(executable), server.SOURCES[found.source]))
  local installed = found.source == "setting" and (server.find() or {}).installed or found.installed
  local newest = installed and installed[1]
  if newest and found.source ~= "installed" then
    health.info(
      string.format("also installed by :LlamaInstall, not used: llama-lsp %s in %s", newest.version, newest.dir)
    )
  end
  if found.update then
    health.warn(
      string.format("llama-lsp %s can be installed (this one is %s)", found.update, found.version),
      { "Run :LlamaInstall" }
    )
  end
  local code, output = run(found.cmd, { "--version" })
  if code ~= 0 then
    health.error("the server does not start: " .. output, {
      string.format("Run `%s --version` in a shell to see why", vim.fn.exepath(executable)),
      found.source == "installed" and "Run :LlamaInstall again" or nil,
    })
    return nil
  end
  -- "llama-lsp VERSION", then the native library's line.
  local lines = vim.split(output, "\n", { plain = true })
  health.ok("server starts: " .. lines[1])
  if lines[2] then
    health.ok(table.concat(vim.list_slice(lines, 2), " "))
  end
  return found.cmd
end

---@param cmd string[]
local function check_model(cmd)
  local backend = config.options.init_options.backend
  if type(backend) == "table" then -- nothing to install here: the remote server has the model
    local model = backend.model or "the model it serves"
    health.info(string.format("model: %s at %s (backend)", tostring(model), tostring(backend.url)))
    return
  end
  local model = config.options.init_options.model
  local code, output = run(cmd, model and { "model", "path", model } or { "model", "path" })
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
    return
  end
  local runs = string.format("edit checks: `%s` runs code the model wrote, in a copy of the folder", command)
  if not config.options.require_trust then
    health.info(runs .. ", in every folder (require_trust = false)")
    return
  end
  health.info(runs .. ", in folders you trust (:LlamaTrust)")
  if not trust.SUPPORTED then
    health.warn("checks are off in every folder: " .. trust.UNSUPPORTED)
  end
  for _, client in ipairs(vim.lsp.get_clients({ name = protocol.CLIENT_NAME })) do
    if client.root_dir then
      local note = trust.note(client.root_dir)
      health.info(note or string.format("checks run in %s: it is trusted", client.root_dir))
    end
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

local function check_next_edit()
  local next_edit = require("llama_lsp.next_edit")
  if not next_edit.enabled() then
    health.info("next-edit suggestions: off (init_options.nextEdit = false)")
    return
  end
  local opts = config.options.next_edit
  local accept = opts.accept_key and string.format("%s goes to a suggestion and accepts it", opts.accept_key)
    or "no accept key mapped"
  local dismiss = opts.dismiss_key and string.format("%s dismisses it", opts.dismiss_key) or "no dismiss key mapped"
  local text = string.format(
    "next-edit suggestions: on (asked %d ms after typing pauses; %s, %s)",
    next_edit.delay_ms(),
    accept,
    dismiss
  )
  if type(config.options.init_options.backend) == "table" then
    text = text .. ", but a remote backend suggests none"
  end
  health.info(text)
end

---The MCP servers of one running server (`assistant/stats`' `mcp`): running with their tool counts, one
---that failed with why, those configured but withheld (an untrusted folder).
---@param client vim.lsp.Client
---@param where string
local function check_mcp(client, where)
  local stats, why = mcp.stats(client)
  if not stats then
    health.info(string.format("%s: MCP servers unknown: %s", where, why))
    return
  end
  if #(stats.servers or {}) == 0 then
    if client.root_dir and not trust.is_trusted(client.root_dir) then
      health.info(
        string.format(
          "%s: no MCP server starts: the folder is not trusted (:LlamaTrust lets `mcpServers` and the "
            .. "folder's own .mcp.json and .vscode/mcp.json start there)",
          where
        )
      )
    else
      health.info(string.format("%s: no MCP servers configured (see :help llama_lsp-mcp)", where))
    end
    return
  end
  for _, line in ipairs(mcp.health_lines(stats)) do
    local text = string.format("%s: %s", where, line.text)
    if line.level == "error" then
      health.error(text, { "Run its command in a shell to see it fail; the server's log (:LspLog) has more" })
    else
      health[line.level](text)
    end
  end
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
    if vim.tbl_contains(require("llama_lsp.next_edit").info().unsupported, client.id) then
      health.warn(
        string.format("%s: does not offer next-edit suggestions (assistant/nextEdit)", where),
        { "Update llama-lsp: next-edit suggestions need a server that has them" }
      )
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
    check_mcp(client, where)
  end
end

function M.check()
  health.start("llama-lsp")
  check_neovim()
  local cmd = check_server()
  if cmd then
    check_model(cmd)
  end
  check_verify()
  check_completion()
  check_next_edit()
  check_clients()
end

return M
