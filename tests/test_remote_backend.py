"""The remote backend's own cases: its setting, a llama-server started with only a file (no model named:
the one it serves answers), the faults a real llama-server can show (nothing on the port, a wrong key, a
model it does not serve, killed mid-answer), the faults it cannot be made to show on demand (429 and 5xx,
unreadable events, silence, several models: from a server in this file that fails on purpose), and three
clients sharing one server's prefix cache.

The features themselves (chat, streaming, cancel, code actions, tool calls) run on both backends with
the same assertions: the tests marked `backends("local", "remote")` in test_server and test_code_actions.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig

from harness.llama_server import LlamaServer, free_port
from lsp_server.engine import ChatRequest, EngineError, RemoteConfig
from lsp_server.engine.remote import RemoteEngine
from lsp_server.lsp import protocol, settings

from .lsp_client import SERVER_COMMAND, AssistantClient, initialize_params, make_client, open_document

in_module_loop = pytest.mark.asyncio(loop_scope="module")

MODEL = "qwen2.5-coder-0.5b"
OPTIONS = {"maxTokens": 48, "maxToolSteps": 2}
LONG_ANSWER = "Count from 1 to 300, one number per line."


@asynccontextmanager
async def language_server(
    workspace: Path,
    backend: dict[str, Any],
    env: dict[str, str] | None = None,
    options: dict[str, Any] | None = None,
) -> AsyncIterator[AssistantClient]:
    """One editor's language server, on the given backend (and `options` over OPTIONS), started and
    initialized; shut down after."""
    config = ClientServerConfig(
        server_command=SERVER_COMMAND, client_factory=make_client, server_env={**os.environ, **(env or {})}
    )
    client = await config.start()
    assert isinstance(client, AssistantClient)
    try:
        await client.initialize_session(
            initialize_params(workspace, {**OPTIONS, **(options or {}), "backend": backend})
        )
        await settled(client)
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()


async def settled(client: AssistantClient, after: int = 0) -> dict[str, Any]:
    """The first status after the first `after` ones that says the backend is ready or failed."""
    while True:
        for status in client.statuses[after:]:
            if status["state"] in (protocol.READY, protocol.ERROR):
                return status
        await asyncio.sleep(0.05)


async def chat(client: AssistantClient, params: dict[str, Any]) -> dict[str, Any]:
    return await client.request(protocol.CHAT, params)


async def chat_error(client: AssistantClient, params: dict[str, Any]) -> str:
    with pytest.raises(JsonRpcException) as error:
        await chat(client, params)
    return str(error.value.message)


def last_status(client: AssistantClient) -> dict[str, Any]:
    return client.statuses[-1]


# ---- the setting ---------------------------------------------------------------------------------


def test_the_backend_setting_takes_local_or_a_server_and_never_a_key():
    remote, warnings = settings.merge(
        settings.Settings(),
        {"backend": {"url": "https://team.example/v1/", "model": "coder", "apiKeyEnv": "TEAM_KEY"}},
    )
    assert not warnings
    expected = RemoteConfig(url="https://team.example/v1", model="coder", api_key_env="TEAM_KEY")
    assert remote.backend == expected
    assert remote.engine_fields() == (remote.backend,)  # a new server reloads; local fields do not
    assert settings.merge(remote, {"backend": "local"})[0].backend is None
    for bad in (
        {"url": "team.example:8080", "model": "coder"},  # no scheme
        {"url": "http://team.example/v1", "model": " "},  # a model, but no name
        {"url": "http://team.example/v1", "model": "coder", "apiKeyEnv": "sk-123 secret"},  # a key
        {"url": "http://team.example/v1", "model": "coder", "timeout": 0},
        "remote",
    ):
        kept, warnings = settings.merge(remote, {"backend": bad})
        assert kept.backend == remote.backend and len(warnings) == 1, bad


def test_a_backend_that_names_no_model_leaves_it_to_the_server():
    remote, warnings = settings.merge(settings.Settings(), {"backend": {"url": "http://team.example/v1"}})
    assert not warnings
    assert remote.backend == RemoteConfig(url="http://team.example/v1", model=None)
    assert remote.engine_name == "the model at http://team.example/v1"  # until the server says which


# ---- no model named ----------------------------------------------------------------------------------


@in_module_loop
async def test_a_server_started_with_only_a_file_answers_when_the_setting_names_no_model(
    test_model_path: Path, workspace: Path, tmp_path: Path
):
    server = LlamaServer(test_model_path, None, tmp_path / "server.log", "-c", "2048").start()
    try:
        # llama-server lists the file's path; the status names the file, and says it is ready.
        shown = f"{test_model_path.name} at {server.url}"
        async with language_server(workspace, server.backend()) as client:
            assert last_status(client) == {"state": protocol.READY, "message": f"{shown} ready"}
            assert (await client.request(protocol.STATS, {}))["model"] == shown
            answer = await chat(client, {"message": "Say hi."})
            assert answer["content"] and answer["stats"]["nGenerated"] > 0
        engine = RemoteEngine(RemoteConfig(server.url))
        try:
            info = await engine.ready()
            assert info["model"] == str(test_model_path) and info["model_desc"] == shown
            messages = [{"role": "user", "content": "Say hi."}]
            answer = await engine.generate(ChatRequest(messages=messages, max_tokens=3))
            assert answer.content and answer.stats.n_generated > 0
            # An answer continued from its start (llama-server's assistant prefill) comes back whole, as
            # from the local engine: the code right after the opened fence.
            start = "Here it is:\n\n```python\n"
            asked = [{"role": "user", "content": "Write a Python function that adds two numbers."}]
            continued = await engine.generate(
                ChatRequest(
                    messages=[*asked, {"role": "assistant", "content": start}],
                    max_tokens=16,
                    continue_answer=True,
                )
            )
            assert continued.content.startswith(start + "def "), continued.content
            # keep_going ends the answer where it says, as the local engine's does.
            seen: list[str] = []

            def keep_going(text: str) -> bool:
                seen.append(text)
                return len(text) < 12

            stopped = await engine.generate(
                ChatRequest(messages=asked, max_tokens=200), keep_going=keep_going
            )
            assert stopped.finish_reason == "stop"
            assert stopped.content == seen[-1] and len(stopped.content) >= 12
            assert stopped.stats.n_generated < 200
        finally:
            await engine.aclose()
    finally:
        server.stop()


# ---- faults, against a real server ------------------------------------------------------------------


@in_module_loop
async def test_nothing_on_the_port_says_so_and_the_next_request_finds_the_server_once_it_is_up(
    test_model_path: Path, workspace: Path, tmp_path: Path
):
    server = LlamaServer(test_model_path, MODEL, tmp_path / "server.log", "-c", "4096")
    async with language_server(workspace, server.backend()) as client:
        status = last_status(client)
        assert status["state"] == protocol.ERROR
        assert "could not reach" in status["message"] and server.url in status["message"]
        assert "could not reach" in await chat_error(client, {"message": "Say hi."})
        assert (await client.request(protocol.STATS, {}))["state"] == protocol.ERROR  # still serving
        server.start()
        try:
            answer = await chat(client, {"message": "Say hi."})  # the next request connects again
            assert answer["content"] and answer["stats"]["nPrompt"] > 0
            assert last_status(client)["state"] == protocol.READY
        finally:
            server.stop()


@in_module_loop
async def test_a_wrong_key_names_the_variable_and_the_right_one_works(
    test_model_path: Path, workspace: Path, tmp_path: Path
):
    server = LlamaServer(test_model_path, MODEL, tmp_path / "server.log", "-c", "4096", "--api-key", "s3cret")
    server.start()
    env = {"LLAMA_LSP_WRONG_KEY": "guess", "LLAMA_LSP_RIGHT_KEY": "s3cret"}
    try:
        async with language_server(workspace, server.backend(apiKeyEnv="LLAMA_LSP_WRONG_KEY"), env) as client:
            message = await chat_error(client, {"message": "Say hi."})
            assert "LLAMA_LSP_WRONG_KEY" in message and "401" in message
            assert "guess" not in message  # the key itself is never shown
            assert last_status(client)["state"] == protocol.ERROR
            assert "LLAMA_LSP_WRONG_KEY" in last_status(client)["message"]
            seen = len(client.statuses)
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(
                    settings={"llamaLsp": {"backend": server.backend(apiKeyEnv="LLAMA_LSP_RIGHT_KEY")}}
                )
            )
            assert (await asyncio.wait_for(settled(client, seen), 60))["state"] == protocol.READY
            assert (await chat(client, {"message": "Say hi."}))["content"]
    finally:
        server.stop()


@in_module_loop
async def test_a_server_killed_mid_answer_fails_that_request_clearly_and_a_restarted_one_serves(
    test_model_path: Path, workspace: Path, tmp_path: Path
):
    port = free_port()
    server = LlamaServer(test_model_path, MODEL, tmp_path / "server.log", "-c", "4096", port=port)
    server.start()
    try:
        async with language_server(workspace, server.backend()) as client:
            uri = open_document(client, workspace / "inventory.py")
            answer = asyncio.ensure_future(
                chat(
                    client,
                    {"textDocument": {"uri": uri}, "message": LONG_ANSWER, "partialResultToken": "killed"},
                )
            )
            while not client.partials.get("killed"):
                await asyncio.sleep(0.02)
            server.kill()
            with pytest.raises(JsonRpcException) as error:
                await asyncio.wait_for(answer, 60)
            assert "midway" in error.value.message or "could not reach" in error.value.message
            assert last_status(client)["state"] == protocol.ERROR
            server = LlamaServer(test_model_path, MODEL, tmp_path / "again.log", "-c", "4096", port=port)
            server.start()
            assert (await chat(client, {"textDocument": {"uri": uri}, "message": "Say hi."}))["content"]
            assert last_status(client)["state"] == protocol.READY
    finally:
        server.stop()


# ---- a team on one server -------------------------------------------------------------------------


@in_module_loop
async def test_three_clients_interleaving_follow_ups_all_hit_the_servers_prefix_cache(
    llama_servers: Any, workspace: Path
):
    server = llama_servers.serving(MODEL)
    files = [workspace / "inventory.py", workspace / "test_inventory.py", workspace / "big.py"]
    async with (
        language_server(workspace, server.backend()) as first,
        language_server(workspace, server.backend()) as second,
        language_server(workspace, server.backend()) as third,
    ):
        clients = [first, second, third]
        uris = [open_document(client, path) for client, path in zip(clients, files, strict=True)]
        conversations = []
        for client, uri in zip(clients, uris, strict=True):
            opened = await chat(client, {"textDocument": {"uri": uri}, "message": "What is this file for?"})
            conversations.append(opened["conversationId"])
        for question in ("Name one function in it.", "Is anything in it unused?"):
            for client, uri, conversation in zip(clients, uris, conversations, strict=True):
                follow_up = await chat(
                    client,
                    {"textDocument": {"uri": uri}, "message": question, "conversationId": conversation},
                )
                stats = follow_up["stats"]
                assert stats["nReused"] >= 0.8 * stats["nPrompt"], (uri, stats)


# ---- faults llama-server cannot be made to show on demand --------------------------------------------


class FaultyServer(ThreadingHTTPServer):
    """An OpenAI-compatible endpoint that fails on purpose, one planned behaviour per chat request (the
    last one repeats): "404", "429" and "500" (status errors), "answer" (a streamed "Hello" whose usage has no
    cached-token count), "garbled" (an event that is not JSON, mid-answer), "silent" (nothing for 3 s).
    It lists `models` (one llama-server serves one; a router or vLLM may serve several)."""

    def __init__(self, plan: list[str], models: tuple[str, ...] | list[str] = ("faulty",)):
        super().__init__(("127.0.0.1", 0), _FaultyHandler)
        self.plan = plan
        self.models = list(models)
        self.requests = 0

    @property
    def backend(self) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{self.server_address[1]}/v1", "model": self.models[0], "timeout": 1}

    def next_behaviour(self) -> str:
        self.requests += 1
        return self.plan[min(self.requests, len(self.plan)) - 1]


class _FaultyHandler(BaseHTTPRequestHandler):
    server: FaultyServer

    def log_message(self, *_args: Any) -> None:  # quiet
        pass

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        models = [
            {"id": name, "object": "model", "created": 0, "owned_by": "tests"} for name in self.server.models
        ]
        self._json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not self.path.endswith("/chat/completions"):  # no llama-server extras (/apply-template), as vLLM
            self._json(404, {"error": {"message": "not found", "type": "test"}})
            return
        behaviour = self.server.next_behaviour()
        if behaviour in ("404", "429", "500"):
            error = {"error": {"message": f"planned {behaviour}", "type": "test"}}
            self._json(int(behaviour), error, {"retry-after-ms": "10"})
            return
        if behaviour == "silent":
            time.sleep(3)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "faulty"}
        self._event({**chunk, "choices": [{"index": 0, "delta": {"content": "Hel"}}]})
        if behaviour == "garbled":
            self.wfile.write(b"data: {this is not json\n\n")
            return
        self._event({**chunk, "choices": [{"index": 0, "delta": {"content": "lo"}, "finish_reason": "stop"}]})
        usage = {"prompt_tokens": 700, "completion_tokens": 2, "total_tokens": 702}
        self._event({**chunk, "choices": [], "usage": usage})
        self.wfile.write(b"data: [DONE]\n\n")

    def _event(self, data: Any) -> None:
        self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()


@contextmanager
def serving(server: FaultyServer) -> Iterator[FaultyServer]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def faulty(request: pytest.FixtureRequest) -> Iterator[FaultyServer]:
    with serving(FaultyServer(list(request.param))) as server:
        yield server


@in_module_loop
async def test_a_server_of_several_models_needs_the_setting_to_name_one():
    with serving(FaultyServer(["answer"], models=["coder-32b", "coder-7b"])) as several:
        url = several.backend["url"]
        unnamed = RemoteEngine(RemoteConfig(url))
        with pytest.raises(EngineError) as error:
            await unnamed.ready()
        assert error.value.kind == "model_not_found"
        assert f"{url} serves several models (coder-32b, coder-7b): set llamaLsp.backend.model" in str(
            error.value
        )
        named = RemoteEngine(RemoteConfig(url, "coder-7b"))
        assert (await named.ready())["model_desc"] == f"coder-7b at {url}"
        answer = await named.generate(ChatRequest(messages=[{"role": "user", "content": "Say hi."}]))
        assert answer.content == "Hello"
        await asyncio.gather(unnamed.aclose(), named.aclose())


@in_module_loop
async def test_a_server_that_changed_its_model_is_followed_when_the_setting_names_none():
    with serving(FaultyServer(["404", "answer"], models=["/models/coder-7b.gguf"])) as server:
        engine = RemoteEngine(RemoteConfig(server.backend["url"]))
        try:
            assert (await engine.ready())["model_desc"] == f"coder-7b.gguf at {server.backend['url']}"
            server.models = ["coder-14b"]  # restarted with another model: a chat naming the old one is 404
            request = ChatRequest(messages=[{"role": "user", "content": "Say hi."}])
            with pytest.raises(EngineError) as error:
                await engine.generate(request)
            assert "no longer serves /models/coder-7b.gguf" in str(error.value)
            assert (
                await engine.generate(request)
            ).content == "Hello"  # the next request asks for the new one
            assert (await engine.info())["model"] == "coder-14b"
        finally:
            await engine.aclose()


@in_module_loop
@pytest.mark.parametrize("faulty", [["429", "429", "answer"]], indirect=True)
async def test_429_is_retried_with_backoff_and_an_unreported_cache_is_unknown(
    faulty: FaultyServer, workspace: Path
):
    async with language_server(workspace, faulty.backend) as client:
        answer = await chat(client, {"message": "Say hi.", "partialResultToken": "retried"})
        assert answer["content"] == "Hello" and faulty.requests == 3
        assert [p["delta"] for p in client.partials["retried"]] == ["Hel", "lo"]
        assert answer["stats"]["nPrompt"] == 700 and answer["stats"]["nReused"] is None  # unknown, not 0
        assert (await client.request(protocol.STATS, {}))["totals"]["cacheHitRate"] is None


@in_module_loop
@pytest.mark.parametrize(
    ("faulty", "says"),
    [
        (["500"], "failed after 2 retries: planned 500"),
        (["garbled"], "broke off midway"),
        (["silent"], "sent nothing for 1 s"),
    ],
    indirect=["faulty"],
)
async def test_a_failing_server_fails_the_request_clearly_and_the_status_says_so(
    faulty: FaultyServer, says: str, workspace: Path
):
    async with language_server(workspace, faulty.backend) as client:
        assert says in await chat_error(client, {"message": "Say hi."})
        assert last_status(client)["state"] == protocol.ERROR and says in last_status(client)["message"]
        assert (await client.request(protocol.STATS, {}))["state"] == protocol.ERROR  # still serving


@in_module_loop
async def test_a_model_the_server_does_not_serve_is_named_with_the_ones_it_does(
    llama_servers: Any, workspace: Path
):
    server = llama_servers.serving(MODEL)
    async with language_server(workspace, {**server.backend(), "model": "gpt-4o"}) as client:
        status = last_status(client)
        assert status["state"] == protocol.ERROR
        assert f"serves {MODEL}, not gpt-4o" in status["message"]
        assert "llamaLsp.backend.model" in await chat_error(client, {"message": "Say hi."})
