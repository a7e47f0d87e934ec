"""One streamed answer as its chunks arrive: the text, sent on as far as it cannot be the start of a
tool call yet, the tool calls assembled from their deltas, and the server's own figures as Stats.

Nothing the server sends is trusted to be reasonable: each delta costs time in proportion to its own
length, the answer is cut once it has more tokens than asked for (counted here, whatever the server
says), and a chunk that is not one raises errors.Malformed. A cached-token count the server does not
report is unknown (None), not 0.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..api import ChatRequest, ChatResult, Stats, ToolCall
from ..tool_calls import CallStartTracker, extract_json_call
from .errors import Malformed

# The longest token of the tokenizers llama.cpp ships vocabularies for (a run of 512 spaces): an answer
# of n tokens has at most n * MAX_TOKEN_CHARS characters, whatever the tokenizer.
MAX_TOKEN_CHARS = 512

_FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool_calls"}


class StreamedAnswer:
    """One streamed answer as it arrives: its text (sent on as far as it cannot be a tool call yet),
    the tool calls assembled from their deltas, and the server's figures. Each delta costs time in
    proportion to its own length (nothing before it is read again, but by `keep_going` where the caller
    gives one), and the answer is cut once it has more tokens than asked for."""

    def __init__(
        self,
        request: ChatRequest,
        on_piece: Callable[[str], None],
        keep_going: Callable[[str], bool] | None = None,
    ):
        self._on_piece = on_piece
        self._keep_going = keep_going
        may_call = bool(request.tools) and request.tool_choice != "none"
        self._tool_names: list[str] = []
        if may_call:
            declared = [tool["function"]["name"] for tool in request.tools or []]
            self._tool_names = request.allowed_tools or declared
        self._call_start = CallStartTracker(self._tool_names) if self._tool_names else None
        self._max_tokens = request.max_tokens
        self._content: list[str] = []
        self._n_content = 0  # characters of content
        self._unsent: list[str] = []  # the content's end, not sent yet: it may begin a tool call
        self._n_sent = 0
        # Each delta that carries text is a token at least (servers stream one per token), and each
        # token is MAX_TOKEN_CHARS characters at most: the larger count is never more than was written.
        self._n_deltas = 0
        self._n_chars = 0  # of content and tool calls
        self._calls: dict[int, dict[str, str]] = {}
        self.finished = False
        self.cut = False  # past max_tokens: the rest is not read
        self.ended_early = False  # keep_going said so: the rest is not read
        self._finish_reason = "stop"
        self._first_token_s: float | None = None
        self._usage: dict[str, Any] = {}
        self._timings: dict[str, Any] = {}

    def add(self, chunk: dict[str, Any], elapsed_s: float) -> None:
        """One chunk of the stream (a chat.completion.chunk object); raises Malformed if it is not."""
        usage, timings, choices = chunk.get("usage"), chunk.get("timings"), chunk.get("choices") or []
        self._usage = usage if isinstance(usage, dict) else self._usage
        self._timings = timings if isinstance(timings, dict) else self._timings  # llama-server's
        if not isinstance(choices, list) or not all(isinstance(choice, dict) for choice in choices):
            raise Malformed("choices that are not objects")
        for choice in choices[:1]:
            delta = _field(choice, "delta", dict) or {}
            content = _field(delta, "content", str)
            calls = _field(delta, "tool_calls", list) or []
            if (content or calls) and self._first_token_s is None:
                self._first_token_s = elapsed_s
            for call in calls:
                self._add_call(call)
            if content:
                self._add_content(content)
            finish_reason = _field(choice, "finish_reason", str)
            if finish_reason is not None:
                self.finished = True
                self._finish_reason = finish_reason
        n_tokens = max(self._n_deltas, -(-self._n_chars // MAX_TOKEN_CHARS))
        if n_tokens > self._max_tokens:
            self.finished = self.cut = True
            self._finish_reason = "length"

    def _add_call(self, call: Any) -> None:
        if not isinstance(call, dict) or not isinstance(call.get("index", 0), int):
            raise Malformed("a tool call that is not an object with an index")
        entry = self._calls.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
        entry["id"] = _field(call, "id", str) or entry["id"]
        function = _field(call, "function", dict) or {}
        name, arguments = _field(function, "name", str) or "", _field(function, "arguments", str) or ""
        entry["name"] += name
        entry["arguments"] += arguments
        self._n_deltas += 1
        self._n_chars += len(name) + len(arguments)

    def _add_content(self, content: str) -> None:
        self._content.append(content)
        self._unsent.append(content)
        self._n_content += len(content)
        self._n_deltas += 1
        self._n_chars += len(content)
        # Not what may be the start of a tool call written as JSON (the local engine's own rule).
        self._send(self._call_start.add(content) if self._call_start else self._n_content)
        if self._keep_going is not None and not self._keep_going("".join(self._content)):
            self.finished = self.ended_early = True
            self._finish_reason = "stop"

    def _send(self, upto: int) -> None:
        if upto > self._n_sent:
            unsent = "".join(self._unsent)
            self._on_piece(unsent[: upto - self._n_sent])
            self._unsent = [unsent[upto - self._n_sent :]]
            self._n_sent = upto

    def result(self, elapsed_s: float) -> ChatResult:
        calls = [
            ToolCall(entry["id"] or f"call_{index}", entry["name"], _arguments(entry["arguments"]))
            for index, entry in sorted(self._calls.items())
            if not self.cut  # a call cut off is no call
        ]
        content = "".join(self._content)
        if not calls and self._tool_names and not self.cut:
            # A call written in the content (a ```json fence, bare JSON), as the local engine accepts it.
            found = extract_json_call(content, self._tool_names)
            if found is not None:
                calls = [ToolCall("call_0", found.name, found.arguments)]
                content = found.rest
        if not calls:
            self._send(len(content))  # what was held back in case it began a call
        finish_reason = "tool_calls" if calls else _FINISH_REASONS.get(self._finish_reason, "stop")
        return ChatResult(
            content.strip() if calls else content, calls, finish_reason, [], self._stats(elapsed_s)
        )

    def _stats(self, elapsed_s: float) -> Stats:
        usage, timings = self._usage, self._timings
        first_token_s = self._first_token_s if self._first_token_s is not None else elapsed_s
        n_prompt = _count(usage, "prompt_tokens")
        if n_prompt is None:
            n_prompt = (_count(timings, "prompt_n") or 0) + (_count(timings, "cache_n") or 0)
        n_reused = _count(_field(usage, "prompt_tokens_details", dict) or {}, "cached_tokens")
        if n_reused is None:
            n_reused = _count(timings, "cache_n")
        n_evaluated = _count(timings, "prompt_n")
        n_generated = _count(usage, "completion_tokens")
        if n_generated is None:
            n_generated = _count(timings, "predicted_n")
        prefill_ms, decode_ms = _count(timings, "prompt_ms"), _count(timings, "predicted_ms")
        return Stats(
            n_prompt=n_prompt,
            n_common=n_reused or 0,
            n_reused=n_reused,
            n_evaluated=n_evaluated if n_evaluated is not None else n_prompt - (n_reused or 0),
            n_generated=n_generated if n_generated is not None else self._n_deltas,
            # llama-server's, when it drafts (--spec-type, -md)
            n_drafted=_count(timings, "draft_n") or 0,
            n_accepted=_count(timings, "draft_n_accepted") or 0,
            t_prefill_ms=float(prefill_ms if prefill_ms is not None else first_token_s * 1000),
            t_first_token_ms=first_token_s * 1000,
            t_decode_ms=float(decode_ms if decode_ms is not None else (elapsed_s - first_token_s) * 1000),
        )


def _field(value: dict[str, Any], key: str, kind: type) -> Any:
    """value[key] if it is of the kind, None if absent or null; else Malformed."""
    item = value.get(key)
    if item is not None and not isinstance(item, kind):
        raise Malformed(f"{key} that is not a {kind.__name__}")
    return item


def _count(value: dict[str, Any], key: str) -> int | None:
    """A number the server reports (a count, milliseconds); None if it reports none."""
    item = value.get(key)
    if isinstance(item, bool) or not isinstance(item, int | float):
        return None
    return int(item)


def _arguments(text: str) -> dict[str, Any] | str:
    """A call's arguments as an object; text that is not one goes to the tool as it is, which says why."""
    try:
        value = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, dict) else text
