"""LSP framing, sans-IO: the bytes a client writes in, message bodies parsed as JSON and framing errors out.

FrameParser reads header names in any case, CRLF or LF line endings, ignores unknown headers, caps
Content-Length, and recovers from a wrong Content-Length (the JSON value the body starts with wins) and
from junk (resync at the next Content-Length header). What a body holds is rpc_envelope's concern.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from dataclasses import dataclass
from typing import Any

from .rpc_envelope import INVALID_REQUEST, PARSE_ERROR

log = logging.getLogger("llama_lsp.rpc")

MAX_CONTENT_LENGTH = 64 * 2**20
MAX_HEADER_BYTES = 8192  # a header block longer than this is junk, not a slow client
IDLE_SECONDS = 0.5  # how long a body may sit incomplete before a complete JSON value in it is taken


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
