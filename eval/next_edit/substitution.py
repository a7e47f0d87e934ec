"""The trivial baseline of the next-edit eval: repeat the user's substitution at its next occurrence.

The user's edit (a hunk: some lines replaced by others) is read as one substitution, X by Y: the
smallest span where the old and new text differ (their common prefix and suffix taken off), widened
so that neither end cuts an identifier in two (`old_name` -> `new_name`, not `old` -> `new`). The
baseline then replaces the next occurrence of X after the cursor (else the nearest one before it) by
Y, where X stands as a whole (not inside a longer identifier), outside the text the user just wrote.
No substitution (a span over several lines, nothing removed) or no other occurrence: no suggestion.

build.py uses the same reading to mark the cases whose second hunk repeats the first's substitution
(renames, the same argument added twice): the baseline's home ground.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

IDENTIFIER_CHAR = re.compile(r"\w")


def is_identifier_char(char: str) -> bool:
    return bool(IDENTIFIER_CHAR.fullmatch(char))


def at_boundary(text: str, index: int) -> bool:
    """Whether `index` does not fall inside an identifier of `text`."""
    return not (
        0 < index < len(text) and is_identifier_char(text[index - 1]) and is_identifier_char(text[index])
    )


def differing_span(old: str, new: str) -> tuple[int, int, int]:
    """(start, old_end, new_end): old[start:old_end] became new[start:new_end], the common prefix
    and suffix left out (the suffix never overlapping the prefix)."""
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - start and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return start, len(old) - suffix, len(new) - suffix


@dataclass(frozen=True)
class Substitution:
    old: str  # X: what the user replaced
    new: str  # Y: what they wrote instead
    start: int  # where X began in the hunk's old text (and Y in its new text)


def substitution(old_text: str, new_text: str) -> Substitution | None:
    """The user's edit of `old_text` into `new_text` as one substitution, widened to whole
    identifiers; None when the texts do not differ, when X would be empty or blank (an insertion),
    or when X or Y spans lines."""
    start, old_end, new_end = differing_span(old_text, new_text)
    if old_text == new_text:
        return None
    while not (at_boundary(old_text, start) and at_boundary(new_text, start)):
        start -= 1  # inside the common prefix, so old and new agree here
    while not (at_boundary(old_text, old_end) and at_boundary(new_text, new_end)):
        old_end += 1  # inside the common suffix
        new_end += 1
    old, new = old_text[start:old_end], new_text[start:new_end]
    if not old.strip() or "\n" in old or "\n" in new:
        return None
    return Substitution(old, new, start)


def occurrences(text: str, needle: str) -> list[int]:
    """Where `needle` stands in `text` as a whole: not the middle of a longer identifier."""
    found = []
    at = text.find(needle)
    while at >= 0:
        if at_boundary(text, at) and at_boundary(text, at + len(needle)):
            found.append(at)
        at = text.find(needle, at + 1)
    return found


def replace_whole(text: str, old: str, new: str) -> tuple[str, int]:
    """`text` with every whole occurrence of `old` replaced by `new`, and how many there were."""
    found = occurrences(text, old)
    for at in reversed(found):
        text = text[:at] + new + text[at + len(old) :]
    return text, len(found)


def repeats(first: Substitution | None, old_text: str, new_text: str) -> bool:
    """Whether a hunk (old_text -> new_text) is `first` made again: its every whole occurrence of X
    replaced by Y, and nothing else."""
    if first is None:
        return False
    replaced, count = replace_whole(old_text, first.old, first.new)
    return count > 0 and replaced == new_text


def next_occurrence(text: str, needle: str, cursor: int, written: tuple[int, int]) -> int | None:
    """The first whole occurrence of `needle` at or after `cursor`, else the nearest before it,
    leaving out any that overlaps `written` (the user's own new text, as offsets)."""
    found = [at for at in occurrences(text, needle) if at + len(needle) <= written[0] or at >= written[1]]
    after = [at for at in found if at >= cursor]
    if after:
        return after[0]
    before = [at for at in found if at < cursor]
    return before[-1] if before else None


def suggest(
    after_user: str, hunk_start: int, old_text: str, new_text: str, cursor: int
) -> tuple[int, int, str] | None:
    """The baseline's suggestion for the document `after_user`, where the user's edit turned
    `old_text` into `new_text` at offset `hunk_start` and left the cursor at offset `cursor`: the span
    (start, end) to replace and its new text, or None."""
    found = substitution(old_text, new_text)
    if found is None:
        return None
    written = (hunk_start + found.start, hunk_start + found.start + len(found.new))
    at = next_occurrence(after_user, found.old, cursor, written)
    if at is None:
        return None
    return at, at + len(found.old), found.new
