---Options: the defaults, and `setup(opts)` merging the user's over them.
local M = {}

---@class llama_lsp.Keymaps
---@field chat? string       normal and visual mode: ask in the chat (prompts for the question)
---@field stop? string       stop the answer
---@field new? string        start a new conversation
---@field code_action? string normal and visual mode: `vim.lsp.buf.code_action()`

-- begin settings: generated from lsp_server/lsp/settings.py, `make generate`
---Server settings, camelCase as on the wire (the `llamaLsp` section; the server's defaults fill the rest).
---@class llama_lsp.ServerSettings
---@field model? string                  Catalogue model name (`llama-lsp model list`) or the path of a GGUF
---                                      file. Default: "qwen2.5-coder-1.5b".
---@field contextSize? integer           Context size in tokens for each conversation slot. Default: 8192.
---@field threads? integer               Threads for decoding and for reading prompts; 0 picks a default for
---                                      the machine (half the cores, at most 4). Default: 0.
---@field slots? integer                 Conversations kept warm at once, each in its own slot of
---                                      `contextSize` tokens whose cached prompt a follow-up reuses; the
---                                      least recently used is evicted. Default: 4.
---@field cacheDir? string               Directory where the server saves its slots' state, so that the cache
---                                      survives restarts. Unset: `~/.cache/llama-lsp` (under
---                                      `$XDG_CACHE_HOME` when that is set); the models stay in
---                                      `~/.cache/llama-lsp/models` either way.
---@field codebaseIndex? boolean         Index the workspace's files in the background (functions, classes and
---                                      blocks, ranked by their words), saved in `cacheDir`, so that chat's
---                                      search finds the code a question describes even when no line matches
---                                      its words, and `assistant/searchCodebase` answers. The files git
---                                      would commit (`.gitignore` respected), or every file outside build
---                                      and dependency folders where the folder is no repository; binary,
---                                      minified and huge files are skipped. It pauses while the model
---                                      answers. Off: nothing is indexed. Default: true.
---@field codebaseExclude? string[]      Files the index leaves out besides those `.gitignore` ignores: globs
---                                      over a file's path in its workspace folder (`*` and `?` within a
---                                      name, `**` across folders; a pattern without `/` matches a name at
---                                      any depth, as in `.gitignore`), such as `"fixtures"`, `"docs/*.md"`
---                                      or `"*.min.js"`. A pattern that matches a folder leaves out
---                                      everything in it. Default: [].
---@field codebaseMaxFileKb? integer     Files larger than this many KB are not indexed (a data file or a
---                                      generated module has little to find and costs memory). Default: 512.
---@field chatCodebase? "mention"|"always" When chat reads the workspace code that best matches a question
---                                      before answering: `"mention"`, when the question says `@codebase`;
---                                      `"always"`, for every question (each then takes longer to read, on a
---                                      CPU a few seconds). Default: "mention".
---@field maxToolSteps? integer          Tool calls (reading, searching, editing files) the model may make per
---                                      answer, at most. Default: 6.
---@field maxTokens? integer             Tokens the model may write per model request, at most. A code action
---                                      that writes a block again (Fix, Document, Refactor, Write tests) may
---                                      write more, so that the whole block fits: up to 4 times this; a block
---                                      too long for that is refused with a message that names this setting.
---                                      Default: 1024.
---@field temperature? number            Sampling temperature; 0 is greedy, so the same question gets the same
---                                      answer. Default: 0.
---@field verifyCommand? string|false    Shell command that checks each edit the model proposes; `"auto"`
---                                      finds the project's tests. Empty: edits are not checked. Default:
---                                      "auto".
---@field testDiagnostics? boolean       Run the project's tests after each save of a Python file, and show
---                                      each failure as a problem on the failing test's line and on the
---                                      function under test, with what failed; Fix there reads the failure.
---                                      Default: false.
---@field verifySandbox? "auto"|"none"   How `verifyCommand` is isolated: `"auto"` runs it under bubblewrap
---                                      (`bwrap`), or not at all where bubblewrap is missing or cannot set up
---                                      its sandbox; `"none"` runs it without isolation. Default: "auto".
---@field verifyTimeout? number          Seconds one run of `verifyCommand` may take before it is stopped and
---                                      counted as failed. Default: 60.
---@field maxVerifyAttempts? integer     How many proposed edits `verifyCommand` checks per request before the
---                                      first failed one is returned, marked as failed. Default: 2.
---@field speculative? boolean           Speculative decoding: while the model writes, the code it was shown
---                                      serves as a draft of what comes next, and the model checks a whole
---                                      draft at once instead of writing one token at a time. A Fix or
---                                      Document that writes a function back decodes about 1.8x as fast on a
---                                      CPU. Greedy answers are the model's own, but a near-tie between two
---                                      tokens may go the other way than without drafting (a batch rounds
---                                      differently from one token at a time); the same request still gives
---                                      the same answer every time. Drafting pauses where drafts keep
---                                      failing, so chat is not slower. Off: one token at a time. Default:
---                                      true.
---@field warm? boolean                  Warm the model's cache in the background while you read: an open
---                                      file's prompt when it is opened and after typing pauses, and each
---                                      answer for the follow-up, so that a first question about the file
---                                      evaluates only the question. Off: the model runs only when you ask
---                                      something. Default: true.
---@field completionRecentFiles? boolean Inline completion sees a few chunks of the files you opened, edited
---                                      or saved recently (those most like the code around the cursor, about
---                                      500 tokens), so that it can use names defined there. Off: it sees
---                                      only the file being completed. Default: false.
---@field nextEdit? boolean              Next-edit suggestions: once typing pauses, the model predicts the
---                                      edit you are likely to make next from your recent edits (the rest of
---                                      a rename, the same change to a similar line), and the editor shows it
---                                      where it applies, also away from the cursor. `Tab` jumps to a
---                                      suggestion away from the cursor and accepts one at it; `Escape`
---                                      dismisses it. Off: the server suggests nothing. Default: true.
---@field nextEditDelayMs? integer       Milliseconds of no typing before the editor asks for a next-edit
---                                      suggestion. Default: 400.
---@field mcpServers? table<string, llama_lsp.McpServer> MCP (Model Context Protocol) servers whose tools chat
---                                      may call, as other editors configure them: `{"name": {"command":
---                                      "...", "args": [...], "env": {...}, "cwd": "..."}}` for a server the
---                                      language server starts (stdio), or `{"name": {"url": "https://..."}}`
---                                      for one it reaches over streamable HTTP. Default: {}.
---@field mcpToolChoice? "relevant"|"first" Which of the MCP servers' tools a new chat conversation is
---                                      offered: `"relevant"`, those of the servers its first message names
---                                      (by the server's name or a tool's, else by a word of a tool's name),
---                                      all of them where they fit in the limit, else those whose names and
---                                      descriptions best match it; none when it names none. The prompt a
---                                      question that names one server gets is read ahead for the first
---                                      servers (as many as `slots` less two), so such a question, or one
---                                      that names none, reads only itself. `"first"`, the first ones in the
---                                      order of `mcpServers` and of each server's list (the same for every
---                                      conversation, so its prompt is read once). Default: "relevant".
---@field mcpWorkspaceServers? boolean   Also start the MCP servers the workspace's own files declare:
---                                      `.vscode/mcp.json` (`"servers"`) and `.mcp.json` (`"mcpServers"`),
---                                      after those of `mcpServers` (whose name wins). Default: true.
---@field backend? "local"|llama_lsp.RemoteBackend Where the model runs: `"local"`, in the language server's
---                                      process (the model of `model`); or `{"url": "http://host:port/v1",
---                                      "model": "NAME", "apiKeyEnv": "VAR", "timeout": 600}`, an
---                                      OpenAI-compatible server that answers instead (llama.cpp's
---                                      `llama-server`, vLLM), such as a team's shared GPU machine. The API
---                                      key is read from the environment variable `apiKeyEnv` names: the key
---                                      itself is never a setting. Default: "local".

---An OpenAI-compatible server (llama.cpp's llama-server, vLLM) that answers instead of the local model. The
---server reads the API key from the environment variable `apiKeyEnv` names: a key is never a setting, so that
---it stays out of the settings files.
---@class llama_lsp.RemoteBackend
---@field url string        The server's OpenAI-compatible API, e.g. http://gpu-box:8080/v1.
---@field model? string     The model name the server serves (llama-server's --alias, vLLM's
---                         --served-model-name); optional where it serves one model.
---@field apiKeyEnv? string The name of the environment variable that holds the API key (not the key itself).
---@field timeout? number   Seconds to wait for the server's next bytes (the first come once it has read the
---                         prompt). A request ends within this plus 1 s per token it may write. Default: 600.

---An MCP server whose tools chat may call: a `command` the language server starts (stdio), or a `url` it
---reaches (streamable HTTP).
---@class llama_lsp.McpServer
---@field command? string            The program that runs the server over stdio.
---@field args? string[]             Its arguments.
---@field env? table<string, string> Environment variables it gets besides HOME, PATH, USER, SHELL, TERM,
---                                  LOGNAME.
---@field cwd? string                Its working folder; default: the first workspace folder.
---@field url? string                A streamable HTTP server.
---@field type? "stdio"|"http"       As VS Code's mcp.json says it; optional.
-- end settings

---Inline completion (ghost text) while typing. On Neovim 0.12+ Neovim's `vim.lsp.inline_completion`
---shows it (its own debounce applies); on 0.10/0.11 the plugin does.
---@class llama_lsp.CompletionOptions
---@field enabled? boolean           false: no requests at all (default true)
---@field accept_key? string|false   Insert mode: accepts the suggestion when one is shown, else does what
---                                  the key does (default "<Tab>"); false: no mapping
---@field debounce_ms? integer       the pause in typing before a request (default 150; 0.10/0.11 only)
---@field time_budget_ms? integer    the server's `completionTimeBudgetMs`: once over it, a completion ends
---                                  at the next line break (default 1000)

---The keys of next-edit suggestions (|llama_lsp-next-edit|). They are mapped in Insert and Normal mode, in
---the buffer, only while a suggestion is shown; otherwise the key does what it did. Whether suggestions
---are asked for, and after how long a pause, are the server settings `nextEdit` and `nextEditDelayMs`
---(`init_options`).
---@class llama_lsp.NextEditOptions
---@field accept_key? string|false   goes to a suggestion away from the cursor's line, accepts one on it
---                                  (default "<Tab>"); false: no mapping
---@field dismiss_key? string|false  dismisses the suggestion, then does what the key does (default
---                                  "<Esc>"); false: no mapping

---@class llama_lsp.Options
---@field cmd? string[]|function       how to start the server; nil: what the shared bootstrap finds
---                                    (`llama-lsp` on PATH, a trusted root's or this checkout's .venv, the
---                                    server :LlamaInstall installed; llama_lsp.server)
---@field python? string               the Python that :LlamaInstall makes the server's virtualenv with
---                                    (3.10+ with venv); nil: `python3`, then `python`, on PATH
---@field init_options llama_lsp.ServerSettings  sent as initializationOptions and as the `llamaLsp` settings
---@field require_trust boolean       true: the settings that run a folder's code (its tests) reach the
---                                    server only for a folder trusted with :LlamaTrust (llama_lsp.trust);
---                                    false: for every folder
---@field filetypes string[]|nil        filetypes to attach to; nil attaches every buffer backed by a file
---@field root_markers string[]         files that mark a workspace root (one server per root)
---@field keymaps llama_lsp.Keymaps|false
---@field chat { position: "right"|"left"|"above"|"below", size: integer }
---@field completion llama_lsp.CompletionOptions
---@field next_edit llama_lsp.NextEditOptions

---@type llama_lsp.Options
M.defaults = {
  cmd = nil,
  python = nil,
  init_options = {},
  require_trust = true,
  filetypes = nil,
  root_markers = { ".git", "pyproject.toml", "package.json", "Cargo.toml", "go.mod", "Makefile" },
  keymaps = false,
  chat = { position = "right", size = 80 },
  completion = { enabled = true, accept_key = "<Tab>", debounce_ms = 150, time_budget_ms = 1000 },
  next_edit = { accept_key = "<Tab>", dismiss_key = "<Esc>" },
}

---@type llama_lsp.Options
M.options = vim.deepcopy(M.defaults)

---@param opts? llama_lsp.Options
function M.setup(opts)
  opts = opts or {}
  -- The table form of vim.validate works on 0.10 as well as 0.11.
  vim.validate({
    ["opts.cmd"] = { opts.cmd, { "table", "function" }, true },
    ["opts.python"] = { opts.python, "string", true },
    ["opts.init_options"] = { opts.init_options, "table", true },
    ["opts.require_trust"] = { opts.require_trust, "boolean", true },
    ["opts.filetypes"] = { opts.filetypes, "table", true },
    ["opts.root_markers"] = { opts.root_markers, "table", true },
    ["opts.chat"] = { opts.chat, "table", true },
    ["opts.keymaps"] = { opts.keymaps, { "table", "boolean" }, true },
    ["opts.completion"] = { opts.completion, "table", true },
    ["opts.next_edit"] = { opts.next_edit, "table", true },
  })
  local completion = opts.completion or {}
  vim.validate({
    ["opts.completion.enabled"] = { completion.enabled, "boolean", true },
    ["opts.completion.accept_key"] = { completion.accept_key, { "string", "boolean" }, true },
    ["opts.completion.debounce_ms"] = { completion.debounce_ms, "number", true },
    ["opts.completion.time_budget_ms"] = { completion.time_budget_ms, "number", true },
  })
  local next_edit = opts.next_edit or {}
  vim.validate({
    ["opts.next_edit.accept_key"] = { next_edit.accept_key, { "string", "boolean" }, true },
    ["opts.next_edit.dismiss_key"] = { next_edit.dismiss_key, { "string", "boolean" }, true },
  })
  M.options = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- Lists replace the default rather than merging into it index by index.
  for _, key in ipairs({ "cmd", "filetypes", "root_markers" }) do
    if opts[key] ~= nil then
      M.options[key] = opts[key]
    end
  end
  return M.options
end

---The `llamaLsp` settings for the server: `init_options`, with `verifyCommand` ("auto" when unset, ""
---for false), `verifySandbox` ("auto" when unset) and `backend` ("local" for none) always present. The
---server keeps a setting that a later configuration leaves out, so without this, dropping verifyCommand
---from a second setup() would leave running servers checking edits with it, dropping verifySandbox would
---leave them checking without a sandbox, and dropping backend would leave them sending code to the
---remote server.
---`completion` and `completionTimeBudgetMs` come from the `completion` options, always.
---@return llama_lsp.ServerSettings
function M.server_settings()
  local settings = vim.deepcopy(M.options.init_options)
  if settings.verifyCommand == nil then
    settings.verifyCommand = "auto"
  elseif settings.verifyCommand == false then
    settings.verifyCommand = ""
  end
  if settings.verifySandbox == nil then
    settings.verifySandbox = "auto"
  end
  if settings.backend == nil then
    settings.backend = "local"
  end
  -- vim.json writes an empty table as `[]`: an MCP server's `env = {}` would reach the server as a list,
  -- no object of strings, and the server would refuse the whole `mcpServers` setting.
  for _, server in pairs(type(settings.mcpServers) == "table" and settings.mcpServers or {}) do
    if type(server) == "table" and type(server.env) == "table" and vim.tbl_isempty(server.env) then
      server.env = vim.empty_dict()
    end
  end
  settings.completion = M.options.completion.enabled
  settings.completionTimeBudgetMs = math.floor(M.options.completion.time_budget_ms)
  return settings
end

---A server command without its serving flags, for `--version` and `model path`.
---@param cmd string[]  the command that starts the server (llama_lsp.server.locate())
---@return string[]
function M.base_command(cmd)
  return vim.tbl_filter(function(arg)
    return arg ~= "--stdio" and arg ~= "serve"
  end, cmd)
end

return M
