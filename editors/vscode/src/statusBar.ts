/** The status bar item: shows statusView()'s text for the current ServerStatus; a click shows cache stats. */

import * as vscode from 'vscode';
import { statusView, type ServerStatus } from './status';

export const STATUS_ITEM_ID = 'llamaLsp.status';

export class StatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;

  constructor(command: string) {
    this.item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Llama LSP';
    this.item.command = command;
  }

  show(status: ServerStatus): void {
    const view = statusView(status);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.isError ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
