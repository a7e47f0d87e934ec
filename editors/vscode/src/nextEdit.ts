/**
 * Next-edit suggestions in the editor: the edit the user is likely to make next, from the server's
 * `assistant/nextEdit`, drawn where it applies with decorations (nextEditView.ts), also away from the
 * cursor; Tab goes to it, then accepts it; Escape dismisses it. The rules (when to ask, what Tab does,
 * when a suggestion goes) are nextEditFlow.ts's; this module only connects them to VS Code: its events
 * in, decorations, the `llamaLsp.nextEditVisible` context key, the WorkspaceEdit and the cursor out.
 *
 * Tab keeps its usual meaning unless a suggestion is shown: package.json binds Tab and Escape to the
 * commands below only while the context key is set (and no inline completion or suggest widget is).
 */

import * as vscode from 'vscode';
import { SECTION, type NextEdit, type NextEditParams, type Position, type Range } from './protocol';
import { cursorAfterEdits, NextEditFlow, type EditorState, type Suggestion } from './nextEditFlow';
import { decorationPlan } from './nextEditView';
import type { LlamaServer } from './server';
import { nextEditSettings } from './settings';

/** Set while a suggestion is shown: the keybindings of Tab and Escape depend on it. */
export const CONTEXT_VISIBLE = 'llamaLsp.nextEditVisible';
/** Tab while a suggestion is shown. */
export const COMMAND_GO_TO_OR_ACCEPT = 'llamaLsp.goToOrAcceptNextEdit';
/** Escape while a suggestion is shown. */
export const COMMAND_DISMISS = 'llamaLsp.dismissNextEdit';

type NextEditServer = Pick<LlamaServer, 'nextEdit' | 'nextEditFeedback' | 'serves' | 'onDidChangeStatus'>;

function toRange(range: Range): vscode.Range {
  return new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
}

function toPosition(position: Position): vscode.Position {
  return new vscode.Position(position.line, position.character);
}

/** The decoration types a suggestion is drawn with; each range's own text goes in its render options. */
function decorationTypes(extensionUri: vscode.Uri) {
  return {
    removed: vscode.window.createTextEditorDecorationType({
      textDecoration: 'line-through',
      backgroundColor: new vscode.ThemeColor('diffEditor.removedTextBackground'),
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    }),
    inserted: vscode.window.createTextEditorDecorationType({
      after: {
        color: new vscode.ThemeColor('editorGhostText.foreground'),
        backgroundColor: new vscode.ThemeColor('diffEditor.insertedTextBackground'),
        fontStyle: 'italic',
      },
      rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
    }),
    gutter: vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      gutterIconPath: vscode.Uri.joinPath(extensionUri, 'media', 'next-edit.svg'),
      gutterIconSize: 'contain',
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.modifiedForeground'),
      overviewRulerLane: vscode.OverviewRulerLane.Right,
    }),
    hint: vscode.window.createTextEditorDecorationType({
      after: {
        color: new vscode.ThemeColor('editorCodeLens.foreground'),
        fontStyle: 'italic',
        margin: '0 0 0 2em',
      },
    }),
  };
}

export class NextEditController implements vscode.Disposable {
  private readonly flow: NextEditFlow;
  private readonly types: ReturnType<typeof decorationTypes>;
  /** The editor the suggestion is drawn in. */
  private drawnIn: vscode.TextEditor | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly server: NextEditServer,
    extensionUri: vscode.Uri,
    private readonly output: vscode.LogOutputChannel,
  ) {
    this.types = decorationTypes(extensionUri);
    const settings = () => nextEditSettings(vscode.workspace.getConfiguration(SECTION));
    this.flow = new NextEditFlow({
      editor: () => this.editorState(),
      enabled: () => settings().enabled,
      delayMs: () => settings().delayMs,
      request: (params, signal) => this.request(params, signal),
      show: (suggestion, cursor) => this.draw(suggestion, cursor),
      hide: () => this.erase(),
      feedback: (kind, id) => this.server.nextEditFeedback(kind, id),
      apply: (suggestion) => this.apply(suggestion),
      moveCursor: (to) => this.moveCursor(to),
      passTab: () => void vscode.commands.executeCommand('tab'),
      log: (level, message) => (level === 'debug' ? this.output.debug(message) : this.output.info(message)),
      setTimer: (fn, ms) => {
        const timer = setTimeout(fn, ms);
        return () => clearTimeout(timer);
      },
    });
    this.disposables.push(
      ...Object.values(this.types),
      vscode.workspace.onDidChangeTextDocument((event) => {
        // A save or a dirty-state change comes with no content change: the user did not type.
        if (event.contentChanges.length > 0) this.flow.documentChanged(event.document.uri.toString());
      }),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        if (event.textEditor === vscode.window.activeTextEditor) this.flow.selectionChanged();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => this.flow.activeEditorChanged()),
      vscode.workspace.onDidCloseTextDocument((document) => this.flow.documentClosed(document.uri.toString())),
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration(`${SECTION}.nextEdit`)) this.flow.settingsChanged();
      }),
      server.onDidChangeStatus((status) => {
        if (status.phase === 'starting') this.flow.serverStarted();
      }),
    );
  }

  /** Tab while a suggestion is shown. */
  goToOrAccept(): void {
    this.flow.tab();
  }

  /** Escape while a suggestion is shown. */
  dismiss(): void {
    this.flow.escape();
  }

  dispose(): void {
    this.flow.dispose();
    for (const disposable of this.disposables) disposable.dispose();
  }

  /** The active editor, when the language client serves its document (the server knows only those). */
  private editorState(): EditorState | undefined {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined || !this.server.serves(editor.document)) return undefined;
    const document = editor.document;
    const { line, character } = editor.selection.active;
    return {
      uri: document.uri.toString(),
      version: document.version,
      cursor: { line, character },
      lineCount: document.lineCount,
      lineLength: (n) => document.lineAt(n).text.length,
    };
  }

  private async request(params: NextEditParams, signal: AbortSignal): Promise<NextEdit | null> {
    const source = new vscode.CancellationTokenSource();
    const cancel = () => source.cancel();
    signal.addEventListener('abort', cancel);
    try {
      return await this.server.nextEdit(params, source.token);
    } finally {
      signal.removeEventListener('abort', cancel);
      source.dispose();
    }
  }

  private editorFor(uri: string): vscode.TextEditor | undefined {
    const editor = vscode.window.activeTextEditor;
    return editor?.document.uri.toString() === uri ? editor : undefined;
  }

  private draw(suggestion: Suggestion, cursor: Position): void {
    const editor = this.editorFor(suggestion.uri);
    if (editor === undefined) return;
    if (this.drawnIn !== undefined && this.drawnIn !== editor) this.clear(this.drawnIn);
    this.drawnIn = editor;
    const document = editor.document;
    const plan = decorationPlan(suggestion.edits, cursor.line, (n) => document.lineAt(n).text);
    const hover = new vscode.MarkdownString(plan.hover);
    editor.setDecorations(this.types.removed, plan.removed.map((range) => ({ range: toRange(range), hoverMessage: hover })));
    editor.setDecorations(
      this.types.inserted,
      plan.inserted.map((ghost) => ({
        range: new vscode.Range(toPosition(ghost.at), toPosition(ghost.at)),
        renderOptions: { after: { contentText: ghost.text } },
      })),
    );
    editor.setDecorations(
      this.types.gutter,
      plan.gutter.map((line) => ({ range: new vscode.Range(line, 0, line, 0), hoverMessage: hover })),
    );
    const end = document.lineAt(plan.hint.line).range.end;
    editor.setDecorations(this.types.hint, [
      { range: new vscode.Range(end, end), hoverMessage: hover, renderOptions: { after: { contentText: plan.hint.text } } },
    ]);
    void vscode.commands.executeCommand('setContext', CONTEXT_VISIBLE, true);
  }

  private erase(): void {
    if (this.drawnIn !== undefined) this.clear(this.drawnIn);
    this.drawnIn = undefined;
    void vscode.commands.executeCommand('setContext', CONTEXT_VISIBLE, false);
  }

  private clear(editor: vscode.TextEditor): void {
    for (const type of Object.values(this.types)) editor.setDecorations(type, []);
  }

  /**
   * The suggestion's edits as one WorkspaceEdit, only on the version they were made for (VS Code itself
   * also refuses an edit to a document that changed after the edit was made); then the cursor goes to
   * the end of the change.
   */
  private async apply(suggestion: Suggestion): Promise<boolean> {
    const editor = this.editorFor(suggestion.uri);
    if (editor === undefined || editor.document.version !== suggestion.version) return false;
    const document = editor.document;
    const text = document.getText();
    const edit = new vscode.WorkspaceEdit();
    edit.set(
      document.uri,
      suggestion.edits.map((e) => vscode.TextEdit.replace(toRange(e.range), e.newText)),
    );
    if (!(await vscode.workspace.applyEdit(edit))) return false;
    if (vscode.window.activeTextEditor === editor) {
      const cursor = toPosition(cursorAfterEdits(text, suggestion.edits));
      editor.selection = new vscode.Selection(cursor, cursor);
    }
    return true;
  }

  private moveCursor(to: Position): void {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) return;
    const position = toPosition(to);
    editor.selection = new vscode.Selection(position, position);
    editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }
}
