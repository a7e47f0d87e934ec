/**
 * Proposed WorkspaceEdits as plain data: which files they touch, the text a file would have after
 * them (for the diff preview), and whether a document moved on since the edit was written. Pure, so
 * that the rules are tested without VS Code.
 */

import type { Position, TextEdit, WorkspaceEdit } from './protocol';

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

function offsetAt(text: string, lineStarts: number[], position: Position): number {
  if (position.line >= lineStarts.length) return text.length;
  const start = lineStarts[position.line];
  const next = position.line + 1 < lineStarts.length ? lineStarts[position.line + 1] : text.length + 1;
  // A character past the line's end means its end (LSP says to clamp), not the next line.
  let lineEnd = next - 1;
  if (lineEnd > start && text[lineEnd - 1] === '\r') lineEnd -= 1;
  return Math.min(start + position.character, Math.max(start, lineEnd));
}

/**
 * The text after the edits. LSP ranges refer to the original text and must not overlap, so the edits
 * apply from the last to the first; edits at the same position keep their order.
 */
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') lineStarts.push(i + 1);
  const located = edits.map((edit, index) => ({
    start: offsetAt(text, lineStarts, edit.range.start),
    end: offsetAt(text, lineStarts, edit.range.end),
    newText: edit.newText,
    index,
  }));
  located.sort((a, b) => b.start - a.start || b.index - a.index);
  let result = text;
  for (const edit of located) result = result.slice(0, edit.start) + edit.newText + result.slice(edit.end);
  return result;
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
