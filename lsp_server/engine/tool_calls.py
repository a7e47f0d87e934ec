"""Tool calls a model writes as JSON in its answer's text, without its chat template's markup.

Small models often answer a tool request with a bare `{"name": ..., "arguments": {...}}`, or the same
in a ```json fence, instead of the template's own call syntax. Two rules handle that:
`tool_call_start` says how much of a streamed answer may be shown before something that may become
such a call, and `extract_json_call` takes a finished one out of the answer. `CallStartTracker` gives
`tool_call_start` of a streamed answer piece by piece, without reading it again on every piece.

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
    for opening in _OPENING.finditer(text):
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
    return _match_call_opening(text, tool_names, _OPENING_CHAR, at)[0] is not False


class CallStartTracker:
    """`tool_call_start` of an answer that grows piece by piece, in time linear in its length.

    Rescanning the whole answer on every piece is quadratic. Two facts make that unnecessary: an
    opening ruled out stays ruled out whatever is added after it (it is ruled out by text already
    written), and the match of an opening still undecided can go on where it stopped. So the tracker
    keeps only the text it has not decided on yet."""

    def __init__(self, tool_names: list[str]):
        self._tool_names = tool_names
        self._text = ""  # the answer from self._offset on
        self._offset = 0
        self._at = 0  # where, in self._text, the search for an opening or the match of one goes on
        self._start: int | None = None  # the opening being matched (in the answer), if any
        self._stage = _OPENING_CHAR  # how far its match got
        self._confirmed = False  # it names a declared tool: a call starts there, whatever follows

    def add(self, piece: str) -> int:
        """Adds the next piece of the answer; returns tool_call_start of the answer so far."""
        if self._confirmed:
            return self._offset
        self._text += piece
        while True:
            if self._start is None:
                opening = _OPENING.search(self._text, self._at)
                if opening is None:
                    self._keep_from(len(self._text))
                    return self._offset
                self._start, self._stage = self._offset + opening.start(), _OPENING_CHAR
                self._at = opening.start()
            decision, self._stage, at = _match_call_opening(
                self._text, self._tool_names, self._stage, self._at
            )
            if decision is None:  # the answer ends before it is decided
                self._keep_from(at)
                return self._start
            if decision:
                self._confirmed, self._offset, self._text = True, self._start, ""
                return self._start
            # Between this opening and where its match failed lie none that may start a call (in a
            # fence's run of backticks, each fails as the fence did): the search goes on from there.
            self._at = max(at, self._start + 1 - self._offset)
            self._start = None

    def _keep_from(self, at: int) -> None:
        self._text = self._text[at:]
        self._offset += at
        self._at = 0


_OPENING = re.compile("[{`]")
_LITERALS = ("{", '"name"', ":", '"')
# Stages of matching an opening: its first character; the fence's backticks; the fence's language
# ("json"); each of _LITERALS, after any white space; the tool's name.
_OPENING_CHAR, _FENCE_TICKS, _FENCE_LANGUAGE, _FIRST_LITERAL = range(4)
_NAME = _FIRST_LITERAL + len(_LITERALS)


def _match_call_opening(text: str, tool_names: list[str], stage: int, i: int) -> tuple[bool | None, int, int]:
    """Matches `{"name": "<declared tool>"` (bare, or after a ``` fence) from `i`, at `stage`: True once
    a declared tool's name is written in full, False once none can be; None when the text ends first,
    with the stage and index to go on from once more text has come. Only text from `i` on is read."""
    if stage == _OPENING_CHAR:
        if text.startswith(_FENCE, i):
            stage = _FENCE_TICKS
        elif len(text) - i < 3 and _FENCE.startswith(text[i:]):
            return None, stage, i  # the text ends in what may become a fence
        else:
            stage = _FIRST_LITERAL
    if stage == _FENCE_TICKS:
        i = _first_not_of(text, "`", i)
        if i == len(text):
            return None, stage, i
        stage = _FENCE_LANGUAGE
    if stage == _FENCE_LANGUAGE:
        i = _first_not_of(text, "jsonJSON", i)
        if i == len(text):
            return None, stage, i
        stage = _FIRST_LITERAL
    while stage < _NAME:
        literal = _LITERALS[stage - _FIRST_LITERAL]
        i = _first_not_of(text, _SPACE, i)
        written = text[i : i + len(literal)]
        if not written:
            return None, stage, i  # the text ends here: anything may follow
        if not literal.startswith(written):
            return False, stage, i
        if len(written) < len(literal):
            return None, stage, i  # the text ends inside the literal
        i += len(literal)
        stage += 1
    close = text.find('"', i)
    if close == -1:
        # Whether a declared name starts with text[i:], without copying it.
        n_written = len(text) - i
        may_be = any(len(tool) >= n_written and text.startswith(tool[:n_written], i) for tool in tool_names)
        return (None if may_be else False), stage, i
    return text[i:close] in tool_names, stage, i


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
