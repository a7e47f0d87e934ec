/**
 * Installing the bundled server, with real processes: the machine's python3 makes real virtualenvs,
 * pip installs real wheels (small ones built here, without dependencies, so no index is needed).
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { installedServer, isExecutable, isFile, listDirectory } from '../../src/serverCommand';
import {
  bundledWheel,
  findPython,
  InstallError,
  installServer,
  parsePythonProbe,
  removeOtherVersions,
  type BundledWheel,
} from '../../src/serverInstall';

const temps: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llama-lsp-install-test-'));
  temps.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

// pip must not reach an index: the wheels built here have no dependencies.
const offline = { ...process.env, PIP_NO_INDEX: '1' };

/**
 * A real wheel named for `version` whose `llama-lsp --version` prints `printed` (what the real
 * server prints: `llama-lsp <version>`, then the native library's line).
 */
function buildWheel(dir: string, version: string, printed = version): BundledWheel {
  const file = path.join(dir, `llama_lsp-${version}-py3-none-any.whl`);
  const script = `
import base64, hashlib, sys, zipfile
file, version, printed = sys.argv[1:]
info = f"llama_lsp-{version}.dist-info"
files = {
    "fake_llama_lsp/__init__.py": f"def main():\\n    print('llama-lsp {printed}')\\n    print('native library (fake)')\\n",
    f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: llama-lsp\\nVersion: {version}\\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    f"{info}/entry_points.txt": "[console_scripts]\\nllama-lsp = fake_llama_lsp:main\\n",
}
record = []
with zipfile.ZipFile(file, "w") as z:
    for name, text in files.items():
        data = text.encode()
        z.writestr(name, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    z.writestr(f"{info}/RECORD", "\\n".join(record) + "\\n")
`;
  const result = spawnSync('python3', ['-c', script, file, version, printed], { encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  return { file, version };
}

const realFs = { platform: 'linux' as const, isExecutable, isFile, listDirectory };

describe('python probe', () => {
  test('the version and the interpreter; 3.10 and later are new enough', () => {
    assert.deepEqual(parsePythonProbe('3.11.2 /usr/bin/python3\n'), {
      version: '3.11.2',
      executable: '/usr/bin/python3',
      ok: true,
    });
    assert.equal(parsePythonProbe('3.10.0 /opt/py/bin/python')?.ok, true);
    assert.equal(parsePythonProbe('4.0.1 /x/python')?.ok, true);
    assert.equal(parsePythonProbe('3.9.18 /usr/bin/python3.9')?.ok, false);
    assert.equal(parsePythonProbe('2.7.18 /usr/bin/python')?.ok, false);
  });

  test('a path with spaces is kept whole', () => {
    assert.equal(parsePythonProbe('3.12.1 /Users/me/My Envs/bin/python')?.executable, '/Users/me/My Envs/bin/python');
  });

  test('anything else is no answer', () => {
    assert.equal(parsePythonProbe(''), undefined);
    assert.equal(parsePythonProbe('Traceback (most recent call last):'), undefined);
  });
});

describe('finding Python', () => {
  test("the machine's python3 is found", async () => {
    const python = await findPython(['python3']);
    assert.ok(parsePythonProbe(`${python.version} x`)?.ok, python.version);
    assert.ok(path.isAbsolute(python.executable), python.executable);
  });

  test('with no Python on PATH: an error that names what to install, and nothing is created', async () => {
    const emptyPath = tempDir();
    const root = path.join(tempDir(), 'server');
    const wheel = buildWheel(tempDir(), '0.1.0');
    await assert.rejects(
      installServer({ wheel, root, pythons: ['python3', 'python'], env: { PATH: emptyPath } }),
      (error: unknown) => {
        assert.ok(error instanceof InstallError);
        assert.equal(error.step, 'finding Python');
        assert.match(error.message, /Python 3\.10 or later/);
        assert.match(error.message, /python3-venv/);
        assert.match(error.message, /python3: not found; python: not found/);
        return true;
      },
    );
    assert.equal(fs.existsSync(root), false);
    assert.deepEqual(fs.readdirSync(emptyPath), []);
  });

  test('a Python older than 3.10 is passed over, and named', async () => {
    const bin = tempDir();
    fs.writeFileSync(path.join(bin, 'python3'), '#!/bin/sh\necho "3.8.10 /usr/bin/python3.8"\n', { mode: 0o755 });
    await assert.rejects(findPython(['python3'], { env: { PATH: bin } }), /python3: Python 3\.8\.10, too old/);
    const real = process.env.PATH ?? '';
    const found = await findPython(['python3', '/usr/bin/python3'], { env: { PATH: `${bin}:${real}` } });
    assert.ok(found.executable.startsWith('/usr/bin/python3'), found.executable);
  });
});

describe('installing the bundled wheel', () => {
  test('the wheel with the newest version in server/ is the bundled one', () => {
    const ext = tempDir();
    fs.mkdirSync(path.join(ext, 'server'));
    for (const name of ['llama_lsp-0.9.0-py3-none-linux_x86_64.whl', 'llama_lsp-0.10.0-py3-none-linux_x86_64.whl', 'notes.txt']) {
      fs.writeFileSync(path.join(ext, 'server', name), '');
    }
    assert.deepEqual(bundledWheel(ext), {
      file: path.join(ext, 'server', 'llama_lsp-0.10.0-py3-none-linux_x86_64.whl'),
      version: '0.10.0',
    });
    assert.equal(bundledWheel(tempDir()), undefined);
  });

  test('a corrupt wheel: pip fails, and the version directory does not remain', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'llama_lsp-0.3.0-py3-none-linux_x86_64.whl');
    fs.writeFileSync(file, 'this is not a zip file');
    const root = path.join(dir, 'server');
    const steps: string[] = [];
    await assert.rejects(
      installServer({ wheel: { file, version: '0.3.0' }, root, pythons: ['python3'], env: offline, report: (s) => steps.push(s) }),
      (error: unknown) => {
        assert.ok(error instanceof InstallError);
        assert.equal(error.step, 'installing the server with pip');
        assert.match(error.detail, /zip|wheel|invalid/i);
        return true;
      },
    );
    assert.deepEqual([...new Set(steps)], ['finding Python', 'creating the virtualenv', 'installing the server with pip']);
    assert.equal(fs.existsSync(path.join(root, '0.3.0')), false);
    assert.equal(installedServer(root, realFs), undefined);
  });

  test('a server whose --version is not the wheel version: the check fails, nothing remains', async () => {
    const dir = tempDir();
    const wheel = buildWheel(dir, '0.4.0', '0.3.9');
    const root = path.join(dir, 'server');
    await assert.rejects(
      installServer({ wheel, root, pythons: ['python3'], env: offline }),
      /checking llama-lsp --version failed: expected "llama-lsp 0\.4\.0", got "llama-lsp 0\.3\.9"/,
    );
    assert.equal(fs.existsSync(path.join(root, '0.4.0')), false);
  });

  test('a good wheel: installed, checked, found as the installed server; then an update replaces it', async () => {
    const dir = tempDir();
    const root = path.join(dir, 'server');
    const old = await installServer({ wheel: buildWheel(dir, '0.1.0'), root, pythons: ['python3'], env: offline });
    assert.equal(old, path.join(root, '0.1.0', 'bin', 'llama-lsp'));
    assert.deepEqual(installedServer(root, realFs), { command: old, args: [], source: 'installed', version: '0.1.0' });

    const lines: string[] = [];
    const updated = await installServer({
      wheel: buildWheel(dir, '0.2.0'),
      root,
      pythons: ['python3'],
      env: offline,
      log: (line) => lines.push(line),
    });
    assert.ok(lines.some((l) => /Successfully installed llama-lsp-0\.2\.0/.test(l)), lines.join('\n'));
    // Both are there until the old one's server has stopped; the newest is the one found.
    assert.equal(installedServer(root, realFs)?.version, '0.2.0');
    assert.ok(fs.existsSync(old));
    removeOtherVersions(root, '0.2.0');
    assert.deepEqual(fs.readdirSync(root), ['0.2.0']);
    assert.equal(installedServer(root, realFs)?.command, updated);
    const version = spawnSync(updated, ['--version'], { encoding: 'utf8' });
    assert.equal(version.stdout.split('\n')[0], 'llama-lsp 0.2.0');
  });
});
