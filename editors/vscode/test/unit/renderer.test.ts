/**
 * media/chat.js's Markdown renderer, run in node: the tree it parses, and the elements it builds with a
 * fake document that refuses HTML parsing (innerHTML and friends throw).
 */

import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';

const chatJs = path.join(__dirname, '..', '..', '..', 'media', 'chat.js');

interface MdNode {
  text?: string;
  tag?: string;
  className?: string;
  title?: string;
  children?: MdNode[];
}

interface Renderer {
  parseMarkdown(text: string): MdNode[];
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

  test('a long answer renders in reasonable time', () => {
    const long = Array.from({ length: 400 }, (_, i) => `Line ${i} with *a * few* stray ** markers and \`code\``).join(
      '\n',
    );
    const started = Date.now();
    render(`${long}\n\`\`\`\n${long}\n\`\`\``);
    assert.ok(Date.now() - started < 1000);
  });
});
