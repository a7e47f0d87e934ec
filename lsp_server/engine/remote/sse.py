"""A streamed answer's body as the server sends it: server-sent events, each one's data a chunk object.

The events are read line by line as the bytes arrive, so that no line and no event's data is held past
limits.LINE_LIMIT, whatever the server sends; comments (keep-alives) and fields other than data are
skipped. An error the server reports inside the stream is raised as errors.ServerError.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from .errors import Malformed, Refused, ServerError
from .limits import LINE_LIMIT

_LINE_END = re.compile(rb"\r\n|\r|\n")


async def event_data(body: AsyncIterator[bytes]) -> AsyncGenerator[bytes, None]:
    """The data of each server-sent event in the body, in order; comments (keep-alives) and other
    fields are skipped. No line, and no event's data, is held past LINE_LIMIT bytes: Refused."""
    pending = b""  # the line being received
    data: list[bytes] = []  # the event's data lines so far
    n_data = 0
    async for chunk in body:
        searched = max(len(pending) - 1, 0)  # only a "\r" may end pending: see below
        pending += chunk
        start = 0
        for line_end in _LINE_END.finditer(pending, searched):
            if line_end.group() == b"\r" and line_end.end() == len(pending):
                break  # maybe the first half of "\r\n"
            line = pending[start : line_end.start()]
            start = line_end.end()
            if not line:
                if data:
                    yield b"\n".join(data)
                data, n_data = [], 0
                continue
            field, _, value = line.partition(b":")
            if field == b"data":
                n_data += len(value)
                if n_data > LINE_LIMIT:
                    raise Refused(f"an event of more than {LINE_LIMIT >> 20} MiB")
                data.append(value[1:] if value.startswith(b" ") else value)
        pending = pending[start:]
        if len(pending) > LINE_LIMIT:
            raise Refused(f"a line of more than {LINE_LIMIT >> 20} MiB")


def chunk_of(data: bytes) -> dict[str, Any]:
    """An event's data as a chunk object; raises ServerError for an error the server reports."""
    chunk = json.loads(data)
    if not isinstance(chunk, dict):
        raise Malformed("an event that is not a JSON object")
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise ServerError(str(message or "an error event"))
    return chunk
