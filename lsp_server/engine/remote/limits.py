"""How much of a response the remote engine reads: every body is bounded at the HTTP client's own level
(an httpx response hook), before the `openai` client or the event parser reads any of it.

An error's body is read to ERROR_BODY_LIMIT (the client reads it whole, for its message), any other
body to BODY_LIMIT, and one event's data to LINE_LIMIT (sse.py). A compressed body is refused: the
client asks for none, and a few kilobytes of gzip can inflate to gigabytes before any limit sees them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

from .errors import Refused

LINE_LIMIT = 1 << 20  # bytes of one event's data: a chunk is a few hundred, a whole tool call fits
BODY_LIMIT = 64 << 20  # bytes of one response: a 32k-token answer's stream is about 15 MB
ERROR_BODY_LIMIT = 64 << 10  # bytes read of an error's body; the rest is never read


async def bound_body(response: httpx2.Response) -> None:
    """Bounds the body of every response before any of it is read (an httpx response hook). An error's
    body is cut at ERROR_BODY_LIMIT; any other body past BODY_LIMIT is refused, and so is a compressed
    one."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding != "identity":
        raise Refused(f"a compressed body (Content-Encoding: {encoding[:40]}) though asked for none")
    assert isinstance(response.stream, httpx2.AsyncByteStream)  # the client is async
    if response.is_error:
        response.stream = BoundedBody(response.stream, ERROR_BODY_LIMIT, cut=True)
    else:
        response.stream = BoundedBody(response.stream, BODY_LIMIT, cut=False)


class BoundedBody(httpx2.AsyncByteStream):
    """A response body that ends after `limit` bytes (cut) or raises Refused there."""

    def __init__(self, body: httpx2.AsyncByteStream, limit: int, cut: bool):
        self._body, self._limit, self._cut = body, limit, cut

    async def __aiter__(self) -> AsyncIterator[bytes]:
        left = self._limit
        async for chunk in self._body:
            if len(chunk) > left:
                if not self._cut:
                    raise Refused(f"more than {self._limit >> 20} MiB")
                if left:
                    yield chunk[:left]
                return
            left -= len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._body.aclose()
