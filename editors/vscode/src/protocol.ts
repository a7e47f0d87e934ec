/**
 * llama-lsp's own LSP methods, commands and payloads, and the code action kinds as commands, for the
 * extension and its tests (docs/protocol.md documents them). LSP's own types are declared as the plain JSON
 * shapes the server uses, so that this module needs neither `vscode` nor the language client and the protocol
 * test can import it in plain node. Generated from lsp_server/lsp/protocol_shapes.py, `make generate`: edit
 * the declarations there, not this file.
 */

import { NotificationType, ProgressType, RequestType } from 'vscode-jsonrpc';

export {
  SECTION,
  type Backend,
  type RemoteBackend,
  type ServerSettings as InitializationOptions,
} from './serverSettings';

/** A question, about a document or a selection or the workspace; the answer may propose an edit. */
export const CHAT = 'assistant/chat';
/** The server's state, its engine, and the figures of the turns so far. */
export const STATS = 'assistant/stats';
/** The workspace index's chunks that best match a query's words. */
export const SEARCH_CODEBASE = 'assistant/searchCodebase';
/**
 * The edit the user is likely to make next, from their recent edits; null: nothing to suggest (also for a
 * stale version, and when a newer request or an edit superseded this one).
 */
export const NEXT_EDIT = 'assistant/nextEdit';
/** The client showed the suggestion `id` (counted in `assistant/stats`). */
export const NEXT_EDIT_SHOWN = 'assistant/nextEditShown';
/** The user accepted the suggestion `id` (the client applied its edits). */
export const NEXT_EDIT_ACCEPTED = 'assistant/nextEditAccepted';
/** The user dismissed the suggestion `id` (Escape, or typing elsewhere). */
export const NEXT_EDIT_REJECTED = 'assistant/nextEditRejected';
/** The server's state (loading, ready, busy, error), sent when it changes. */
export const STATUS = 'assistant/status';
/**
 * Asks the user whether a chat's call to an MCP tool that may change something may run. No answer (an error,
 * MethodNotFound) is `deny`.
 */
export const CONFIRM_TOOL_CALL = 'assistant/confirmToolCall';
/** Resolves a code action and applies its edit through `workspace/applyEdit`. */
export const COMMAND_CODE_ACTION = 'llamaLsp.codeAction';
/** The command of an answer in words (Explain): the client shows it as a conversation. */
export const COMMAND_SHOW_ANSWER = 'llamaLsp.showAnswer';

/** The LSP error codes the server answers with, and when. */
export const ErrorCode = {
  /** A second `initialize`; a request after `shutdown`. */
  InvalidRequest: -32600,
  /** A method the server does not have (a server older than the client). */
  MethodNotFound: -32601,
  /** Params that do not match this protocol; the message says which field. */
  InvalidParams: -32602,
  /**
   * After `$/cancelRequest`, or when a newer request for the same action on the same document supersedes it.
   */
  RequestCancelled: -32800,
  /** A stale document: not the version the request was about, or changed while the model worked. */
  ContentModified: -32801,
  /**
   * No model, a prompt larger than the context, no applicable edit, a block too long to write again, engine
   * and backend errors; the message names the fix where there is one.
   */
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
 * One turn's figures: every counter summed over its model requests (`steps`), so `nReused / nPrompt` is the
 * turn's cache reuse; `tFirstTokenMs` is the first request's time to its first token.
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
  /** Not blank; at most 100,000 characters. */
  message: string;
  /** An open document (`didOpen`). */
  textDocument?: { uri: string };
  /** Needs `textDocument`. */
  range?: Range;
  /** Continue this conversation; without it a new one starts. */
  conversationId?: string;
  /** Stream the answer as `$/progress`. */
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
  /**
   * With "auto": why that command (runner, interpreter, test files), or why none. Absent from older servers.
   */
  reason?: string | null;
  /**
   * Write tests: the tests that failed on the code as it is, dropped from the file. Absent from older
   * servers.
   */
  droppedTests?: string[];
  /**
   * Write tests: the expected values the code did not give, now what it gives ("test (line N): expected X,
   * the code gives Y"). Absent from older servers.
   */
  settledValues?: string[];
  /**
   * With "auto": how the project's other test files went once the related ones passed. Absent from older
   * servers.
   */
  rest?: string | null;
  /** null: not checked (no command set, or no edit to check). */
  passed: boolean | null;
  /**
   * The command on the code without the edit (Fix, Refactor, Document); null where it did not run. Absent
   * from older servers.
   */
  passedBefore?: boolean | null;
  attempts: number;
  /** The isolation the command ran under; null when it never ran. Absent from older servers. */
  sandbox?: 'bwrap' | 'none' | null;
  /** What the last check printed, already trimmed by the server (its head and tail). */
  output: string;
  /** One line for the user: "verified: `pytest -q` passed (attempt 2)", "not verified: ...". */
  summary: string;
}

export interface ChatResult {
  conversationId: string;
  /** The answer, Markdown. */
  content: string;
  finishReason: FinishReason;
  toolCalls: ToolCall[];
  edit?: WorkspaceEdit;
  /** Instead of `edit`, when the document changed meanwhile. */
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
  /** The last turn's stats (as a chat result's `stats`). */
  lastStats?: TurnStats;
  /** With `error`: the catalogue model whose installation is the fix. */
  installModel?: string;
  /**
   * The open documents whose prompt is in the model's cache now (background warming, the `warm` setting), by
   * URI exactly as the client opened them: a first question about one evaluates only the question. Present in
   * every notification once the model is ready; a change to it sends one.
   */
  warm?: string[];
}

/**
 * `assistant/stats` takes no params, but goes out with an empty object: the server's custom-method path drops
 * a request that has no `params` member at all (seen with pygls 2.1), leaving it unanswered.
 */
export type StatsParams = Record<string, never>;

export interface StatsResult {
  /**
   * What `llama-lsp --version` prints: the package, and the native library's build (null: not loaded). Absent
   * from older servers.
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
  /** Absent from an older server. */
  nextEdit?: NextEditStats;
  /** Absent from an older server. */
  mcp?: McpStats;
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
  tPrefillMs?: number;
  tDecodeMs?: number;
  finishReason?: FinishReason;
}

/** A code action kind (lsp_server/assistant/actions). */
export type ActionKind = 'explain' | 'fix' | 'document' | 'refactor' | 'tests';

/** The one argument of `llamaLsp.codeAction`, and the `data` of the server's code actions. */
export interface CodeActionArgs {
  uri: string;
  range: Range;
  kind: ActionKind;
  version?: number;
  /** LSP Diagnostics: a `range` and a string `message` at least; 1,000 at most. */
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
  /** BM25, higher is better. */
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
   * `ready` is false while the index is being built (the results are those of the files indexed so far), and
   * with `codebaseIndex` off or no folder open (then `files` is 0).
   */
  indexed: { files: number; chunks: number; ready: boolean };
}

/**
 * `assistant/nextEdit`: the edit the user is likely to make next in this document, from their recent edits
 * (the ones the server saw through `didChange`).
 */
export interface NextEditParams {
  /** An open document. */
  textDocument: { uri: string; version: number };
  /** The cursor. */
  position: Position;
}

/** A suggested next edit, against the version the request named; apply it only to that version. */
export interface NextEdit {
  /** One or more edits, in document order, not overlapping; they may be away from the cursor. */
  edits: TextEdit[];
  /** Names it in `assistant/nextEditShown`, `...Accepted` and `...Rejected`. */
  id: string;
}

/** The params of `assistant/nextEditShown`, `assistant/nextEditAccepted` and `assistant/nextEditRejected`. */
export interface NextEditFeedback {
  /** A `NextEdit`'s id. */
  id: string;
}

/** Next-edit suggestions since the server started, as `assistant/stats` reports them. */
export interface NextEditStats {
  /** Requests answered (with a suggestion or null). */
  requests: number;
  /** Of those, answered with a suggestion. */
  suggested: number;
  shown: number;
  accepted: number;
  rejected: number;
  /**
   * The last request's figures (`tMs`, `nPrompt`, `nEvaluated`, `nGenerated`, `nDrafted`, `nAccepted`,
   * `outcome`); null before the first.
   */
  last: Record<string, unknown> | null;
  /**
   * The start of a suggestion's prompt the slot holds now: the window of `uri` from `firstLine`, which a
   * suggestion for `version` starts with (read while the user typed); null: none yet.
   */
  warm?: { uri: string; firstLine: number; version: number } | null;
}

/** One configured MCP server as `assistant/stats` reports it. */
export interface McpServerStats {
  name: string;
  /** Where it is configured: "settings", ".vscode/mcp.json" or ".mcp.json". */
  source: string;
  /** "stopped": not started yet (a chat starts it), or stopped; "failed": it could not start, or it died. */
  state: 'stopped' | 'starting' | 'running' | 'failed';
  /** The tools it lists (its last list while it is down). */
  tools: number;
  /** Times it was started: one, plus one per restart. */
  starts: number;
  /** Why it failed, with the last lines it wrote to stderr. */
  error: string | null;
}

/** The MCP servers and the tools the latest chat conversation was offered. */
export interface McpStats {
  /** In the order of the configuration. */
  servers: McpServerStats[];
  /**
   * The MCP tools the latest chat conversation was offered, as `server.tool` (before any: the first ones, up
   * to the limit per conversation).
   */
  offered: string[];
  /**
   * The other MCP tools: past the limit per conversation, or (`mcpToolChoice` `"relevant"`) not matching its
   * first message.
   */
  leftOut: string[];
}

/**
 * The user's answer to `assistant/confirmToolCall`: run this call; run this tool's calls in this
 * conversation; run this tool's calls while the server runs with this configuration; or not.
 */
export type ToolCallChoice = 'allow' | 'allowConversation' | 'allowAlways' | 'deny';

/** A call the model wants to make to an MCP tool that does not declare itself read-only. */
export interface ConfirmToolCallParams {
  conversationId: string;
  /** The MCP server's name, as configured. */
  server: string;
  /** The tool's name, as its server lists it. */
  tool: string;
  /** The tool as the model called it: `server.tool`. */
  name: string;
  /** The call's arguments, checked against the tool's schema. */
  arguments: Record<string, unknown>;
  /** The tool's description, as its server gives it. */
  description: string;
}

export interface ConfirmToolCallResult {
  choice: ToolCallChoice;
}

/** The argument of `llamaLsp.showAnswer`. */
export interface ShowAnswerArgs {
  conversationId: string;
  title: string;
  content: string;
}

/** One of the server's code action kinds (lsp_server/assistant/actions), as a command of the extension. */
export interface ActionCommand {
  kind: ActionKind;
  /** Offered as "Llama: <title>". */
  title: string;
  /** Its LSP CodeActionKind. */
  lspKind: string;
  /** The server answers in words, shown in the chat, instead of with an edit. */
  answers: boolean;
  /** About the diagnostics in range, which go with the request. */
  forDiagnostics: boolean;
}

/** Command id → the server's action kind; package.json contributes each command. */
export const ACTION_COMMANDS: Readonly<Record<string, ActionCommand>> = {
  'llamaLsp.explain': {
    kind: 'explain',
    title: 'Explain',
    lspKind: 'refactor.llama.explain',
    answers: true,
    forDiagnostics: false,
  },
  'llamaLsp.fix': {
    kind: 'fix',
    title: 'Fix',
    lspKind: 'quickfix',
    answers: false,
    forDiagnostics: true,
  },
  'llamaLsp.document': {
    kind: 'document',
    title: 'Document',
    lspKind: 'refactor.rewrite.llama.document',
    answers: false,
    forDiagnostics: false,
  },
  'llamaLsp.refactor': {
    kind: 'refactor',
    title: 'Refactor',
    lspKind: 'refactor.rewrite.llama.refactor',
    answers: false,
    forDiagnostics: false,
  },
  'llamaLsp.writeTests': {
    kind: 'tests',
    title: 'Write tests',
    lspKind: 'refactor.llama.tests',
    answers: false,
    forDiagnostics: false,
  },
};

export const chatRequest = new RequestType<ChatParams, ChatResult, void>(CHAT);
export const chatDeltaProgress = new ProgressType<ChatDelta>();
export const statsRequest = new RequestType<StatsParams, StatsResult, void>(STATS);
export const searchCodebaseRequest = new RequestType<SearchCodebaseParams, SearchCodebaseResult, void>(
  SEARCH_CODEBASE,
);
export const nextEditRequest = new RequestType<NextEditParams, NextEdit | null, void>(NEXT_EDIT);
export const nextEditShownNotification = new NotificationType<NextEditFeedback>(NEXT_EDIT_SHOWN);
export const nextEditAcceptedNotification = new NotificationType<NextEditFeedback>(NEXT_EDIT_ACCEPTED);
export const nextEditRejectedNotification = new NotificationType<NextEditFeedback>(NEXT_EDIT_REJECTED);
export const statusNotification = new NotificationType<StatusParams>(STATUS);
export const confirmToolCallRequest = new RequestType<ConfirmToolCallParams, ConfirmToolCallResult, void>(
  CONFIRM_TOOL_CALL,
);
