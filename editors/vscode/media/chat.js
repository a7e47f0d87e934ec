// @ts-check
/**
 * The chat webview: the transcript, the prompt, and a small Markdown renderer for the answers.
 *
 * Model output is untrusted. The renderer never hands it to an HTML parser: it parses the Markdown
 * into a tree of allowed tags and text, then builds elements with createElement and text with
 * createTextNode, so `<script>` or `<img onerror>` in an answer stays visible text. (The CSP would
 * block such a script anyway; this is the second wall.) No innerHTML anywhere in this file.
 *
 * A file reference in an answer (`shop/prices.py:3`, in a code span or as a bare word) becomes a button
 * that asks the extension to open it; the extension opens only a file that exists inside a workspace
 * folder (src/chat/references.ts). Nothing here follows a link by itself.
 *
 * In node (the unit tests) the file only exports the renderer and the prompt's helpers.
 */
(function () {
  'use strict';

  /** The only elements the renderer creates. */
  const ALLOWED_TAGS = new Set([
    'p',
    'h3',
    'h4',
    'h5',
    'h6',
    'ul',
    'ol',
    'li',
    'pre',
    'code',
    'strong',
    'em',
    'blockquote',
    'hr',
    'span',
    'button',
  ]);

  /**
   * @typedef {{ path: string, line?: number, column?: number }} FileReference
   * @typedef {{ text: string }} TextNode
   * @typedef {{ tag: string, children: MdNode[], className?: string, title?: string, start?: number,
   *   reference?: FileReference }} ElementNode
   * @typedef {TextNode | ElementNode} MdNode
   */

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
  const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}> ?(.*)$/;
  const ITEM = /^(\s*)([-*+]|(\d{1,9})[.)])\s+(.*)$/;
  const BLANK = /^\s*$/;

  /**
   * @param {string} text
   * @returns {MdNode[]}
   */
  function parseMarkdown(text) {
    const lines = String(text).replace(/\r\n?/g, '\n').split('\n');
    /** @type {MdNode[]} */
    const blocks = [];
    let i = 0;
    const startsBlock = (/** @type {string} */ line) =>
      FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line);

    while (i < lines.length) {
      const line = lines[i];
      if (BLANK.test(line)) {
        i++;
        continue;
      }
      const fence = FENCE.exec(line);
      if (fence) {
        // An unclosed fence runs to the end: that is how a code block looks while it streams in.
        const marker = fence[1];
        const body = [];
        i++;
        while (i < lines.length && !isClosingFence(lines[i], marker)) body.push(lines[i++]);
        i++;
        /** @type {ElementNode} */
        const code = { tag: 'code', children: [{ text: body.join('\n') }] };
        if (fence[2]) code.className = `language-${fence[2]}`;
        blocks.push({ tag: 'pre', children: [code] });
        continue;
      }
      const heading = HEADING.exec(line);
      if (heading) {
        // Answers live in a narrow side bar: even a top-level heading stays small.
        blocks.push({ tag: `h${Math.min(6, heading[1].length + 2)}`, children: parseInline(heading[2]) });
        i++;
        continue;
      }
      if (RULE.test(line)) {
        blocks.push({ tag: 'hr', children: [] });
        i++;
        continue;
      }
      if (QUOTE.test(line)) {
        const inner = [];
        let match;
        while (i < lines.length && (match = QUOTE.exec(lines[i]))) {
          inner.push(match[1]);
          i++;
        }
        blocks.push({ tag: 'blockquote', children: parseMarkdown(inner.join('\n')) });
        continue;
      }
      const item = ITEM.exec(line);
      if (item) {
        const ordered = item[3] !== undefined;
        /** @type {string[][]} */
        const items = [];
        const sameKind = (/** @type {RegExpExecArray | null} */ match) =>
          match !== null && (match[3] !== undefined) === ordered;
        while (i < lines.length) {
          const current = ITEM.exec(lines[i]);
          if (current) {
            if (!sameKind(current)) break;
            items.push([current[4]]);
          } else if (BLANK.test(lines[i])) {
            // A blank line ends the list unless another item of the same kind follows it.
            if (!sameKind(ITEM.exec(lines[i + 1] ?? ''))) break;
          } else if (startsBlock(lines[i])) {
            break;
          } else {
            items[items.length - 1].push(lines[i].trim()); // the item's text goes on
          }
          i++;
        }
        /** @type {ElementNode} */
        const list = {
          tag: ordered ? 'ol' : 'ul',
          children: items.map((parts) => ({ tag: 'li', children: parseInline(parts.join('\n')) })),
        };
        const start = ordered ? Number(item[3]) : 1;
        if (start !== 1) list.start = start;
        blocks.push(list);
        continue;
      }
      const paragraph = [line.trim()];
      i++;
      while (i < lines.length && !BLANK.test(lines[i]) && !startsBlock(lines[i])) paragraph.push(lines[i++].trim());
      blocks.push({ tag: 'p', children: parseInline(paragraph.join('\n')) });
    }
    return blocks;
  }

  /**
   * @param {string} line
   * @param {string} marker
   */
  function isClosingFence(line, marker) {
    const trimmed = line.trim();
    return trimmed.length >= marker.length && trimmed[0] === marker[0] && /^(`+|~+)$/.test(trimmed);
  }

  /**
   * A relative path whose last part has a suffix, then `:line`, `:line:col` or `:line-line`. No part is
   * `.` or `..`, and it does not start with `/`: the model cites files relative to the workspace folder.
   */
  const FILE_REFERENCE =
    /^((?:(?!\.\.?\/)[\w.@+~-]+\/)*[\w@+~-][\w.@+~-]*\.([A-Za-z][A-Za-z0-9]{0,9}))(?::(\d{1,7})(?::(\d{1,5})|-\d{1,7})?)?$/;

  /**
   * Suffixes that name a file even without a directory or a line: `inventory.py` is a file, `os.path`
   * and `item.price` (attributes, in code spans as often as files) are not.
   */
  const FILE_SUFFIXES = new Set(
    (
      'py pyi ipynb js jsx mjs cjs ts tsx mts cts go rs c h cc cpp cxx hh hpp hxx cs java kt kts scala rb php ' +
      'lua sh bash zsh fish ps1 swift dart ex exs erl hs ml mli clj zig nim jl sql proto graphql vue svelte ' +
      'html htm css scss sass less md rst txt adoc json jsonc yaml yml toml ini cfg conf xml csv tsv lock ' +
      'gradle cmake mk tf vim el'
    ).split(' '),
  );

  /**
   * The file a code span's or a word's text refers to, or null.
   * @param {string} text
   * @returns {FileReference | null}
   */
  function fileReference(text) {
    const match = FILE_REFERENCE.exec(text);
    if (!match) return null;
    const [, path, suffix, line, column] = match;
    if (!path.includes('/') && line === undefined && !FILE_SUFFIXES.has(suffix.toLowerCase())) return null;
    /** @type {FileReference} */
    const reference = { path };
    if (line !== undefined && Number(line) > 0) {
      reference.line = Number(line);
      if (column !== undefined && Number(column) > 0) reference.column = Number(column);
    }
    return reference;
  }

  /**
   * The button that opens a reference; `children` are what it shows.
   * @param {FileReference} reference
   * @param {MdNode[]} children
   * @returns {ElementNode}
   */
  function fileLink(reference, children) {
    const where = reference.line === undefined ? '' : ` at line ${reference.line}`;
    return { tag: 'button', className: 'file-link', title: `Open ${reference.path}${where}`, reference, children };
  }

  /**
   * The nodes with their file links as what they show: a link's text holds no other link.
   * @param {MdNode[]} nodes
   * @returns {MdNode[]}
   */
  function unlinked(nodes) {
    return nodes.flatMap((node) => {
      if ('text' in node) return [node];
      if (node.reference) return unlinked(node.children);
      return [{ ...node, children: unlinked(node.children) }];
    });
  }

  // A word's punctuation around a reference: "(see shop/prices.py:3)." links shop/prices.py:3.
  const WORD = /(^|\s)([("'\[]*)([^\s()"'\[\]]+?)([)"'\].,;:!?]*)(?=\s|$)/g;

  /**
   * Plain text with its file references as links.
   * @param {string} text
   * @returns {MdNode[]}
   */
  function linkWords(text) {
    /** @type {MdNode[]} */
    const out = [];
    let from = 0;
    for (const match of text.matchAll(WORD)) {
      const reference = fileReference(match[3]);
      if (!reference) continue;
      const at = /** @type {number} */ (match.index) + match[1].length + match[2].length;
      if (at > from) out.push({ text: text.slice(from, at) });
      out.push(fileLink(reference, [{ text: match[3] }]));
      from = at + match[3].length;
    }
    if (from < text.length) out.push({ text: text.slice(from) });
    return out;
  }

  /**
   * Code spans, **strong**, *em* / _em_, [text](url) (shown as text, the address as its tooltip: a
   * link in an answer is not something to click blindly), backslash escapes; the rest is text. A file
   * reference (a code span, a word, a link's address) becomes a file link.
   * @param {string} text
   * @returns {MdNode[]}
   */
  function parseInline(text) {
    /** @type {MdNode[]} */
    const out = [];
    let plain = '';
    const flush = () => {
      if (plain) out.push(...linkWords(plain));
      plain = '';
    };
    let i = 0;
    while (i < text.length) {
      const c = text[i];
      if (c === '\\' && i + 1 < text.length && /[\\`*_{}[\]()#+\-.!~>|]/.test(text[i + 1])) {
        plain += text[i + 1];
        i += 2;
        continue;
      }
      if (c === '`') {
        let n = 1;
        while (text[i + n] === '`') n++;
        const ticks = '`'.repeat(n);
        const end = text.indexOf(ticks, i + n);
        if (end !== -1) {
          flush();
          const body = text.slice(i + n, end);
          /** @type {ElementNode} */
          const code = { tag: 'code', children: [{ text: body }] };
          const reference = fileReference(body.trim());
          out.push(reference ? fileLink(reference, [code]) : code);
          i = end + n;
        } else {
          plain += ticks;
          i += n;
        }
        continue;
      }
      if (c === '*' || c === '_') {
        const marker = text[i + 1] === c ? c + c : c;
        const opens = !(c === '_' && /\w/.test(text[i - 1] || '')) && /\S/.test(text[i + marker.length] || ' ');
        const end = opens ? closingMarker(text, marker, i + marker.length) : -1;
        if (end !== -1) {
          flush();
          out.push({
            tag: marker.length === 2 ? 'strong' : 'em',
            children: parseInline(text.slice(i + marker.length, end)),
          });
          i = end + marker.length;
        } else {
          plain += marker;
          i += marker.length;
        }
        continue;
      }
      if (c === '[') {
        const link = /^\[([^\]\n]+)\]\(([^)\s]+)\)/.exec(text.slice(i));
        if (link) {
          flush();
          const reference = fileReference(link[2]);
          const label = reference ? unlinked(parseInline(link[1])) : parseInline(link[1]);
          const inert = { tag: 'span', className: 'link', title: link[2], children: label };
          out.push(reference ? fileLink(reference, label) : inert);
          i += link[0].length;
          continue;
        }
      }
      plain += c;
      i++;
    }
    flush();
    return out;
  }

  /**
   * @param {string} text
   * @param {string} marker
   * @param {number} from
   */
  function closingMarker(text, marker, from) {
    let at = text.indexOf(marker, from);
    while (at !== -1) {
      const before = text[at - 1] || ' ';
      const after = text[at + marker.length] || ' ';
      const doubled = marker.length === 1 && after === marker; // `*` inside `**`: not ours
      const intraword = marker[0] === '_' && /\w/.test(after);
      if (at > from && /\S/.test(before) && !doubled && !intraword) return at;
      at = text.indexOf(marker, at + (doubled ? 2 : 1));
    }
    return -1;
  }

  /**
   * Builds the tree into `parent`. Tags outside ALLOWED_TAGS are a bug in the parser: refuse them.
   * @param {MdNode[]} nodes
   * @param {Document} doc
   * @param {Node} parent
   */
  function buildInto(nodes, doc, parent) {
    for (const node of nodes) {
      if ('text' in node) {
        parent.appendChild(doc.createTextNode(node.text));
        continue;
      }
      if (!ALLOWED_TAGS.has(node.tag)) throw new Error(`renderer: unexpected tag ${node.tag}`);
      const element = doc.createElement(node.tag);
      if (node.className) element.className = node.className;
      if (node.title) element.title = node.title;
      if (node.start !== undefined) element.setAttribute('start', String(Math.trunc(node.start)));
      if (node.reference) {
        element.setAttribute('type', 'button');
        element.setAttribute('data-path', node.reference.path);
        if (node.reference.line !== undefined) element.setAttribute('data-line', String(node.reference.line));
        if (node.reference.column !== undefined) element.setAttribute('data-column', String(node.reference.column));
      }
      buildInto(node.children, doc, element);
      parent.appendChild(element);
    }
  }

  /**
   * @param {string} text Markdown
   * @param {Document} doc
   * @returns {DocumentFragment}
   */
  function renderMarkdown(text, doc) {
    const fragment = doc.createDocumentFragment();
    buildInto(parseMarkdown(text), doc, fragment);
    return fragment;
  }

  /**
   * How an edit was checked (src/verification.ts decides the text and the state), with the check's
   * output folding out below it; all of it as text. `open`: keep the output open across a re-render.
   * @param {{ state: string, text: string, output?: string }} verification
   * @param {boolean} open
   * @param {Document} doc
   * @returns {HTMLElement}
   */
  function verificationBlock(verification, open, doc) {
    const block = doc.createElement('div');
    block.className = `verification ${verification.state}`;
    const line = doc.createElement('div');
    line.className = 'verification-summary';
    line.appendChild(doc.createTextNode(verification.text));
    block.appendChild(line);
    if (verification.output) {
      const details = /** @type {HTMLDetailsElement} */ (doc.createElement('details'));
      details.className = 'verification-output';
      details.open = open;
      const summary = doc.createElement('summary');
      summary.appendChild(doc.createTextNode('Output of the check'));
      const output = doc.createElement('pre');
      output.appendChild(doc.createTextNode(verification.output));
      details.appendChild(summary);
      details.appendChild(output);
      block.appendChild(details);
    }
    return block;
  }

  // ---- @codebase in the prompt ------------------------------------------------------------------

  const MENTION = '@codebase';
  /** As the server finds it (CODEBASE in lsp_server/lsp/chat.py): a word of its own, any case. */
  const CODEBASE = /(^|[^\w@])@codebase\b/i;

  /** @param {string} text */
  function hasCodebase(text) {
    return CODEBASE.test(text);
  }

  /**
   * The prompt with `@codebase` put in front, or taken out when it is there.
   * @param {string} text
   * @returns {string}
   */
  function toggleCodebase(text) {
    if (!hasCodebase(text)) return `${MENTION} ${text.replace(/^\s+/, '')}`;
    const all = new RegExp(CODEBASE.source, 'gi');
    return text.replace(all, '$1').replace(/^\s+/, '').replace(/ {2,}/g, ' ');
  }

  /**
   * The `@`, `@c`, ... `@codebas` the caret is at the end of, as a word of its own; null otherwise.
   * @param {string} value
   * @param {number} caret
   * @returns {{ start: number, end: number } | null}
   */
  function partialMention(value, caret) {
    const before = /(^|\s)(@\w*)$/.exec(value.slice(0, caret));
    if (!before || !/^(\s|$)/.test(value.slice(caret))) return null;
    const word = before[2].toLowerCase();
    if (word.length >= MENTION.length || !MENTION.startsWith(word)) return null;
    return { start: caret - word.length, end: caret };
  }

  /**
   * Tab after a partial `@codebase`: the prompt with it completed and the caret after it, or null.
   * @param {string} value
   * @param {number} caret
   * @returns {{ value: string, caret: number } | null}
   */
  function completeMention(value, caret) {
    const partial = partialMention(value, caret);
    if (!partial) return null;
    const after = value.slice(partial.end);
    const insert = after.startsWith(' ') ? MENTION : `${MENTION} `;
    return { value: value.slice(0, partial.start) + insert + after, caret: partial.start + MENTION.length + 1 };
  }

  // ---- the page ---------------------------------------------------------------------------------

  function startUi() {
    // @ts-ignore: provided by VS Code in webviews
    const vscode = acquireVsCodeApi();
    const transcript = /** @type {HTMLElement} */ (document.getElementById('transcript'));
    const form = /** @type {HTMLFormElement} */ (document.getElementById('composer'));
    const prompt = /** @type {HTMLTextAreaElement} */ (document.getElementById('prompt'));
    const sendButton = /** @type {HTMLButtonElement} */ (document.getElementById('send'));
    const stopButton = /** @type {HTMLButtonElement} */ (document.getElementById('stop'));
    const newButton = /** @type {HTMLButtonElement} */ (document.getElementById('new'));
    const contextLine = /** @type {HTMLElement} */ (document.getElementById('context'));
    const codebaseButton = /** @type {HTMLButtonElement} */ (document.getElementById('codebase'));
    const mentionHint = /** @type {HTMLElement} */ (document.getElementById('mention-hint'));

    /** @type {Map<string, any>} entries by id (shapes: src/chat/messages.ts) */
    const entries = new Map();
    /** @type {Map<string, HTMLElement>} */
    const elements = new Map();
    /** @type {Set<string>} ids whose text changed since the last paint */
    const dirty = new Set();
    let paintScheduled = false;
    let busy = false;

    function setBusy(/** @type {boolean} */ value) {
      busy = value;
      sendButton.disabled = value;
      stopButton.disabled = !value;
    }

    function send() {
      const text = prompt.value.trim();
      if (text === '' || busy) return;
      vscode.postMessage({ type: 'ask', text });
      prompt.value = '';
      promptChanged();
    }

    /** The @codebase button shows whether the prompt has it; the hint, whether Tab would complete it. */
    function promptChanged() {
      codebaseButton.setAttribute('aria-pressed', String(hasCodebase(prompt.value)));
      const caret = prompt.selectionStart === prompt.selectionEnd ? prompt.selectionStart : -1;
      mentionHint.hidden = caret < 0 || partialMention(prompt.value, caret) === null;
    }

    function nearBottom() {
      return transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 48;
    }

    /** @param {string} className @param {string} text */
    function div(className, text) {
      const element = document.createElement('div');
      element.className = className;
      element.textContent = text;
      return element;
    }

    /** @param {string} className @param {string} text */
    function button(className, text) {
      const element = document.createElement('button');
      element.type = 'button';
      element.className = className;
      element.textContent = text;
      return element;
    }

    function render(/** @type {any} */ entry) {
      let element = elements.get(entry.id);
      if (!element) {
        element = document.createElement('div');
        element.dataset.id = entry.id;
        elements.set(entry.id, element);
        transcript.appendChild(element);
      }
      const outputOpen = Boolean(element.querySelector('details.verification-output[open]'));
      element.className = `message ${entry.role}${entry.done ? ' done' : ''}`;
      if (entry.finishReason) element.setAttribute('data-finish-reason', entry.finishReason);
      else element.removeAttribute('data-finish-reason');
      element.replaceChildren();
      if (entry.role === 'user') {
        if (entry.context) element.appendChild(div('context-label', entry.context));
        element.appendChild(div('body', entry.text));
        return;
      }
      const body = div('body', '');
      body.appendChild(renderMarkdown(entry.text, document));
      element.appendChild(body);
      if (!entry.done && !entry.text) element.appendChild(div('typing', 'Thinking…'));
      if (entry.tools) element.appendChild(div('tools', `Used: ${entry.tools.join(', ')}`));
      if (entry.finishReason === 'cancelled') element.appendChild(div('note', 'Stopped.'));
      if (entry.finishReason === 'length') element.appendChild(div('note', 'The answer reached the token limit.'));
      if (entry.error) element.appendChild(div('error', entry.error));
      if (entry.edit) {
        const edit = div('edit', '');
        edit.appendChild(div('edit-files', `Proposed edit: ${entry.edit.files.join(', ')}`));
        const apply = button('apply-edit', entry.edit.applied ? 'Applied' : 'Apply');
        apply.disabled = Boolean(entry.edit.applied);
        edit.append(button('preview-edit secondary', 'Preview'), apply);
        if (entry.verification) edit.appendChild(verificationBlock(entry.verification, outputOpen, document));
        element.appendChild(edit);
      } else if (entry.verification) {
        element.appendChild(verificationBlock(entry.verification, outputOpen, document));
      }
      if (entry.editError) element.appendChild(div('edit-error', entry.editError));
      if (entry.stats) element.appendChild(div('stats', entry.stats));
    }

    function paint() {
      paintScheduled = false;
      const follow = nearBottom();
      for (const id of dirty) {
        const entry = entries.get(id);
        if (entry) render(entry);
      }
      dirty.clear();
      if (follow) transcript.scrollTop = transcript.scrollHeight;
    }

    /** Deltas arrive faster than a re-render is worth: paint at most every few frames. */
    function schedulePaint(/** @type {string} */ id) {
      dirty.add(id);
      if (!paintScheduled) {
        paintScheduled = true;
        setTimeout(paint, 30);
      }
    }

    function show(/** @type {any} */ entry) {
      entries.set(entry.id, entry);
      schedulePaint(entry.id);
      paint();
    }

    function setContext(/** @type {string | undefined} */ context) {
      contextLine.textContent = context ? `About: ${context}` : 'No file: the question goes without a document';
    }

    window.addEventListener('message', (event) => {
      const message = event.data;
      switch (message.type) {
        case 'restore':
          entries.clear();
          elements.clear();
          dirty.clear();
          transcript.replaceChildren();
          for (const entry of message.entries) show(entry);
          setBusy(message.busy);
          setContext(message.context);
          break;
        case 'append':
        case 'update':
          show(message.entry);
          break;
        case 'delta': {
          const entry = entries.get(message.id);
          if (entry) {
            entry.text += message.text;
            schedulePaint(entry.id);
          }
          break;
        }
        case 'busy':
          setBusy(message.busy);
          break;
        case 'context':
          setContext(message.context);
          break;
        case 'focus':
          prompt.focus();
          break;
      }
    });

    form.addEventListener('submit', (event) => {
      event.preventDefault();
      send();
    });
    prompt.addEventListener('keydown', (event) => {
      // Enter or Ctrl+Enter sends; Shift+Enter is a new line; composing (IME) text is left alone.
      if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        send();
        return;
      }
      // Tab completes a partial @codebase; anywhere else it moves the focus, as it always does.
      if (event.key === 'Tab' && !event.shiftKey && !event.ctrlKey && !event.altKey && !event.metaKey) {
        const caret = prompt.selectionStart === prompt.selectionEnd ? prompt.selectionStart : -1;
        const completed = caret < 0 ? null : completeMention(prompt.value, caret);
        if (completed) {
          event.preventDefault();
          prompt.value = completed.value;
          prompt.setSelectionRange(completed.caret, completed.caret);
          promptChanged();
        }
      }
    });
    prompt.addEventListener('input', promptChanged);
    prompt.addEventListener('keyup', promptChanged);
    prompt.addEventListener('click', promptChanged);
    codebaseButton.addEventListener('click', () => {
      prompt.value = toggleCodebase(prompt.value);
      prompt.focus();
      prompt.setSelectionRange(prompt.value.length, prompt.value.length);
      promptChanged();
    });
    stopButton.addEventListener('click', () => vscode.postMessage({ type: 'stop' }));
    newButton.addEventListener('click', () => vscode.postMessage({ type: 'new' }));
    transcript.addEventListener('click', (event) => {
      const target = /** @type {HTMLElement} */ (event.target);
      // A file reference: the extension decides whether it is a file of the workspace to open.
      const link = /** @type {HTMLElement | null} */ (target.closest('button.file-link'));
      if (link) {
        const line = Number(link.dataset.line);
        const column = Number(link.dataset.column);
        vscode.postMessage({
          type: 'openFile',
          path: link.dataset.path,
          ...(line > 0 ? { line } : {}),
          ...(column > 0 ? { column } : {}),
        });
        return;
      }
      const id = target.closest('.message')?.getAttribute('data-id');
      if (!id) return;
      if (target.closest('button.preview-edit')) vscode.postMessage({ type: 'preview', id });
      else if (target.closest('button.apply-edit')) vscode.postMessage({ type: 'apply', id });
    });
    setContext(undefined);
    setBusy(false);
    promptChanged();
    vscode.postMessage({ type: 'ready' });
  }

  const api = {
    parseMarkdown,
    parseInline,
    renderMarkdown,
    verificationBlock,
    fileReference,
    hasCodebase,
    toggleCodebase,
    completeMention,
    ALLOWED_TAGS,
  };
  if (typeof module === 'object' && module.exports) module.exports = api;
  else startUi();
})();
