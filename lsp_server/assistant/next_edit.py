"""Next-edit suggestions' text rules: the recent edits as the server saw them, the prompt that shows
them to the model, and what of its answer is a suggestion. Plain text: no LSP, no model.

The prompt is laid out stable-first, so that a request evaluates little more than the edit it follows:
1. the instructions (the same for every request);
2. a window of the file as it was when its history began (`EditHistory.base`): it changes only when the
   history starts again or the cursor moves to another window;
3. the recent edits, oldest first, as before/after blocks of whole lines (the field found them better
   than unified diffs for small models; merge-conflict markers got copied into answers); typing on the
   same lines updates the last block, so the blocks before it stay;
4. the editable region as it is now: a few lines around the cursor;
5. the answer's start, the region's opening marker: the model writes the region again, and the
   engine drafts from the region it is copying.
The suggestion is the difference between the region and the model's version of it. No change, a change
that undoes the user's last edit, or one after which a text that parsed no longer does: no suggestion.

One kind of edit needs no model: the user's last substitution made again where the old text stands next
(repeat_substitution: the rest of a rename, the same argument changed in the next call), at once and
often away from the cursor. On the eval's real commits the models finished such edits less often than
this rule, which never spoke after an edit that had no follow-up (docs/quality.md); the model answers
the rest.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from . import languages
from .edits import changed_region, split_lines

REGION_ABOVE = 2  # lines of the editable region above its anchor (the cursor's line)
REGION_BELOW = 8  # and below it (the next edit is more often below the last one than above)
WINDOW_LINES = 64  # lines of the file shown before the edits, at most
WINDOW_STEP = 32  # the window's first line moves in steps of this many lines (a stable prompt prefix)
WINDOW_CHARS = 4_000  # and characters, at most: a file of long lines shows fewer of them
MAX_HUNKS = 6  # recent edits shown, at most; older ones are dropped
MAX_OTHER_HUNKS = 2  # of them, edits to other open files
MAX_HUNK_LINES = 20  # an edit larger than this (a paste, a reload) is no pattern: the history restarts
MAX_TEXT_CHARS = 2_000_000  # a larger document gets no suggestions (its history is not kept)
RESYNC_LINES = 3  # lines copied again after a change that end an answer (Copying)
ANSWER_SLACK_TOKENS = 48  # the answer may be this much longer than the region (in tokens, estimated)
CHARS_PER_TOKEN = 3  # for estimating, on code

START = "<|editable_region_start|>"
END = "<|editable_region_end|>"
MARKER_NAME = re.compile(r"editable_region")

SYSTEM = (
    "You predict the next edit a programmer will make to their code. You are shown a part of a file as it "
    "was, the edits the programmer made since, oldest first, and the part of the file where the next edit "
    f"may happen, between {START} and {END}, as it is now. Write that part again as it will be after the "
    "programmer's next edit: the change their recent edits call for, such as the same change made to "
    "another occurrence, or a change they started and have not finished. Keep every other line exactly "
    "as it is. If the recent edits call for no change in that part, write it again unchanged. Write only "
    f"the part, from {START} to {END}, with no explanation."
)


@dataclass(frozen=True)
class Hunk:
    """One recent edit, as whole lines: `before` became `after` at line `line` (0-based, in the text
    after the edit)."""

    path: str
    line: int
    before: str
    after: str
    order: int  # when it was made, among every document's edits

    @property
    def after_lines(self) -> int:
        return len(split_lines(self.after))


@dataclass
class DocumentHistory:
    """One open document's recent edits: its text when they began, and the edits since."""

    path: str
    base: str  # the text before the first of `hunks`
    text: str  # the text now
    hunks: list[Hunk] = field(default_factory=list)

    def restart(self) -> None:
        self.base = self.text
        self.hunks.clear()


class EditHistory:
    """The recent edits to every open document, as the server saw them (didOpen, didChange)."""

    def __init__(self) -> None:
        self._documents: dict[str, DocumentHistory] = {}
        self._order = 0

    def opened(self, uri: str, path: str, text: str) -> None:
        if len(text) > MAX_TEXT_CHARS:
            self._documents.pop(uri, None)
            return
        self._documents[uri] = DocumentHistory(path, text, text)

    def closed(self, uri: str) -> None:
        self._documents.pop(uri, None)

    def get(self, uri: str) -> DocumentHistory | None:
        return self._documents.get(uri)

    def changed(self, uri: str, path: str, text: str) -> None:
        """Records the document's new text as an edit: merged into the last one where it touches the same
        lines (typing a word is one edit), else appended; a large one starts the history again."""
        history = self._documents.get(uri)
        if history is None or len(text) > MAX_TEXT_CHARS:
            self.opened(uri, path, text)
            return
        old, history.text = history.text, text
        hunk = _line_hunk(old, text, path, self._order + 1)
        if hunk is None:
            return
        if len(split_lines(hunk.before)) > MAX_HUNK_LINES or hunk.after_lines > MAX_HUNK_LINES:
            history.restart()
            return
        self._order += 1
        last = history.hunks[-1] if history.hunks else None
        if last is not None and _touches(last, hunk):
            merged = _line_hunk(_revert(old, last), text, path, self._order)
            if merged is None:  # the edits cancel out: the user undid the last one
                history.hunks.pop()
                return
            if len(split_lines(merged.before)) <= MAX_HUNK_LINES and merged.after_lines <= MAX_HUNK_LINES:
                history.hunks[-1] = merged
                return
        history.hunks.append(hunk)
        if len(history.hunks) > 2 * MAX_HUNKS:  # only the last MAX_HUNKS are shown; keep a few more
            del history.hunks[: len(history.hunks) - MAX_HUNKS]

    def recent(self, uri: str) -> list[Hunk]:
        """The edits a suggestion in `uri` follows: its own since its history began, and the latest few to
        other open documents, oldest first."""
        history = self._documents.get(uri)
        if history is None:
            return []
        others = sorted(
            (hunk for key, other in self._documents.items() if key != uri for hunk in other.hunks),
            key=lambda hunk: hunk.order,
        )[-MAX_OTHER_HUNKS:]
        own = history.hunks[-MAX_HUNKS:]
        if own:  # another document's edits older than this one's history tell little about it
            others = [hunk for hunk in others if hunk.order > own[0].order]
        return sorted(own + others, key=lambda hunk: hunk.order)[-MAX_HUNKS:]


def _line_hunk(old: str, new: str, path: str, order: int) -> Hunk | None:
    """The whole lines that changed between two texts; None when they are the same."""
    if old == new:
        return None
    start, end, replacement = changed_region(old, new)
    line_start = old.rfind("\n", 0, start) + 1
    if end > start and old[end - 1] == "\n":
        line_end = end  # the change ends with a line ending: the next line is untouched
    else:
        newline = old.find("\n", end)
        line_end = len(old) if newline < 0 else newline + 1
    before = old[line_start:line_end]
    after = old[line_start:start] + replacement + old[end:line_end]
    return Hunk(path, old.count("\n", 0, line_start), before, after, order)


def _touches(last: Hunk, hunk: Hunk) -> bool:
    """Whether a new edit lies on or right next to the lines of the last one (in the text before it)."""
    last_end = last.line + max(last.after_lines, 1)
    hunk_end = hunk.line + max(len(split_lines(hunk.before)), 1)
    return hunk.line <= last_end and last.line <= hunk_end


def _revert(text: str, hunk: Hunk) -> str:
    """The text with one edit undone (the hunk's `after` lines replaced by its `before` lines)."""
    lines = split_lines(text)
    return "".join(lines[: hunk.line]) + hunk.before + "".join(lines[hunk.line + hunk.after_lines :])


# ---- the prompt ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Region:
    """The editable region: lines [start, end) of the text now."""

    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]  # the system message, the file's window, the edits and the region
    answer_start: str  # the start of the model's answer (continued)
    region: Region
    max_tokens: int
    window_first: int  # the first line of the file's window (in the text before the edits)

    @property
    def stable_part(self) -> list[dict[str, str]]:
        """The messages that stay the same from one request to the next while the window does."""
        return self.messages[:2]


@dataclass(frozen=True)
class Substitution:
    old: str  # what the edit replaced, within one line
    new: str  # by what
    start: int  # where, in the hunk's lines (the same offset in `before` and in `after`)


def substitution(hunk: Hunk) -> Substitution | None:
    """The edit as one replacement within a line (a rename, a changed argument or value, a comment taken
    off), widened so that neither end cuts a word in two: `tax_rate` -> `tax`, not `_rate` -> ``. None
    where nothing was replaced (an insertion) or the change spans lines."""
    start, end, replacement = changed_region(hunk.before, hunk.after)
    after_end = start + len(replacement)
    while not (_at_boundary(hunk.before, start) and _at_boundary(hunk.after, start)):
        start -= 1  # within the common prefix: both texts agree here
    while not (_at_boundary(hunk.before, end) and _at_boundary(hunk.after, after_end)):
        end += 1  # within the common suffix
        after_end += 1
    old, new = hunk.before[start:end], hunk.after[start:after_end]
    if not old.strip() or old == new or "\n" in old or "\n" in new:
        return None
    return Substitution(old, new, start)


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _at_boundary(text: str, index: int) -> bool:
    """Whether `index` does not fall inside a word of `text`."""
    return not (0 < index < len(text) and _is_word(text[index - 1]) and _is_word(text[index]))


def repeat_substitution(
    history: DocumentHistory, hunks: list[Hunk], cursor_offset: int
) -> list[TextEdit] | None:
    """The user's last edit made again, without the model: where it replaced X by Y within a line and X
    still stands elsewhere in the file as a whole (not inside a longer word), its next occurrence after
    the cursor (else the nearest one before it) replaced by Y. Accepting it makes the same edit again, so the
    suggestion after it is the occurrence after that, until none is left: the rest of a rename, the same
    argument changed in each call. None where the last edit is no such substitution (the model decides)."""
    own = [hunk for hunk in hunks if hunk.path == history.path]
    replaced = substitution(own[-1]) if own else None
    if replaced is None:
        return None
    lines = split_lines(history.text)
    written = sum(len(line) for line in lines[: own[-1].line]) + replaced.start  # where Y now stands
    text, old = history.text, replaced.old
    found = [
        at
        for at in _occurrences(text, old)
        if at + len(old) <= written or at >= written + len(replaced.new)  # not in what the user wrote
    ]
    after = [at for at in found if at >= cursor_offset]
    before = [at for at in found if at < cursor_offset]
    if not found:
        return None
    at = after[0] if after else before[-1]
    edits = [TextEdit(at, at + len(old), replaced.new)]
    return None if _breaks(history.path, text, apply_edits(text, edits)) else edits


def _breaks(path: str, before: str, after: str) -> bool:
    """Whether an edit makes a text that parsed one that does not (where the language has a parser)."""
    suffix = PurePosixPath(path).suffix
    return languages.parses(suffix, after) is False and languages.parses(suffix, before) is not False


def _occurrences(text: str, needle: str) -> list[int]:
    """Where `needle` stands in `text` as a whole: not the middle of a longer word."""
    found = []
    at = text.find(needle)
    while at >= 0:
        if _at_boundary(text, at) and _at_boundary(text, at + len(needle)):
            found.append(at)
        at = text.find(needle, at + 1)
    return found


def editable_region(text: str, anchor: int) -> Region:
    lines = split_lines(text)
    start = max(0, min(anchor, len(lines) - 1) - REGION_ABOVE)
    end = min(len(lines), anchor + REGION_BELOW + 1)
    # Never a blank first line: after the marker's line ending, the model would have to write a lone line
    # ending, where it would write two as one token; it drops the blank line instead.
    while start < min(anchor, end - 1) and not lines[start].strip():
        start += 1
    return Region(start, end, "".join(lines[start:end]))


def window(base: str, anchor: int) -> tuple[int, str]:
    """The lines of the file's text before the edits that the prompt shows: a window that holds the anchor
    and moves in steps, so that requests around the same place share it. Returns its first line's index."""
    lines = split_lines(base)
    first = max(0, (anchor - WINDOW_LINES // 2) // WINDOW_STEP * WINDOW_STEP)
    if first >= len(lines):
        first = max(0, (len(lines) - 1) // WINDOW_STEP * WINDOW_STEP)
    shown = lines[first : first + WINDOW_LINES]
    text = "".join(shown)
    if len(text) > WINDOW_CHARS:  # long lines: keep the ones nearest the anchor
        keep = max(0, anchor - first)
        while len(text) > WINDOW_CHARS and len(shown) > 1:
            if keep < len(shown) // 2:
                shown.pop()
            else:
                shown.pop(0)
                first += 1
                keep -= 1
            text = "".join(shown)
    return first, text


def build_prompt(history: DocumentHistory, hunks: list[Hunk], cursor_line: int) -> Prompt:
    region = editable_region(history.text, cursor_line)
    first, shown = window(history.base, cursor_line)
    fence = languages.fence_tag(PurePosixPath(history.path).suffix)
    last_line = first + len(split_lines(shown))
    file_message = (
        f"The file `{history.path}`, lines {first + 1} to {last_line}, before my recent edits:\n"
        f"```{fence}\n{shown}{'' if shown.endswith(chr(10)) or not shown else chr(10)}```"
    )
    edits = "\n\n".join(_hunk_block(hunk) for hunk in hunks)
    # No cursor marker inside the region: both models tried stopped copying where it stood.
    region_text = region.text
    edits_message = (
        f"My recent edits, oldest first:\n\n{edits}\n\n"
        f"The part of `{history.path}` around my cursor, as it is now:\n{START}\n{region_text}{END}"
    )
    max_tokens = len(region.text) // CHARS_PER_TOKEN + ANSWER_SLACK_TOKENS
    return Prompt(
        messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": file_message},
            {"role": "user", "content": edits_message},
        ],
        answer_start=f"{START}\n",
        region=region,
        max_tokens=max_tokens,
        window_first=first,
    )


def _hunk_block(hunk: Hunk) -> str:
    return (
        f"In `{hunk.path}`, these lines:\n```\n{_with_ending(hunk.before)}```\n"
        f"became:\n```\n{_with_ending(hunk.after)}```"
    )


def _with_ending(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


# ---- the answer ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextEdit:
    """A replacement of text[start:end] in the document's text now (string offsets)."""

    start: int
    end: int
    new_text: str


def suggestion(history: DocumentHistory, prompt: Prompt, answer: str) -> list[TextEdit] | None:
    """The edits the model's complete answer suggests (the difference between the region and its
    rewrite), or None: no change, a change that undoes the user's last edit, or one after which the text
    no longer parses."""
    written = _region_written(answer)
    region = prompt.region
    if region.text.endswith("\n") and not written.endswith("\n"):
        written += "\n"
    elif not region.text.endswith("\n") and written.endswith("\n"):
        written = written[:-1]  # the file's last line, which has no line ending
    if region.text.strip() and not written.strip():
        return None  # the model wrote nothing: not a suggestion to delete the region
    if MARKER_NAME.search(written) and not MARKER_NAME.search(region.text):
        return None  # a marker written wrong ("</|editable_region_end|>"): the model lost the format
    region_start = sum(len(line) for line in split_lines(history.text)[: region.start])
    edits = _edits(region.text, written, region_start)
    if not edits:
        return None
    text = history.text
    after = apply_edits(text, edits)
    own = [hunk for hunk in history.hunks if hunk.path == history.path]
    if own and after == _revert(text, own[-1]):
        return None
    return None if _breaks(history.path, text, after) else edits


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """The text with the edits made (they are in order and do not overlap)."""
    for edit in reversed(edits):
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    return text


class Copying:
    """Ends an answer once the model, past its change, copies the region's lines again: RESYNC_LINES lines
    in a row, one of them not blank, that are the region's own lines after the change. The rest of the
    region is then taken as it is, not written out token by token. (A second change further down the
    region, RESYNC_LINES or more lines below the first, is left for the suggestion after this one.) An
    answer that copied the whole region unchanged and goes on past its end ends there too."""

    def __init__(self, region: Region):
        self._region = split_lines(region.text)
        self._rest: list[str] | None = None  # the region's lines after the point where the answer ended
        self._kept = 0  # the answer's lines, up to that point

    def keep_going(self, answer: str) -> bool:
        """Whether the model should write on (sees the answer so far, after each piece)."""
        written = split_lines(_region_written(answer))
        complete = written if not written or written[-1].endswith("\n") else written[:-1]
        diverged = next(
            (n for n, line in enumerate(complete) if n >= len(self._region) or line != self._region[n]), None
        )
        if diverged == len(self._region):  # the whole region copied, and the model writes on past it
            self._rest, self._kept = [], diverged
            return False
        block_start = len(complete) - RESYNC_LINES
        if diverged is None or block_start < diverged:
            return True
        block = complete[block_start:]
        if not any(line.strip() for line in block):
            return True
        for start in range(diverged, len(self._region) - RESYNC_LINES + 1):
            if self._region[start : start + RESYNC_LINES] == block:
                self._rest = self._region[start + RESYNC_LINES :]
                self._kept = len(complete)
                return False
        return True

    def completed(self, answer: str) -> str:
        """The answer as if the model had written the region to its end."""
        if self._rest is None:
            return answer
        kept = split_lines(_region_written(answer))[: self._kept]  # not a line the last piece began
        return START + "\n" + "".join(kept) + "".join(self._rest)


def _region_written(answer: str) -> str:
    """The region as the model wrote it: after the opening marker, up to the closing one (where the
    answer holds it: the request stops before it)."""
    if answer.startswith(START):
        answer = answer[len(START) :]
        if answer.startswith("\n"):
            answer = answer[1:]
    end = answer.find(END)
    return answer if end < 0 else answer[:end]


def _edits(old: str, new: str, offset: int) -> list[TextEdit]:
    """The smallest edits, line by line and then within the lines, that turn `old` into `new`."""
    old_lines, new_lines = split_lines(old), split_lines(new)
    edits = []
    starts = [0]
    for line in old_lines:
        starts.append(starts[-1] + len(line))
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        before, after = "".join(old_lines[i1:i2]), "".join(new_lines[j1:j2])
        if tag == "equal" or not (before.strip() or after.strip()):
            continue  # small models drop and add blank lines as they copy: never a suggestion alone
        if tag == "delete" and i2 == len(old_lines):
            continue  # nor do the region's last lines left out: the model stopped copying early
        start, end, replacement = changed_region(before, after)
        edits.append(TextEdit(offset + starts[i1] + start, offset + starts[i1] + end, replacement))
    return edits
