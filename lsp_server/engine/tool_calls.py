"""Tool calls a model writes as JSON in its answer's text, without its chat template's markup.

Small models often answer a tool request with a bare `{"name": ..., "arguments": {...}}`, or the same
in a ```json fence, instead of the template's own call syntax. Two rules handle that:
`tool_call_start` says how much of a streamed answer may be shown before something that may become
such a call, and `extract_json_call` takes a finished one out of the answer.

They are the native engine's own rules (native/src/text.cpp, run by the local engine while it
generates), written again in Python for the remote engine, which has no native library to call;
tests/test_tool_calls.py runs both on the same cases. JSON is read as the native engine's parser
(nlohmann::json) reads it, so both accept the same calls with the same arguments. Positions are in
characters, where the native functions count bytes.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

_SPACE = " \t\r\n"
_FENCE = "```"


@dataclass(frozen=True)
class JsonCall:
    """A declared tool's call found in an answer's text, and that text without it (nor its fence)."""

    name: str
    arguments: dict[str, Any]
    rest: str


def tool_call_start(text: str, tool_names: list[str]) -> int:
    """Where a tool call written as JSON (bare, or in a ```json fence) may begin in text; len(text)
    when nowhere. A streamed answer is shown only up to there, since a call is not shown as text."""
    for opening in re.finditer("[{`]", text):
        if _may_start_json_call(text, opening.start(), tool_names):
            return opening.start()
    return len(text)


def extract_json_call(text: str, tool_names: list[str]) -> JsonCall | None:
    """The first JSON object in text that calls a declared tool, as the native engine accepts one:
    {"name": ..., "arguments": {...}} (or "parameters", or the arguments as a JSON string)."""
    start = text.find("{")
    while start != -1:
        # A JSON object's text ends where its parse ends, so of the objects that start here (the native
        # engine tries every closing brace, the last first) there is at most one: the one decoded here.
        found = _json_object_at(text, start)
        if found is not None:
            value, end = found
            call = _declared_call(value, tool_names)
            if call is not None:
                name, arguments = call
                cut_start, cut_end = start, end
                fence = text.rfind(_FENCE, 0, start)
                if fence != -1 and _first_not_of(text, _SPACE + "jsonJSON", fence + 3) >= start:
                    close = text.find(_FENCE, end - 1)
                    if close != -1:
                        cut_start, cut_end = fence, close + 3
                return JsonCall(name, arguments, text[:cut_start] + text[cut_end:])
        start = text.find("{", start + 1)
    return None


def _declared_call(value: dict[str, Any], tool_names: list[str]) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) when the object names a declared tool and its arguments are an object."""
    name = value.get("name")
    if not isinstance(name, str) or name not in tool_names:
        return None
    arguments = value["arguments"] if "arguments" in value else value.get("parameters", {})
    if isinstance(arguments, str):
        # nlohmann::json skips a byte order mark that opens the text it parses.
        arguments = _json_object(arguments.removeprefix("\ufeff"))
    return (name, arguments) if isinstance(arguments, dict) else None


def _may_start_json_call(text: str, at: int, tool_names: list[str]) -> bool:
    """Whether a JSON call naming a declared tool may start at `at` ("{", or a ``` fence before one):
    true while what follows is still consistent with `{"name": "<declared tool>"`."""
    i = at
    if text.startswith(_FENCE, i) or (len(text) - i < 3 and _FENCE.startswith(text[i:])):
        i = _first_not_of(text, "`", i)
        i = _first_not_of(text, "jsonJSON", i)
    for literal in ("{", '"name"', ":", '"'):
        i = _first_not_of(text, _SPACE, i)
        written = text[i : i + len(literal)]
        if not written:
            return True  # the text ends here: anything may follow
        if not literal.startswith(written):
            return False
        if len(written) < len(literal):
            return True  # the text ends inside the literal
        i += len(literal)
    close = text.find('"', i)
    if close == -1:
        return any(tool.startswith(text[i:]) for tool in tool_names)
    return text[i:close] in tool_names


def _first_not_of(text: str, chars: str, i: int) -> int:
    while i < len(text) and text[i] in chars:
        i += 1
    return i


class _NotNlohmannJson(ValueError):
    """Valid JSON for Python's parser that nlohmann::json refuses."""


def _json_object(text: str) -> dict[str, Any] | None:
    """text parsed as nlohmann::json parses it, if it is an object; None if it is not, or not JSON."""
    try:
        value = _DECODER.decode(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and not _has_lone_surrogate(value) else None


def _json_object_at(text: str, start: int) -> tuple[dict[str, Any], int] | None:
    """The object whose JSON text starts at `start`, as nlohmann::json reads it, and where its text ends;
    None if none does."""
    try:
        value, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or _has_lone_surrogate(value):
        return None
    return value, end


def _integer(literal: str) -> int | float:
    # nlohmann keeps 64-bit integers (signed, or unsigned) and reads larger ones as doubles.
    value = int(literal)
    return value if -(2**63) <= value < 2**64 else _finite_float(literal)


def _finite_float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _NotNlohmannJson(f"number overflow: {literal}")
    return value


def _no_constant(literal: str) -> Any:
    raise _NotNlohmannJson(f"not JSON: {literal}")  # NaN, Infinity, -Infinity


_DECODER = json.JSONDecoder(parse_int=_integer, parse_float=_finite_float, parse_constant=_no_constant)


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a string in value holds half of a surrogate pair (from a \\ud800 escape): Python's parser
    lets one through, nlohmann's refuses it."""
    if isinstance(value, str):
        return any("\ud800" <= char <= "\udfff" for char in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(key) or _has_lone_surrogate(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(item) for item in value)
    return False
