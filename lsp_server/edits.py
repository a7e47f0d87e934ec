"""Proposed edits as text replacements: applying one to a document's text and showing it as a diff."""

from __future__ import annotations

import difflib


class EditError(ValueError):
    """An edit that cannot be applied; the message is meant for the model or the user to read."""


def apply_replacement(text: str, old_text: str, new_text: str) -> str:
    """Replace the one occurrence of old_text in text."""
    if not old_text:
        raise EditError("old_text is empty; quote the exact text to replace")
    count = text.count(old_text)
    if count == 0:
        raise EditError("old_text does not occur in the file; quote it exactly, with its indentation")
    if count > 1:
        raise EditError(f"old_text occurs {count} times; include more context to make it unique")
    return text.replace(old_text, new_text, 1)


def unified_diff(path: str, before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
