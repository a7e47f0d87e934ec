/**
 * Proposed WorkspaceEdits as plain data: which files they touch, the text a file would have after
 * them (for the diff preview), and whether a document moved on since the edit was written. Pure, so
 * that the rules are tested without VS Code.
 */

import { TextDocument } from 'vscode-languageserver-textdocument';
import type { TextEdit, WorkspaceEdit } from './protocol';

export interface FileChange {
  uri: string;
  /** The document version the edit was written against; null or undefined: unversioned. */
  version?: number | null;
  edits: TextEdit[];
  /** The edit creates the file. */
  creates: boolean;
}

/** One entry per file, in the edit's order; a CreateFile and the edits that fill it merge into one. */
export function fileChanges(edit: WorkspaceEdit): FileChange[] {
  const byUri = new Map<string, FileChange>();
  const get = (uri: string): FileChange => {
    let change = byUri.get(uri);
    if (change === undefined) {
      change = { uri, edits: [], creates: false };
      byUri.set(uri, change);
    }
    return change;
  };
  for (const change of edit.documentChanges ?? []) {
    if ('kind' in change) {
      if (change.kind === 'create') get(change.uri).creates = true;
      continue;
    }
    const entry = get(change.textDocument.uri);
    entry.version = change.textDocument.version;
    entry.edits.push(...change.edits);
  }
  for (const [uri, edits] of Object.entries(edit.changes ?? {})) get(uri).edits.push(...edits);
  return [...byUri.values()];
}

/** The text after the edits, applied by the LSP libraries' own TextDocument (ranges clamp as LSP says). */
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  return TextDocument.applyEdits(TextDocument.create('', '', 0, text), edits);
}

/** URIs whose open document is no longer at the version the edit was written against. */
export function staleFiles(edit: WorkspaceEdit, versionOf: (uri: string) => number | undefined): string[] {
  return fileChanges(edit)
    .filter((change) => {
      if (change.version === undefined || change.version === null) return false;
      const current = versionOf(change.uri);
      return current !== undefined && current !== change.version;
    })
    .map((change) => change.uri);
}

/** The last path segment of a URI, decoded: how an edit's files are named in the chat. */
export function fileLabel(uri: string): string {
  const last = uri.replace(/\/+$/, '').split('/').pop() ?? uri;
  try {
    return decodeURIComponent(last);
  } catch {
    return last;
  }
}
