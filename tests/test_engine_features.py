"""Tool calls, streaming and bad input on the real test model, through the native binding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lsp_server.assistant import prompts
from lsp_server.assistant.rewrite import code_block
from lsp_server.assistant.tools.schemas import TOOL_SCHEMAS
from lsp_server.engine import native

from .conftest import open_engine

READ_FILE_TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the workspace",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        },
    },
}


@pytest.mark.parametrize("tool_choice", ["required", "auto"])
def test_tool_call_round_trips(warm_engine, tool_choice):
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You help with code. Use tools to look at files."},
        {"role": "user", "content": "Read the file src/main.py and tell me what it prints."},
    ]
    request = {
        "messages": messages,
        "tools": [READ_FILE_TOOL],
        "tool_choice": tool_choice,
        "max_tokens": 64,
    }
    first = warm_engine.generate(request)
    assert first["finish_reason"] == "tool_calls"
    assert len(first["tool_calls"]) == 1
    call = first["tool_calls"][0]
    assert call["name"] == "read_file"
    assert call["arguments"] == {"path": "src/main.py"}

    messages.append(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])},
                }
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": call["id"], "content": 'print("hello from main")'})
    final = warm_engine.generate(
        {"messages": messages, "tools": [READ_FILE_TOOL], "tool_choice": "none", "max_tokens": 48}
    )
    assert final["finish_reason"] in ("stop", "length")
    assert final["tool_calls"] == []
    assert "hello" in final["content"].lower()


def test_only_the_first_call_is_kept_unless_parallel_calls_are_asked_for(warm_engine):
    messages = [{"role": "user", "content": "Read src/a.py and src/b.py."}]
    result = warm_engine.generate(
        {
            "messages": messages,
            "tools": [READ_FILE_TOOL],
            "tool_choice": "required",
            "max_tokens": 96,
        }
    )
    assert len(result["tool_calls"]) == 1


def test_streamed_non_ascii_text_arrives_intact(warm_engine):
    pieces: list[str] = []
    messages = [
        {
            "role": "user",
            "content": "Write a Python string constant GREETINGS containing 'Grüße', "
            "'café', '日本語' and the rocket emoji 🚀, as one line of code.",
        }
    ]
    result = warm_engine.generate({"messages": messages, "max_tokens": 48}, pieces.append)
    streamed = "".join(pieces)
    assert "\ufffd" not in streamed
    assert streamed == result["content"]
    # the rocket is three tokens here: the streamer must hold its bytes until the character is whole
    assert "🚀" in streamed and "ü" in streamed and "語" in streamed
    assert len(pieces) > 5


def test_forced_edit_call_carries_the_schema_arguments(warm_engine):
    document = (Path(__file__).resolve().parent.parent / "examples" / "inventory.py").read_text()
    messages = [
        prompts.system_message(),
        prompts.document_message("inventory.py", document),
        {
            "role": "user",
            "content": "Rename the parameter `amount` of restock to `count`. Use the edit tool.",
        },
    ]
    result = warm_engine.generate(
        {
            "messages": messages,
            "tools": [next(s for s in TOOL_SCHEMAS if s["function"]["name"] == "edit")],
            "tool_choice": "required",
            "max_tokens": 200,
        }
    )
    assert result["finish_reason"] == "tool_calls"
    arguments = result["tool_calls"][0]["arguments"]
    assert set(arguments) >= {"path", "old_text", "new_text"}
    assert "amount" in arguments["old_text"] and "count" in arguments["new_text"]


def test_missing_model_file_is_a_clear_error(tmp_path):
    with pytest.raises(native.ModelLoadError, match="not found"):
        native.NativeEngine(tmp_path / "nope.gguf", {})


def test_corrupt_model_file_is_a_clear_error(tmp_path):
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    with pytest.raises(native.ModelLoadError, match="could not load"):
        native.NativeEngine(corrupt, {})


def test_prompt_larger_than_the_context_is_rejected_and_the_engine_keeps_serving(test_model_path):
    engine = open_engine(test_model_path, n_ctx=256, n_slots=1)
    try:
        with pytest.raises(native.ContextOverflow, match="256"):
            engine.generate({"prompt": "word " * 400, "max_tokens": 4})
        assert engine.generate({"prompt": "def add(a, b):", "max_tokens": 4})["tokens"]
    finally:
        engine.close()


@pytest.mark.parametrize(
    "payload",
    [
        b"{not json",
        b"[]",
        b'{"messages": "hi"}',
        b'{"messages": []}',
        b'{"prompt": 3}',
        b'{"prompt": "x", "max_tokens": -1}',
        b'{"messages": [{"role": "user", "content": "x"}], "tool_choice": "sometimes"}',
        b'{"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]}',
        b'{"prompt": "x", "stop": [1]}',
        b'{"messages": [{"role": "user", "content": "x"}], "continue_answer": true}',
    ],
)
def test_invalid_requests_get_errors_not_crashes(warm_engine, payload):
    with pytest.raises(native.InvalidRequest):
        native.raise_for_error(
            native._take_json(
                native._lib.llama_lsp_generate(
                    warm_engine._handle, payload, native._ffi.NULL, native._ffi.NULL
                )
            )
        )
    assert warm_engine.generate({"prompt": "x = 1", "max_tokens": 2})["tokens"]


def test_an_answer_continued_from_its_start_is_the_answer(warm_engine):
    """continue_answer (the block turn's way to the code after words without it): the model goes on from
    the start it is given; from a start the greedy answer wrote, it writes the rest of that answer."""
    messages = [
        {"role": "system", "content": "You help with code."},
        {"role": "user", "content": "Write a Python function that adds two numbers, in a code block."},
    ]
    whole = warm_engine.generate({"messages": messages, "max_tokens": 48})
    fence = whole["content"].index("```python\n") + len("```python\n")
    start = whole["content"][:fence]
    pieces: list[str] = []
    continued = warm_engine.generate(
        {
            "messages": [*messages, {"role": "assistant", "content": start}],
            "continue_answer": True,
            "max_tokens": 40,
        },
        pieces.append,
    )
    # The result is the whole answer, its start included; its code is what the greedy answer wrote (the
    # words after it may differ at a near-tie: the start was read in a batch, not one token at a time).
    assert continued["content"].startswith(start + "def ")
    assert code_block(continued["content"]) == code_block(whole["content"]) != ""
    assert continued["stats"]["n_reused"] > 0  # the question was in the cache
    assert "".join(pieces) == continued["content"][len(start) :]  # streamed: what follows the start, whole
