/**
 * How a next-edit suggestion is drawn, as plain data: the text it removes (struck through), the text it
 * inserts (ghost text after the spot), a gutter mark on each line it changes, a hint at the end of a
 * line saying what Tab does, and the hover with the whole change. nextEdit.ts hands these to VS Code's
 * decorations (the stable API: no proposed inline-edit API). Pure, so that the mapping is tested.
 */

import type { Position, Range, TextEdit } from './protocol';
import { cursorAtSuggestion } from './nextEditFlow';

export const TAB_GO_TO = 'Tab: go to the suggested edit';
export const TAB_ACCEPT = 'Tab: accept';
export const ESCAPE_DISMISS = 'Escape: dismiss';
/** Inserted lines are shown on one line, joined by this (decorations cannot add lines). */
export const LINE_BREAK_MARK = ' ⏎ ';
/** Longest ghost text drawn; the hover has all of it. */
export const MAX_GHOST_CHARS = 120;

export interface Ghost {
  /** Where the inserted text is drawn: right after this position. */
  at: Position;
  text: string;
}

export interface DecorationPlan {
  /** Text the suggestion removes. */
  removed: Range[];
  /** Text it inserts, one entry per edit that inserts any. */
  inserted: Ghost[];
  /** Lines (0-based) that get the gutter mark: each line an edit starts on. */
  gutter: number[];
  /** What Tab does from the cursor's line, drawn at the end of that line. */
  hint: { line: number; text: string };
  /** Markdown for the hover on the changed text and the gutter mark. */
  hover: string;
}

function commonPrefix(a: string, b: string): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

function commonSuffix(a: string, b: string, limit: number): number {
  let n = 0;
  while (n < limit && a[a.length - 1 - n] === b[b.length - 1 - n]) n++;
  return n;
}

/**
 * An edit narrowed, for drawing only, to the part that changes: `tax_rate` -> `tax` on one line is drawn
 * as `_rate` struck through, not as the whole word struck through and `tax` again beside it. Edits that
 * span lines are drawn as they are. (The edit applied is always the server's own.)
 */
export function narrowedForDisplay(edit: TextEdit, lineText: (line: number) => string): TextEdit {
  const { start, end } = edit.range;
  if (start.line !== end.line || edit.newText.includes('\n')) return edit;
  const old = lineText(start.line).slice(start.character, end.character);
  const prefix = commonPrefix(old, edit.newText);
  const suffix = commonSuffix(old, edit.newText, Math.min(old.length, edit.newText.length) - prefix);
  return {
    range: {
      start: { line: start.line, character: start.character + prefix },
      end: { line: end.line, character: end.character - suffix },
    },
    newText: edit.newText.slice(prefix, edit.newText.length - suffix),
  };
}

function ghostText(newText: string): string {
  const oneLine = newText.split(/\r?\n/).join(LINE_BREAK_MARK);
  return oneLine.length > MAX_GHOST_CHARS ? `${oneLine.slice(0, MAX_GHOST_CHARS - 1)}…` : oneLine;
}

/** A code fence longer than any run of backticks in `text`, so that the text cannot close it. */
function fence(text: string): string {
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  return '`'.repeat(Math.max(3, longest + 1));
}

/** The lines an edit touches, before and after it, as a diff. */
export function editDiff(edit: TextEdit, lineText: (line: number) => string): string {
  const { start, end } = edit.range;
  const oldLines: string[] = [];
  for (let line = start.line; line <= end.line; line++) oldLines.push(lineText(line));
  const head = oldLines[0].slice(0, start.character);
  const tail = oldLines[oldLines.length - 1].slice(end.character);
  const newLines = `${head}${edit.newText}${tail}`.split(/\r?\n/);
  return [...oldLines.map((l) => `- ${l}`), ...newLines.map((l) => `+ ${l}`)].join('\n');
}

/** The hover: what Tab does now, Escape, and the whole change. */
export function hoverMarkdown(edits: readonly TextEdit[], tabText: string, lineText: (line: number) => string): string {
  const diff = edits.map((edit) => editDiff(edit, lineText)).join('\n');
  const marks = fence(diff);
  return `**Llama: next edit** · ${tabText} · ${ESCAPE_DISMISS}\n\n${marks}diff\n${diff}\n${marks}`;
}

/**
 * The drawing of a suggestion whose edits are `edits` (against the document as it is), with the cursor on
 * `cursorLine`; `lineText` gives a line of the document.
 */
export function decorationPlan(edits: readonly TextEdit[], cursorLine: number, lineText: (line: number) => string): DecorationPlan {
  const removed: Range[] = [];
  const inserted: Ghost[] = [];
  for (const edit of edits.map((e) => narrowedForDisplay(e, lineText))) {
    const { start, end } = edit.range;
    if (start.line !== end.line || start.character !== end.character) removed.push(edit.range);
    if (edit.newText !== '') inserted.push({ at: end, text: ghostText(edit.newText) });
  }
  const gutter = [...new Set(edits.map((e) => e.range.start.line))];
  const at = cursorAtSuggestion(edits, cursorLine);
  const firstLine = edits[0].range.start.line;
  const tabText = at ? TAB_ACCEPT : TAB_GO_TO;
  const hint = { line: cursorLine, text: `${at ? TAB_ACCEPT : `${TAB_GO_TO} (line ${firstLine + 1})`} · ${ESCAPE_DISMISS}` };
  return { removed, inserted, gutter, hint, hover: hoverMarkdown(edits, tabText, lineText) };
}
