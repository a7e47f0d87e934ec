/**
 * Errors as notifications with the action that fixes them: "Install model" (runs the installer in a
 * terminal, then restarts the server), "Install llama-lsp server" (serverInstall.ts), "Open settings",
 * "Show log". Also the outcome of a code action
 * and its check (verification.ts decides what to say, and whether it is a warning).
 */

import * as vscode from 'vscode';
import type { LlamaServer } from './server';
import { installCommand, isExecutable } from './serverCommand';
import type { ServerStatus } from './status';
import type { Notice } from './verification';

const INSTALL = 'Install model';
const INSTALL_SERVER = 'Install llama-lsp server';
export const COMMAND_INSTALL_SERVER = 'llamaLsp.installServer';
const SETTINGS = 'Open settings';
const LOG = 'Show log';
const OUTPUT = 'Show output';

/** The model to install when a message names the fix (`llama-lsp model install NAME`). */
export function installHint(message: string): string | undefined {
  return /llama-lsp model install ([\w.:-]+)/.exec(message)?.[1].replace(/[.:]+$/, '');
}

const MESSAGE_TYPE_ERROR = 1; // LSP's MessageType.Error

/**
 * A window/showMessage error that repeats the status error the user already has a notification for
 * (the server sends both when the model cannot load).
 */
export function repeatsStatusError(params: { type: number; message: string }, status: ServerStatus): boolean {
  return (
    params.type === MESSAGE_TYPE_ERROR &&
    status.phase === 'error' &&
    status.message !== undefined &&
    params.message.includes(status.message)
  );
}

export class Notifier {
  private lastShown: string | undefined;

  constructor(
    private readonly server: LlamaServer,
    private readonly output: vscode.LogOutputChannel,
  ) {}

  /**
   * A server error, once per distinct message until the server starts or is ready again. With
   * `installServer` (no server found, one to install) it offers the install instead.
   */
  serverError(message: string, installModel?: string, installServer = false): void {
    if (message === this.lastShown) return;
    this.lastShown = message;
    if (installServer) void this.offerServerInstall(message);
    else void this.show(message, installModel ?? installHint(message));
  }

  forgetServerError(): void {
    this.lastShown = undefined;
  }

  /** Any other error; offers the install when the message names one. */
  error(message: string): void {
    void this.show(message, installHint(message));
  }

  /**
   * A code action's outcome. Always logged, with the check's output, so that the output stays
   * reachable after a status-bar message is gone; a warning offers it directly.
   */
  report(notice: Notice): void {
    const logged = notice.output !== undefined ? `${notice.text}\n${notice.output}` : notice.text;
    if (notice.level === 'status') {
      this.output.info(logged);
      vscode.window.setStatusBarMessage(`$(check) ${notice.text}`, 8000);
      return;
    }
    this.output.warn(logged);
    const actions = notice.output !== undefined ? [OUTPUT] : [];
    void vscode.window.showWarningMessage(notice.text, ...actions).then((choice) => {
      if (choice === OUTPUT) this.output.show(true);
    });
  }

  private async offerServerInstall(message: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(`Llama: ${message}`, INSTALL_SERVER, SETTINGS);
    if (choice === INSTALL_SERVER) void vscode.commands.executeCommand(COMMAND_INSTALL_SERVER);
    else if (choice === SETTINGS) void vscode.commands.executeCommand('workbench.action.openSettings', 'llamaLsp');
  }

  private async show(message: string, model: string | undefined): Promise<void> {
    const text = message.startsWith('llama-lsp') || message.startsWith('Llama') ? message : `Llama: ${message}`;
    const actions = model !== undefined ? [INSTALL, SETTINGS] : [SETTINGS, LOG];
    const choice = await vscode.window.showErrorMessage(text, ...actions);
    if (choice === INSTALL && model !== undefined) this.installModel(model);
    else if (choice === SETTINGS) void vscode.commands.executeCommand('workbench.action.openSettings', 'llamaLsp');
    else if (choice === LOG) this.output.show();
  }

  /** Runs the installer where the user can watch it; a clean exit restarts the server on the model. */
  installModel(model: string): void {
    const server = this.server.command;
    if (server === undefined) {
      void vscode.window.showErrorMessage('Llama: the llama-lsp server was not found, so it cannot install models.');
      return;
    }
    const install = installCommand(server, model, isExecutable);
    this.output.info(`installing: ${[install.command, ...install.args].join(' ')}`);
    const terminal = vscode.window.createTerminal({
      name: `Llama: install ${model}`,
      shellPath: install.command,
      shellArgs: install.args,
    });
    terminal.show();
    const closed = vscode.window.onDidCloseTerminal((t) => {
      if (t !== terminal) return;
      closed.dispose();
      if (t.exitStatus?.code === 0) {
        void vscode.window.showInformationMessage(`Llama: ${model} installed; restarting the server.`);
        void this.server.restart();
      } else if (t.exitStatus?.code !== undefined) {
        // (undefined: the user closed the terminal, which says enough)
        void vscode.window.showErrorMessage(`Llama: installing ${model} failed (exit code ${t.exitStatus.code}).`);
      }
    });
  }
}
