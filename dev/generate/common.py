"""What the generators share: the repository's paths, JSON laid out as package.json is, text wrapping, and
the replacement of a marked block in a file written by hand around it."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_JSON = ROOT / "editors" / "vscode" / "package.json"
PROTOCOL_DOC = ROOT / "docs" / "protocol.md"

# Comment delimiters of the files with marked blocks.
MARKDOWN = ("<!--", "-->")
LUA = ("--", "")


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def plain(value: Any) -> Any:
    """JSON as written by hand: 60 rather than 60.0."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def json_text(value: Any) -> str:
    return json.dumps(plain(value), ensure_ascii=False)


def wrap(text: str, width: int, **options: Any) -> list[str]:
    """Lines of at most width, broken at spaces only (never inside `a-b`)."""
    return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False, **options)


def table_cell(text: str) -> str:
    """Text on one line of a Markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


# --- package.json ----------------------------------------------------------------------------------


def dump(value: Any, indent: str) -> str:
    """JSON laid out as package.json is: an object over lines (one of a single plain value on one), a list
    of plain values on one."""
    if isinstance(value, dict) and len(value) == 1 and not _nested(list(value.values())):
        [(key, item)] = value.items()
        return f"{{ {json_text(key)}: {json_text(item)} }}"
    if isinstance(value, dict) and value:
        inner = indent + "  "
        members = [f"{inner}{json_text(key)}: {dump(item, inner)}" for key, item in value.items()]
        return "{\n" + ",\n".join(members) + "\n" + indent + "}"
    if isinstance(value, list) and _nested(value):
        inner = indent + "  "
        return "[\n" + ",\n".join(inner + dump(item, inner) for item in value) + "\n" + indent + "]"
    return json_text(value)


def _nested(values: list[Any]) -> bool:
    return any(isinstance(value, dict | list) for value in values)


def value_span(text: str, key: str, after: int = 0) -> tuple[int, int]:
    """Where the object or list that follows `"key":` (first after `after`) starts and ends in text."""
    start = text.index(f'"{key}"', after)
    start = min(i for i in (text.find("{", start), text.find("[", start)) if i >= 0)
    depth, in_string, escaped = 0, False, False
    for end in range(start, len(text)):
        char = text[end]
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = char == "\\", char != '"'
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return start, end + 1
    raise ValueError(f"no end to {key!r}")


def _indent_at(text: str, at: int) -> str:
    line = text[text.rfind("\n", 0, at) + 1 : at]
    return line[: len(line) - len(line.lstrip())]


def one_line_entries(entries: list[dict[str, Any]], indent: str) -> str:
    """A list of flat objects laid out one object a line, as package.json's commands and menus are."""
    inner = indent + "  "
    lines = [
        inner + "{ " + ", ".join(f"{json_text(key)}: {json_text(item)}" for key, item in entry.items()) + " }"
        for entry in entries
    ]
    return "[\n" + ",\n".join(lines) + "\n" + indent + "]"


def replace_json(
    text: str, key: str, value: Any, after: int = 0, layout: Callable[[Any, str], str] = dump
) -> str:
    """text with the value of its first `"key":` after `after` replaced, laid out by `layout`, the rest
    untouched (so that whatever else someone writes in the file stays as it was written)."""
    start, end = value_span(text, key, after)
    return text[:start] + layout(value, _indent_at(text, start)) + text[end:]


def merge_owned(entries: list[Any], owned: Any, generated: list[Any]) -> list[Any]:
    """entries with those that `owned(entry)` says are generated replaced by `generated`, at the place of
    the first of them (at the end when there was none); the others keep their order."""
    merged: list[Any] = []
    placed = False
    for entry in entries:
        if not owned(entry):
            merged.append(entry)
        elif not placed:
            merged.extend(generated)
            placed = True
    return merged if placed else merged + generated


# --- marked blocks ---------------------------------------------------------------------------------


def between_markers(
    text: str, body: str, comment: tuple[str, str], where: Path, *, block: str, source: str
) -> str:
    """text with the lines between its `begin <block>: generated from <source>` and `end <block>`
    comments replaced by body."""
    opening, closing = comment
    begin = f"{opening} begin {block}: generated from {source} {closing}".rstrip()
    end = f"{opening} end {block} {closing}".rstrip()
    pattern = re.compile(rf"^{re.escape(begin)}\n.*?^{re.escape(end)}$", flags=re.MULTILINE | re.DOTALL)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"{where}: expected one {begin!r} ... {end!r} block")
    return pattern.sub(lambda _: f"{begin}\n{body}\n{end}", text)
