/** The chat controller against a fake server and a fake view: streaming, cancel, conversations, edits. */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type * as vscode from 'vscode';
import { ChatController, type ChatBackend, type ChatContext, type ChatHost } from '../../src/chat/controller';
import type { EntryView, FromWebview, ToWebview } from '../../src/chat/messages';
import type { FileReference } from '../../src/chat/references';
import { ErrorCode, type ChatParams, type ChatResult, type Verification, type WorkspaceEdit } from '../../src/protocol';

const stats = {
  nPrompt: 1800,
  nReused: 1728,
  nEvaluated: 72,
  nGenerated: 40,
  nDrafted: 0,
  nAccepted: 0,
  tPrefillMs: 1,
  tFirstTokenMs: 2,
  tDecodeMs: 3,
  steps: 1,
};

function result(content: string, extra: Partial<ChatResult> = {}): ChatResult {
  return { conversationId: 'c1', content, finishReason: 'stop', toolCalls: [], stats, ...extra };
}

/** A request the test drives by hand: deltas, then an answer or an error. */
interface PendingChat {
  params: ChatParams;
  token: vscode.CancellationToken;
  delta(text: string): void;
  resolve(value: ChatResult): void;
  reject(error: unknown): void;
}

class FakeBackend implements ChatBackend {
  readonly calls: PendingChat[] = [];
  chat(params: ChatParams, onDelta: (text: string) => void, token: vscode.CancellationToken): Promise<ChatResult> {
    return new Promise((resolve, reject) => {
      this.calls.push({ params, token, delta: onDelta, resolve, reject });
    });
  }
  get last(): PendingChat {
    return this.calls[this.calls.length - 1];
  }
}

class FakeHost implements ChatHost {
  context: ChatContext | undefined = {
    uri: 'file:///w/app.py',
    range: { start: { line: 2, character: 0 }, end: { line: 9, character: 0 } },
    label: 'app.py, lines 3-9',
  };
  readonly applied: WorkspaceEdit[] = [];
  readonly previewed: WorkspaceEdit[] = [];
  readonly previewedChecks: (Verification | undefined)[] = [];
  readonly errors: string[] = [];
  readonly opened: FileReference[] = [];
  applyFailure: string | undefined;
  currentContext(): ChatContext | undefined {
    return this.context;
  }
  async previewEdit(edit: WorkspaceEdit, verification?: Verification): Promise<void> {
    this.previewed.push(edit);
    this.previewedChecks.push(verification);
  }
  async applyEdit(edit: WorkspaceEdit): Promise<string | undefined> {
    this.applied.push(edit);
    return this.applyFailure;
  }
  reportError(message: string): void {
    this.errors.push(message);
  }
  async openFile(reference: FileReference): Promise<void> {
    this.opened.push(reference);
  }
}

function setup() {
  const backend = new FakeBackend();
  const host = new FakeHost();
  const controller = new ChatController(backend, host);
  const posted: ToWebview[] = [];
  controller.attachView({ post: (m) => posted.push(m) });
  const updates = (): EntryView[] => posted.flatMap((m) => (m.type === 'update' ? [m.entry] : []));
  return { backend, host, controller, posted, updates };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('chat controller', () => {
  test('streams deltas to the view, then finishes with the result', async () => {
    const { backend, controller, posted, updates } = setup();
    const asked = controller.ask('  What does this do?  ');
    await tick();
    assert.deepEqual(backend.last.params, {
      message: 'What does this do?',
      textDocument: { uri: 'file:///w/app.py' },
      range: { start: { line: 2, character: 0 }, end: { line: 9, character: 0 } },
    });
    const appended = posted.flatMap((m) => (m.type === 'append' ? [m.entry] : []));
    assert.deepEqual(
      appended.map((e) => [e.role, e.text, e.context]),
      [
        ['user', 'What does this do?', 'app.py, lines 3-9'],
        ['assistant', '', undefined],
      ],
    );
    assert.equal(controller.busy, true);
    backend.last.delta('It adds ');
    backend.last.delta('two numbers.');
    const deltas = posted.flatMap((m) => (m.type === 'delta' ? [m.text] : []));
    assert.deepEqual(deltas, ['It adds ', 'two numbers.']);
    backend.last.resolve(result('It adds two numbers.'));
    await asked;
    const [answer] = updates();
    assert.equal(answer.text, 'It adds two numbers.');
    assert.equal(answer.done, true);
    assert.equal(answer.finishReason, 'stop');
    assert.equal(answer.stats, '1,728 of 1,800 prompt tokens cached (96%) · 40 tokens');
    assert.equal(controller.busy, false);
    assert.deepEqual(
      posted.filter((m) => m.type === 'busy'),
      [
        { type: 'busy', busy: true },
        { type: 'busy', busy: false },
      ],
    );
  });

  test('a follow-up continues the conversation', async () => {
    const { backend, controller } = setup();
    const first = controller.ask('one');
    await tick();
    backend.last.resolve(result('a', { conversationId: 'conv-7' }));
    await first;
    const second = controller.ask('two');
    await tick();
    assert.equal(backend.last.params.conversationId, 'conv-7');
    backend.last.resolve(result('b', { conversationId: 'conv-7' }));
    await second;
  });

  test('without a file the question goes without a document', async () => {
    const { backend, host, controller } = setup();
    host.context = undefined;
    const asked = controller.ask('hi');
    await tick();
    assert.deepEqual(backend.last.params, { message: 'hi' });
    backend.last.resolve(result('hello'));
    await asked;
  });

  test('Stop cancels the request; the streamed text stays, marked cancelled', async () => {
    const { backend, controller, updates } = setup();
    const asked = controller.ask('long question');
    await tick();
    backend.last.delta('Partial ');
    let cancelled = false;
    backend.last.token.onCancellationRequested(() => {
      cancelled = true;
      // what the language client does: the server answers RequestCancelled
      backend.last.reject(Object.assign(new Error('cancelled'), { code: ErrorCode.RequestCancelled }));
    });
    controller.stop();
    await asked;
    assert.ok(cancelled);
    const [answer] = updates();
    assert.equal(answer.finishReason, 'cancelled');
    assert.equal(answer.text, 'Partial ');
    assert.equal(answer.error, undefined);
    assert.equal(controller.busy, false);
  });

  test('one question at a time: asking while busy does nothing', async () => {
    const { backend, controller } = setup();
    const first = controller.ask('one');
    await tick();
    await controller.ask('two');
    assert.equal(backend.calls.length, 1);
    backend.last.resolve(result('a'));
    await first;
  });

  test('New conversation cancels the running answer, clears the view and forgets the conversation', async () => {
    const { backend, controller, posted } = setup();
    const first = controller.ask('one');
    await tick();
    const running = backend.last;
    controller.newConversation();
    assert.equal(running.token.isCancellationRequested, true);
    assert.deepEqual(posted[posted.length - 1], {
      type: 'restore',
      entries: [],
      busy: true,
      context: 'app.py, lines 3-9',
    });
    const before = posted.length;
    running.resolve(result('late', { conversationId: 'old' })); // an answer that arrives anyway
    await first;
    assert.ok(!posted.slice(before).some((m) => m.type === 'update' || m.type === 'delta'));
    const second = controller.ask('fresh');
    await tick();
    assert.equal(backend.last.params.conversationId, undefined);
    backend.last.resolve(result('new'));
    await second;
  });

  test('errors show in the answer', async () => {
    const { backend, controller, updates } = setup();
    const asked = controller.ask('q');
    await tick();
    backend.last.reject(
      Object.assign(new Error("llama-lsp: model 'x' is not installed"), { code: ErrorCode.RequestFailed }),
    );
    await asked;
    const [answer] = updates();
    assert.equal(answer.finishReason, 'error');
    assert.equal(answer.error, "llama-lsp: model 'x' is not installed");
  });

  test('an answer with an edit offers it; Preview and Apply go to the host once', async () => {
    const { backend, host, controller, updates } = setup();
    const edit: WorkspaceEdit = {
      documentChanges: [{ textDocument: { uri: 'file:///w/app.py', version: 1 }, edits: [] }],
    };
    const asked = controller.ask('fix it');
    await tick();
    backend.last.resolve(
      result('Done.', {
        edit,
        toolCalls: [{ name: 'edit', arguments: { path: 'app.py', old_text: 'a', new_text: 'b' }, result: 'ok' }],
      }),
    );
    await asked;
    const answer = updates()[0];
    assert.deepEqual(answer.edit, { files: ['app.py'] });
    assert.deepEqual(answer.tools, ['edit app.py']);
    await controller.handle({ type: 'preview', id: answer.id });
    assert.deepEqual(host.previewed, [edit]);
    await controller.handle({ type: 'apply', id: answer.id });
    await controller.handle({ type: 'apply', id: answer.id });
    assert.deepEqual(host.applied, [edit]);
    assert.deepEqual(updates()[1].edit, { files: ['app.py'], applied: true });
  });

  test("the edit's check is shown with it, and goes to the preview", async () => {
    const { backend, host, controller, updates } = setup();
    const edit: WorkspaceEdit = { documentChanges: [] };
    const verification: Verification = {
      command: 'pytest -q',
      passed: false,
      attempts: 3,
      output: 'E   assert 3 == 4',
      summary: 'not verified: `pytest -q` failed on all 3 attempts',
    };
    const asked = controller.ask('fix it');
    await tick();
    backend.last.resolve(result('Done.', { edit, verification }));
    await asked;
    const answer = updates()[0];
    assert.deepEqual(answer.verification, {
      state: 'failed',
      text: '⚠ not verified: `pytest -q` failed on all 3 attempts',
      output: 'E   assert 3 == 4',
    });
    await controller.handle({ type: 'preview', id: answer.id });
    assert.deepEqual(host.previewedChecks, [verification]);
  });

  test('an answer without an edit or a check has no verification line', async () => {
    const { backend, controller, updates } = setup();
    const asked = controller.ask('what is this?');
    await tick();
    backend.last.resolve(result('A function.'));
    await asked;
    assert.equal(updates()[0].verification, undefined);
  });

  test('a refused edit is reported and can be tried again', async () => {
    const { backend, host, controller, updates } = setup();
    const edit: WorkspaceEdit = { documentChanges: [] };
    const asked = controller.ask('fix it');
    await tick();
    backend.last.resolve(result('Done.', { edit }));
    await asked;
    host.applyFailure = 'app.py changed since the answer was written; ask again.';
    await controller.handle({ type: 'apply', id: updates()[0].id });
    assert.deepEqual(host.errors, [
      'The edit was not applied: app.py changed since the answer was written; ask again.',
    ]);
    assert.equal(updates().length, 1);
  });

  test("showAnswer shows the Explain action's answer and continues its conversation", async () => {
    const { backend, controller, posted } = setup();
    controller.showAnswer({ conversationId: 'explain-1', title: 'Llama: Explain', content: 'It sorts.' });
    const appended = posted.flatMap((m) => (m.type === 'append' ? [m.entry] : []));
    assert.deepEqual(
      appended.map((e) => [e.role, e.text, e.done ?? false]),
      [
        ['user', 'Llama: Explain', false],
        ['assistant', 'It sorts.', true],
      ],
    );
    const asked = controller.ask('Why?');
    await tick();
    assert.equal(backend.last.params.conversationId, 'explain-1');
    backend.last.resolve(result('Because.'));
    await asked;
  });

  test('Ask about selection pins the context for the next question only', async () => {
    const { backend, host, controller, posted } = setup();
    const pinned: ChatContext = {
      uri: 'file:///w/lib.py',
      label: 'lib.py, line 1',
      range: { start: { line: 0, character: 0 }, end: { line: 0, character: 5 } },
    };
    controller.pinContext(pinned);
    assert.deepEqual(posted.slice(-2), [{ type: 'context', context: 'lib.py, line 1' }, { type: 'focus' }]);
    host.context = undefined; // the user clicked into the chat: no editor any more
    const first = controller.ask('what is this?');
    await tick();
    assert.equal(backend.last.params.textDocument?.uri, 'file:///w/lib.py');
    backend.last.resolve(result('a'));
    await first;
    const second = controller.ask('and now?');
    await tick();
    assert.equal(backend.last.params.textDocument, undefined);
    backend.last.resolve(result('b'));
    await second;
  });

  test('a clicked file link goes to the host; a malformed one (absolute, .., no path) does not', async () => {
    const { host, controller } = setup();
    await controller.handle({ type: 'openFile', path: 'shop/prices.py', line: 3, column: 5 });
    await controller.handle({ type: 'openFile', path: 'inventory.py' });
    // A line that is no positive integer is dropped, and the column with it.
    await controller.handle({ type: 'openFile', path: 'a.py', line: 0, column: 2 });
    for (const path of ['/etc/passwd', '../outside.py', 'shop/../../x.py', './a.py', 'a\\b.py', 'C:/x.py', '']) {
      await controller.handle({ type: 'openFile', path, line: 1 });
    }
    await controller.handle({ type: 'openFile', path: 42 } as unknown as FromWebview);
    assert.deepEqual(host.opened, [
      { path: 'shop/prices.py', line: 3, column: 5 },
      { path: 'inventory.py' },
      { path: 'a.py' },
    ]);
    assert.deepEqual(host.errors, []);
  });

  test('a file the host fails to open is reported', async () => {
    const { host, controller } = setup();
    host.openFile = async () => {
      throw new Error('cannot read it');
    };
    await controller.handle({ type: 'openFile', path: 'shop/prices.py', line: 3 });
    assert.deepEqual(host.errors, ['Could not open shop/prices.py: cannot read it']);
  });

  test('a reopened view gets the transcript back', async () => {
    const { backend, controller } = setup();
    const asked = controller.ask('q');
    await tick();
    backend.last.resolve(result('a'));
    await asked;
    const posted: ToWebview[] = [];
    controller.attachView({ post: (m) => posted.push(m) });
    await controller.handle({ type: 'ready' });
    assert.equal(posted.length, 1);
    const restore = posted[0];
    assert.equal(restore.type, 'restore');
    if (restore.type === 'restore')
      assert.deepEqual(
        restore.entries.map((e) => e.text),
        ['q', 'a'],
      );
  });
});
