"""The JSON-RPC layer: frame parsing and envelope checks as units, then the real server over raw stdio.

RawServer runs `python -m lsp_server --stdio` and writes exact bytes to it, broken framing included, and
reads its framed answers strictly. Each repro of a message that once went unanswered checks the error
code and id of the answer, then that the server still answers a normal request.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage

from lsp_server.lsp import rpc_envelope, rpc_protocol
from lsp_server.lsp.lsp_json import plain_json_converter
from lsp_server.lsp.rpc_envelope import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    Notification,
    Rejection,
    Request,
    Response,
    check_batch,
    check_envelope,
)
from lsp_server.lsp.rpc_framing import Frame, FrameError, FrameParser

from .lsp_client import SERVER_COMMAND

ROOT = Path(__file__).resolve().parent.parent
INTERNAL_ERROR = -32603

SOURCE = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"


def frame(body: bytes | str, header: bytes = b"Content-Length", length: int | None = None) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return header + b": %d\r\n\r\n" % (len(data) if length is None else length) + data


def message(msg_id: Any, method: str, params: Any = None) -> bytes:
    envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        envelope["params"] = params
    return json.dumps(envelope).encode()


# ---- the frame parser ------------------------------------------------------------------------------


def feed_all(parser: FrameParser, data: bytes, step: int | None = None) -> list[Frame | FrameError]:
    events: list[Frame | FrameError] = []
    step = step or len(data) or 1
    for start in range(0, len(data), step):
        events += parser.feed(data[start : start + step])
    return events


def values(events: list[Frame | FrameError]) -> list[Any]:
    return [event.value if isinstance(event, Frame) else (event.code,) for event in events]


def test_parser_reads_messages_fed_one_byte_at_a_time():
    first, second = message(1, "a"), message("two", "b", {"x": "é ünïcödé"})
    events = feed_all(FrameParser(), frame(first) + frame(second), step=1)
    assert values(events) == [json.loads(first), json.loads(second)]


def test_parser_takes_header_names_in_any_case_lf_endings_and_unknown_headers():
    body = message(1, "a")
    data = (
        b"content-length: %d\n\n%s" % (len(body), body)
        + b"CONTENT-TYPE: application/vscode-jsonrpc; charset=utf-8\r\nX-Other: 1\r\n"
        + b"Content-LENGTH:%d\r\n\r\n%s" % (len(body), body)
    )
    assert values(feed_all(FrameParser(), data)) == [json.loads(body)] * 2


def test_parser_counts_content_length_in_bytes_across_split_characters():
    body = message(1, "a", {"text": "ü€😀" * 50})
    events = feed_all(FrameParser(), frame(body) + frame(body), step=7)
    assert values(events) == [json.loads(body)] * 2


def test_parser_takes_the_json_value_when_content_length_is_too_short():
    body, after = message(1, "a"), message(2, "b")
    events = feed_all(FrameParser(), frame(body, length=10) + frame(after))
    assert values(events) == [json.loads(body), json.loads(after)]


def test_parser_takes_the_json_value_when_content_length_is_too_long_and_the_next_message_follows():
    body, after = message(1, "a"), message(2, "b")
    parser = FrameParser()
    assert parser.feed(frame(body, length=len(body) + 500)) == []
    assert parser.wants_idle_check
    assert values(parser.feed(frame(after))) == [json.loads(body), json.loads(after)]
    assert not parser.wants_idle_check


def test_parser_takes_a_complete_value_of_an_overlong_body_only_when_the_client_goes_idle():
    body = message(1, "a")
    parser = FrameParser()
    assert parser.feed(frame(body, length=len(body) + 40)) == []
    assert values(parser.idle()) == [json.loads(body)]
    assert not parser.wants_idle_check
    # The rest of the declared bytes, if they come after all, are junk: one error, then back in step.
    assert values(parser.feed(b"x" * 40 + frame(body))) == [(PARSE_ERROR,), json.loads(body)]


def test_parser_waits_for_an_incomplete_body_that_is_not_yet_json():
    body = message(1, "a", {"text": "Content-Length: 5" * 3})
    parser = FrameParser()
    assert parser.feed(frame(body)[:-20]) == []
    assert parser.idle() == []  # incomplete, and no JSON value in it yet: keep waiting
    assert values(parser.feed(frame(body)[-20:])) == [json.loads(body)]


def test_parser_answers_garbage_bodies_with_a_parse_error_and_resyncs():
    after = message(2, "b")
    events = feed_all(FrameParser(), frame(b"{not json}") + frame(after))
    assert values(events) == [(PARSE_ERROR,), json.loads(after)]
    # Garbage declared too long, followed by the next message: resync at its header.
    events = feed_all(FrameParser(), frame(b"{not json}", length=100) + frame(after))
    assert values(events) == [(PARSE_ERROR,), json.loads(after)]
    events = feed_all(FrameParser(), frame(b"\xff\xfe{}") + frame(b"") + frame(after))
    assert values(events) == [(PARSE_ERROR,), (PARSE_ERROR,), json.loads(after)]


def test_parser_reports_an_unfinished_body_when_the_client_goes_idle():
    parser = FrameParser()
    assert parser.feed(frame(b'{"jsonrpc": "2.0", "id": 1,')) == []
    assert values(parser.idle()) == [(PARSE_ERROR,)]
    assert values(parser.feed(frame(message(3, "c")))) == [json.loads(message(3, "c"))]


def test_parser_skips_junk_without_a_header_with_one_error_and_bounded_memory():
    parser = FrameParser()
    junk = b"no header here {}\r\n\r\n" + b"garbage " * 500_000
    events = feed_all(parser, junk, step=65536)
    assert values(events) == [(PARSE_ERROR,)]
    assert parser.buffered < 64
    assert values(parser.feed(frame(message(1, "a")))) == [json.loads(message(1, "a"))]


def test_parser_refuses_an_oversized_content_length_and_resyncs():
    parser = FrameParser()
    events = feed_all(parser, b"Content-Length: 1000000000000\r\n\r\n" + message(1, "a") + b"x" * 100_000)
    assert values(events) == [(INVALID_REQUEST,)]
    assert parser.buffered < 64
    assert values(parser.feed(frame(message(2, "b")))) == [json.loads(message(2, "b"))]
    events = feed_all(FrameParser(), b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n" + frame(message(2, "b")))
    assert values(events) == [(INVALID_REQUEST,), json.loads(message(2, "b"))]


def test_parser_treats_a_bad_header_block_as_junk():
    after = message(2, "b")
    blocks = [b"Content-Length: -5\r\n\r\n", b"Content-Length: abc\r\n\r\n", b"Content-Type: x\r\n\r\n"]
    for block in [*blocks, b"Content-Lengthy: 14\r\n\r\n", b"Content Length: 14\r\n\r\n"]:
        assert values(feed_all(FrameParser(), block + frame(after))) == [(PARSE_ERROR,), json.loads(after)]


def test_parser_takes_bodies_that_are_json_but_not_objects():
    # The envelope check answers these; framing only needs them to be JSON.
    assert values(feed_all(FrameParser(), frame(b"[]") + frame(b"42") + frame(b"null"))) == [[], 42, None]


# ---- envelopes -------------------------------------------------------------------------------------


def rejection(value: Any) -> tuple[Any, int, bool]:
    checked = check_envelope(value)
    assert isinstance(checked, Rejection), checked
    return checked.id, checked.code, checked.answer


def test_envelope_classifies_requests_notifications_and_responses():
    request = check_envelope({"jsonrpc": "2.0", "id": 1, "method": "assistant/stats", "extra": True})
    assert request == Request(1, "assistant/stats", {"jsonrpc": "2.0", "id": 1, "method": "assistant/stats"})
    notification = check_envelope({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {}})
    assert isinstance(notification, Notification) and notification.method == "textDocument/didClose"
    assert check_envelope({"jsonrpc": "2.0", "id": "x", "result": [1]}) == Response("x", [1], None)
    error = check_envelope({"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "no"}})
    assert error == Response(3, None, {"code": -1, "message": "no"})


def test_envelope_rejects_what_cannot_be_served_with_the_right_code_and_id():
    assert rejection([1]) == (None, INVALID_REQUEST, True)
    assert rejection("text") == (None, INVALID_REQUEST, True)
    assert rejection({"jsonrpc": "2.0", "id": 4}) == (4, INVALID_REQUEST, True)
    assert rejection({"jsonrpc": "2.0"}) == (None, INVALID_REQUEST, True)
    assert rejection({"jsonrpc": "1.0", "id": 5, "method": "m"}) == (5, INVALID_REQUEST, True)
    assert rejection({"id": 5, "method": "m"}) == (5, INVALID_REQUEST, True)
    assert rejection({"jsonrpc": "2.0", "id": 6, "method": 7}) == (6, INVALID_REQUEST, True)
    assert rejection({"jsonrpc": "2.0", "method": ""}) == (None, INVALID_REQUEST, True)
    for bad_id in (True, 1.5, None, [1], {"a": 1}):
        assert rejection({"jsonrpc": "2.0", "id": bad_id, "method": "m"}) == (None, INVALID_REQUEST, True)
    assert rejection({"jsonrpc": "2.0", "id": 8, "method": "m", "params": 3}) == (8, INVALID_PARAMS, True)
    assert rejection({"jsonrpc": "2.0", "method": "m", "params": "s"}) == (None, INVALID_PARAMS, False)


def test_envelope_tells_lsp_notifications_from_requests():
    assert (
        "textDocument/didOpen" in rpc_envelope.LSP_NOTIFICATIONS and "exit" in rpc_envelope.LSP_NOTIFICATIONS
    )
    assert "shutdown" in rpc_envelope.LSP_REQUESTS and "textDocument/codeAction" in rpc_envelope.LSP_REQUESTS
    assert rejection({"jsonrpc": "2.0", "id": 9, "method": "textDocument/didOpen"}) == (
        9,
        INVALID_REQUEST,
        True,
    )
    assert rejection({"jsonrpc": "2.0", "method": "shutdown"}) == (None, INVALID_REQUEST, True)


def test_envelope_never_answers_a_response_but_fails_a_malformed_one():
    assert rejection({"jsonrpc": "2.0", "id": None, "result": 1})[2] is False
    assert rejection({"jsonrpc": "2.0", "result": 1})[2] is False
    malformed = check_envelope({"jsonrpc": "2.0", "id": 2, "error": "boom"})
    assert isinstance(malformed, Response) and malformed.error is not None
    assert malformed.error["code"] == INTERNAL_ERROR


def test_batches_get_one_invalid_request_per_request_in_them():
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "a"},
        {"jsonrpc": "2.0", "method": "n"},
        {"jsonrpc": "2.0", "id": "r", "result": 1},
        {"jsonrpc": "2.0", "id": "two", "method": "b"},
        5,
    ]
    assert [(r.id, r.code) for r in check_batch(batch)] == [(1, INVALID_REQUEST), ("two", INVALID_REQUEST)]
    assert [(r.id, r.code) for r in check_batch([])] == [(None, INVALID_REQUEST)]
    assert [(r.id, r.code) for r in check_batch([{"method": "n"}])] == [(None, INVALID_REQUEST)]


# ---- the protocol in process -----------------------------------------------------------------------


class CapturingWriter:
    """The transport of an in-process protocol: keeps the framed bytes it is given."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass

    def answers(self) -> list[Any]:
        return values(feed_all(FrameParser(), self.data))


def run_command_in_process(command: Callable[..., Any]) -> list[Any]:
    """Runs workspace/executeCommand (a generator-run builtin of pygls) on a HardenedProtocol."""
    server = LanguageServer("test", "0", protocol_cls=rpc_protocol.HardenedProtocol)
    writer = CapturingWriter()
    server.protocol.set_writer(writer)
    server.command("test.command")(command)
    params = {"command": "test.command", "arguments": []}

    async def main() -> None:
        server.protocol.handle_json(
            {"jsonrpc": "2.0", "id": 1, "method": "workspace/executeCommand", "params": params}
        )
        for _ in range(20):
            await asyncio.sleep(0.01)

    asyncio.run(main())
    return writer.answers()


def test_a_command_that_ends_cancelled_is_answered_request_cancelled():
    async def ends_cancelled(_ls: LanguageServer) -> None:
        raise asyncio.CancelledError  # as when what it awaits is cancelled under it

    [answer] = run_command_in_process(ends_cancelled)
    assert answer["id"] == 1 and answer["error"]["code"] == REQUEST_CANCELLED


def test_a_result_that_cannot_be_serialized_is_answered_internal_error():
    async def returns_an_object(_ls: LanguageServer) -> object:
        return object()

    [answer] = run_command_in_process(returns_an_object)
    assert answer["id"] == 1 and answer["error"]["code"] == INTERNAL_ERROR
    assert "data" not in answer["error"]


# ---- the server over raw stdio ---------------------------------------------------------------------


def is_answer(value: dict[str, Any]) -> bool:
    return "method" not in value and ("result" in value or "error" in value)


def same_id(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


class RawServer:
    """The server as a subprocess, written raw bytes, read strictly framed messages."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            SERVER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, cwd=ROOT
        )
        self.received: list[dict[str, Any]] = []
        self.received_at: list[float] = []
        self.framing_errors: list[str] = []
        self._taken: set[int] = set()
        self._incoming: queue.Queue[tuple[float, dict[str, Any]] | None] = queue.Queue()
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        try:
            while True:
                length = None
                while (line := stream.readline()) != b"\r\n":
                    if not line:
                        return
                    name, colon, value = line.decode("ascii").partition(":")
                    if not colon or not line.endswith(b"\r\n"):
                        self.framing_errors.append(f"bad header line {line!r}")
                    if name.lower() == "content-length":
                        length = int(value)
                if length is None:
                    self.framing_errors.append("a header block without Content-Length")
                    return
                self._incoming.put((time.monotonic(), json.loads(stream.read(length))))
        except Exception as exc:
            self.framing_errors.append(f"unreadable output: {exc!r}")
        finally:
            self._incoming.put(None)

    # ---- writing ---------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        assert self.process.stdin is not None
        with self._write_lock:
            self.process.stdin.write(data)
            self.process.stdin.flush()

    def send(self, value: Any) -> None:
        self.write(frame(json.dumps(value)))

    def new_id(self) -> int:
        return next(self._ids)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None, timeout: float = 10) -> dict[str, Any]:
        msg_id = self.new_id()
        self.write(frame(message(msg_id, method, params)))
        return self.answer(msg_id, timeout)

    # ---- reading ---------------------------------------------------------------------------------

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 10) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for index, value in enumerate(self.received):
                if index not in self._taken and predicate(value):
                    self._taken.add(index)
                    return value
            if not self.pump(deadline - time.monotonic()):
                raise AssertionError(f"nothing expected came in {timeout} s; last: {self.received[-3:]}")

    def pump(self, timeout: float) -> bool:
        """Moves one message (if one comes within timeout) into received; False if none came."""
        try:
            item = self._incoming.get(timeout=max(timeout, 0))
        except queue.Empty:
            return False
        if item is None:
            self._incoming.put(None)
            raise AssertionError(f"the server closed stdout; its log ends:\n{self.log()[-3000:]}")
        arrived, value = item
        self.received_at.append(arrived)
        self.received.append(value)
        if "method" in value and "id" in value:
            # The server asks: a plain client's answers. Sent from here, not from the reading thread, so
            # that reading never waits on a long write.
            result = {"applied": False} if value["method"] == "workspace/applyEdit" else None
            self.send({"jsonrpc": "2.0", "id": value["id"], "result": result})
        return True

    def answer(self, msg_id: Any, timeout: float = 10) -> dict[str, Any]:
        return self.wait_for(lambda value: is_answer(value) and same_id(value.get("id"), msg_id), timeout)

    def error(self, msg_id: Any, timeout: float = 10) -> dict[str, Any]:
        reply = self.answer(msg_id, timeout)
        assert "error" in reply, reply
        return reply["error"]

    def untaken_answers(self, settle: float = 0.3) -> list[dict[str, Any]]:
        while self.pump(settle):
            pass
        return [v for i, v in enumerate(self.received) if i not in self._taken and is_answer(v)]

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    # ---- lifecycle -------------------------------------------------------------------------------

    def initialize(self, root: Path, options: dict[str, Any]) -> dict[str, Any]:
        reply = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {},
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "initializationOptions": options,
            },
        )
        assert "result" in reply, reply
        self.notify("initialized", {})
        return reply

    def wait_for_status(self, state: str, timeout: float = 60) -> dict[str, Any]:
        return self.wait_for(
            lambda v: v.get("method") == "assistant/status" and v["params"]["state"] == state, timeout
        )

    def exit_time(self, timeout: float = 30) -> float:
        started = time.monotonic()
        self.process.wait(timeout)
        return time.monotonic() - started

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._log.close()


def start_server(
    tmp_path: Path, model: Path, options: dict[str, Any] | None = None, initialize: bool = True
) -> RawServer:
    root = tmp_path / "workspace"
    root.mkdir(exist_ok=True)
    (root / "calc.py").write_text(SOURCE)
    server = RawServer(tmp_path / "server.log")
    if initialize:
        defaults = {"model": str(model), "contextSize": 1024, "slots": 2, "maxTokens": 8}
        server.initialize(root, {**defaults, "cacheDir": str(tmp_path / "cache"), **(options or {})})
    return server


def assert_serves(server: RawServer) -> None:
    reply = server.request("assistant/stats")
    assert reply.get("result", {}).get("state") in ("loading", "ready", "busy"), reply
    assert server.process.poll() is None


@pytest.fixture(scope="module")
def server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    raw = start_server(tmp_path_factory.mktemp("rpc"), tiny_model)
    yield raw
    raw.close()


def test_a_params_that_do_not_structure_get_invalid_params(server: RawServer):
    server.write(frame(message(101, "textDocument/codeAction", {"textDocument": {"uri": 5}, "range": "x"})))
    error = server.error(101)
    assert error["code"] == INVALID_PARAMS
    assert "params" in error["message"]
    server.write(frame(message("a2", "textDocument/codeAction", [1, 2])))
    assert server.error("a2")["code"] == INVALID_PARAMS
    assert_serves(server)


def test_b_batches_get_invalid_request_for_each_request_and_run_nothing(server: RawServer):
    batch = [
        {"jsonrpc": "2.0", "id": 201, "method": "assistant/stats"},
        {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": "x"}}},
        {"jsonrpc": "2.0", "id": "b2", "method": "shutdown"},
    ]
    server.send(batch)
    assert server.error(201)["code"] == INVALID_REQUEST
    assert server.error("b2")["code"] == INVALID_REQUEST
    server.send([])
    assert server.error(None)["code"] == INVALID_REQUEST
    assert_serves(server)  # the shutdown inside the batch did not run


def test_c_unparsable_json_gets_a_parse_error_with_id_null(server: RawServer):
    server.write(frame(b'{"jsonrpc": "2.0", "id": 301, "method": "assistant/stats"'))
    assert server.error(None, timeout=5)["code"] == PARSE_ERROR
    server.write(frame(b"{not json at all}"))
    assert server.error(None)["code"] == PARSE_ERROR
    server.write(frame(b"\xff\xfe not utf-8"))
    assert server.error(None)["code"] == PARSE_ERROR
    assert_serves(server)
    assert server.untaken_answers() == []


def test_d_a_jsonrpc_key_inside_params_is_just_data(server: RawServer):
    nested = {"jsonrpc": "2.0", "id": 1, "method": "exit", "params": {"jsonrpc": "2.0"}}
    server.write(frame(message(401, "assistant/stats", {"context": nested})))
    assert server.answer(401)["result"]["state"] in ("loading", "ready", "busy")
    command = {"command": "llamaLsp.codeAction", "arguments": [nested]}
    server.write(frame(message(402, "workspace/executeCommand", command)))
    error = server.error(402)
    assert error["code"] == INVALID_PARAMS and "kind" in error["message"]
    assert_serves(server)


def test_e_extra_fields_are_dropped_and_an_id_without_a_method_is_invalid(server: RawServer):
    server.send({"jsonrpc": "2.0", "id": 501, "method": "assistant/stats", "params": {}, "extra": [1]})
    assert server.answer(501)["result"]["state"] in ("loading", "ready", "busy")
    server.send({"jsonrpc": "2.0", "id": "e2"})
    assert server.error("e2")["code"] == INVALID_REQUEST
    server.send({"jsonrpc": "2.0", "id": 503, "params": {}})
    assert server.error(503)["code"] == INVALID_REQUEST
    server.send({"jsonrpc": "2.0", "id": 504, "result": None})  # a response to nothing of the server's
    assert_serves(server)
    assert server.untaken_answers() == []


def test_f_notification_methods_sent_with_an_id_are_invalid_requests(server: RawServer):
    uri = "file:///nowhere/f.py"
    opened = {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}}
    server.write(frame(message(601, "textDocument/didOpen", opened)))
    assert server.error(601)["code"] == INVALID_REQUEST
    server.write(frame(message(602, "exit")))
    assert server.error(602)["code"] == INVALID_REQUEST
    server.write(frame(message(603, "$/cancelRequest", {"id": 1})))
    assert server.error(603)["code"] == INVALID_REQUEST
    assert_serves(server)  # exit with an id did not end the server


def test_h_content_length_too_short_takes_the_message(server: RawServer):
    server.write(frame(message(801, "assistant/stats"), length=12))
    assert "result" in server.answer(801)
    assert_serves(server)
    assert server.untaken_answers() == []


def test_h_content_length_too_long_is_answered_while_the_client_waits(server: RawServer):
    body = message(802, "assistant/stats")
    started = time.monotonic()
    server.write(frame(body, length=len(body) + 300))
    assert "result" in server.answer(802, timeout=5)
    assert time.monotonic() - started < 3
    assert_serves(server)


def test_h_content_length_too_long_followed_by_the_next_message(server: RawServer):
    first, second = message(803, "assistant/stats"), message(804, "assistant/stats")
    server.write(frame(first, length=len(first) + 1000) + frame(second))
    assert "result" in server.answer(803) and "result" in server.answer(804)
    assert server.untaken_answers() == []


def test_h_lowercase_header_and_lf_line_endings(server: RawServer):
    body = message(805, "assistant/stats")
    server.write(b"content-length: %d\r\n\r\n%s" % (len(body), body))
    assert "result" in server.answer(805)
    body = message(806, "assistant/stats")
    server.write(b"Content-Length: %d\nContent-Type: application/json\n\n%s" % (len(body), body))
    assert "result" in server.answer(806)


def test_h_huge_content_length_is_refused_with_id_null(server: RawServer):
    server.write(b"Content-Length: 1000000000000\r\n\r\n" + message(807, "assistant/stats"))
    assert server.error(None)["code"] == INVALID_REQUEST
    assert_serves(server)


def test_h_bytes_without_a_header_get_a_parse_error(server: RawServer):
    server.write(message(808, "assistant/stats") + b"\r\n\r\n")
    assert server.error(None)["code"] == PARSE_ERROR
    assert_serves(server)


def test_pygls_does_not_log_every_answer(server: RawServer):
    assert_serves(server)
    log = server.log()
    assert "Sending data" not in log
    assert "Traceback" not in log


def test_g_requests_after_shutdown_are_invalid_and_exit_then_ends_with_0(tiny_model: Path, tmp_path: Path):
    server = start_server(tmp_path, tiny_model)
    try:
        server.wait_for_status("ready")  # shutdown during the load is another matter (see exit_while...)
        reply = server.request("shutdown")
        assert "result" in reply and reply["result"] is None, reply
        for method in ("assistant/stats", "shutdown", "no/such/method"):
            assert server.request(method)["error"]["code"] == INVALID_REQUEST
        server.notify("textDocument/didClose", {"textDocument": {"uri": "file:///x.py"}})  # ignored
        server.notify("exit")
        assert server.exit_time(10) < 3
        assert server.process.returncode == 0
    finally:
        server.close()


def test_internal_errors_are_answered_without_a_traceback(tiny_model: Path, tmp_path: Path):
    server = start_server(tmp_path, tiny_model, initialize=False)
    try:
        # Before initialize there is no workspace: the code-action handler fails inside pygls.
        params = {
            "textDocument": {"uri": "file:///x.py"},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []},
        }
        reply = server.request("textDocument/codeAction", params)
        assert reply["error"]["code"] == INTERNAL_ERROR, reply
        assert "data" not in reply["error"] or "traceback" not in (reply["error"]["data"] or {})
        assert "Traceback" in server.log()  # the log has it instead
    finally:
        server.close()


def test_exit_without_shutdown_ends_the_process_promptly_with_1(tiny_model: Path, tmp_path: Path):
    server = start_server(tmp_path, tiny_model)
    try:
        server.wait_for_status("ready")
        assert_serves(server)
        server.notify("exit")
        elapsed = server.exit_time(30)
        print(f"exit took {elapsed:.2f} s with the model loaded")
        assert elapsed < 3
        assert server.process.returncode == 1
    finally:
        server.close()


def test_exit_sent_before_shutdown_is_answered_still_exits_0(tiny_model: Path, tmp_path: Path):
    # pygls's shutdown cancelled every handler in flight, an exit's that came meanwhile too: no exit.
    server = start_server(tmp_path, tiny_model)
    try:
        server.wait_for_status("ready")
        server.write(
            frame(message(server.new_id(), "shutdown")) + frame(b'{"jsonrpc": "2.0", "method": "exit"}')
        )
        assert server.exit_time(10) < 3
        assert server.process.returncode == 0
    finally:
        server.close()


def exit_while_the_model_loads(tiny_model: Path, tmp_path: Path) -> tuple[float, int]:
    server = start_server(tmp_path, tiny_model)
    try:
        server.notify("exit")
        elapsed = server.exit_time(30)
        print(f"exit took {elapsed:.2f} s while the model loaded; exit code {server.process.returncode}")
        return elapsed, server.process.returncode
    finally:
        server.close()


def test_exit_while_the_model_loads_ends_promptly(tiny_model: Path, tmp_path: Path):
    elapsed, _code = exit_while_the_model_loads(tiny_model, tmp_path)
    assert elapsed < 3


def test_exit_while_the_model_loads_exits_1(tiny_model: Path, tmp_path: Path):
    _elapsed, code = exit_while_the_model_loads(tiny_model, tmp_path)
    assert code == 1


def test_end_of_stdin_ends_the_server(tiny_model: Path, tmp_path: Path):
    server = start_server(tmp_path, tiny_model)
    try:
        assert_serves(server)
        assert server.process.stdin is not None
        server.process.stdin.close()
        assert server.exit_time(30) < 3
    finally:
        server.close()


def start_command(server: RawServer, uri: str) -> int:
    """Starts the llamaLsp.codeAction command on the whole file and waits until the model works on it."""
    command_id = server.new_id()
    arguments = {
        "uri": uri,
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}},
        "kind": "explain",
    }
    params = {"command": "llamaLsp.codeAction", "arguments": [arguments]}
    server.write(frame(message(command_id, "workspace/executeCommand", params)))
    server.wait_for_status("busy", timeout=30)
    return command_id


def test_cancelling_execute_command_stops_the_command_and_shutdown_answers(tiny_model: Path, tmp_path: Path):
    # A generation long enough to still run when the cancel comes: the tiny model never stops by itself.
    options = {"contextSize": 32768, "maxTokens": 30000, "slots": 1}
    server = start_server(tmp_path, tiny_model, options)
    try:
        server.wait_for_status("ready")
        uri = (tmp_path / "workspace" / "calc.py").as_uri()
        server.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": SOURCE}},
        )
        command_id = start_command(server, uri)
        server.notify("$/cancelRequest", {"id": command_id})
        cancelled_at = time.monotonic()
        assert server.error(command_id)["code"] == REQUEST_CANCELLED
        # The command's coroutine was cancelled too: the model is free again at once, not after 30,000
        # tokens, and the command never finished (it would have counted a request).
        server.wait_for_status("ready", timeout=5)
        assert time.monotonic() - cancelled_at < 3
        stats = server.request("assistant/stats", timeout=5)["result"]
        assert stats["totals"]["requests"] == 0

        # Shutdown while a command runs: the command is cancelled and shutdown still answers.
        command_id = start_command(server, uri)
        shutdown_id = server.new_id()
        server.write(frame(message(shutdown_id, "shutdown")))
        assert server.answer(shutdown_id, timeout=20) == {"jsonrpc": "2.0", "id": shutdown_id, "result": None}
        server.answer(command_id)  # closing the engine ends its generation: an answer of some kind
        server.notify("exit")
        assert server.exit_time(10) < 3
        assert server.process.returncode == 0
        assert not [v for v in server.received if v.get("method") == "workspace/applyEdit"]
    finally:
        server.close()


def test_custom_params_and_results_stay_plain_json_whatever_their_keys() -> None:
    # pygls's own converter renames keys that are not Python identifiers (a tool call's `from`) to `_0`
    # and drops `type_name`; ours keeps custom methods' JSON as sent, both ways.
    converter = plain_json_converter()
    arguments = {"relations": [{"from": "a", "to": "b"}], "my-key": 1, "type_name": "kept"}
    response = converter.structure(
        {"jsonrpc": "2.0", "id": 1, "result": {"toolCalls": [{"arguments": arguments}]}},
        JsonRPCResponseMessage,
    )
    assert response.result == {"toolCalls": [{"arguments": arguments}]}
    request = converter.structure(
        {"jsonrpc": "2.0", "id": 2, "method": "assistant/chat", "params": {"from": 1}}, JsonRPCRequestMessage
    )
    assert request.params == {"from": 1}
    notification = converter.structure({"jsonrpc": "2.0", "method": "assistant/x"}, JsonRPCNotification)
    assert notification.params is None
