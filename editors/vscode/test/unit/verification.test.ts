/** What the extension says about a proposed edit's check: notices, the chat's line, the preview title. */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { CodeActionResult, Verification } from '../../src/protocol';
import {
  actionNotice,
  isVerification,
  previewTitle,
  resolvedActionNotice,
  verificationView,
} from '../../src/verification';

const passed: Verification = {
  command: 'pytest -q',
  passed: true,
  attempts: 2,
  output: '3 passed in 0.02s',
  summary: 'verified: `pytest -q` passed (attempt 2)',
};
const failed: Verification = {
  command: 'pytest -q',
  passed: false,
  attempts: 3,
  output: 'E   AssertionError: assert 3 == 4\n[exit status 1]',
  summary: 'not verified: `pytest -q` failed on all 3 attempts',
};
const unchecked: Verification = {
  command: null,
  passed: null,
  attempts: 0,
  output: '',
  summary: 'not verified: it parses, but no verifyCommand is set to check it',
};

function actionResult(extra: Partial<CodeActionResult> = {}): CodeActionResult {
  const stats = { nPrompt: 1, nReused: 0, nEvaluated: 1, nGenerated: 1, nDrafted: 0, nAccepted: 0, tPrefillMs: 0, tFirstTokenMs: 0, tDecodeMs: 0, steps: 1 };
  return { conversationId: 'c', content: '', finishReason: 'stop', toolCalls: [], stats, applied: true, ...extra };
}

describe('verification payload', () => {
  test('the server shape is accepted; anything else is not', () => {
    for (const v of [passed, failed, unchecked]) assert.equal(isVerification(v), true);
    assert.equal(isVerification(undefined), false);
    assert.equal(isVerification(null), false);
    assert.equal(isVerification({ ...passed, summary: undefined }), false);
    assert.equal(isVerification({ ...passed, passed: 'yes' }), false);
    assert.equal(isVerification({ ...passed, command: 1 }), false);
  });
});

describe('code action command notice', () => {
  test('a failed check is a warning that says the edit was applied, with the output', () => {
    assert.deepEqual(actionNotice('Fix', actionResult({ verification: failed })), {
      level: 'warning',
      text: 'Llama: Fix applied — not verified: `pytest -q` failed on all 3 attempts',
      output: failed.output,
    });
  });

  test('a passed check is a status message with the summary (its output kept for the log)', () => {
    assert.deepEqual(actionNotice('Refactor', actionResult({ verification: passed })), {
      level: 'status',
      text: 'Llama: Refactor applied — verified: `pytest -q` passed (attempt 2)',
      output: '3 passed in 0.02s',
    });
  });

  test('no check is not a warning; nothing printed means no output', () => {
    assert.deepEqual(actionNotice('Document', actionResult({ verification: unchecked })), {
      level: 'status',
      text: 'Llama: Document applied — not verified: it parses, but no verifyCommand is set to check it',
      output: undefined,
    });
  });

  test('a server without verification: applied, as before', () => {
    assert.deepEqual(actionNotice('Fix', actionResult()), { level: 'status', text: 'Llama: Fix applied' });
  });

  test('an edit that was not applied is a warning with the reason, whatever the check said', () => {
    assert.deepEqual(
      actionNotice('Fix', actionResult({ applied: false, failureReason: 'file changed', verification: passed })),
      { level: 'warning', text: 'Llama: Fix: the edit was not applied (file changed).' },
    );
    assert.equal(
      actionNotice('Fix', actionResult({ applied: false })).text,
      'Llama: Fix: the edit was not applied (no reason given).',
    );
  });
});

describe('resolved lightbulb action notice', () => {
  test("the action's title and the summary; failed warns, the others do not", () => {
    assert.deepEqual(resolvedActionNotice("Llama: Fix: undefined name 'x'", failed), {
      level: 'warning',
      text: "Llama: Fix: undefined name 'x' — not verified: `pytest -q` failed on all 3 attempts",
      output: failed.output,
    });
    assert.equal(resolvedActionNotice('Llama: Refactor', passed).level, 'status');
    assert.equal(resolvedActionNotice('Llama: Refactor', unchecked).level, 'status');
  });
});

describe('chat view of a check', () => {
  test('state, marked summary, and output only when there is some', () => {
    assert.deepEqual(verificationView(passed), {
      state: 'passed',
      text: '✓ verified: `pytest -q` passed (attempt 2)',
      output: '3 passed in 0.02s',
    });
    assert.deepEqual(verificationView(failed), {
      state: 'failed',
      text: '⚠ not verified: `pytest -q` failed on all 3 attempts',
      output: failed.output,
    });
    assert.deepEqual(verificationView(unchecked), {
      state: 'unchecked',
      text: 'not verified: it parses, but no verifyCommand is set to check it',
    });
    assert.equal(verificationView({ ...failed, output: '  \n' }).output, undefined);
  });
});

describe('diff preview title', () => {
  test('says verified or check failed; nothing when unchecked', () => {
    assert.equal(previewTitle('app.py', undefined), "app.py ↔ Llama's proposal");
    assert.equal(previewTitle('app.py', unchecked), "app.py ↔ Llama's proposal");
    assert.equal(previewTitle('app.py', passed), "app.py ↔ Llama's proposal (verified)");
    assert.equal(previewTitle('app.py', failed), "app.py ↔ Llama's proposal (check failed)");
  });
});
