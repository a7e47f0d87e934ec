"""Render tabular data as GitHub-flavoured Markdown tables, and read them back."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospace font (wide East Asian characters count twice)."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def cell_text(value: object) -> str:
    """Convert a cell value to Markdown-safe text on one line."""
    if value is None:
        return ""
    if isinstance(value, float):
        text = f"{value:,.2f}"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\r\n", " ").replace("\n", " ")


def pad(text: str, width: int, align: str | None) -> str:
    gap = width - display_width(text)
    if align == "right":
        return " " * gap + text
    if align == "center":
        left = gap // 2
        return " " * left + text + " " * (gap - left)
    return text + " " * gap


def guess_alignment(column: Iterable[object]) -> str | None:
    """Right-align columns whose non-empty cells are all numbers."""
    values = [v for v in column if v not in (None, "")]
    if values and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "right"
    return None


def format_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    align: Sequence[str | None] | None = None,
    max_width: int | None = None,
) -> str:
    rows = [list(row) for row in rows]
    ncols = len(headers)
    for row in rows:
        if len(row) > ncols:
            raise ValueError(f"row has {len(row)} cells but there are {ncols} headers: {row!r}")
        row.extend([None] * (ncols - len(row)))
    if align is None:
        align = [guess_alignment(row[i] for row in rows) for i in range(ncols)]
    cells = [[cell_text(h) for h in headers]] + [[cell_text(v) for v in row] for row in rows]
    if max_width is not None:
        cells = [
            [c if len(c) <= max_width else c[: max_width - 1] + "…" for c in line]
            for line in cells
        ]
    widths = [max(3, *(display_width(line[i]) for line in cells)) for i in range(ncols)]
    out = ["| " + " | ".join(pad(c, w, a) for c, w, a in zip(cells[0], widths, align)) + " |"]
    rule = []
    for w, a in zip(widths, align):
        if a == "center":
            rule.append(":" + "-" * (w - 2) + ":")
        elif a in ("left", "right"):
            rule.append(":" + "-" * (w - 1) if a == "left" else "-" * (w - 1) + ":")
        else:
            rule.append("-" * w)
    out.append("| " + " | ".join(rule) + " |")
    for line in cells[1:]:
        out.append("| " + " | ".join(pad(c, w, a) for c, w, a in zip(line, widths, align)) + " |")
    return "\n".join(out)


def parse_table(markdown: str) -> tuple[list[str], list[list[str]]]:
    """Read a table produced by :func:`format_table` back into headers and string rows."""
    lines = [line.strip() for line in markdown.strip().splitlines() if line.strip()]
    if len(lines) < 2:
        raise ValueError("a table needs a header and a separator line")

    def split(line: str) -> list[str]:
        parts, current, escaped = [], "", False
        for ch in line.strip("|"):
            if escaped:
                current += ch
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == "|":
                parts.append(current.strip())
                current = ""
            else:
                current += ch
        parts.append(current.strip())
        return parts

    headers = split(lines[0])
    return headers, [split(line) for line in lines[2:]]
