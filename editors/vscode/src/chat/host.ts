/**
 * The chat's view of VS Code: which editor and selection a question is about, proposed edits as
 * diff previews and applied WorkspaceEdits, and the files an answer's links open.
 */

import * as vscode from 'vscode';
import { applyTextEdits, fileChanges, fileLabel, staleFiles } from '../edits';
import type { Notifier } from '../notifications';
import type { Range, Verification, WorkspaceEdit } from '../protocol';
import type { LlamaServer } from '../server';
import { previewTitle } from '../verification';
import type { ChatContext, ChatHost } from './controller';
import { referenceLabel, resolveReference, type FileReference } from './references';

/** How long a refused file link's status message stays. */
const REFUSED_MESSAGE_MS = 5000;

/** Read-only documents holding the proposed text for `vscode.diff`. */
export const PREVIEW_SCHEME = 'llama-lsp-edit';

/** "app.py", "app.py, line 4", "app.py, lines 3-9"; a selection ending at a line's start ends before it. */
export function contextLabel(path: string, range: Range | undefined): string {
  if (range === undefined) return path;
  const first = range.start.line + 1;
  const last = range.end.character === 0 && range.end.line > range.start.line ? range.end.line : range.end.line + 1;
  return first === last ? `${path}, line ${first}` : `${path}, lines ${first}-${last}`;
}

export function editorContext(editor: vscode.TextEditor): ChatContext | undefined {
  const document = editor.document;
  if (document.uri.scheme !== 'file' || document.isClosed) return undefined;
  const selection = editor.selection;
  const range: Range | undefined = selection.isEmpty
    ? undefined
    : {
        start: { line: selection.start.line, character: selection.start.character },
        end: { line: selection.end.line, character: selection.end.character },
      };
  const path = vscode.workspace.asRelativePath(document.uri, false);
  return { uri: document.uri.toString(), range, label: contextLabel(path, range) };
}

export class EditorHost implements ChatHost, vscode.Disposable {
  /** The chat view takes focus from the editor, so the question is about the last text editor used. */
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private readonly previews = new Map<string, string>();
  private previewCounter = 0;
  private readonly contextChanged = new vscode.EventEmitter<void>();
  /** The active editor or its selection changed: what a question would be about. */
  readonly onDidChangeContext = this.contextChanged.event;
  private readonly disposables: vscode.Disposable[] = [this.contextChanged];

  constructor(
    private readonly server: LlamaServer,
    private readonly notifier: Notifier,
  ) {
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, {
        provideTextDocumentContent: (uri) => this.previews.get(uri.toString()) ?? '',
      }),
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (editor !== undefined) this.lastEditor = editor;
        this.contextChanged.fire();
      }),
      vscode.window.onDidChangeTextEditorSelection((event) => {
        if (event.textEditor === this.lastEditor) this.contextChanged.fire();
      }),
    );
  }

  currentContext(): ChatContext | undefined {
    return this.lastEditor !== undefined ? editorContext(this.lastEditor) : undefined;
  }

  async previewEdit(edit: WorkspaceEdit, verification?: Verification): Promise<void> {
    for (const change of fileChanges(edit)) {
      const uri = vscode.Uri.parse(change.uri);
      const original = await this.currentText(uri);
      const n = ++this.previewCounter; // a fresh URI each time: the provider's documents are cached
      const right = uri.with({ scheme: PREVIEW_SCHEME, query: `proposed-${n}` });
      this.previews.set(right.toString(), applyTextEdits(original ?? '', change.edits));
      let left = uri;
      if (original === undefined) {
        left = uri.with({ scheme: PREVIEW_SCHEME, query: `new-${n}` });
        this.previews.set(left.toString(), '');
      }
      const title = previewTitle(fileLabel(change.uri), verification);
      await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
    }
  }

  async applyEdit(edit: WorkspaceEdit): Promise<string | undefined> {
    const versionOf = (uri: string): number | undefined =>
      vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri)?.version;
    const stale = staleFiles(edit, versionOf);
    if (stale.length > 0) {
      return `${stale.map(fileLabel).join(', ')} changed since the answer was written; ask again.`;
    }
    const applied = await vscode.workspace.applyEdit(await this.server.toCodeEdit(edit));
    return applied ? undefined : 'VS Code could not apply it.';
  }

  reportError(message: string): void {
    this.notifier.error(message);
  }

  /** Opens a file of the workspace at the reference's line and column; anything else is refused. */
  async openFile(reference: FileReference): Promise<void> {
    // Only local folders: a symlink that leads out can be seen there (and the server indexes only those).
    const folders = (vscode.workspace.workspaceFolders ?? [])
      .filter((folder) => folder.uri.scheme === 'file')
      .map((folder) => folder.uri.fsPath);
    const file = await resolveReference(reference, folders);
    if (file === undefined) {
      vscode.window.setStatusBarMessage(
        `Llama: ${referenceLabel(reference)} is not a file in the workspace`,
        REFUSED_MESSAGE_MS,
      );
      return;
    }
    const document = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
    const position = document.validatePosition(
      new vscode.Position((reference.line ?? 1) - 1, (reference.column ?? 1) - 1),
    );
    const editor = await vscode.window.showTextDocument(document, {
      selection: new vscode.Range(position, position),
    });
    editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  /** The document's text, or undefined when the file does not exist yet (the edit creates it). */
  private async currentText(uri: vscode.Uri): Promise<string | undefined> {
    try {
      return (await vscode.workspace.openTextDocument(uri)).getText();
    } catch {
      return undefined;
    }
  }
}
