"""Text as git and LSP both number it: lines, UTF-16 positions, LSP edits applied, texts compared.

git splits a file into lines at "\\n" only; LSP counts "\\r\\n", "\\r" and "\\n" as line ends and
its columns in UTF-16 code units. The cases keep out files holding "\\r" (build.py), so a line is the
same line for both, and a column here is always converted through UTF-16, also for the rare
character outside the Basic Multilingual Plane (two code units in LSP, one in Python).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def split_lines(text: str) -> list[str]:
    """The lines of `text` with their "\\n", as git counts them (the last without one if the text
    does not end with it)."""
    return LINE.findall(text)


def utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def line_starts(text: str) -> list[int]:
    """The offset where each line begins; one more entry when the text ends with "\\n" (the empty
    line an editor shows after it)."""
    starts = [0]
    starts += [match.end() for match in re.finditer("\n", text)]
    return starts


def position(text: str, offset: int) -> dict[str, int]:
    """The LSP position of a character offset in `text`."""
    if not 0 <= offset <= len(text):
        raise ValueError(f"offset {offset} outside a text of {len(text)} characters")
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return {"line": line, "character": utf16_length(text[start:offset])}


def offset(text: str, where: dict[str, Any]) -> int:
    """The character offset of an LSP position in `text`. A column past its line's end is the line's
    end, as the protocol says; a line past the text's end is an error (the position names nothing)."""
    starts = line_starts(text)
    line, character = int(where["line"]), int(where["character"])
    if not 0 <= line < len(starts) or character < 0:
        raise ValueError(f"position {line}:{character} outside a text of {len(starts)} lines")
    start = starts[line]
    end = starts[line + 1] - 1 if line + 1 < len(starts) else len(text)
    units = 0
    for i in range(start, end):
        if units >= character:
            return i
        units += 2 if ord(text[i]) > 0xFFFF else 1
    return end


def line_range_offsets(text: str, start_line: int, end_line: int) -> tuple[int, int]:
    """The offsets of lines [start_line, end_line) of `text`, their "\\n" included."""
    lines = split_lines(text)
    if not 0 <= start_line <= end_line <= len(lines):
        raise ValueError(f"lines {start_line}-{end_line} outside a text of {len(lines)} lines")
    before = sum(len(line) for line in lines[:start_line])
    return before, before + sum(len(line) for line in lines[start_line:end_line])


def lsp_range(text: str, start: int, end: int) -> dict[str, dict[str, int]]:
    return {"start": position(text, start), "end": position(text, end)}


def apply_edits(text: str, edits: Sequence[dict[str, Any]]) -> str:
    """`text` with LSP TextEdits (`range`, `newText`) applied, all against `text` as it is. Raises
    ValueError for a range outside the text, a range that ends before it starts, or edits that
    overlap."""
    spans = []
    for edit in edits:
        start, end = offset(text, edit["range"]["start"]), offset(text, edit["range"]["end"])
        if end < start:
            raise ValueError(f"a range that ends before it starts: {edit['range']}")
        spans.append((start, end, str(edit["newText"])))
    spans.sort(key=lambda span: (span[0], span[1]))
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise ValueError("overlapping edits")
    for start, end, new_text in reversed(spans):
        text = text[:start] + new_text + text[end:]
    return text


def normalized_lines(text: str) -> list[str]:
    """The lines of `text` without trailing whitespace, without empty lines at the end: what "the same
    text" means when an answer is compared with the expected file."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def same_text(a: str, b: str) -> bool:
    return normalized_lines(a) == normalized_lines(b)
