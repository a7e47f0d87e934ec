/**
 * The chat: one conversation at a time, one question in flight. Owns the transcript (so that a
 * reopened view can be restored), streams the answer's deltas to the view, cancels on Stop, keeps
 * each answer's proposed edit until the user previews or applies it, and hands a clicked file link
 * (checked for shape) to the host, which opens only files of the workspace. Talks to the server and to
 * VS Code only through the interfaces below, which the tests fake.
 */

import * as vscode from 'vscode';
import { fileChanges, fileLabel } from '../edits';
import {
  ErrorCode,
  type ChatParams,
  type ChatResult,
  type Range,
  type ShowAnswerArgs,
  type ToolCall,
  type TurnStats,
  type Verification,
  type WorkspaceEdit,
} from '../protocol';
import { formatStats } from '../status';
import { isVerification, verificationView } from '../verification';
import type { EntryView, FromWebview, ToWebview } from './messages';
import { fileReferenceOf, type FileReference } from './references';

/** What a question is about: a file document and, optionally, the selected range. */
export interface ChatContext {
  uri: string;
  range?: Range;
  /** How the view names it: "app.py, lines 3-9". */
  label: string;
}

export interface ChatBackend {
  chat(params: ChatParams, onDelta: (text: string) => void, token: vscode.CancellationToken): Promise<ChatResult>;
}

export interface ChatHost {
  /** The active editor and its selection, when it is a file the server can read. */
  currentContext(): ChatContext | undefined;
  /** `verification`: how the server checked the edit, for the preview's title. */
  previewEdit(edit: WorkspaceEdit, verification?: Verification): Promise<void>;
  /** Resolves to undefined when applied, else to the reason it was not. */
  applyEdit(edit: WorkspaceEdit): Promise<string | undefined>;
  /** A file link of an answer: opened when it is a file inside a workspace folder, else refused (a status message). */
  openFile(reference: FileReference): Promise<void>;
  reportError(message: string): void;
}

export interface ChatView {
  post(message: ToWebview): void;
}

export function isCancellation(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && (error as { code?: unknown }).code === ErrorCode.RequestCancelled
  );
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describeTool(call: ToolCall): string {
  const firstString = Object.values(call.arguments ?? {}).find((value) => typeof value === 'string');
  return typeof firstString === 'string' ? `${call.name} ${firstString}` : call.name;
}

export class ChatController implements vscode.Disposable {
  private entries: EntryView[] = [];
  private conversationId: string | undefined;
  /** Proposed edits by answer id, with their checks. */
  private readonly edits = new Map<string, { edit: WorkspaceEdit; verification?: Verification }>();
  private running: { source: vscode.CancellationTokenSource; answer: EntryView } | undefined;
  /** Bumped by "New conversation": answers that arrive for an older transcript are dropped. */
  private generation = 0;
  private nextId = 1;
  private pinned: ChatContext | undefined;
  private view: ChatView | undefined;
  private readonly busyChanged = new vscode.EventEmitter<boolean>();
  readonly onDidChangeBusy = this.busyChanged.event;

  constructor(
    private readonly backend: ChatBackend,
    private readonly host: ChatHost,
  ) {}

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** The view posts `ready` once its script runs; the transcript is restored then. */
  attachView(view: ChatView): void {
    this.view = view;
  }

  detachView(view: ChatView): void {
    if (this.view === view) this.view = undefined;
  }

  async handle(message: FromWebview): Promise<void> {
    switch (message.type) {
      case 'ready':
        this.post({ type: 'restore', entries: this.entries, busy: this.busy, context: this.contextLabel() });
        break;
      case 'ask':
        await this.ask(message.text);
        break;
      case 'stop':
        this.stop();
        break;
      case 'new':
        this.newConversation();
        break;
      case 'preview':
        await this.previewEdit(message.id);
        break;
      case 'apply':
        await this.applyEdit(message.id);
        break;
      case 'openFile':
        await this.openFile(message);
        break;
    }
  }

  async ask(text: string): Promise<void> {
    const message = text.trim();
    if (message === '' || this.running !== undefined) return;
    const context = this.pinned ?? this.host.currentContext();
    this.pinned = undefined;
    this.append({ role: 'user', text: message, context: context?.label });
    const answer = this.append({ role: 'assistant', text: '' });
    const params: ChatParams = { message };
    if (context !== undefined) {
      params.textDocument = { uri: context.uri };
      if (context.range !== undefined) params.range = context.range;
    }
    if (this.conversationId !== undefined) params.conversationId = this.conversationId;

    const source = new vscode.CancellationTokenSource();
    const generation = this.generation;
    this.running = { source, answer };
    this.busyChanged.fire(true);
    this.post({ type: 'busy', busy: true });
    this.post({ type: 'context', context: this.contextLabel() });
    const current = (): boolean => generation === this.generation;
    try {
      const result = await this.backend.chat(
        params,
        (delta) => {
          if (!current()) return;
          answer.text += delta;
          this.post({ type: 'delta', id: answer.id, text: delta });
        },
        source.token,
      );
      if (!current()) return;
      this.conversationId = result.conversationId;
      this.finish(answer, result);
    } catch (error) {
      if (!current()) return;
      answer.done = true;
      if (isCancellation(error) || source.token.isCancellationRequested) {
        answer.finishReason = 'cancelled';
      } else {
        answer.finishReason = 'error';
        answer.error = errorMessage(error);
      }
    } finally {
      source.dispose();
      if (this.running?.answer === answer) {
        this.running = undefined;
        this.busyChanged.fire(false);
        this.post({ type: 'busy', busy: false });
      }
      if (current()) this.post({ type: 'update', entry: answer });
    }
  }

  /** Cancels the answer in flight; the client sends $/cancelRequest and the server stops decoding. */
  stop(): void {
    this.running?.source.cancel();
  }

  newConversation(): void {
    this.stop();
    this.generation += 1;
    this.conversationId = undefined;
    this.entries = [];
    this.edits.clear();
    this.post({ type: 'restore', entries: [], busy: this.busy, context: this.contextLabel() });
  }

  /** An answer that came another way (the Explain code action): shown, and continued from here on. */
  showAnswer(answer: ShowAnswerArgs, stats?: TurnStats): void {
    this.newConversation();
    this.conversationId = answer.conversationId;
    this.append({ role: 'user', text: answer.title });
    this.append({
      role: 'assistant',
      text: answer.content,
      done: true,
      finishReason: 'stop',
      stats: stats ? formatStats(stats) : undefined,
    });
  }

  /** "Ask about selection": the next question is about this context, whatever the editor does meanwhile. */
  pinContext(context: ChatContext | undefined): void {
    this.pinned = context;
    this.post({ type: 'context', context: this.contextLabel() });
    this.post({ type: 'focus' });
  }

  /** The active editor or its selection changed. */
  contextChanged(): void {
    if (this.pinned === undefined) this.post({ type: 'context', context: this.contextLabel() });
  }

  dispose(): void {
    this.stop();
    this.busyChanged.dispose();
  }

  private contextLabel(): string | undefined {
    return (this.pinned ?? this.host.currentContext())?.label;
  }

  private append(entry: Omit<EntryView, 'id'>): EntryView {
    const full: EntryView = { id: `m${this.nextId++}`, ...entry };
    this.entries.push(full);
    this.post({ type: 'append', entry: full });
    return full;
  }

  private finish(answer: EntryView, result: ChatResult): void {
    answer.text = result.content; // the deltas concatenate to it; the result is authoritative
    answer.done = true;
    answer.finishReason = result.finishReason;
    answer.stats = formatStats(result.stats);
    if (result.toolCalls.length > 0) answer.tools = result.toolCalls.map(describeTool);
    const verification = isVerification(result.verification) ? result.verification : undefined;
    if (result.edit !== undefined) {
      this.edits.set(answer.id, { edit: result.edit, verification });
      answer.edit = { files: fileChanges(result.edit).map((change) => fileLabel(change.uri)) };
    }
    if (result.editError !== undefined) answer.editError = result.editError;
    if (verification !== undefined) answer.verification = verificationView(verification);
  }

  private async previewEdit(id: string): Promise<void> {
    const proposed = this.edits.get(id);
    if (proposed === undefined) return;
    try {
      await this.host.previewEdit(proposed.edit, proposed.verification);
    } catch (error) {
      this.host.reportError(`Could not preview the edit: ${errorMessage(error)}`);
    }
  }

  private async applyEdit(id: string): Promise<void> {
    const edit = this.edits.get(id)?.edit;
    const entry = this.entries.find((e) => e.id === id);
    if (edit === undefined || entry?.edit === undefined || entry.edit.applied) return;
    let failure: string | undefined;
    try {
      failure = await this.host.applyEdit(edit);
    } catch (error) {
      failure = errorMessage(error);
    }
    if (failure !== undefined) {
      this.host.reportError(`The edit was not applied: ${failure}`);
      return;
    }
    entry.edit = { ...entry.edit, applied: true };
    this.post({ type: 'update', entry });
  }

  /** The webview renders model output: only a well-formed relative reference goes on to the host. */
  private async openFile(message: { path?: unknown; line?: unknown; column?: unknown }): Promise<void> {
    const reference = fileReferenceOf(message);
    if (reference === undefined) return;
    try {
      await this.host.openFile(reference);
    } catch (error) {
      this.host.reportError(`Could not open ${reference.path}: ${errorMessage(error)}`);
    }
  }

  private post(message: ToWebview): void {
    this.view?.post(message);
  }
}
