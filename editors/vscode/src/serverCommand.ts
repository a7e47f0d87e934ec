/**
 * Which command starts the server, and which installs a model. The rules take the file system as an
 * `isExecutable` function, so that tests decide what exists.
 */

import * as fs from 'node:fs';
import * as path from 'node:path';

export interface ServerCommand {
  command: string;
  args: string[];
  /** Where it was found, for the log and the status tooltip. */
  source: 'setting' | 'PATH' | 'workspace' | 'checkout';
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
  isExecutable(file: string): boolean;
}

function executableName(platform: NodeJS.Platform): string {
  return platform === 'win32' ? 'llama-lsp.exe' : 'llama-lsp';
}

function venvExecutable(root: string, platform: NodeJS.Platform): string {
  const p = platform === 'win32' ? path.win32 : path.posix;
  return p.join(root, '.venv', platform === 'win32' ? 'Scripts' : 'bin', executableName(platform));
}

function expandHome(file: string, homeDir: string): string {
  return file === '~' || file.startsWith('~/') ? homeDir + file.slice(1) : file;
}

/**
 * The setting wins when it is set: a string is one executable (paths may hold spaces), an array is
 * the executable and its arguments. Otherwise `llama-lsp` on PATH, then the workspace's `.venv`, then
 * the `.venv` of the checkout the extension runs from (`editors/vscode` two levels below the root).
 * The workspace's `.venv` only in a trusted workspace. Undefined when nothing is found.
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
    const candidate = venvExecutable(folder, env.platform);
    if (env.isExecutable(candidate)) return { command: candidate, args: [], source: 'workspace' };
  }
  const checkout = venvExecutable(p.resolve(env.extensionPath, '..', '..'), env.platform);
  if (env.isExecutable(checkout)) return { command: checkout, args: [], source: 'checkout' };
  return undefined;
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
