/**
 * How a proposed edit's check (the server's `verification`) is shown: the notice after a code action,
 * the line under an edit in the chat, the diff preview's title. Pure, so that the wording and the
 * warning-or-not decision are tested without VS Code; notifications.ts and media/chat.js only show
 * what these return.
 */

import type { CodeActionResult, Verification } from './protocol';

/** `warning`: a notification the user has to see; `status`: a passing status-bar message. */
export interface Notice {
  level: 'warning' | 'status';
  text: string;
  /** The check's output, for "Show output" and the log; absent when it printed nothing. */
  output?: string;
}

export type VerificationState = 'passed' | 'failed' | 'unchecked';

/** What media/chat.js shows under a proposed edit (see src/chat/messages.ts). */
export interface VerificationView {
  state: VerificationState;
  /** The server's summary, with a mark in front when there is a result. */
  text: string;
  output?: string;
}

/** The server's payload, checked: it crosses a process boundary, and an older server sends none. */
export function isVerification(value: unknown): value is Verification {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    (typeof v.command === 'string' || v.command === null) &&
    (typeof v.passed === 'boolean' || v.passed === null) &&
    typeof v.attempts === 'number' &&
    typeof v.output === 'string' &&
    typeof v.summary === 'string'
  );
}

export function verificationState(verification: Verification): VerificationState {
  if (verification.passed === true) return 'passed';
  return verification.passed === false ? 'failed' : 'unchecked';
}

function output(verification: Verification): string | undefined {
  return verification.output.trim() !== '' ? verification.output : undefined;
}

/**
 * After the `Llama: Fix` (etc.) command: a refused edit and an edit whose check failed are warnings
 * (the failed one is applied all the same: the server returns its best candidate, marked); an edit
 * that passed or was not checked is a status-bar message with the summary.
 */
export function actionNotice(title: string, result: CodeActionResult): Notice {
  const verification = isVerification(result.verification) ? result.verification : undefined;
  if (result.applied === false) {
    return {
      level: 'warning',
      text: `Llama: ${title}: the edit was not applied (${result.failureReason ?? 'no reason given'}).`,
    };
  }
  if (verification === undefined) return { level: 'status', text: `Llama: ${title} applied` };
  return withSummary(`Llama: ${title} applied`, verification);
}

/**
 * A lightbulb action once resolved: VS Code applies (or previews) its edit next, so the notice says
 * how the edit was checked, not that it was applied. `title` is the action's own ("Llama: Fix: ...").
 */
export function resolvedActionNotice(title: string, verification: Verification): Notice {
  return withSummary(title, verification);
}

function withSummary(subject: string, verification: Verification): Notice {
  return {
    level: verificationState(verification) === 'failed' ? 'warning' : 'status',
    text: `${subject} — ${verification.summary}`,
    output: output(verification),
  };
}

const MARKS: Record<VerificationState, string> = { passed: '✓ ', failed: '⚠ ', unchecked: '' };

export function verificationView(verification: Verification): VerificationView {
  const state = verificationState(verification);
  const view: VerificationView = { state, text: `${MARKS[state]}${verification.summary}` };
  const text = output(verification);
  if (text !== undefined) view.output = text;
  return view;
}

/** The diff preview's title: says whether the proposal passed its check, when there was one. */
export function previewTitle(file: string, verification: Verification | undefined): string {
  const title = `${file} ↔ Llama's proposal`;
  if (verification === undefined) return title;
  const state = verificationState(verification);
  if (state === 'passed') return `${title} (verified)`;
  return state === 'failed' ? `${title} (check failed)` : title;
}
