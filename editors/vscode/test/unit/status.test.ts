import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import type { StatsResult, TurnStats } from '../../src/protocol';
import {
  COLD_LINE,
  WARM_LINE,
  applyLoadProgress,
  applyStatusNotification,
  formatStats,
  initialStatus,
  isWarm,
  reusePercent,
  statsSummary,
  statusView,
  type ServerStatus,
} from '../../src/status';
import { STATUS_ITEM_ID, StatusBar } from '../../src/statusBar';
import { stub } from '../stub/vscode';

const stats: TurnStats = {
  nPrompt: 1800,
  nReused: 1728,
  nEvaluated: 72,
  nGenerated: 40,
  nDrafted: 0,
  nAccepted: 0,
  tPrefillMs: 310.2,
  tFirstTokenMs: 322.9,
  tDecodeMs: 1450,
  steps: 1,
};

describe('status text', () => {
  test('each phase reads "Llama: …" with its icon', () => {
    const text = (status: ServerStatus): string => statusView(status).text;
    assert.equal(text(initialStatus), '$(loading~spin) Llama: starting');
    assert.equal(text({ phase: 'loading' }), '$(loading~spin) Llama: loading');
    assert.equal(text({ phase: 'loading', percent: 40 }), '$(loading~spin) Llama: loading 40%');
    assert.equal(text({ phase: 'busy', queue: 2 }), '$(sync~spin) Llama: busy');
    assert.equal(text({ phase: 'ready' }), '$(check) Llama: ready');
    assert.equal(text({ phase: 'ready', lastStats: stats }), '$(check) Llama: 96% cached');
    assert.equal(text({ phase: 'error', message: 'no model' }), '$(error) Llama: error');
    assert.equal(text({ phase: 'stopped' }), '$(circle-slash) Llama: stopped');
  });

  test('the tooltip carries the message, the queue and the last request', () => {
    const view = statusView({ phase: 'busy', message: 'qwen ready', queue: 2, lastStats: stats });
    assert.match(view.tooltip, /qwen ready/);
    assert.match(view.tooltip, /2 waiting/);
    assert.match(view.tooltip, /1,728 of 1,800 prompt tokens cached \(96%\)/);
    assert.equal(view.isError, false);
    assert.equal(statusView({ phase: 'error', message: 'x' }).isError, true);
  });

  test('reuse is nReused / nPrompt, rounded, and absent without a prompt', () => {
    assert.equal(reusePercent(stats), 96);
    assert.equal(reusePercent({ nPrompt: 3, nReused: 2 }), 67);
    assert.equal(reusePercent({ nPrompt: 0, nReused: 0 }), undefined);
    assert.equal(reusePercent(undefined), undefined);
    assert.equal(
      statusView({ phase: 'ready', lastStats: { ...stats, nPrompt: 0, nReused: 0 } }).text,
      '$(check) Llama: ready',
    );
  });

  test('stats read like the chat shows them', () => {
    assert.equal(formatStats(stats), '1,728 of 1,800 prompt tokens cached (96%) · 40 tokens');
    assert.equal(
      formatStats({ ...stats, nPrompt: 0, nReused: 0, nGenerated: 1 }),
      '0 of 0 prompt tokens cached (0%) · 1 tokens',
    );
    // A remote backend that does not report its cached tokens: no made-up 0%.
    const unreported = { ...stats, nReused: null };
    assert.equal(formatStats(unreported), '1,800 prompt tokens · 40 tokens');
    assert.equal(reusePercent(unreported), undefined);
    assert.equal(statusView({ phase: 'ready', lastStats: unreported }).text, '$(check) Llama: ready');
  });

  test('speculative decoding adds how many drafted tokens were accepted, and only when it drafted', () => {
    const speculative = { ...stats, nGenerated: 450, nDrafted: 450, nAccepted: 412 };
    assert.equal(
      formatStats(speculative),
      '1,728 of 1,800 prompt tokens cached (96%) · 450 tokens · 412 of 450 drafted accepted',
    );
    assert.equal(
      formatStats({ ...speculative, nReused: null }),
      '1,800 prompt tokens · 450 tokens · 412 of 450 drafted accepted',
    );
    assert.doesNotMatch(formatStats(stats), /drafted/);
    // An older server sends neither field.
    const { nDrafted: _drafted, nAccepted: _accepted, ...older } = speculative;
    assert.equal(formatStats(older as TurnStats), '1,728 of 1,800 prompt tokens cached (96%) · 450 tokens');
    assert.match(
      statusView({ phase: 'ready', lastStats: speculative }).tooltip,
      /Last request: .* · 412 of 450 drafted accepted/,
    );
  });

  test('a status notification replaces the state but keeps the last stats', () => {
    const ready = applyStatusNotification(initialStatus, { state: 'ready', message: 'm ready', lastStats: stats });
    const busy = applyStatusNotification(ready, { state: 'busy', queue: 1 });
    assert.deepEqual(busy, {
      phase: 'busy',
      message: undefined,
      queue: 1,
      lastStats: stats,
      lastCompletion: undefined,
      installModel: undefined,
      warm: undefined,
      percent: undefined,
    });
    const error = applyStatusNotification(busy, {
      state: 'error',
      message: 'gone',
      installModel: 'qwen2.5-coder-1.5b',
    });
    assert.equal(error.installModel, 'qwen2.5-coder-1.5b');
    assert.equal(error.lastStats, stats);
  });

  test('loading progress sets the percentage while loading, and only then', () => {
    let status = applyStatusNotification(initialStatus, { state: 'loading', message: 'loading m' });
    status = applyLoadProgress(status, { kind: 'begin', title: 'Loading m' });
    assert.equal(statusView(status).text, '$(loading~spin) Llama: loading');
    status = applyLoadProgress(status, { kind: 'report', percentage: 39.6 });
    assert.equal(statusView(status).text, '$(loading~spin) Llama: loading 40%');
    status = applyLoadProgress(status, { kind: 'end' });
    assert.equal(status.percent, undefined);
    const ready: ServerStatus = { phase: 'ready' };
    assert.equal(applyLoadProgress(ready, { kind: 'report', percentage: 50 }), ready);
  });

  test('the stats summary names the model, the totals, the last request and the server version', () => {
    const result: StatsResult = {
      version: { server: '0.1.0', native: '0.1.0 (ABI 4; llama.cpp: …, source …)' },
      state: 'ready',
      model: 'qwen2.5-coder-0.5b',
      error: null,
      modelLoads: 1,
      engine: null,
      totals: {
        requests: 3,
        nPrompt: 4000,
        nReused: 3000,
        nEvaluated: 1000,
        nGenerated: 90,
        nDrafted: 0,
        nAccepted: 0,
        tPrefillMs: 900,
        tDecodeMs: 6000,
        steps: 4,
        cacheHitRate: 0.75,
      },
      lastStats: stats,
    };
    assert.equal(
      statsSummary(result),
      'qwen2.5-coder-0.5b: ready · 3 requests, 3,000 of 4,000 prompt tokens cached (75%) · last: 1,728 of 1,800 prompt tokens cached (96%) · 40 tokens · llama-lsp 0.1.0',
    );
    // A remote backend that does not report its cached tokens.
    const remote: StatsResult = {
      ...result,
      model: 'm at http://gpu-box:8080/v1',
      totals: { ...result.totals, nReused: null, cacheHitRate: null },
      lastStats: { ...stats, nReused: null },
    };
    assert.equal(
      statsSummary(remote),
      'm at http://gpu-box:8080/v1: ready · 3 requests · last: 1,800 prompt tokens · 40 tokens · llama-lsp 0.1.0',
    );
  });
});

describe('warm files', () => {
  const a = 'file:///work/a%20b.py';
  const b = 'file:///work/b.py';

  test('a ready or busy server shows a flame for a warm file, and nothing for another', () => {
    const ready: ServerStatus = { phase: 'ready', warm: [a] };
    assert.equal(statusView(ready, a).text, '$(check) Llama: ready $(flame)');
    assert.equal(statusView(ready, b).text, '$(check) Llama: ready');
    assert.equal(statusView(ready).text, '$(check) Llama: ready');
    assert.equal(statusView({ ...ready, lastStats: stats }, a).text, '$(check) Llama: 96% cached $(flame)');
    assert.equal(statusView({ phase: 'busy', warm: [a, b] }, b).text, '$(sync~spin) Llama: busy $(flame)');
  });

  test('the tooltip says whether the file is warm, and nothing when that is not known', () => {
    const ready: ServerStatus = { phase: 'ready', warm: [a], lastStats: stats };
    const lines = (status: ServerStatus, uri?: string): string[] => statusView(status, uri).tooltip.split('\n');
    assert.deepEqual(lines(ready, a), [WARM_LINE, 'Last request: ' + formatStats(stats), 'Click for cache stats']);
    assert.match(WARM_LINE, /warm: a first question about it evaluates only the question/);
    assert.ok(lines(ready, b).includes(COLD_LINE));
    for (const [status, uri] of [
      [ready, undefined], // no file
      [{ phase: 'ready' }, a], // no list yet
      [{ phase: 'loading', warm: [a] }, a],
      [{ phase: 'error', warm: [a] }, a],
      [{ phase: 'stopped', warm: [a] }, a],
    ] as [ServerStatus, string | undefined][]) {
      const tooltip = lines(status, uri);
      assert.ok(!tooltip.includes(WARM_LINE) && !tooltip.includes(COLD_LINE), JSON.stringify([status, tooltip]));
      assert.ok(!statusView(status, uri).text.includes('$(flame)'));
      assert.equal(isWarm(status, uri), undefined);
    }
    assert.equal(isWarm(ready, a), true);
    assert.equal(isWarm(ready, b), false);
  });

  test('the URI must match as the client sent it', () => {
    assert.equal(isWarm({ phase: 'ready', warm: [a] }, 'file:///work/a b.py'), false);
  });

  test("each notification brings the list; one without it (loading, error) forgets it", () => {
    let status = applyStatusNotification(initialStatus, { state: 'ready', warm: [a] });
    assert.deepEqual(status.warm, [a]);
    status = applyStatusNotification(status, { state: 'ready', warm: [a, b] });
    assert.deepEqual(status.warm, [a, b]);
    status = applyStatusNotification(status, { state: 'busy', queue: 1, warm: [] });
    assert.deepEqual(status.warm, []);
    status = applyStatusNotification(status, { state: 'loading', message: 'reloading' });
    assert.equal(status.warm, undefined);
  });
});

describe('StatusBar', () => {
  beforeEach(() => stub.reset());

  test('creates the llamaLsp.status item that runs show stats, and shows the view', () => {
    const bar = new StatusBar('llamaLsp.showStats');
    const [item] = stub.statusItems;
    assert.equal(item.id, STATUS_ITEM_ID);
    assert.equal(item.id, 'llamaLsp.status');
    assert.equal(item.name, 'Llama LSP');
    assert.equal(item.command, 'llamaLsp.showStats');
    bar.show({ phase: 'ready', lastStats: stats });
    assert.equal(item.text, '$(check) Llama: 96% cached');
    assert.equal(item.visible, true);
    assert.equal(item.backgroundColor, undefined);
    bar.show({ phase: 'error', message: 'no model' });
    // (read through a fresh reference: the assertion above narrowed the property to undefined)
    const shown: { backgroundColor?: { id: string } } = item;
    assert.equal(shown.backgroundColor?.id, 'statusBarItem.errorBackground');
    assert.match(String(item.tooltip), /no model/);
  });

  test('shows whether the active file is warm, on status notifications and on editor changes', () => {
    const a = 'file:///work/a.py';
    const b = 'file:///work/b.py';
    stub.setActiveEditor(a);
    const bar = new StatusBar('llamaLsp.showStats');
    const [item] = stub.statusItems;
    let status = applyStatusNotification(initialStatus, { state: 'ready', warm: [] });
    bar.show(status);
    assert.equal(item.text, '$(check) Llama: ready');
    assert.match(String(item.tooltip), /This file is not cached/);
    // The server warmed a.py: a status notification says so.
    status = applyStatusNotification(status, { state: 'ready', warm: [a] });
    bar.show(status);
    assert.equal(item.text, '$(check) Llama: ready $(flame)');
    assert.ok(String(item.tooltip).includes(WARM_LINE));
    // Another editor, with no new status.
    stub.setActiveEditor(b);
    assert.equal(item.text, '$(check) Llama: ready');
    assert.ok(String(item.tooltip).includes(COLD_LINE));
    stub.setActiveEditor(a);
    assert.equal(item.text, '$(check) Llama: ready $(flame)');
    // Focus in the chat view (no active text editor): the question is still about a.py.
    stub.setActiveEditor(undefined);
    assert.equal(item.text, '$(check) Llama: ready $(flame)');
    // Not a file (an output channel), or a closed one: nothing is said about it.
    stub.setActiveEditor('output:extension-output-llama');
    assert.equal(item.text, '$(check) Llama: ready');
    assert.ok(!String(item.tooltip).includes(COLD_LINE));
    stub.setActiveEditor(a, { isClosed: true });
    assert.ok(!String(item.tooltip).includes(WARM_LINE) && !String(item.tooltip).includes(COLD_LINE));
    // Once disposed it no longer follows the editor.
    bar.dispose();
    assert.equal(stub.editorListeners.length, 0);
  });
});
