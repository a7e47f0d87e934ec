import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { contextLabel } from '../../src/chat/host';
import { referenceLabel, resolveReference } from '../../src/chat/references';
import { chatHtml } from '../../src/chat/view';
import { installHint, repeatsStatusError } from '../../src/notifications';

describe('chat page', () => {
  const html = chatHtml({
    cspSource: 'https://webview.example',
    scriptUri: 'https://webview.example/media/chat.js',
    styleUri: 'https://webview.example/media/chat.css',
    nonce: 'abc123',
  });

  test('a strict CSP: nothing by default, styles from the extension, scripts only with the nonce', () => {
    const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1];
    assert.equal(csp, "default-src 'none'; style-src https://webview.example; script-src 'nonce-abc123';");
    const scripts = html.match(/<script[^>]*>/g) ?? [];
    assert.deepEqual(scripts, ['<script nonce="abc123" src="https://webview.example/media/chat.js">']);
    assert.ok(!/\sstyle=|\son\w+=/.test(html), 'no inline styles or handlers');
  });

  test('the elements the e2e tests drive', () => {
    assert.match(html, /<textarea id="prompt"/);
    assert.match(html, /<button id="send" type="submit">Ask<\/button>/);
    assert.match(html, /<button id="stop"[^>]*>Stop<\/button>/);
    assert.match(html, /<button id="new"[^>]*>New conversation<\/button>/);
    assert.match(html, /<div id="transcript"/);
    assert.match(html, /<button id="codebase" type="button"[^>]*aria-pressed="false"[^>]*>@codebase</);
  });

  test('the prompt says what @codebase does, and the Tab hint is read out when it shows', () => {
    assert.match(html, /<textarea id="prompt"[^>]*aria-describedby="mention-hint"[^>]*placeholder="[^"]*@codebase/);
    assert.match(html, /<div id="mention-hint" aria-live="polite" hidden>Tab completes @codebase/);
  });
});

describe('file references from the chat', () => {
  // workspace/ (the folder), with shop/prices.py, a folder, a symlink to a file inside and one to a
  // file outside, and a symlinked folder that leads out; outside/ beside it.
  let root = '';
  let workspace = '';
  let second = '';
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'llama-refs-'));
    workspace = path.join(root, 'workspace');
    second = path.join(root, 'second');
    fs.mkdirSync(path.join(workspace, 'shop'), { recursive: true });
    fs.mkdirSync(path.join(root, 'outside'));
    fs.mkdirSync(second);
    fs.writeFileSync(path.join(workspace, 'shop/prices.py'), 'A = 1\nB = 2\nC = 3\n');
    fs.writeFileSync(path.join(root, 'outside/secret.py'), 'KEY = 1\n');
    fs.writeFileSync(path.join(root, 'outside.py'), 'x = 1\n');
    fs.writeFileSync(path.join(second, 'only_here.py'), '');
    fs.symlinkSync(path.join(workspace, 'shop/prices.py'), path.join(workspace, 'alias.py'));
    fs.symlinkSync(path.join(root, 'outside/secret.py'), path.join(workspace, 'leak.py'));
    fs.symlinkSync(path.join(root, 'outside'), path.join(workspace, 'linked'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  test('a file inside the folder resolves to its path there, a symlink to one inside too', async () => {
    const prices = path.join(workspace, 'shop/prices.py');
    assert.equal(await resolveReference({ path: 'shop/prices.py', line: 3 }, [workspace]), prices);
    assert.equal(await resolveReference({ path: 'alias.py' }, [workspace]), path.join(workspace, 'alias.py'));
  });

  test('the first folder that has the file: another workspace folder too', async () => {
    const found = await resolveReference({ path: 'only_here.py' }, [workspace, second]);
    assert.equal(found, path.join(second, 'only_here.py'));
  });

  test('refused: .., absolute paths, symlinks that lead out, folders, missing files', async () => {
    const refused = [
      '../outside.py',
      'shop/../../outside.py',
      path.join(root, 'outside.py'),
      path.join(workspace, 'shop/prices.py'), // absolute, even inside: the model cites relative paths
      'leak.py',
      'linked/secret.py',
      'shop',
      'shop/missing.py',
      'shop\\prices.py',
      '',
    ];
    for (const reference of refused) {
      assert.equal(await resolveReference({ path: reference }, [workspace]), undefined, reference);
    }
    const missingFolder = path.join(workspace, 'missing');
    assert.equal(await resolveReference({ path: 'prices.py' }, [missingFolder]), undefined);
    assert.equal(await resolveReference({ path: 'shop/prices.py' }, []), undefined);
  });

  test('how a refusal names the reference', () => {
    assert.equal(referenceLabel({ path: 'a.py' }), 'a.py');
    assert.equal(referenceLabel({ path: 'a.py', line: 3 }), 'a.py:3');
    assert.equal(referenceLabel({ path: 'a.py', line: 3, column: 7 }), 'a.py:3:7');
  });
});

describe('context labels', () => {
  const range = (l1: number, c1: number, l2: number, c2: number) => ({
    start: { line: l1, character: c1 },
    end: { line: l2, character: c2 },
  });
  test('file, one line, several lines; a selection ending at a line start ends before it', () => {
    assert.equal(contextLabel('src/app.py', undefined), 'src/app.py');
    assert.equal(contextLabel('app.py', range(3, 2, 3, 9)), 'app.py, line 4');
    assert.equal(contextLabel('app.py', range(2, 0, 9, 0)), 'app.py, lines 3-9');
    assert.equal(contextLabel('app.py', range(2, 0, 8, 4)), 'app.py, lines 3-9');
  });
});

describe('notifications', () => {
  test('the model to install is read from the server message', () => {
    assert.equal(
      installHint(
        "llama-lsp: model 'qwen2.5-coder-1.5b' is not installed; install it with: llama-lsp model install qwen2.5-coder-1.5b",
      ),
      'qwen2.5-coder-1.5b',
    );
    assert.equal(installHint('run llama-lsp model install qwen2.5-coder-0.5b.'), 'qwen2.5-coder-0.5b');
    assert.equal(installHint('prompt larger than the context'), undefined);
  });

  test("the server's showMessage that repeats the status error is recognised", () => {
    const status = { phase: 'error' as const, message: "model 'm' is not installed" };
    assert.equal(repeatsStatusError({ type: 1, message: "llama-lsp: model 'm' is not installed" }, status), true);
    assert.equal(repeatsStatusError({ type: 2, message: "llama-lsp: model 'm' is not installed" }, status), false);
    assert.equal(repeatsStatusError({ type: 1, message: 'something else' }, status), false);
    assert.equal(repeatsStatusError({ type: 1, message: "model 'm' is not installed" }, { phase: 'ready' }), false);
  });
});
