"""A test client for the server over stdio: pytest-lsp's client plus partial results, status and applyEdit.

pytest-lsp's default `$/progress` handler only understands work-done progress and rejects partial
results, so this client records raw progress values per token instead.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from lsp_server.lsp.lsp_json import plain_json_converter
from lsp_server.lsp.protocol import STATUS, to_plain

SERVER_COMMAND = [sys.executable, "-m", "lsp_server", "--stdio"]


class AssistantClient(LanguageClient):
    server_info: types.InitializeResult
    partials: dict[Any, list[Any]]
    statuses: list[dict[str, Any]]
    applied_edits: list[types.ApplyWorkspaceEditParams]

    async def request(self, method: str, params: Any, timeout: float = 600) -> Any:
        """A custom request; the result comes back as plain JSON."""
        result = await asyncio.wait_for(self.protocol.send_request_async(method, params), timeout)
        return to_plain(result)

    async def wait_for_status(self, state: str, timeout: float = 300) -> dict[str, Any]:
        async def poll() -> dict[str, Any]:
            while True:
                for status in self.statuses:
                    if status["state"] == state:
                        return status
                await asyncio.sleep(0.05)

        return await asyncio.wait_for(poll(), timeout)


def make_client() -> AssistantClient:
    client = AssistantClient(converter_factory=plain_json_converter)
    register_lsp_features(client, {m: f for m, f in DEFAULT_CLIENT_FEATURES.items() if m != types.PROGRESS})
    client.partials = {}
    client.statuses = []
    client.applied_edits = []

    @client.feature(types.PROGRESS)
    def on_progress(params: types.ProgressParams) -> None:
        client.partials.setdefault(params.token, []).append(to_plain(params.value))

    @client.feature(STATUS)
    def on_status(params: Any) -> None:
        client.statuses.append(to_plain(params))

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        client.applied_edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    return client


def initialize_params(root: Path, options: dict[str, Any]) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities("neovim"),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
        initialization_options=options,
    )


def open_document(client: LanguageClient, path: Path, language: str = "python", version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id=language, version=version, text=path.read_text())
        )
    )
    return uri
