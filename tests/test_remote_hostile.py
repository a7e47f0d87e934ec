"""The remote backend against a hostile server: one that plays an attacker (or a broken proxy), not a
stand-in for llama-server. It drips deltas forever, sends only keep-alives, streams a 300 MB line,
8,000 deltas, 20 MB error bodies that echo the key, and errors that echo the URL's credentials.

Each request must end within its deadline (RemoteConfig.deadline_s) + 1 s, grow this process's peak RSS by
less than 64 MB (VmHWM, reset through /proc/self/clear_refs before the request, against VmRSS then),
spend under 0.2 s of the event loop's thread in delta handling for 8,000 deltas (thread CPU time around
each `StreamedAnswer.add`), and show no message longer than 4 KB and no key or password: not in the error,
not in any log record, not in the status or the server's log (through a real language server).

The hostile server runs in its own process (`python -m tests.test_remote_hostile`), so that its memory
and CPU are not this process's; the behaviour is the first segment of the URL's path.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lsp_server.engine import ChatRequest, EngineError, RemoteConfig, remote
from lsp_server.engine.api import MESSAGE_LIMIT
from lsp_server.engine.tool_calls import CallStartTracker, tool_call_start
from lsp_server.lsp import protocol, settings

from .test_remote_backend import chat_error, language_server

KEY_ENV = "LLAMA_LSP_HOSTILE_KEY"
KEY = "sk-hostile-5e1f0c9a27b34d68"
PASSWORD = "pw-hostile-90c2e7"
MODEL = "hostile"
TIMEOUT_S = 1.0
RSS_GROWTH_LIMIT_MB = 64
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def many_deltas() -> list[str]:
    """8,000 deltas that keep the tool-call hold-back busy: openings that fail at once, a "{" held back
    over 2,000 deltas of white space, a fence held back over 1,000 backticks, a name that nearly
    matches; no call in the end, so all of it is shown."""
    deltas = ["see {x} and `y` "] * 2000
    deltas += ["{"] + [" "] * 2000 + ["x "]
    deltas += ["```"] + ["`"] * 1000 + ["x "]
    deltas += ['{"name": "rea', "d_fil", 'es" ']
    return deltas + ["word "] * (8000 - len(deltas))


# ---- the hostile server (its own process) -------------------------------------------------------------


class HostileServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hanging up mid-answer is what these tests expect of it


class _Hostile(BaseHTTPRequestHandler):
    def log_message(self, *_args: Any) -> None:
        pass

    def do_GET(self) -> None:
        models = {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "x"}]}
        self._send_json(200, json.dumps(models).encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        getattr(self, "_" + self.path.split("/")[1])()

    # what the server echoes: the key (it knows it) and the credentials it was sent
    def _echo(self) -> str:
        sent = self.headers.get("Authorization", "")
        if sent.startswith("Basic "):
            sent += " = " + base64.b64decode(sent[6:]).decode()
        return f"the key is {os.environ.get(KEY_ENV)}; you sent {sent}"

    def _send_json(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _start_events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

    def _event(self, delta: dict[str, Any], finish_reason: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        chunk = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": MODEL,
            "choices": [choice],
        }
        self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")

    def _drip(self) -> None:  # a token every 0.2 s, forever: the answer stops at maxTokens
        self._start_events()
        while True:
            self._event({"content": "drip "})
            time.sleep(0.2)

    def _empty_drip(self) -> None:  # an empty delta every 0.2 s, forever: the deadline ends it
        self._start_events()
        while True:
            self._event({"content": ""})
            time.sleep(0.2)

    def _keepalive(self) -> None:  # only SSE comments, forever
        self._start_events()
        while True:
            self.wfile.write(b": keep-alive\n\n")
            time.sleep(0.2)

    def _huge_line(self) -> None:  # one 300 MB line, written 64 KB at a time (never held whole here)
        self._start_events()
        self.wfile.write(b'data: {"choices": [{"index": 0, "delta": {"content": "')
        block = b"a" * (64 << 10)
        for _ in range((300 << 20) // len(block)):
            self.wfile.write(block)
        self.wfile.write(b'"}}]}\n\n')

    def _many_deltas(self) -> None:  # 8,000 deltas, each written (and flushed) on its own
        self._start_events()
        for delta in many_deltas():
            self._event({"content": delta})
        self._event({}, "stop")
        self.wfile.write(b"data: [DONE]\n\n")

    def _huge_error(self, status: int) -> None:  # 20 MB of error message that begins with the key
        head = json.dumps({"error": {"type": "hostile", "message": self._echo() + " "}})[:-3].encode()
        filler, tail = b"x" * (1 << 20), b'"}}'
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(head) + 20 * len(filler) + len(tail)))
        self.end_headers()
        self.wfile.write(head)
        for _ in range(20):
            self.wfile.write(filler)
        self.wfile.write(tail)

    def _error401(self) -> None:
        self._huge_error(401)

    def _error500(self) -> None:
        self._huge_error(500)

    def _error_event(self) -> None:  # an error inside the stream, echoing the key
        self._start_events()
        self._event({"content": "Hel"})
        self.wfile.write(b"data: " + json.dumps({"error": {"message": self._echo()}}).encode() + b"\n\n")


def serve() -> None:
    server = HostileServer(("127.0.0.1", 0), _Hostile)
    print(server.server_address[1], flush=True)
    server.serve_forever()


@pytest.fixture(scope="module")
def hostile_port() -> Iterator[int]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.test_remote_hostile"],
        cwd=Path(__file__).parent.parent,
        env={**os.environ, KEY_ENV: KEY},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline())
    finally:
        process.kill()
        process.wait()


# ---- measuring -------------------------------------------------------------------------------------


def _status_kb(field: str) -> int:
    found = re.search(rf"^{field}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    assert found, field
    return int(found.group(1))


@contextmanager
def peak_rss_growth_mb() -> Iterator[list[float]]:
    """The growth of this process's peak RSS over the block (one value, in MB, once it ends)."""
    Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
    before = _status_kb("VmRSS")
    growth: list[float] = []
    yield growth
    growth.append((_status_kb("VmHWM") - before) / 1024)


def assert_shown_safely(texts: list[str]) -> None:
    """Messages a user or a log may see: none over 4 KB, none with the key or the password."""
    for text in texts:
        assert len(text.encode()) <= MESSAGE_LIMIT, text[:200]
        assert KEY not in text and PASSWORD not in text, text[:200]


def engine_for(port: int, behaviour: str, credentials: str = "") -> remote.RemoteEngine:
    url = f"http://{credentials}127.0.0.1:{port}/{behaviour}/v1"
    return remote.RemoteEngine(RemoteConfig(url, MODEL, api_key_env=KEY_ENV, timeout_s=TIMEOUT_S))


async def ask(engine: remote.RemoteEngine, max_tokens: int, pieces: list[str] | None = None) -> Any:
    """The engine's answer, or the EngineError it raised."""
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}], tools=TOOLS, max_tokens=max_tokens)
    try:
        return await engine.generate(request, (pieces if pieces is not None else []).append)
    except EngineError as exc:
        return exc


# ---- the cases -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("behaviour", "max_tokens", "says"),
    [
        ("drip", 3, None),  # ends at maxTokens, finish_reason "length"
        ("empty_drip", 3, "did not finish within 4 s"),
        ("keepalive", 3, "did not finish within 4 s"),
        ("huge_line", 64, "sent a line of more than 1 MiB: refused"),
        # The body, cut where reading stopped, is not JSON: shown as text (its start).
        (
            "error401",
            64,
            'refused the request (401 {"error": {"type": "hostile", "message": "the key is ***; ',
        ),
        (
            "error500",
            64,
            'failed after 2 retries: {"error": {"type": "hostile", "message": "the key is ***; ',
        ),
        ("error_event", 64, "failed midway through the answer: the key is ***"),
    ],
)
async def test_a_hostile_server_cannot_hang_flood_or_leak(
    hostile_port: int,
    behaviour: str,
    max_tokens: int,
    says: str | None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    monkeypatch.setenv(KEY_ENV, KEY)
    caplog.set_level(logging.DEBUG)  # every logger, the HTTP client's and openai's included
    engine = engine_for(hostile_port, behaviour)
    info = await engine.ready()
    deadline = engine.config.deadline_s(max_tokens)
    started = time.monotonic()
    try:
        with peak_rss_growth_mb() as growth:
            answer = await ask(engine, max_tokens)
    finally:
        await engine.aclose()
    elapsed = time.monotonic() - started
    assert elapsed <= deadline + 1, (elapsed, deadline)
    assert growth[0] < RSS_GROWTH_LIMIT_MB, growth
    if says is None:
        assert not isinstance(answer, EngineError), answer
        assert answer.finish_reason == "length" and answer.content == "drip " * (max_tokens + 1)
    else:
        assert isinstance(answer, EngineError) and answer.backend_fault, answer
        assert says in str(answer)
    shown = [str(answer), json.dumps(info), *(record.getMessage() for record in caplog.records)]
    assert_shown_safely(shown)
    assert any("HTTP Request: POST" in text for text in shown)  # the HTTP client's log was captured


async def test_credentials_in_the_url_are_sent_and_never_shown(
    hostile_port: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    monkeypatch.setenv(KEY_ENV, KEY)
    caplog.set_level(logging.DEBUG)
    engine = engine_for(hostile_port, "error401", f"team:{PASSWORD}@")
    try:
        info = await engine.ready()
        error = await ask(engine, 64)
    finally:
        await engine.aclose()
    assert isinstance(error, EngineError) and error.kind == "unauthorized"
    # The server got them (as basic auth, as from any HTTP client), and echoed them back: redacted.
    assert f"you sent Basic {base64.b64encode(f'team:{PASSWORD}'.encode()).decode()}" not in str(error)
    assert "you sent Basic " in str(error) and " = ***" in str(error)
    assert info["url"] == f"http://***@127.0.0.1:{hostile_port}/error401/v1"
    merged, warnings = settings.merge(
        settings.Settings(), {"backend": {"url": engine.config.url, "timeout": 0}}
    )
    assert warnings and merged.backend is None  # a bad timeout: refused, without echoing the URL
    named, _ = settings.merge(settings.Settings(), {"backend": {"url": engine.config.url, "model": MODEL}})
    unnamed, _ = settings.merge(settings.Settings(), {"backend": {"url": engine.config.url}})
    shown = [str(error), json.dumps(info), named.engine_name, unnamed.engine_name, *warnings]
    assert_shown_safely([*shown, *(record.getMessage() for record in caplog.records)])


async def test_8000_deltas_take_linear_time(hostile_port: int, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    spent = [0.0]
    add = remote.StreamedAnswer.add

    def timed_add(self: Any, chunk: dict[str, Any], elapsed_s: float) -> None:
        started = time.thread_time()  # CPU time of the event loop's thread
        add(self, chunk, elapsed_s)
        spent[0] += time.thread_time() - started

    monkeypatch.setattr(remote.StreamedAnswer, "add", timed_add)
    engine = engine_for(hostile_port, "many_deltas")
    pieces: list[str] = []
    try:
        await engine.ready()
        with peak_rss_growth_mb() as growth:
            started = time.thread_time()
            answer = await ask(engine, 10_000, pieces)
            request_s = time.thread_time() - started
    finally:
        await engine.aclose()
    assert not isinstance(answer, EngineError), answer
    expected = "".join(many_deltas())
    assert answer.content == expected and "".join(pieces) == expected and not answer.tool_calls
    assert len(pieces) > 4000  # shown as it came, apart from what was held back
    assert spent[0] < 0.2, spent
    assert request_s < 0.4, request_s  # the whole request: reading and parsing the events too
    assert growth[0] < RSS_GROWTH_LIMIT_MB, growth


def test_the_call_start_tracker_gives_tool_call_start_of_every_prefix():
    """The streamed hold-back (CallStartTracker) against the rule itself, on random answers in random
    pieces: the same position after every piece."""
    names = ["read_file", "read", "search_files"]
    alphabet = ["{", "`", "```", "```json", "json", " ", "\n", '"', '"name"', ":", "read", "_file", "x", "}"]
    rng = random.Random(27)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
        tracker, at = CallStartTracker(names), 0
        while at < len(text):
            piece = text[at : at + rng.randint(1, 6)]
            at += len(piece)
            assert tracker.add(piece) == tool_call_start(text[:at], names), (text[:at], piece)


# ---- through a real language server ---------------------------------------------------------------


async def test_the_status_the_client_and_the_servers_log_never_show_the_key_or_credentials(
    hostile_port: int, workspace: Path, capfd: pytest.CaptureFixture[str]
):
    backend = {
        "url": f"http://team:{PASSWORD}@127.0.0.1:{hostile_port}/error401/v1",
        "model": MODEL,
        "apiKeyEnv": KEY_ENV,
        "timeout": TIMEOUT_S,
    }
    async with language_server(workspace, backend, {KEY_ENV: KEY}) as client:
        message = await chat_error(client, {"message": "Say hi."})
        stats = await client.request(protocol.STATS, {})
        assert "refused the request (401" in message and client.statuses[-1]["state"] == protocol.ERROR
        statuses = [status.get("message", "") for status in client.statuses]
    log_lines = capfd.readouterr().err.splitlines()
    assert any("HTTP Request: POST http://127.0.0.1:" in line for line in log_lines)  # it was forwarded
    assert_shown_safely([message, json.dumps(stats), *statuses, *log_lines])


if __name__ == "__main__":
    serve()
