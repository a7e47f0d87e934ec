import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import * as vscode from 'vscode';
import { SERVER_DEFAULTS, UNTRUSTED_VALUES } from '../../src/serverSettings';
import {
  TRUSTED_ONLY,
  completionEnabled,
  configurationForServer,
  forTrust,
  initializationOptions,
  readSettings,
} from '../../src/settings';
import { stub } from '../stub/vscode';

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));

describe('settings', () => {
  beforeEach(() => stub.reset());

  test('defaults when nothing is set', () => {
    const settings = readSettings(vscode.workspace.getConfiguration('llamaLsp'));
    assert.deepEqual(settings, { serverCommand: '', ...SERVER_DEFAULTS });
    assert.equal(settings.model, 'qwen2.5-coder-1.5b');
    assert.equal(settings.threads, 0);
    assert.equal(settings.cacheDir, null); // the server's own default: VS Code sends none
    assert.equal(settings.verifyCommand, 'auto');
    assert.equal(settings.warm, true);
    assert.equal(settings.backend, 'local');
    assert.equal(settings.completion, true);
  });

  test("initializationOptions carry the server's settings, not the extension's own", () => {
    const set = {
      model: 'qwen2.5-coder-0.5b',
      contextSize: 4096,
      threads: 2,
      slots: 2,
      cacheDir: '/tmp/llama-lsp-cache',
      maxToolSteps: 3,
      maxTokens: 512,
      temperature: 0.5,
      verifyCommand: 'python -m pytest -q',
      verifyTimeout: 30,
      maxVerifyAttempts: 2,
      warm: false,
      backend: { url: 'http://gpu-box:8080/v1', model: 'qwen2.5-coder-7b', apiKeyEnv: 'LLAMA_API_KEY' },
      completion: false,
      completionTimeBudgetMs: 250,
    };
    stub.config = { 'llamaLsp.serverCommand': ['x'] };
    for (const [key, value] of Object.entries(set)) stub.config[`llamaLsp.${key}`] = value;
    const options = initializationOptions(readSettings(vscode.workspace.getConfiguration('llamaLsp')), true);
    // A setting this test does not set goes with its default.
    assert.deepEqual(options, { ...SERVER_DEFAULTS, ...set });
  });

  test("completion is on unless turned off, under the server's wire names, trusted or not", () => {
    assert.equal(SERVER_DEFAULTS.completion, true);
    const config = vscode.workspace.getConfiguration('llamaLsp');
    assert.equal(completionEnabled(config), true);
    const on = initializationOptions(readSettings(config), false);
    assert.equal(on.completion, true);
    assert.equal(on.completionTimeBudgetMs, 1000);
    stub.config = { 'llamaLsp.completion': false, 'llamaLsp.completionTimeBudgetMs': 5000 };
    assert.equal(completionEnabled(config), false);
    const off = initializationOptions(readSettings(config), false);
    assert.equal(off.completion, false);
    assert.equal(off.completionTimeBudgetMs, 5000);
    // The section goes to the server as it is (synchronize.configurationSection): the setting's key is
    // the server's name for it, and the trust rule leaves both alone.
    const section = { completion: false, completionTimeBudgetMs: 5000 };
    assert.deepEqual(configurationForServer('llamaLsp', section, false), {
      ...section,
      verifyCommand: '',
      mcpWorkspaceServers: false,
    });
    assert.equal(configurationForServer('llamaLsp.completion', false, false), false);
  });

  test('warming is on unless turned off, and goes to the server either way', () => {
    assert.equal(SERVER_DEFAULTS.warm, true);
    const on = initializationOptions(readSettings(vscode.workspace.getConfiguration('llamaLsp')), false);
    assert.equal(on.warm, true);
    stub.config = { 'llamaLsp.warm': false };
    const off = initializationOptions(readSettings(vscode.workspace.getConfiguration('llamaLsp')), false);
    assert.equal(off.warm, false);
    // Not a setting that runs workspace code: an untrusted workspace's server gets it too.
    assert.equal((configurationForServer('llamaLsp', { warm: false }, false) as { warm: boolean }).warm, false);
    assert.equal(configurationForServer('llamaLsp.warm', false, false), false);
  });

  test('an untrusted workspace turns checks off: verifyCommand "" whatever is set, and whatever the default', () => {
    assert.equal(SERVER_DEFAULTS.verifyCommand, 'auto');
    for (const config of [{ 'llamaLsp.verifyCommand': 'python -m pytest -q' }, {}]) {
      stub.config = config;
      const options = initializationOptions(readSettings(vscode.workspace.getConfiguration('llamaLsp')), false);
      assert.equal(options.verifyCommand, '');
      assert.ok(!('verifySandbox' in options));
      assert.equal(options.verifyTimeout, SERVER_DEFAULTS.verifyTimeout);
    }
    // The same in answers to workspace/configuration, by section or by key.
    const section = { verifyCommand: 'auto', verifySandbox: 'none', warm: true };
    assert.deepEqual(configurationForServer('llamaLsp', section, false), {
      verifyCommand: '',
      mcpWorkspaceServers: false,
      warm: true,
    });
    assert.equal(configurationForServer('llamaLsp.verifyCommand', 'auto', false), '');
    assert.equal(configurationForServer('llamaLsp.verifySandbox', 'none', false), null);
    assert.equal(configurationForServer('llamaLsp.verifyCommand', 'auto', true), 'auto');
  });

  test("a user's backend reaches an untrusted workspace's server: Restricted Mode drops only the workspace's", () => {
    const backend = { url: 'http://gpu-box:8080/v1', model: 'm' };
    stub.config = { 'llamaLsp.backend': backend };
    const options = initializationOptions(readSettings(vscode.workspace.getConfiguration('llamaLsp')), false);
    assert.deepEqual(options.backend, backend);
    assert.deepEqual(configurationForServer('llamaLsp.backend', backend, false), backend);
  });

  test("the manifest's defaults are the code's defaults", () => {
    const properties = manifest.contributes.configuration.properties;
    assert.equal(properties['llamaLsp.model'].default, SERVER_DEFAULTS.model);
    assert.equal(properties['llamaLsp.contextSize'].default, SERVER_DEFAULTS.contextSize);
    assert.equal(properties['llamaLsp.threads'].default, 0);
    assert.equal(properties['llamaLsp.serverCommand'].default, '');
    assert.ok(properties['llamaLsp.trace.server']);
    assert.equal(properties['llamaLsp.verifyCommand'].default, 'auto');
    assert.equal(properties['llamaLsp.verifyTimeout'].default, SERVER_DEFAULTS.verifyTimeout);
    assert.equal(properties['llamaLsp.maxVerifyAttempts'].default, SERVER_DEFAULTS.maxVerifyAttempts);
    assert.equal(properties['llamaLsp.warm'].type, 'boolean');
    assert.equal(properties['llamaLsp.warm'].default, SERVER_DEFAULTS.warm);
    assert.match(properties['llamaLsp.warm'].markdownDescription, /background/);
    assert.equal(properties['llamaLsp.backend'].default, SERVER_DEFAULTS.backend);
    assert.deepEqual(properties['llamaLsp.backend'].type, ['string', 'object']);
    assert.equal(properties['llamaLsp.completion'].type, 'boolean');
    assert.equal(properties['llamaLsp.completion'].default, SERVER_DEFAULTS.completion);
    assert.match(properties['llamaLsp.completion'].markdownDescription, /Tab/);
    assert.equal(properties['llamaLsp.completionTimeBudgetMs'].default, SERVER_DEFAULTS.completionTimeBudgetMs);
  });

  test("every server setting is contributed with the server's default", () => {
    const properties = manifest.contributes.configuration.properties;
    for (const [key, value] of Object.entries(SERVER_DEFAULTS)) {
      assert.deepEqual(properties[`llamaLsp.${key}`]?.default, value, key);
    }
  });

  test('initializationOptions carry every server setting, and untrusted, all but TRUSTED_ONLY or their UNTRUSTED_VALUES', () => {
    assert.deepEqual(TRUSTED_ONLY, ['verifyCommand', 'testDiagnostics', 'verifySandbox', 'mcpServers', 'mcpWorkspaceServers']);
    assert.deepEqual(UNTRUSTED_VALUES, { verifyCommand: '', mcpWorkspaceServers: false });
    const settings = readSettings(vscode.workspace.getConfiguration('llamaLsp'));
    assert.deepEqual(Object.keys(initializationOptions(settings, true)).sort(), Object.keys(SERVER_DEFAULTS).sort());
    const untrusted = Object.keys(initializationOptions(settings, false)).sort();
    const trustedOnly: readonly string[] = TRUSTED_ONLY;
    const sent = Object.keys(SERVER_DEFAULTS).filter((key) => !trustedOnly.includes(key) || key in UNTRUSTED_VALUES);
    assert.deepEqual(untrusted, sent.sort());
  });

  test('the backend setting says where the key comes from, with an example', () => {
    const backend = manifest.contributes.configuration.properties['llamaLsp.backend'];
    assert.deepEqual(backend.required, ['url']);
    assert.deepEqual(Object.keys(backend.properties).sort(), ['apiKeyEnv', 'model', 'timeout', 'url']);
    assert.match(backend.markdownDescription, /apiKeyEnv/);
    assert.match(backend.markdownDescription, /never a setting/);
    assert.match(backend.markdownDescription, /"url": "http:\/\/[^"]+\/v1"/);
  });

  test("the verify and completion settings have the server's bounds (lsp_server/lsp/settings.py)", () => {
    const properties = manifest.contributes.configuration.properties;
    const bounds = (key: string) => [properties[key].type, properties[key].minimum, properties[key].maximum];
    assert.deepEqual(bounds('llamaLsp.verifyTimeout'), ['number', 1, 3600]);
    assert.deepEqual(bounds('llamaLsp.maxVerifyAttempts'), ['integer', 1, 10]);
    assert.equal(properties['llamaLsp.verifyCommand'].type, 'string');
    assert.deepEqual(bounds('llamaLsp.completionTimeBudgetMs'), ['integer', 50, 60000]);
    // Its description must say what it does: run code the model wrote.
    assert.match(properties['llamaLsp.verifyCommand'].markdownDescription, /code the model wrote/);
    assert.match(properties['llamaLsp.verifyCommand'].markdownDescription, /\{file\}/);
  });
});

describe('workspace trust', () => {
  const section = { model: 'm', verifyCommand: 'python -m pytest -q', verifyTimeout: 60 };

  test('trusted: the settings are kept as they are', () => {
    assert.equal(forTrust(section, true), section);
    assert.equal(configurationForServer('llamaLsp', section, true), section);
    assert.equal(configurationForServer('llamaLsp.verifyCommand', 'pytest', true), 'pytest');
  });

  test('untrusted: verifyCommand is "" (no checks), the rest kept, the original untouched', () => {
    assert.deepEqual(forTrust(section, false), { model: 'm', verifyCommand: '', verifyTimeout: 60, mcpWorkspaceServers: false });
    assert.equal(section.verifyCommand, 'python -m pytest -q');
  });

  test('untrusted: no MCP server starts: mcpServers is withheld and mcpWorkspaceServers is false', () => {
    const mcp = { mcpServers: { tracker: { command: 'python3', args: ['server.py'] } }, mcpWorkspaceServers: true };
    assert.deepEqual(forTrust(mcp, false), { mcpWorkspaceServers: false, verifyCommand: '' });
    assert.equal(configurationForServer('llamaLsp.mcpServers', mcp.mcpServers, false), null);
    assert.equal(configurationForServer('llamaLsp.mcpWorkspaceServers', true, false), false);
    assert.deepEqual(forTrust(mcp, true), mcp);
  });

  test('untrusted: every shape of workspace/configuration answer turns it off', () => {
    const off = { model: 'm', verifyCommand: '', verifyTimeout: 60, mcpWorkspaceServers: false };
    assert.deepEqual(configurationForServer('llamaLsp', section, false), off);
    assert.equal(configurationForServer('llamaLsp.verifyCommand', 'pytest', false), '');
    assert.deepEqual(configurationForServer(null, { editor: { tabSize: 4 }, llamaLsp: section }, false), {
      editor: { tabSize: 4 },
      llamaLsp: off,
    });
    assert.deepEqual(configurationForServer(undefined, { llamaLsp: section }, false), { llamaLsp: off });
    // Other sections and settings pass through.
    assert.equal(configurationForServer('llamaLsp.model', 'm', false), 'm');
    assert.deepEqual(configurationForServer('editor', { tabSize: 4 }, false), { tabSize: 4 });
    assert.equal(configurationForServer('llamaLsp', null, false), null);
  });

  test('the manifest limits Restricted Mode: the settings that run commands are restricted', () => {
    const trust = manifest.capabilities.untrustedWorkspaces;
    assert.equal(trust.supported, 'limited');
    assert.ok(trust.description.length > 0);
    assert.ok(trust.restrictedConfigurations.includes('llamaLsp.verifyCommand'));
    // A workspace must not turn the check's sandbox off.
    assert.ok(trust.restrictedConfigurations.includes('llamaLsp.verifySandbox'));
    assert.ok(trust.restrictedConfigurations.includes('llamaLsp.serverCommand'));
    // A workspace's backend could send the code to a server of its choosing.
    assert.ok(trust.restrictedConfigurations.includes('llamaLsp.backend'));
  });
});

describe('manifest contract', () => {
  test('identity, engine and bundle', () => {
    assert.equal(`${manifest.publisher}.${manifest.name}`, 'llama-lsp.llama-lsp');
    assert.equal(manifest.displayName, 'Llama LSP');
    assert.equal(manifest.engines.vscode, '^1.138.0');
    assert.equal(manifest.devDependencies['@types/vscode'], '1.138.0');
    assert.equal(manifest.main, './dist/extension.js');
  });

  test('the chat view lives in the Llama container', () => {
    assert.deepEqual(
      manifest.contributes.viewsContainers.activitybar.map((c: { id: string; title: string }) => [c.id, c.title]),
      [['llamaLsp', 'Llama']],
    );
    assert.deepEqual(manifest.contributes.views.llamaLsp, [{ type: 'webview', id: 'llamaLsp.chat', name: 'Chat' }]);
  });

  test('every command is contributed, titled "Llama: …"', () => {
    const ids = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual(ids, [
      'llamaLsp.askSelection',
      'llamaLsp.dismissNextEdit',
      'llamaLsp.document',
      'llamaLsp.explain',
      'llamaLsp.fix',
      'llamaLsp.goToOrAcceptNextEdit',
      'llamaLsp.installServer',
      'llamaLsp.newConversation',
      'llamaLsp.refactor',
      'llamaLsp.restartServer',
      'llamaLsp.searchCodebase',
      'llamaLsp.showAnswer',
      'llamaLsp.showStats',
      'llamaLsp.stop',
      'llamaLsp.writeTests',
    ]);
    for (const command of manifest.contributes.commands) assert.match(command.title, /^Llama: /);
  });

  test('the package is for linux-x64 and carries the server wheel that make vsix puts in server/', () => {
    assert.match(manifest.scripts.package, /--target linux-x64\b/);
    assert.match(manifest.scripts.package, /-o llama-lsp\.vsix\b/);
    const ignore = fs.readFileSync(path.join(__dirname, '../../../.vscodeignore'), 'utf8').split('\n');
    assert.ok(ignore.includes('!server/*.whl'), ignore.join('\n'));
  });
});
