import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { contextLabel } from '../../src/chat/host';
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
