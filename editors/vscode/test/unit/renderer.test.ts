/**
 * media/chat.js's Markdown renderer, run in node: the tree it parses, and the elements it builds with a
 * fake document that refuses HTML parsing (innerHTML and friends throw).
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';

const chatJs = path.join(__dirname, '..', '..', '..', 'media', 'chat.js');

interface FileReference {
  path: string;
  line?: number;
  column?: number;
}

interface MdNode {
  text?: string;
  tag?: string;
  className?: string;
  title?: string;
  reference?: FileReference;
  children?: MdNode[];
}

interface Renderer {
  parseMarkdown(text: string): MdNode[];
  parseInline(text: string): MdNode[];
  fileReference(text: string): FileReference | null;
  hasCodebase(text: string): boolean;
  toggleCodebase(text: string): string;
  completeMention(value: string, caret: number): { value: string; caret: number } | null;
  renderMarkdown(text: string, doc: unknown): FakeNode;
  verificationBlock(verification: { state: string; text: string; output?: string }, open: boolean, doc: unknown): FakeNode;
  ALLOWED_TAGS: Set<string>;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const renderer = require(chatJs) as Renderer;

class FakeNode {
  readonly children: FakeNode[] = [];
  className = '';
  title = '';
  open = false;
  readonly attributes: Record<string, string> = {};
  constructor(
    readonly tag: string,
    readonly text?: string,
  ) {}
  appendChild(child: FakeNode): FakeNode {
    this.children.push(child);
    return child;
  }
  setAttribute(name: string, value: string): void {
    if (/^on/i.test(name) || name === 'src' || name === 'href' || name === 'style')
      throw new Error(`attribute ${name}`);
    this.attributes[name] = value;
  }
  set innerHTML(_value: string) {
    throw new Error('innerHTML used');
  }
  set outerHTML(_value: string) {
    throw new Error('outerHTML used');
  }
  insertAdjacentHTML(): void {
    throw new Error('insertAdjacentHTML used');
  }
  /** Every element tag in the subtree. */
  tags(): string[] {
    return this.children.flatMap((c) => (c.tag === '#text' ? [] : [c.tag, ...c.tags()]));
  }
  textContent(): string {
    return this.tag === '#text' ? (this.text ?? '') : this.children.map((c) => c.textContent()).join('');
  }
}

const fakeDocument = {
  createElement: (tag: string) => new FakeNode(tag),
  createTextNode: (text: string) => new FakeNode('#text', text),
  createDocumentFragment: () => new FakeNode('#fragment'),
};

const render = (text: string): FakeNode => renderer.renderMarkdown(text, fakeDocument);

describe('markdown renderer', () => {
  test('paragraphs, headings, emphasis, code spans', () => {
    assert.deepEqual(renderer.parseMarkdown('# Title\nSome **bold**, *em* and `x < y`; snake_case_name'), [
      { tag: 'h3', children: [{ text: 'Title' }] },
      {
        tag: 'p',
        children: [
          { text: 'Some ' },
          { tag: 'strong', children: [{ text: 'bold' }] },
          { text: ', ' },
          { tag: 'em', children: [{ text: 'em' }] },
          { text: ' and ' },
          { tag: 'code', children: [{ text: 'x < y' }] },
          { text: '; snake_case_name' },
        ],
      },
    ]);
  });

  test('fenced code blocks become <pre><code> with the language as a class', () => {
    const out = render('Before\n```python\ndef f():\n    return "<b>"\n```\nAfter');
    assert.deepEqual(out.tags(), ['p', 'pre', 'code', 'p']);
    const code = out.children[1].children[0];
    assert.equal(code.className, 'language-python');
    assert.equal(code.textContent(), 'def f():\n    return "<b>"');
  });

  test('an unclosed fence (an answer still streaming) is a code block to the end', () => {
    assert.deepEqual(render('```js\nlet a = 1;').tags(), ['pre', 'code']);
  });

  test('lists, ordered and not; quotes; rules', () => {
    const out = render('1. one\n2. two\n\n3. three\n\n- a\n  more of a\n* b\n\n> quoted\n\n---');
    assert.deepEqual(out.tags(), ['ol', 'li', 'li', 'li', 'ul', 'li', 'li', 'blockquote', 'p', 'hr']);
    assert.equal(out.children[1].children[0].textContent(), 'a\nmore of a');
  });

  test('HTML in the answer stays text: <script>, <img onerror>, event handlers', () => {
    const attacks = [
      '<script>alert(1)</script>',
      '<img src=x onerror="alert(1)">',
      'text <iframe src="javascript:alert(1)"></iframe>',
      '**<svg onload=alert(1)>**',
      '`</code><script>alert(1)</script>`',
      '```\n</code></pre><script>alert(1)</script>\n```',
      '[click](javascript:alert(1))',
      '<a href="javascript:alert(1)">x</a>',
      '&lt;script&gt; &amp; &#x3C;img&#x3E;',
    ];
    for (const attack of attacks) {
      const out = render(attack);
      for (const tag of out.tags()) assert.ok(renderer.ALLOWED_TAGS.has(tag), `${tag} from ${attack}`);
      assert.ok(!out.tags().some((t) => ['script', 'img', 'iframe', 'svg', 'a'].includes(t)), attack);
    }
    assert.equal(render('<script>alert(1)</script>').textContent(), '<script>alert(1)</script>');
    assert.equal(render('<img src=x onerror=alert(1)>').textContent(), '<img src=x onerror=alert(1)>');
    // Entities are not decoded: what the model wrote is what the user sees.
    assert.equal(render('&lt;b&gt;').textContent(), '&lt;b&gt;');
  });

  test('links show their text, the address only as an inert tooltip', () => {
    const out = render('[docs](https://example.org/a)');
    const span = out.children[0].children[0];
    assert.equal(span.tag, 'span');
    assert.equal(span.className, 'link');
    assert.equal(span.title, 'https://example.org/a');
    assert.equal(span.textContent(), 'docs');
  });

  test('unmatched markers and backslash escapes are literal', () => {
    assert.equal(render('2 * 3 * 4 and a_b_c and **open').textContent(), '2 * 3 * 4 and a_b_c and **open');
    assert.equal(render('\\*not em\\*').textContent(), '*not em*');
  });

  test('the script never parses HTML', () => {
    const source = fs.readFileSync(chatJs, 'utf8').replace(/^\s*(\/\/|\*|\/\*\*).*$/gm, '');
    for (const sink of [
      'innerHTML',
      'outerHTML',
      'insertAdjacentHTML',
      'document.write',
      'DOMParser',
      'createContextualFragment',
      'eval(',
      'new Function',
    ]) {
      assert.ok(!source.includes(sink), sink);
    }
  });

  test("an edit's check: its summary, and its output folded away, both as text", () => {
    const output = '<script>alert(1)</script>\nE   assert 3 == 4';
    const block = renderer.verificationBlock(
      { state: 'failed', text: '⚠ not verified: `pytest -q` failed on all 3 attempts', output },
      true,
      fakeDocument,
    );
    assert.equal(block.className, 'verification failed');
    assert.deepEqual(block.tags(), ['div', 'details', 'summary', 'pre']);
    assert.equal(block.children[0].textContent(), '⚠ not verified: `pytest -q` failed on all 3 attempts');
    const details = block.children[1];
    assert.equal(details.className, 'verification-output');
    assert.equal(details.open, true);
    assert.equal(details.children[1].textContent(), output);
    const quiet = renderer.verificationBlock({ state: 'unchecked', text: 'not verified' }, false, fakeDocument);
    assert.deepEqual(quiet.tags(), ['div']);
  });

  test('file references become file links: code spans, words, link addresses', () => {
    const links = (text: string) =>
      renderer.parseInline(text).flatMap((node) => (node.reference ? [[node.reference, textOf(node)]] : []));
    const textOf = (node: MdNode): string => node.text ?? (node.children ?? []).map(textOf).join('');
    assert.deepEqual(links('See `shop/prices.py:3` and `inventory.py`.'), [
      [{ path: 'shop/prices.py', line: 3 }, 'shop/prices.py:3'],
      [{ path: 'inventory.py' }, 'inventory.py'],
    ]);
    const prose = 'It is in shop/prices.py:3:5, (see app.py:12). Also README.md: and src/a-b/c_d.test.ts;';
    assert.deepEqual(links(prose), [
      [{ path: 'shop/prices.py', line: 3, column: 5 }, 'shop/prices.py:3:5'],
      [{ path: 'app.py', line: 12 }, 'app.py:12'],
      [{ path: 'README.md' }, 'README.md'],
      [{ path: 'src/a-b/c_d.test.ts' }, 'src/a-b/c_d.test.ts'],
    ]);
    // A range opens at its first line; a line 0 is no line.
    assert.deepEqual(links('`lib/x.go:10-20` `a.py:0`'), [
      [{ path: 'lib/x.go', line: 10 }, 'lib/x.go:10-20'],
      [{ path: 'a.py' }, 'a.py:0'],
    ]);
    assert.deepEqual(links('[the prices](shop/prices.py:3) [docs](https://example.org/a.py)'), [
      [{ path: 'shop/prices.py', line: 3 }, 'the prices'],
    ]);
  });

  test('what is no file reference stays as it was', () => {
    const texts = [
      '`os.path` `item.price` `self.total_value()` `np.array`', // attributes, not files
      'e.g. v1.2.3 3.14 i.e., a.b', // no suffix of a file
      '`../outside.py:1` ../up.py /etc/passwd `/abs/path.py:3` ./here.py', // outside, absolute, dotted
      'https://example.org/a.py http://host/x.py:3 file:///etc/x.py', // addresses
      '`a.py foo` `` `a.py` ``', // more than a path
    ];
    for (const text of texts) {
      const nodes = renderer.parseInline(text);
      assert.ok(!JSON.stringify(nodes).includes('"reference"'), `${text}: ${JSON.stringify(nodes)}`);
    }
    assert.equal(renderer.fileReference('a/../b.py'), null);
    assert.equal(renderer.fileReference('.hidden/a.py')?.path, '.hidden/a.py');
    // In a fenced block a path is code.
    assert.deepEqual(render('```\nshop/prices.py:3\n```').tags(), ['pre', 'code']);
  });

  test('a file link is a button that carries the reference as data, nothing to follow', () => {
    const out = render('Open `shop/prices.py:3:7` or inventory.py:18, **`a/b.rs`**');
    const paragraph = out.children[0];
    const buttons = paragraph.children.filter((c) => c.tag === 'button');
    assert.equal(buttons.length, 2);
    const [first, second] = buttons;
    assert.equal(first.className, 'file-link');
    assert.equal(first.title, 'Open shop/prices.py at line 3');
    assert.deepEqual(first.attributes, {
      type: 'button',
      'data-path': 'shop/prices.py',
      'data-line': '3',
      'data-column': '7',
    });
    assert.deepEqual(first.tags(), ['code']);
    assert.equal(first.textContent(), 'shop/prices.py:3:7');
    assert.deepEqual(second.attributes, { type: 'button', 'data-path': 'inventory.py', 'data-line': '18' });
    assert.equal(second.textContent(), 'inventory.py:18');
    assert.equal(paragraph.textContent(), 'Open shop/prices.py:3:7 or inventory.py:18, a/b.rs');
    assert.deepEqual(paragraph.children[paragraph.children.length - 1].tags(), ['button', 'code']); // inside **
    // A link's text holds no second link.
    const nested = render('[`x/y.py` here](x/y.py:2)').children[0];
    assert.deepEqual(nested.tags(), ['button', 'code']);
    // Model output in the path stays a value: a quote or markup cannot leave the attribute.
    const odd = render('`a"onclick=x/b.py`');
    assert.ok(!odd.tags().includes('button'));
  });

  test('@codebase: whether the prompt has it, the button that puts it in or takes it out', () => {
    assert.equal(renderer.hasCodebase('@codebase where is it?'), true);
    assert.equal(renderer.hasCodebase('where, @CodeBase?'), true);
    assert.equal(renderer.hasCodebase('mail me@codebase.org'), false);
    assert.equal(renderer.hasCodebase('@codebases'), false);
    assert.equal(renderer.toggleCodebase('where is the discount?'), '@codebase where is the discount?');
    assert.equal(renderer.toggleCodebase(''), '@codebase ');
    assert.equal(renderer.toggleCodebase('@codebase where is it?'), 'where is it?');
    assert.equal(renderer.toggleCodebase('where is @codebase it?'), 'where is it?');
  });

  test('@codebase: Tab after @, @c ... completes it as a word of its own', () => {
    assert.deepEqual(renderer.completeMention('@', 1), { value: '@codebase ', caret: 10 });
    assert.deepEqual(renderer.completeMention('where is @cod', 13), { value: 'where is @codebase ', caret: 19 });
    assert.deepEqual(renderer.completeMention('@co where', 3), { value: '@codebase where', caret: 10 });
    assert.equal(renderer.completeMention('@codebase', 9), null); // done already
    assert.equal(renderer.completeMention('me@c', 4), null); // an address
    assert.equal(renderer.completeMention('@x', 2), null);
    assert.equal(renderer.completeMention('@cod', 2), null); // the caret is not at its end
    assert.equal(renderer.completeMention('plain text', 5), null);
  });

  test('a long answer renders in reasonable time', () => {
    const long = Array.from({ length: 400 }, (_, i) => `Line ${i} with *a * few* stray ** markers and \`code\``).join(
      '\n',
    );
    const started = Date.now();
    render(`${long}\n\`\`\`\n${long}\n\`\`\``);
    assert.ok(Date.now() - started < 1000);
  });
});
