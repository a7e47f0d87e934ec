import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  compareVersions,
  installCommand,
  resolveServerCommand,
  type ResolveEnv,
} from '../../src/serverCommand';

/** The files in `existing` exist (all of them executable), and the directories above them. */
function env(existing: string[], overrides: Partial<ResolveEnv> = {}): ResolveEnv {
  const files = new Set(existing);
  return {
    pathVariable: '/usr/local/bin:/usr/bin',
    workspaceFolders: ['/work/project'],
    workspaceTrusted: true,
    extensionPath: '/repo/editors/vscode',
    homeDir: '/home/me',
    platform: 'linux',
    installRoot: '/storage/server',
    isExecutable: (file) => files.has(file),
    isFile: (file) => files.has(file),
    listDirectory: (dir) => [
      ...new Set(existing.filter((f) => f.startsWith(`${dir}/`)).map((f) => f.slice(dir.length + 1).split('/')[0])),
    ],
    ...overrides,
  };
}

/** A complete install of `version` under /storage/server: its executable and its marker. */
function installed(version: string): string[] {
  return [`/storage/server/${version}/bin/llama-lsp`, `/storage/server/${version}/llama-lsp-installed`];
}

describe('server command resolution', () => {
  test('a string setting is one executable, with ~ expanded', () => {
    assert.deepEqual(resolveServerCommand('~/bin/llama lsp', env([])), {
      command: '/home/me/bin/llama lsp',
      args: [],
      source: 'setting',
    });
  });

  test('an array setting is the executable and its arguments', () => {
    assert.deepEqual(resolveServerCommand(['python3', '-m', 'lsp_server'], env([])), {
      command: 'python3',
      args: ['-m', 'lsp_server'],
      source: 'setting',
    });
  });

  test('empty settings mean: PATH first', () => {
    const found = env(['/usr/bin/llama-lsp', '/work/project/.venv/bin/llama-lsp']);
    assert.deepEqual(resolveServerCommand('', found), { command: '/usr/bin/llama-lsp', args: [], source: 'PATH' });
    assert.deepEqual(resolveServerCommand([], found)?.source, 'PATH');
    assert.deepEqual(resolveServerCommand('  ', found)?.source, 'PATH');
  });

  test('then the workspace folder .venv', () => {
    assert.deepEqual(
      resolveServerCommand('', env(['/work/project/.venv/bin/llama-lsp', '/repo/.venv/bin/llama-lsp'])),
      {
        command: '/work/project/.venv/bin/llama-lsp',
        args: [],
        source: 'workspace',
      },
    );
  });

  test("an untrusted workspace's .venv is never run", () => {
    const untrusted = env(['/work/project/.venv/bin/llama-lsp', '/repo/.venv/bin/llama-lsp'], {
      workspaceTrusted: false,
    });
    assert.equal(resolveServerCommand('', untrusted)?.source, 'checkout');
    const onlyWorkspace = env(['/work/project/.venv/bin/llama-lsp'], { workspaceTrusted: false });
    assert.equal(resolveServerCommand('', onlyWorkspace), undefined);
  });

  test('then the .venv of the checkout the extension runs from', () => {
    assert.deepEqual(resolveServerCommand(undefined, env(['/repo/.venv/bin/llama-lsp'])), {
      command: '/repo/.venv/bin/llama-lsp',
      args: [],
      source: 'checkout',
    });
  });

  test('then the newest server the extension installed', () => {
    const found = env([...installed('0.1.0'), ...installed('0.10.0'), ...installed('0.9.0')]);
    assert.deepEqual(resolveServerCommand('', found), {
      command: '/storage/server/0.10.0/bin/llama-lsp',
      args: [],
      source: 'installed',
      version: '0.10.0',
    });
  });

  test('every other source goes before the installed server', () => {
    assert.equal(resolveServerCommand('', env([...installed('0.1.0'), '/repo/.venv/bin/llama-lsp']))?.source, 'checkout');
    assert.equal(resolveServerCommand('', env([...installed('0.1.0'), '/usr/bin/llama-lsp']))?.source, 'PATH');
    assert.equal(resolveServerCommand('/opt/ll', env(installed('0.1.0')))?.source, 'setting');
  });

  test('a half-installed server (no marker: its check never passed) is not used', () => {
    const half = env(['/storage/server/0.2.0/bin/llama-lsp', ...installed('0.1.0')]);
    assert.equal(resolveServerCommand('', half)?.version, '0.1.0');
    assert.equal(resolveServerCommand('', env(['/storage/server/0.2.0/bin/llama-lsp'])), undefined);
  });

  test('no install root: no installed server', () => {
    assert.equal(resolveServerCommand('', env(installed('0.1.0'), { installRoot: undefined })), undefined);
  });

  test('nothing found is undefined', () => {
    assert.equal(resolveServerCommand('', env([])), undefined);
  });

  test('Windows looks for llama-lsp.exe and .venv\\Scripts', () => {
    const windows = env(['C:\\w\\.venv\\Scripts\\llama-lsp.exe'], {
      platform: 'win32',
      pathVariable: 'C:\\bin;C:\\tools',
      workspaceFolders: ['C:\\w'],
    });
    assert.equal(resolveServerCommand('', windows)?.command, 'C:\\w\\.venv\\Scripts\\llama-lsp.exe');
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

describe('version order', () => {
  test('numeric parts compare as numbers', () => {
    assert.ok(compareVersions('0.1.0', '0.2.0') < 0);
    assert.ok(compareVersions('0.10.0', '0.9.1') > 0);
    assert.ok(compareVersions('1.2.10', '1.2.9') > 0);
    assert.equal(compareVersions('0.1.0', '0.1.0'), 0);
    assert.equal(compareVersions('0.1', '0.1.0'), 0);
  });

  test('a pre-release comes before its release', () => {
    assert.ok(compareVersions('0.2.0rc1', '0.2.0') < 0);
    assert.ok(compareVersions('0.2.0', '0.2.0.dev1') > 0);
    assert.ok(compareVersions('0.2.0rc1', '0.1.9') > 0);
  });

  test('sorting keeps the newest last', () => {
    assert.deepEqual(['0.10.0', '0.2.0', '0.9.0'].sort(compareVersions), ['0.2.0', '0.9.0', '0.10.0']);
  });
});

