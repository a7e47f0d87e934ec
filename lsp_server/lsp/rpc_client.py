"""What our clients need from a pygls client that pygls keeps private: the server process it started.

With rpc_protocol on the server's side, the only module that touches pygls's private names; pygls is
pinned to the minor version this was written against (pyproject.toml).
"""

from __future__ import annotations

import asyncio

from pygls.client import JsonRPCClient


def server_process(client: JsonRPCClient) -> asyncio.subprocess.Process | None:
    """The server process that client.start_io started (its stderr, its exit code); None before it."""
    return client._server
