import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { installCommand, resolveServerCommand, type ResolveEnv } from '../../src/serverCommand';

function env(existing: string[], overrides: Partial<ResolveEnv> = {}): ResolveEnv {
  const files = new Set(existing);
  return {
    pathVariable: '/usr/local/bin:/usr/bin',
    workspaceFolders: ['/work/project'],
    workspaceTrusted: true,
    extensionPath: '/repo/editors/vscode',
    homeDir: '/home/me',
    platform: 'linux',
    isExecutable: (file) => files.has(file),
    ...overrides,
  };
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
