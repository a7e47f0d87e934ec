"""The model's lifecycle over stdio: one load per settings change, no engine leaks, every action answered."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

import lsp_server
from lsp_server.engine import native
from lsp_server.lsp import protocol

from .lsp_client import SERVER_COMMAND, AssistantClient, initialize_params, make_client, open_document

pytestmark = pytest.mark.asyncio(loop_scope="function")


async def start_server(root: Path, options: dict[str, Any]) -> AssistantClient:
    """A server whose client answers workspace/configuration with `options`, like VS Code and Neovim."""
    client = make_client()
    client.set_configuration(options, section="llamaLsp")
    await client.start_io(*SERVER_COMMAND)
    await client.initialize_session(initialize_params(root, {"cacheDir": options["cacheDir"]}))
    return client


def server_pid(client: AssistantClient) -> int:
    process = client._server
    assert process is not None
    return int(process.pid)


def threads_and_rss_mib(pid: int) -> tuple[int, float]:
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) / 1024


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[tuple[Any, Path]]:
    root = tmp_path / "project"
    root.mkdir()
    clients: list[AssistantClient] = []

    async def start(options: dict[str, Any]) -> AssistantClient:
        client = await start_server(root, {"cacheDir": str(tmp_path / "cache"), **options})
        clients.append(client)
        return client

    yield start, root
    for client in clients:
        if client._server is not None and client._server.returncode is None:
            await client.shutdown_session()


@pytest.mark.real_model  # by name, in the server's settings
async def test_a_chat_sent_right_after_initialized_loads_the_model_once_and_its_follow_up_reuses_the_cache(
    session, workspace: Path
):
    start, _root = session
    client = await start({"model": "qwen2.5-coder-0.5b", "contextSize": 4096, "slots": 3, "maxTokens": 24})
    # No waiting for "ready": the chat arrives while the server still asks for the configuration.
    uri = open_document(client, workspace / "big.py")
    first = await client.request(
        protocol.CHAT, {"textDocument": {"uri": uri}, "message": "Summarise this file in one sentence."}
    )
    second = await client.request(
        protocol.CHAT,
        {
            "textDocument": {"uri": uri},
            "message": "Which class owns the worker thread?",
            "conversationId": first["conversationId"],
        },
    )
    assert second["stats"]["nPrompt"] > 1500
    assert second["stats"]["nReused"] >= 0.9 * second["stats"]["nPrompt"], second["stats"]
    stats = await client.request(protocol.STATS, {})
    assert stats["modelLoads"] == 1
    assert stats["version"] == {"server": lsp_server.__version__, "native": native.version()}


async def test_quick_reloads_load_once_per_change_at_most_and_leak_no_engine(session, tiny_model: Path):
    start, _root = session
    options = {"model": str(tiny_model), "contextSize": 512, "slots": 2, "maxTokens": 4}
    client = await start(options)
    await client.wait_for_status(protocol.READY, timeout=60)
    pid = server_pid(client)

    async def reload_ten_times_quickly() -> None:
        for size in [1024, 512] * 5:
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"llamaLsp": {**options, "contextSize": size}})
            )
        # Each change leaves the model loading or ready; a request waits for the newest settings.
        answer = await client.request(protocol.CHAT, {"message": "hi"}, timeout=120)
        assert answer["finishReason"] in ("stop", "length")

    await reload_ten_times_quickly()  # the first round lets the allocator reach its steady state
    before = threads_and_rss_mib(pid)
    loads_before = (await client.request(protocol.STATS, {}))["modelLoads"]
    await reload_ten_times_quickly()
    after = threads_and_rss_mib(pid)
    stats = await client.request(protocol.STATS, {})
    # Ten changes in a row collapse into the load in flight and one for the newest settings.
    assert stats["modelLoads"] - loads_before <= 2, stats
    assert stats["engine"]["n_ctx"] == 512 * 2
    # asyncio's default executor may start one more worker lazily; a leaked engine keeps its own thread,
    # so ten leaks (as before the fix: 9 of 10) would show as many more.
    assert after[0] <= before[0] + 1, f"threads {before[0]} -> {after[0]}"
    assert after[1] - before[1] < 32, f"RSS {before[1]:.0f} -> {after[1]:.0f} MiB"


async def test_reloads_one_after_another_keep_threads_and_memory_flat(session, test_model_path: Path):
    """Each reload of the real model closes the old engine: its threads and KV cache are freed."""
    start, _root = session
    options = {"model": "qwen2.5-coder-0.5b", "contextSize": 2048, "slots": 2, "maxTokens": 4}
    client = await start(options)
    await client.request(protocol.CHAT, {"message": "hi"}, timeout=300)
    pid = server_pid(client)
    samples = []
    for size in [4096, 2048] * 5:
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"llamaLsp": {**options, "contextSize": size}})
        )
        await client.request(protocol.CHAT, {"message": "hi"}, timeout=300)
        samples.append(threads_and_rss_mib(pid))
    stats = await client.request(protocol.STATS, {})
    assert stats["modelLoads"] == 11
    threads = {sample[0] for sample in samples[1::2]}
    assert len(threads) == 1, samples
    rss = [sample[1] for sample in samples[1::2]]  # each at contextSize 2048
    assert max(rss) - min(rss) < 100, samples  # one leaked 0.5B engine would add hundreds of MiB


@pytest.mark.real_model  # by name, in the server's settings
async def test_a_superseded_code_action_command_still_gets_an_answer(session, workspace: Path):
    start, _root = session
    client = await start(
        {"model": "qwen2.5-coder-0.5b", "contextSize": 4096, "slots": 2, "maxTokens": 32, "maxToolSteps": 1}
    )
    uri = open_document(client, workspace / "inventory.py")
    arguments = {
        "uri": uri,
        "range": {"start": {"line": 17, "character": 0}, "end": {"line": 20, "character": 0}},
        "kind": "document",
    }

    def execute() -> asyncio.Future[Any]:
        return asyncio.ensure_future(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=protocol.COMMAND_CODE_ACTION, arguments=[arguments])
            )
        )

    first = execute()
    await asyncio.sleep(1.0)
    second = execute()
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(first, 30)
    assert error.value.code == -32800  # RequestCancelled
    assert "superseded" in error.value.message
    try:  # the newer one runs on to an answer of its own: an edit or an error saying why there is none
        await asyncio.wait_for(second, 300)
    except JsonRpcException as failure:
        assert failure.code == -32803, failure


@pytest.mark.real_model  # by name, in the server's settings
async def test_a_cancelled_code_action_command_stops_and_never_edits(session, workspace: Path):
    start, _root = session
    client = await start({"model": "qwen2.5-coder-0.5b", "contextSize": 4096, "slots": 2, "maxTokens": 256})
    await client.wait_for_status(protocol.READY, timeout=300)
    uri = open_document(client, workspace / "inventory.py")
    arguments = {
        "uri": uri,
        "range": {"start": {"line": 17, "character": 0}, "end": {"line": 20, "character": 0}},
        "kind": "document",
    }
    request = asyncio.ensure_future(
        client.protocol.send_request_async(
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command=protocol.COMMAND_CODE_ACTION, arguments=[arguments]),
            msg_id="action-to-cancel",
        )
    )
    await client.wait_for_status(protocol.BUSY, timeout=60)
    await asyncio.sleep(0.5)
    started = time.monotonic()
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="action-to-cancel"))
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(request, 10)
    assert error.value.code == -32800
    assert time.monotonic() - started < 1.0
    # The turn stopped: the engine is free at once (its info queues behind any running job, and the
    # action would still write for many seconds), and no edit arrives afterwards.
    stats = await client.request(protocol.STATS, {}, timeout=5)
    assert stats["engine"] is not None
    assert stats["totals"]["requests"] == 0  # the action never finished
    await asyncio.sleep(2.0)
    assert client.applied_edits == []


@pytest.mark.real_model  # by name, in the server's settings
async def test_exit_without_shutdown_during_an_answer_ends_the_server_promptly(session, workspace: Path):
    start, _root = session
    client = await start({"model": "qwen2.5-coder-0.5b", "contextSize": 2048, "slots": 2, "maxTokens": 400})
    await client.wait_for_status(protocol.READY, timeout=300)
    process = client._server
    assert process is not None
    seen = len(client.statuses)
    answer = asyncio.ensure_future(
        client.request(protocol.CHAT, {"message": "Count from 1 to 300.", "partialResultToken": "long"})
    )
    # Busy: the engine is working on the answer (reading its prompt, writing, or calling a tool: whatever
    # the 0.5B makes of the question, which streams nothing while it calls tools).
    while not any(status["state"] == protocol.BUSY for status in client.statuses[seen:]):
        assert not answer.done(), answer.result()
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    assert not answer.done(), f"the answer ended before the exit: {answer.result()}"
    started = time.monotonic()
    client.protocol.notify(types.EXIT, None)
    await asyncio.wait_for(process.wait(), 10)
    assert time.monotonic() - started < 3.0
    answer.cancel()
    assert process.returncode == 1  # exit without shutdown, as the LSP specification says


async def test_a_second_initialize_is_refused_and_changes_nothing(session, tiny_model: Path):
    start, root = session
    client = await start({"model": str(tiny_model), "contextSize": 512, "slots": 2, "maxTokens": 4})
    await client.wait_for_status(protocol.READY, timeout=60)
    (root / "a.py").write_text("x = 1\n")
    uri = open_document(client, root / "a.py")
    again = initialize_params(root, {"model": "qwen2.5-coder-0.5b"})
    with pytest.raises(JsonRpcException) as refused:
        await client.protocol.send_request_async(types.INITIALIZE, again)
    assert refused.value.code == -32600  # InvalidRequest
    assert "already initialized" in refused.value.message
    # The open document and the settings are as they were: the actions are listed, on the same model.
    line = types.Range(types.Position(0, 0), types.Position(0, 5))
    listed = await client.text_document_code_action_async(
        types.CodeActionParams(
            types.TextDocumentIdentifier(uri), line, types.CodeActionContext(diagnostics=[])
        )
    )
    assert listed, "the document was dropped"
    stats = await client.request(protocol.STATS, {})
    assert stats["model"] == str(tiny_model)
    answer = await client.request(protocol.CHAT, {"message": "hi", "textDocument": {"uri": uri}}, timeout=60)
    assert answer["finishReason"] == "length"


async def test_requests_queued_when_a_setting_reloads_the_model_run_on_the_new_engine(
    session, tiny_model: Path
):
    start, _root = session
    options = {"model": str(tiny_model), "contextSize": 16384, "slots": 3, "maxTokens": 8000}
    client = await start(options)
    await client.wait_for_status(protocol.READY, timeout=60)
    running = asyncio.ensure_future(
        client.request(protocol.CHAT, {"message": "a", "partialResultToken": "a"})
    )
    while not client.partials.get("a"):
        await asyncio.sleep(0.01)
    queued = [asyncio.ensure_future(client.request(protocol.CHAT, {"message": m})) for m in "bc"]
    await asyncio.sleep(0.3)  # both wait in the engine's queue behind the running answer
    assert not running.done()
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"llamaLsp": {**options, "contextSize": 12288}})
    )
    answers = await asyncio.wait_for(asyncio.gather(*queued), 120)
    assert [answer["finishReason"] for answer in answers] == ["length", "length"]
    assert (await running)["finishReason"] in ("cancelled", "length")  # it ran on the old engine
    stats = await client.request(protocol.STATS, {})
    assert stats["modelLoads"] == 2
    assert stats["engine"]["n_ctx"] == 12288 * 3


async def test_stats_answer_at_once_while_a_long_answer_runs(session, tiny_model: Path):
    start, _root = session
    client = await start({"model": str(tiny_model), "contextSize": 16384, "slots": 2, "maxTokens": 6000})
    await client.wait_for_status(protocol.READY, timeout=60)
    idle = await client.request(protocol.STATS, {})
    running = asyncio.ensure_future(
        client.request(protocol.CHAT, {"message": "a", "partialResultToken": "a"})
    )
    while not client.partials.get("a"):
        await asyncio.sleep(0.01)
    for _ in range(3):
        asked = time.monotonic()
        stats = await client.request(protocol.STATS, {})
        assert time.monotonic() - asked < 0.2
        assert not running.done()  # asked while the answer ran
        assert stats["state"] == protocol.BUSY
        assert stats["engine"]["slots"] == idle["engine"]["slots"]  # as of before the answer began
    await running
    # Once the engine is free (reading ahead after an answer may hold it a moment), read from it again.
    deadline = time.monotonic() + 30
    while (after := await client.request(protocol.STATS, {}))["state"] == protocol.BUSY:
        assert time.monotonic() < deadline, after
        await asyncio.sleep(0.05)
    assert after["engine"]["slots"] != idle["engine"]["slots"]
