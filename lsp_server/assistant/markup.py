"""The chat template's own markup, kept out of what the user reads.

A small model sometimes writes its template's markup as text: a `<tool_response>` block that copies a
tool's result, a `<tools>` list, a `<tool_call>` that did not parse as a call, a `<|im_start|>`. None
of it is an answer. The markers are read from the model's own template, not from a list of one
family's: the engine renders a probe conversation (a system prompt with a tool, a question, a tool call,
its result, an answer) with the template, the probe's own words are taken out, and what looks like a
marker in the rest (`<|...|>`, `<tag>`, `</tag>`, `[TAG]`) is the template's. A backend that cannot
render (a remote server without llama-server's /apply-template) falls back to the shape that special
tokens share across families, `<|...|>`.

`MarkupFilter` cuts the markers from an answer as it streams: a block between a marker and its closing
twin (`<tool_response>` ... `</tool_response>`) goes whole, a lone marker goes alone, and text that
may still become a marker is held back until it is decided. No LSP types.
"""

from __future__ import annotations

import json
import logging
import re
import weakref
from collections.abc import Iterable
from typing import Any

from ..engine import ChatEngine, ChatRequest, EngineError

log = logging.getLogger("llama_lsp.markup")

# Markers as templates spell them: special tokens (`<|im_start|>`, `<|eot_id|>`), tags (`<tool_call>`,
# `</tools>`, `<start_of_turn>`) and bracketed tokens (`[INST]`, `[TOOL_CALLS]`).
_MARKER_SHAPE = re.compile(r"<\|[^|<>\s]{1,40}\|>|</?[A-Za-z_][A-Za-z0-9_.:-]{0,40}>|\[/?[A-Z][A-Z_]{1,40}\]")
# The shape alone, where the template cannot be read: special tokens look like this in most families.
SPECIAL_TOKEN_SHAPE = re.compile(r"<\|[^|<>\s]{1,40}\|>")

# The probe's own words: none of them looks like a marker, and each is taken out of the rendering.
_PROBE_WORDS = ("probe system", "probe question", "probe pattern", "probe result", "probe answer")
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "probe_tool",
        "description": "probe tool",
        "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}}},
    },
}
PROBE_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "probe system"},
    {"role": "user", "content": "probe question"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "probe_call",
                "type": "function",
                "function": {"name": "probe_tool", "arguments": json.dumps({"pattern": "probe pattern"})},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "probe_call", "content": "probe result"},
    {"role": "assistant", "content": "probe answer"},
]


def markers_in_rendering(rendered: str) -> frozenset[str]:
    """The markers of a template, from its rendering of PROBE_MESSAGES with PROBE_TOOL."""
    scaffolding = rendered
    for words in (*_PROBE_WORDS, json.dumps(PROBE_TOOL), "probe_tool", "probe tool"):
        scaffolding = scaffolding.replace(words, " ")
    return frozenset(_MARKER_SHAPE.findall(scaffolding))


# Each engine's markers, read once: its template does not change while it lives.
_MARKERS: weakref.WeakKeyDictionary[ChatEngine, frozenset[str]] = weakref.WeakKeyDictionary()


async def markers_of(engine: ChatEngine) -> frozenset[str]:
    """The markers of the engine's template (none known where it cannot render one: then only the
    special-token shape is cut)."""
    key = getattr(engine, "hosted_engine", engine)  # the server's requests hold it through a HostedEngine
    known = _MARKERS.get(key)
    if known is None:
        try:
            rendered = await engine.render(ChatRequest(messages=PROBE_MESSAGES, tools=[PROBE_TOOL]))
        except EngineError as exc:  # this time: the next turn asks again
            log.warning("the template's markers are unknown for now (%s): only <|...|> tokens are cut", exc)
            return frozenset()
        known = markers_in_rendering(rendered) if rendered is not None else frozenset()
        _MARKERS[key] = known
    return known


class MarkupFilter:
    """Cuts a template's markers out of an answer as it streams, piece by piece.

    markers: the template's (markers_of); the special-token shape is always cut too.
    """

    def __init__(self, markers: Iterable[str]) -> None:
        self._markers = sorted(set(markers), key=len, reverse=True)
        alternatives = [re.escape(marker) for marker in self._markers] + [SPECIAL_TOKEN_SHAPE.pattern]
        self._marker = re.compile("|".join(alternatives))
        self._prefixes = {marker[:n] for marker in self._markers for n in range(1, len(marker))}
        self._pending = ""  # text not decided yet: it may be the start of a marker
        self._closing: str | None = None  # inside a block: the marker that ends it

    def add(self, piece: str) -> str:
        """The text of the answer that can be shown once `piece` is added to it."""
        text = self._pending + piece
        shown: list[str] = []
        while True:
            if self._closing is not None:
                end = text.find(self._closing)
                if end == -1:
                    self._pending = self._held_back(text, (self._closing,))
                    return "".join(shown)
                text, self._closing = text[end + len(self._closing) :], None
                continue
            found = self._marker.search(text)
            if found is None:
                self._pending = self._held_back(text)
                shown.append(text[: len(text) - len(self._pending)])
                return "".join(shown)
            shown.append(text[: found.start()])
            marker = found.group()
            opens = marker.startswith("<") and not marker.startswith(("</", "<|"))
            closing = "</" + marker[1:] if opens else None
            if closing in self._markers:
                self._closing = closing  # the block's content is the template's too
            text = text[found.end() :]

    def finish(self) -> str:
        """What is still held back, now that the answer is complete: text that did not become a marker
        (nothing, inside a block that never closed)."""
        held, self._pending = self._pending, ""
        return "" if self._closing is not None else held

    def _held_back(self, text: str, markers: Iterable[str] | None = None) -> str:
        """The longest end of text that may still become a marker (of `markers`, or any)."""
        prefixes = self._prefixes if markers is None else {m[:n] for m in markers for n in range(1, len(m))}
        start = max(0, len(text) - 42)
        for at in range(start, len(text)):
            tail = text[at:]
            if tail in prefixes or (markers is None and _may_become_special_token(tail)):
                return tail
        return ""


def _may_become_special_token(tail: str) -> bool:
    """Whether more text could make `tail` a `<|...|>` token."""
    return tail == "<" or re.fullmatch(r"<\|[^|<>\s]{0,40}\|?", tail) is not None


def without_markup(text: str, markers: Iterable[str]) -> str:
    """text with the template's markers (and the blocks they enclose) cut out."""
    markup = MarkupFilter(markers)
    return markup.add(text) + markup.finish()
