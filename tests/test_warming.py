"""Warming the cache while the user reads (lsp_server.lsp.warming), over stdio on the real test model.

The engine-level guarantees (a request preempts warming; warming never evicts a conversation; warm ==
cold) are tested in test_engine_async.py and test_engine_reuse.py; these tests check what an editor
sees: the status names warm documents, a first question and a follow-up evaluate only themselves, and
closing a document stops its warming.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from lsp_server.lsp import protocol

from .lsp_client import AssistantClient, open_document
from .test_code_actions import DISCOUNT_LINES, list_actions
from .test_completion import at_end, change_text, complete

pytestmark = pytest.mark.asyncio(loop_scope="module")

SERVER_OPTIONS = {"model": "qwen2.5-coder-0.5b", "contextSize": 4096, "slots": 3, "maxTokens": 48}


async def chat(client: AssistantClient, params: dict[str, Any]) -> dict[str, Any]:
    return await client.request(protocol.CHAT, params)


async def wait_until_warm(client: AssistantClient, uri: str, timeout: float = 300) -> None:
    async def poll() -> None:
        while not any(uri in status.get("warm", []) for status in client.statuses):
            await asyncio.sleep(0.05)

    await asyncio.wait_for(poll(), timeout)


async def slot_tokens(client: AssistantClient, key: str) -> int:
    stats = await client.request(protocol.STATS, {})
    return next((s["n_tokens"] for s in stats["engine"]["slots"] if s["key"] == key), 0)


async def test_an_open_document_is_warmed_and_the_first_question_evaluates_only_itself(
    client: AssistantClient, workspace: Path
):
    uri = open_document(client, workspace / "inventory.py")
    await wait_until_warm(client, uri)
    first = await chat(client, {"textDocument": {"uri": uri}, "message": "Which function changes the stock?"})
    stats = first["stats"]
    assert stats["nEvaluated"] < 40, stats  # the question's message, not the system prompt or the file
    assert stats["nReused"] == stats["nPrompt"] - stats["nEvaluated"]

    # After the answer, the conversation with that answer is read in the background: the follow-up
    # evaluates only its own question.
    conversation = first["conversationId"]
    async with asyncio.timeout(120):
        while await slot_tokens(client, conversation) <= stats["nPrompt"]:
            await asyncio.sleep(0.1)
    follow_up = {"message": "Does it check the amount?", "conversationId": conversation}
    second = await chat(client, {"textDocument": {"uri": uri}, **follow_up})
    assert second["stats"]["nEvaluated"] < 40, second["stats"]


async def test_a_code_action_on_a_warm_document_evaluates_only_its_own_request(
    client: AssistantClient, workspace: Path
):
    """What `make eval --warm-first` measures: an action asked for on a file that has been open a while
    reads only its own request, not the system prompt, the tools or the file."""
    uri = open_document(client, workspace / "inventory.py")
    await wait_until_warm(client, uri)
    action = next(a for a in await list_actions(client, uri, DISCOUNT_LINES) if a.data["kind"] == "explain")
    resolved = await client.code_action_resolve_async(action)
    assert resolved.command is not None and resolved.command.arguments[0]["content"].strip()
    last = (await client.request(protocol.STATS, {}))["lastStats"]
    assert last["nEvaluated"] < 120, last  # the instruction and the quoted lines (~80 tokens)
    # The system prompt, the tools and the file (~650 of ~730 tokens) came from the cache.
    assert last["nReused"] == last["nPrompt"] - last["nEvaluated"] > 0.85 * last["nPrompt"]


async def test_closing_a_document_stops_its_warming(client: AssistantClient, workspace: Path):
    uri = open_document(client, workspace / "big.py")  # ~2,000 tokens: several seconds to read
    await asyncio.sleep(1.0)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await asyncio.sleep(0.5)
    key = f"document:{uri}"
    stopped_at = await slot_tokens(client, key)
    await asyncio.sleep(3.0)
    assert await slot_tokens(client, key) == stopped_at  # nothing more is read for it
    assert not any(uri in status.get("warm", []) for status in client.statuses)


async def test_an_opened_document_is_read_into_the_completion_slot(client: AssistantClient, tmp_path: Path):
    text = "".join(f"def f{n}(x):\n    return x * {n}\n\n\n" for n in range(30)) + "def g(x):\n"
    (tmp_path / "typing.py").write_text(text)
    uri = open_document(client, tmp_path / "typing.py")

    async def completion_slot() -> int:
        stats = await client.request(protocol.STATS, {})
        return next(s["n_tokens"] for s in stats["engine"]["slots"] if s["completion"])

    # Warming reads 64 tokens at a time: it is done when the slot holds the file and stops growing.
    async with asyncio.timeout(300):
        held = 0
        while held < 300 or held != await completion_slot():
            held = await completion_slot()
            await asyncio.sleep(3)
    typed = text + "    return"
    change_text(client, uri, typed, 2)
    await complete(client, uri, at_end(typed))
    last = (await client.request(protocol.STATS, {}))["lastCompletion"]
    # The first completion in the file reads only the line being typed and what follows it.
    assert last["nPrompt"] > 300 and last["nEvaluated"] < 16, last


async def test_a_follow_ups_warming_goes_before_the_completion_slots(
    client: AssistantClient, workspace: Path, tmp_path: Path
):
    # Asked at once, the first question finds the file's warmings queued: its completion slot's is
    # ~2,000 tokens. The follow-up's warming, queued after the answer, runs before that one.
    (tmp_path / "reading.py").write_text((workspace / "big.py").read_text())
    uri = open_document(client, tmp_path / "reading.py")
    first = await chat(client, {"textDocument": {"uri": uri}, "message": "What does this file do?"})
    conversation = first["conversationId"]
    async with asyncio.timeout(120):
        while await slot_tokens(client, conversation) <= first["stats"]["nPrompt"]:
            await asyncio.sleep(0.1)
    stats = await client.request(protocol.STATS, {})
    completion = next(s["n_tokens"] for s in stats["engine"]["slots"] if s["completion"])
    assert completion < 1000, completion  # the completion slot's warming has barely started
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
