/**
 * Inline completion (ghost text). The language client's built-in feature does the work: it advertises
 * `textDocument.inlineCompletion`, registers VS Code's provider once the server's capabilities say
 * `inlineCompletionProvider`, and sends `$/cancelRequest` when the user types on. This is its
 * middleware: no request at all while the `completion` setting is off, and each answered request timed
 * on the client side, as the user waits for it, for the status bar. Accepting (Tab, Ctrl+Right for a
 * word) is VS Code's own.
 */

import type * as vscode from 'vscode';
import type { Middleware } from 'vscode-languageclient/node';

type ProvideInlineCompletionItems = NonNullable<Middleware['provideInlineCompletionItems']>;
type InlineCompletionResult = vscode.InlineCompletionItem[] | vscode.InlineCompletionList | null | undefined;

/** One inline completion request as the client saw it. */
export interface CompletionTiming {
  /** From sending the request to its answer, in milliseconds. */
  ms: number;
  /** Whether the answer had a suggestion to show (the server answers none after most of a line). */
  suggested: boolean;
}

export interface InlineCompletionDeps {
  /** The `completion` setting, read on every request, so that turning it off takes effect at once. */
  enabled: () => boolean;
  onTimed: (timing: CompletionTiming) => void;
  /** Milliseconds, for tests; performance.now() otherwise. */
  now?: () => number;
}

function suggestionCount(result: InlineCompletionResult): number {
  if (result === null || result === undefined) return 0;
  return Array.isArray(result) ? result.length : result.items.length;
}

export function inlineCompletionMiddleware(deps: InlineCompletionDeps): {
  provideInlineCompletionItems: ProvideInlineCompletionItems;
} {
  const now = deps.now ?? (() => performance.now());
  return {
    provideInlineCompletionItems: async (document, position, context, token, next) => {
      // Off: the server would answer nothing too, but each keystroke would still cost a round trip.
      if (!deps.enabled()) return undefined;
      const started = now();
      const result = await next(document, position, context, token);
      // A request the user typed past was cancelled: its time says nothing about the model.
      if (!token.isCancellationRequested) deps.onTimed({ ms: now() - started, suggested: suggestionCount(result) > 0 });
      return result;
    },
  };
}
