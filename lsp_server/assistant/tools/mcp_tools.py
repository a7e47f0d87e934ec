"""MCP tools in chat: which a conversation offers the model, under what names, and how a call is run.

A tool is offered as `server.tool`: llama.cpp's tool-call parser and grammar take the dot (the name is a
JSON string; tests/test_mcp.py has the test model call one), and the server's name, letters, digits, `_`
and `-` (mcp_config.py), cannot hold one, so the first dot splits it back. Characters of a tool's own
name outside `[A-Za-z0-9_.-]` become `_`. (OpenAI's own API allows no dot in a function's name; the
servers a remote backend is, llama-server and vLLM, do not check.)

The offer is fixed per conversation when it starts (its schemas are in the prompt's stable prefix, the
system message): the built-in tools first, then at most MAX_LOCAL_TOOLS of the servers' (MAX_REMOTE_TOOLS
with a remote backend), in the order of the configuration and of each server's list. Which ones: the
tools of the servers the conversation's first message names (by the server's name or a tool's, else
by a word of its tools' names: relevant), all of them where they fit, else those whose names and
descriptions share the most words with the message (BM25 over the tools, the index's words:
identifiers split, stemmed); none when it names none; or, by choice, the first ones. How the prefix
stays cached: conversations offered the same tools share their whole prefix; a question that names no
server gets the prefix of a chat without MCP tools, and one that names one server alone gets that
server's tools whole, the prefix the warming reads ahead for it (server_offers; lsp/warming.py). A tool
list that changes reaches the conversations that start after it. A description is cut to
MAX_DESCRIPTION_CHARS and a schema's `title`s dropped (they cost tokens, say nothing an argument's
name does not); the arguments are checked against the tool's full input schema (jsonschema) before the
call.

A call to a tool that does not declare itself read-only (`readOnlyHint`) asks the user first (the
`confirm` callback: the language server asks the editor). The answer is remembered as chosen: for this
call, this conversation, or as long as the server runs with this configuration ("always"). No answer is
a "deny", and the model reads that the user declined.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import jsonschema
from jsonschema.exceptions import SchemaError

from ..codebase import words
from .mcp_config import MAX_LOCAL_TOOLS, MAX_REMOTE_TOOLS
from .mcp_servers import CALL_TIMEOUT_S, McpServers, McpTool
from .runner import ToolOutcome
from .schemas import parse_arguments, refuse_schema
from .workspace_files import ToolError

log = logging.getLogger("llama_lsp.mcp")

__all__ = ["MAX_LOCAL_TOOLS", "MAX_REMOTE_TOOLS", "McpToolbox", "offer", "server_offers"]

SEPARATOR = "."
MAX_DESCRIPTION_CHARS = 400
MAX_NAME_CHARS = 64

Choice = Literal["allow", "allowConversation", "allowAlways", "deny"]
CHOICES: tuple[Choice, ...] = ("allow", "allowConversation", "allowAlways", "deny")


@dataclass(frozen=True)
class OfferedTool:
    """An MCP tool as a conversation offers it: the name the model writes, its schema for the prompt."""

    name: str
    tool: McpTool
    schema: dict[str, Any]


@dataclass(frozen=True)
class Offer:
    """The MCP tools a new conversation gets, and the ones left out by the limit."""

    tools: tuple[OfferedTool, ...] = ()
    left_out: tuple[str, ...] = ()

    @property
    def schemas(self) -> tuple[dict[str, Any], ...]:
        return tuple(tool.schema for tool in self.tools)


def model_name(tool: McpTool) -> str:
    """`server.tool`, as the model writes it."""
    own = re.sub(r"[^A-Za-z0-9_.-]", "_", tool.name)
    return f"{tool.server}{SEPARATOR}{own}"[:MAX_NAME_CHARS]


def offer(tools: list[McpTool], limit: int, question: str | None = None) -> Offer:
    """At most `limit` of the tools whose names and schemas can be offered, in the order given: those
    that `question` asks for (relevant; none when it names no server), or without one the first."""
    usable = _usable(tools)
    if question is None:
        chosen = set(range(min(limit, len(usable))))
    else:
        chosen = relevant([tool for _, tool in usable], question, limit)
    return _offer_of(usable, chosen)


def server_offers(tools: list[McpTool], limit: int) -> list[Offer]:
    """What a question that names one server alone is offered (relevant's rule: the server's tools
    whole), for each server whose tools fit in `limit`, in the order given: the openings to read ahead."""
    usable = _usable(tools)
    by_server: dict[str, set[int]] = {}
    for i, (_, tool) in enumerate(usable):
        by_server.setdefault(tool.server, set()).add(i)
    return [_offer_of(usable, chosen) for chosen in by_server.values() if len(chosen) <= limit]


def _usable(tools: list[McpTool]) -> list[tuple[str, McpTool]]:
    """The tools that can be offered, with the names the model writes: a taken name or an invalid input
    schema leaves a tool out."""
    usable: list[tuple[str, McpTool]] = []
    seen: set[str] = set()
    for tool in tools:
        name = model_name(tool)
        if name in seen:
            log.info("MCP tool %s of %s left out: its name is taken", tool.name, tool.server)
            continue
        try:
            _validator(tool.input_schema)
        except SchemaError as exc:
            log.warning(
                "MCP tool %s of %s left out: its input schema is invalid: %s", tool.name, tool.server, exc
            )
            continue
        seen.add(name)
        usable.append((name, tool))
    return usable


def _offer_of(usable: list[tuple[str, McpTool]], chosen: set[int]) -> Offer:
    offered = tuple(
        OfferedTool(name, tool, _function_schema(name, tool))
        for i, (name, tool) in enumerate(usable)
        if i in chosen
    )
    left_out = tuple(name for i, (name, _) in enumerate(usable) if i not in chosen)
    return Offer(offered, left_out)


# BM25's usual constants; a tool's name counts as often as this in its text (it says what the tool does
# in the fewest words, as a symbol's name does in the workspace index).
_K1, _B = 1.2, 0.75
NAME_WEIGHT = 3


def relevant(tools: list[McpTool], question: str, limit: int) -> set[int]:
    """The positions of the tools of the servers the question names, all of them where they fit in
    `limit`: then a question that names one server gets the prompt read ahead for it (server_offers).
    Where they do not, the `limit` whose server name, tool name and description best match the
    question's words, ties to the earlier tool. A server is named by its own name or one of its tools'
    names as written (`create_note`); where the question names none so, by a word of its tools' names
    ("branches" names git's `git_branch`): the words of a server the question does not name would
    otherwise bring its tools along ("create" in "Use tracker.create_note to create a note" named the
    filesystem server's `create_directory`, and the test model filled create_note's arguments with
    `edit_file`'s). Descriptions alone do not make a server relevant: they share common verbs with any
    question ("Change the default currency" matched the git server's "Shows changes ..."). None named:
    none."""
    asked = set(words(question))
    written = {name.lower() for name in re.findall(r"[A-Za-z0-9_-]+", question)}
    by_name: set[str] = set()
    by_word: set[str] = set()
    for tool in tools:
        server_words, tool_words = set(words(tool.server)), words(tool.name)
        if (server_words and server_words <= asked) or (len(tool_words) > 1 and tool.name.lower() in written):
            by_name.add(tool.server)
        if (server_words | set(tool_words)) & asked:
            by_word.add(tool.server)
    named = by_name or by_word
    of_named = {i for i, tool in enumerate(tools) if tool.server in named}
    if len(of_named) <= limit:
        return of_named
    texts = [
        Counter(words(f"{tool.server} {tool.name}") * NAME_WEIGHT + words(tool.description)) for tool in tools
    ]
    holding = Counter(word for text in texts for word in text.keys() & asked)  # tools with each word
    idf = {word: math.log(1 + (len(texts) - n + 0.5) / (n + 0.5)) for word, n in holding.items()}
    average = sum(sum(text.values()) for text in texts) / len(texts) or 1.0
    scores: list[tuple[float, int]] = []
    for i, text in enumerate(texts):
        if i not in of_named:
            continue
        length = sum(text.values())
        score = 0.0
        for word in asked & text.keys():
            count = text[word]
            score += idf[word] * count * (_K1 + 1) / (count + _K1 * (1 - _B + _B * length / average))
        if score > 0:
            scores.append((-score, i))
    return {i for _, i in sorted(scores)[:limit]}


def _function_schema(name: str, tool: McpTool) -> dict[str, Any]:
    description = " ".join(tool.description.split())
    if len(description) > MAX_DESCRIPTION_CHARS:
        description = description[: MAX_DESCRIPTION_CHARS - 3].rstrip() + "..."
    parameters = _compact(copy.deepcopy(tool.input_schema))
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        parameters = {"type": "object", "properties": {}}
    parameters.setdefault("properties", {})
    function: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
    return {"type": "function", "function": function}


_SCHEMA_CHILDREN = ("items", "additionalProperties", "not", "contains")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")


def _compact(schema: Any) -> Any:
    """The schema without its `title`s and `$schema` (the prompt's copy; the check uses the whole)."""
    if not isinstance(schema, dict):
        return schema
    schema.pop("title", None)
    schema.pop("$schema", None)
    for key in _SCHEMA_CHILDREN:
        if isinstance(schema.get(key), dict):
            _compact(schema[key])
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for item in schema[key]:
                _compact(item)
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for item in schema[key].values():
                _compact(item)
    return schema


def _validator(schema: dict[str, Any]) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def check_arguments(offered: OfferedTool, arguments: object) -> dict[str, Any]:
    """The call's arguments, checked against the tool's input schema; a mismatch is the model's to fix."""
    given = parse_arguments(offered.name, arguments)
    schema = offered.tool.input_schema
    required = set(schema.get("required", ()))
    # Models often spell an omitted optional argument as null.
    given = {key: value for key, value in given.items() if value is not None or key in required}
    errors = sorted(_validator(schema).iter_errors(given), key=lambda error: error.path)
    if not errors:
        return given
    properties = schema.get("properties") or {}
    refuse_schema(offered.name, given, properties)
    error = jsonschema.exceptions.best_match(errors)
    where = "".join(f"[{part!r}]" for part in error.absolute_path)
    expected = ", ".join(properties) or "none"
    raise ToolError(
        f"the arguments to {offered.name} do not fit its schema: {where + ' ' if where else ''}"
        f"{error.message[:300]} (its arguments are: {expected})"
    )


@dataclass(frozen=True)
class ConsentRequest:
    """What the user is asked before a call to a tool that may change something."""

    conversation_id: str
    server: str
    tool: str  # as its server names it
    name: str  # as the model called it
    arguments: dict[str, Any]
    description: str


Confirm = Callable[[ConsentRequest], Awaitable[Choice]]


@dataclass
class Consent:
    """The user's standing answers: tools allowed in a conversation, and tools always allowed. "Always"
    lasts while the language server runs and the tool's server keeps its configuration."""

    always: set[tuple[str, str]] = field(default_factory=set)  # (server, tool)
    conversations: dict[str, set[tuple[str, str]]] = field(default_factory=dict)

    def given(self, conversation_id: str, key: tuple[str, str]) -> bool:
        return key in self.always or key in self.conversations.get(conversation_id, set())

    def remember(self, conversation_id: str, key: tuple[str, str], choice: Choice) -> None:
        if choice == "allowAlways":
            self.always.add(key)
        elif choice == "allowConversation":
            self.conversations.setdefault(conversation_id, set()).add(key)

    def forget_server(self, server: str) -> None:
        """The server's configuration changed: what was allowed of the old one is not of the new."""
        self.always = {key for key in self.always if key[0] != server}
        for keys in self.conversations.values():
            keys.difference_update({key for key in keys if key[0] == server})


class McpToolbox:
    """One request's MCP tools: those its conversation offers, run with the user's consent."""

    def __init__(
        self,
        conversation_id: str,
        offered: tuple[OfferedTool, ...],
        servers: McpServers,
        consent: Consent,
        confirm: Confirm,
        timeout_s: float = CALL_TIMEOUT_S,
    ) -> None:
        self.conversation_id = conversation_id
        self._offered = {tool.name: tool for tool in offered}
        self._servers = servers
        self._consent = consent
        self._confirm = confirm
        self._timeout_s = timeout_s

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._offered)

    async def run(self, name: str, arguments: object) -> ToolOutcome:
        """The outcome of one call; every failure is an outcome the model reads."""
        offered = self._offered[name]
        tool = offered.tool
        try:
            given = check_arguments(offered, arguments)
        except ToolError as exc:
            return ToolOutcome.failed(str(exc))
        server = self._servers.server(tool.server)
        if server is None:
            return ToolOutcome.failed(f"the MCP server {tool.server} is no longer configured")
        key = (tool.server, tool.name)
        if not tool.read_only and not self._consent.given(self.conversation_id, key):
            request = ConsentRequest(
                self.conversation_id, tool.server, tool.name, name, given, tool.description
            )
            choice = await self._confirm(request)
            if choice == "deny":
                log.info("the user declined %s(%s)", name, json.dumps(given)[:300])
                return ToolOutcome.failed(
                    f"the user declined this call to {name}; it did not run. Do not call it again unless "
                    "the user asks you to: answer with what you have"
                )
            self._consent.remember(self.conversation_id, key, choice)
        outcome = await server.call(tool.name, given, self._timeout_s)
        if outcome.ok:
            return ToolOutcome(outcome.text, found_nothing=not outcome.text.strip())
        return ToolOutcome.failed(outcome.text)
