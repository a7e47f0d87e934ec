"""The headless client: the real server as a subprocess over stdio, driven as an editor drives it.

`llama-lsp ask`, `make eval` and `python -m bench` share it: start the server, initialize it with its
options, wait for the model, and end the session (shutdown, exit, the process waited for), with the
server's stderr drained all along. Partial results, status notifications and shown messages arrive
here; the callers decide what to do with them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

from ..lsp import lsp_json, protocol
from ..lsp.rpc_client import server_process


class HeadlessClient(LanguageClient):
    def __init__(self, verbose: bool = False):
        super().__init__("llama-lsp-ask", "1", converter_factory=lsp_json.plain_json_converter)
        self.verbose = verbose  # the server's stderr is shown, not only drained
        self.stream: Callable[[str], None] | None = None  # where partial results go
        self.status: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._drain: asyncio.Task[None] | None = None
        self._register_handlers()

    def _register_handlers(self) -> None:
        @self.feature(types.PROGRESS)
        def on_progress(params: types.ProgressParams) -> None:
            value = protocol.to_plain(params.value)
            if isinstance(value, dict) and "delta" in value and self.stream is not None:
                self.stream(value["delta"])
            elif isinstance(value, dict) and value.get("kind") == "begin":
                print(f"{value.get('title', '')}...", file=sys.stderr)

        @self.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress_create(_params: types.WorkDoneProgressCreateParams) -> None:
            return None

        @self.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            print(params.message, file=sys.stderr)

        @self.feature(types.WORKSPACE_CONFIGURATION)
        def on_configuration(params: types.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]

        @self.feature(protocol.STATUS)
        def on_status(params: Any) -> None:
            self.status.put_nowait(protocol.to_plain(params))

    async def start(self, *server_args: str, command: Sequence[str] = ()) -> None:
        """Starts `command` (by default this Python's `python -m lsp_server --stdio`) with these arguments."""
        command = command or (sys.executable, "-m", "lsp_server", "--stdio")
        await self.start_io(command[0], *command[1:], *server_args)
        self._drain = asyncio.create_task(self._forward_stderr())

    async def initialize_session(self, root: Path, options: dict[str, Any]) -> types.InitializeResult:
        result = await self.initialize_async(initialize_params(root, options))
        self.initialized(types.InitializedParams())
        return result

    async def wait_until_loaded(self) -> dict[str, Any]:
        """The first status that says the model is loaded (ready) or could not be (error)."""
        while (status := await self.status.get())["state"] not in (protocol.READY, protocol.ERROR):
            pass
        return status

    async def wait_until_warm(self, uri: str) -> None:
        """Until a status lists the document `uri` as read into the cache (warming must be on)."""
        while uri not in (await self.status.get()).get("warm", []):
            pass

    async def wait_until_indexed(self, poll_s: float = 0.1) -> None:
        """Until `assistant/searchCodebase` says the workspace index is built (codebaseIndex must be on)."""
        params = {"query": "index", "limit": 1}
        while not (await self.request(protocol.SEARCH_CODEBASE, params))["indexed"]["ready"]:
            await asyncio.sleep(poll_s)

    async def request(self, method: str, params: Any) -> Any:
        """One of our custom requests; the result comes back as plain JSON."""
        return protocol.to_plain(await self.protocol.send_request_async(method, params))

    async def shutdown_session(self, timeout_s: float = 30.0) -> None:
        """shutdown (the server saves its state), exit, then waits for the process to end."""
        await self._shutdown_and_exit(timeout_s)
        await self.stop()

    async def close(self) -> None:
        """Ends the session whatever became of the server, after an error too."""
        with contextlib.suppress(Exception):  # the server is going away either way
            await self._shutdown_and_exit(30.0)
        await self.stop()

    async def _shutdown_and_exit(self, timeout_s: float) -> None:
        await asyncio.wait_for(self.shutdown_async(None), timeout_s)
        self.exit(None)

    async def stop(self) -> None:
        """pygls's stop (waits for the process), then the stderr drain, which has nothing left to read."""
        await super().stop()
        if self._drain is not None:
            self._drain.cancel()

    async def _forward_stderr(self) -> None:
        """Drains the server's stderr (so it never blocks on a full pipe); shows it when verbose."""
        server = server_process(self)
        if server is None or server.stderr is None:
            return
        while line := await server.stderr.readline():
            if self.verbose:
                sys.stderr.write(line.decode("utf-8", "replace"))


async def run_code_action(
    root: Path,
    path: Path,
    lines: tuple[int, int],
    kind: str,
    options: dict[str, Any],
    problem: str = "",
    timeout_s: float = 1800.0,
    server_log: bool = False,
    warm_first: bool = False,
    wait_for_index: bool = False,
) -> tuple[dict[str, Any] | str, dict[str, Any], float]:
    """Starts a server for the folder `root`, opens `path`, resolves its code action of `kind` on `lines`
    (0-based, inclusive; `problem`, if any, as a diagnostic there) as an editor would, and ends the
    session. Returns the resolved action as JSON, or the server's error message when resolving failed,
    the server's `assistant/stats` either way, and the seconds the action took from its request to its
    result. `make eval` and the bench's rewrite measurement run their code actions through it.
    `server_log`: the server's log (info: each refused block, each check) goes to stderr. `warm_first`:
    the action is asked for once the server has read the file into its cache, as in an editor where
    the file has been open for a while; otherwise at once, cold. `wait_for_index`: also once the
    workspace index is built (codebaseIndex on), so that what the code uses from other files is known."""
    client = HeadlessClient(verbose=server_log)
    await client.start("--log-level", "info" if server_log else "warning")
    try:
        await client.initialize_session(root, options)
        uri = path.as_uri()
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, path.read_text("utf-8")))
        )
        if warm_first:
            await asyncio.wait_for(client.wait_until_warm(uri), timeout_s)
        if wait_for_index:
            await asyncio.wait_for(client.wait_until_indexed(), timeout_s)
        selection = types.Range(types.Position(lines[0], 0), types.Position(lines[1] + 1, 0))
        diagnostics = [types.Diagnostic(range=selection, message=problem, source="pytest")] if problem else []
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri),
                range=selection,
                context=types.CodeActionContext(diagnostics=diagnostics),
            )
        )
        chosen = next(
            a for a in actions or [] if isinstance(a, types.CodeAction) and (a.data or {}).get("kind") == kind
        )
        started = time.monotonic()
        try:
            resolved: dict[str, Any] | str = dict(
                lsp_json.to_json(await asyncio.wait_for(client.code_action_resolve_async(chosen), timeout_s))
            )
        except JsonRpcException as exc:
            resolved = str(exc.message or type(exc).__name__)
        resolve_s = time.monotonic() - started
        return resolved, await client.request(protocol.STATS, None), resolve_s
    finally:
        await client.close()


def initialize_params(root: Path, options: dict[str, Any]) -> types.InitializeParams:
    """What the headless client says in `initialize`: one folder, the server's options, and that it
    shows progress and answers configuration requests but applies no edits itself."""
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(
            window=types.WindowClientCapabilities(work_done_progress=True),
            workspace=types.WorkspaceClientCapabilities(configuration=True, apply_edit=False),
        ),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options,
    )
