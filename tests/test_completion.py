"""Inline completion (textDocument/inlineCompletion) over stdio, on the real test model.

The text rules (the window, where a completion ends, the cache) are tested without a model in
test_infill.py; these tests check what an editor sees: the capability, a sensible completion, keystrokes
that re-read only the line being typed, cancellation, chat going first, and the setting.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.lsp import protocol

from .lsp_client import AssistantClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

# completionRecentFiles: on here (off by default), so that these tests see other files in the prompt too.
SERVER_OPTIONS = {
    "model": "qwen2.5-coder-0.5b",
    "contextSize": 4096,
    "slots": 2,
    "warm": False,
    "completionRecentFiles": True,
}

CALC = "import math\n\n\ndef add(a, b):\n    return"


def open_text(client: AssistantClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text))
    )
    return uri


def change_text(client: AssistantClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version, uri=uri),
            [types.TextDocumentContentChangeWholeDocument(text)],
        )
    )


def at_end(text: str) -> types.Position:
    lines = text.split("\n")
    return types.Position(len(lines) - 1, len(lines[-1]))


async def complete(
    client: AssistantClient, uri: str, position: types.Position
) -> list[types.InlineCompletionItem]:
    result = await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
            text_document=types.TextDocumentIdentifier(uri),
            position=position,
        )
    )
    assert isinstance(result, types.InlineCompletionList)
    return list(result.items)


async def test_the_server_offers_inline_completion_and_continues_a_function(
    client: AssistantClient, tmp_path: Path
):
    assert client.server_info.capabilities.inline_completion_provider is not None
    uri = open_text(client, tmp_path / "calc.py", CALC)
    items = await complete(client, uri, at_end(CALC))
    assert len(items) == 1
    text = items[0].insert_text
    assert isinstance(text, str)
    # The 0.5B model returns the sum; its exact spacing is its own.
    assert text.replace(" ", "") == "a+b", text
    assert items[0].range == types.Range(at_end(CALC), at_end(CALC))


async def last_completion(client: AssistantClient) -> dict:
    return (await client.request(protocol.STATS, {}))["lastCompletion"]


async def test_a_keystroke_reads_only_the_line_being_typed(client: AssistantClient, tmp_path: Path):
    body = "".join(f"def f{n}(x):\n    return x * {n}\n\n\n" for n in range(40))
    text = body + "def g(x):\n    return x"
    uri = open_text(client, tmp_path / "many.py", text)
    await complete(client, uri, at_end(text))
    first = await last_completion(client)
    assert first["nPrompt"] > 400 and not first["cached"]
    for version, typed in enumerate((" +", " + 1", " + 10"), start=2):
        change_text(client, uri, text + typed, version)
        await complete(client, uri, at_end(text + typed))
        keystroke = await last_completion(client)
        if keystroke["cached"]:  # typing what the last completion offered: no model call at all
            continue
        # The lines above stay in the completion slot: only the line being typed is read again.
        assert keystroke["nPrompt"] > 400
        assert keystroke["nEvaluated"] < 16, keystroke


async def test_a_cancelled_completion_answers_at_once_and_the_next_one_works(
    client: AssistantClient, tmp_path: Path
):
    long = "".join(f"def h{n}(x):\n    return x - {n}\n\n\n" for n in range(60)) + "def k(x):\n    return"
    uri = open_text(client, tmp_path / "cancel.py", long)
    params = types.InlineCompletionParams(
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        text_document=types.TextDocumentIdentifier(uri),
        position=at_end(long),
    )
    future = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id="completion-to-cancel"
        )
    )
    await asyncio.sleep(1.0)  # reading the file's 1,000 tokens takes longer than this
    started = time.monotonic()
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="completion-to-cancel"))
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(future, 5)
    assert time.monotonic() - started < 0.5
    assert error.value.code == -32800  # RequestCancelled
    await complete(client, uri, at_end(long))  # the engine is free again
    assert (await last_completion(client))["finishReason"] != "cancelled"


async def test_no_completion_with_text_right_of_the_cursor_or_when_turned_off(
    client: AssistantClient, tmp_path: Path
):
    text = "value = compute(alpha, beta, gamma)\n"
    uri = open_text(client, tmp_path / "right.py", text)
    assert await complete(client, uri, types.Position(0, len("value = "))) == []
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"llamaLsp": {"completion": False}})
    )
    other = open_text(client, tmp_path / "off.py", CALC)
    assert await complete(client, other, at_end(CALC)) == []
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"llamaLsp": {"completion": True}})
    )


GEOMETRY = (
    "def rectangle_surface_area(width, height):\n"
    '    """The area of a width x height rectangle."""\n'
    "    return width * height\n"
)


async def test_a_recently_opened_files_chunk_is_in_the_prompt_of_another_file_until_it_closes(
    client: AssistantClient, tmp_path: Path
):
    geometry = open_text(client, tmp_path / "geometry.py", GEOMETRY)
    text = "from geometry import rectangle_surface_area\n\nfloor = rectangle_surface_area("
    uri = open_text(client, tmp_path / "rooms.py", text)
    await complete(client, uri, at_end(text))
    with_other = await last_completion(client)
    # A user sees which chunks went in (assistant/stats), each as path:lines; never the file itself.
    assert "geometry.py:1-3" in with_other["extra"], with_other
    assert not any(place.startswith("rooms.py:") for place in with_other["extra"])
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(geometry)))
    typed = text + "4, "
    change_text(client, uri, typed, 2)
    await complete(client, uri, at_end(typed))
    closed = await last_completion(client)
    if not closed["cached"]:
        assert not any(place.startswith("geometry.py:") for place in closed["extra"]), closed
        assert closed["nPrompt"] < with_other["nPrompt"]


async def test_completion_without_other_files_when_the_setting_is_off(
    client: AssistantClient, tmp_path: Path
):
    open_text(client, tmp_path / "geometry2.py", GEOMETRY.replace("rectangle", "box"))
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"llamaLsp": {"completionRecentFiles": False}})
    )
    try:
        text = "from geometry2 import box_surface_area\n\nfloor = box_surface_area("
        uri = open_text(client, tmp_path / "rooms2.py", text)
        await complete(client, uri, at_end(text))
        assert (await last_completion(client))["extra"] == []
    finally:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"llamaLsp": {"completionRecentFiles": True}})
        )
