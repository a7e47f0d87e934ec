/**
 * Next-edit suggestions as plain logic: when to ask the server (`assistant/nextEdit`), which answer is
 * shown, what Tab and Escape do, when a suggestion goes and what the server is told about it. No
 * `vscode` here: nextEdit.ts turns the editor's events into calls of `NextEditFlow` and carries out its
 * effects, so that these rules are tested with a fake clock and fake effects.
 *
 * Every suggestion shown ends exactly once: accepted (Tab at it, its edits applied) or rejected (Escape,
 * typing, another editor, the document closed, the setting turned off, or found stale at Tab).
 */

import { TextDocument } from 'vscode-languageserver-textdocument';
import { applyTextEdits } from './edits';
import { ErrorCode, type NextEdit, type NextEditParams, type Position, type TextEdit } from './protocol';

/** A suggestion as shown: the server's answer and the document version it was computed against. */
export interface Suggestion {
  id: string;
  uri: string;
  version: number;
  /** In document order, not overlapping (the server's promise); at least one. */
  edits: TextEdit[];
}

/** The active editor's document, as far as the flow needs it. */
export interface EditorState {
  uri: string;
  version: number;
  cursor: Position;
  lineCount: number;
  /** Characters on `line` (0-based), without its line break. */
  lineLength(line: number): number;
}

export type Feedback = 'shown' | 'accepted' | 'rejected';

/** What Tab does with the suggestion shown. */
export type TabAction =
  /** The cursor is away from it: move the cursor to the first edit. */
  | { kind: 'jump'; to: Position }
  /** The cursor is on one of its lines: apply it. */
  | { kind: 'accept' }
  /** The document is no longer the version it was made for (or another document is active): drop it. */
  | { kind: 'stale' };

/** Whether the cursor's line is one of the lines an edit of the suggestion replaces. */
export function cursorAtSuggestion(edits: readonly TextEdit[], cursorLine: number): boolean {
  return edits.some((edit) => edit.range.start.line <= cursorLine && cursorLine <= edit.range.end.line);
}

export function tabAction(suggestion: Suggestion, editor: Pick<EditorState, 'uri' | 'version' | 'cursor'>): TabAction {
  if (editor.uri !== suggestion.uri || editor.version !== suggestion.version) return { kind: 'stale' };
  if (cursorAtSuggestion(suggestion.edits, editor.cursor.line)) return { kind: 'accept' };
  return { kind: 'jump', to: suggestion.edits[0].range.start };
}

function before(a: Position, b: Position): boolean {
  return a.line < b.line || (a.line === b.line && a.character < b.character);
}

/**
 * Whether every edit's range lies inside the document as it is, in order and without overlaps: an answer
 * that does not (a bug, or a range that no longer exists) is never shown, so never applied.
 */
export function fitsDocument(edits: readonly TextEdit[], editor: Pick<EditorState, 'lineCount' | 'lineLength'>): boolean {
  const inside = (p: Position): boolean =>
    Number.isInteger(p.line) &&
    Number.isInteger(p.character) &&
    p.line >= 0 &&
    p.line < editor.lineCount &&
    p.character >= 0 &&
    p.character <= editor.lineLength(p.line);
  let previousEnd: Position | undefined;
  for (const { range } of edits) {
    if (!inside(range.start) || !inside(range.end) || before(range.end, range.start)) return false;
    if (previousEnd !== undefined && before(range.start, previousEnd)) return false;
    previousEnd = range.end;
  }
  return true;
}

/**
 * Where the cursor goes once the edits are applied to `text`: at the end of the last edit's new text,
 * so that the next suggestion is asked for where the user's attention now is.
 */
export function cursorAfterEdits(text: string, edits: readonly TextEdit[]): Position {
  const document = TextDocument.create('', '', 0, text);
  let shift = 0; // what the earlier edits add to the text before the last one
  for (const edit of edits.slice(0, -1)) {
    shift += edit.newText.length - (document.offsetAt(edit.range.end) - document.offsetAt(edit.range.start));
  }
  const last = edits[edits.length - 1];
  const end = document.offsetAt(last.range.start) + shift + last.newText.length;
  return TextDocument.create('', '', 0, applyTextEdits(text, [...edits])).positionAt(end);
}

/** What the flow asks of the editor and the server. */
export interface FlowEffects {
  /** The active editor, only when its document is one the language client serves. */
  editor(): EditorState | undefined;
  /** `llamaLsp.nextEdit`, read each time, so that turning it off takes effect at once. */
  enabled(): boolean;
  /** `llamaLsp.nextEditDelayMs`. */
  delayMs(): number;
  /** Sends `assistant/nextEdit`; the signal aborts when the answer is no longer wanted. */
  request(params: NextEditParams, signal: AbortSignal): Promise<NextEdit | null>;
  /** Draws the suggestion (again: the hint depends on the cursor's line) and sets the context key. */
  show(suggestion: Suggestion, cursor: Position): void;
  /** Removes the drawing and clears the context key. */
  hide(): void;
  /** Sends `assistant/nextEditShown`, `...Accepted` or `...Rejected`. */
  feedback(kind: Feedback, id: string): void;
  /** Applies the suggestion's edits if the document is still at its version, and moves the cursor after them. */
  apply(suggestion: Suggestion): Promise<boolean>;
  /** Moves the cursor there and reveals it. */
  moveCursor(to: Position): void;
  /** Gives Tab its usual meaning (the keybinding's context key said a suggestion was shown; none is now). */
  passTab(): void;
  /** `debug` for what happens at every pause (nothing to suggest, an answer come too late). */
  log(level: 'info' | 'debug', message: string): void;
  /** Calls `fn` once after `ms`; the result cancels it. */
  setTimer(fn: () => void, ms: number): () => void;
}

/** The longest account of an answer's edits in the log: a whole rewritten function would flood it. */
const MAX_LOGGED_EDITS_CHARS = 600;

function describeAnswer(answer: NextEdit): string {
  const lines = [...new Set(answer.edits.map((e) => e.range.start.line + 1))].join(', ');
  const edits = JSON.stringify(answer.edits);
  const shown = edits.length > MAX_LOGGED_EDITS_CHARS ? `${edits.slice(0, MAX_LOGGED_EDITS_CHARS)}…` : edits;
  return `suggestion ${answer.id}: ${answer.edits.length} edit${answer.edits.length === 1 ? '' : 's'} at line ${lines}: ${shown}`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class NextEditFlow {
  private shown: Suggestion | undefined;
  /** The request in flight, or the one a timer will send. */
  private inFlight: AbortController | undefined;
  private cancelTimer: (() => void) | undefined;
  /** The document an accepted suggestion is being applied to: its change is ours, not the user's typing. */
  private applyingTo: string | undefined;
  /** The server answered MethodNotFound (older than the extension): no more requests until it restarts. */
  private unsupported = false;
  private lastError: string | undefined;

  constructor(private readonly effects: FlowEffects) {}

  /** The suggestion on screen, if any (for tests and the context key). */
  get current(): Suggestion | undefined {
    return this.shown;
  }

  /** The content of a document changed (`contentChanges` not empty). */
  documentChanged(uri: string): void {
    if (uri === this.applyingTo) return;
    if (this.shown?.uri === uri) this.dismiss('typing');
    if (this.effects.editor()?.uri !== uri) return; // a document in the background: not the user's typing
    this.cancelPending();
    if (!this.effects.enabled() || this.unsupported) return;
    const delay = this.effects.delayMs();
    this.cancelTimer = this.effects.setTimer(() => {
      this.cancelTimer = undefined;
      void this.ask();
    }, delay);
  }

  /** The cursor moved: the hint says what Tab does from the new line. */
  selectionChanged(): void {
    const editor = this.effects.editor();
    if (this.shown !== undefined && editor?.uri === this.shown.uri) this.effects.show(this.shown, editor.cursor);
  }

  /** Another editor (or none) is active: what was shown or asked for the previous one goes. */
  activeEditorChanged(): void {
    const uri = this.effects.editor()?.uri;
    if (this.shown !== undefined && this.shown.uri !== uri) this.dismiss('another editor');
    this.cancelPending();
  }

  documentClosed(uri: string): void {
    if (this.shown?.uri === uri) this.dismiss('document closed');
    this.cancelPending();
  }

  /** The settings changed: off, nothing is asked and nothing stays shown. */
  settingsChanged(): void {
    if (this.effects.enabled()) return;
    this.cancelPending();
    if (this.shown !== undefined) this.dismiss('turned off');
  }

  /** The server (re)started: it may now serve `assistant/nextEdit`. */
  serverStarted(): void {
    this.unsupported = false;
    this.lastError = undefined;
  }

  /** Tab, bound while a suggestion is shown: jump to it, or accept it where the cursor is at it. */
  tab(): void {
    const suggestion = this.shown;
    if (suggestion === undefined) {
      this.effects.passTab();
      return;
    }
    const editor = this.effects.editor();
    const action: TabAction = editor === undefined ? { kind: 'stale' } : tabAction(suggestion, editor);
    switch (action.kind) {
      case 'jump':
        this.effects.moveCursor(action.to);
        return;
      case 'accept':
        void this.accept(suggestion);
        return;
      case 'stale':
        this.dismiss('stale at Tab');
        this.effects.passTab();
        return;
    }
  }

  /** Escape, bound while a suggestion is shown. */
  escape(): void {
    if (this.shown !== undefined) this.dismiss('Escape');
  }

  /** Asks for a suggestion now, for the active editor's version and cursor. */
  async ask(): Promise<void> {
    this.cancelPending();
    if (!this.effects.enabled() || this.unsupported) return;
    const editor = this.effects.editor();
    if (editor === undefined) return;
    const controller = new AbortController();
    this.inFlight = controller;
    const params: NextEditParams = {
      textDocument: { uri: editor.uri, version: editor.version },
      position: { line: editor.cursor.line, character: editor.cursor.character },
    };
    const asked = `v${editor.version} at ${editor.cursor.line + 1}:${editor.cursor.character + 1}`;
    let answer: NextEdit | null;
    try {
      answer = await this.effects.request(params, controller.signal);
    } catch (error) {
      if (!controller.signal.aborted) this.failed(error);
      return;
    } finally {
      if (this.inFlight === controller) this.inFlight = undefined;
    }
    if (controller.signal.aborted) return;
    this.lastError = undefined;
    if (answer === null || answer === undefined || answer.edits.length === 0) {
      this.effects.log('debug', `next edit ${asked}: nothing to suggest`);
      return;
    }
    const now = this.effects.editor();
    if (now === undefined || now.uri !== editor.uri || now.version !== editor.version) {
      this.effects.log('debug', `next edit ${asked}: ${describeAnswer(answer)}; not shown: the document changed meanwhile`);
      return;
    }
    if (!fitsDocument(answer.edits, now)) {
      this.effects.log('info', `next edit ${asked}: ${describeAnswer(answer)}; not shown: its ranges are not in the document`);
      return;
    }
    if (this.shown !== undefined) this.dismiss('replaced');
    this.shown = { id: answer.id, uri: editor.uri, version: editor.version, edits: answer.edits };
    this.effects.show(this.shown, now.cursor);
    this.effects.feedback('shown', answer.id);
    this.effects.log('info', `next edit ${asked}: ${describeAnswer(answer)}; shown`);
  }

  dispose(): void {
    this.cancelPending();
    if (this.shown !== undefined) this.effects.hide();
    this.shown = undefined;
  }

  private async accept(suggestion: Suggestion): Promise<void> {
    this.shown = undefined;
    this.effects.hide();
    this.cancelPending();
    this.applyingTo = suggestion.uri;
    let applied: boolean;
    try {
      applied = await this.effects.apply(suggestion);
    } catch (error) {
      this.effects.log('info', `next edit ${suggestion.id}: applying it failed: ${errorText(error)}`);
      applied = false;
    } finally {
      this.applyingTo = undefined;
    }
    if (!applied) {
      this.effects.feedback('rejected', suggestion.id);
      this.effects.log('info', `next edit ${suggestion.id}: not applied (the document changed); rejected`);
      return;
    }
    this.effects.feedback('accepted', suggestion.id);
    this.effects.log('info', `next edit ${suggestion.id}: accepted`);
    await this.ask(); // the next one follows from this one: asked at once, not after a pause
  }

  private dismiss(why: string): void {
    const suggestion = this.shown;
    if (suggestion === undefined) return;
    this.shown = undefined;
    this.effects.hide();
    this.effects.feedback('rejected', suggestion.id);
    this.effects.log('info', `next edit ${suggestion.id}: dismissed (${why}); rejected`);
  }

  private cancelPending(): void {
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.inFlight?.abort();
    this.inFlight = undefined;
  }

  private failed(error: unknown): void {
    if ((error as { code?: unknown } | null)?.code === ErrorCode.MethodNotFound) {
      this.unsupported = true;
      this.effects.log('info', 'next edit: this llama-lsp server does not serve assistant/nextEdit (it is older than the extension); not asking again until it restarts');
      return;
    }
    const message = errorText(error);
    // A server that is down fails every pause the same way: said once.
    if (message !== this.lastError) this.effects.log('info', `next edit: the request failed: ${message}`);
    this.lastError = message;
  }
}
