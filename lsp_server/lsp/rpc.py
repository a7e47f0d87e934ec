"""The JSON-RPC layer under pygls: framing, envelope checks, and the protocol's answers and cancellation.

Owns everything between the bytes a client writes and pygls's handlers, so that every request gets
exactly one answer and no input can stop, hang or crash the server:

- FrameParser: a sans-IO reader of LSP frames. Header names in any case, CRLF or LF line endings,
  unknown headers ignored, a capped Content-Length, and recovery from a wrong Content-Length (the JSON
  value the body starts with wins) and from junk (resync at the next Content-Length header).
- check_envelope / check_batch: JSON-RPC 2.0 envelope validation; anything malformed that carries an id
  gets an error answer with that id, and id null where the id cannot be known.
- HardenedProtocol: pygls's LanguageServerProtocol, answering what pygls drops (params that do not
  structure, requests after shutdown) and cancelling what pygls leaves running (the command behind a
  workspace/executeCommand), without tracebacks in answers.
- serve_stdio: the stdio loop that ties them together.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import json
import logging
import os
import re
import sys
import threading
import traceback
import uuid
from collections.abc import Generator
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException, JsonRpcRequestCancelled
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.protocol.language_server import LanguageServerProtocol, lsp_method

if TYPE_CHECKING:
    from pygls.server import JsonRPCServer

log = logging.getLogger("llama_lsp.rpc")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

MAX_CONTENT_LENGTH = 64 * 2**20
MAX_HEADER_BYTES = 8192  # a header block longer than this is junk, not a slow client
IDLE_SECONDS = 0.5  # how long a body may sit incomplete before a complete JSON value in it is taken
READ_CHUNK = 64 * 1024

MsgId = int | str


def _lsp_methods_by_kind() -> tuple[frozenset[str], frozenset[str]]:
    """lsprotocol's requests and notifications: a request's message type is the one with an id."""
    requests: set[str] = set()
    notifications: set[str] = set()
    for method, (message_type, *_rest) in types.METHOD_TO_TYPES.items():
        has_id = attrs.has(message_type) and "id" in attrs.fields_dict(message_type)
        (requests if has_id else notifications).add(method)
    return frozenset(requests), frozenset(notifications)


LSP_REQUESTS, LSP_NOTIFICATIONS = _lsp_methods_by_kind()


# ---- framing ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """One message body, parsed as JSON (any JSON value: the envelope is checked later)."""

    value: Any


@dataclass(frozen=True)
class FrameError:
    """Bytes that held no message; answered with id null, since no id can be read from them."""

    code: int
    message: str


_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
_BLANK = re.compile(rb"[ \t\r\n]*")
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_LINE_BREAK = re.compile(rb"\r?\n")
_HEADER_LINE = re.compile(rb"(" + _TOKEN + rb"+)[ \t]*:[ \t]*([^\r\n]*?)[ \t]*\r?")
_PARTIAL_HEADER_LINE = re.compile(_TOKEN + rb"*(?:[ \t]*:[^\r\n]*)?\r?")
_CONTENT_LENGTH_NAME = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
# A Content-Length header as it opens the next message. The raw line break after the digits cannot occur
# inside a JSON string, so a match inside a body means the body is not JSON (or has ended).
_NEXT_HEADER = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
_NEXT_HEADER_OVERLAP = 256  # rescan this much of what was already searched: a header split across reads
_JSON_WHITESPACE = " \t\r\n"
_DECODER = json.JSONDecoder()
_INCOMPLETE, _INVALID = "incomplete", "invalid"


def _parse_body(data: bytes) -> tuple[bool, Any]:
    """(True, value) if the bytes are exactly one JSON value in UTF-8, else (False, None)."""
    try:
        return True, json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):
        return False, None


def _decode_prefix(data: bytes) -> tuple[Any, int] | str:
    """The JSON object or array the bytes start with and the bytes it takes, or why there is none.

    _INCOMPLETE when the bytes could still become one (they end inside it), else _INVALID. Only objects
    and arrays count: they end with their own delimiter, while "12" may be the start of "123".
    """
    text = data.decode("utf-8", "surrogateescape")  # surrogateescape maps back to the same bytes
    start = len(text) - len(text.lstrip(_JSON_WHITESPACE))
    if start == len(text):
        return _INCOMPLETE
    try:
        value, stop = _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        near_end = exc.pos >= len(text.rstrip(_JSON_WHITESPACE)) - 8  # cut inside a literal or escape
        return _INCOMPLETE if near_end or exc.msg.startswith("Unterminated string") else _INVALID
    except (ValueError, RecursionError):
        return _INVALID
    if not isinstance(value, dict | list):
        return _INVALID
    size = len(text[:stop].encode("utf-8", "surrogateescape"))
    try:
        data[:size].decode("utf-8")
    except UnicodeDecodeError:
        return _INVALID
    return value, size


class FrameParser:
    """Turns the bytes a client writes into message bodies and framing errors; does no I/O.

    feed() takes bytes as they arrive. idle() is for when nothing has arrived for IDLE_SECONDS while
    wants_idle_check is true: a client that overstated Content-Length waits for an answer that would
    otherwise never come, so a complete JSON value at the start of the body is taken then.
    """

    def __init__(self, max_content_length: int = MAX_CONTENT_LENGTH) -> None:
        self.max_content_length = max_content_length
        self._buffer = bytearray()
        self._body_length: int | None = None  # the declared length of the body being read
        self._body_misframed = False  # the declared length's bytes were not JSON
        self._decoded_at_size = 0  # buffer size at the last speculative decode: retried as it doubles
        self._searched_to = 0  # how far the body was searched for the next header
        self._in_junk = False  # a ParseError was sent for the junk being skipped now
        self._idle_checked = False

    @property
    def wants_idle_check(self) -> bool:
        return self._body_length is not None and not self._idle_checked

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Frame | FrameError]:
        self._buffer += data
        self._idle_checked = False
        return self._drain(idle=False)

    def idle(self) -> list[Frame | FrameError]:
        self._idle_checked = True
        return self._drain(idle=True)

    def _drain(self, idle: bool) -> list[Frame | FrameError]:
        events: list[Frame | FrameError] = []
        while self._read_body(events, idle) if self._body_length is not None else self._read_header(events):
            pass
        return events

    # ---- headers ---------------------------------------------------------------------------------

    def _read_header(self, events: list[Frame | FrameError]) -> bool:
        """Reads one header block; True if the state moved on, False to wait for more bytes."""
        buffer = self._buffer
        blank = _BLANK.match(buffer)
        del buffer[: blank.end() if blank else 0]
        if not buffer:
            return False
        end = _HEADER_END.search(buffer, 0, MAX_HEADER_BYTES + 4)
        if end is None:
            if len(buffer) < MAX_HEADER_BYTES and self._could_be_headers(bytes(buffer)):
                return False
            return self._skip_junk(events)
        length = self._content_length(bytes(buffer[: end.start()]))
        if length is None:
            return self._skip_junk(events)
        del buffer[: end.end()]
        self._in_junk = False
        if length > self.max_content_length:
            events.append(
                FrameError(
                    INVALID_REQUEST,
                    f"Content-Length {length} is over the limit of {self.max_content_length} bytes; "
                    "the message is skipped",
                )
            )
            self._in_junk = True  # its body, as it arrives, is skipped without another error
            return True
        self._start_body(length)
        return True

    @staticmethod
    def _content_length(block: bytes) -> int | None:
        length = None
        for line in _LINE_BREAK.split(block):
            match = _HEADER_LINE.fullmatch(line)
            if match is None:
                return None
            if length is None and match.group(1).lower() == b"content-length":
                value = match.group(2)
                if not value.isdigit():
                    return None
                length = int(value) if len(value) <= 18 else sys.maxsize  # int() caps its digits
        return length

    @staticmethod
    def _could_be_headers(data: bytes) -> bool:
        *complete, partial_line = _LINE_BREAK.split(data)
        return all(_HEADER_LINE.fullmatch(line) for line in complete) and bool(
            _PARTIAL_HEADER_LINE.fullmatch(partial_line)
        )

    def _skip_junk(self, events: list[Frame | FrameError]) -> bool:
        """Drops bytes up to the next Content-Length header (one ParseError per run of junk)."""
        if not self._in_junk:
            events.append(FrameError(PARSE_ERROR, "bytes without a Content-Length header are not a message"))
            self._in_junk = True
        buffer = self._buffer
        header = _CONTENT_LENGTH_NAME.search(buffer, 1)
        if header is not None:
            del buffer[: header.start()]
            return True
        del buffer[: -(len(b"content-length") - 1)]  # keeps what may be the start of a header
        return False

    # ---- bodies ----------------------------------------------------------------------------------

    def _start_body(self, length: int) -> None:
        self._body_length = length
        self._body_misframed = False
        self._decoded_at_size = 0
        self._searched_to = 0

    def _end_body(self, consumed: int) -> None:
        del self._buffer[:consumed]
        self._body_length = None

    def _read_body(self, events: list[Frame | FrameError], idle: bool) -> bool:
        """Reads the body being framed; True if the state moved on, False to wait for more bytes."""
        buffer, length = self._buffer, self._body_length
        assert length is not None
        if not self._body_misframed and len(buffer) >= length:
            ok, value = _parse_body(bytes(buffer[:length]))
            if ok:
                self._end_body(length)
                events.append(Frame(value))
                return True
            self._body_misframed = True
            log.debug("the %d bytes Content-Length declares are not JSON; looking for the message", length)

        # The declared length is wrong, or the body is not (yet) JSON. The next message's header, once
        # it is here, says where this body must end at the latest.
        header = self._find_next_header()
        limit = header.start() if header is not None else len(buffer)
        retry = self._body_misframed and len(buffer) >= 2 * self._decoded_at_size
        if not (idle or header is not None or retry):
            return False
        self._decoded_at_size = len(buffer)
        decoded = _decode_prefix(bytes(buffer[:limit]))
        if isinstance(decoded, tuple):
            value, size = decoded
            rest_is_blank = not bytes(buffer[size:limit]).strip()
            if header is not None or self._body_misframed or rest_is_blank:
                log.debug("took a %d-byte message framed with Content-Length %d", size, length)
                self._end_body(size)
                events.append(Frame(value))
                return True
            return False
        if header is not None:
            return self._drop_body(events, header.start())
        if self._body_misframed and (decoded == _INVALID or idle or len(buffer) > self.max_content_length):
            self._drop_body(events, len(buffer))
            self._in_junk = True  # the rest of an overlong body may still come: skip it quietly
            return True
        return False

    def _find_next_header(self) -> re.Match[bytes] | None:
        buffer = self._buffer
        header = _NEXT_HEADER.search(buffer, max(0, self._searched_to - _NEXT_HEADER_OVERLAP))
        if header is None:
            self._searched_to = len(buffer)
        return header

    def _drop_body(self, events: list[Frame | FrameError], size: int) -> bool:
        events.append(FrameError(PARSE_ERROR, "a message body that is not JSON"))
        self._end_body(size)
        return True


# ---- envelopes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    id: MsgId
    method: str
    message: dict[str, Any]  # the envelope with only JSON-RPC's fields, for pygls to structure


@dataclass(frozen=True)
class Notification:
    method: str
    message: dict[str, Any]


@dataclass(frozen=True)
class Response:
    id: MsgId
    result: Any
    error: dict[str, Any] | None  # {code, message, data?}, well-formed (a malformed one is replaced)


@dataclass(frozen=True)
class Rejection:
    """A message that cannot be served. `answer` is False where JSON-RPC forbids answering it."""

    id: MsgId | None
    code: int
    message: str
    answer: bool = True


Envelope = Request | Notification | Response | Rejection

_REQUEST_FIELDS = ("jsonrpc", "id", "method", "params")


def is_valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def check_envelope(value: Any) -> Envelope:
    """Classifies one parsed message, or says why it cannot be served (JSON-RPC 2.0, LSP's methods).

    Liberal where it is harmless: unknown top-level fields are dropped, not refused.
    """
    if not isinstance(value, dict):
        return Rejection(None, INVALID_REQUEST, f"a message must be a JSON object, not {_json_type(value)}")
    has_id = "id" in value
    answer_id = value["id"] if has_id and is_valid_id(value["id"]) else None
    if "method" in value:
        return _check_call(value, has_id, answer_id)
    if "result" in value or "error" in value:
        return _check_response(value, answer_id)
    if answer_id is not None:
        return Rejection(
            answer_id, INVALID_REQUEST, "a message with an id needs a method, or a result or an error"
        )
    return Rejection(None, INVALID_REQUEST, "not a request, a notification or a response")


def _check_call(value: dict[str, Any], has_id: bool, answer_id: MsgId | None) -> Envelope:
    method = value["method"]
    if has_id and answer_id is None:
        return Rejection(None, INVALID_REQUEST, "id must be an integer or a string")
    if value.get("jsonrpc") != "2.0":
        return Rejection(answer_id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
    if not isinstance(method, str) or not method:
        return Rejection(answer_id, INVALID_REQUEST, "method must be a non-empty string")
    extra = set(value) - set(_REQUEST_FIELDS)
    if extra:
        log.debug("ignoring unknown fields %s of a %s message", sorted(extra), method)
    params = value.get("params")
    if params is not None and not isinstance(params, dict | list):
        return Rejection(
            answer_id,
            INVALID_PARAMS,
            f"params of {method} must be an object or an array, not {_json_type(params)}",
            answer=has_id,
        )
    message = {field: value[field] for field in _REQUEST_FIELDS if field in value}
    if answer_id is None:
        if method in LSP_REQUESTS:
            return Rejection(None, INVALID_REQUEST, f"{method} is a request: it needs an id")
        return Notification(method, message)
    if method in LSP_NOTIFICATIONS:
        return Rejection(answer_id, INVALID_REQUEST, f"{method} is a notification: send it without an id")
    return Request(answer_id, method, message)


def _check_response(value: dict[str, Any], answer_id: MsgId | None) -> Envelope:
    # Never answered: an answer to an answer would start a loop between two confused peers.
    if answer_id is None:
        return Rejection(None, INVALID_REQUEST, "a response without a valid id", answer=False)
    if value.get("jsonrpc") != "2.0":
        return Rejection(answer_id, INVALID_REQUEST, 'a response whose jsonrpc is not "2.0"', answer=False)
    if "error" not in value:
        return Response(answer_id, value["result"], None)
    error = value["error"]
    well_formed = (
        isinstance(error, dict)
        and isinstance(error.get("code"), int)
        and not isinstance(error.get("code"), bool)
        and isinstance(error.get("message"), str)
    )
    if not well_formed or "result" in value:
        # Still a failure for whoever waits on it, rather than a wait that never ends.
        error = {
            "code": INTERNAL_ERROR,
            "message": f"the client sent a malformed error response: {error!r:.200}",
        }
    return Response(answer_id, None, error)


def check_batch(values: list[Any]) -> list[Rejection]:
    """LSP has no batches: each request in one gets InvalidRequest; one id-null error if none is there."""
    rejections = [
        Rejection(item["id"], INVALID_REQUEST, "LSP has no batches: send each message on its own")
        for item in values
        if isinstance(item, dict)
        and is_valid_id(item.get("id"))
        and "result" not in item
        and "error" not in item
    ]
    if not rejections:
        what = "an empty batch" if not values else "a batch (LSP has no batches)"
        rejections.append(Rejection(None, INVALID_REQUEST, f"{what} is not a message"))
    return rejections


# ---- the protocol ----------------------------------------------------------------------------------


def _structure_error(exc: Exception) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        detail = "; ".join(cattrs.transform_error(exc, path="params")[:5])
    else:
        detail = str(exc) or type(exc).__name__
    return detail[:1000]


class HardenedProtocol(LanguageServerProtocol):
    """pygls's LanguageServerProtocol that answers every request once and cancels what it is asked to.

    Takes parsed JSON through handle_frame (serve_stdio's loop calls it), checks the envelope, and
    structures only the top-level message. Beyond that, relative to pygls:
    - a request after shutdown is answered InvalidRequest, and shutdown cancels only the client's
      requests in flight (pygls also cancelled the handler of an `exit` sent before shutdown's answer);
    - a $/cancelRequest for a generator-run builtin (workspace/executeCommand) cancels the handler it
      runs too, and a generator whose handler ends cancelled is answered RequestCancelled;
    - internal errors are answered without their traceback (it is logged instead);
    - a result that cannot be serialized is answered with an internal error instead of nothing.
    """

    def __init__(self, server: Any, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self._generator_steps: dict[Future[Any], Future[Any]] = {}  # request future -> step running
        self._client_requests: set[MsgId] = set()  # ids of the client's requests not answered yet
        self._write_lock = threading.Lock()  # thread handlers' answers must not interleave with others
        self._transport_closed = False

    # ---- incoming --------------------------------------------------------------------------------

    def handle_frame(self, event: Frame | FrameError) -> None:
        """Handles one event of the FrameParser; nothing a client sends raises out of here."""
        if isinstance(event, FrameError):
            log.warning("framing: %s", event.message)
            self.send_error(None, event.code, event.message)
            return
        try:
            self.handle_json(event.value)
        except Exception as exc:
            log.exception("could not handle a message")
            value = event.value
            if isinstance(value, dict) and "method" in value and is_valid_id(value.get("id")):
                self.send_error(value["id"], INTERNAL_ERROR, f"llama-lsp could not handle the message: {exc}")

    def handle_json(self, value: Any) -> None:
        if isinstance(value, list):
            for rejection in check_batch(value):
                self._reject(rejection)
            return
        envelope = check_envelope(value)
        if isinstance(envelope, Rejection):
            self._reject(envelope)
        elif isinstance(envelope, Response):
            self._receive_response(envelope)
        elif self._shutdown and isinstance(envelope, Request):
            self.send_error(
                envelope.id, INVALID_REQUEST, f"the server is shut down: {envelope.method} refused"
            )
        elif self._shutdown and envelope.method != types.EXIT:
            log.debug("ignoring %s after shutdown", envelope.method)
        else:
            self._dispatch(envelope)

    def _reject(self, rejection: Rejection) -> None:
        log.warning("rejected a message (id %r): %s", rejection.id, rejection.message)
        if rejection.answer:
            self.send_error(rejection.id, rejection.code, rejection.message)

    def _dispatch(self, envelope: Request | Notification) -> None:
        is_request = isinstance(envelope, Request)
        default_type = JsonRPCRequestMessage if is_request else JsonRPCNotification
        message_type = self.get_message_type(envelope.method) or default_type
        try:
            message = self._converter.structure(envelope.message, message_type)
        except Exception as exc:
            detail = _structure_error(exc)
            if isinstance(envelope, Request):
                log.warning("invalid params for %s (id %r): %s", envelope.method, envelope.id, detail)
                self.send_error(
                    envelope.id, INVALID_PARAMS, f"invalid params for {envelope.method}: {detail}"
                )
            else:
                log.warning("ignoring a %s notification with invalid params: %s", envelope.method, detail)
            return
        log.debug("%s %s", "request" if is_request else "notification", envelope.method)
        context = contextvars.copy_context()  # each handler in its own context, as pygls does
        if isinstance(envelope, Request):
            if envelope.method == types.SHUTDOWN:
                # From here on requests are refused, and `exit`, even before shutdown's answer, exits 0.
                self._shutdown = True
            self._client_requests.add(envelope.id)
            context.run(self._handle_request, envelope.id, envelope.method, message.params)
        else:
            context.run(self._handle_notification, envelope.method, message.params)

    def _receive_response(self, response: Response) -> None:
        if response.id not in self._result_types:
            log.warning("ignoring a response with id %r: no request of ours has that id", response.id)
            return
        result_type = self._result_types.pop(response.id) or JsonRPCResponseMessage
        if response.error is not None:
            error = types.ResponseError(
                code=response.error["code"],
                message=response.error["message"],
                data=response.error.get("data"),
            )
            self._handle_response(response.id, None, error)
            return
        try:
            message = self._converter.structure(
                {"jsonrpc": "2.0", "id": response.id, "result": response.result}, result_type
            )
        except Exception as exc:
            detail = _structure_error(exc)
            log.warning("malformed result for our request %r: %s", response.id, detail)
            error = types.ResponseError(code=INTERNAL_ERROR, message=f"malformed result: {detail}")
            self._handle_response(response.id, None, error)
            return
        self._handle_response(response.id, message.result)

    # ---- lifecycle and cancellation --------------------------------------------------------------

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """Cancels the client's requests still in flight (pygls cancels every future it knows, the
        handler of an `exit` that arrived meanwhile included, so that the process never ends)."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current_id = self.msg_id
        for msg_id in list(self._client_requests):
            future = self._request_futures.get(msg_id)
            if msg_id != current_id and future is not None and not future.done():
                step = self._generator_steps.pop(future, None)
                future.cancel()
                if step is not None:
                    step.cancel()
        self._shutdown = True
        return None

    def _execute_handler(
        self,
        msg_id: MsgId,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        before = self._request_futures.get(msg_id)
        super()._execute_handler(msg_id, handler, callback, args, kwargs)
        future = self._request_futures.get(msg_id)
        if future is not None and future is not before:
            # pygls forgets only the futures of client requests; those of notifications and of generator
            # steps would otherwise stay in _request_futures for good.
            future.add_done_callback(partial(self._forget_future, msg_id))

    def _forget_future(self, msg_id: MsgId, future: Future[Any]) -> None:
        if self._request_futures.get(msg_id) is future:
            del self._request_futures[msg_id]

    def _run_generator(
        self, future: Future[Any] | None, *, gen: Generator[Any, Any, Any], result_future: Future[Any]
    ) -> None:
        """pygls's generator stepping, remembering each step's future so that a cancel reaches it."""
        self._generator_steps.pop(result_future, None)
        if result_future.cancelled():
            gen.close()
            return
        try:
            value = future.result() if future is not None else None
            handler, args, kwargs = gen.send(value)
        except StopIteration as stop:
            result_future.set_result(stop.value)
            return
        except (asyncio.CancelledError, concurrent.futures.CancelledError):
            gen.close()
            result_future.set_exception(JsonRpcRequestCancelled("the request was cancelled"))
            return
        except Exception as exc:
            result_future.set_exception(exc)
            return
        step_id = str(uuid.uuid4())
        try:
            self._execute_handler(
                step_id,
                handler,
                args=args,
                kwargs=kwargs,
                callback=partial(self._run_generator, gen=gen, result_future=result_future),
            )
        except Exception as exc:  # from a step's callback, nothing above would answer the request
            gen.close()
            result_future.set_exception(exc)
            return
        step = self._request_futures.get(step_id)
        if step is not None and not step.done():
            self._generator_steps[result_future] = step

    def _handle_cancel_notification(self, msg_id: MsgId) -> None:
        request = self._request_futures.get(msg_id)
        super()._handle_cancel_notification(msg_id)
        step = self._generator_steps.pop(request, None) if request is not None else None
        if step is not None and step.cancel():
            log.info("cancelled the handler that request %r was running", msg_id)

    # ---- outgoing --------------------------------------------------------------------------------

    def send_error(self, msg_id: MsgId | None, code: int, message: str) -> None:
        if msg_id is not None:
            self._client_requests.discard(msg_id)
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

    def _send_handler_result(self, future: Future[Any], *, msg_id: MsgId) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self.send_error(msg_id, REQUEST_CANCELLED, f"request {msg_id!r} was cancelled")
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
            return
        if isinstance(exc, JsonRpcException):
            log.info("request %r answered with error %d: %s", msg_id, exc.code, exc.message)
            self._send_response(msg_id, error=exc.to_response_error())
        else:
            log.error("request %r failed", msg_id, exc_info=exc)
            message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self._send_response(msg_id, error=types.ResponseError(code=INTERNAL_ERROR, message=message))
        if isinstance(exc, Exception):
            self._server._report_server_error(exc, FeatureRequestError)

    def _check_handler_result(self, future: Future[Any]) -> None:
        if not future.cancelled() and isinstance(future.exception(), JsonRpcRequestCancelled):
            return  # a notification's handler cancelled by shutdown: nothing went wrong
        super()._check_handler_result(future)

    def _send_response(
        self, msg_id: MsgId, result: Any | None = None, error: types.ResponseError | None = None
    ) -> None:
        self._client_requests.discard(msg_id)
        if error is not None and error.code == INTERNAL_ERROR and isinstance(error.data, dict):
            trace = error.data.get("traceback")
            if trace is not None:
                # A traceback helps whoever reads the server's log, not the client's user.
                log.warning("internal error answering request %r: %s", msg_id, error.message)
                log.debug("its traceback:\n%s", "".join(trace) if isinstance(trace, list) else trace)
                data = {k: v for k, v in error.data.items() if k != "traceback"} or None
                error = types.ResponseError(code=error.code, message=error.message, data=data)
        super()._send_response(msg_id, result, error)

    def _send_data(self, data: Any) -> None:
        """pygls's _send_data, except that it logs nothing at INFO and a message that cannot be
        serialized still answers its request, and writes are serialized across threads."""
        if not data:
            return
        try:
            body = json.dumps(data, default=self._serialize_message)
        except Exception as exc:
            log.exception("could not serialize an outgoing message")
            msg_id = data.get("id") if isinstance(data, dict) else getattr(data, "id", None)
            is_answer = not (isinstance(data, dict) and "method" in data) and not hasattr(data, "method")
            if not (is_answer and is_valid_id(msg_id)):
                return
            error = {"code": INTERNAL_ERROR, "message": f"llama-lsp could not serialize its answer: {exc}"}
            body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": error})
        payload = body.encode("utf-8")
        if self._include_headers:
            payload = b"Content-Length: %d\r\n\r\n%s" % (len(payload), payload)
        with self._write_lock:
            if self.writer is None or self._transport_closed:
                log.debug("not sent (no transport): %.200s", body)
                return
            try:
                # Synchronous writers only (serve_stdio's): an awaitable write could reorder messages.
                self.writer.write(payload)
            except (OSError, ValueError) as exc:  # a closed pipe or file: the client has gone
                self._transport_closed = True
                log.warning("cannot write to the client any more (%s)", exc)


# ---- the stdio loop --------------------------------------------------------------------------------


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Serves LSP on stdin/stdout until `exit` or the end of stdin; returns the process's exit code.

    LSP's exit code is 0 after shutdown and 1 otherwise; the end of stdin (the client went away) is 0.
    """
    protocol = server.protocol
    if not isinstance(protocol, HardenedProtocol):
        raise TypeError(f"serve_stdio needs a server built with protocol_cls={HardenedProtocol.__name__}")
    stdin_fd = (stdin or sys.stdin.buffer).fileno()
    protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    try:
        asyncio.run(_read_loop(protocol, stdin_fd))
        return 0
    except SystemExit as exc:  # pygls's exit handler ends the process with sys.exit
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    except KeyboardInterrupt:
        return 130
    finally:
        server.shutdown()


async def _read_loop(protocol: HardenedProtocol, stdin_fd: int) -> None:
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[bytes] = asyncio.Queue(maxsize=8)  # bounds what a fast client can pile up
    threading.Thread(
        target=_pump_stdin, args=(stdin_fd, loop, chunks), name="llama-lsp-stdin", daemon=True
    ).start()
    parser = FrameParser()
    next_chunk: asyncio.Future[bytes] | None = None
    while True:
        if next_chunk is None:
            next_chunk = asyncio.ensure_future(chunks.get())
        # A task kept across waits, not wait_for: a timeout must never lose a chunk already taken.
        done, _ = await asyncio.wait({next_chunk}, timeout=IDLE_SECONDS if parser.wants_idle_check else None)
        if done:
            chunk = next_chunk.result()
            next_chunk = None
            if not chunk:
                log.info("stdin closed: stopping")
                return
            events = parser.feed(chunk)
        else:
            events = parser.idle()
        for event in events:
            protocol.handle_frame(event)


def _pump_stdin(fd: int, loop: asyncio.AbstractEventLoop, chunks: asyncio.Queue[bytes]) -> None:
    """Reads stdin on its own thread (os.read works for pipes, files and terminals alike)."""
    while True:
        try:
            data = os.read(fd, READ_CHUNK)
        except OSError as exc:
            log.warning("cannot read stdin: %s", exc)
            data = b""
        try:
            asyncio.run_coroutine_threadsafe(chunks.put(data), loop).result()
        except (RuntimeError, concurrent.futures.CancelledError):
            return  # the loop has stopped: nobody reads any more
        if not data:
            return
