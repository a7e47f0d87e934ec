/**
 * Which server command the extension runs: the setting, else what the bootstrap finds (the real one,
 * run by the machine's python3, on folders made here). Where the bootstrap looks, and in what order, is
 * its own test's (tests/test_bootstrap.py); here, that the extension asks it right and reads its answer.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, test } from 'node:test';
import {
  BOOTSTRAP,
  bootstrapPath,
  configuredCommand,
  installCommand,
  locateServer,
  type LocateOptions,
} from '../../src/serverCommand';

/** The one source of the bootstrap, in the Neovim plugin (out/test/unit is three levels below editors/vscode). */
const SOURCE_BOOTSTRAP = path.resolve(__dirname, '..', '..', '..', '..', 'nvim', 'python', BOOTSTRAP);

const temps: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llama-lsp-command-test-'));
  temps.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** An extension as the vsix installs it: the bootstrap in server/. */
function fakeExtension(): string {
  const ext = path.join(tempDir(), 'llama-lsp.llama-lsp-0.1.0');
  fs.mkdirSync(path.join(ext, 'server'), { recursive: true });
  fs.copyFileSync(SOURCE_BOOTSTRAP, path.join(ext, 'server', BOOTSTRAP));
  return ext;
}

function executable(file: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '#!/bin/sh\n', { mode: 0o755 });
  return file;
}

/** A server the bootstrap installed: the executable and the marker of a finished install. */
function installed(root: string, version: string): string {
  fs.mkdirSync(path.join(root, version), { recursive: true });
  fs.writeFileSync(path.join(root, version, 'llama-lsp-installed'), `llama-lsp ${version}\n`);
  return executable(path.join(root, version, 'bin', 'llama-lsp'));
}

// No llama-lsp on this PATH; python3 is there.
const SYSTEM_PATH = '/usr/bin:/bin';

function options(ext: string, overrides: Partial<LocateOptions> = {}): LocateOptions {
  return {
    extensionPath: ext,
    installRoot: path.join(path.dirname(ext), 'storage', 'server'),
    trustedFolders: [],
    homeDir: '/home/me',
    bootstrap: { pythons: ['python3', 'python'], env: { PATH: SYSTEM_PATH } },
    ...overrides,
  };
}

describe('the configured command', () => {
  test('a string setting is one executable, with ~ expanded', () => {
    assert.deepEqual(configuredCommand('~/bin/llama lsp', '/home/me'), {
      command: '/home/me/bin/llama lsp',
      args: [],
      source: 'setting',
    });
  });

  test('an array setting is the executable and its arguments', () => {
    assert.deepEqual(configuredCommand(['python3', '-m', 'lsp_server'], '/home/me'), {
      command: 'python3',
      args: ['-m', 'lsp_server'],
      source: 'setting',
    });
  });

  test('empty settings mean: look for it', () => {
    for (const empty of ['', '  ', [], [''], undefined, 3]) assert.equal(configuredCommand(empty, '/home/me'), undefined);
  });

  test('the setting wins without running the bootstrap (no Python needed)', async () => {
    const ext = fakeExtension();
    installed(path.join(path.dirname(ext), 'storage', 'server'), '0.1.0');
    const noPython = options(ext, { bootstrap: { pythons: [], env: { PATH: tempDir() } } });
    assert.deepEqual(await locateServer('/opt/ll', noPython), { command: { command: '/opt/ll', args: [], source: 'setting' } });
  });
});

describe('the bootstrap looks for the server', () => {
  test('in server/ of the vsix; in a checkout without one, the Neovim plugin’s', () => {
    const ext = fakeExtension();
    assert.equal(bootstrapPath(ext), path.join(ext, 'server', BOOTSTRAP));
    assert.equal(bootstrapPath(path.resolve(SOURCE_BOOTSTRAP, '..', '..', '..', 'vscode-without-server')), SOURCE_BOOTSTRAP);
    assert.equal(bootstrapPath(tempDir()), undefined);
  });

  test('nothing found: no command, and what an install would install', async () => {
    const ext = fakeExtension();
    assert.deepEqual(await locateServer('', options(ext)), { command: undefined, installable: undefined });
    fs.writeFileSync(path.join(ext, 'server', 'llama_lsp-0.10.0-py3-none-linux_x86_64.whl'), '');
    fs.writeFileSync(path.join(ext, 'server', 'llama_lsp-0.9.0-py3-none-linux_x86_64.whl'), '');
    assert.deepEqual(await locateServer('', options(ext)), { command: undefined, installable: '0.10.0' });
  });

  test('the newest installed server, and the update the vsix carries', async () => {
    const ext = fakeExtension();
    const root = path.join(tempDir(), 'server');
    installed(root, '0.1.0');
    const newest = installed(root, '0.2.0');
    fs.mkdirSync(path.join(root, '0.3.0', 'bin'), { recursive: true }); // half-installed: no marker
    executable(path.join(root, '0.3.0', 'bin', 'llama-lsp'));
    fs.writeFileSync(path.join(ext, 'server', 'llama_lsp-0.4.0-py3-none-linux_x86_64.whl'), '');
    const found = await locateServer('', options(ext, { installRoot: root }));
    assert.deepEqual(found.command, { command: newest, args: [], source: 'installed', version: '0.2.0', update: '0.4.0' });
  });

  test('PATH, then the trusted folders’ .venv, before an installed server', async () => {
    const ext = fakeExtension();
    const root = path.join(tempDir(), 'server');
    installed(root, '0.1.0');
    const folder = tempDir();
    const venv = executable(path.join(folder, '.venv', 'bin', 'llama-lsp'));
    assert.equal((await locateServer('', options(ext, { installRoot: root })))?.command?.source, 'installed');
    const trusted = await locateServer('', options(ext, { installRoot: root, trustedFolders: [folder] }));
    assert.deepEqual(trusted.command, { command: venv, args: [], source: 'workspace', version: undefined, update: undefined });
    const bin = tempDir();
    const onPath = executable(path.join(bin, 'llama-lsp'));
    const env = { PATH: `${bin}:${SYSTEM_PATH}` };
    const first = await locateServer('', options(ext, { installRoot: root, trustedFolders: [folder], bootstrap: { pythons: ['python3'], env } }));
    assert.deepEqual([first.command?.command, first.command?.source], [onPath, 'PATH']);
  });

  test('no Python: the reason, naming what to install', async () => {
    const found = await locateServer('', options(fakeExtension(), { bootstrap: { pythons: ['python3', 'python'], env: { PATH: tempDir() } } }));
    assert.equal(found.command, undefined);
    assert.match(found.problem ?? '', /^no Python 3\.10 or later with venv \(python3: not found; python: not found\)\. Install Python 3\.10 or later with venv, e\.g\. sudo apt install python3 python3-venv$/);
  });

  test('python3 that cannot: the Python extension’s interpreter, asked for only then', async () => {
    let asked = 0;
    const laterPythons = async () => {
      asked += 1;
      return ['/usr/bin/python3'];
    };
    const ext = fakeExtension();
    await locateServer('', options(ext, { bootstrap: { pythons: ['python3'], laterPythons, env: { PATH: SYSTEM_PATH } } }));
    assert.equal(asked, 0);
    const found = await locateServer('', options(ext, { bootstrap: { pythons: ['python3'], laterPythons, env: { PATH: tempDir() } } }));
    assert.equal(asked, 1);
    assert.deepEqual(found, { command: undefined, installable: undefined });
  });
});

describe('install command', () => {
  test('llama-lsp next to the server executable', () => {
    const server = { command: '/repo/.venv/bin/llama-lsp', args: [], source: 'checkout' as const };
    assert.deepEqual(
      installCommand(server, 'qwen2.5-coder-1.5b', (f) => f === '/repo/.venv/bin/llama-lsp', 'linux'),
      {
        command: '/repo/.venv/bin/llama-lsp',
        args: ['model', 'install', 'qwen2.5-coder-1.5b'],
      },
    );
  });

  test('otherwise the server command itself, without serve or --stdio', () => {
    const server = { command: 'python3', args: ['-m', 'lsp_server', 'serve', '--stdio'], source: 'setting' as const };
    assert.deepEqual(
      installCommand(server, 'm', () => false, 'linux'),
      {
        command: 'python3',
        args: ['-m', 'lsp_server', 'model', 'install', 'm'],
      },
    );
  });
});
