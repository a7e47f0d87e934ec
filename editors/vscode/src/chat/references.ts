/**
 * File references in chat answers (`shop/prices.py:3`): what the webview may ask to open, and which file
 * of the workspace that is. The webview renders model output, so its request is checked here again: a
 * path relative to a workspace folder, that resolves (symlinks followed) to an existing file inside that
 * folder. Anything else (`..`, an absolute path, a symlink that leads out, a folder) opens nothing.
 */

import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** What a file link in the chat asks to open; `line` and `column` are 1-based. */
export interface FileReference {
  path: string;
  line?: number;
  column?: number;
}

/** Longer paths are no file reference a model writes. */
export const MAX_REFERENCE_CHARS = 1024;
const MAX_LINE = 10_000_000;

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= MAX_LINE ? value : undefined;
}

/**
 * The reference in a message from the webview, when it is one: a relative path with no `.` or `..`
 * part, no backslash and no NUL; a line and column that are not positive integers are left out.
 */
export function fileReferenceOf(message: {
  path?: unknown;
  line?: unknown;
  column?: unknown;
}): FileReference | undefined {
  const relative = message.path;
  if (typeof relative !== 'string' || relative === '' || relative.length > MAX_REFERENCE_CHARS) return undefined;
  if (/[\\\0]/.test(relative) || path.posix.isAbsolute(relative) || path.win32.isAbsolute(relative)) return undefined;
  if (relative.split('/').some((part) => part === '..' || part === '.' || part === '')) return undefined;
  const reference: FileReference = { path: relative };
  const line = positiveInteger(message.line);
  if (line !== undefined) {
    reference.line = line;
    const column = positiveInteger(message.column);
    if (column !== undefined) reference.column = column;
  }
  return reference;
}

/** Whether `child` is `root` or lies under it (both absolute and normalised). */
function isInside(root: string, child: string): boolean {
  const relative = path.relative(root, child);
  return relative === '' || (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative));
}

/**
 * The file `reference` names in the first of `folders` (absolute paths) that has it, as a path under
 * that folder; undefined when none does, or when the path, or a symlink on the way, leads out of it.
 */
export async function resolveReference(
  reference: FileReference,
  folders: readonly string[],
): Promise<string | undefined> {
  if (fileReferenceOf(reference) === undefined) return undefined;
  for (const folder of folders) {
    const candidate = path.resolve(folder, reference.path);
    if (!isInside(folder, candidate) || candidate === path.resolve(folder)) continue;
    try {
      const [realFolder, realFile] = await Promise.all([fs.realpath(folder), fs.realpath(candidate)]);
      if (!isInside(realFolder, realFile)) continue;
      if ((await fs.stat(realFile)).isFile()) return candidate;
    } catch {
      // not there (or unreadable) in this folder: the next one may have it
    }
  }
  return undefined;
}

/** "shop/prices.py", "shop/prices.py:3", "shop/prices.py:3:5": how a message names it. */
export function referenceLabel(reference: FileReference): string {
  if (reference.line === undefined) return reference.path;
  return reference.column === undefined
    ? `${reference.path}:${reference.line}`
    : `${reference.path}:${reference.line}:${reference.column}`;
}
