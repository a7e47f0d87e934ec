"""The language server over stdio, driven like an editor drives it, on the real test model."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.lsp import protocol

from .lsp_client import (
    SERVER_COMMAND,
    AssistantClient,
    initialize_params,
    make_client,
    open_document,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER_OPTIONS = {
    "model": "qwen2.5-coder-0.5b",
    "contextSize": 4096,
    "slots": 3,
    "maxTokens": 64,
    "maxToolSteps": 4,
}


async def chat(client: AssistantClient, params: dict[str, Any]) -> dict[str, Any]:
    return await client.request(protocol.CHAT, params)


async def test_capabilities_advertise_code_actions_with_resolve_and_the_command(client: AssistantClient):
    capabilities = client.server_info.capabilities  # type: ignore[attr-defined]
    assert capabilities.code_action_provider.resolve_provider is True
    assert types.CodeActionKind.QuickFix in capabilities.code_action_provider.code_action_kinds
    assert protocol.COMMAND_CODE_ACTION in capabilities.execute_command_provider.commands
    assert capabilities.text_document_sync is not None


@pytest.mark.backends("local", "remote")
async def test_chat_streams_partial_results_and_returns_stats(client: AssistantClient, workspace: Path):
    uri = open_document(client, workspace / "inventory.py")
    result = await chat(
        client,
        {
            "textDocument": {"uri": uri},
            "message": "What does restock do?",
            "partialResultToken": "chat-stream",
        },
    )
    deltas = [value["delta"] for value in client.partials["chat-stream"]]
    assert len(deltas) > 3
    assert "".join(deltas) == result["content"]
    assert result["finishReason"] in ("stop", "length")
    assert result["conversationId"]
    assert result["stats"]["nPrompt"] > 100 and result["stats"]["nGenerated"] > 0
    assert result["stats"]["nDrafted"] >= result["stats"]["nAccepted"] >= 0


@pytest.mark.backends("local", "remote")
async def test_second_turn_reuses_most_of_its_prompt(client: AssistantClient, workspace: Path):
    uri = open_document(client, workspace / "big.py")
    first = await chat(
        client, {"textDocument": {"uri": uri}, "message": "Summarise this file in one sentence."}
    )
    second = await chat(
        client,
        {
            "textDocument": {"uri": uri},
            "message": "Which class owns the worker thread?",
            "conversationId": first["conversationId"],
        },
    )
    stats = second["stats"]
    assert stats["nPrompt"] > 1500
    assert stats["nReused"] >= 0.9 * stats["nPrompt"], stats
    # The "ready" status that ends the turn carries this turn's stats, for status bars.
    ready = [status for status in client.statuses if status["state"] == protocol.READY][-1]
    assert (ready["lastStats"]["nPrompt"], ready["lastStats"]["nReused"]) == (
        stats["nPrompt"],
        stats["nReused"],
    )


async def test_a_document_change_is_appended_as_a_diff_and_the_prefix_is_reused(
    client: AssistantClient, workspace: Path
):
    path = workspace / "inventory.py"
    uri = path.as_uri()
    first = await chat(client, {"textDocument": {"uri": uri}, "message": "List the functions."})
    text = path.read_text().replace("def restock(", "def replenish(")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    second = await chat(
        client,
        {"textDocument": {"uri": uri}, "message": "What changed?", "conversationId": first["conversationId"]},
    )
    assert second["stats"]["nReused"] >= 0.7 * second["stats"]["nPrompt"]
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=path.read_text())],
        )
    )


async def test_stale_versions_are_rejected_not_applied(client: AssistantClient, workspace: Path):
    path = workspace / "inventory.py"
    uri = path.as_uri()
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(17, 0), types.Position(19, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    document = next(a for a in actions if a.title == "Llama: Document")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=10),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(text=path.read_text() + "\n# edited\n")
            ],
        )
    )
    with pytest.raises(JsonRpcException) as error:
        await client.code_action_resolve_async(document)
    assert error.value.code == -32801  # ContentModified
    assert "changed" in error.value.message


@pytest.mark.parametrize(
    ("method", "params"),
    [
        (protocol.CHAT, {}),
        (protocol.CHAT, {"message": 3}),
        (protocol.CHAT, {"message": "hi", "textDocument": {"uri": "file:///nowhere/missing.py"}}),
        (protocol.CHAT, {"message": "hi", "range": {"start": {"line": 0, "character": 0}}}),
        (protocol.CHAT, {"message": "hi", "conversationId": 7}),
        (protocol.CHAT, ["not", "an", "object"]),
        (types.CODE_ACTION_RESOLVE, types.CodeAction(title="x", data={"kind": "nonsense"})),
        (types.CODE_ACTION_RESOLVE, types.CodeAction(title="x", data=None)),
        (
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command=protocol.COMMAND_CODE_ACTION, arguments=[]),
        ),
        (
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(
                command=protocol.COMMAND_CODE_ACTION, arguments=[{"uri": "file:///x.py", "kind": "fix"}]
            ),
        ),
    ],
)
async def test_malformed_params_get_invalid_params_and_the_server_keeps_serving(
    client: AssistantClient, method, params
):
    with pytest.raises(JsonRpcException) as error:
        await client.request(method, params)
    assert error.value.code == -32602, error.value.message
    assert error.value.message
    stats = await client.request(protocol.STATS, {})
    assert stats["state"] in (protocol.READY, protocol.BUSY)


@pytest.mark.backends("local", "remote")
async def test_cancel_in_the_middle_of_an_answer_answers_within_a_second(client: AssistantClient):
    future = asyncio.ensure_future(
        client.protocol.send_request_async(
            protocol.CHAT,
            # A long answer in prose on both backends: asked to count, the 0.5B served by llama-server
            # (on an Intel Xeon with AMX) calls a tool instead, and nothing streams.
            {
                "message": "Write a long story about a robot who learns to paint.",
                "partialResultToken": "cancel-me",
            },
            msg_id="chat-to-cancel",
        )
    )

    async def first_piece() -> None:
        while not client.partials.get("cancel-me"):
            await asyncio.sleep(0.02)

    await asyncio.wait_for(first_piece(), 120)
    started = time.monotonic()
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="chat-to-cancel"))
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(future, 5)
    assert time.monotonic() - started < 1.0
    assert error.value.code == -32800  # RequestCancelled
    assert (await chat(client, {"message": "Say hi."}))["content"]  # the engine is free again


async def test_a_failing_feature_answers_an_error_and_the_server_survives(
    client: AssistantClient, workspace: Path
):
    huge = workspace / "huge.py"
    huge.write_text("value = 1\n" * 4000)  # far more tokens than a 4096-token slot holds
    uri = open_document(client, huge)
    with pytest.raises(JsonRpcException) as error:
        await chat(client, {"textDocument": {"uri": uri}, "message": "Explain."})
    assert "context" in error.value.message
    assert (await chat(client, {"message": "Say hi."}))["finishReason"] in ("stop", "length")


async def test_a_missing_model_is_reported_with_the_model_to_install_and_requests_fail_clearly(
    tmp_path: Path,
):
    client = make_client()
    empty_cache = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "empty-cache")}  # no models installed
    await client.start_io(*SERVER_COMMAND, env=empty_cache)
    try:
        options = {"model": "qwen2.5-coder-0.5b", "cacheDir": str(tmp_path / "cache")}
        await client.initialize_session(initialize_params(tmp_path, options))
        status = await client.wait_for_status(protocol.ERROR, timeout=60)
        assert status["installModel"] == "qwen2.5-coder-0.5b"
        assert "llama-lsp model install qwen2.5-coder-0.5b" in status["message"]
        with pytest.raises(JsonRpcException) as error:
            await chat(client, {"message": "hi"})
        assert error.value.code == -32803  # RequestFailed
        assert "llama-lsp model install" in error.value.message
    finally:
        await client.shutdown_session()


async def test_a_request_without_params_is_accepted():
    """JSON-RPC lets a request with no arguments leave "params" out, as vscode-jsonrpc does."""
    from pygls.protocol import JsonRPCRequestMessage

    from lsp_server.lsp.lsp_json import plain_json_converter

    message = {"jsonrpc": "2.0", "id": 1, "method": protocol.STATS}
    assert plain_json_converter().structure(message, JsonRPCRequestMessage).params is None


async def test_a_diagnostic_with_an_empty_message_still_offers_fix(client: AssistantClient, workspace: Path):
    uri = open_document(client, workspace / "inventory.py")
    empty = types.Diagnostic(range=types.Range(types.Position(18, 0), types.Position(18, 5)), message="")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=empty.range,
            context=types.CodeActionContext(diagnostics=[empty]),
        )
    )
    assert actions is not None
    assert actions[0].title == "Llama: Fix"
