/**
 * Inline completion's middleware (no request while the setting is off; each answer timed) and where
 * the time shows: the status bar item's tooltip, and "Show cache stats" for the server's own figures.
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import * as vscode from 'vscode';
import { inlineCompletionMiddleware, type CompletionTiming } from '../../src/inlineCompletion';
import type { StatsResult } from '../../src/protocol';
import { completionEnabled } from '../../src/settings';
import {
  applyStatusNotification,
  formatCompletionStats,
  formatCompletionTiming,
  initialStatus,
  statsSummary,
  statusView,
  type ServerStatus,
} from '../../src/status';
import { StatusBar } from '../../src/statusBar';
import { CancellationTokenSource, stub } from '../stub/vscode';

type Provide = ReturnType<typeof inlineCompletionMiddleware>['provideInlineCompletionItems'];
type Next = Parameters<Provide>[4];

const document = { uri: 'file:///work/a.py' } as unknown as vscode.TextDocument;
const position = { line: 1, character: 10 } as vscode.Position;
const context = { triggerKind: 1, selectedCompletionInfo: undefined } as unknown as vscode.InlineCompletionContext;
const suggestion = { insertText: ' a + b' } as vscode.InlineCompletionItem;

/** A clock the test moves by hand. */
function clock(start = 1000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('inline completion middleware', () => {
  beforeEach(() => stub.reset());

  test('off: no request is sent, nothing is shown and nothing is timed', async () => {
    const timings: CompletionTiming[] = [];
    let calls = 0;
    const next: Next = () => {
      calls += 1;
      return [suggestion];
    };
    stub.config = { 'llamaLsp.completion': false };
    const middleware = inlineCompletionMiddleware({
      enabled: () => completionEnabled(vscode.workspace.getConfiguration('llamaLsp')),
      onTimed: (timing) => timings.push(timing),
    });
    const token = new CancellationTokenSource().token as vscode.CancellationToken;
    const result = await middleware.provideInlineCompletionItems(document, position, context, token, next);
    assert.equal(result, undefined);
    assert.equal(calls, 0);
    assert.deepEqual(timings, []);

    // The setting is read on every request: turning it on takes effect without a restart.
    stub.config = { 'llamaLsp.completion': true };
    const on = await middleware.provideInlineCompletionItems(document, position, context, token, next);
    assert.deepEqual(on, [suggestion]);
    assert.equal(calls, 1);
    stub.config = {};
    await middleware.provideInlineCompletionItems(document, position, context, token, next);
    assert.equal(calls, 2, 'on by default');
  });

  test("on: the request goes out as the client made it, and the answer's time is recorded", async () => {
    const time = clock();
    const timings: CompletionTiming[] = [];
    const seen: unknown[][] = [];
    const next: Next = async (...args) => {
      seen.push(args);
      time.advance(240.5);
      return { items: [suggestion] } as vscode.InlineCompletionList;
    };
    const middleware = inlineCompletionMiddleware({
      enabled: () => true,
      onTimed: (timing) => timings.push(timing),
      now: time.now,
    });
    const token = new CancellationTokenSource().token as vscode.CancellationToken;
    const result = await middleware.provideInlineCompletionItems(document, position, context, token, next);
    assert.deepEqual(result, { items: [suggestion] });
    assert.deepEqual(seen, [[document, position, context, token]]);
    assert.deepEqual(timings, [{ ms: 240.5, suggested: true }]);
  });

  test('an answer without a suggestion is timed too, and says so', async () => {
    const time = clock();
    const timings: CompletionTiming[] = [];
    const middleware = inlineCompletionMiddleware({
      enabled: () => true,
      onTimed: (timing) => timings.push(timing),
      now: time.now,
    });
    const token = new CancellationTokenSource().token as vscode.CancellationToken;
    const answers = [{ items: [] }, [], null, undefined] as Awaited<ReturnType<Next>>[];
    for (const answer of answers) {
      await middleware.provideInlineCompletionItems(document, position, context, token, async () => {
        time.advance(5);
        return answer;
      });
    }
    assert.deepEqual(
      timings,
      answers.map(() => ({ ms: 5, suggested: false })),
    );
  });

  test('a request the user typed past (cancelled) is not timed', async () => {
    const timings: CompletionTiming[] = [];
    const middleware = inlineCompletionMiddleware({ enabled: () => true, onTimed: (t) => timings.push(t) });
    const source = new CancellationTokenSource();
    const token = source.token as vscode.CancellationToken;
    const result = await middleware.provideInlineCompletionItems(document, position, context, token, async () => {
      source.cancel(); // VS Code cancels it; the client then answers null
      return null;
    });
    assert.equal(result, null);
    assert.deepEqual(timings, []);
  });

  test('a failed request is not timed, and its error reaches VS Code', async () => {
    const timings: CompletionTiming[] = [];
    const middleware = inlineCompletionMiddleware({ enabled: () => true, onTimed: (t) => timings.push(t) });
    const token = new CancellationTokenSource().token as vscode.CancellationToken;
    await assert.rejects(
      Promise.resolve(
        middleware.provideInlineCompletionItems(document, position, context, token, async () => {
          throw new Error('boom');
        }),
      ),
      /boom/,
    );
    assert.deepEqual(timings, []);
  });
});

describe('completion timing in the status bar', () => {
  beforeEach(() => stub.reset());

  test('the tooltip says how long the last completion took; the text stays as it was', () => {
    const bar = new StatusBar('llamaLsp.showStats');
    const [item] = stub.statusItems;
    bar.show({ phase: 'ready', lastCompletion: { ms: 240.4, suggested: true } });
    assert.equal(item.text, '$(check) Llama: ready');
    assert.deepEqual(String(item.tooltip).split('\n'), ['Last completion: 240 ms', 'Click for cache stats']);
    bar.show({ phase: 'ready', lastCompletion: { ms: 1240, suggested: false } });
    assert.match(String(item.tooltip), /^Last completion: 1,240 ms, nothing to suggest$/m);
    bar.dispose();
  });

  test('the time outlives status notifications, as the last request does', () => {
    let status: ServerStatus = { ...initialStatus, lastCompletion: { ms: 80, suggested: true } };
    status = applyStatusNotification(status, { state: 'busy', queue: 1 });
    status = applyStatusNotification(status, { state: 'ready', message: 'm ready' });
    assert.deepEqual(status.lastCompletion, { ms: 80, suggested: true });
    assert.match(statusView(status).tooltip, /Last completion: 80 ms/);
    assert.doesNotMatch(statusView({ phase: 'ready' }).tooltip, /completion/);
  });

  test('formats', () => {
    assert.equal(formatCompletionTiming({ ms: 0.4, suggested: true }), '0 ms');
    assert.equal(formatCompletionStats({ cached: true, tMs: 0.2 }), 'repeated (0 ms)');
    assert.equal(
      formatCompletionStats({
        cached: false,
        tMs: 812.6,
        nPrompt: 500,
        nEvaluated: 12,
        nGenerated: 3,
        finishReason: 'stop',
      }),
      '813 ms, 3 tokens',
    );
    assert.equal(
      formatCompletionStats({ cached: false, tMs: 400, nGenerated: 12, nDrafted: 10, nAccepted: 9 }),
      '400 ms, 12 tokens · 9 of 10 drafted accepted',
    );
    assert.equal(
      formatCompletionStats({ cached: false, tMs: 400, nGenerated: 12, nDrafted: 0, nAccepted: 0 }),
      '400 ms, 12 tokens',
    );
  });

  test("Show cache stats adds the server's last completion when there is one", () => {
    const base: StatsResult = {
      state: 'ready',
      model: 'm',
      error: null,
      modelLoads: 1,
      engine: null,
      totals: {
        requests: 0,
        nPrompt: 0,
        nReused: 0,
        nEvaluated: 0,
        nGenerated: 0,
        nDrafted: 0,
        nAccepted: 0,
        tPrefillMs: 0,
        tDecodeMs: 0,
        steps: 0,
        cacheHitRate: null,
      },
      lastStats: null,
    };
    assert.equal(statsSummary(base), 'm: ready · 0 requests');
    assert.equal(statsSummary({ ...base, lastCompletion: null }), 'm: ready · 0 requests');
    assert.equal(
      statsSummary({ ...base, lastCompletion: { cached: false, tMs: 300, nGenerated: 7 } }),
      'm: ready · 0 requests · last completion: 300 ms, 7 tokens',
    );
  });
});

describe('the language client sends inline completion requests', () => {
  // vscode-languageclient cannot load under the stub; its sources say what it does. Since 10.0.1 the
  // feature is built in: registered by default, it advertises textDocument.inlineCompletion and
  // registers VS Code's provider for the server's inlineCompletionProvider. A client without it would
  // leave the server's completion unused, with no error anywhere.
  const lib = path.join(__dirname, '..', '..', '..', 'node_modules', 'vscode-languageclient', 'lib', 'common');

  test('the feature is one of the built-in ones, and advertises the capability', () => {
    const client = fs.readFileSync(path.join(lib, 'client.js'), 'utf8');
    const builtins = /registerBuiltinFeatures\(\) \{([\s\S]*?)\n {4}\}/.exec(client)?.[1] ?? '';
    assert.match(builtins, /new inlineCompletion_1\.InlineCompletionItemFeature\(this\)/);
    const feature = fs.readFileSync(path.join(lib, 'inlineCompletion.js'), 'utf8');
    assert.match(feature, /ensure\)\(capabilities, 'textDocument'\), 'inlineCompletion'\)/);
    assert.match(feature, /capabilities\.inlineCompletionProvider/);
    assert.match(feature, /middleware\.provideInlineCompletionItems/);
  });
});
