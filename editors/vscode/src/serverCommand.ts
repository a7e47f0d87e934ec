/**
 * Which command starts the server, and which installs a model. The rules take the file system as
 * functions (`isExecutable`, `isFile`, `listDirectory`), so that tests decide what exists. Also the
 * layout of the servers the extension installs (serverInstall.ts) and how their versions compare.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it was found, for the log and the status tooltip. */
  source: 'setting' | 'PATH' | 'workspace' | 'checkout' | 'installed';
  /** The version of an installed server (its directory's name). */
  version?: string;
}

export interface ResolveEnv {
  /** The PATH variable's value. */
  pathVariable: string;
  workspaceFolders: string[];
  /** Restricted Mode: an executable inside the workspace is the workspace's code, so it is not run. */
  workspaceTrusted: boolean;
  extensionPath: string;
  homeDir: string;
  platform: NodeJS.Platform;
  /** Where the extension installs servers, one directory per version (serverInstall.ts); none: undefined. */
  installRoot: string | undefined;
  isExecutable(file: string): boolean;
  isFile(file: string): boolean;
  /** The names in a directory; none when it does not exist. */
  listDirectory(dir: string): string[];
}

/** Written into an installed server's directory once its check passed: a directory without it is half-installed. */
export const INSTALLED_MARKER = 'llama-lsp-installed';

/** `1.2.10` after `1.2.9`; a pre-release (`0.2.0rc1`, `0.2.0.dev1`) before its release. Negative: a is older. */
export function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const m = /^(\d+(?:\.\d+)*)(.*)$/.exec(v.trim()) ?? [v, '0', v];
    return { release: m[1].split('.').map(Number), rest: m[2] };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < Math.max(x.release.length, y.release.length); i++) {
    const d = (x.release[i] ?? 0) - (y.release[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  if (x.rest === y.rest) return 0;
  if (x.rest === '') return 1;
  if (y.rest === '') return -1;
  return x.rest < y.rest ? -1 : 1;
}

/** The server installed in `root/<version>`: its executable in the version's virtualenv. */
export function installedExecutable(root: string, version: string, platform: NodeJS.Platform = process.platform): string {
  const p = platform === 'win32' ? path.win32 : path.posix;
  return venvExecutable(p.join(root, version), platform);
}

/** The newest complete installed server under `root`, if any. */
export function installedServer(
  root: string,
  env: Pick<ResolveEnv, 'platform' | 'isExecutable' | 'isFile' | 'listDirectory'>,
): ServerCommand | undefined {
  const p = env.platform === 'win32' ? path.win32 : path.posix;
  const versions = env
    .listDirectory(root)
    .filter((v) => /^\d/.test(v) && env.isFile(p.join(root, v, INSTALLED_MARKER)))
    .filter((v) => env.isExecutable(installedExecutable(root, v, env.platform)))
    .sort(compareVersions);
  const version = versions[versions.length - 1];
  if (version === undefined) return undefined;
  return { command: installedExecutable(root, version, env.platform), args: [], source: 'installed', version };
}

function executableName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'llama-lsp.exe' : 'llama-lsp';
}

/** `llama-lsp` in the virtualenv `venv`. */
function venvExecutable(venv: string, platform: NodeJS.Platform): string {
  const p = platform === 'win32' ? path.win32 : path.posix;
  return p.join(venv, platform === 'win32' ? 'Scripts' : 'bin', executableName(platform));
}

function expandHome(file: string, homeDir: string): string {
  return file === '~' || file.startsWith('~/') ? homeDir + file.slice(1) : file;
}

/**
 * The setting wins when it is set: a string is one executable (paths may hold spaces), an array is
 * the executable and its arguments. Otherwise `llama-lsp` on PATH, then the workspace's `.venv`, then
 * the `.venv` of the checkout the extension runs from (`editors/vscode` two levels below the root),
 * then the newest server the extension installed. The workspace's `.venv` only in a trusted workspace.
 * Undefined when nothing is found.
 */
export function resolveServerCommand(setting: unknown, env: ResolveEnv): ServerCommand | undefined {
  if (typeof setting === 'string' && setting.trim() !== '') {
    return { command: expandHome(setting.trim(), env.homeDir), args: [], source: 'setting' };
  }
  if (Array.isArray(setting) && setting.length > 0 && setting.every((s) => typeof s === 'string')) {
    const [command, ...args] = setting as string[];
    if (command.trim() !== '') {
      return { command: expandHome(command.trim(), env.homeDir), args, source: 'setting' };
    }
  }
  const p = env.platform === 'win32' ? path.win32 : path.posix;
  const separator = env.platform === 'win32' ? ';' : ':';
  for (const dir of env.pathVariable.split(separator)) {
    if (dir === '') continue;
    const candidate = p.join(dir, executableName(env.platform));
    if (env.isExecutable(candidate)) return { command: candidate, args: [], source: 'PATH' };
  }
  for (const folder of env.workspaceTrusted ? env.workspaceFolders : []) {
    const candidate = venvExecutable(p.join(folder, '.venv'), env.platform);
    if (env.isExecutable(candidate)) return { command: candidate, args: [], source: 'workspace' };
  }
  const checkout = venvExecutable(p.resolve(env.extensionPath, '..', '..', '.venv'), env.platform);
  if (env.isExecutable(checkout)) return { command: checkout, args: [], source: 'checkout' };
  return env.installRoot !== undefined ? installedServer(env.installRoot, env) : undefined;
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

export function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function listDirectory(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

export function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}
