/**
 * The code action commands (explain, fix, document, refactor, write tests) for the selection or the
 * current line: the server's `llamaLsp.codeAction` command runs the model and applies the edit itself
 * (workspace/applyEdit); Explain's answer goes to the chat. The lightbulb's actions are offered and
 * resolved by the language client; server.ts reports their checks.
 */

import * as vscode from 'vscode';
import type { ChatController } from './chat/controller';
import { errorMessage, isCancellation } from './chat/controller';
import { contextLabel } from './chat/host';
import type { Notifier } from './notifications';
import { ErrorCode, type ActionCommand, type CodeActionArgs, type Range } from './protocol';
import type { LlamaServer } from './server';
import { actionNotice } from './verification';

/**
 * Command id → the server's action kind, generated with the protocol from lsp_server/assistant/actions
 * (package.json contributes each command and its menu entry).
 */
export { ACTION_COMMANDS, type ActionCommand } from './protocol';

/** The selection, or the whole current line when nothing is selected (as the server's lightbulb does). */
export function actionRange(selection: { isEmpty: boolean; start: vscode.Position; end: vscode.Position }): Range {
  if (selection.isEmpty) {
    const line = selection.start.line;
    return { start: { line, character: 0 }, end: { line: line + 1, character: 0 } };
  }
  return {
    start: { line: selection.start.line, character: selection.start.character },
    end: { line: selection.end.line, character: selection.end.character },
  };
}

export interface ActionDeps {
  server: LlamaServer;
  chat: ChatController;
  notifier: Notifier;
  revealChat(): Promise<void>;
}

export async function runAction(action: ActionCommand, deps: ActionDeps): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.uri.scheme !== 'file') {
    void vscode.window.showWarningMessage(`Llama: ${action.title} needs a file open in the editor.`);
    return;
  }
  const document = editor.document;
  const range = actionRange(editor.selection);
  const args: CodeActionArgs = { uri: document.uri.toString(), range, kind: action.kind, version: document.version };
  try {
    if (action.forDiagnostics) args.diagnostics = await diagnosticsIn(document.uri, range, deps.server);
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Llama: ${action.title}…`, cancellable: true },
      (_progress, token) => deps.server.runCodeAction(args, token),
    );
    if (action.answers) {
      const title = `Llama: ${action.title} ${contextLabel(vscode.workspace.asRelativePath(document.uri, false), range)}`;
      deps.chat.showAnswer({ conversationId: result.conversationId, title, content: result.content }, result.stats);
      await deps.revealChat();
    } else {
      // Applied or not, and how it was checked: a failed check is a warning with its output.
      deps.notifier.report(actionNotice(action.title, result));
    }
  } catch (error) {
    if (isCancellation(error)) return;
    if ((error as { code?: unknown }).code === ErrorCode.ContentModified) {
      void vscode.window.showWarningMessage(
        `Llama: the document changed while the model worked; run ${action.title} again.`,
      );
      return;
    }
    deps.notifier.error(errorMessage(error));
  }
}

/** The diagnostics that touch the range: what "Fix" is asked to fix. */
async function diagnosticsIn(uri: vscode.Uri, range: Range, server: LlamaServer): Promise<unknown[]> {
  const vsRange = new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
  const near = vscode.languages.getDiagnostics(uri).filter((d) => d.range.intersection(vsRange) !== undefined);
  return server.toProtocolDiagnostics(near);
}
