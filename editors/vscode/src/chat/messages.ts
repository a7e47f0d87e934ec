/**
 * Messages between the chat controller (extension side) and media/chat.js (webview side). The
 * webview's plain JavaScript follows these shapes; keep the two in step.
 */

import type { FinishReason } from '../protocol';
import type { VerificationView } from '../verification';

export interface EntryView {
  id: string;
  role: 'user' | 'assistant';
  /** Markdown for the assistant, plain text for the user. */
  text: string;
  /** User entries: what the question was about ("app.py, lines 3-9"). */
  context?: string;
  done?: boolean;
  finishReason?: FinishReason;
  /** "1,728 of 1,800 prompt tokens cached (96%) · 40 tokens" */
  stats?: string;
  error?: string;
  /** Tools the model called, one short line each. */
  tools?: string[];
  /** Files a proposed edit touches; present when the answer has an edit. */
  edit?: { files: string[]; applied?: boolean };
  editError?: string;
  /** How the server checked the edit (verifyCommand); shown with it. */
  verification?: VerificationView;
}

export type ToWebview =
  | { type: 'restore'; entries: EntryView[]; busy: boolean; context?: string }
  | { type: 'append'; entry: EntryView }
  | { type: 'delta'; id: string; text: string }
  | { type: 'update'; entry: EntryView }
  | { type: 'busy'; busy: boolean }
  | { type: 'context'; context?: string }
  | { type: 'focus' };

export type FromWebview =
  | { type: 'ready' }
  | { type: 'ask'; text: string }
  | { type: 'stop' }
  | { type: 'new' }
  | { type: 'preview'; id: string }
  | { type: 'apply'; id: string }
  /** A file link in an answer was clicked; the extension checks it (references.ts) before opening. */
  | { type: 'openFile'; path: string; line?: number; column?: number };
