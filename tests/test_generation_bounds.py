"""Every model request has a bound a user sets: code actions that write a block again included."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.assistant import actions
from lsp_server.assistant.actions import BLOCK_ATTEMPTS, BlockTooLong
from lsp_server.lsp import protocol

from .lsp_client import SERVER_COMMAND, initialize_params, make_client, open_document

MAX_TOKENS = 16


def test_a_block_may_be_written_again_whole_up_to_four_times_max_tokens():
    fix, tests = actions.BY_NAME["fix"], actions.BY_NAME["tests"]
    assert fix.write_tokens("x = 1\n", 1024) == 1024  # at least maxTokens
    assert fix.write_tokens("x" * 3000, 1024) == 1500  # room for the block again
    assert fix.write_tokens("x" * 12_000, 1024) == 4 * 1024
    with pytest.raises(BlockTooLong, match="maxTokens"):
        fix.write_tokens("x" * 30_000, 1024)  # cannot be written again within the bound
    # New tests need not repeat the code: a long block bounds them the same, and is no reason to refuse.
    assert tests.write_tokens("x" * 30_000, 1024) == 4 * 1024
    assert tests.write_tokens("x = 1\n", 1024) == 2 * 1024  # a test file outgrows its code


def long_function(lines: int) -> str:
    body = "".join(f"    total = total + {n} * value  # step {n}\n" for n in range(lines))
    return f"def long(value):\n    total = 0\n{body}    return total\n"


@pytest.mark.asyncio(loop_scope="function")
async def test_write_tests_on_a_long_block_stops_at_its_bound_and_a_rewrite_too_long_is_refused(
    tiny_model: Path, tmp_path: Path
):
    """The tiny model never stops on its own: each request runs to its bound."""
    source = long_function(60)  # ~2,700 characters: about 1,350 tokens of room before the bound
    (tmp_path / "long.py").write_text(source)
    client = make_client()
    await client.start_io(*SERVER_COMMAND)
    try:
        options = {
            "model": str(tiny_model),
            "contextSize": 16384,
            "maxTokens": MAX_TOKENS,
            "maxToolSteps": 2,
            "cacheDir": str(tmp_path / "cache"),
        }
        await client.initialize_session(initialize_params(tmp_path, options))
        uri = open_document(client, tmp_path / "long.py")
        selection = {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}

        async def run(kind: str) -> JsonRpcException:
            argument = {"uri": uri, "range": selection, "kind": kind}
            with pytest.raises(JsonRpcException) as failed:
                await client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command=protocol.COMMAND_CODE_ACTION, arguments=[argument])
                )
            return failed.value

        tests = await run("tests")
        assert "the model proposed no applicable edit" in tests.message
        totals = (await client.request(protocol.STATS, {}))["totals"]
        # Two tries at the file, each within 4 x maxTokens; no edit-tool turn after them for a test file.
        assert totals["steps"] == BLOCK_ATTEMPTS, totals
        assert 0 < totals["nGenerated"] <= BLOCK_ATTEMPTS * 4 * MAX_TOKENS, totals

        refactor = await run("refactor")
        assert refactor.code == -32803
        assert "maxTokens" in refactor.message and "lines 1-" in refactor.message
        after = (await client.request(protocol.STATS, {}))["totals"]
        assert after["steps"] == totals["steps"]  # refused before any model request
    finally:
        await client.shutdown_session()
