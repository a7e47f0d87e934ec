/**
 * The install's UI: the command, its progress notification, the offers to install and to update. The
 * install itself is the bootstrap's (serverCommand.ts runs it): it puts the wheel the extension carries
 * (`server/llama_lsp-<version>-*.whl`, put there by `make vsix`) into a virtualenv of its own,
 * `<global storage>/server/<version>`, checks `llama-lsp --version`, and leaves nothing behind when it
 * fails or is cancelled.
 */

import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LlamaServer } from './server';
import { bootstrapPath, BOOTSTRAP, PYTHONS, runBootstrap, type BootstrapOptions } from './serverCommand';

export interface InstallOptions extends Omit<BootstrapOptions, 'onEvent'> {
  /** The bootstrap: `server/llama_lsp_bootstrap.py`, beside the wheel it installs. */
  script: string;
  /** `<global storage>/server`; the server goes to `<root>/<version>`. */
  root: string;
  /** The step and, while it runs, the last line of its output. */
  report?(step: string, line?: string): void;
  /** Every line of output, for the log. */
  log?(line: string): void;
}

/** Runs the bootstrap's install; returns the server's executable and version, and the Python that ran it. */
export async function installServer(
  options: InstallOptions,
): Promise<{ executable: string; version: string; python: string }> {
  let step = 'finding Python';
  options.report?.(step);
  const { result, python } = await runBootstrap(options.script, ['install', '--root', options.root], {
    ...options,
    onEvent: (event) => {
      if (event.progress !== undefined) {
        step = event.progress;
        options.report?.(step);
        options.log?.(event.detail ? `${step}: ${event.detail}` : step);
      } else if (event.output !== undefined) {
        options.report?.(step, event.output);
        options.log?.(event.output);
      }
    },
  });
  const command = result.command as string[];
  return { executable: command[0], version: result.version as string, python };
}

/** After an install, once no server of another version runs: the other versions' directories go. */
export async function removeOtherVersions(script: string, root: string, keep: string, python: string): Promise<void> {
  await runBootstrap(script, ['prune', '--root', root, '--keep', keep], { pythons: [python], timeoutMs: 60_000 });
}

const UPDATE = 'Update llama-lsp server';
const LOG = 'Show log';

/** The install command and its offers, in VS Code. */
export class ServerInstaller {
  private running: Promise<void> | undefined;

  constructor(
    private readonly extensionPath: string,
    /** `<global storage>/server` */
    readonly root: string,
    private readonly server: LlamaServer,
    private readonly output: vscode.LogOutputChannel,
  ) {}

  /** When the running server is one this extension installed, older than the wheel it carries. */
  offerUpdate(): void {
    const command = this.server.command;
    if (command?.source !== 'installed' || command.update === undefined) return;
    const text = `Llama: llama-lsp server ${command.update} is available (installed: ${command.version}).`;
    void vscode.window.showInformationMessage(text, UPDATE).then((choice) => {
      if (choice === UPDATE) void this.install();
    });
  }

  install(): Promise<void> {
    this.running ??= this.installWithProgress().finally(() => (this.running = undefined));
    return this.running;
  }

  private async installWithProgress(): Promise<void> {
    const script = bootstrapPath(this.extensionPath);
    if (script === undefined) {
      void vscode.window.showErrorMessage(
        `Llama: this build of the extension carries no ${BOOTSTRAP} to install the server with; set llamaLsp.serverCommand instead.`,
      );
      return;
    }
    const version = this.server.located?.installable;
    // The running server cannot stay while its own directory is installed again.
    const running = this.server.command;
    const reinstall = running?.source === 'installed' && (version === undefined || running.version === version);
    if (reinstall) await this.server.stop();
    const noServer = reinstall || this.server.command === undefined; // else an update: the old one runs meanwhile
    if (noServer) {
      this.server.noteInstalling(true);
      // VS Code sends a status bar item's change on its next turn, a progress notification at once: yield
      // that turn, so that the status says "installing" before the progress shows (not the "error" of
      // no server, which the e2e saw once beside the progress).
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    // In Restricted Mode the selected interpreter may be the workspace's own .venv: not run.
    const selected = vscode.workspace.isTrusted ? await pythonExtensionInterpreter() : [];
    const abort = new AbortController();
    let installed: { executable: string; version: string; python: string };
    try {
      installed = await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `Llama: installing llama-lsp${version ? ` ${version}` : ''}`,
          cancellable: true,
        },
        (progress, token) => {
          token.onCancellationRequested(() => abort.abort());
          return installServer({
            script,
            root: this.root,
            pythons: [...selected, ...PYTHONS],
            env: process.env,
            signal: abort.signal,
            report: (step, line) => progress.report({ message: line ? `${step}: ${line.slice(0, 120)}` : step }),
            log: (line) => this.output.info(line),
          });
        },
      );
    } catch (error) {
      if (abort.signal.aborted) {
        this.output.info('installing the server: cancelled');
        void vscode.window.showInformationMessage('Llama: installing the llama-lsp server was cancelled.');
      } else {
        const message = `Llama: installing the llama-lsp server: ${error instanceof Error ? error.message : String(error)}`;
        this.output.error(message);
        void vscode.window.showErrorMessage(message, LOG).then((choice) => {
          if (choice === LOG) this.output.show();
        });
      }
      if (reinstall) await this.server.start(); // its directory is gone: "not found", with the install again
      else if (noServer) this.server.noteInstalling(false);
      return;
    }
    this.output.info(`installed llama-lsp ${installed.version} in ${path.join(this.root, installed.version)}`);
    await this.server.stop();
    try {
      await removeOtherVersions(script, this.root, installed.version, installed.python);
    } catch (error) {
      this.output.warn(`removing the other versions: ${String(error)}`);
    }
    await this.server.start();
    if (this.server.command?.source !== 'installed') {
      this.output.warn(`the server from ${this.server.command?.source} is used before the installed one`);
    }
    void vscode.window.showInformationMessage(`Llama: llama-lsp server ${installed.version} installed.`);
  }
}

/**
 * The interpreter selected in the Python extension (ms-python.python), when it is installed: the
 * install tries it first, before python3 and python on PATH; looking for the server, after them (it
 * runs at every start, and asking may activate that extension). Its API is optional here; any failure
 * means none.
 */
export async function pythonExtensionInterpreter(): Promise<string[]> {
  try {
    const extension = vscode.extensions.getExtension('ms-python.python');
    if (extension === undefined) return [];
    type Environments = {
      getActiveEnvironmentPath(): { path: string };
      resolveEnvironment(p: { path: string }): Promise<{ executable?: { uri?: { fsPath: string } } } | undefined>;
    };
    const api = (extension.isActive ? extension.exports : await extension.activate()) as
      | { environments?: Environments }
      | undefined;
    const environments = api?.environments;
    if (environments === undefined) return [];
    const active = environments.getActiveEnvironmentPath();
    const resolved = await environments.resolveEnvironment(active);
    const executable = resolved?.executable?.uri?.fsPath ?? active.path;
    return executable ? [executable] : [];
  } catch {
    return [];
  }
}
