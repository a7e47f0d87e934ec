/**
 * The server's settings as a client sends them (initializationOptions, the `llamaLsp` section), the values
 * that mean the server's defaults, and the ones never sent from an untrusted workspace.
 * Generated from lsp_server/lsp/settings.py, `make generate`: edit the declarations there, not this file.
 */

/** The configuration section that holds the server's settings (workspace/configuration). */
export const SECTION = 'llamaLsp';

/**
 * An OpenAI-compatible server (llama.cpp's llama-server, vLLM) that answers instead of the local model.
 * The server reads the API key from the environment variable `apiKeyEnv` names: a key is never a setting,
 * so that it stays out of the settings files.
 */
export interface RemoteBackend {
  /** The server's OpenAI-compatible API, e.g. http://gpu-box:8080/v1. */
  url: string;
  /**
   * The model name the server serves (llama-server's --alias, vLLM's --served-model-name); optional where
   * it serves one model.
   */
  model?: string;
  /** The name of the environment variable that holds the API key (not the key itself). */
  apiKeyEnv?: string;
  /**
   * Seconds to wait for the server's next bytes (the first come once it has read the prompt). A request
   * ends within this plus 1 s per token it may write. Default: 600.
   */
  timeout?: number;
}

export type Backend = 'local' | RemoteBackend;

/**
 * An MCP server whose tools chat may call: a `command` the language server starts (stdio), or a `url` it
 * reaches (streamable HTTP).
 */
export interface McpServer {
  /** The program that runs the server over stdio. */
  command?: string;
  /** Its arguments. */
  args?: string[];
  /** Environment variables it gets besides HOME, PATH, USER, SHELL, TERM, LOGNAME. */
  env?: Record<string, string>;
  /** Its working folder; default: the first workspace folder. */
  cwd?: string;
  /** A streamable HTTP server. */
  url?: string;
  /** As VS Code's mcp.json says it; optional. */
  type?: 'stdio' | 'http';
}

export interface ServerSettings {
  /**
   * Catalogue model name (`llama-lsp model list`) or the path of a GGUF file. Changing it reloads the model.
   * Not used with a remote `backend`.
   */
  model: string;
  /**
   * Context size in tokens for each conversation slot. Changing it reloads the model. Not used with a remote
   * `backend`.
   */
  contextSize: number;
  /**
   * Threads for decoding and for reading prompts; 0 picks a default for the machine (half the cores, at most
   * 4). Changing it reloads the model. Not used with a remote `backend`.
   */
  threads: number;
  /**
   * Conversations kept warm at once, each in its own slot of `contextSize` tokens whose cached prompt a
   * follow-up reuses; the least recently used is evicted. Changing it reloads the model. Not used with a
   * remote `backend`.
   */
  slots: number;
  /**
   * Directory where the server saves its slots' state, so that the cache survives restarts. Unset:
   * `~/.cache/llama-lsp` (under `$XDG_CACHE_HOME` when that is set); the models stay in
   * `~/.cache/llama-lsp/models` either way. Changing it reloads the model. Not used with a remote `backend`.
   */
  cacheDir: string | null;
  /**
   * Index the workspace's files in the background (functions, classes and blocks, ranked by their words),
   * saved in `cacheDir`, so that chat's search finds the code a question describes even when no line matches
   * its words, and `assistant/searchCodebase` answers. The files git would commit (`.gitignore` respected),
   * or every file outside build and dependency folders where the folder is no repository; binary, minified
   * and huge files are skipped. It pauses while the model answers. Off: nothing is indexed.
   */
  codebaseIndex: boolean;
  /**
   * Files the index leaves out besides those `.gitignore` ignores: globs over a file's path in its workspace
   * folder (`*` and `?` within a name, `**` across folders; a pattern without `/` matches a name at any
   * depth, as in `.gitignore`), such as `"fixtures"`, `"docs/*.md"` or `"*.min.js"`. A pattern that matches
   * a folder leaves out everything in it.
   */
  codebaseExclude: string[];
  /**
   * Files larger than this many KB are not indexed (a data file or a generated module has little to find and
   * costs memory).
   */
  codebaseMaxFileKb: number;
  /**
   * When chat reads the workspace code that best matches a question before answering: `"mention"`, when the
   * question says `@codebase`; `"always"`, for every question (each then takes longer to read, on a CPU a
   * few seconds).
   */
  chatCodebase: 'mention' | 'always';
  /** Tool calls (reading, searching, editing files) the model may make per answer, at most. */
  maxToolSteps: number;
  /**
   * Tokens the model may write per model request, at most. A code action that writes a block again (Fix,
   * Document, Refactor, Write tests) may write more, so that the whole block fits: up to 4 times this; a
   * block too long for that is refused with a message that names this setting.
   */
  maxTokens: number;
  /** Sampling temperature; 0 is greedy, so the same question gets the same answer. */
  temperature: number;
  /**
   * Shell command that checks each edit the model proposes; `"auto"` finds the project's tests. Empty: edits
   * are not checked. In Restricted Mode (an untrusted workspace) the server gets `""`.
   */
  verifyCommand: string;
  /**
   * Run the project's tests after each save of a Python file, and show each failure as a problem on the
   * failing test's line and on the function under test, with what failed; Fix there reads the failure. Not
   * used in Restricted Mode (an untrusted workspace).
   */
  testDiagnostics?: boolean;
  /**
   * How `verifyCommand` is isolated: `"auto"` runs it under bubblewrap (`bwrap`), or not at all where
   * bubblewrap is missing or cannot set up its sandbox; `"none"` runs it without isolation. Not used in
   * Restricted Mode (an untrusted workspace).
   */
  verifySandbox?: 'auto' | 'none';
  /** Seconds one run of `verifyCommand` may take before it is stopped and counted as failed. */
  verifyTimeout: number;
  /**
   * How many proposed edits `verifyCommand` checks per request before the first failed one is returned,
   * marked as failed.
   */
  maxVerifyAttempts: number;
  /**
   * Speculative decoding: while the model writes, the code it was shown serves as a draft of what comes
   * next, and the model checks a whole draft at once instead of writing one token at a time. A Fix or
   * Document that writes a function back decodes about 1.8x as fast on a CPU. Greedy answers are the model's
   * own, but a near-tie between two tokens may go the other way than without drafting (a batch rounds
   * differently from one token at a time); the same request still gives the same answer every time. Drafting
   * pauses where drafts keep failing, so chat is not slower. Off: one token at a time. Changing it reloads
   * the model. Not used with a remote `backend`.
   */
  speculative: boolean;
  /**
   * Warm the model's cache in the background while you read: an open file's prompt when it is opened and
   * after typing pauses, and each answer for the follow-up, so that a first question about the file
   * evaluates only the question. Off: the model runs only when you ask something. Not used with a remote
   * `backend`.
   */
  warm: boolean;
  /**
   * Inline completion: while you type, the model suggests the rest of the line or a few lines as ghost text.
   * Off: the server offers none (and VS Code sends no completion requests). Not used with a remote
   * `backend`.
   */
  completion: boolean;
  /**
   * Milliseconds a completion may run before it stops at the end of the line it is writing: a longer budget
   * allows longer, multi-line suggestions; a shorter one keeps them quick on a slow machine. Not used with a
   * remote `backend`.
   */
  completionTimeBudgetMs: number;
  /**
   * Inline completion sees a few chunks of the files you opened, edited or saved recently (those most like
   * the code around the cursor, about 500 tokens), so that it can use names defined there. Off: it sees only
   * the file being completed. Not used with a remote `backend`.
   */
  completionRecentFiles: boolean;
  /**
   * Next-edit suggestions: once typing pauses, the model predicts the edit you are likely to make next from
   * your recent edits (the rest of a rename, the same change to a similar line), and the editor shows it
   * where it applies, also away from the cursor. `Tab` jumps to a suggestion away from the cursor and
   * accepts one at it; `Escape` dismisses it. Off: the server suggests nothing. Not used with a remote
   * `backend`.
   */
  nextEdit: boolean;
  /** Milliseconds of no typing before the editor asks for a next-edit suggestion. */
  nextEditDelayMs: number;
  /**
   * MCP (Model Context Protocol) servers whose tools chat may call, as other editors configure them:
   * `{"name": {"command": "...", "args": [...], "env": {...}, "cwd": "..."}}` for a server the language
   * server starts (stdio), or `{"name": {"url": "https://..."}}` for one it reaches over streamable HTTP.
   * Not used in Restricted Mode (an untrusted workspace).
   */
  mcpServers?: Record<string, McpServer>;
  /**
   * Which of the MCP servers' tools a new chat conversation is offered: `"relevant"`, those of the servers
   * its first message names (by the server's name or a tool's, else by a word of a tool's name), all of them
   * where they fit in the limit, else those whose names and descriptions best match it; none when it names
   * none. The prompt a question that names one server gets is read ahead for the first servers (as many as
   * `slots` less two), so such a question, or one that names none, reads only itself. `"first"`, the first
   * ones in the order of `mcpServers` and of each server's list (the same for every conversation, so its
   * prompt is read once).
   */
  mcpToolChoice: 'relevant' | 'first';
  /**
   * Also start the MCP servers the workspace's own files declare: `.vscode/mcp.json` (`"servers"`) and
   * `.mcp.json` (`"mcpServers"`), after those of `mcpServers` (whose name wins). In Restricted Mode (an
   * untrusted workspace) the server gets `false`.
   */
  mcpWorkspaceServers: boolean;
  /**
   * Where the model runs: `"local"`, in the language server's process (the model of `model`); or `{"url":
   * "http://host:port/v1", "model": "NAME", "apiKeyEnv": "VAR", "timeout": 600}`, an OpenAI-compatible
   * server that answers instead (llama.cpp's `llama-server`, vLLM), such as a team's shared GPU machine. The
   * API key is read from the environment variable `apiKeyEnv` names: the key itself is never a setting. Not
   * taken from workspace settings in Restricted Mode (an untrusted workspace).
   */
  backend: Backend;
}

export const SERVER_DEFAULTS: Required<ServerSettings> = {
  model: 'qwen2.5-coder-1.5b',
  contextSize: 8192,
  threads: 0,
  slots: 4,
  cacheDir: null,
  codebaseIndex: true,
  codebaseExclude: [],
  codebaseMaxFileKb: 512,
  chatCodebase: 'mention',
  maxToolSteps: 6,
  maxTokens: 1024,
  temperature: 0,
  verifyCommand: 'auto',
  testDiagnostics: false,
  verifySandbox: 'auto',
  verifyTimeout: 60,
  maxVerifyAttempts: 2,
  speculative: true,
  warm: true,
  completion: true,
  completionTimeBudgetMs: 1000,
  completionRecentFiles: false,
  nextEdit: true,
  nextEditDelayMs: 400,
  mcpServers: {},
  mcpToolChoice: 'relevant',
  mcpWorkspaceServers: true,
  backend: 'local',
};

/** The settings that make the server run a command on the workspace's code (settings.ts, forTrust). */
export const TRUSTED_ONLY = ['verifyCommand', 'testDiagnostics', 'verifySandbox', 'mcpServers', 'mcpWorkspaceServers'] as const;

/** What an untrusted workspace sends instead, where leaving a setting out would mean a default that runs. */
export const UNTRUSTED_VALUES: Partial<ServerSettings> = { verifyCommand: '', mcpWorkspaceServers: false };
