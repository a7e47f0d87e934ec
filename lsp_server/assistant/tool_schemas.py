"""The tools as the model sees them: one JSON schema per tool, and the checks of a call's arguments.

The schemas are part of every prompt's stable prefix, so they are declared once, in a fixed order. A
call's arguments are checked against its tool's schema before the tool runs (lsp_server.assistant.tools);
a mismatch is a ToolError for the model to read and fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from .sandbox import ToolError

READ_MAX_LINES = 400  # what one read_file call shows; its schema tells the model


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_PATH = {"type": "string", "description": "the file's path, relative to the workspace"}
_GLOB = {
    "type": "string",
    "description": "only paths matching this glob, e.g. `*.py` or `src/**/*.ts`",
}

# One declaration per tool, in a fixed order, so the prompt's prefix stays the same from request to request.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    _tool(
        "read_file",
        f"Read a file, or a range of its lines (1-based, inclusive). Shows at most {READ_MAX_LINES} lines "
        "at a time.",
        {
            "path": _PATH,
            "startLine": {"type": "integer", "description": "the first line to read (default 1)"},
            "endLine": {"type": "integer", "description": "the last line to read (default: the end)"},
        },
        ["path"],
    ),
    _tool("list_files", "List the files in the workspace.", {"glob": _GLOB}, []),
    _tool(
        "search",
        "Search the workspace's text files for a regular expression; shows `path:line: text` per match.",
        {"pattern": {"type": "string", "description": "a Python regular expression"}, "glob": _GLOB},
        ["pattern"],
    ),
    _tool(
        "get_diagnostics",
        "Show the errors and warnings the editor reports, for one file or the whole workspace.",
        {"path": {**_PATH, "description": "only this file's diagnostics (default: every file)"}},
        [],
    ),
    _tool(
        "edit",
        "Propose a change to a file: replace old_text, which must appear exactly once in the file, with "
        "new_text.",
        {
            "path": _PATH,
            "old_text": {"type": "string", "description": "the exact text to replace"},
            "new_text": {"type": "string", "description": "the replacement text"},
        },
        ["path", "old_text", "new_text"],
    ),
    _tool(
        "create_file",
        "Propose a new file; the path must not exist yet.",
        {"path": _PATH, "content": {"type": "string", "description": "the new file's text"}},
        ["path", "content"],
    ),
]
TOOL_NAMES = [schema["function"]["name"] for schema in TOOL_SCHEMAS]
EDIT_TOOL_NAMES = frozenset({"edit", "create_file"})  # the tools that propose edits rather than read
_FUNCTIONS: dict[str, dict[str, Any]] = {
    schema["function"]["name"]: schema["function"] for schema in TOOL_SCHEMAS
}


def schemas_for(names: Iterable[str]) -> list[dict[str, Any]]:
    """The schemas of the named tools, in the fixed order whatever the order asked for."""
    wanted = set(names)
    unknown = wanted - set(TOOL_NAMES)
    if unknown:
        raise ValueError(f"no such tools: {', '.join(sorted(unknown))}")
    return [schema for schema in TOOL_SCHEMAS if schema["function"]["name"] in wanted]


_JSON_TYPES: dict[str, Callable[[object], bool]] = {
    "string": lambda value: isinstance(value, str),
    # bool is an int in Python but not in JSON Schema.
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
}


def check_arguments(name: str, arguments: object) -> dict[str, Any]:
    """The arguments of a call to the tool `name`, checked against its schema; a mismatch is the model's
    to fix."""
    function = _FUNCTIONS[name]
    if isinstance(arguments, str):  # the engine passes arguments it could not parse as JSON through as text
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            raise ToolError(f"the arguments to {name} are not valid JSON; pass a JSON object") from None
    if not isinstance(arguments, dict):
        raise ToolError(f"the arguments to {name} must be a JSON object")
    properties: dict[str, Any] = function["parameters"]["properties"]
    # Models often spell an omitted optional argument as null.
    given = {key: value for key, value in arguments.items() if value is not None}
    expected = ", ".join(properties) or "none"
    for key in given:
        if key not in properties:
            raise ToolError(f"{name} has no argument {key!r}; its arguments are: {expected}")
    for key in function["parameters"]["required"]:
        if key not in given:
            raise ToolError(f"{name} needs the argument {key!r}; its arguments are: {expected}")
    for key, value in given.items():
        kind = properties[key]["type"]
        if not _JSON_TYPES[kind](value):
            article = "an" if kind[0] in "aeiou" else "a"
            raise ToolError(
                f"the argument {key!r} to {name} must be {article} {kind}, not {repr(value)[:80]}"
            )
    return given


def glob_regex(glob: str) -> re.Pattern[str]:
    """A glob argument over `/`-separated relative paths, as a pattern to match with fullmatch.

    `*` and `?` stay within one path segment and `**` crosses segments; like PurePath.match, a relative
    glob matches from the right (`*.py` matches `src/a.py`), and a leading `/` anchors it at the top.
    """
    anchored = glob.startswith("/")
    glob = glob.strip("/")
    parts = [] if anchored else ["(?:.*/)?"]
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            parts.append(".*")
            i += 2
        elif glob[i] == "*":
            parts.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            parts.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end].replace("\\", "\\\\")
            parts.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            parts.append(re.escape(glob[i]))
            i += 1
    try:
        return re.compile("".join(parts))
    except re.error:
        raise ToolError(f"{glob!r} is not a valid glob") from None
