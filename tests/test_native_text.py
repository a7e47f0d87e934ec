"""The engine's pure text functions, checked without a model.

They run through llama_lsp_test_text, which calls the same code the engine runs while it answers:
UTF-8 completion of streamed text, stop-string overlap, where a tool call may begin, JSON tool calls
written without the template's markup, and the streamer that decides what may be sent yet.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from lsp_server.engine import native


def call(function: str, text: str | bytes, **args: Any) -> dict[str, Any]:
    if isinstance(text, str):
        return native.text_function(function, text, **args)
    lib = native._load()  # bytes that need not be UTF-8
    raw = lib.llama_lsp_test_text(function.encode(), text, len(text), json.dumps(args).encode())
    return native.raise_for_error(native._take_json(raw))


def utf8_prefix(data: bytes) -> int:
    return int(call("utf8_complete_prefix", data)["n"])


def overlap(text: str, stops: list[str]) -> int:
    return int(call("stop_overlap", text, stops=stops)["n"])


def stream(text: str, cuts: list[int] | None = None, **args: Any) -> list[str]:
    """The pieces sent while the answer grows to each cut (every byte by default), then ends."""
    data = text.encode()
    if cuts is None:
        cuts = list(range(1, len(data) + 1))
    return list(call("stream", data, cuts=cuts, **args)["pieces"])


# ---- UTF-8 --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0),
        (b"abc", 3),
        (b"a\xc3", 1),  # the first byte of é
        (b"a\xc3\xa9", 3),
        (b"\xe2\x82", 0),  # two bytes of €
        (b"x\xe2\x82\xac", 4),
        (b"\xf0\x9f\x98", 0),  # three bytes of an emoji
        (b"\xf0\x9f\x98\x80", 4),
        (b"ok\xf0", 2),
    ],
)
def test_utf8_prefix_stops_before_an_unfinished_character(data, expected):
    assert utf8_prefix(data) == expected


def test_utf8_prefix_is_the_last_character_boundary_at_every_cut():
    text = "aé€😀 z\u00ff\U0001f600ß\u4e2d"
    data = text.encode()
    boundaries = [0]
    for ch in text:
        boundaries.append(boundaries[-1] + len(ch.encode()))
    for cut in range(len(data) + 1):
        expected = max(b for b in boundaries if b <= cut)
        assert utf8_prefix(data[:cut]) == expected, cut


# ---- Stop strings -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "stops", "expected"),
    [
        ("hello wor", ["world"], 3),
        ("hello", ["xyz"], 0),
        ("hello w", ["world", "low"], 1),
        ("hello", ["low", "lo"], 2),  # the longest overlap over all stops
        ("ab", ["abc"], 2),
        ("", ["abc"], 0),
        ("abc", [], 0),
        ("x</s", ["</stop>", "</s>"], 3),
    ],
)
def test_stop_overlap_is_the_longest_tail_that_starts_a_stop_string(text, stops, expected):
    assert overlap(text, stops) == expected


def test_stop_overlap_matches_a_brute_force_reference():
    def reference(text: str, stops: list[str]) -> int:
        best = 0
        for stop in stops:
            for n in range(min(len(stop) - 1, len(text)), 0, -1):
                if text.endswith(stop[:n]):
                    best = max(best, n)
                    break
        return best

    rng = random.Random(11)
    for _ in range(300):
        text = "".join(rng.choice("ab<") for _ in range(rng.randint(0, 8)))
        stops = [
            "".join(rng.choice("ab<") for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(1, 3))
        ]
        assert overlap(text, stops) == reference(text, stops), (text, stops)


# ---- Where a tool call may begin ----------------------------------------------------------------------

OPENER = "<tool_call>"


@pytest.mark.parametrize(
    ("text", "expected_at"),
    [
        ("Let me edit it.\n<tool_call>\n{", "<tool_call>"),
        ("Let me edit it. <tool_", "<tool_"),  # a text that ends with part of the opener
        ('Sure: {"name": "ed', "{"),  # still consistent with a call to edit
        ('Sure:\n```json\n{"na', "```"),
        ('Sure: {"name": "edit", "arguments": {}}', "{"),
        ('x = {"a": 1} and more', None),
        ('{"name": "other"} is not declared', None),
        ("plain text", None),
    ],
)
def test_tool_call_start_finds_openers_and_json_calls(text, expected_at):
    n = call("tool_call_start", text, openers=[OPENER], tool_names=["edit", "create_file"])["n"]
    data = text.encode()
    assert n == (len(data) if expected_at is None else data.index(expected_at.encode()))


# ---- JSON tool calls ----------------------------------------------------------------------------------

TOOLS = ["edit", "create_file"]


def extract(text: str) -> dict[str, Any]:
    return call("extract_json_call", text, tool_names=TOOLS)


def test_a_bare_json_call_is_taken_out_of_the_text():
    found = extract('I will call it. {"name": "edit", "arguments": {"path": "a.py"}}')
    assert found["found"] is True
    assert found["name"] == "edit"
    assert json.loads(found["arguments"]) == {"path": "a.py"}
    assert found["rest"] == "I will call it. "


def test_a_fenced_json_call_is_taken_out_with_its_fence():
    found = extract('Here:\n```json\n{"name": "edit", "arguments": {"x": 1}}\n```\nDone.')
    assert found["found"] is True
    assert json.loads(found["arguments"]) == {"x": 1}
    assert found["rest"] == "Here:\n\nDone."


def test_parameters_and_string_arguments_are_accepted():
    found = extract('{"name": "create_file", "parameters": {"path": "b.py"}}')
    assert found["name"] == "create_file"
    assert json.loads(found["arguments"]) == {"path": "b.py"}
    found = extract('{"name": "edit", "arguments": "{\\"x\\": 2}"}')
    assert json.loads(found["arguments"]) == {"x": 2}


def test_the_outermost_object_wins_and_braces_before_it_do_not_matter():
    found = extract('Use `d = {}` first. {"name": "edit", "arguments": {"code": "return {1: {2: 3}}"}}')
    assert found["found"] is True
    assert json.loads(found["arguments"]) == {"code": "return {1: {2: 3}}"}
    assert found["rest"] == "Use `d = {}` first. "


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "delete_everything", "arguments": {}}',  # not a declared tool
        '{"name": "edit", "arguments": [1, 2]}',  # arguments that are not an object
        '{"name": 3, "arguments": {}}',
        '{"tool": "edit"}',
        "no call here {",
        "",
    ],
)
def test_what_is_not_a_declared_call_stays_text(text):
    assert extract(text) == {"found": False}


# ---- Streaming ----------------------------------------------------------------------------------------


def test_streamed_pieces_are_whole_characters_that_add_up_to_the_text():
    text = "héllo € wörld 😀 done"
    pieces = stream(text, final=text)
    assert "".join(pieces) == text
    assert all("\ufffd" not in piece for piece in pieces)
    assert len(pieces) > 5  # sent as it grew, not all at the end


def test_the_start_of_a_stop_string_is_never_sent():
    text = "abc STOP"
    # The engine cuts the answer at a stop string before the streamer sees all of it.
    pieces = stream(text, cuts=list(range(1, len("abc STO") + 1)), stops=["STOP"])
    assert "".join(pieces) == "abc "
    assert not any("S" in piece for piece in pieces)


def test_with_tools_only_the_text_before_a_json_call_is_sent_without_trailing_space():
    text = 'Sure.\n{"name": "edit", "arguments": {"path": "a.py"}}'
    pieces = stream(text, tools=True, openers=[OPENER], tool_names=TOOLS, final="Sure.")
    assert "".join(pieces) == "Sure."


def test_with_tools_nothing_of_an_opener_is_sent():
    text = "Let me fix it. <tool_call>\n" + '{"name": "edit", "arguments": {}}\n</tool_call>'
    pieces = stream(text, tools=True, openers=[OPENER], tool_names=TOOLS)
    assert "".join(pieces) == "Let me fix it."


def test_with_tools_leading_whitespace_is_not_sent():
    pieces = stream("\n\n  Answer here", tools=True, openers=[OPENER], tool_names=TOOLS, final="Answer here")
    assert "".join(pieces) == "Answer here"


def test_an_unknown_text_function_is_an_invalid_request():
    with pytest.raises(native.InvalidRequest):
        call("no_such_function", "x")
