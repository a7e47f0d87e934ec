"""Proposed edits as text replacements: applying one to a document's text and showing it as a diff."""

from __future__ import annotations

import difflib
import re

# LSP's line endings: \n, \r\n and \r only. str.splitlines also splits on form feeds, \x85, \u2028 and
# more, which would number lines differently from the editor.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def split_lines(text: str) -> list[str]:
    """The lines of a text as LSP counts them, each with its line ending.

    Like str.splitlines(keepends=True), a text that ends with a line ending has no empty last line here.
    """
    return _LINE.findall(text)


def changed_region(before: str, after: str) -> tuple[int, int, str]:
    """The smallest (start, end, replacement) that turns before into after."""
    start = 0
    limit = min(len(before), len(after))
    while start < limit and before[start] == after[start]:
        start += 1
    end_before, end_after = len(before), len(after)
    while end_before > start and end_after > start and before[end_before - 1] == after[end_after - 1]:
        end_before -= 1
        end_after -= 1
    # No LSP position lies between the \r and \n of a line ending: widen the region over the pair.
    if 0 < start < len(before) and before[start - 1] == "\r" and before[start] == "\n":
        start -= 1
    if 0 < end_before < len(before) and before[end_before - 1] == "\r" and before[end_before] == "\n":
        end_before += 1
        end_after += 1
    return start, end_before, after[start:end_after]


class EditError(ValueError):
    """An edit that cannot be applied; the message is meant for the model or the user to read."""


def apply_replacement(text: str, old_text: str, new_text: str) -> str:
    """Replace the one occurrence of old_text in text."""
    if not old_text:
        raise EditError("old_text is empty; quote the exact text to replace")
    count = text.count(old_text)
    if count == 0:
        hint = closest_text(text, old_text)
        raise EditError(
            "old_text does not occur in the file; quote it exactly, with its indentation"
            + (f". The closest text in the file is:\n```\n{hint}\n```\n" if hint else "")
        )
    if count > 1:
        raise EditError(f"old_text occurs {count} times; include more context to make it unique")
    return text.replace(old_text, new_text, 1)


def absorb_restated_lines(text: str, old_text: str, new_text: str) -> str:
    """old_text extended over the lines after it that new_text ends by restating; else old_text itself.

    Models often quote only a block's first line (a signature) and then write the whole block after it.
    Applied as written, the block's lines would appear twice; meant is a replacement of the block.
    """
    start = text.find(old_text)
    end = start + len(old_text)
    if not old_text or start < 0 or text.count(old_text) != 1:
        return old_text
    if not old_text.endswith("\n"):
        if not text.startswith("\n", end):
            return old_text  # old_text ends mid-line
        end += 1
    following = text[end:].split("\n")
    new_lines = new_text.rstrip("\n").split("\n")
    for count in range(min(len(new_lines) - 1, len(following)), 0, -1):
        restated = new_lines[-count:]
        if restated == following[:count] and any(line.strip() for line in restated):
            absorbed = "\n".join(following[:count])
            if new_text.endswith("\n") and count < len(following):
                absorbed += "\n"
            return text[start:end] + absorbed
    return old_text


def unified_diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def indent_step(lines: list[str]) -> str:
    """How the lines indent a level: a tab, or the narrowest run of spaces that indents one (4 if none)."""
    indents = [indent_of(line) for line in lines if line.strip()]
    if any("\t" in indent for indent in indents):
        return "\t"
    widths = [len(indent) for indent in indents if indent]
    return " " * min(widths) if widths else "    "


def moved(lines: list[str], current: str, target: str, step: str) -> list[str]:
    """lines (without line endings) moved from the indentation `current` to `target`: each line that
    starts with `current` keeps its indentation relative to it, in levels of `step` (the file's) where
    the lines indent with tabs and the file with spaces, or the other way round; a Python file with both
    does not parse. Other lines and blank ones stay as they are."""
    relative = [
        indent_of(line)[len(current) :] for line in lines if line.strip() and line.startswith(current)
    ]
    own_step = indent_step([indent + "x" for indent in relative if indent])
    convert = ("\t" in own_step) != ("\t" in step)
    result = []
    for line in lines:
        if line.strip() and line.startswith(current):
            indent = indent_of(line)[len(current) :]
            if convert:
                indent = indent.replace(own_step, step)
            line = target + indent + line.lstrip(" \t")
        result.append(line)
    return result


def apply_replacement_reindented(text: str, old_text: str, new_text: str) -> str:
    """Like apply_replacement, but new_text keeps the indentation of the place it replaces.

    Models often quote old_text without its leading indentation and then indent new_text, or the other
    way round; in an indentation-sensitive file either doubles or drops the indentation.
    """
    after = apply_replacement(text, old_text, new_text)  # validates old_text: present and unique
    start = text.index(old_text)
    line_start = text.rfind("\n", 0, start) + 1
    if text[line_start:start].strip():
        return after  # the match starts mid-line: there is no indentation to keep
    old_block = text[line_start : start + len(old_text)]
    old_lines = [line for line in old_block.splitlines() if line.strip()]
    new_lines = new_text.splitlines(keepends=True)
    if not old_lines or not new_lines:
        return after
    target = min((indent_of(line) for line in old_lines), key=len)
    current = min((indent_of(line) for line in new_lines if line.strip()), key=len, default="")
    reindented = "".join(target + line[len(current) :] if line.strip() else line for line in new_lines)
    return text[:line_start] + reindented + text[start + len(old_text) :]


def closest_text(text: str, wanted: str, threshold: float = 0.6) -> str | None:
    """The run of lines most like wanted (allowing a line or two more): what a model should have quoted."""
    lines = text.splitlines()
    size = len(wanted.splitlines()) or 1
    best, best_score = None, threshold
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(wanted.strip())
    for extra in (0, 1, 2):
        for start in range(max(len(lines) - size - extra + 1, 1)):
            candidate = "\n".join(lines[start : start + size + extra])
            matcher.set_seq1(candidate.strip())
            if matcher.real_quick_ratio() > best_score and matcher.ratio() > best_score:
                best, best_score = candidate, matcher.ratio()
    return best


def _loosely(line: str) -> str:
    """A line as apply_replacement_loosely compares it: without whitespace, and ' for every "."""
    return "".join(line.split()).replace('"', "'")


def apply_replacement_loosely(text: str, old_text: str, new_text: str) -> str | None:
    """Applies old_text -> new_text where the file has old_text's lines with other whitespace or quotes;
    None when no unique run of whole lines matches.

    Models quote code with its indentation changed (a method quoted from column 0, tabs as spaces), with
    spacing retouched (`x=1` for `x = 1`) or in their own quote style (`''` for `""`). The run of the
    file's lines that equals old_text's lines so compared (blank lines ignored) is replaced by new_text,
    moved to the run's indentation: each new line keeps its indentation relative to old_text's first line.
    """
    wanted = [_loosely(line) for line in old_text.splitlines() if line.strip()]
    if not wanted:
        return None
    lines = text.splitlines(keepends=True)
    content = [(i, _loosely(line)) for i, line in enumerate(lines) if line.strip()]
    runs = [
        (content[start][0], content[start + len(wanted) - 1][0])
        for start in range(len(content) - len(wanted) + 1)
        if [c for _, c in content[start : start + len(wanted)]] == wanted
    ]
    if len(runs) != 1:
        return None
    first, last = runs[0]
    quoted_indent = indent_of(next(line for line in old_text.splitlines() if line.strip()))
    ending = "\r\n" if lines[first].endswith("\r\n") else "\n"
    new_lines = moved(new_text.splitlines(), quoted_indent, indent_of(lines[first]), indent_step(lines))
    replaced = "".join(line + ending for line in new_lines)
    if not new_text.endswith("\n") and not lines[last].endswith(("\n", "\r")):
        replaced = replaced.removesuffix(ending)  # the file had no final line ending: keep it that way
    return "".join(lines[:first]) + replaced + "".join(lines[last + 1 :])


MAX_OMITTED_LINES = 3


def apply_replacement_keeping_omitted(text: str, old_text: str, new_text: str) -> str | None:
    """Applies old_text -> new_text where the file has a few more lines than the quote; None if it cannot.

    Models quoting a block often leave out a line or two (a docstring, a comment). When old_text's lines
    appear in the file in order from one unique first line, with at most MAX_OMITTED_LINES lines left out,
    the change from old_text to new_text is applied to that block and the left-out lines are kept.
    """
    lines = text.splitlines(keepends=True)
    old, new = old_text.splitlines(), new_text.splitlines()
    starts = [i for i, line in enumerate(lines) if old and line.rstrip("\r\n") == old[0]]
    if len(old) < 2 or len(starts) != 1:
        return None
    positions, index, omitted = [starts[0]], starts[0] + 1, 0
    for wanted in old[1:]:
        while index < len(lines) and lines[index].rstrip("\r\n") != wanted:
            index, omitted = index + 1, omitted + 1
        if index == len(lines) or omitted > MAX_OMITTED_LINES:
            return None
        positions.append(index)
        index += 1
    out: list[str] = []
    at = positions[0]  # the next file line not yet copied
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
        if tag == "equal":
            out.extend(lines[at : positions[i2 - 1] + 1])
            at = positions[i2 - 1] + 1
            continue
        if i2 > i1:  # the quoted lines being replaced; lines left out before them stay
            out.extend(lines[at : positions[i1]])
            at = positions[i2 - 1] + 1
        out.extend(line + "\n" for line in new[j1:j2])
    return "".join(lines[: positions[0]] + out + lines[at:])
