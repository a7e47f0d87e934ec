/** Llama: Search Codebase against the vscode stub: the query, the quick pick's rows, opening a result, the messages. */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { beforeEach, describe, test } from 'node:test';
import { ErrorCode, type SearchCodebaseParams, type SearchCodebaseResult } from '../../src/protocol';
import {
  COMMAND_SEARCH_CODEBASE,
  MAX_QUERY_CHARS,
  SEARCH_LIMIT,
  searchCodebase,
  validateQuery,
  type SearchItem,
} from '../../src/search';
import { stub, TextEditorRevealType } from '../stub/vscode';

const FOLDER = 'file:///work/shop';

const HITS: SearchCodebaseResult['results'] = [
  {
    uri: `${FOLDER}/src/inventory.py`,
    range: { start: { line: 11, character: 0 }, end: { line: 19, character: 0 } },
    score: 6.2,
    snippet: '\n    @staticmethod\n    def restock(item, n):\n        item.quantity += n\n',
    symbol: 'Inventory.restock',
  },
  {
    uri: `${FOLDER}/README.md`,
    range: { start: { line: 0, character: 0 }, end: { line: 40, character: 0 } },
    score: 1.5,
    snippet: '# Shop\n\nRestocking happens nightly.\n',
  },
];

function fakeDeps(answer: SearchCodebaseResult | Error) {
  const requests: SearchCodebaseParams[] = [];
  const errors: string[] = [];
  const deps = {
    server: {
      async searchCodebase(params: SearchCodebaseParams): Promise<SearchCodebaseResult> {
        requests.push(params);
        if (answer instanceof Error) throw answer;
        return answer;
      },
    },
    notifier: { error: (message: string) => errors.push(message) },
  };
  return { deps, requests, errors };
}

const ready = (files: number) => ({ files, chunks: files * 5, ready: true });
/** A stub Range's ends as plain positions. */
const ends = (range: { start: Position; end: Position }) => [
  { line: range.start.line, character: range.start.character },
  { line: range.end.line, character: range.end.character },
];
type Position = { line: number; character: number };

describe('Llama: Search Codebase', () => {
  beforeEach(() => {
    stub.reset();
    stub.folders = [FOLDER];
  });

  test('is contributed under the palette title "Llama: Search Codebase"', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
    const titles = new Map(manifest.contributes.commands.map((c: { command: string; title: string }) => [c.command, c.title]));
    assert.equal(titles.get(COMMAND_SEARCH_CODEBASE), 'Llama: Search Codebase');
  });

  test('the selection, on one line, is the query it offers; the request carries it and a limit', async () => {
    stub.setActiveEditor(`${FOLDER}/src/shop.py`, { text: 'x = restock(\n    item,  n)\n', selection: [4, 26] });
    stub.input = 'restock an item';
    const { deps, requests } = fakeDeps({ results: HITS, indexed: ready(3) });
    await searchCodebase(deps);
    assert.equal(stub.inputBoxes.length, 1);
    assert.equal(stub.inputBoxes[0].value, 'restock( item, n)');
    assert.deepEqual(requests, [{ query: 'restock an item', limit: SEARCH_LIMIT }]);
  });

  test('no selection: an empty box; Escape sends nothing', async () => {
    stub.setActiveEditor(`${FOLDER}/src/shop.py`, { text: 'x = 1\n' });
    const { deps, requests } = fakeDeps({ results: HITS, indexed: ready(3) });
    await searchCodebase(deps);
    assert.equal(stub.inputBoxes[0].value, '');
    assert.deepEqual(requests, []);
    assert.deepEqual(stub.quickPicks, []);
  });

  test('a query longer than the server takes is refused in the box', () => {
    assert.equal(validateQuery('where the retry delay doubles'), undefined);
    assert.match(validateQuery('x'.repeat(MAX_QUERY_CHARS + 1)) ?? '', /at most 2000/);
  });

  test("each result is a row: path:line, the symbol, the snippet's first non-blank line", async () => {
    stub.input = 'restock';
    const { deps } = fakeDeps({ results: HITS, indexed: ready(3) });
    await searchCodebase(deps);
    assert.equal(stub.quickPicks.length, 1);
    const { items, options } = stub.quickPicks[0];
    assert.deepEqual(
      (items as SearchItem[]).map(({ label, description, detail }) => ({ label, description, detail })),
      [
        { label: 'src/inventory.py:12', description: 'Inventory.restock', detail: '@staticmethod' },
        { label: 'README.md:1', description: undefined, detail: '# Shop' },
      ],
    );
    assert.equal(options.title, 'Llama: 2 results for "restock"');
    assert.equal(options.matchOnDescription, true);
    assert.equal(options.matchOnDetail, true);
    assert.deepEqual(stub.opened, [], 'Escape in the pick opens nothing');
  });

  test('the chosen result opens with the cursor on its first line and its range revealed', async () => {
    stub.input = 'restock';
    stub.pick = (items) => items[0];
    const { deps, errors } = fakeDeps({ results: HITS, indexed: ready(3) });
    await searchCodebase(deps);
    assert.equal(stub.opened.length, 1);
    const [opened] = stub.opened;
    assert.equal(opened.uri, `${FOLDER}/src/inventory.py`);
    const { selection } = opened.options as { selection: { start: Position; end: Position } };
    assert.deepEqual(ends(selection), [{ line: 11, character: 0 }, { line: 11, character: 0 }]);
    assert.equal(opened.revealed.length, 1);
    const [range, revealType] = opened.revealed[0];
    assert.deepEqual(ends(range), [{ line: 11, character: 0 }, { line: 19, character: 0 }]);
    assert.equal(revealType, TextEditorRevealType.InCenterIfOutsideViewport);
    assert.deepEqual(errors, []);
  });

  test('results from a partial index say so in the title', async () => {
    stub.input = 'restock';
    const { deps } = fakeDeps({ results: HITS.slice(0, 1), indexed: { files: 40, chunks: 200, ready: false } });
    await searchCodebase(deps);
    assert.equal(
      stub.quickPicks[0].options.title,
      'Llama: 1 result for "restock" (the index is still being built: 40 files so far)',
    );
  });

  test('no results: an information message, no pick', async () => {
    stub.input = 'zebra crossing';
    const { deps } = fakeDeps({ results: [], indexed: ready(214) });
    await searchCodebase(deps);
    assert.deepEqual(stub.messages, [['info', 'Llama: nothing in the codebase matches "zebra crossing" (214 files indexed).']]);
    assert.deepEqual(stub.quickPicks, []);
  });

  test('no results while the index is being built: it says so, with its file count', async () => {
    stub.input = 'zebra crossing';
    const { deps } = fakeDeps({ results: [], indexed: { files: 1, chunks: 4, ready: false } });
    await searchCodebase(deps);
    assert.deepEqual(stub.messages, [
      ['info', 'Llama: nothing matches "zebra crossing" yet: the index is still being built (1 file so far).'],
    ]);
  });

  test('no results with the index turned off, or no folder: it says why instead', async () => {
    stub.input = 'zebra';
    stub.config['llamaLsp.codebaseIndex'] = false;
    const empty = { results: [], indexed: { files: 0, chunks: 0, ready: false } };
    await searchCodebase(fakeDeps(empty).deps);
    stub.config = {};
    stub.folders = [];
    await searchCodebase(fakeDeps(empty).deps);
    assert.deepEqual(stub.messages, [
      ['info', 'Llama: the workspace is not indexed (llamaLsp.codebaseIndex is off), so nothing matches "zebra".'],
      ['info', 'Llama: no folder is open, so there is no codebase to search.'],
    ]);
  });

  test("a failed request goes to the notifier as the other requests' errors do; a cancelled one is quiet", async () => {
    stub.input = 'restock';
    const failed = fakeDeps(new Error('The llama-lsp server is not running.'));
    await searchCodebase(failed.deps);
    assert.deepEqual(failed.errors, ['The llama-lsp server is not running.']);

    const older = fakeDeps(Object.assign(new Error('Method Not Found'), { code: ErrorCode.MethodNotFound }));
    await searchCodebase(older.deps);
    assert.match(older.errors[0], /^Llama: this llama-lsp server cannot search the codebase/);

    const cancelled = fakeDeps(Object.assign(new Error('cancelled'), { code: ErrorCode.RequestCancelled }));
    await searchCodebase(cancelled.deps);
    assert.deepEqual(cancelled.errors, []);
    assert.deepEqual(stub.messages, []);
    assert.deepEqual(stub.quickPicks, []);
  });
});
