"""Tool calls written as JSON in an answer's text (lsp_server/engine/tool_calls.py), and that they are
the native engine's own rules: every case here runs through the native functions too
(llama_lsp_test_text), and both must agree. The remote engine uses them without the native library.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.engine import native
from lsp_server.engine.tool_calls import JsonCall, extract_json_call, tool_call_start

TOOLS = ["edit", "create_file"]


def native_start(text: str) -> int:
    """The native tool_call_start (no openers), in characters."""
    n_bytes = int(native.text_function("tool_call_start", text, tool_names=TOOLS)["n"])
    return len(text.encode()[:n_bytes].decode())


def native_extract(text: str) -> JsonCall | None:
    found = native.text_function("extract_json_call", text, tool_names=TOOLS)
    if not found["found"]:
        return None
    return JsonCall(found["name"], json.loads(found["arguments"]), found["rest"])


def extract(text: str) -> JsonCall | None:
    """extract_json_call, checked against the native one: the same call, arguments in the same order."""
    found = extract_json_call(text, TOOLS)
    expected = native_extract(text)
    assert found == expected, text
    if found is not None and expected is not None:
        assert json.dumps(found.arguments) == json.dumps(expected.arguments), text  # order, int or float
    return found


def start(text: str) -> int:
    at = tool_call_start(text, TOOLS)
    assert at == native_start(text), text
    return at


# ---- Where a tool call may begin ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected_at"),
    [
        ('Sure: {"name": "ed', "{"),  # still consistent with a call to edit
        ('Sure:\n```json\n{"na', "```"),
        ('Sure: {"name": "edit", "arguments": {}}', "{"),
        ('x = {"a": 1} and more', None),
        ('{"name": "other"} is not declared', None),
        ("plain text", None),
        # past the native tests' cases
        ("", None),
        ("Sure: `", "`"),  # may become a fence
        ("Sure: ``", "``"),
        ("Use `x` here", None),
        ('```python\n{"name": "edit"}', "{"),  # not a json fence, but a bare call after it
        ('```JSON {"name":"create_', "```"),
        ('{ "name" : "edit" , "arguments"', "{"),
        ('{"name": "edits"}', None),
        ('{"name": "edit_"', None),
        ('{"nam', "{"),
        ('{"names": "edit"}', None),
        ("d = {}", None),
        ('d = {} then {"name"', '{"name"'),
    ],
)
def test_tool_call_start_finds_json_calls(text, expected_at):
    assert start(text) == (len(text) if expected_at is None else text.index(expected_at))


@pytest.mark.parametrize(
    ("text", "expected_at"),
    [
        ('héllo € 😀 {"name": "ed', "{"),
        ('ça:\n```json\n{"name', "```"),
        ("日本語 `", "`"),
        ('😀 d = {"a": 1} ```py', None),
    ],
)
def test_tool_call_start_counts_characters_where_the_native_rule_counts_bytes(text, expected_at):
    assert start(text) == (len(text) if expected_at is None else text.index(expected_at))


# ---- JSON tool calls ----------------------------------------------------------------------------------


def test_a_bare_json_call_is_taken_out_of_the_text():
    found = extract('I will call it. {"name": "edit", "arguments": {"path": "a.py"}}')
    assert found == JsonCall("edit", {"path": "a.py"}, "I will call it. ")


def test_a_fenced_json_call_is_taken_out_with_its_fence():
    found = extract('Here:\n```json\n{"name": "edit", "arguments": {"x": 1}}\n```\nDone.')
    assert found == JsonCall("edit", {"x": 1}, "Here:\n\nDone.")


def test_parameters_and_string_arguments_are_accepted():
    found = extract('{"name": "create_file", "parameters": {"path": "b.py"}}')
    assert found is not None
    assert (found.name, found.arguments) == ("create_file", {"path": "b.py"})
    found = extract('{"name": "edit", "arguments": "{\\"x\\": 2}"}')
    assert found is not None
    assert found.arguments == {"x": 2}


def test_the_outermost_object_wins_and_braces_before_it_do_not_matter():
    found = extract('Use `d = {}` first. {"name": "edit", "arguments": {"code": "return {1: {2: 3}}"}}')
    assert found == JsonCall("edit", {"code": "return {1: {2: 3}}"}, "Use `d = {}` first. ")


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "delete_everything", "arguments": {}}',  # not a declared tool
        '{"name": "edit", "arguments": [1, 2]}',  # arguments that are not an object
        '{"name": 3, "arguments": {}}',
        '{"tool": "edit"}',
        "no call here {",
        "",
        # past the native tests' cases
        '{"name": "edit", "arguments": null}',
        '{"name": "edit", "arguments": "not json"}',
        '{"name": "edit", "arguments": "[1]"}',
    ],
)
def test_what_is_not_a_declared_call_stays_text(text):
    assert extract(text) is None


def test_no_arguments_are_empty_arguments_and_a_call_without_a_fence_close_keeps_the_fence():
    assert extract('{"name": "edit"}') == JsonCall("edit", {}, "")
    found = extract('```json\n{"name": "edit", "arguments": {}}')
    assert found == JsonCall("edit", {}, "```json\n")


def test_characters_of_any_width_around_a_call_stay_whole():
    found = extract('Voilà 😀:\n```json\n{"name": "edit", "arguments": {"text": "€ é 日本"}}\n```\nFini ✓')
    assert found == JsonCall("edit", {"text": "€ é 日本"}, "Voilà 😀:\n\nFini ✓")


def test_arguments_keep_the_order_they_were_written_in_and_a_repeated_key_its_last_value():
    found = extract('{"name": "edit", "arguments": {"b": 1, "a": {"z": 1, "y": 2}, "b": 3}}')
    assert found is not None
    assert json.dumps(found.arguments) == '{"b": 3, "a": {"z": 1, "y": 2}}'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("18446744073709551615", 18446744073709551615),  # the largest 64-bit unsigned integer
        ("18446744073709551616", 1.8446744073709552e19),  # past it: a double, as nlohmann reads it
        ("-9223372036854775809", -9.223372036854776e18),
        ("-0", 0),
        ("1e5", 100000.0),
        ("1e-400", 0.0),
        ('"\\ud83d\\ude00"', "😀"),  # a surrogate pair is one character
        ('"a\\/b"', "a/b"),
    ],
)
def test_numbers_and_escapes_read_as_the_native_parser_reads_them(value, expected):
    found = extract('{"name": "edit", "arguments": {"v": ' + value + "}}")
    assert found is not None
    assert found.arguments["v"] == expected
    assert type(found.arguments["v"]) is type(expected)


@pytest.mark.parametrize(
    "value",
    [
        "NaN",
        "Infinity",
        "-Infinity",
        "1e400",
        "1" + "0" * 400,
        '"\\ud800"',
        '"\\udc00 x"',
        "01",
        "1.",
        '"\t"',
    ],
)
def test_what_the_native_parser_refuses_is_no_call(value):
    assert extract('{"name": "edit", "arguments": {"v": ' + value + "}}") is None


def test_string_arguments_may_open_with_one_byte_order_mark():
    assert extract('{"name": "edit", "arguments": "\ufeff{\\"x\\": 1}"}') == JsonCall("edit", {"x": 1}, "")
    assert extract('{"name": "edit", "arguments": "\ufeff\ufeff{}"}') is None


# ---- Both rules against the native ones, on many texts -----------------------------------------------

FRAGMENTS = [
    "{", "}", "{}", '"name"', '"arguments"', '"parameters"', ":", ",", " ", "\n", '"edit"', '"create_file"',
    '"ed', '"other"', '"x"', "1", "[1]", "null", "NaN", "1e400", '"\\ud800"', '"{\\"a\\": 1}"', "`", "```",
    "```json", "json", "é", "€", "😀", "text",
]  # fmt: skip


def test_both_rules_agree_with_the_native_ones_on_random_texts():
    rng = random.Random(30)
    for _ in range(1500):
        text = "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 14)))
        extract(text)
        start(text)


def test_tool_call_start_agrees_with_the_native_one_at_every_cut_of_an_answer():
    answer = 'Voilà, é:\n```json\n{"name": "create_file", "arguments": {"path": "日本.py"}}\n```\nd = {} `x`'
    for cut in range(len(answer) + 1):
        start(answer[:cut])


# ---- The remote engine --------------------------------------------------------------------------------

REMOTE_WITHOUT_NATIVE = """
import sys, types
from pathlib import Path

import lsp_server

# The package's __init__ imports the local engine; load the remote one on its own.
engine = types.ModuleType("lsp_server.engine")
engine.__path__ = [str(Path(lsp_server.__file__).parent / "engine")]
sys.modules["lsp_server.engine"] = engine
from lsp_server.engine.api import ChatRequest, ToolCall
from lsp_server.engine.remote import StreamedAnswer

assert "lsp_server.engine.native" not in sys.modules, "remote imports native"
assert "cffi" not in sys.modules, "remote imports cffi"

tools = [{"type": "function", "function": {"name": "edit", "parameters": {}}}]
pieces = []
answer = StreamedAnswer(ChatRequest(messages=[], tools=tools), pieces.append)
text = 'Sure.\\n```json\\n{"name": "edit", "arguments": {"path": "a.py"}}\\n```'
for at in range(0, len(text), 3):  # chunks as the stream carries them
    finish_reason = "stop" if at + 3 >= len(text) else None
    choice = {"index": 0, "delta": {"content": text[at : at + 3]}, "finish_reason": finish_reason}
    answer.add({"object": "chat.completion.chunk", "choices": [choice]}, 0.0)
result = answer.result(1.0)
assert "".join(pieces) == "Sure.\\n", pieces
assert result.content == "Sure.", result.content
assert result.tool_calls == [ToolCall("call_0", "edit", {"path": "a.py"})], result.tool_calls
assert result.finish_reason == "tool_calls"
"""


def test_the_remote_engine_takes_json_calls_without_the_native_library(tmp_path: Path):
    env = {**os.environ, "LLAMA_LSP_NATIVE_LIB": str(tmp_path / "no-such-library.so")}
    run = subprocess.run(
        [sys.executable, "-c", REMOTE_WITHOUT_NATIVE], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
