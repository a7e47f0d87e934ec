import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import * as vscode from 'vscode';
import { DEFAULT_CONTEXT_SIZE, DEFAULT_MODEL, initializationOptions, readSettings } from '../../src/settings';
import { stub } from '../stub/vscode';

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));

describe('settings', () => {
  beforeEach(() => stub.reset());

  test('defaults when nothing is set', () => {
    const settings = readSettings(vscode.workspace.getConfiguration('llamaLsp'));
    assert.deepEqual(settings, {
      serverCommand: '',
      model: DEFAULT_MODEL,
      contextSize: DEFAULT_CONTEXT_SIZE,
      threads: 0,
    });
  });

  test('initializationOptions carry exactly model, contextSize and threads', () => {
    stub.config = {
      'llamaLsp.model': 'qwen2.5-coder-0.5b',
      'llamaLsp.contextSize': 4096,
      'llamaLsp.threads': 2,
      'llamaLsp.serverCommand': ['x'],
    };
    const options = initializationOptions(readSettings(vscode.workspace.getConfiguration('llamaLsp')));
    assert.deepEqual(options, { model: 'qwen2.5-coder-0.5b', contextSize: 4096, threads: 2 });
  });

  test("the manifest's defaults are the code's defaults", () => {
    const properties = manifest.contributes.configuration.properties;
    assert.equal(properties['llamaLsp.model'].default, DEFAULT_MODEL);
    assert.equal(properties['llamaLsp.contextSize'].default, DEFAULT_CONTEXT_SIZE);
    assert.equal(properties['llamaLsp.threads'].default, 0);
    assert.equal(properties['llamaLsp.serverCommand'].default, '');
    assert.ok(properties['llamaLsp.trace.server']);
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
      'llamaLsp.document',
      'llamaLsp.explain',
      'llamaLsp.fix',
      'llamaLsp.newConversation',
      'llamaLsp.refactor',
      'llamaLsp.restartServer',
      'llamaLsp.showAnswer',
      'llamaLsp.showStats',
      'llamaLsp.stop',
      'llamaLsp.writeTests',
    ]);
    for (const command of manifest.contributes.commands) assert.match(command.title, /^Llama: /);
  });
});
