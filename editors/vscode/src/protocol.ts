/**
 * llama-lsp's own LSP methods, commands and payloads, declared once for the extension and its tests.
 * Mirrors `lsp_server/lsp/protocol.py`; `docs/protocol.md` documents them. Standard LSP types come from
 * vscode-languageserver-protocol through the plain JSON shapes below, so that this module needs
 * neither `vscode` nor the language client and the protocol test can import it in plain node.
 */

import { NotificationType, ProgressType, RequestType } from 'vscode-jsonrpc';

export const CHAT = 'assistant/chat';
export const STATS = 'assistant/stats';
export const STATUS = 'assistant/status';
export const SEARCH_CODEBASE = 'assistant/searchCodebase';

/** workspace/executeCommand: resolve a code action and apply its edit through workspace/applyEdit. */
export const COMMAND_CODE_ACTION = 'llamaLsp.codeAction';
/** Client-side command the server's "Explain" code action returns. */
export const COMMAND_SHOW_ANSWER = 'llamaLsp.showAnswer';

/** LSP error codes the server answers with. */
export const ErrorCode = {
  MethodNotFound: -32601,
  InvalidParams: -32602,
  RequestCancelled: -32800,
  ContentModified: -32801,
  RequestFailed: -32803,
} as const;

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface TextEdit {
  range: Range;
  newText: string;
}

export interface TextDocumentEdit {
  textDocument: { uri: string; version: number | null };
  edits: TextEdit[];
}

export interface CreateFile {
  kind: 'create';
  uri: string;
  options?: { overwrite?: boolean; ignoreIfExists?: boolean };
}

/** The subset of LSP's WorkspaceEdit the server produces (documentChanges), plus plain `changes`. */
export interface WorkspaceEdit {
  documentChanges?: (TextDocumentEdit | CreateFile)[];
  changes?: Record<string, TextEdit[]>;
}

/**
 * One turn's figures: every counter summed over its model requests (`steps`), so `nReused / nPrompt`
 * is the turn's cache reuse; `tFirstTokenMs` is the first request's time to its first token.
 */
export interface TurnStats {
  nPrompt: number;
  /** null: a remote backend that does not report its cached tokens (unknown, not 0). */
  nReused: number | null;
  nEvaluated: number;
  nGenerated: number;
  /** Tokens drafted for speculative decoding; 0 when drafting is off or the backend does not draft. */
  nDrafted: number;
  /** Of `nDrafted`, the tokens the model agreed with (0 <= nAccepted <= nDrafted). */
  nAccepted: number;
  tPrefillMs: number;
  tFirstTokenMs: number;
  tDecodeMs: number;
  steps: number;
}

export interface ChatParams {
  message: string;
  textDocument?: { uri: string };
  range?: Range;
  conversationId?: string;
  partialResultToken?: string | number;
  workDoneToken?: string | number;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'cancelled' | 'error';

export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
  result: string;
}

/**
 * Whether a proposed edit was checked with `verifyCommand` (the project's tests with "auto"), run by the
 * server on a temporary copy of the folder with the edit applied (exit status 0 passes).
 */
export interface Verification {
  /** The command that ran; null when none is set, or "auto" found none. */
  command: string | null;
  /** With "auto": why that command (runner, interpreter, test files), or why none. Absent from older servers. */
  reason?: string | null;
  /** Write tests: the tests that failed on the code as it is, dropped from the file. Absent from older servers. */
  droppedTests?: string[];
  /** Write tests: the expected values the code did not give, now what it gives ("test (line N): expected X, the code gives Y"). Absent from older servers. */
  settledValues?: string[];
  /** With "auto": how the project's other test files went once the related ones passed. Absent from older servers. */
  rest?: string | null;
  /** null: not checked (no command set, or no edit to check). */
  passed: boolean | null;
  attempts: number;
  /** What the last check printed, already trimmed by the server (its head and tail). */
  output: string;
  /** One line for the user: "verified: `pytest -q` passed (attempt 2)", "not verified: ...". */
  summary: string;
}

export interface ChatResult {
  conversationId: string;
  content: string;
  finishReason: FinishReason;
  toolCalls: ToolCall[];
  edit?: WorkspaceEdit;
  editError?: string;
  /** Only when the answer proposed an edit or a check ran. */
  verification?: Verification;
  stats: TurnStats;
}

/** `$/progress` value for a chat's partialResultToken: the deltas concatenate to `content`. */
export interface ChatDelta {
  delta: string;
}

export type ServerState = 'loading' | 'ready' | 'busy' | 'error';

export interface StatusParams {
  state: ServerState;
  message?: string;
  queue?: number;
  lastStats?: TurnStats;
  /** With `error`: the catalogue model whose installation is the fix. */
  installModel?: string;
  /**
   * The open documents whose prompt is in the model's cache now (background warming, the `warm`
   * setting), by URI exactly as the client opened them: a first question about one evaluates only the
   * question. Present in every notification once the model is ready; a change to it sends one.
   */
  warm?: string[];
}

export interface StatsResult {
  /**
   * What `llama-lsp --version` prints: the package, and the native library's build (null: not loaded).
   * Absent from older servers.
   */
  version?: { server: string; native: string | null };
  state: ServerState;
  model: string;
  error: string | null;
  /** Model loads since the server started: one, plus one per settings change that needs a new engine. */
  modelLoads: number;
  engine: Record<string, unknown> | null;
  /** Every finished turn's figures summed; `cacheHitRate` is nReused / nPrompt over the same requests. */
  totals: {
    requests: number;
    nPrompt: number;
    nReused: number | null;
    nEvaluated: number;
    nGenerated: number;
    nDrafted: number;
    nAccepted: number;
    tPrefillMs: number;
    tDecodeMs: number;
    steps: number;
    cacheHitRate: number | null;
  };
  lastStats: TurnStats | null;
  /** The last inline completion's figures; null before the first one (absent from an older server). */
  lastCompletion?: CompletionStats | null;
}

/**
 * One inline completion (`textDocument/inlineCompletion`) as `assistant/stats` reports it. `cached`: the
 * server answered from its recent completions without the model; then only `tMs` is given.
 */
export interface CompletionStats {
  cached: boolean;
  tMs: number;
  nPrompt?: number;
  nEvaluated?: number;
  nGenerated?: number;
  /** As in TurnStats; absent from an older server. */
  nDrafted?: number;
  nAccepted?: number;
  finishReason?: FinishReason;
}

export type ActionKind = 'explain' | 'fix' | 'document' | 'refactor' | 'tests';

/** The one argument of `llamaLsp.codeAction`, and the `data` of the server's code actions. */
export interface CodeActionArgs {
  uri: string;
  range: Range;
  kind: ActionKind;
  version?: number;
  diagnostics?: unknown[];
  /** Continue this chat conversation, so that the action sees what was said in it. */
  conversationId?: string;
}

/** The `data` of a code action after codeAction/resolve: its arguments, and an edit action's check. */
export interface ResolvedCodeActionData extends CodeActionArgs {
  verification?: Verification;
}

/** `llamaLsp.codeAction`'s result: the chat result, plus whether the edit was applied. */
export interface CodeActionResult extends ChatResult {
  applied?: boolean;
  failureReason?: string;
  /** Present for every edit action (fix, document, refactor, tests); absent for explain. */
  verification?: Verification;
}

/** `assistant/searchCodebase`: the workspace index's chunks that best match `query`'s words. */
export interface SearchCodebaseParams {
  /** Words, identifiers or a sentence; not blank, at most 2,000 characters. */
  query: string;
  /** 1 to 50; the server's default is 10. */
  limit?: number;
}

/** One chunk of a file: a Python definition or block, or a window of lines. */
export interface SearchCodebaseHit {
  uri: string;
  /** The chunk's whole lines: `end` is the start of the line after it. */
  range: Range;
  score: number;
  /** The chunk's first 8 lines as the file is on disk. */
  snippet: string;
  /** `Class.method`, a function's name; absent for a window of lines. */
  symbol?: string;
}

export interface SearchCodebaseResult {
  /** Best first. */
  results: SearchCodebaseHit[];
  /**
   * `ready` is false while the index is being built (the results are those of the files indexed so
   * far), and with `codebaseIndex` off or no folder open (then `files` is 0).
   */
  indexed: { files: number; chunks: number; ready: boolean };
}

/** The argument of `llamaLsp.showAnswer`. */
export interface ShowAnswerArgs {
  conversationId: string;
  title: string;
  content: string;
}

/**
 * The settings the server takes as initializationOptions (and from the `llamaLsp` section): declared in
 * lsp_server/lsp/settings.py, generated into serverSettings.ts (`make generate`).
 */
export type { ServerSettings as InitializationOptions } from './serverSettings';

/**
 * An OpenAI-compatible server (llama.cpp's llama-server, vLLM) that answers instead of the local model.
 * The API key is read by the server from the environment variable `apiKeyEnv` names: a key is never a
 * setting, so that it stays out of settings.json.
 */
export interface RemoteBackend {
  /** e.g. `http://host:8080/v1` */
  url: string;
  /** The model name that server serves; optional where it serves one model (that one answers). */
  model?: string;
  apiKeyEnv?: string;
  /** Seconds to wait for the server's next bytes (default 600). */
  timeout?: number;
}

export type Backend = 'local' | RemoteBackend;

export const SECTION = 'llamaLsp';

export const chatRequest = new RequestType<ChatParams, ChatResult, void>(CHAT);
/**
 * `assistant/stats` takes no params, but goes out with an empty object: the server's custom-method
 * path drops a request that has no `params` member at all (seen with pygls 2.1), leaving it unanswered.
 */
export type StatsParams = Record<string, never>;
export const statsRequest = new RequestType<StatsParams, StatsResult, void>(STATS);
export const statusNotification = new NotificationType<StatusParams>(STATUS);
export const searchCodebaseRequest = new RequestType<SearchCodebaseParams, SearchCodebaseResult, void>(
  SEARCH_CODEBASE,
);
export const chatDeltaProgress = new ProgressType<ChatDelta>();
