"""Seeded, bounded fuzzing of the real server over raw stdio, on the tiny model.

Thousands of messages mix what an editor sends (stats, code actions, chats, next edits, commands, document
notifications, cancels) with what a broken or hostile client might (malformed envelopes, random JSON
as params, forged diagnostics and cancel ids, a second initialize, batches, huge strings, broken
framing). Every request in a well-framed message must be
answered exactly once within ANSWER_TIMEOUT_S; requests inside deliberately broken frames may be
answered, at most once. Afterwards the server must still chat, and must have loaded the model once.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from .test_rpc import SOURCE, frame, is_answer, start_server

SEED = 20261201
N_MESSAGES = 5000
WINDOW = 12  # messages written at once before their answers are awaited
ANSWER_TIMEOUT_S = 10
HUGE = 1_000_000
INVALID_REQUEST, INTERNAL_ERROR, REQUEST_FAILED = -32600, -32603, -32803

ODD_URIS = [
    "",
    "not a uri",
    "file:///",
    "file:///dev/null",
    "untitled:Untitled-1",
    "file://server/share/a.py",
    "file:///c%3A/Users/x.py",
    "file:///tmp/%ZZ%.py",
    "file:///tmp/\u00e9\u6f22 \U0001f600.py",
    "http://example.com/a.py",
    "file:///tmp/" + "a" * 5000 + ".py",
    "file:///tmp/../../etc/passwd",
]
ODD_TEXT = [
    "",
    "\r\n\r\n",
    "\u2028\u2029",
    "\x00\x01\x7f",
    "\ud800".encode("utf-8", "surrogatepass").decode("latin-1"),
]
# Only methods whose structurally valid forms cannot end the server or reload the model.
SAFE_NOTIFICATIONS = ["textDocument/didOpen", "textDocument/didChange", "textDocument/didClose", "$/setTrace"]
REQUEST_METHODS = [
    "assistant/stats",
    "assistant/chat",
    "assistant/searchCodebase",
    "assistant/nextEdit",
    "textDocument/codeAction",
    "codeAction/resolve",
    "workspace/executeCommand",
    "textDocument/hover",
    "workspace/symbol",
]


@dataclass
class Sent:
    """What one fuzz step wrote, and which answers it is owed."""

    kind: str
    data: bytes
    required: list[Any] = field(default_factory=list)  # ids that must be answered exactly once
    optional: list[Any] = field(default_factory=list)  # ids that may be answered, at most once


class Fuzzer:
    def __init__(self, rng: random.Random, document_uri: str) -> None:
        self.rng = rng
        self.document_uri = document_uri
        self.version = 1
        self.counter = 10_000  # above the ids of the raw client's own requests
        self.request_ids: list[Any] = []
        self.requests: dict[str, Any] = {}  # json.dumps(id) -> the request, for reports

    def describe(self, msg_id: Any) -> str:
        return json.dumps(self.requests.get(json.dumps(msg_id)))[:300]

    # ---- values ----------------------------------------------------------------------------------

    def new_id(self, odd: bool | None = None) -> Any:
        self.counter += 1
        n = self.counter
        if odd is None:
            odd = self.rng.random() < 0.3
        if not odd:
            return n
        return self.rng.choice(
            [-n, 2**53 + n, 2**70 + n, f"s{n}", f"\u2603-{n}", str(n), "x" * 1000 + str(n), f" {n} "]
        )

    def text(self, size: int | None = None) -> str:
        size = self.rng.choice([0, 1, 5, 40, 300]) if size is None else size
        alphabet = "abc xyz\n\t{}[]\"'\\/\u00e9\u6f22\U0001f600\x00\x1f"
        return "".join(self.rng.choice(alphabet) for _ in range(size))

    def number(self) -> Any:
        return self.rng.choice([0, 1, -1, 2**31, 2**31 - 1, -(2**31), 2**64, 0.5, -1e308, 1e308, 3])

    def position(self) -> Any:
        if self.rng.random() < 0.7:
            return {"line": self.rng.randint(0, 8), "character": self.rng.randint(0, 40)}
        return self.rng.choice(
            [{"line": self.number(), "character": self.number()}, {"line": 1}, None, [], "0:0", self.json(2)]
        )

    def range(self) -> Any:
        if self.rng.random() < 0.7:
            start, end = sorted([(self.rng.randint(0, 6), self.rng.randint(0, 30)) for _ in range(2)])
            return {
                "start": {"line": start[0], "character": start[1]},
                "end": {"line": end[0], "character": end[1]},
            }
        if self.rng.random() < 0.7:
            return {"start": self.position(), "end": self.position()}
        return self.json(2)

    def json(self, depth: int = 3) -> Any:
        kinds = ["null", "bool", "number", "string"] + (["list", "dict"] * 2 if depth > 0 else [])
        kind = self.rng.choice(kinds)
        if kind == "null":
            return None
        if kind == "bool":
            return self.rng.random() < 0.5
        if kind == "number":
            return self.number()
        if kind == "string":
            return self.text()
        if kind == "list":
            return [self.json(depth - 1) for _ in range(self.rng.randint(0, 4))]
        keys = ["jsonrpc", "id", "method", "params", "uri", "textDocument", "range", "message", "kind"]
        return {
            self.rng.choice([*keys, self.text(8)]): self.json(depth - 1)
            for _ in range(self.rng.randint(0, 4))
        }

    def uri(self) -> str:
        return self.document_uri if self.rng.random() < 0.6 else self.rng.choice(ODD_URIS)

    # ---- messages --------------------------------------------------------------------------------

    def request(self, method: str, params: Any, kind: str, odd_id: bool | None = None) -> Sent:
        msg_id = self.new_id(odd_id)
        envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None or self.rng.random() < 0.5:
            envelope["params"] = params
        self.request_ids.append(msg_id)
        self.requests[json.dumps(msg_id)] = envelope
        return Sent(kind, frame(json.dumps(envelope)), required=[msg_id])

    def notification(self, method: str, params: Any, kind: str) -> Sent:
        return Sent(kind, frame(json.dumps({"jsonrpc": "2.0", "method": method, "params": params})))

    def stats(self) -> Sent:
        return self.request("assistant/stats", self.rng.choice([None, {}, []]), "stats")

    def search(self) -> Sent:
        queries = ["restock an item", "", "  ", self.text(), "x" * 3000, self.json(1)]
        params: Any = {"query": self.rng.choice(queries)}
        if self.rng.random() < 0.3:
            params["limit"] = self.rng.choice([1, 50, 0, 51, -3, "5", None, True, 2.5])
        if self.rng.random() < 0.1:
            params = self.rng.choice([None, [], "query"])
        return self.request("assistant/searchCodebase", params, "search")

    def next_edit(self) -> Sent:
        """A next-edit request (mostly about a version the document is not at, or malformed), or what
        the client says of a suggestion (an id the server may never have given)."""
        if self.rng.random() < 0.3:
            method = self.rng.choice(
                ["assistant/nextEditShown", "assistant/nextEditAccepted", "assistant/nextEditRejected"]
            )
            params: Any = {"id": self.rng.choice(["ne-1", "ne-2", "", 5, None, self.text(200)])}
            return self.notification(method, self.rng.choice([params, None, []]), "nextEditFeedback")
        version = self.rng.choice([1, 2, 99, -1, 2**40, None, "2"])
        params = {"textDocument": {"uri": self.uri(), "version": version}, "position": self.position()}
        if self.rng.random() < 0.1:
            params = self.rng.choice([None, [], {"textDocument": {"uri": self.uri()}}])
        return self.request("assistant/nextEdit", params, "nextEdit")

    def code_action(self) -> Sent:
        params = {
            "textDocument": {"uri": self.uri()},
            "range": self.range(),
            "context": {"diagnostics": self.rng.choice([[], [self.json(2)]])},
        }
        return self.request("textDocument/codeAction", params, "codeAction")

    def chat(self) -> Sent:
        messages = ["What does add do?", "Explain this.", "", "  ", self.text()]
        params: dict[str, Any] = {"message": self.rng.choice(messages)}
        if self.rng.random() < 0.5:
            params["textDocument"] = {"uri": self.uri()}
            if self.rng.random() < 0.5:
                params["range"] = self.range()
        if self.rng.random() < 0.2:
            params["conversationId"] = self.rng.choice(["c1", "", 5, self.text(10)])
        if self.rng.random() < 0.2:
            params["partialResultToken"] = self.rng.choice(["tok", 7, None, [1]])
        return self.request("assistant/chat", params, "chat")

    def diagnostics(self) -> Any:
        """What a Fix carries: LSP diagnostics, or forged ones (no range, a range or a message of the
        wrong type, anything), or more of them than a request may carry."""
        good = {"range": self.range(), "message": self.text(), "severity": 1, "source": "fuzz"}
        forged = [
            {"message": "no range"},
            {"range": self.json(1), "message": "x"},
            {"range": {"start": self.position()}, "message": "x"},
            {"range": self.range(), "message": self.json(1)},
            {"range": self.range(), "message": "x", "severity": self.json(1)},
            {"range": self.range(), "message": "x", "source": self.json(1)},
            self.json(1),
        ]
        roll = self.rng.random()
        if roll < 0.3:
            return [good]
        if roll < 0.9:
            return [good, self.rng.choice(forged)]
        if roll < 0.95:
            return [good] * self.rng.choice([1001, 20_000])
        return self.json(1)

    def action_argument(self) -> Any:
        """Mostly what the server's own code actions carry; sometimes anything."""
        if self.rng.random() < 0.2:
            return self.json(2)
        kind = self.rng.choice(["explain", "fix", "document", "refactor", "tests", "nope", 3])
        argument = {"uri": self.uri(), "range": self.range(), "kind": kind}
        if self.rng.random() < 0.4:
            argument["diagnostics"] = self.diagnostics()
        return argument

    def command(self) -> Sent:
        argument = self.action_argument()
        arguments = self.rng.choice([[argument]] * 6 + [[], [argument, argument], None])
        command = self.rng.choice(["llamaLsp.codeAction"] * 8 + ["no.such.command", ""])
        return self.request(
            "workspace/executeCommand", {"command": command, "arguments": arguments}, "command"
        )

    def resolve(self) -> Sent:
        return self.request(
            "codeAction/resolve", {"title": "Llama", "data": self.action_argument()}, "resolve"
        )

    def reopen(self) -> Sent:
        """The document again, so that the fuzz's didClose and didChange leave the features something."""
        self.version += 1
        document = {"uri": self.document_uri, "languageId": "python", "version": self.version, "text": SOURCE}
        return self.notification("textDocument/didOpen", {"textDocument": document}, "reopen")

    def cancel(self) -> Sent:
        target = self.rng.choice(self.request_ids[-30:]) if self.request_ids else 1
        forged = [[target], {"id": target}, 1.5, True]
        return self.notification(
            "$/cancelRequest", {"id": self.rng.choice([target, target, "nope", None, *forged])}, "cancel"
        )

    def initialize_again(self) -> Sent:
        """A second initialize, which must be refused and must not drop the open documents."""
        params = {
            "processId": None,
            "rootUri": None,
            "capabilities": {},
            "initializationOptions": self.json(1),
        }
        return self.request("initialize", params, "initialize")

    def document_notification(self) -> Sent:
        uri = self.uri()
        method = self.rng.choice(["textDocument/didOpen", "textDocument/didChange", "textDocument/didClose"])
        version = self.rng.choice([1, 2, 99, -1, 2**40, None])
        if method == "textDocument/didOpen":
            text = self.rng.choice([SOURCE, self.text(), *ODD_TEXT])
            params: Any = {
                "textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}
            }
        elif method == "textDocument/didChange":
            change = self.rng.choice([{"text": self.text()}, {"range": self.range(), "text": self.text()}])
            params = {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]}
        else:
            params = {"textDocument": {"uri": uri}}
        return self.notification(method, params, "document")

    def unknown_method(self) -> Sent:
        method = self.rng.choice(["no/such", "$/custom", "assistant/nothing", self.text(12) or "x"])
        if self.rng.random() < 0.5:
            return self.request(method, self.json(2), "unknown")
        return self.notification(method, self.json(2), "unknown")

    def random_params(self) -> Sent:
        if self.rng.random() < 0.7:
            return self.request(self.rng.choice(REQUEST_METHODS), self.json(), "randomParams")
        return self.notification(self.rng.choice(SAFE_NOTIFICATIONS), self.json(), "randomParams")

    def huge(self) -> Sent:
        big = "y" * self.rng.randint(HUGE // 2, HUGE)
        choice = self.rng.randrange(4)
        if choice == 0:
            return self.request("assistant/chat", {"message": big}, "huge")
        if choice == 1:
            return self.request("assistant/stats", {"padding": big}, "huge", odd_id=False)
        if choice == 2:
            text = "x = 1\n" * (len(big) // 6)
            params = {"textDocument": {"uri": self.uri(), "languageId": "python", "version": 1, "text": text}}
            return self.notification("textDocument/didOpen", params, "huge")
        return self.request("no/such", {"a": [big]}, "huge", odd_id=False)

    def bad_envelope(self) -> Sent:
        msg_id = self.new_id()
        shapes: list[tuple[dict[str, Any], bool]] = [  # (message, whether its id must be answered)
            ({"jsonrpc": "1.0", "id": msg_id, "method": "assistant/stats"}, True),
            ({"id": msg_id, "method": "assistant/stats"}, True),
            ({"jsonrpc": "2.0", "id": msg_id}, True),
            ({"jsonrpc": "2.0", "id": msg_id, "method": self.rng.choice([5, None, "", [], {}])}, True),
            (
                {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "method": "assistant/stats",
                    "params": self.rng.choice([1, "s", True]),
                },
                True,
            ),
            (
                {
                    "jsonrpc": "2.0",
                    "id": msg_id,
                    "method": self.rng.choice(["exit", "textDocument/didOpen", "initialized"]),
                },
                True,
            ),
            ({"jsonrpc": "2.0", "id": msg_id, "method": "assistant/stats", "extra": self.json(1)}, True),
            (
                {
                    "jsonrpc": "2.0",
                    "id": self.rng.choice([True, 1.5, None, [1], {"a": 1}]),
                    "method": "assistant/stats",
                },
                False,
            ),
            (
                {"jsonrpc": "2.0", "method": self.rng.choice(["shutdown", "initialize", "assistant/stats"])},
                False,
            ),
            ({"jsonrpc": "2.0", "id": msg_id, "result": self.json(1)}, False),
            ({"jsonrpc": "2.0", "id": msg_id, "error": self.json(1)}, False),
            ({}, False),
        ]
        envelope, answered = self.rng.choice(shapes)
        sent = Sent("badEnvelope", frame(json.dumps(envelope)))
        if answered:
            sent.required.append(msg_id)
            self.requests[json.dumps(msg_id)] = envelope
        return sent

    def batch(self) -> Sent:
        items: list[Any] = []
        required = []
        for _ in range(self.rng.randint(0, 4)):
            if self.rng.random() < 0.6:
                msg_id = self.new_id()
                required.append(msg_id)
                items.append(
                    {
                        "jsonrpc": "2.0",
                        "id": msg_id,
                        "method": self.rng.choice(["assistant/stats", "shutdown"]),
                    }
                )
            else:
                items.append(self.rng.choice([{"jsonrpc": "2.0", "method": "exit"}, 5, "x", None]))
        return Sent("batch", frame(json.dumps(items)), required=required)

    def not_an_object(self) -> Sent:
        return Sent("notObject", frame(json.dumps(self.rng.choice([1, "text", None, True, 2.5, [[]]]))))

    def unparsable(self) -> Sent:
        body = self.rng.choice(
            [b"{", b"{]", b"\xff\xfe", b"nope", b'{"jsonrpc": "2.0", "id": 1,', b"[1,]", b"{'a': 1}"]
        )
        return Sent("unparsable", frame(body))

    def broken_framing(self) -> Sent:
        msg_id = self.new_id(odd=False)
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "assistant/stats"}).encode()
        fault = self.rng.choice(
            ["short", "long", "lower", "lf", "junk", "huge", "bad number", "no blank line"]
        )
        data = {
            "short": frame(body, length=max(1, len(body) - self.rng.randint(1, 30))),
            "long": frame(body, length=len(body) + self.rng.randint(1, 500)),
            "lower": frame(body, header=b"content-length"),
            "lf": b"Content-Length: %d\n\n%s" % (len(body), body),
            "junk": self.text(50).encode("utf-8", "surrogatepass").replace(b"\\", b"") + body,
            "huge": b"Content-Length: 1000000000000\r\n\r\n" + body,
            "bad number": b"Content-Length: 12x\r\n\r\n" + body,
            "no blank line": b"Content-Length: %d\r\n%s" % (len(body), body),
        }[fault]
        return Sent(f"framing:{fault}", data, optional=[msg_id])

    def next(self) -> Sent:
        makers: list[tuple[Callable[[], Sent], int]] = [
            (self.stats, 8),
            (self.code_action, 10),
            (self.chat, 8),
            (self.search, 5),
            (self.next_edit, 5),
            (self.command, 5),
            (self.resolve, 3),
            (self.cancel, 6),
            (self.document_notification, 12),
            (self.unknown_method, 5),
            (self.random_params, 14),
            (self.huge, 1),
            (self.bad_envelope, 12),
            (self.batch, 4),
            (self.not_an_object, 3),
            (self.unparsable, 3),
            (self.broken_framing, 6),
            (self.initialize_again, 1),
        ]
        make = self.rng.choices([m for m, _ in makers], weights=[w for _, w in makers])[0]
        return make()


@dataclass
class FuzzRun:
    """What one fuzz run sent and received, for the tests below to judge."""

    fuzzer: Fuzzer
    n_sent: int
    seconds: float
    kinds: Counter[str]
    required: set[str]  # json.dumps of ids
    optional: set[str]
    answers: list[dict[str, Any]]
    late: list[str]
    framing_errors: list[str]
    shown: list[str]  # window/showMessage texts
    final_chat: dict[str, Any]
    alive_after: bool
    log: str


@pytest.fixture(scope="module")
def fuzz_run(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> FuzzRun:
    tmp_path = tmp_path_factory.mktemp("fuzz")
    started = time.monotonic()
    options = {"contextSize": 1024, "slots": 2, "maxTokens": 8, "maxToolSteps": 2}
    server = start_server(tmp_path, tiny_model, options)
    try:
        server.wait_for_status("ready", timeout=60)
        document_uri = (tmp_path / "workspace" / "calc.py").as_uri()
        opened = {"uri": document_uri, "languageId": "python", "version": 1, "text": SOURCE}
        server.notify("textDocument/didOpen", {"textDocument": opened})
        fuzzer = Fuzzer(random.Random(SEED), document_uri)
        first_received = len(server.received)
        sent_at: dict[str, float] = {}
        required: set[str] = set()
        optional: set[str] = set()
        kinds: Counter[str] = Counter()
        late: list[str] = []
        n_sent = 0
        while n_sent < N_MESSAGES and len(late) < 3:
            window = [fuzzer.reopen()] + [fuzzer.next() for _ in range(WINDOW - 2)]
            window.append(fuzzer.stats())  # a well-framed last message: nothing waits on the idle fallback
            n_sent += len(window)
            now = time.monotonic()
            for sent in window:
                kinds[sent.kind] += 1
                for msg_id in sent.required:
                    required.add(json.dumps(msg_id))
                    sent_at[json.dumps(msg_id)] = now
                optional.update(json.dumps(msg_id) for msg_id in sent.optional)
            server.write(b"".join(sent.data for sent in window))
            for sent in window:
                for msg_id in sent.required:
                    deadline = sent_at[json.dumps(msg_id)] + ANSWER_TIMEOUT_S
                    try:
                        server.answer(msg_id, timeout=max(deadline - time.monotonic(), 0.05))
                    except AssertionError:
                        late.append(f"{sent.kind}: {fuzzer.describe(msg_id)}")
        server.untaken_answers(settle=1.0)
        seconds = time.monotonic() - started

        # The fuzz may have closed or mangled the document: open it afresh for the last chat.
        server.notify("textDocument/didClose", {"textDocument": {"uri": document_uri}})
        server.notify("textDocument/didOpen", {"textDocument": {**opened, "version": 10_000}})
        final_chat = server.request(
            "assistant/chat", {"message": "What does add do?", "textDocument": {"uri": document_uri}}
        )
        received = server.received[first_received:]
        return FuzzRun(
            fuzzer=fuzzer,
            n_sent=n_sent,
            seconds=seconds,
            kinds=kinds,
            required=required,
            optional=optional,
            answers=[value for value in received if is_answer(value)],
            late=late,
            framing_errors=server.framing_errors,
            shown=[v["params"]["message"] for v in received if v.get("method") == "window/showMessage"],
            final_chat=final_chat,
            alive_after=server.process.poll() is None,
            log=server.log(),
        )
    finally:
        server.close()


def test_fuzz_answers_every_request_once_within_the_timeout(fuzz_run: FuzzRun):
    outcomes = Counter(a["error"]["code"] if "error" in a else "result" for a in fuzz_run.answers)
    print(f"fuzz: {fuzz_run.n_sent} messages, {len(fuzz_run.answers)} answers in {fuzz_run.seconds:.1f} s")
    by_method = Counter(
        (
            str(fuzz_run.fuzzer.requests.get(json.dumps(a["id"]), {}).get("method")),
            a["error"]["code"] if "error" in a else "ok",
        )
        for a in fuzz_run.answers
    )
    print(f"messages: {dict(fuzz_run.kinds)}\nanswers: {dict(outcomes)}\nby method: {dict(by_method)}")
    assert fuzz_run.n_sent >= N_MESSAGES
    assert not fuzz_run.late, f"requests not answered in {ANSWER_TIMEOUT_S} s: {fuzz_run.late}"
    assert not fuzz_run.framing_errors, fuzz_run.framing_errors
    counts = Counter(json.dumps(answer.get("id")) for answer in fuzz_run.answers)
    assert not [i for i in fuzz_run.required if counts[i] != 1], "requests answered other than once"
    assert not [i for i in fuzz_run.optional if counts[i] > 1], "requests in broken frames answered twice"
    final_id = json.dumps(fuzz_run.final_chat["id"])
    assert set(counts) - {final_id} <= fuzz_run.required | fuzz_run.optional | {"null"}, "unsent ids answered"


def test_fuzz_leaves_the_server_chatting_on_the_one_model_it_loaded(fuzz_run: FuzzRun):
    assert fuzz_run.alive_after
    assert "result" in fuzz_run.final_chat, fuzz_run.final_chat
    assert (
        fuzz_run.final_chat["result"]["content"] and fuzz_run.final_chat["result"]["finishReason"] == "length"
    )
    assert fuzz_run.log.count("model loaded in") == 1, "the model was loaded more than once"


def test_fuzz_finds_no_internal_errors(fuzz_run: FuzzRun):
    internal = [
        f"{answer['error']['message'][:200]} <- {fuzz_run.fuzzer.describe(answer['id'])}"
        for answer in fuzz_run.answers
        if "error" in answer
        and (
            answer["error"]["code"] == INTERNAL_ERROR
            or (answer["error"]["code"] == REQUEST_FAILED and "internal error" in answer["error"]["message"])
        )
    ]
    assert not internal, "internal errors:\n" + "\n".join(internal)
    at = fuzz_run.log.find("Traceback")
    assert at < 0, fuzz_run.log[max(at - 300, 0) : at + 2000]


def test_fuzz_refuses_every_second_initialize(fuzz_run: FuzzRun):
    answers = [
        answer
        for answer in fuzz_run.answers
        if fuzz_run.fuzzer.requests.get(json.dumps(answer["id"]), {}).get("method") == "initialize"
    ]
    assert answers, "the fuzz sent no initialize"
    assert all(answer.get("error", {}).get("code") == INVALID_REQUEST for answer in answers), answers[:3]


def test_fuzz_shows_the_user_no_server_errors(fuzz_run: FuzzRun):
    errors = Counter(message[:120] for message in fuzz_run.shown if message.startswith("Error in server"))
    assert not errors, errors


def test_code_actions_answer_on_a_file_name_too_long_for_the_file_system(tiny_model: Path, tmp_path: Path):
    server = start_server(tmp_path, tiny_model)
    try:
        uri = "file:///tmp/" + "a" * 300 + ".py"
        document = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
        server.notify("textDocument/didOpen", {"textDocument": document})
        selection = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}
        argument = {"uri": uri, "range": selection, "kind": "explain"}
        reply = server.request(
            "workspace/executeCommand",
            {"command": "llamaLsp.codeAction", "arguments": [argument]},
            timeout=60,
        )
        assert "internal error" not in reply.get("error", {}).get("message", ""), reply
    finally:
        server.close()
