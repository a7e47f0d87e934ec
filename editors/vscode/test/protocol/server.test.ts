/**
 * The protocol against the real server, over stdio, with the payloads the extension sends (the request
 * types and settings come from the extension's own modules). Needs the llama-lsp executable
 * (LLAMA_LSP_SERVER, default: the repository's .venv) and an installed model (LLAMA_LSP_MODEL, default
 * the small test model); a missing one fails the test rather than skipping it.
 */

import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import {
  CancellationTokenSource,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import {
  ErrorCode,
  SECTION,
  chatDeltaProgress,
  chatRequest,
  nextEditRequest,
  nextEditShownNotification,
  searchCodebaseRequest,
  statsRequest,
  statusNotification,
  type ChatParams,
  type ChatResult,
  type SearchCodebaseResult,
  type StatusParams,
} from '../../src/protocol';

/** LSP 3.18's answer to textDocument/inlineCompletion, as the server sends it (a plain string insertText). */
interface InlineCompletionList {
  items: { insertText: string; range?: { start: unknown; end: unknown } }[];
}
import { initializationOptions, readSettings } from '../../src/settings';

const repoRoot = path.resolve(__dirname, '..', '..', '..', '..', '..');
const serverPath = process.env.LLAMA_LSP_SERVER ?? path.join(repoRoot, '.venv', 'bin', 'llama-lsp');
const model = process.env.LLAMA_LSP_MODEL ?? 'qwen2.5-coder-0.5b';
const LOAD_TIMEOUT_MS = 300_000;

const SOURCE = `def add(a, b):
    return a + b


def mean(values):
    return sum(values) / len(values)
`;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe(`llama-lsp over stdio (${model})`, { timeout: 600_000 }, () => {
  let child: ChildProcessWithoutNullStreams;
  let connection: MessageConnection;
  let workspace: string;
  let documentUri: string;
  const statuses: StatusParams[] = [];
  const shownMessages: string[] = [];
  let stderr = '';
  let tokenCounter = 0;
  let serverCapabilities: Record<string, unknown> = {};

  // What the extension sends as initializationOptions, plus two test-only server settings: a private
  // cache directory (no slot state from other runs) and a bound on answer length (time on 2 cores).
  const settings = readSettings({ get: <T>(key: string) => (key === 'model' ? model : undefined) as T | undefined });
  const options = { ...initializationOptions(settings, true), cacheDir: '', maxTokens: 256 };

  /** assistant/chat as the extension's LlamaServer.chat sends it: a fresh partialResultToken per request. */
  async function chat(
    params: ChatParams,
    onDelta: (text: string) => void,
    source?: CancellationTokenSource,
  ): Promise<ChatResult> {
    const partialResultToken = `llama-lsp-chat-${++tokenCounter}`;
    const progress = connection.onProgress(chatDeltaProgress, partialResultToken, (value) => onDelta(value.delta));
    try {
      return await connection.sendRequest(chatRequest, { ...params, partialResultToken }, source?.token);
    } finally {
      progress.dispose();
    }
  }

  before(async () => {
    assert.ok(
      fs.existsSync(serverPath),
      `no llama-lsp server at ${serverPath}: run make setup, or set LLAMA_LSP_SERVER`,
    );
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'llama-lsp-protocol-'));
    options.cacheDir = path.join(workspace, '.cache');
    const file = path.join(workspace, 'stats.py');
    fs.writeFileSync(file, SOURCE);
    documentUri = pathToFileURL(file).href;

    child = spawn(serverPath, ['--stdio'], { cwd: workspace, stdio: 'pipe' });
    child.stderr.on('data', (data: Buffer) => {
      stderr = (stderr + data.toString()).slice(-4000);
      if (process.env.LLAMA_LSP_TEST_LOG) process.stderr.write(data); // the server's log, to debug a failure
    });
    connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    const statusListeners: ((params: StatusParams) => void)[] = [];
    connection.onNotification(statusNotification, (params) => {
      statuses.push(params);
      for (const listener of statusListeners) listener(params);
    });
    connection.onNotification('window/showMessage', (params: { message: string }) => {
      shownMessages.push(params.message);
    });
    connection.onNotification('window/logMessage', () => undefined);
    connection.onRequest('window/workDoneProgress/create', () => null);
    connection.onRequest('client/registerCapability', () => null);
    connection.onRequest('workspace/configuration', (params: { items: { section?: string }[] }) =>
      params.items.map((item) => (item.section === SECTION ? options : null)),
    );
    connection.listen();

    const ready = new Promise<void>((resolve, reject) => {
      statusListeners.push((params) => {
        if (params.state === 'ready') resolve();
        if (params.state === 'error') reject(new Error(`server error: ${params.message}`));
      });
      child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${stderr}`)));
    });
    const initialized = await connection.sendRequest<{ capabilities: Record<string, unknown> }>('initialize', {
      processId: process.pid,
      rootUri: pathToFileURL(workspace).href,
      workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: 'w' }],
      capabilities: {
        window: { workDoneProgress: true },
        workspace: { configuration: true, workspaceFolders: true },
        // As vscode-languageclient's built-in InlineCompletionItemFeature advertises it.
        textDocument: { inlineCompletion: { dynamicRegistration: true } },
      },
      initializationOptions: options,
    });
    serverCapabilities = initialized.capabilities;
    await connection.sendNotification('initialized', {});
    await withTimeout(ready, LOAD_TIMEOUT_MS, 'the model to load');
    await connection.sendNotification('textDocument/didOpen', {
      textDocument: { uri: documentUri, languageId: 'python', version: 1, text: SOURCE },
    });
  });

  after(async () => {
    if (connection !== undefined) {
      try {
        await withTimeout(connection.sendRequest('shutdown'), 15_000, 'shutdown');
        await connection.sendNotification('exit');
      } catch {
        // the process is killed below either way
      }
      connection.dispose();
    }
    if (child !== undefined && child.exitCode === null) {
      await withTimeout(new Promise((resolve) => child.once('exit', resolve)), 5_000, 'exit').catch(() => child.kill());
    }
    if (workspace) fs.rmSync(workspace, { recursive: true, force: true });
  });

  let first: ChatResult;

  test('the answer streams as $/progress deltas that concatenate to the content', { timeout: 180_000 }, async () => {
    const deltas: string[] = [];
    first = await chat(
      {
        message: 'What does mean() return? Answer in one short sentence.',
        textDocument: { uri: documentUri },
        range: { start: { line: 4, character: 0 }, end: { line: 6, character: 0 } },
      },
      (delta) => deltas.push(delta),
    );
    assert.ok(first.content.trim().length > 0, 'an answer');
    assert.ok(deltas.length >= 2, `several deltas, got ${deltas.length}`);
    assert.equal(deltas.join(''), first.content);
    assert.ok(['stop', 'length'].includes(first.finishReason), first.finishReason);
    assert.equal(typeof first.conversationId, 'string');
    assert.ok(first.stats.nPrompt > 0 && first.stats.nGenerated > 0);
    const { nDrafted, nAccepted } = first.stats;
    assert.ok(0 <= nAccepted && nAccepted <= nDrafted, `accepted ${nAccepted} of ${nDrafted} drafted`);
    assert.ok(
      statuses.some((s) => s.state === 'busy'),
      'a busy status while it answered',
    );
  });

  test('a follow-up in the same conversation reuses the cached prompt', { timeout: 180_000 }, async (t) => {
    const deltas: string[] = [];
    const followUp = await chat(
      {
        message: 'And what if values is empty? One sentence.',
        textDocument: { uri: documentUri },
        conversationId: first.conversationId,
      },
      (delta) => deltas.push(delta),
    );
    assert.equal(followUp.conversationId, first.conversationId);
    assert.equal(deltas.join(''), followUp.content);
    const { nPrompt, nReused } = followUp.stats;
    assert.ok(nReused !== null && nReused > 0, `nReused ${nReused}`); // null: only a remote backend's
    assert.ok(nReused / nPrompt > 0.5, `${nReused} of ${nPrompt} prompt tokens reused`);
    t.diagnostic(
      `follow-up: ${nReused} of ${nPrompt} prompt tokens reused, first token ${followUp.stats.tFirstTokenMs} ms`,
    );
    t.diagnostic(
      `first question: first token ${first.stats.tFirstTokenMs} ms for ${first.stats.nPrompt} prompt tokens`,
    );
    const stats = await withTimeout(connection.sendRequest(statsRequest, {}), 30_000, 'assistant/stats');
    assert.equal(stats.model, model);
    assert.ok(stats.totals.requests >= 2);
    assert.equal(stats.lastStats?.nPrompt, nPrompt);
    assert.equal(stats.lastStats?.nReused, nReused);
  });

  test('cancelling answers RequestCancelled (-32800) promptly', { timeout: 180_000 }, async (t) => {
    const source = new CancellationTokenSource();
    let cancelledAt = 0;
    const answer = chat(
      {
        message: 'Write a long, detailed tutorial about Python lists, with many examples.',
        textDocument: { uri: documentUri },
      },
      () => {
        if (cancelledAt === 0) {
          cancelledAt = Date.now();
          source.cancel();
        }
      },
      source,
    );
    await assert.rejects(answer, (error: unknown) => {
      assert.ok(error instanceof ResponseError, String(error));
      assert.equal(error.code, ErrorCode.RequestCancelled);
      return true;
    });
    const latency = Date.now() - cancelledAt;
    assert.ok(cancelledAt > 0, 'cancelled after the first delta');
    assert.ok(latency < 5_000, `answered ${latency} ms after the cancel`);
    t.diagnostic(`RequestCancelled ${latency} ms after $/cancelRequest`);
  });

  test('the server is still serving after the cancel, and reports no errors', { timeout: 180_000 }, async () => {
    const result = await chat({ message: 'Say OK.' }, () => undefined);
    assert.ok(result.content.length > 0);
    assert.deepEqual(shownMessages, []);
  });

  const completionTitle = "inline completion: one suggestion at the cursor, none with a line's worth right of it";
  test(completionTitle, { timeout: 180_000 }, async (t) => {
    // The client's provider is registered only when the server says it has one.
    assert.ok(serverCapabilities.inlineCompletionProvider, JSON.stringify(serverCapabilities));
    const file = path.join(workspace, 'add.py');
    const text = 'def add(a, b):\n    return\n';
    fs.writeFileSync(file, text);
    const uri = pathToFileURL(file).href;
    await connection.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId: 'python', version: 1, text },
    });
    // What the client sends for an automatic trigger (code2ProtocolConverter.asInlineCompletionParams).
    const complete = (line: number, character: number) =>
      withTimeout(
        connection.sendRequest<InlineCompletionList>('textDocument/inlineCompletion', {
          textDocument: { uri },
          position: { line, character },
          context: { triggerKind: 2 },
        }),
        120_000,
        'textDocument/inlineCompletion',
      );
    const started = Date.now();
    const answer = await complete(1, 10);
    const ms = Date.now() - started;
    assert.equal(answer.items.length, 1, JSON.stringify(answer));
    const [item] = answer.items;
    assert.equal(typeof item.insertText, 'string');
    assert.ok(item.insertText.trim().length > 0, JSON.stringify(item.insertText));
    assert.deepEqual(item.range, { start: { line: 1, character: 10 }, end: { line: 1, character: 10 } });
    t.diagnostic(`completion after "    return": ${JSON.stringify(item.insertText)} in ${ms} ms`);

    const stats = await withTimeout(connection.sendRequest(statsRequest, {}), 30_000, 'assistant/stats');
    const last = stats.lastCompletion;
    assert.ok(last, 'assistant/stats has lastCompletion');
    assert.equal(typeof last.tMs, 'number');
    if (!last.cached) assert.ok((last.nGenerated ?? 0) > 0, JSON.stringify(last));

    // At the start of "def add(a, b):" the whole line is right of the cursor: no suggestion.
    assert.deepEqual((await complete(0, 0)).items, []);
    assert.deepEqual(shownMessages, []);
  });

  test('assistant/searchCodebase finds mean() in the folder once the index is built', { timeout: 120_000 }, async (t) => {
    // The index is built in the background after `initialized` (no git here: every file outside
    // hidden folders, so not the cache); until it is ready the results are the files indexed so far.
    const search = (query: string) =>
      withTimeout(connection.sendRequest(searchCodebaseRequest, { query, limit: 5 }), 30_000, 'assistant/searchCodebase');
    let result: SearchCodebaseResult;
    const started = Date.now();
    for (;;) {
      result = await search('the mean of the values');
      if (result.indexed.ready) break;
      assert.ok(Date.now() - started < 90_000, `the index was not built: ${JSON.stringify(result)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    t.diagnostic(`index: ${result.indexed.files} file(s), ${result.indexed.chunks} chunks`);
    assert.ok(result.indexed.files >= 1 && result.indexed.chunks >= 2, JSON.stringify(result.indexed));
    const [first] = result.results;
    assert.ok(first, JSON.stringify(result));
    assert.equal(first.uri, pathToFileURL(fs.realpathSync(path.join(workspace, 'stats.py'))).href);
    assert.equal(first.symbol, 'mean');
    assert.deepEqual(first.range.start, { line: 4, character: 0 });
    assert.ok(first.snippet.startsWith('def mean(values):'), JSON.stringify(first.snippet));
    assert.equal(typeof first.score, 'number');
    assert.ok(result.results.length <= 5);

    // What the input box already refuses, the server refuses too (InvalidParams), and goes on serving.
    await assert.rejects(connection.sendRequest(searchCodebaseRequest, { query: ' ' }), (error: unknown) => {
      assert.ok(error instanceof ResponseError, String(error));
      assert.equal(error.code, ErrorCode.InvalidParams);
      return true;
    });
    assert.ok((await search('add')).results.length > 0);
    assert.deepEqual(shownMessages, []);
  });

  test('assistant/nextEdit answers null, never an error, for a stale version and for a document not edited yet', { timeout: 60_000 }, async () => {
    // As nextEdit.ts sends it (NextEditFlow.ask): the version and cursor of the active editor.
    const ask = (version: number) =>
      withTimeout(
        connection.sendRequest(nextEditRequest, { textDocument: { uri: documentUri, version }, position: { line: 4, character: 8 } }),
        30_000,
        'assistant/nextEdit',
      );
    assert.equal(await ask(0), null); // stats.py is at version 1
    assert.equal(await ask(1), null); // no edit yet: nothing to follow
    // Feedback about an id the server never gave is ignored (a suggestion from before a restart).
    await connection.sendNotification(nextEditShownNotification, { id: 'not-a-suggestion' });
    const stats = await withTimeout(connection.sendRequest(statsRequest, {}), 30_000, 'assistant/stats');
    const counts = stats.nextEdit;
    assert.ok(counts, `assistant/stats has no nextEdit: ${JSON.stringify(stats)}`);
    assert.ok(counts.requests >= 2, JSON.stringify(counts));
    assert.equal(counts.suggested, 0);
    assert.equal(counts.shown, 0);
    assert.deepEqual(shownMessages, []);
  });
});
