/**
 * The "Llama: Search Codebase" command: asks for a query (the selection, when there is one), sends
 * `assistant/searchCodebase`, lists the chunks the server's workspace index found in a quick pick and
 * opens the chosen one. The server does the searching; this module only asks, lists and opens.
 */

import * as vscode from 'vscode';
import { errorMessage, isCancellation } from './chat/controller';
import type { Notifier } from './notifications';
import { ErrorCode, SECTION, type SearchCodebaseHit, type SearchCodebaseResult } from './protocol';
import type { LlamaServer } from './server';

export const COMMAND_SEARCH_CODEBASE = 'llamaLsp.searchCodebase';
const TITLE = 'Llama: Search Codebase';
/** The longest query the server takes (MAX_QUERY_CHARS in lsp_server/lsp/protocol.py). */
export const MAX_QUERY_CHARS = 2000;
/** Results asked for: more than the server's default 10, so that the pick's own filter has some to narrow. */
export const SEARCH_LIMIT = 20;

type Indexed = SearchCodebaseResult['indexed'];

/** A quick pick row for one result; `hit` is where choosing it goes. */
export interface SearchItem extends vscode.QuickPickItem {
  hit: SearchCodebaseHit;
}

/** Label `path:line` (1-based, as the server's own search tool prints it), the symbol, the snippet's first line. */
export function searchItems(hits: SearchCodebaseHit[], relativePath: (uri: string) => string): SearchItem[] {
  return hits.map((hit) => ({
    label: `${relativePath(hit.uri)}:${hit.range.start.line + 1}`,
    description: hit.symbol,
    detail: firstLine(hit.snippet),
    hit,
  }));
}

function firstLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '')?.trim() ?? '';
}

/** The selection as a query: one line (an input box has no other), cut to what the server takes. */
export function selectionQuery(text: string): string {
  return text.replace(/\s+/g, ' ').trim().slice(0, MAX_QUERY_CHARS);
}

export function validateQuery(value: string): string | undefined {
  return value.length > MAX_QUERY_CHARS
    ? `The query is ${value.length} characters long; the server takes at most ${MAX_QUERY_CHARS}.`
    : undefined;
}

function quoted(query: string): string {
  const short = query.length > 60 ? `${query.slice(0, 59)}…` : query;
  return `"${short}"`;
}

function files(n: number): string {
  return n === 1 ? '1 file' : `${n} files`;
}

/** What the extension knows that the result does not: why an index can be empty with `ready` false. */
export interface SearchScope {
  /** `llamaLsp.codebaseIndex` is off: the server indexes nothing. */
  indexOff: boolean;
  /** Workspace folders open: with none there is nothing to index. */
  folders: number;
}

/** The information message for an empty result. */
export function noResultsMessage(query: string, indexed: Indexed, scope: SearchScope): string {
  if (scope.indexOff) {
    return `Llama: the workspace is not indexed (${SECTION}.codebaseIndex is off), so nothing matches ${quoted(query)}.`;
  }
  if (scope.folders === 0) return 'Llama: no folder is open, so there is no codebase to search.';
  if (!indexed.ready) {
    return `Llama: nothing matches ${quoted(query)} yet: the index is still being built (${files(indexed.files)} so far).`;
  }
  return `Llama: nothing in the codebase matches ${quoted(query)} (${files(indexed.files)} indexed).`;
}

/** The quick pick's title; says when the results come from a partial index. */
export function resultsTitle(query: string, count: number, indexed: Indexed): string {
  const title = `Llama: ${count === 1 ? '1 result' : `${count} results`} for ${quoted(query)}`;
  return indexed.ready ? title : `${title} (the index is still being built: ${files(indexed.files)} so far)`;
}

/** An error as the user reads it: an older server that lacks the method is named as such. */
export function searchErrorMessage(error: unknown): string {
  if ((error as { code?: unknown } | null)?.code === ErrorCode.MethodNotFound) {
    return 'Llama: this llama-lsp server cannot search the codebase (assistant/searchCodebase): it is older than the extension; update it.';
  }
  return errorMessage(error);
}

export interface SearchDeps {
  server: Pick<LlamaServer, 'searchCodebase'>;
  notifier: Pick<Notifier, 'error'>;
}

export async function searchCodebase(deps: SearchDeps): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  const selected = editor !== undefined && !editor.selection.isEmpty ? editor.document.getText(editor.selection) : '';
  const query = await vscode.window.showInputBox({
    title: TITLE,
    prompt: 'Words, identifiers or a sentence that describes the code',
    value: selectionQuery(selected),
    validateInput: validateQuery,
  });
  if (query === undefined || query.trim() === '') return;

  let result: SearchCodebaseResult;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'Llama: searching the codebase' },
      () => deps.server.searchCodebase({ query, limit: SEARCH_LIMIT }),
    );
  } catch (error) {
    if (!isCancellation(error)) deps.notifier.error(searchErrorMessage(error));
    return;
  }

  if (result.results.length === 0) {
    const scope: SearchScope = {
      indexOff: vscode.workspace.getConfiguration(SECTION).get<boolean>('codebaseIndex') === false,
      folders: vscode.workspace.workspaceFolders?.length ?? 0,
    };
    void vscode.window.showInformationMessage(noResultsMessage(query, result.indexed, scope));
    return;
  }
  const items = searchItems(result.results, (uri) => vscode.workspace.asRelativePath(vscode.Uri.parse(uri)));
  const picked = await vscode.window.showQuickPick(items, {
    title: resultsTitle(query, items.length, result.indexed),
    placeHolder: 'Pick a result to open it, or type to filter',
    matchOnDescription: true,
    matchOnDetail: true,
  });
  if (picked === undefined) return;
  try {
    await openHit(picked.hit);
  } catch (error) {
    deps.notifier.error(`could not open ${picked.label}: ${errorMessage(error)}`);
  }
}

/** Opens the chunk's file with the cursor on its first line, its lines in view. */
async function openHit(hit: SearchCodebaseHit): Promise<void> {
  const { start, end } = hit.range;
  const range = new vscode.Range(start.line, start.character, end.line, end.character);
  const editor = await vscode.window.showTextDocument(vscode.Uri.parse(hit.uri), {
    selection: new vscode.Range(range.start, range.start),
  });
  editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}
