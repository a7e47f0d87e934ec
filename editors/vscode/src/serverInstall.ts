/**
 * Installs the server the extension carries (`server/llama_lsp-<version>-*.whl`, put there by
 * `make vsix`) into a virtualenv of its own, `<global storage>/server/<version>`: finds a Python 3.10+
 * that can make one, creates it, pip-installs the wheel (its dependencies come from the user's
 * package index), and checks `llama-lsp --version`. A failed or cancelled install leaves nothing
 * behind. serverCommand.ts finds what it installed; `ServerInstaller` is the VS Code side (the
 * command, its progress notification, the offers to install and to update).
 */

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { LlamaServer } from './server';
import { compareVersions, INSTALLED_MARKER, installedExecutable } from './serverCommand';

export const PYTHON_HINT =
  'Install Python 3.10 or later with venv, e.g. on Debian/Ubuntu: sudo apt install python3 python3-venv';
const MIN_PYTHON: [number, number] = [3, 10];
// Prints the version and the interpreter's path only where venv and ensurepip (which venv needs to put
// pip in the new environment) can be imported.
const PROBE = "import sys, venv, ensurepip; print('%d.%d.%d' % sys.version_info[:3], sys.executable)";

export interface BundledWheel {
  file: string;
  version: string;
}

/** The wheel in the extension's `server/` directory (`llama_lsp-0.1.0-py3-none-linux_x86_64.whl`). */
export function bundledWheel(extensionPath: string): BundledWheel | undefined {
  const dir = path.join(extensionPath, 'server');
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  const wheels = names
    .map((name) => ({ name, version: /^llama_lsp-([^-]+)-.*\.whl$/.exec(name)?.[1] }))
    .filter((w): w is { name: string; version: string } => w.version !== undefined)
    .sort((a, b) => compareVersions(a.version, b.version));
  const newest = wheels[wheels.length - 1];
  return newest && { file: path.join(dir, newest.name), version: newest.version };
}

/** The probe's output, `3.11.2 /usr/bin/python3.11`: the version and the interpreter, when it is new enough. */
export function parsePythonProbe(stdout: string): { version: string; executable: string; ok: boolean } | undefined {
  const m = /^(\d+)\.(\d+)\.(\d+)\S* (.+)$/m.exec(stdout.trim());
  if (m === null) return undefined;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  const ok = major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
  return { version: `${m[1]}.${m[2]}.${m[3]}`, executable: m[4].trim(), ok };
}

/** A step that failed: what it was doing, the end of its output, and what the user can do. */
export class InstallError extends Error {
  constructor(
    readonly step: string,
    readonly detail: string,
    readonly hint: string,
  ) {
    super(`${step} failed${detail ? `: ${detail}` : ''}. ${hint}`);
  }
}

export interface InstallOptions {
  wheel: BundledWheel;
  /** `<global storage>/server`; the server goes to `<root>/<version>`. */
  root: string;
  /** Pythons to try, in order: paths or names looked up on `env.PATH`. */
  pythons: string[];
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  /** The step and, while it runs, the last line of its output. */
  report?(step: string, line?: string): void;
  /** Every line of output, for the log. */
  log?(line: string): void;
}

interface RunResult {
  code: number | null;
  output: string;
  error?: Error;
}

function run(
  command: string,
  args: string[],
  options: Pick<InstallOptions, 'env' | 'signal'> & { timeoutMs: number; onLine?(line: string): void },
): Promise<RunResult> {
  return new Promise((resolve) => {
    let output = '';
    let partial = '';
    const child = spawn(command, args, {
      env: options.env,
      signal: options.signal,
      timeout: options.timeoutMs,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const take = (chunk: Buffer) => {
      const text = chunk.toString();
      output = (output + text).slice(-65536);
      const lines = (partial + text).split(/\r?\n|\r/);
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.trim() !== '') options.onLine?.(line.trim());
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let error: Error | undefined;
    child.on('error', (e) => (error = e));
    child.on('close', (code, signal) => {
      if (partial.trim() !== '') options.onLine?.(partial.trim());
      if (error === undefined && signal !== null) error = new Error(`stopped by ${signal}`);
      resolve({ code, output, error });
    });
  });
}

/** The last lines of a step's output, for the error message. */
function tail(result: RunResult, lines = 6): string {
  const text = result.output.trim().split('\n').slice(-lines).join('\n').trim();
  return [result.error?.message, text].filter(Boolean).join('\n').slice(-1200);
}

/** The first Python that is 3.10+ and can make a virtualenv; an InstallError naming what to install when none can. */
export async function findPython(
  candidates: string[],
  options: Pick<InstallOptions, 'env' | 'signal'> = {},
): Promise<{ executable: string; version: string }> {
  const tried: string[] = [];
  for (const candidate of candidates) {
    const result = await run(candidate, ['-c', PROBE], { ...options, timeoutMs: 30_000 });
    if (options.signal?.aborted) throw new InstallError('finding Python', 'cancelled', PYTHON_HINT);
    const probe = result.code === 0 ? parsePythonProbe(result.output) : undefined;
    if (probe?.ok) return probe;
    const code = (result.error as NodeJS.ErrnoException | undefined)?.code;
    tried.push(
      code === 'ENOENT'
        ? `${candidate}: not found`
        : probe !== undefined
          ? `${candidate}: Python ${probe.version}, too old`
          : `${candidate}: no venv/ensurepip (${tail(result, 1) || `exit ${result.code}`})`,
    );
  }
  throw new InstallError(
    'finding Python',
    `no Python ${MIN_PYTHON.join('.')} or later with venv (${tried.join('; ') || 'none to try'})`,
    PYTHON_HINT,
  );
}

/**
 * Installs the wheel into `<root>/<version>` and returns the server's executable. Any failure (or
 * cancellation) removes that directory and throws an InstallError; other versions are left alone.
 */
export async function installServer(options: InstallOptions): Promise<string> {
  const { wheel, root, env, signal } = options;
  const dir = path.join(root, wheel.version);
  const say = (step: string, line?: string) => options.report?.(step, line);
  const step = async (name: string, hint: string, command: string, args: string[], timeoutMs: number) => {
    say(name);
    options.log?.(`${name}: ${[command, ...args].join(' ')}`);
    const result = await run(command, args, {
      env,
      signal,
      timeoutMs,
      onLine: (line) => {
        options.log?.(line);
        say(name, line);
      },
    });
    if (result.code !== 0 || result.error !== undefined) {
      throw new InstallError(name, signal?.aborted ? 'cancelled' : tail(result), hint);
    }
    return result.output;
  };

  say('finding Python');
  const python = await findPython(options.pythons, { env, signal });
  options.log?.(`using Python ${python.version} at ${python.executable}`);
  fs.rmSync(dir, { recursive: true, force: true }); // what an interrupted install left
  fs.mkdirSync(root, { recursive: true });
  try {
    await step('creating the virtualenv', PYTHON_HINT, python.executable, ['-m', 'venv', dir], 180_000);
    const venvPython = path.join(dir, 'bin', 'python');
    await step(
      'installing the server with pip',
      "pip installs the server's dependencies from your package index (PyPI, or the one pip is configured with): check that it can be reached, then try again.",
      venvPython,
      ['-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', wheel.file],
      900_000,
    );
    const executable = installedExecutable(root, wheel.version, 'linux');
    const version = await step(
      'checking llama-lsp --version',
      'The installed server does not start: the Llama LSP output has its messages.',
      executable,
      ['--version'],
      60_000,
    );
    const first = version.split('\n')[0].trim();
    if (first !== `llama-lsp ${wheel.version}`) {
      throw new InstallError(
        'checking llama-lsp --version',
        `expected "llama-lsp ${wheel.version}", got "${first}"`,
        'The wheel and its version do not match: rebuild the extension (make vsix).',
      );
    }
    fs.writeFileSync(path.join(dir, INSTALLED_MARKER), `${first}\n`);
    return executable;
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** After an install: the other versions' directories go (their servers must not be running). */
export function removeOtherVersions(root: string, keep: string): void {
  for (const name of fs.existsSync(root) ? fs.readdirSync(root) : []) {
    if (name !== keep) fs.rmSync(path.join(root, name), { recursive: true, force: true });
  }
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

  get wheel(): BundledWheel | undefined {
    return bundledWheel(this.extensionPath);
  }

  /** When the running server is one this extension installed, older than the wheel it carries. */
  offerUpdate(): void {
    const command = this.server.command;
    const wheel = this.wheel;
    if (command?.source !== 'installed' || command.version === undefined || wheel === undefined) return;
    if (compareVersions(command.version, wheel.version) >= 0) return;
    const text = `Llama: llama-lsp server ${wheel.version} is available (installed: ${command.version}).`;
    void vscode.window.showInformationMessage(text, UPDATE).then((choice) => {
      if (choice === UPDATE) void this.install();
    });
  }

  install(): Promise<void> {
    this.running ??= this.installWithProgress().finally(() => (this.running = undefined));
    return this.running;
  }

  private async installWithProgress(): Promise<void> {
    const wheel = this.wheel;
    if (wheel === undefined) {
      void vscode.window.showErrorMessage(
        'Llama: this build of the extension carries no llama-lsp server to install; set llamaLsp.serverCommand instead.',
      );
      return;
    }
    // The running server cannot stay while its own directory is installed again.
    const reinstall = this.server.command?.source === 'installed' && this.server.command.version === wheel.version;
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
    const pythons = [...selected, 'python3', 'python'];
    const abort = new AbortController();
    try {
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Llama: installing llama-lsp ${wheel.version}`, cancellable: true },
        (progress, token) => {
          token.onCancellationRequested(() => abort.abort());
          return installServer({
            wheel,
            root: this.root,
            pythons,
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
    this.output.info(`installed llama-lsp ${wheel.version} in ${path.join(this.root, wheel.version)}`);
    await this.server.stop();
    removeOtherVersions(this.root, wheel.version);
    await this.server.start();
    if (this.server.command?.source !== 'installed') {
      this.output.warn(`the server from ${this.server.command?.source} is used before the installed one`);
    }
    void vscode.window.showInformationMessage(`Llama: llama-lsp server ${wheel.version} installed.`);
  }
}

/**
 * The interpreter selected in the Python extension (ms-python.python), when it is installed: tried
 * first, before python3 and python on PATH. Its API is optional here; any failure means none.
 */
async function pythonExtensionInterpreter(): Promise<string[]> {
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
