import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import type * as vscode from 'vscode';
import { ACTION_COMMANDS, actionRange } from '../../src/codeActions';

const position = (line: number, character: number) => ({ line, character }) as vscode.Position;

describe('code action commands', () => {
  test('each command runs one of the server action kinds, and is contributed', () => {
    const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
    const contributed = new Set(manifest.contributes.commands.map((c: { command: string }) => c.command));
    assert.deepEqual(
      Object.entries(ACTION_COMMANDS).map(([id, action]) => [id, action.kind]),
      [
        ['llamaLsp.explain', 'explain'],
        ['llamaLsp.fix', 'fix'],
        ['llamaLsp.document', 'document'],
        ['llamaLsp.refactor', 'refactor'],
        ['llamaLsp.writeTests', 'tests'],
      ],
    );
    for (const id of Object.keys(ACTION_COMMANDS)) assert.ok(contributed.has(id), id);
  });

  test('the selection, or the whole current line without one', () => {
    assert.deepEqual(actionRange({ isEmpty: false, start: position(2, 4), end: position(5, 1) }), {
      start: { line: 2, character: 4 },
      end: { line: 5, character: 1 },
    });
    assert.deepEqual(actionRange({ isEmpty: true, start: position(7, 3), end: position(7, 3) }), {
      start: { line: 7, character: 0 },
      end: { line: 8, character: 0 },
    });
  });
});
