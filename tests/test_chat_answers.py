"""A chat turn always ends with an answer for the user (lsp_server.assistant.conversation, markup,
tools): no empty reply, no template markup, no failing call run twice, no schema run as arguments. And
Document keeps the code when such a server hides code in its comments (lsp_server.assistant.languages).

The turn loop is driven through the real remote backend against a server that plays a model that
misbehaves in these ways on cue (the real models do, but not on demand: the issue's figures came from
the 1.5B on a real repository); the template's markers it cuts are read from the real test model's own
template. The last test asks the real test model, over LSP, a question whose search finds nothing.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.assistant import markup
from lsp_server.assistant.conversation import ANSWER_NOW, Conversation, TurnOptions, run_turn
from lsp_server.assistant.rewrite import only_documentation
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles
from lsp_server.engine import RemoteConfig, native
from lsp_server.engine.remote import RemoteEngine
from lsp_server.lsp import protocol

from .lsp_client import AssistantClient, open_document
from .test_code_actions import edited_texts, list_actions
from .test_remote_backend import language_server

SERVER_OPTIONS = {"model": "qwen2.5-coder-0.5b", "contextSize": 4096, "slots": 2, "maxTokens": 96}
QWEN_MARKERS = {"<|im_start|>", "<|im_end|>", "<tools>", "</tools>", "<tool_call>", "</tool_call>"}
QWEN_MARKERS |= {"<tool_response>", "</tool_response>"}
SENTENCE = "the retry delay grows with every failed attempt to reach the server"


@pytest.fixture(scope="module")
def rendered_probe(warm_engine: native.NativeEngine) -> str:
    """The test model's own template applied to the probe conversation, as the local engine renders it."""
    request = {"messages": markup.PROBE_MESSAGES, "tools": [markup.PROBE_TOOL]}
    return str(warm_engine.tokenize(request)["prompt"])


def test_the_markers_are_read_from_the_models_own_template(rendered_probe: str):
    markers = markup.markers_in_rendering(rendered_probe)
    assert markers >= QWEN_MARKERS, sorted(markers)
    assert not any("probe" in marker for marker in markers)


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("<tool_response>\nNo matches for 'x'.\n</tool_response>", ""),
        ('<tools>\n{"type": "function", "function": }\n</tools>', ""),
        ("It is in <b>net.py</b><|im_end|>", "It is in <b>net.py</b>"),
        ("if a < b and c<|d: pass", "if a < b and c<|d: pass"),
        ('see <tool_call>\n{"name": "search"', "see "),  # a block that never closes
        ("stray </tool_call> closer", "stray  closer"),
        ("<|endoftext|>The answer", "The answer"),  # the shape of a special token, known or not
    ],
)
def test_markup_is_cut_from_an_answer_however_it_streams(written: str, shown: str):
    assert markup.without_markup(written, QWEN_MARKERS) == shown
    for size in (1, 2, 3, 7):
        cut = markup.MarkupFilter(QWEN_MARKERS)
        pieces = [cut.add(written[i : i + size]) for i in range(0, len(written), size)] + [cut.finish()]
        assert "".join(pieces) == shown
        assert not any(marker in piece for piece in pieces for marker in QWEN_MARKERS)


# ---- a model that misbehaves on cue, behind the real remote backend ------------------------------------


class ScriptedModel(ThreadingHTTPServer):
    """An OpenAI-compatible server whose answers are a script: each chat request gets the next entry,
    text (streamed three characters a delta) or a tool call ({"name", "arguments"}). It answers
    llama-server's /apply-template with the test model's rendering of the probe, and keeps each chat
    request it got."""

    daemon_threads = True

    def __init__(self, script: list[str | dict[str, Any]], rendering: str) -> None:
        super().__init__(("127.0.0.1", 0), _Scripted)
        self.script = list(script)
        self.rendering = rendering
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Scripted(BaseHTTPRequestHandler):
    server: ScriptedModel

    def log_message(self, *_args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(
            {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "llamacpp"}]}
        )

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if self.path == "/apply-template":
            self._json({"prompt": self.server.rendering})
            return
        self.server.requests.append(body)
        entry = self.server.script.pop(0) if self.server.script else ""
        if isinstance(entry, dict):
            call = {"index": 0, "id": f"call_{len(self.server.requests)}", "type": "function"}
            call["function"] = {"name": entry["name"], "arguments": json.dumps(entry["arguments"])}
            chunks = [{"tool_calls": [call]}]
            finish = "tool_calls"
        else:
            chunks = [{"content": entry[i : i + 3]} for i in range(0, len(entry), 3)]
            finish = "stop"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        events = [{"choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in chunks]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        for event in events:
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def _json(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "net.py").write_text(
        "RETRY_DELAY_S = 0.5\n\n\ndef reach(server, attempts=3):\n"
        "    # each failed attempt doubles the retry delay\n    return server.connect()\n"
    )
    (root / "util.py").write_text("def clamp(value, low, high):\n    return max(low, min(value, high))\n")
    return root


class Turn:
    """One chat turn of run_turn on the scripted model, and what it streamed."""

    def __init__(self, project: Path, script: list[str | dict[str, Any]], rendering: str) -> None:
        self.model = ScriptedModel(script, rendering)
        self.runner = ToolRunner(WorkspaceFiles([project]))
        self.conversation = Conversation("scripted")
        self.pieces: list[str] = []

    async def ask(self, question: str, steps: int = 6) -> Any:
        threading.Thread(target=self.model.serve_forever, daemon=True).start()
        engine = RemoteEngine(RemoteConfig(url=self.model.url, timeout_s=10))
        try:
            self.conversation.messages.append({"role": "user", "content": question})
            options = TurnOptions(max_tool_steps=steps)
            return await run_turn(engine, self.conversation, self.runner, options, self.pieces.append)
        finally:
            await engine.aclose()
            self.model.shutdown()
            self.model.server_close()


@pytest.fixture
def scripted(project: Path, rendered_probe: str) -> Iterator[Any]:
    yield lambda script: Turn(project, script, rendered_probe)


def search(pattern: str) -> dict[str, Any]:
    return {"name": "search", "arguments": {"pattern": pattern}}


async def test_a_repeated_call_that_found_nothing_is_not_run_again_and_the_turn_answers(scripted):
    answer = "I searched for 'zqx vtw' and found nothing like it in the workspace."
    turn = scripted([search("zqx vtw")] * 3 + ["", answer])
    result = await turn.ask("Where is zqx vtw handled?")
    results = [call.result for call in result.tool_calls]
    assert results[0] == "No matches for 'zqx vtw'."
    assert all("it was not run again" in later for later in results[1:]), results
    # After two calls that were not run, the tools are off: the model must answer.
    choices = [request.get("tool_choice") for request in turn.model.requests]
    assert choices[:3] == ["auto"] * 3 and choices[3] == "none", choices
    # It answered nothing with the tools off: it was asked once more, from the same conversation.
    last, before = turn.model.requests[-1], turn.model.requests[-2]
    assert last["tool_choice"] == "none" and last["messages"][-1]["content"] == ANSWER_NOW
    assert last["messages"][: len(before["messages"])] == before["messages"]
    assert result.content == answer and result.finish_reason == "stop"
    assert "".join(turn.pieces) == answer


async def test_an_answer_made_of_template_markup_is_never_shown(scripted):
    markup_only = "<tool_response>\nNo matches for 'retry'.\n</tool_response>"
    answer = "The retry delay is RETRY_DELAY_S in net.py."
    turn = scripted([markup_only, answer])
    result = await turn.ask("Where is the retry delay set?")
    assert result.content == answer and result.finish_reason == "stop"
    assert not any(marker in piece for piece in turn.pieces for marker in QWEN_MARKERS), turn.pieces
    assert "".join(turn.pieces) == answer


async def test_a_turn_with_no_answer_at_all_says_so_and_what_was_looked_for(scripted):
    turn = scripted([search("zqx"), "<tools>\n{}\n</tools>", "   "])
    result = await turn.ask("Where is zqx?")
    assert result.finish_reason == "stop" and result.content.strip()
    assert result.content.startswith("The model gave no answer.")
    assert "search" in result.content and "zqx" in result.content
    assert "".join(turn.pieces).strip() == result.content


async def test_tool_calls_written_as_text_are_no_answer(scripted):
    """What the test model does once its tools are off: it goes on writing the call as JSON."""
    call = json.dumps(search("zqx"))
    turn = scripted([f"{call}\n{call}\n{call[:30]}", "Nothing in the workspace mentions zqx."])
    result = await turn.ask("Where is zqx?", steps=1)
    assert result.content == "Nothing in the workspace mentions zqx."


def test_asking_once_more_costs_at_most_64_prompt_tokens(warm_engine: native.NativeEngine):
    """The question the answer is asked with adds this much to the conversation the cache holds."""
    before = [{"role": "user", "content": "Where is zqx?"}, {"role": "assistant", "content": ""}]
    after = [*before, {"role": "user", "content": ANSWER_NOW}]
    count = [len(warm_engine.tokenize({"messages": messages})["tokens"]) for messages in (before, after)]
    assert 0 < count[1] - count[0] <= 64, count


async def test_a_copy_of_a_tools_result_is_no_answer(scripted):
    turn = scripted([search("zqx"), "No matches for 'zqx'.", "Nothing in the workspace mentions zqx."])
    result = await turn.ask("Where is zqx?")
    assert result.content == "Nothing in the workspace mentions zqx."


async def test_arguments_that_are_the_tools_schema_are_refused_not_run(scripted):
    schema = {"type": "object", "properties": {"pattern": {"type": "string"}}}
    turn = scripted([{"name": "search", "arguments": schema}, "RETRY_DELAY_S is in net.py."])
    result = await turn.ask("Where is the retry delay?")
    refused = result.tool_calls[0].result
    assert refused.startswith("Error: that is the schema of search's arguments")
    assert '{"pattern": "<pattern>", "glob": "<glob>"}' in refused
    assert result.content == "RETRY_DELAY_S is in net.py."


@pytest.mark.parametrize(
    "arguments",
    [
        {"pattern": {"type": "string"}},
        {"pattern": '{"type": "object", "properties": {"pattern": {"type": "string"}}}'},
    ],
)
def test_schemas_in_other_shapes_are_refused(project: Path, arguments: dict[str, Any]):
    outcome = ToolRunner(WorkspaceFiles([project])).run("search", arguments)
    assert not outcome.ok and "schema" in outcome.text and "pattern, glob" in outcome.text


def test_a_sentence_that_matches_no_line_finds_the_lines_with_most_of_its_words(project: Path):
    outcome = ToolRunner(WorkspaceFiles([project])).run("search", {"pattern": SENTENCE})
    lines = outcome.text.splitlines()
    assert lines[0].startswith(f"No line matches {SENTENCE!r}. The lines with the most of its words")
    assert lines[1] == "net.py:5: # each failed attempt doubles the retry delay", outcome.text
    assert outcome.ok and not outcome.found_nothing
    nothing = ToolRunner(WorkspaceFiles([project])).run("search", {"pattern": "zqx vtw qqj"})
    assert nothing.text == "No matches for 'zqx vtw qqj'." and nothing.found_nothing


# ---- the real test model, over LSP ---------------------------------------------------------------------


@pytest.mark.asyncio(loop_scope="module")
async def test_a_chat_whose_search_finds_nothing_still_answers(client: AssistantClient, workspace: Path):
    result = await client.request(
        protocol.CHAT,
        {
            "message": "Use the search tool to find the text 'zqx vtw eviction' in the workspace, then tell "
            "me which file has it.",
            "partialResultToken": "nothing-found",
        },
    )
    deltas = [value["delta"] for value in client.partials.get("nothing-found", [])]
    assert result["content"].strip(), result
    assert result["finishReason"] in ("stop", "length"), result
    for text in [result["content"], *deltas]:
        assert "<tool_" not in text and "<tools>" not in text and "<|" not in text, text
    calls = result["toolCalls"]
    unproductive = {
        json.dumps([call["name"], call["arguments"]], sort_keys=True)
        for call in calls
        if call["result"].startswith(("No matches", "Error"))
    }
    ran = [
        json.dumps([c["name"], c["arguments"]], sort_keys=True)
        for c in calls
        if "not run again" not in c["result"]
    ]
    assert [call for call in unproductive if ran.count(call) > 1] == [], calls
    uri = open_document(client, workspace / "inventory.py")
    assert uri  # the server still serves after the turn


# ---- Document through the remote backend, from a server that hides code in comments --------------------

HOSTILE_DOCUMENT = {
    "calc.js": (
        "function add(a, b) {\n  return a + b;\n}\n",
        "```javascript\n/* Adds. */ fetch(process.env.HOME); /* end */\n"
        "function add(a, b) {\n  return a + b;\n}\n```",
    ),
    "calc.c": (
        "int add(int a, int b) {\n  return a + b;\n}\n",
        "```c\n/* Adds two numbers. */\nint add(int a, int b) {\n  // the sum \\\n  return a + b;\n}\n```",
    ),
    "Calc.java": (
        "class Calc {\n  int add(int a, int b) {\n    return a + b;\n  }\n}\n",
        "```java\nclass Calc {\n  // adds \\u000a static { System.exit(1); }\n  int add(int a, int b) {\n"
        "    return a + b;\n  }\n}\n```",
    ),
    "calc.py": (
        'def add(a, b):\n    """Add."""\n    return a + b\n',
        '```python\n# -*- coding: latin-1 -*-\ndef add(a, b):\n    """Add two numbers."""\n'
        "    return a + b\n```",
    ),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_DOCUMENT))
async def test_a_document_answer_that_hides_code_in_a_comment_changes_no_code(
    tmp_path: Path, rendered_probe: str, name: str
):
    before, hostile = HOSTILE_DOCUMENT[name]
    (tmp_path / name).write_text(before)
    model = ScriptedModel([hostile] * 12, rendered_probe)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    try:
        async with language_server(tmp_path, {"url": model.url, "model": "scripted"}) as client:
            uri = open_document(client, tmp_path / name)
            lines = types.Range(types.Position(0, 0), types.Position(len(before.splitlines()), 0))
            actions = await list_actions(client, uri, lines)
            action = next(a for a in actions if a.data["kind"] == "document")
            try:
                resolved = await client.code_action_resolve_async(action)
            except JsonRpcException as exc:
                assert "no applicable edit" in str(exc.message), exc.message
            else:
                assert resolved.edit is not None
                for text in edited_texts(client, resolved.edit, tmp_path).values():
                    assert only_documentation(Path(name).suffix, before, text) is not None, text
                    assert "fetch" not in text and "exit" not in text and "coding" not in text, text
    finally:
        model.shutdown()
        model.server_close()
    assert model.requests, "the server never asked the model"
