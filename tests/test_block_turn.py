"""The block turn's handling of an answer's words before its code, on the real test model."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lsp_server.assistant import block_turn
from lsp_server.assistant.block_turn import BlockRequest, BlockTurn
from lsp_server.assistant.conversation import Conversation
from lsp_server.assistant.rewrite import code_block
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import WorkspaceFiles
from lsp_server.engine import Engine, EngineConfig

LOOP = "The function subtracts where it should add. It returns a - b. It returns a - b. It returns a - b."


def test_an_over_long_answer_keeps_its_words_up_to_the_first_repeated_sentence(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(block_turn, "WORDS_MAX_CHARS", 60)
    assert block_turn._unrepeated(LOOP) == "The function subtracts where it should add. It returns a - b. "
    # Without a repeat, the sentence it was stopped in goes; words the model ended itself stay whole.
    cut = "The function subtracts where it should add.\n\nSo every total is wrong, and the sum of"
    assert block_turn._unrepeated(cut) == "The function subtracts where it should add.\n\n"
    short = "It returns a - b. It returns a - b."
    assert block_turn._unrepeated(short) == short
    assert block_turn._words_or_code("x" * 61 + "\n```python\n") and not block_turn._words_or_code("x" * 61)


async def test_words_that_run_on_are_stopped_and_the_answer_goes_on_to_its_code(
    test_model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO, "llama_lsp.block_turn")
    monkeypatch.setattr(block_turn, "WORDS_MAX_CHARS", 30)  # shorter than the words this answer starts with
    engine = Engine(EngineConfig(test_model_path, n_ctx=2048, n_slots=1, completion_slot=False))
    try:
        await engine.ready()
        request = BlockRequest(
            message="This should add its arguments:\n```python\ndef add(a, b):\n    return a - b\n```",
            write="Say in two or three sentences what is wrong with it, then write the corrected function in "
            "one fenced code block.",
            language="python",
            write_tokens=200,
        )
        conversation = Conversation("block")
        blocks: list[str] = []

        def propose(code: str) -> str | None:
            blocks.append(code)
            return None

        turn = BlockTurn(engine, conversation, ToolRunner(WorkspaceFiles([tmp_path])), request, propose)
        result = await turn.run()
    finally:
        engine.close()
    answer = conversation.messages[-1]["content"]
    words, fence, _code = answer.partition("```python\n")
    assert result.finish_reason == "edit" and fence, answer
    assert "no code in the answer: it goes on from an opened fence" in caplog.text  # stopped, not ended
    assert 0 < len(words.strip()) <= 30 + 16  # stopped within a piece of the bound
    assert len(blocks) == 1 and "def add" in blocks[0] and code_block(answer) == blocks[0]
