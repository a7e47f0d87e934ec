/**
 * The status bar item: shows statusView()'s text for the current ServerStatus and the file a question
 * would be about (whether it is warm); a click shows cache stats.
 */

import * as vscode from 'vscode';
import { statusView, type ServerStatus } from './status';

export const STATUS_ITEM_ID = 'llamaLsp.status';

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private status: ServerStatus | undefined;
  /** As the chat (chat/host.ts): the chat view takes focus from the editor, so keep the last one. */
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private readonly editorChange: vscode.Disposable;

  constructor(command: string) {
    this.item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Llama LSP';
    this.item.command = command;
    this.editorChange = vscode.window.onDidChangeActiveTextEditor((editor) => {
      if (editor !== undefined) this.lastEditor = editor;
      if (this.status !== undefined) this.show(this.status);
    });
  }

  show(status: ServerStatus): void {
    this.status = status;
    const view = statusView(status, this.activeDocument());
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.isError ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    this.item.show();
  }

  dispose(): void {
    this.editorChange.dispose();
    this.item.dispose();
  }

  /** The URI of the file the active (or last) editor shows, as the language client sends it. */
  private activeDocument(): string | undefined {
    const document = (vscode.window.activeTextEditor ?? this.lastEditor)?.document;
    if (document === undefined || document.uri.scheme !== 'file' || document.isClosed) return undefined;
    return document.uri.toString();
  }
}
