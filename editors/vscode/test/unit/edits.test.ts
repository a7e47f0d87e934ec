import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyTextEdits, fileChanges, fileLabel, staleFiles } from '../../src/edits';
import type { TextEdit, WorkspaceEdit } from '../../src/protocol';

const at = (line: number, character: number) => ({ line, character });
const edit = (l1: number, c1: number, l2: number, c2: number, newText: string): TextEdit => ({
  range: { start: at(l1, c1), end: at(l2, c2) },
  newText,
});

describe('applyTextEdits', () => {
  test('replaces ranges of the original text, last to first', () => {
    const text = 'def f(a, b):\n    return a - b\n';
    assert.equal(
      applyTextEdits(text, [edit(0, 4, 0, 5, 'sub'), edit(1, 13, 1, 14, '+')]),
      'def sub(a, b):\n    return a + b\n',
    );
  });

  test('inserts at one position keep their order', () => {
    assert.equal(applyTextEdits('x\n', [edit(0, 0, 0, 0, 'a'), edit(0, 0, 0, 0, 'b')]), 'abx\n');
  });

  test('whole-line ranges, a range past the end, and CRLF line ends', () => {
    assert.equal(applyTextEdits('a\nb\nc\n', [edit(1, 0, 2, 0, '')]), 'a\nc\n');
    assert.equal(applyTextEdits('a\n', [edit(5, 0, 5, 0, 'z')]), 'a\nz');
    assert.equal(applyTextEdits('ab\r\ncd\r\n', [edit(0, 0, 0, 99, 'X')]), 'X\r\ncd\r\n');
  });
});

describe('workspace edits', () => {
  const proposal: WorkspaceEdit = {
    documentChanges: [
      { textDocument: { uri: 'file:///w/app.py', version: 3 }, edits: [edit(0, 0, 0, 0, '# hi\n')] },
      { kind: 'create', uri: 'file:///w/test_app.py' },
      { textDocument: { uri: 'file:///w/test_app.py', version: null }, edits: [edit(0, 0, 0, 0, 'def test(): ...\n')] },
    ],
  };

  test('one change per file; a created file and its content merge', () => {
    const changes = fileChanges(proposal);
    assert.deepEqual(
      changes.map((c) => [fileLabel(c.uri), c.version, c.creates, c.edits.length]),
      [
        ['app.py', 3, false, 1],
        ['test_app.py', null, true, 1],
      ],
    );
  });

  test('a document open at another version is stale; unversioned and unopened ones are not', () => {
    const versions: Record<string, number> = { 'file:///w/app.py': 4 };
    assert.deepEqual(
      staleFiles(proposal, (uri) => versions[uri]),
      ['file:///w/app.py'],
    );
    versions['file:///w/app.py'] = 3;
    assert.deepEqual(
      staleFiles(proposal, (uri) => versions[uri]),
      [],
    );
  });

  test('file labels are decoded', () => {
    assert.equal(fileLabel('file:///w/my%20file.py'), 'my file.py');
  });
});
