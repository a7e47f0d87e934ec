/**
 * Which command starts the server. `llamaLsp.serverCommand` wins when it is set; otherwise the bootstrap
 * the two editors share (editors/nvim/python/llama_lsp_bootstrap.py, which `make vsix` copies into the
 * extension's server/ beside the wheel) looks for it and installs it: this module finds a Python to run it
 * with (`runBootstrap`, all that is left here of finding and installing) and reads its JSON lines.
 * serverInstall.ts is the install's UI. Also the command that installs a model.
 */

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it was found, for the log and the status tooltip. */
  source: 'setting' | 'PATH' | 'workspace' | 'checkout' | 'installed';
  /** The version of an installed server. */
  version?: string;
  /** A newer version the bootstrap can install, when the server is an installed one. */
  update?: string;
}

/** What looking for the server gave. */
export interface Located {
  command?: ServerCommand;
  /** The version an install would install (the bundled wheel's); undefined: nothing to install. */
  installable?: string;
  /** Why nothing could be looked for (no Python), with the fix. */
  problem?: string;
}

export const BOOTSTRAP = 'llama_lsp_bootstrap.py';
export const PYTHON_HINT = 'Install Python 3.10 or later with venv, e.g. sudo apt install python3 python3-venv';
/** The Pythons to run the bootstrap with, in order, before the Python extension's interpreter. */
export const PYTHONS = ['python3', 'python'];
/** The bootstrap's exit status for "this Python cannot do it": the next one is tried. */
const UNUSABLE = 3;

/** The bootstrap: in the vsix beside the wheel; in a checkout without `make vsix`, the Neovim plugin's. */
export function bootstrapPath(extensionPath: string): string | undefined {
  return [path.join(extensionPath, 'server', BOOTSTRAP), path.join(extensionPath, '..', 'nvim', 'python', BOOTSTRAP)].find(
    (file) => fs.existsSync(file),
  );
}

function expandHome(file: string, homeDir: string): string {
  return file === '~' || file.startsWith('~/') ? homeDir + file.slice(1) : file;
}

/** The setting, when it is set: a string is one executable (paths may hold spaces), an array the executable and its arguments. */
export function configuredCommand(setting: unknown, homeDir: string): ServerCommand | undefined {
  if (typeof setting === 'string' && setting.trim() !== '') {
    return { command: expandHome(setting.trim(), homeDir), args: [], source: 'setting' };
  }
  if (Array.isArray(setting) && setting.length > 0 && setting.every((s) => typeof s === 'string')) {
    const [command, ...args] = setting as string[];
    if (command.trim() !== '') return { command: expandHome(command.trim(), homeDir), args, source: 'setting' };
  }
  return undefined;
}

/** A line of the bootstrap's progress: a step begins, or the running step printed a line. */
export interface BootstrapEvent {
  progress?: string;
  step?: number;
  steps?: number;
  detail?: string;
  output?: string;
}

/** The bootstrap's last line when it failed, or no Python could run it (step "finding Python"). */
export class BootstrapError extends Error {
  constructor(
    readonly step: string,
    readonly error: string,
    readonly detail: string,
    readonly fix: string,
  ) {
    super([detail ? `${error}: ${detail}` : error, fix].filter(Boolean).join('. '));
  }
}

export interface BootstrapOptions {
  /** Pythons to try, in order: paths or names looked up on `env.PATH`. */
  pythons: string[];
  /** Tried only when none of `pythons` could run it (resolving them may cost, e.g. another extension's activation). */
  laterPythons?: () => Promise<string[]>;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
  timeoutMs?: number;
  onEvent?(event: BootstrapEvent): void;
}

interface Ran {
  code: number | null;
  last?: Record<string, unknown>;
  stderr: string;
  error?: NodeJS.ErrnoException;
}

function spawnBootstrap(python: string, args: string[], options: BootstrapOptions): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(python, args, {
      env: options.env,
      signal: options.signal,
      timeout: options.timeoutMs,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    let stderr = '';
    let last: Record<string, unknown> | undefined;
    let error: NodeJS.ErrnoException | undefined;
    const take = (line: string) => {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        return;
      }
      if (typeof value !== 'object' || value === null) return;
      const event = value as Record<string, unknown>;
      if ('progress' in event || 'output' in event) options.onEvent?.(event as BootstrapEvent);
      else last = event;
    };
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      lines.forEach(take);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4096)));
    child.on('error', (e) => (error = e));
    child.on('close', (code) => {
      take(partial);
      resolve({ code, last, stderr, error });
    });
  });
}

/**
 * Runs the bootstrap with the first Python that can: one that is not there, is older than 3.10, or
 * (installing) has no venv, passes to the next. Returns its result and the Python that gave it; throws
 * a BootstrapError with its error, or naming every Python tried.
 */
export async function runBootstrap(
  script: string,
  args: string[],
  options: BootstrapOptions,
): Promise<{ result: Record<string, unknown>; python: string }> {
  const tried: string[] = [];
  const attempt = async (pythons: string[]) => {
    for (const python of pythons) {
      const ran = await spawnBootstrap(python, [script, ...args], options);
      if (options.signal?.aborted) throw new BootstrapError('', 'cancelled', '', '');
      const text = (key: string) => (typeof ran.last?.[key] === 'string' ? (ran.last[key] as string) : '');
      if (ran.last !== undefined && ran.code !== UNUSABLE) {
        if (text('error') === '') return { result: ran.last, python };
        throw new BootstrapError(text('step'), text('error'), text('detail'), text('fix'));
      }
      const said = text('error') || ran.error?.message || ran.stderr.trim().split('\n').pop() || `exit ${ran.code}`;
      tried.push(`${python}: ${ran.error?.code === 'ENOENT' ? 'not found' : said}`);
    }
    return undefined;
  };
  const found = (await attempt(options.pythons)) ?? (options.laterPythons && (await attempt(await options.laterPythons())));
  if (found) return found;
  const error = `no Python 3.10 or later with venv (${tried.join('; ') || 'none to try'})`;
  throw new BootstrapError('finding Python', error, '', PYTHON_HINT);
}

export interface LocateOptions {
  extensionPath: string;
  /** `<global storage>/server`: the bootstrap installs one virtualenv per version there. */
  installRoot: string;
  /** The workspace folders whose `.venv` may hold the server: only in a trusted workspace (it is the workspace's code). */
  trustedFolders: string[];
  homeDir: string;
  bootstrap: Omit<BootstrapOptions, 'onEvent' | 'signal'>;
}

/**
 * The setting wins; otherwise the bootstrap's answer: `llama-lsp` on PATH, a trusted folder's `.venv`,
 * the `.venv` of the checkout the extension runs from, the newest server it installed.
 */
export async function locateServer(setting: unknown, options: LocateOptions): Promise<Located> {
  const configured = configuredCommand(setting, options.homeDir);
  if (configured !== undefined) return { command: configured };
  const script = bootstrapPath(options.extensionPath);
  if (script === undefined) return { problem: `this build of the extension carries no ${BOOTSTRAP}: rebuild it (make vsix)` };
  const args = ['locate', '--root', options.installRoot, ...options.trustedFolders.flatMap((f) => ['--workspace', f])];
  try {
    const { result } = await runBootstrap(script, args, { timeoutMs: 30_000, ...options.bootstrap });
    const str = (value: unknown) => (typeof value === 'string' ? value : undefined);
    const available = result.available as { version?: unknown } | null | undefined;
    const found = Array.isArray(result.command) ? (result.command as string[]) : undefined;
    return {
      command:
        found && found.length > 0
          ? {
              command: found[0],
              args: found.slice(1),
              source: result.source as ServerCommand['source'],
              version: str(result.version),
              update: str(result.update),
            }
          : undefined,
      installable: str(available?.version),
    };
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
}

function executableName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'llama-lsp.exe' : 'llama-lsp';
}

/**
 * `llama-lsp model install NAME` next to the server's executable; when the server runs some other way
 * (`python -m lsp_server`), the same command with the install arguments, since both take them.
 */
export function installCommand(
  server: ServerCommand,
  model: string,
  isExecutable: (file: string) => boolean,
  platform: NodeJS.Platform = process.platform,
): { command: string; args: string[] } {
  const p = platform === 'win32' ? path.win32 : path.posix;
  if (p.isAbsolute(server.command)) {
    const sibling = p.join(p.dirname(server.command), executableName(platform));
    if (isExecutable(sibling)) return { command: sibling, args: ['model', 'install', model] };
  }
  const args = server.args.filter((arg) => arg !== 'serve' && arg !== '--stdio');
  return { command: server.command, args: [...args, 'model', 'install', model] };
}

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
