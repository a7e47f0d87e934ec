"""Inline completion's text rules: what goes into a fill-in-the-middle prompt around the cursor, where
a completion ends, what is shown of it, and a cache of recent results. Plain text: no LSP, no model.

The prompt is laid out so that consecutive keystrokes share as many tokens as possible: the lines
above the cursor start at a line that moves only in steps of WINDOW_STEP lines (a window that slid
with every new line would change the prompt's first token, and nothing could be reused), and the
cursor's line goes apart from them (llama_lsp.h, "fim").
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from .edits import split_lines

PREFIX_LINES = 256  # lines above the cursor, at most (llama.vim's default)
WINDOW_STEP = 32  # the first of them moves in steps of this many lines
SUFFIX_LINES = 16  # lines below the cursor's line: enough to say what comes next
RIGHT_OF_CURSOR_MAX = 8  # more text than this right of the cursor: no completion (as llama.vim)
BLOCK_OPENERS = (":", "{", "(", "[")  # a line that ends with one of these goes on in the lines below
MAX_LINES = 8  # lines in one completion at most
CACHE_SIZE = 256


@dataclass(frozen=True)
class Around:
    """The text around the cursor, as the prompt takes it."""

    prefix: str  # whole lines above the cursor's line (from the window's first line)
    prompt: str  # the cursor's line up to the cursor
    right: str  # the rest of the cursor's line
    below: str  # the lines below it (at most SUFFIX_LINES)

    @property
    def suffix(self) -> str:
        return self.right + self.below

    def key(self, filename: str, extra: str = "") -> str:
        """Names what a completion depends on (the cache's key)."""
        return _key(self._context(filename, extra), self.prompt)

    def _context(self, filename: str, extra: str) -> hashlib._Hash:
        """The hash of everything but the line typed up to the cursor, which changes per keystroke."""
        return hashlib.sha256("\0".join((filename, extra, self.prefix, self.suffix, "")).encode())


def _key(context: hashlib._Hash, prompt: str) -> str:
    hashed = context.copy()
    hashed.update(prompt.encode())
    return hashed.hexdigest()


def around_cursor(text: str, line: int, column: int) -> Around | None:
    """The text around the cursor at `line` (0-based) and `column` (a string offset in that line);
    None where no completion is wanted: more than a few characters right of the cursor."""
    lines = split_lines(text)
    if line >= len(lines):
        lines += [""] * (line - len(lines) + 1)
    current = lines[line]
    content = current.rstrip("\r\n")
    right = content[column:]
    if len(right.strip()) > RIGHT_OF_CURSOR_MAX:
        return None
    first = 0 if line <= PREFIX_LINES else -(-(line - PREFIX_LINES) // WINDOW_STEP) * WINDOW_STEP
    below = lines[line + 1 : line + 1 + SUFFIX_LINES]
    return Around(
        prefix="".join(lines[first:line]),
        prompt=content[:column],
        right=right + current[len(content) :],
        below="".join(below),
    )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


class Ending:
    """Decides where a completion ends while it streams, and what of it is shown.

    In the middle of a line (text before the cursor that opens no block, or text after it), it is the
    rest of that line. Otherwise, at the start of a line or after a block opener, it ends at the end of
    its block: a blank line, or a line indented less than the cursor's line, after the first; or after
    MAX_LINES lines. Once the time budget is spent, it ends at the end of the line it is writing (when
    that line is not blank).
    """

    def __init__(self, around: Around, budget_s: float, clock: Callable[[], float] = time.monotonic):
        self._base_indent = _indent(around.prompt)
        typed = around.prompt.strip()
        self._single_line = bool(around.right.strip()) or (bool(typed) and not typed.endswith(BLOCK_OPENERS))
        self._right = around.right.strip()
        self._deadline = clock() + budget_s
        self._clock = clock
        self._budget_cut: int | None = None  # where keep_going ended it for the time budget

    def keep_going(self, text: str) -> bool:
        """Whether to generate more after `text` (called after each piece)."""
        if self._cut(text) is not None:
            return False
        if self._clock() > self._deadline and "\n" in text:
            done = text[: text.rindex("\n")]
            if done.strip():  # a line with something on it is finished: end there
                self._budget_cut = len(done)
                return False
        return True

    def _cut(self, text: str) -> int | None:
        """Where the completion ends within text by its own shape, if it does."""
        lines = text.split("\n")
        if self._single_line and len(lines) > 1:
            return len(lines[0])
        offset = len(lines[0]) + 1
        for number, line in enumerate(lines[1:-1], start=1):  # the complete lines after the first
            if number >= MAX_LINES or not line.strip() or _indent(line) < self._base_indent:
                return offset - 1
            offset += len(line) + 1
        return None

    def shown(self, text: str) -> str:
        """The completion as it is offered: cut where it ends, without trailing space, and without
        the text right of the cursor that it wrote again."""
        cut = self._cut(text)
        if cut is None:
            cut = self._budget_cut
        if cut is not None:
            text = text[:cut]
        text = text.rstrip()
        if self._right and text.endswith(self._right):
            text = text[: -len(self._right)]
        return text


class RecentCompletions:
    """The last CACHE_SIZE completions, by what they depend on; typing what one offered keeps it."""

    def __init__(self, size: int = CACHE_SIZE):
        self._items: OrderedDict[str, str] = OrderedDict()
        self._size = size

    def put(self, key: str, completion: str) -> None:
        self._items[key] = completion
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def get(self, around: Around, filename: str, extra: str = "") -> str | None:
        """The completion for this cursor: a cached one, or the rest of one offered a few characters
        back on this line, when what was typed since is how it began."""
        context = around._context(filename, extra)  # the same for every earlier cursor on this line
        for back in range(0, min(len(around.prompt), 64) + 1):
            earlier = around.prompt[: len(around.prompt) - back]
            key = _key(context, earlier)
            completion = self._items.get(key)
            if completion is None:
                continue
            typed = around.prompt[len(earlier) :]
            if completion.startswith(typed) and len(completion) > len(typed):
                self._items.move_to_end(key)
                return completion[len(typed) :]
        return None
