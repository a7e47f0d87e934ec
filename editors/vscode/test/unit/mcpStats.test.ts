import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_SUMMARY_ERROR_CHARS, McpFailureLog, mayRunMcpServers, mcpLogLines, mcpSummary } from '../../src/mcpStats';
import type { McpServerStats, McpStats, StatsResult } from '../../src/protocol';
import { statsSummary } from '../../src/status';

const tracker: McpServerStats = { name: 'tracker', source: 'settings', state: 'running', tools: 2, starts: 1, error: null };
const notes: McpServerStats = {
  name: 'notes',
  source: '.vscode/mcp.json',
  state: 'failed',
  tools: 0,
  starts: 1,
  error: "Connection closed (its last words: mcp_test_server: cannot open the tracker's database)",
};
const mcp = (servers: McpServerStats[], leftOut: string[] = []): McpStats => ({ servers, offered: [], leftOut });

describe('MCP servers in the stats message', () => {
  test('each server with its state and tool count, a failed one with why', () => {
    assert.equal(
      mcpSummary(mcp([tracker, notes, { ...tracker, name: 'docs', state: 'stopped', tools: 1, starts: 0 }])),
      "MCP: tracker: running, 2 tools; notes: failed (Connection closed (its last words: mcp_test_server: cannot open the tracker's database)); docs: stopped, 1 tool",
    );
  });

  test("a failure's reason is cut to its first line and a bound", () => {
    const long = { ...notes, error: `${'z'.repeat(500)}\nmore` };
    assert.equal(mcpSummary(mcp([long])), `MCP: notes: failed (${'z'.repeat(MAX_SUMMARY_ERROR_CHARS)}…)`);
    assert.equal(mcpSummary(mcp([{ ...notes, error: null }])), 'MCP: notes: failed');
  });

  test('nothing when no server is configured, or the server is older than MCP', () => {
    assert.equal(mcpSummary(mcp([])), undefined);
    assert.equal(mcpSummary(undefined), undefined);
  });

  test('"Show Cache Stats" says it after the figures', () => {
    const stats: StatsResult = {
      state: 'ready',
      model: 'qwen2.5-coder-1.5b',
      error: null,
      modelLoads: 1,
      engine: null,
      totals: {
        requests: 1,
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
      mcp: mcp([tracker]),
    } as unknown as StatsResult;
    assert.equal(statsSummary(stats), 'qwen2.5-coder-1.5b: ready · 1 request · MCP: tracker: running, 2 tools');
  });
});

describe('MCP servers in the output channel', () => {
  test('one line per server, the whole reason of a failure, and the tools left out', () => {
    assert.deepEqual(mcpLogLines(mcp([tracker, notes], ['docs.search'])), [
      'MCP server tracker (settings): running, 2 tools, 1 start',
      `MCP server notes (.vscode/mcp.json): failed after 1 start: ${notes.error}`,
      'MCP tools the latest conversation was not offered (not relevant to it, or past the limit): docs.search',
    ]);
    assert.deepEqual(mcpLogLines(undefined), []);
  });

  test('a failed server is named once, again after it ran in between or when it fails otherwise', () => {
    const log = new McpFailureLog();
    const named = `MCP server notes (.vscode/mcp.json) failed: ${notes.error}`;
    assert.deepEqual(log.newFailures(mcp([tracker, notes])), [named]);
    assert.deepEqual(log.newFailures(mcp([tracker, notes])), []);
    // Its restart is under way: not a recovery; failing the same way again is not news.
    assert.deepEqual(log.newFailures(mcp([tracker, { ...notes, state: 'starting' }])), []);
    assert.deepEqual(log.newFailures(mcp([tracker, { ...notes, starts: 2 }])), []);
    // Another reason is news.
    const other = { ...notes, starts: 3, error: 'no such command: notes-server' };
    assert.deepEqual(log.newFailures(mcp([tracker, other])), [
      'MCP server notes (.vscode/mcp.json) failed: no such command: notes-server',
    ]);
    // It ran, then died: named again.
    assert.deepEqual(log.newFailures(mcp([tracker, { ...other, state: 'running', error: null }])), []);
    assert.deepEqual(log.newFailures(mcp([tracker, other])), [
      'MCP server notes (.vscode/mcp.json) failed: no such command: notes-server',
    ]);
    // Taken out of the configuration and put back: named again.
    assert.deepEqual(log.newFailures(mcp([tracker])), []);
    assert.equal(log.newFailures(mcp([tracker, other])).length, 1);
    assert.deepEqual(log.newFailures(undefined), []);
  });
});

describe('whether a chat may have run MCP servers', () => {
  const config = (values: Record<string, unknown>) => ({ get: <T>(key: string) => values[key] as T | undefined });
  const never = (): boolean => assert.fail('the project files need not be looked at');

  test('not in an untrusted workspace, whatever is configured', () => {
    assert.equal(mayRunMcpServers(config({ mcpServers: { tracker: {} } }), false, never), false);
  });

  test('with mcpServers, or with a project file while mcpWorkspaceServers is on', () => {
    assert.equal(mayRunMcpServers(config({ mcpServers: { tracker: {} } }), true, never), true);
    assert.equal(mayRunMcpServers(config({ mcpServers: {} }), true, () => true), true);
    assert.equal(mayRunMcpServers(config({}), true, () => false), false);
    assert.equal(mayRunMcpServers(config({ mcpWorkspaceServers: false }), true, never), false);
  });
});
