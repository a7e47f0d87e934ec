/**
 * Next-edit suggestions without VS Code: what Tab does, how edits are drawn, which answers are shown,
 * when a suggestion goes and what the server is told (nextEditFlow.ts and nextEditView.ts, with a fake
 * clock and fake effects standing in for the editor and the server).
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { COMMAND_DISMISS, COMMAND_GO_TO_OR_ACCEPT, CONTEXT_VISIBLE } from '../../src/nextEdit';
import {
  cursorAfterEdits,
  fitsDocument,
  NextEditFlow,
  tabAction,
  type EditorState,
  type Feedback,
  type FlowEffects,
  type Suggestion,
} from '../../src/nextEditFlow';
import {
  decorationPlan,
  editDiff,
  LINE_BREAK_MARK,
  MAX_GHOST_CHARS,
  narrowedForDisplay,
  TAB_ACCEPT,
  TAB_GO_TO,
} from '../../src/nextEditView';
import { ErrorCode, type NextEdit, type NextEditParams, type Position, type TextEdit } from '../../src/protocol';
import { nextEditSettings } from '../../src/settings';

const URI = 'file:///work/shop/prices.py';
const SOURCE = [
  'def total_price(items, tax):',
  '    subtotal = sum(item.price for item in items)',
  '    return subtotal * (1 + tax_rate)',
  '',
].join('\n');
const LINES = SOURCE.split('\n');
const lineText = (n: number): string => LINES[n];

function edit(line: number, start: number, end: number, newText: string): TextEdit {
  return { range: { start: { line, character: start }, end: { line, character: end } }, newText };
}

/** `tax_rate` on line 3 (index 2) becomes `tax`: what the server suggests after the rename in the signature. */
const RENAME = edit(2, 27, 35, 'tax');

function suggestion(edits: TextEdit[] = [RENAME], version = 7): Suggestion {
  return { id: 's1', uri: URI, version, edits };
}

describe('next edit: what Tab does', () => {
  test('away from the suggestion, Tab goes to its first edit', () => {
    const action = tabAction(suggestion(), { uri: URI, version: 7, cursor: { line: 0, character: 26 } });
    assert.deepEqual(action, { kind: 'jump', to: { line: 2, character: 27 } });
  });

  test('on its line, anywhere on it, Tab accepts', () => {
    for (const character of [0, 27, 40]) {
      assert.deepEqual(tabAction(suggestion(), { uri: URI, version: 7, cursor: { line: 2, character } }), { kind: 'accept' });
    }
  });

  test('on the line of any of its edits (here the second), Tab accepts all of them', () => {
    const s = suggestion([edit(0, 0, 3, 'async def'), RENAME]);
    assert.deepEqual(tabAction(s, { uri: URI, version: 7, cursor: { line: 2, character: 0 } }), { kind: 'accept' });
    assert.deepEqual(tabAction(s, { uri: URI, version: 7, cursor: { line: 1, character: 0 } }), {
      kind: 'jump',
      to: { line: 0, character: 0 },
    });
  });

  test('an edit over several lines: any of them counts as at it', () => {
    const s = suggestion([{ range: { start: { line: 1, character: 4 }, end: { line: 2, character: 10 } }, newText: 'x' }]);
    assert.equal(tabAction(s, { uri: URI, version: 7, cursor: { line: 2, character: 0 } }).kind, 'accept');
    assert.equal(tabAction(s, { uri: URI, version: 7, cursor: { line: 3, character: 0 } }).kind, 'jump');
  });

  test('a document at another version than the suggestion was made for: stale, dropped', () => {
    assert.deepEqual(tabAction(suggestion(), { uri: URI, version: 8, cursor: { line: 2, character: 0 } }), { kind: 'stale' });
  });

  test('another document active: stale', () => {
    const other = { uri: 'file:///work/shop/other.py', version: 7, cursor: { line: 2, character: 0 } };
    assert.deepEqual(tabAction(suggestion(), other), { kind: 'stale' });
  });
});

describe('next edit: answers that fit the document', () => {
  const editor = { lineCount: LINES.length, lineLength: (n: number) => LINES[n].length };

  test('ranges inside the document, in order: shown', () => {
    assert.ok(fitsDocument([edit(0, 0, 3, 'x'), RENAME], editor));
    assert.ok(fitsDocument([edit(3, 0, 0, 'new line\n')], editor)); // the empty last line
  });

  test('a range past the last line or past its line end: not shown', () => {
    assert.ok(!fitsDocument([edit(4, 0, 0, 'x')], editor));
    assert.ok(fitsDocument([edit(2, 27, 36, 'tax)')], editor)); // to the line's end
    assert.ok(!fitsDocument([edit(2, 27, 37, 'tax')], editor));
    assert.ok(!fitsDocument([edit(-1, 0, 0, 'x')], editor));
  });

  test('a range that ends before it starts, overlapping or unordered edits: not shown', () => {
    assert.ok(!fitsDocument([edit(2, 30, 27, 'x')], editor));
    assert.ok(!fitsDocument([edit(2, 20, 30, 'a'), edit(2, 27, 35, 'b')], editor));
    assert.ok(!fitsDocument([RENAME, edit(0, 0, 3, 'x')], editor));
  });

  test('touching edits (one ends where the next starts) fit', () => {
    assert.ok(fitsDocument([edit(2, 20, 27, 'a'), edit(2, 27, 35, 'b')], editor));
  });
});

describe('next edit: the cursor after an accepted suggestion', () => {
  test('at the end of the new text', () => {
    assert.deepEqual(cursorAfterEdits(SOURCE, [RENAME]), { line: 2, character: 30 });
  });

  test('earlier edits on the same line shift it', () => {
    const edits = [edit(0, 16, 21, 'products'), edit(0, 23, 26, 'rate')];
    // `def total_price(products, rate):` - the cursor after `rate`
    assert.deepEqual(cursorAfterEdits(SOURCE, edits), { line: 0, character: 30 });
  });

  test('inserted lines before it move it down; a multi-line insertion ends on its last line', () => {
    const edits = [edit(0, 28, 28, '\n    """Total."""'), edit(2, 4, 4, 'total = 0\n    ')];
    assert.deepEqual(cursorAfterEdits(SOURCE, edits), { line: 4, character: 4 });
  });
});

describe('next edit: how a suggestion is drawn', () => {
  test('a rename on one line is drawn as the part that changes: `_rate` struck through, nothing inserted', () => {
    assert.deepEqual(narrowedForDisplay(RENAME, lineText), edit(2, 30, 35, ''));
    const plan = decorationPlan([RENAME], 0, lineText);
    assert.deepEqual(plan.removed, [edit(2, 30, 35, '').range]);
    assert.deepEqual(plan.inserted, []);
    assert.deepEqual(plan.gutter, [2]);
  });

  test('a replacement: the old text struck through, the new text as ghost text right after it', () => {
    const plan = decorationPlan([edit(0, 16, 21, 'cart')], 0, lineText);
    assert.deepEqual(plan.removed, [edit(0, 16, 21, '').range]);
    assert.deepEqual(plan.inserted, [{ at: { line: 0, character: 21 }, text: 'cart' }]);
    // What both share is left as it is: `items` -> `products` strikes `item` and inserts `product`.
    const shared = decorationPlan([edit(0, 16, 21, 'products')], 0, lineText);
    assert.deepEqual(shared.removed, [edit(0, 16, 20, '').range]);
    assert.deepEqual(shared.inserted, [{ at: { line: 0, character: 20 }, text: 'product' }]);
  });

  test('a pure insertion: ghost text at the spot, nothing struck through', () => {
    const plan = decorationPlan([edit(1, 4, 4, 'total = 0; ')], 1, lineText);
    assert.deepEqual(plan.removed, []);
    assert.deepEqual(plan.inserted, [{ at: { line: 1, character: 4 }, text: 'total = 0; ' }]);
  });

  test('inserted lines are shown on one line, joined by a mark; a long one is cut (the hover has it all)', () => {
    const plan = decorationPlan([edit(1, 0, 0, '    a = 1\n    b = 2\n')], 1, lineText);
    assert.equal(plan.inserted[0].text, `    a = 1${LINE_BREAK_MARK}    b = 2${LINE_BREAK_MARK}`);
    const long = decorationPlan([edit(1, 0, 0, 'x'.repeat(500))], 1, lineText);
    assert.equal(long.inserted[0].text.length, MAX_GHOST_CHARS);
    assert.ok(long.inserted[0].text.endsWith('…'));
    assert.ok(long.hover.includes('x'.repeat(500)));
  });

  test('each line an edit starts on gets one gutter mark', () => {
    const plan = decorationPlan([edit(0, 0, 3, 'x'), edit(0, 5, 6, 'y'), RENAME], 0, lineText);
    assert.deepEqual(plan.gutter, [0, 2]);
  });

  test('away from it, the cursor line says Tab goes to it and names its line; at it, that Tab accepts', () => {
    const away = decorationPlan([RENAME], 0, lineText);
    assert.equal(away.hint.line, 0);
    assert.ok(away.hint.text.startsWith(`${TAB_GO_TO} (line 3)`), away.hint.text);
    assert.ok(away.hover.includes(TAB_GO_TO));
    const at = decorationPlan([RENAME], 2, lineText);
    assert.equal(at.hint.line, 2);
    assert.ok(at.hint.text.startsWith(TAB_ACCEPT), at.hint.text);
    assert.ok(at.hover.includes(TAB_ACCEPT) && !at.hover.includes(TAB_GO_TO));
  });

  test('the hover shows the lines before and after the edit as a diff', () => {
    assert.equal(
      editDiff(RENAME, lineText),
      '-     return subtotal * (1 + tax_rate)\n+     return subtotal * (1 + tax)',
    );
    const plan = decorationPlan([RENAME], 0, lineText);
    assert.ok(plan.hover.includes('```diff\n-     return subtotal * (1 + tax_rate)\n+     return subtotal * (1 + tax)\n```'), plan.hover);
  });

  test('code with backticks cannot close the hover diff fence', () => {
    const plan = decorationPlan([edit(1, 0, 0, 's = "```"\n')], 1, lineText);
    assert.ok(plan.hover.includes('````diff\n'), plan.hover);
  });
});

describe('next edit: the manifest', () => {
  const root = path.join(__dirname, '..', '..', '..');
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const bindings = (command: string): { key: string; when: string }[] =>
    manifest.contributes.keybindings.filter((b: { command: string }) => b.command === command);
  const terms = (when: string): string[] => when.split('&&').map((t) => t.trim());

  test('Tab goes to or accepts only while a suggestion is shown, and not over an inline completion or the suggest widget', () => {
    const [tab, ...more] = bindings(COMMAND_GO_TO_OR_ACCEPT);
    assert.equal(more.length, 0);
    assert.equal(tab.key, 'tab');
    for (const term of ['editorTextFocus', CONTEXT_VISIBLE, '!inlineSuggestionVisible', '!suggestWidgetVisible', '!inSnippetMode']) {
      assert.ok(terms(tab.when).includes(term), `Tab's when clause lacks ${term}: ${tab.when}`);
    }
  });

  test('Escape dismisses only while a suggestion is shown, and leaves an inline completion or the suggest widget to their own Escape', () => {
    const [escape, ...more] = bindings(COMMAND_DISMISS);
    assert.equal(more.length, 0);
    assert.equal(escape.key, 'escape');
    for (const term of ['editorTextFocus', CONTEXT_VISIBLE, '!inlineSuggestionVisible', '!suggestWidgetVisible']) {
      assert.ok(terms(escape.when).includes(term), `Escape's when clause lacks ${term}: ${escape.when}`);
    }
  });

  test('the gutter mark is an icon the package carries', () => {
    assert.ok(fs.existsSync(path.join(root, 'media', 'next-edit.svg')));
    const ignore = fs.readFileSync(path.join(root, '.vscodeignore'), 'utf8').split('\n');
    assert.ok(ignore.includes('!media/next-edit.svg'), ignore.join('\n'));
  });
});

describe('next edit: settings', () => {
  test('defaults: on, 400 ms', () => {
    assert.deepEqual(nextEditSettings({ get: () => undefined }), { enabled: true, delayMs: 400 });
  });

  test('as set; a delay that is no number of milliseconds falls back to the default', () => {
    const config = (values: Record<string, unknown>) => ({ get: <T>(key: string) => values[key] as T | undefined });
    assert.deepEqual(nextEditSettings(config({ nextEdit: false, nextEditDelayMs: 250 })), { enabled: false, delayMs: 250 });
    assert.equal(nextEditSettings(config({ nextEditDelayMs: 'soon' })).delayMs, 400);
    assert.equal(nextEditSettings(config({ nextEditDelayMs: -5 })).delayMs, 400);
  });
});

// ------------------------------------------------------------------------------------------- the flow

interface PendingRequest {
  params: NextEditParams;
  signal: AbortSignal;
  answer(value: NextEdit | null): void;
  fail(error: unknown): void;
}

/** The editor, the server and the clock the flow talks to, recorded and driven by the test. */
class FakeEditor {
  editor: EditorState | undefined = {
    uri: URI,
    version: 7,
    cursor: { line: 0, character: 26 },
    lineCount: LINES.length,
    lineLength: (n) => LINES[n].length,
  };
  enabled = true;
  delay = 400;
  now = 0;
  timers: { at: number; fn: () => void; cancelled: boolean }[] = [];
  requests: PendingRequest[] = [];
  feedback: [Feedback, string][] = [];
  drawn: { suggestion: Suggestion; cursor: Position }[] = [];
  hidden = 0;
  moved: Position[] = [];
  applied: Suggestion[] = [];
  applyResult = true;
  tabsPassed = 0;
  logs: string[] = [];
  readonly flow: NextEditFlow;

  constructor() {
    const effects: FlowEffects = {
      editor: () => this.editor,
      enabled: () => this.enabled,
      delayMs: () => this.delay,
      request: (params, signal) =>
        new Promise((answer, fail) => this.requests.push({ params, signal, answer, fail })),
      show: (suggestion, cursor) => this.drawn.push({ suggestion, cursor }),
      hide: () => (this.hidden += 1),
      feedback: (kind, id) => this.feedback.push([kind, id]),
      apply: async (s) => {
        this.applied.push(s);
        if (this.applyResult && this.editor) {
          // The edit changes the document, as VS Code's applyEdit does, with its change event.
          this.editor = { ...this.editor, version: this.editor.version + 1, cursor: { line: 2, character: 30 } };
          this.flow.documentChanged(s.uri);
        }
        return this.applyResult;
      },
      moveCursor: (to) => {
        this.moved.push(to);
        if (this.editor) this.editor = { ...this.editor, cursor: to };
        this.flow.selectionChanged();
      },
      passTab: () => (this.tabsPassed += 1),
      log: (_level, message) => this.logs.push(message),
      setTimer: (fn, ms) => {
        const timer = { at: this.now + ms, fn, cancelled: false };
        this.timers.push(timer);
        return () => (timer.cancelled = true);
      },
    };
    this.flow = new NextEditFlow(effects);
  }

  /** Moves the clock on, firing the timers that come due. */
  advance(ms: number): void {
    this.now += ms;
    for (const timer of this.timers.filter((t) => !t.cancelled && t.at <= this.now)) {
      timer.cancelled = true;
      timer.fn();
    }
  }

  /** The user types a character in the active document. */
  type(): void {
    if (this.editor) this.editor = { ...this.editor, version: this.editor.version + 1 };
    this.flow.documentChanged(URI);
  }

  get lastRequest(): PendingRequest {
    const last = this.requests[this.requests.length - 1];
    assert.ok(last, 'no request was sent');
    return last;
  }
}

/** Lets the flow's awaits run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Types once, waits out the pause, answers with the rename: the suggestion is on screen. */
async function shownRename(fake: FakeEditor): Promise<Suggestion> {
  fake.type();
  fake.advance(fake.delay);
  fake.lastRequest.answer({ id: 's1', edits: [RENAME] });
  await settle();
  const shown = fake.flow.current;
  assert.ok(shown, 'no suggestion is shown');
  return shown;
}

describe('next edit: when the server is asked', () => {
  test('once typing pauses for the delay: one request, for the current version and cursor', () => {
    const fake = new FakeEditor();
    fake.type();
    fake.advance(399);
    fake.type();
    fake.advance(399);
    assert.equal(fake.requests.length, 0, 'asked while the user was still typing');
    fake.advance(1);
    assert.equal(fake.requests.length, 1);
    assert.deepEqual(fake.lastRequest.params, { textDocument: { uri: URI, version: 9 }, position: { line: 0, character: 26 } });
  });

  test('typing again cancels the request in flight, and its late answer is not shown', async () => {
    const fake = new FakeEditor();
    fake.type();
    fake.advance(400);
    const first = fake.lastRequest;
    fake.type();
    assert.ok(first.signal.aborted);
    first.answer({ id: 'late', edits: [RENAME] });
    await settle();
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.feedback, []);
    fake.advance(400);
    assert.equal(fake.requests.length, 2);
    assert.equal(fake.lastRequest.params.textDocument.version, 9);
  });

  test('with the setting off, nothing is sent', () => {
    const fake = new FakeEditor();
    fake.enabled = false;
    fake.type();
    fake.advance(5000);
    assert.equal(fake.requests.length, 0);
  });

  test('a document the client does not serve (no editor state): nothing is sent', async () => {
    const fake = new FakeEditor();
    fake.editor = undefined;
    fake.flow.documentChanged(URI);
    fake.advance(400);
    await fake.flow.ask();
    assert.equal(fake.requests.length, 0);
  });

  test('a change in a document in the background neither asks nor dismisses', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.flow.documentChanged('file:///work/shop/other.py');
    fake.advance(400);
    assert.equal(fake.requests.length, 1);
    assert.ok(fake.flow.current);
  });

  test('the delay is the setting', () => {
    const fake = new FakeEditor();
    fake.delay = 1000;
    fake.type();
    fake.advance(999);
    assert.equal(fake.requests.length, 0);
    fake.advance(1);
    assert.equal(fake.requests.length, 1);
  });
});

describe('next edit: which answers are shown', () => {
  test('a suggestion for the version asked about is drawn and the server told it was shown', async () => {
    const fake = new FakeEditor();
    const shown = await shownRename(fake);
    assert.deepEqual(shown, { id: 's1', uri: URI, version: 8, edits: [RENAME] });
    assert.deepEqual(fake.drawn.at(-1), { suggestion: shown, cursor: { line: 0, character: 26 } });
    assert.deepEqual(fake.feedback, [['shown', 's1']]);
  });

  test('null or no edits: nothing shown, nothing told', async () => {
    const fake = new FakeEditor();
    fake.type();
    fake.advance(400);
    fake.lastRequest.answer(null);
    await settle();
    fake.type();
    fake.advance(400);
    fake.lastRequest.answer({ id: 'empty', edits: [] });
    await settle();
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.drawn, []);
    assert.deepEqual(fake.feedback, []);
  });

  test('an answer for a version the document has left (no change event seen yet): not shown', async () => {
    const fake = new FakeEditor();
    fake.type();
    fake.advance(400);
    fake.editor = { ...fake.editor!, version: 99 };
    fake.lastRequest.answer({ id: 's1', edits: [RENAME] });
    await settle();
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.feedback, []);
  });

  test('an answer whose range is not in the document: not shown, said in the log', async () => {
    const fake = new FakeEditor();
    fake.type();
    fake.advance(400);
    fake.lastRequest.answer({ id: 'bad', edits: [edit(40, 0, 1, 'x')] });
    await settle();
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.feedback, []);
    assert.ok(fake.logs.some((l) => l.includes('not in the document')), fake.logs.join('\n'));
  });

  test('moving the cursor redraws the suggestion for the new line (what Tab does changes)', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.editor = { ...fake.editor!, cursor: { line: 2, character: 4 } };
    fake.flow.selectionChanged();
    assert.deepEqual(fake.drawn.at(-1)?.cursor, { line: 2, character: 4 });
    assert.ok(fake.flow.current, 'moving the cursor dismissed it');
  });
});

describe('next edit: Tab', () => {
  test('away: the cursor goes to the edit; at it: applied, accepted, and the next one asked at once', async () => {
    const fake = new FakeEditor();
    const shown = await shownRename(fake);
    fake.flow.tab();
    assert.deepEqual(fake.moved, [{ line: 2, character: 27 }]);
    assert.ok(fake.flow.current, 'the jump dismissed it');
    assert.deepEqual(fake.applied, []);

    fake.flow.tab();
    await settle();
    assert.deepEqual(fake.applied, [shown]);
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.feedback, [
      ['shown', 's1'],
      ['accepted', 's1'],
    ]);
    // The chained request: sent without waiting for a pause, for the version the edit made.
    assert.equal(fake.requests.length, 2);
    assert.deepEqual(fake.lastRequest.params, { textDocument: { uri: URI, version: 9 }, position: { line: 2, character: 30 } });
    fake.advance(10_000);
    assert.equal(fake.requests.length, 2, 'the accepted edit also started a timer');
  });

  test('an edit the editor refuses to apply (the document changed): rejected, nothing more asked', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.editor = { ...fake.editor!, cursor: { line: 2, character: 0 } };
    fake.applyResult = false;
    fake.flow.tab();
    await settle();
    assert.deepEqual(fake.feedback, [
      ['shown', 's1'],
      ['rejected', 's1'],
    ]);
    assert.equal(fake.requests.length, 1);
  });

  test('stale at Tab (the version moved on): dropped, rejected, never applied, and Tab does its usual thing', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.editor = { ...fake.editor!, version: 12, cursor: { line: 2, character: 0 } };
    fake.flow.tab();
    await settle();
    assert.deepEqual(fake.applied, []);
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.feedback.at(-1), ['rejected', 's1']);
    assert.equal(fake.tabsPassed, 1);
  });

  test('nothing shown: Tab does its usual thing', () => {
    const fake = new FakeEditor();
    fake.flow.tab();
    assert.equal(fake.tabsPassed, 1);
    assert.deepEqual(fake.moved, []);
  });
});

describe('next edit: dismissal', () => {
  test('Escape: hidden, rejected, the document untouched', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.flow.escape();
    assert.equal(fake.flow.current, undefined);
    assert.equal(fake.hidden, 1);
    assert.deepEqual(fake.feedback, [
      ['shown', 's1'],
      ['rejected', 's1'],
    ]);
    assert.deepEqual(fake.applied, []);
    fake.flow.escape(); // nothing shown any more: nothing more said
    assert.equal(fake.feedback.length, 2);
  });

  test('typing (anywhere in the document): rejected, and asked again after the pause', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.type();
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.feedback.at(-1), ['rejected', 's1']);
    fake.advance(400);
    assert.equal(fake.requests.length, 2);
  });

  test('another editor: rejected, and its request cancelled', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.editor = { ...fake.editor!, uri: 'file:///work/shop/other.py' };
    fake.flow.activeEditorChanged();
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.feedback.at(-1), ['rejected', 's1']);
  });

  test('switching editors while a request is in flight cancels it', () => {
    const fake = new FakeEditor();
    fake.type();
    fake.advance(400);
    fake.flow.activeEditorChanged();
    assert.ok(fake.lastRequest.signal.aborted);
  });

  test('the document closed: rejected; a request for it cancelled', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.flow.documentClosed(URI);
    assert.deepEqual(fake.feedback.at(-1), ['rejected', 's1']);
    fake.type();
    fake.advance(400);
    fake.flow.documentClosed(URI);
    assert.ok(fake.lastRequest.signal.aborted);
  });

  test('the setting turned off: the suggestion goes (rejected)', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.enabled = false;
    fake.flow.settingsChanged();
    assert.equal(fake.flow.current, undefined);
    assert.deepEqual(fake.feedback.at(-1), ['rejected', 's1']);
  });

  test('the setting turned off: the request in flight is cancelled', () => {
    const fake = new FakeEditor();
    fake.type();
    fake.advance(400);
    fake.enabled = false;
    fake.flow.settingsChanged();
    assert.ok(fake.lastRequest.signal.aborted);
  });

  test('every shown suggestion ends exactly once', async () => {
    const fake = new FakeEditor();
    await shownRename(fake);
    fake.flow.escape();
    fake.flow.escape();
    fake.type();
    fake.flow.activeEditorChanged();
    fake.flow.documentClosed(URI);
    const ends = fake.feedback.filter(([kind]) => kind !== 'shown');
    assert.deepEqual(ends, [['rejected', 's1']]);
  });
});

describe('next edit: a server that cannot answer', () => {
  test('MethodNotFound (an older server): no more requests until the server restarts', async () => {
    const fake = new FakeEditor();
    fake.type();
    fake.advance(400);
    fake.lastRequest.fail(Object.assign(new Error('Unhandled method assistant/nextEdit'), { code: ErrorCode.MethodNotFound }));
    await settle();
    fake.type();
    fake.advance(400);
    assert.equal(fake.requests.length, 1);
    fake.flow.serverStarted();
    fake.type();
    fake.advance(400);
    assert.equal(fake.requests.length, 2);
  });

  test('the same failure at every pause is logged once; nothing is shown', async () => {
    const fake = new FakeEditor();
    for (let i = 0; i < 3; i++) {
      fake.type();
      fake.advance(400);
      fake.lastRequest.fail(new Error('The llama-lsp server is not running.'));
      await settle();
    }
    assert.equal(fake.requests.length, 3);
    assert.equal(fake.logs.filter((l) => l.includes('not running')).length, 1);
    assert.equal(fake.flow.current, undefined);
  });
});
