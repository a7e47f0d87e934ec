"""The tools as the model sees them: one JSON schema per tool, and the checks of a call's arguments.

The schemas are part of every prompt's stable prefix, so they are declared once, in a fixed order. A
call's arguments are checked against its tool's schema before the tool runs
(runner.py); a mismatch is a ToolError for the model to read and fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from .workspace_files import ToolError

READ_MAX_LINES = 400  # what one read_file call shows; its schema tells the model


def _tool(
    name: str, description: str, properties: dict[str, Any], required: tuple[str, ...] = ()
) -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = list(required)
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


# Every token here is read before every first answer and sits in every slot's cache, and each tool costs
# tens of tokens of the template's JSON before its first word: so four tools, whose arguments are named
# so that they need no description of their own (`tests/test_prompt_budget.py` holds the budget; what
# six described tools cost is in docs/performance.md, "Measured once"). There is no tool for diagnostics:
# a chat request carries none, and a Fix has its own in its prompt. Listing the files is a search with
# no pattern; creating a file stays a tool of its own: asked for a new file, the 1.5B model called
# create_file, but with only `edit` (an empty old_text) it wrote the call as text instead.
_STRING = {"type": "string"}
_INTEGER = {"type": "integer"}

# One declaration per tool, in a fixed order, so the prompt's prefix stays the same from request to request.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    _tool(
        "read_file",
        f"Read a file's lines, at most {READ_MAX_LINES} from startLine.",
        {"path": _STRING, "startLine": _INTEGER, "endLine": _INTEGER},
        ("path",),
    ),
    _tool(
        "search",
        "Find the lines matching a Python regex in the workspace's files; without a pattern, list the "
        "files. A glob such as `*.py` limits the paths.",
        {"pattern": _STRING, "glob": _STRING},
    ),
    _tool(
        "edit",
        "Propose a change: replace old_text, which must occur once in the file, with new_text.",
        {"path": _STRING, "old_text": _STRING, "new_text": _STRING},
        ("path", "old_text", "new_text"),
    ),
    _tool("create_file", "Propose a new file.", {"path": _STRING, "content": _STRING}, ("path", "content")),
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
    properties: dict[str, Any] = function["parameters"]["properties"]
    # Models often spell an omitted optional argument as null.
    given = {key: value for key, value in parse_arguments(name, arguments).items() if value is not None}
    expected = ", ".join(properties) or "none"
    refuse_schema(name, given, properties)
    for key in given:
        if key not in properties:
            raise ToolError(f"{name} has no argument {key!r}; its arguments are: {expected}")
    for key in function["parameters"].get("required", ()):
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


def parse_arguments(name: str, arguments: object) -> dict[str, Any]:
    """A call's arguments as an object (any tool's, MCP tools' too): the engine passes arguments it could
    not parse as JSON through as text."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            raise ToolError(f"the arguments to {name} are not valid JSON; pass a JSON object") from None
    if not isinstance(arguments, dict):
        raise ToolError(f"the arguments to {name} must be a JSON object")
    return arguments


def refuse_schema(name: str, given: dict[str, Any], properties: dict[str, Any]) -> None:
    """Raises the ToolError that tells the model it passed the tool's schema instead of arguments."""
    if _is_schema(given):
        expected = ", ".join(properties) or "none"
        example = json.dumps({key: f"<{key}>" for key in properties})
        raise ToolError(
            f"that is the schema of {name}'s arguments, not arguments: pass the values themselves, as in "
            f"{example} (its arguments are: {expected})"
        )


def _is_schema(arguments: dict[str, Any]) -> bool:
    """Whether a call's arguments are a JSON schema (small models copy the tool's declaration): an
    object schema, a property given as a schema, or such JSON in a string."""
    if arguments.get("type") == "object" or "properties" in arguments:
        return True
    for value in arguments.values():
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                continue
        if isinstance(value, dict) and ("properties" in value or value.get("type") in _SCHEMA_TYPES):
            return True
    return False


_SCHEMA_TYPES = frozenset({"object", "string", "integer", "number", "boolean", "array"})


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
