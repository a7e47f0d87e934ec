import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import type { ConfirmToolCallParams } from '../../src/protocol';
import {
  ALLOW,
  ALLOW_ALWAYS,
  ALLOW_CONVERSATION,
  CONSENT_BUTTONS,
  MAX_ARGUMENT_CHARS,
  MAX_ARGUMENT_LINES,
  MAX_DESCRIPTION_CHARS,
  choiceFor,
  consentQuestion,
  formatArguments,
} from '../../src/toolConsent';
import { askToolConsent } from '../../src/toolConsentPrompt';
import { CancellationTokenSource, stub } from '../stub/vscode';

const call: ConfirmToolCallParams = {
  conversationId: 'c1',
  server: 'tracker',
  tool: 'create_note',
  name: 'tracker.create_note',
  arguments: { title: 'standup', body: 'ship 2.4.2 on Friday.' },
  description: "Create a note in the team's notebook.",
};

describe('the consent question', () => {
  test('names the tool and its server, says it may change something, and shows the arguments as pretty JSON', () => {
    const question = consentQuestion(call);
    assert.equal(question.message, 'Llama: run the MCP tool "create_note" of "tracker"?');
    assert.match(question.detail, /call tracker\.create_note, a tool of the MCP server "tracker"/);
    assert.match(question.detail, /does not declare itself read-only: it may change something/);
    assert.match(question.detail, /The server describes it: Create a note in the team's notebook\./);
    assert.ok(
      question.detail.includes('Arguments:\n{\n  "title": "standup",\n  "body": "ship 2.4.2 on Friday."\n}'),
      question.detail,
    );
    // What the two standing answers mean, in the buttons' own words.
    assert.ok(question.detail.includes(`"${ALLOW_CONVERSATION}" runs this tool's calls without asking`));
    assert.ok(question.detail.includes(`"${ALLOW_ALWAYS}", in every conversation`));
  });

  test('a tool without a description and without arguments still reads whole', () => {
    const question = consentQuestion({ ...call, description: '', arguments: {} });
    assert.ok(!question.detail.includes('describes it'));
    assert.ok(question.detail.includes('Arguments:\n{}'));
  });

  test("a server's long description is cut", () => {
    const question = consentQuestion({ ...call, description: 'x'.repeat(5000) });
    const described = /The server describes it: (x+…)/.exec(question.detail)?.[1];
    assert.equal(described, `${'x'.repeat(MAX_DESCRIPTION_CHARS)}…`);
  });

  test('control characters and bidirectional overrides in names and description are dropped', () => {
    const question = consentQuestion({
      ...call,
      server: 'track\u202Eer',
      tool: 'create\u0007_note',
      description: 'Harmless\u2066 tool\u001b[2J',
    });
    assert.equal(question.message, 'Llama: run the MCP tool "create_note" of "tracker"?');
    assert.ok(question.detail.includes('The server describes it: Harmless tool[2J'));
  });

  test('an argument holding control characters is shown escaped, as JSON writes it', () => {
    const question = consentQuestion({ ...call, arguments: { path: 'a\u202Eb\n' } });
    assert.ok(question.detail.includes('"path": "a\u202Eb\\n"') || question.detail.includes('"path": "a\\u202eb\\n"'));
    assert.ok(!question.detail.includes('a\u202Eb\n'));
  });
});

describe('the arguments shown', () => {
  test('long arguments are cut at a character bound, with how much was left out', () => {
    const body = 'y'.repeat(10_000);
    const full = JSON.stringify({ body }, null, 2);
    const shown = formatArguments({ body });
    const [kept, note] = shown.split('\n… ');
    assert.equal(kept, full.slice(0, MAX_ARGUMENT_CHARS));
    assert.equal(note, `(${(full.length - MAX_ARGUMENT_CHARS).toLocaleString('en-US')} more characters not shown)`);
  });

  test('many short lines are cut at a line bound', () => {
    const items = Array.from({ length: 200 }, (_, i) => i);
    const shown = formatArguments({ items });
    const lines = shown.split('\n');
    assert.equal(lines.length, MAX_ARGUMENT_LINES + 1);
    assert.match(lines[lines.length - 1], /^… \([\d,]+ more characters not shown\)$/);
  });

  test('arguments within both bounds are shown whole', () => {
    assert.equal(formatArguments(call.arguments), JSON.stringify(call.arguments, null, 2));
  });
});

describe('the choice', () => {
  test('each button is its choice, and dismissing the dialog denies', () => {
    assert.deepEqual(CONSENT_BUTTONS, [ALLOW, ALLOW_CONVERSATION, ALLOW_ALWAYS]);
    assert.deepEqual(CONSENT_BUTTONS.map(choiceFor), ['allow', 'allowConversation', 'allowAlways']);
    assert.equal(choiceFor(undefined), 'deny');
    assert.equal(choiceFor('Cancel'), 'deny');
  });
});

describe('the modal dialog', () => {
  const logged: string[] = [];
  const output = { info: (line: string) => logged.push(line) } as unknown as Parameters<typeof askToolConsent>[2];

  beforeEach(() => {
    stub.reset();
    logged.length = 0;
  });

  test('is a modal warning with the question, its detail and the three buttons; the button chosen is the answer', async () => {
    stub.choice = ALLOW_CONVERSATION;
    const result = await askToolConsent(call, new CancellationTokenSource().token as never, output);
    assert.deepEqual(result, { choice: 'allowConversation' });
    const question = consentQuestion(call);
    assert.deepEqual(stub.messages, [['warning', question.message, ALLOW, ALLOW_CONVERSATION, ALLOW_ALWAYS]]);
    assert.deepEqual(stub.messageOptions.get(0), { modal: true, detail: question.detail });
    assert.deepEqual(logged, ['tracker.create_note (MCP server tracker): the user chose allowConversation']);
  });

  test('dismissed, it denies', async () => {
    stub.choice = undefined;
    assert.deepEqual(await askToolConsent(call, new CancellationTokenSource().token as never, output), { choice: 'deny' });
  });

  test('a request the server cancelled meanwhile is denied whatever was clicked', async () => {
    const source = new CancellationTokenSource();
    source.cancel();
    stub.choice = ALLOW;
    assert.deepEqual(await askToolConsent(call, source.token as never, output), { choice: 'deny' });
    assert.deepEqual(logged, ['tracker.create_note (MCP server tracker): the user chose deny']);
  });
});
