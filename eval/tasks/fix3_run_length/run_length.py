"""Run-length encoding of sequences, and a compact text form for strings.

The text form writes each run as its count followed by the character, leaving
the count out when it is 1: ``"aaabcc"`` <-> ``"3ab2c"``. Digits and backslashes
in the data are escaped with a backslash so they cannot be read as counts:
``"7775"`` <-> ``"3\\7\\5"``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

T = TypeVar("T", bound=Hashable)

ESCAPE = "\\"


class FormatError(ValueError):
    """Raised when compact text cannot be decoded."""


def runs(items: Iterable[T]) -> list[tuple[T, int]]:
    """``[1, 1, 2, 1]`` -> ``[(1, 2), (2, 1), (1, 1)]``."""
    result: list[tuple[T, int]] = []
    for item in items:
        if result and result[-1][0] == item:
            result[-1] = (item, result[-1][1] + 1)
        else:
            result.append((item, 1))
    return result


def expand(pairs: Iterable[tuple[T, int]]) -> list[T]:
    """The inverse of :func:`runs`."""
    items: list[T] = []
    for item, count in pairs:
        if count < 1:
            raise ValueError(f"run length must be positive, got {count}")
        items.extend([item] * count)
    return items


def _quote(char: str) -> str:
    return ESCAPE + char if char.isdigit() or char == ESCAPE else char


def encode_text(text: str) -> str:
    """Compact text form of ``text`` (see the module docstring)."""
    parts = []
    for char, count in runs(text):
        parts.append(f"{count if count > 1 else ''}{_quote(char)}")
    return "".join(parts)


def decode_text(encoded: str) -> str:
    """The inverse of :func:`encode_text`."""
    out: list[str] = []
    digits = ""
    i = 0
    while i < len(encoded):
        char = encoded[i]
        if char.isdigit():
            digits += char
            i += 1
            continue
        if char == ESCAPE:
            if i + 1 == len(encoded):
                raise FormatError("dangling escape at end of input")
            i += 1
            char = encoded[i]
        count = int(digits) if digits else 1
        if count == 0:
            raise FormatError(f"zero-length run at position {i}")
        out.append(char * count)
        i += 1
    if digits:
        raise FormatError(f"count {digits} at end of input has no character")
    return "".join(out)


def longest_run(items: Sequence[T]) -> tuple[T, int] | None:
    """The longest run (the first of equals), or None for an empty sequence."""
    best: tuple[T, int] | None = None
    for item, count in runs(items):
        if best is None or count > best[1]:
            best = (item, count)
    return best


def compression_ratio(text: str) -> float:
    """Length of the compact form divided by the original length (lower is better)."""
    if not text:
        return 1.0
    return len(encode_text(text)) / len(text)
