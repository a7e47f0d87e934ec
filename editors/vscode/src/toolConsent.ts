/**
 * The user's consent to a chat's call of an MCP tool that does not declare itself read-only
 * (`assistant/confirmToolCall`), as plain logic: the question, the detail that shows the tool, its server
 * and its arguments, the buttons, and the choice each button (or dismissing the dialog) stands for. No
 * `vscode` here: toolConsentPrompt.ts shows the result as a modal dialog, so that these rules are tested
 * without an editor.
 */

import type { ConfirmToolCallParams, ToolCallChoice } from './protocol';

export const ALLOW = 'Allow';
export const ALLOW_CONVERSATION = 'Allow for this Conversation';
export const ALLOW_ALWAYS = 'Always Allow this Tool';
/** In the order the dialog shows them; VS Code adds its own Cancel, which denies. */
export const CONSENT_BUTTONS = [ALLOW, ALLOW_CONVERSATION, ALLOW_ALWAYS] as const;

/** The arguments as the dialog shows them, at most: a call that writes a file could carry all of it. */
export const MAX_ARGUMENT_CHARS = 1500;
export const MAX_ARGUMENT_LINES = 40;
/** The description comes from the MCP server: enough to recognise the tool, not a page of it. */
export const MAX_DESCRIPTION_CHARS = 300;

export interface ConsentQuestion {
  /** The dialog's message: its title line. */
  message: string;
  /** The text under it: what the call does, and with what. */
  detail: string;
}

/**
 * Control characters and bidirectional overrides from a server's names and description: a tool could
 * use them to make the dialog say something other than what runs. Tabs and line breaks stay.
 */
function printable(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '');
}

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max).trimEnd()}…`;
}

/** Pretty JSON, cut at a line or character bound with a note of how much was left out. */
export function formatArguments(args: Record<string, unknown>): string {
  let text: string;
  try {
    text = JSON.stringify(args ?? {}, null, 2) ?? '{}';
  } catch {
    text = String(args); // a value JSON cannot write (the server sends JSON, so only in theory)
  }
  const lines = text.split('\n');
  let shown = lines.length > MAX_ARGUMENT_LINES ? lines.slice(0, MAX_ARGUMENT_LINES).join('\n') : text;
  if (shown.length > MAX_ARGUMENT_CHARS) shown = shown.slice(0, MAX_ARGUMENT_CHARS);
  if (shown.length === text.length) return text;
  const left = text.length - shown.length;
  return `${shown}\n… (${left.toLocaleString('en-US')} more characters not shown)`;
}

export function consentQuestion(params: ConfirmToolCallParams): ConsentQuestion {
  const tool = printable(params.tool);
  const server = printable(params.server);
  const description = cut(printable(params.description ?? '').trim(), MAX_DESCRIPTION_CHARS);
  const detail = [
    `The chat wants to call ${printable(params.name)}, a tool of the MCP server "${server}". ` +
      'It does not declare itself read-only: it may change something.',
    ...(description ? [`The server describes it: ${description}`] : []),
    `Arguments:\n${formatArguments(params.arguments)}`,
    `"${ALLOW_CONVERSATION}" runs this tool's calls without asking until you start a new conversation; ` +
      `"${ALLOW_ALWAYS}", in every conversation while the server runs with this configuration.`,
  ];
  return { message: `Llama: run the MCP tool "${tool}" of "${server}"?`, detail: detail.join('\n\n') };
}

/** The button the user chose, or undefined when the dialog was dismissed (Cancel, Escape): "deny". */
export function choiceFor(button: string | undefined): ToolCallChoice {
  switch (button) {
    case ALLOW:
      return 'allow';
    case ALLOW_CONVERSATION:
      return 'allowConversation';
    case ALLOW_ALWAYS:
      return 'allowAlways';
    default:
      return 'deny';
  }
}

/** One line for the log: what was asked and what the user answered (the arguments stay out). */
export function consentLogLine(params: ConfirmToolCallParams, choice: ToolCallChoice): string {
  return `${params.name} (MCP server ${printable(params.server)}): the user chose ${choice}`;
}
