/**
 * Asks the user, in a modal dialog as VS Code's own agent does, whether a chat's call of an MCP tool may
 * run (`assistant/confirmToolCall`). toolConsent.ts decides what the dialog says and what each answer
 * means; this module only shows it and logs the answer.
 */

import * as vscode from 'vscode';
import type { ConfirmToolCallParams, ConfirmToolCallResult } from './protocol';
import { CONSENT_BUTTONS, choiceFor, consentLogLine, consentQuestion } from './toolConsent';

export async function askToolConsent(
  params: ConfirmToolCallParams,
  token: vscode.CancellationToken,
  output: vscode.LogOutputChannel,
): Promise<ConfirmToolCallResult> {
  const question = consentQuestion(params);
  const button = await vscode.window.showWarningMessage(
    question.message,
    { modal: true, detail: question.detail },
    ...CONSENT_BUTTONS,
  );
  // The server gave up meanwhile (the chat was stopped, or it waited too long): the call does not run
  // whatever was clicked, and saying "allow" now would only mislead the log.
  const choice = token.isCancellationRequested ? 'deny' : choiceFor(button);
  output.info(consentLogLine(params, choice));
  return { choice };
}
