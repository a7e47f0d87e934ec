"""Conversations and the turn loop: the model answers, calling tools until it is done.

A conversation's messages are append-only and laid out stable-first (system prompt, document, turns),
so every turn's prompt extends the previous one and the engine reuses its cached prefix. When the
document changes between turns, the change is appended as a diff instead of rewriting the earlier copy.
No LSP types here: the chat and code-action features translate.

A turn always ends with an answer for the user. The template's markup the model writes as text is cut
(lsp_server.assistant.markup); a call that repeats one that failed or found nothing is not run again,
nor one that repeats a call of an MCP tool (it may change something, and its result is there already)
(its result says so and what to try instead), and after two such the tools are off for the turn. When
the rounds still end without an answer (empty, markup, a copy of a tool's result, a call written as
text), the model is asked once more, with the tools off and the conversation's cached prefix, to say
what it looked for and found; should that be empty too, the answer is the server's own account of the
calls.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..engine import ChatEngine, ChatRequest, ChatResult, Stats
from ..engine.tool_calls import extract_json_call, tool_call_start
from . import markup, prompts
from .checks.verifier import Verifier
from .edits import unified_diff
from .tools.runner import ToolOutcome, ToolRunner
from .tools.schemas import TOOL_NAMES, schemas_for

RETRY_TEMPERATURE = 0.7
REPEATS_BEFORE_TOOLS_OFF = 2  # calls not run again (they repeat an unproductive one) before tools go off
# Asked when the rounds ended without an answer: short, since it is all the answer's prompt adds to the
# cached conversation.
ANSWER_NOW = (
    "Answer my question now, without tools: say what you looked for and what you found, or that "
    "nothing was found."
)

log = logging.getLogger("llama_lsp.conversation")


@dataclass
class Conversation:
    id: str
    messages: list[dict[str, Any]] = field(default_factory=lambda: [prompts.system_message()])
    document_path: str | None = None
    snapshot: str | None = None  # the document as the model last saw it
    # Tools besides the built-in four (a chat's MCP tools), fixed when the conversation starts: they are
    # in its prompt's stable prefix.
    extra_tools: tuple[dict[str, Any], ...] = ()
    offer: tuple[Any, ...] = ()  # what offered them (mcp_tools.OfferedTool), to run a call

    @property
    def started(self) -> bool:
        """Whether anything follows the system message (its tools can no longer change)."""
        return len(self.messages) > 1

    def tools(self, names: tuple[str, ...] = tuple(TOOL_NAMES)) -> list[dict[str, Any]]:
        """The tools its prompts declare: the named built-in ones, in their fixed order, then its own."""
        return [*schemas_for(names), *self.extra_tools]

    @property
    def tool_names(self) -> list[str]:
        return [schema["function"]["name"] for schema in self.tools()]

    def show_document(self, path: str, text: str) -> None:
        """Makes sure the model has seen the current text: the whole file once, then diffs."""
        self.messages = self.messages_showing(path, text)
        self.document_path, self.snapshot = path, text

    @property
    def has_answers(self) -> bool:
        return any(message["role"] == "assistant" for message in self.messages)

    def messages_showing(self, path: str, text: str) -> list[dict[str, Any]]:
        """The messages as show_document would leave them, without changing the conversation (what
        warming the cache reads ahead of the next question)."""
        if self.snapshot is None or self.document_path != path:
            return [*self.messages, prompts.document_message(path, text)]
        if text == self.snapshot:
            return list(self.messages)
        diff = unified_diff(path, self.snapshot, text)
        if len(diff) >= len(text):
            return [*self.messages, prompts.document_message(path, text)]
        return [
            *self.messages,
            {"role": "user", "content": f"The file `{path}` changed:\n```diff\n{diff}```"},
        ]


class ConversationStore:
    """The server's conversations, least recently used dropped first."""

    def __init__(self, limit: int = 64):
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._limit = limit

    def get_or_create(self, conversation_id: str | None) -> Conversation:
        if conversation_id is not None and conversation_id in self._conversations:
            self._conversations.move_to_end(conversation_id)
            return self._conversations[conversation_id]
        conversation = Conversation(id=conversation_id or uuid.uuid4().hex)
        self._conversations[conversation.id] = conversation
        while len(self._conversations) > self._limit:
            self._conversations.popitem(last=False)
        return conversation

    def __contains__(self, conversation_id: str) -> bool:
        return conversation_id in self._conversations


@dataclass
class ToolCallRecord:
    name: str
    arguments: Any
    result: str
    productive: bool = True  # it neither failed nor found nothing (a repeat of it is not run again)


@dataclass
class TurnStats:
    """One turn's figures: the counters and times of every model request in it (`steps`), summed, so
    that reused / prompt is the turn's cache hit rate; and the first request's time to its first token,
    which is how long the user waited. The same record goes to the result, `lastStats` and the totals.
    n_reused is None (unknown) once any request's was: a remote backend that does not report it.
    """

    n_prompt: int = 0
    n_reused: int | None = 0
    n_evaluated: int = 0
    n_generated: int = 0
    n_drafted: int = 0
    n_accepted: int = 0
    t_prefill_ms: float = 0.0
    t_first_token_ms: float = 0.0
    t_decode_ms: float = 0.0
    steps: int = 0

    def count(self, request: Stats) -> None:
        """Adds one model request's figures."""
        if self.steps == 0:
            self.t_first_token_ms = request.t_first_token_ms
        self.steps += 1
        self.n_prompt += request.n_prompt
        self.n_reused = _known_sum(self.n_reused, request.n_reused)
        self.n_evaluated += request.n_evaluated
        self.n_generated += request.n_generated
        self.n_drafted += request.n_drafted
        self.n_accepted += request.n_accepted
        self.t_prefill_ms += request.t_prefill_ms
        self.t_decode_ms += request.t_decode_ms

    def plus(self, later: TurnStats) -> TurnStats:
        """These figures followed by a later turn's, as one turn."""
        return TurnStats(
            n_prompt=self.n_prompt + later.n_prompt,
            n_reused=_known_sum(self.n_reused, later.n_reused),
            n_evaluated=self.n_evaluated + later.n_evaluated,
            n_generated=self.n_generated + later.n_generated,
            n_drafted=self.n_drafted + later.n_drafted,
            n_accepted=self.n_accepted + later.n_accepted,
            t_prefill_ms=self.t_prefill_ms + later.t_prefill_ms,
            t_first_token_ms=self.t_first_token_ms if self.steps else later.t_first_token_ms,
            t_decode_ms=self.t_decode_ms + later.t_decode_ms,
            steps=self.steps + later.steps,
        )


def _known_sum(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@dataclass
class TurnResult:
    content: str
    finish_reason: str
    tool_calls: list[ToolCallRecord]
    stats: TurnStats = field(default_factory=TurnStats)

    def followed_by(self, later: TurnResult) -> TurnResult:
        """One turn made of this one and a later one in the same conversation: the later one's answer,
        both ones' work."""
        return TurnResult(
            content=later.content or self.content,
            finish_reason=later.finish_reason,
            tool_calls=self.tool_calls + later.tool_calls,
            stats=self.stats.plus(later.stats),
        )


@dataclass(frozen=True)
class TurnOptions:
    max_tool_steps: int = 6
    max_tokens: int = 1024
    temperature: float = 0.0
    tool_names: tuple[str, ...] = tuple(TOOL_NAMES)
    want_edit: bool = False  # force tool calls until an edit is proposed
    edit_tools: tuple[str, ...] = ("edit",)  # what a forced call may be, when an edit is wanted


async def run_turn(
    engine: ChatEngine,
    conversation: Conversation,
    runner: ToolRunner,
    options: TurnOptions,
    on_piece: Callable[[str], None] | None = None,
    verifier: Verifier | None = None,
) -> TurnResult:
    """Runs the model on the conversation, executing its tool calls, until it answers or runs out of steps.

    With a verifier, each proposed edit is checked, and a failed check is the tool's result. After a
    failed call the model samples (seeded per step) rather than decoding greedily, which tends to write
    the same call again; a call identical to an unproductive one is not run again. A turn that is not
    after an edit ends with an answer for the user (the module's docstring says how).
    """
    # Every tool is declared on every request, even when unused, so the prompt's prefix never changes.
    tools = conversation.tools(options.tool_names)
    markers = await markup.markers_of(engine)
    records: list[ToolCallRecord] = []
    result: TurnResult | None = None
    unproductive: set[str] = set()
    extra_calls: set[str] = set()  # the MCP tools' calls run in this turn
    repeats = 0
    proposed = False
    for step in range(options.max_tool_steps):
        tools_off = step == options.max_tool_steps - 1 or repeats >= REPEATS_BEFORE_TOOLS_OFF
        choice = "required" if options.want_edit else ("none" if tools_off else "auto")
        sampled = any(not record.productive for record in records)
        temperature = max(options.temperature, RETRY_TEMPERATURE) if sampled else options.temperature
        answer = await _generate(
            engine,
            ChatRequest(
                messages=list(conversation.messages),
                tools=tools,
                tool_choice=choice,
                allowed_tools=list(options.edit_tools) if options.want_edit else None,
                max_tokens=options.max_tokens,
                temperature=temperature,
                seed=step,
                slot=conversation.id,
            ),
            markers,
            on_piece,
        )
        result = count_answer(result, answer, records)
        if not answer.tool_calls or answer.finish_reason in ("cancelled", "error"):
            result.content = answer.content
            conversation.messages.append({"role": "assistant", "content": answer.content})
            break
        call = answer.tool_calls[0]
        signature = json.dumps([call.name, call.arguments], sort_keys=True)
        if signature in unproductive and options.want_edit:
            log.info("the model repeated an edit that failed; ending the turn")  # its caller writes again
            result.content = answer.content
            break
        if signature in unproductive:
            repeats += 1
            outcome = ToolOutcome.failed(_repeated(call.name, repeats))
        elif signature in extra_calls:
            # Small models call an MCP tool again with the same arguments instead of answering with its
            # result; a second run of a tool that writes would write twice.
            repeats += 1
            outcome = ToolOutcome.failed(
                f"you already called {call.name} with these arguments; its result is above, and it was not "
                "run again. Answer now with it."
            )
        else:
            if runner.extra is not None and call.name in runner.extra.names:
                extra_calls.add(signature)
            outcome = await runner.call(call.name, call.arguments)
            if outcome.proposed and verifier is not None:
                problem = await verifier.check_latest(runner)
                if problem is not None:
                    outcome = ToolOutcome.failed(problem)
        productive = outcome.ok and not outcome.found_nothing
        if not productive:
            unproductive.add(signature)
        log.info("tool %s(%s) -> %s", call.name, json.dumps(call.arguments)[:2000], outcome.text[:300])
        records.append(ToolCallRecord(call.name, call.arguments, outcome.text, productive))
        conversation.messages.append(
            {
                "role": "assistant",
                "content": answer.content,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                    }
                ],
            }
        )
        conversation.messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.text})
        if outcome.proposed or (verifier is not None and verifier.exhausted):
            # An edit is a proposal the user reviews: stop here rather than let the model pile more on.
            result.content = answer.content
            result.finish_reason = "tool_calls"
            proposed = outcome.proposed
            break
    assert result is not None  # max_tool_steps >= 1
    if options.want_edit or proposed or result.finish_reason in ("cancelled", "error"):
        return result
    if not _answers(result.content, records, conversation.tool_names):
        result = await _answer_now(engine, conversation, options, markers, on_piece, result)
    return result


async def _generate(
    engine: ChatEngine,
    request: ChatRequest,
    markers: frozenset[str],
    on_piece: Callable[[str], None] | None,
) -> ChatResult:
    """The engine's answer, with the template's markup cut from what streams and from its content."""
    cut = markup.MarkupFilter(markers)

    def shown(piece: str) -> None:
        text = cut.add(piece)
        if text and on_piece is not None:
            on_piece(text)

    answer = await engine.generate(request, shown)
    rest = cut.finish()
    if rest and on_piece is not None:
        on_piece(rest)
    answer.content = markup.without_markup(answer.content, markers)
    return answer


def _repeated(name: str, repeats: int) -> str:
    """What a call that repeats an unproductive one gets instead of running again."""
    if repeats >= REPEATS_BEFORE_TOOLS_OFF:
        then = "Answer now with what you found."
    else:
        then = "Try other words or a shorter pattern, or search without a pattern to list the files."
    return (
        f"you already called {name} with these arguments, and it failed or found nothing; it was not "
        f"run again. {then}"
    )


def _answers(content: str, records: list[ToolCallRecord], names: list[str] = TOOL_NAMES) -> bool:
    """Whether content is an answer for the user: not empty, not tool calls written as text (the last
    perhaps cut off), and not a copy of what a tool returned."""
    text = content.strip()
    while (call := extract_json_call(text, names)) is not None:
        text = call.rest.strip()
    if not text or tool_call_start(text, names) == 0:  # nothing, or a call cut off by the limit
        return False
    for record in records:
        if text == record.result.strip() or (not record.productive and text in record.result):
            return False
    return True


async def _answer_now(
    engine: ChatEngine,
    conversation: Conversation,
    options: TurnOptions,
    markers: frozenset[str],
    on_piece: Callable[[str], None] | None,
    result: TurnResult,
) -> TurnResult:
    """The answer when the rounds ended without one: asked once more with the tools off, from the cached
    conversation; or, should that be empty too, the server's account of the calls."""
    conversation.messages.append({"role": "user", "content": ANSWER_NOW})
    answer = await _generate(
        engine,
        ChatRequest(
            messages=list(conversation.messages),
            tools=conversation.tools(options.tool_names),
            tool_choice="none",
            max_tokens=options.max_tokens,
            temperature=options.temperature,
            slot=conversation.id,
        ),
        markers,
        on_piece,
    )
    result = count_answer(result, answer, result.tool_calls)
    content = answer.content
    answered = _answers(content, result.tool_calls, conversation.tool_names)
    if answer.finish_reason not in ("cancelled", "error") and not answered:
        content = no_answer(result.tool_calls)
        if on_piece is not None:
            on_piece(content)
        result.finish_reason = "stop"
    conversation.messages.append({"role": "assistant", "content": content})
    result.content = content
    return result


def no_answer(records: list[ToolCallRecord]) -> str:
    """The server's own answer when the model gave none: what was looked for, and what came of it."""
    if not records:
        return "The model gave no answer. Ask again, perhaps in other words."
    lines = ["The model gave no answer. What it looked for:"]
    for record in records[:8]:
        arguments = json.dumps(record.arguments)[:120]
        first = record.result.strip().splitlines()[0][:120] if record.result.strip() else "(nothing)"
        lines.append(f"- {record.name} {arguments}: {first}")
    lines.append("Ask again in other words, or name a file or a function to look at.")
    return "\n".join(lines)


def count_answer(result: TurnResult | None, answer: ChatResult, records: list[ToolCallRecord]) -> TurnResult:
    """The turn's figures with one more model request counted."""
    if result is None:
        result = TurnResult("", answer.finish_reason, records)
    result.stats.count(answer.stats)
    result.finish_reason = answer.finish_reason
    return result
