/** Notifier.report: how a code action's outcome and its check reach the user, against the vscode stub. */

import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import type * as vscode from 'vscode';
import { Notifier } from '../../src/notifications';
import type { LlamaServer } from '../../src/server';
import { stub } from '../stub/vscode';

function fakeOutput() {
  const log: string[][] = [];
  let shown = 0;
  const channel = {
    info: (text: string) => log.push(['info', text]),
    warn: (text: string) => log.push(['warn', text]),
    show: () => (shown += 1),
  };
  return { channel: channel as unknown as vscode.LogOutputChannel, log, shown: () => shown };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('code action outcome', () => {
  beforeEach(() => stub.reset());

  test('a failed check is a warning offering its output, which is also logged', async () => {
    const output = fakeOutput();
    const notifier = new Notifier({} as LlamaServer, output.channel);
    stub.choice = 'Show output';
    notifier.report({ level: 'warning', text: 'Llama: Fix applied — not verified', output: 'E   assert 1 == 2' });
    await tick();
    assert.deepEqual(stub.messages, [['warning', 'Llama: Fix applied — not verified', 'Show output']]);
    assert.deepEqual(output.log, [['warn', 'Llama: Fix applied — not verified\nE   assert 1 == 2']]);
    assert.equal(output.shown(), 1);
    assert.deepEqual(stub.statusMessages, []);
  });

  test('a warning without output offers nothing', async () => {
    const notifier = new Notifier({} as LlamaServer, fakeOutput().channel);
    notifier.report({ level: 'warning', text: 'Llama: Fix: the edit was not applied (x).' });
    await tick();
    assert.deepEqual(stub.messages, [['warning', 'Llama: Fix: the edit was not applied (x).']]);
  });

  test('a passed or unchecked edit is a status-bar message, not a notification; logged', () => {
    const output = fakeOutput();
    const notifier = new Notifier({} as LlamaServer, output.channel);
    notifier.report({ level: 'status', text: 'Llama: Fix applied — verified', output: '1 passed' });
    assert.deepEqual(stub.messages, []);
    assert.deepEqual(stub.statusMessages, ['$(check) Llama: Fix applied — verified']);
    assert.deepEqual(output.log, [['info', 'Llama: Fix applied — verified\n1 passed']]);
  });
});

// server.ts's message (it cannot be imported here: it loads vscode-languageclient).
const NOT_FOUND_INSTALLABLE = 'Could not find the llama-lsp server: install it (Llama: Install Server), or set llamaLsp.serverCommand.';

describe('server not found', () => {
  beforeEach(() => stub.reset());

  test('with a server to install: the error offers the install, which runs the install command', async () => {
    const notifier = new Notifier({} as LlamaServer, fakeOutput().channel);
    stub.choice = 'Install llama-lsp server';
    notifier.serverError(NOT_FOUND_INSTALLABLE, undefined, true);
    await tick();
    assert.deepEqual(stub.messages, [['error', `Llama: ${NOT_FOUND_INSTALLABLE}`, 'Install llama-lsp server', 'Open settings']]);
    assert.deepEqual(stub.executed, [['llamaLsp.installServer']]);
  });

  test('shown once until the server starts again', async () => {
    const notifier = new Notifier({} as LlamaServer, fakeOutput().channel);
    notifier.serverError(NOT_FOUND_INSTALLABLE, undefined, true);
    notifier.serverError(NOT_FOUND_INSTALLABLE, undefined, true);
    await tick();
    assert.equal(stub.messages.length, 1);
    assert.deepEqual(stub.executed, []);
  });
});
