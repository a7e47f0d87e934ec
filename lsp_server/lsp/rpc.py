"""The JSON-RPC layer under pygls, served on stdio: the loop that ties framing and protocol together.

The layer is split by concern, so that every request gets exactly one answer and no input can stop,
hang or crash the server:

- rpc_framing: FrameParser, a sans-IO reader of LSP frames (bytes in, JSON bodies and errors out);
- rpc_envelope: the JSON-RPC 2.0 envelope checks and error codes (sans-IO, no pygls);
- rpc_protocol: HardenedProtocol, pygls's protocol with the overrides that answer what it drops and
  cancel what it leaves running (the only module, with rpc_client, that touches pygls's private names);
- rpc_client: what a client of pygls needs from its private names;
- here, serve_stdio: stdin to the parser on a thread of its own, each event to the protocol.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import sys
import threading
from typing import TYPE_CHECKING, BinaryIO

from pygls.io_ import StdoutWriter

from .rpc_framing import IDLE_SECONDS, FrameParser
from .rpc_protocol import HardenedProtocol

if TYPE_CHECKING:
    from pygls.server import JsonRPCServer

log = logging.getLogger("llama_lsp.rpc")

READ_CHUNK = 64 * 1024


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
