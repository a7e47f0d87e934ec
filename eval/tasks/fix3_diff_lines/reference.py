"""Line diffs from a longest common subsequence, grouped into unified-diff hunks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Op:
    tag: str  # " " kept, "-" removed, "+" added
    line: str
    old_index: int  # 0-based position in the old lines where this op applies
    new_index: int


@dataclass(frozen=True)
class Hunk:
    ops: tuple[Op, ...]

    @property
    def old_count(self) -> int:
        return sum(1 for op in self.ops if op.tag != "+")

    @property
    def new_count(self) -> int:
        return sum(1 for op in self.ops if op.tag != "-")

    def header(self) -> str:
        first = self.ops[0]
        old = _span(first.old_index, self.old_count)
        new = _span(first.new_index, self.new_count)
        return f"@@ -{old} +{new} @@"


def _span(start: int, count: int) -> str:
    if count == 0:
        return f"{start},0"
    if count == 1:
        return str(start + 1)
    return f"{start + 1},{count}"


def lcs_table(old: list[str], new: list[str]) -> list[list[int]]:
    """``table[i][j]`` is the length of the longest common subsequence of ``old[i:]`` and ``new[j:]``."""
    table = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i in range(len(old) - 1, -1, -1):
        for j in range(len(new) - 1, -1, -1):
            if old[i] == new[j]:
                table[i][j] = table[i + 1][j + 1] + 1
            else:
                table[i][j] = max(table[i + 1][j], table[i][j + 1])
    return table


def diff_ops(old: list[str], new: list[str]) -> list[Op]:
    """Kept, removed and added lines in order; a removal comes before the addition that replaces it."""
    table = lcs_table(old, new)
    ops: list[Op] = []
    i = j = 0
    while i < len(old) and j < len(new):
        if old[i] == new[j]:
            ops.append(Op(" ", old[i], i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            ops.append(Op("-", old[i], i, j))
            i += 1
        else:
            ops.append(Op("+", new[j], i, j))
            j += 1
    ops.extend(Op("-", old[k], k, j) for k in range(i, len(old)))
    ops.extend(Op("+", new[k], len(old), k) for k in range(j, len(new)))
    return ops


def group_hunks(ops: list[Op], context: int = 3) -> list[Hunk]:
    """Changes with up to ``context`` unchanged lines around them.

    Two changes separated by at most ``2 * context`` unchanged lines share one hunk, as in ``diff -u``.
    """
    changes = [k for k, op in enumerate(ops) if op.tag != " "]
    if not changes:
        return []
    hunks = []
    start = max(0, changes[0] - context)
    end = min(len(ops), changes[0] + context + 1)
    for k in changes[1:]:
        if k - context <= end:
            end = min(len(ops), k + context + 1)
        else:
            hunks.append(Hunk(tuple(ops[start:end])))
            start = k - context
            end = min(len(ops), k + context + 1)
    hunks.append(Hunk(tuple(ops[start:end])))
    return hunks


def unified_diff(old_text: str, new_text: str, old_name: str = "a", new_name: str = "b", context: int = 3) -> str:
    """The difference between two texts in unified format; an empty string when they are equal."""
    hunks = group_hunks(diff_ops(old_text.splitlines(), new_text.splitlines()), context)
    if not hunks:
        return ""
    lines = [f"--- {old_name}", f"+++ {new_name}"]
    for hunk in hunks:
        lines.append(hunk.header())
        lines.extend(op.tag + op.line for op in hunk.ops)
    return "\n".join(lines) + "\n"


def similarity(old: list[str], new: list[str]) -> float:
    """2 * common lines / all lines: 1.0 for equal texts, 0.0 when nothing is shared."""
    if not old and not new:
        return 1.0
    return 2 * lcs_table(old, new)[0][0] / (len(old) + len(new))


def change_counts(ops: list[Op]) -> tuple[int, int]:
    """(added, removed) lines, as in ``git diff --numstat``."""
    return sum(op.tag == "+" for op in ops), sum(op.tag == "-" for op in ops)
