"""The language server: lifecycle, settings, status, and the one place where every handler is registered.

Handlers stay thin: they validate params, wait for the model, and call a feature module (chat,
code_actions, completion). Every failure becomes an LSP error answer with a useful message; nothing a
request does can take the server down. The model loads in the background after `initialized`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

from lsprotocol import types
from pygls.exceptions import JsonRpcContentModified, JsonRpcException, JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..assistant.codebase import CodebaseIndex
from ..engine import ChatEngine, EngineError, native
from . import chat, code_actions, documents, lsp_json, protocol, settings
from .codebase_index import WorkspaceIndex
from .completion import InlineCompletion
from .failure_diagnostics import FailureDiagnostics
from .mcp import McpFeature
from .model_host import ModelHost, ModelUnavailable
from .next_edit import NextEdits
from .rpc_protocol import HardenedProtocol, replace_workspace, shutdown_received
from .text_document import LspDocuments
from .turns import TurnService
from .warming import Warmer

log = logging.getLogger("llama_lsp.server")

REQUEST_FAILED = -32803  # LSP's RequestFailed: the request was valid but could not be served
EXIT_CLOSE_TIMEOUT_S = 5.0

T = TypeVar("T")


def _native_version() -> str | None:
    """The native library's build (`llama-lsp --version`), or None where it does not load (which a
    remote backend does not need)."""
    try:
        return native.version()
    except native.NativeError:
        return None


class AssistantServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "llama-lsp",
            __version__,
            protocol_cls=HardenedProtocol,
            converter_factory=lsp_json.plain_json_converter,
        )
        self.settings = settings.Settings()
        # The model a remote backend says answers (the one it serves, where the setting names none).
        self._served_name: str | None = None
        self.turns = TurnService(self)
        self.completion = InlineCompletion(self)
        self.next_edits = NextEdits(self)
        self.warmer = Warmer(self, self.turns, self.refresh_status, self.completion.warm_request)
        self.turns.on_answered = self.warmer.answered
        self.model_host = ModelHost(self, lambda: self.settings)
        self.test_diagnostics = FailureDiagnostics(self, self.warn)
        self.codebase = WorkspaceIndex(self)
        self.mcp = McpFeature(self, self.warn, self.protocol.send_request_async)
        self.configured = False  # the client's configuration has been read (or it has none)
        self.state = protocol.LOADING
        self._status_details: tuple[str | None, str | None] = (None, None)  # message, installModel
        self.n_busy = 0

    # ---- status ----------------------------------------------------------------------------------

    def set_status(self, state: str, message: str | None = None, install_model: str | None = None) -> None:
        self.state = state
        self._status_details = (message, install_model)
        payload: dict[str, Any] = {"state": state}
        if message:
            payload["message"] = message
        if install_model:
            payload["installModel"] = install_model
        if state == protocol.BUSY and self.engine is not None:
            payload["queue"] = self.engine.queue_length
        last_stats = self.turns.stats.last_json()
        if last_stats is not None:
            payload["lastStats"] = last_stats
        if state in (protocol.READY, protocol.BUSY) and self.settings.backend is None:
            payload["warm"] = self.warmer.warm_uris  # absent for a remote backend: nothing is warmed
        self.protocol.notify(protocol.STATUS, payload)

    def refresh_status(self) -> None:
        """Sends the status again (the warm documents changed)."""
        if self.state in (protocol.READY, protocol.BUSY):
            self.set_status(self.state, *self._status_details)

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        self.n_busy += 1
        self.set_status(protocol.BUSY)
        try:
            yield
        finally:
            self.n_busy -= 1
            if self.n_busy == 0 and self.state == protocol.BUSY:
                self.set_status(protocol.READY)

    # ---- model: the host loads it; these turn its events into status and progress ----------------

    @property
    def engine_name(self) -> str:
        """The model as the status and the stats name it."""
        return self._served_name or self.settings.engine_name

    async def load_started(self, config: settings.Settings) -> Callable[[], None]:
        doing = "connecting to" if config.backend is not None else "loading"
        self._served_name = None
        self.set_status(protocol.LOADING, f"{doing} {config.engine_name}")
        token = f"llama-lsp-load-{self.model_host.n_loads}"
        if not await self.begin_progress(token, f"{doing.capitalize()} {config.engine_name}"):
            return lambda: None
        return lambda: self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))

    def load_finished(self, config: settings.Settings, info: dict[str, Any]) -> None:
        log.info("model ready: %s (%.1f s)", info.get("model_desc"), info.get("t_load_ms", 0) / 1000)
        if config.backend is not None:
            self._served_name = info["model_desc"]
        self.set_status(protocol.READY, f"{self._served_name or config.engine_name} ready")
        self.warmer.rewarm()  # a new engine: what the old one held is gone (or restored from disk)
        self.next_edits.engine_changed()

    def load_failed(self, config: settings.Settings, error: ModelUnavailable) -> None:
        repeated = (self.state, self._status_details[0]) == (protocol.ERROR, str(error))
        self.set_status(protocol.ERROR, str(error), error.install_model)
        if not repeated:  # a remote backend that stays down is checked again by every request
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Error, message=f"llama-lsp: {error}")
            )

    def backend_failed(self, error: EngineError) -> None:
        """A request failed because the remote backend did: the status says what is wrong until a
        request succeeds again."""
        self.set_status(protocol.ERROR, str(error))

    async def begin_progress(self, token: str, title: str) -> bool:
        window = self.client_capabilities.window
        if window is None or not window.work_done_progress:
            return False
        try:
            await self.work_done_progress.create_async(token)
        except Exception as exc:  # a client may refuse; loading goes on without a progress bar
            log.debug("no work-done progress: %s", exc)
            return False
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, cancellable=False))
        return True

    def report_progress(self, token: str, message: str, percentage: int | None = None) -> None:
        self.work_done_progress.report(
            token, types.WorkDoneProgressReport(message=message, percentage=percentage)
        )

    def end_progress(self, token: str, message: str) -> None:
        self.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))

    @property
    def model_working(self) -> bool:
        """Whether the model is loading, or the engine has a request to answer, running or waiting (read
        from any thread): background work (the index) waits meanwhile, since a request may be waiting for
        the load."""
        engine = self.model_host.engine
        return self.model_host.loading or (engine is not None and engine.queue_length > 0)

    @property
    def codebase_index(self) -> CodebaseIndex | None:
        """The workspace index, as far as it is built; None while there is none."""
        return self.codebase.index

    @property
    def engine(self) -> ChatEngine | None:
        """The engine if one is loaded or loading; None otherwise (nothing waits for it)."""
        return self.model_host.engine

    async def ready_engine(self) -> ChatEngine:
        """The loaded engine; waits while it loads; raises a clear error if it cannot load."""
        try:
            return await self.model_host.ready()
        except ModelUnavailable as exc:
            raise JsonRpcException(f"llama-lsp: {exc}", code=REQUEST_FAILED) from None

    def warn(self, message: str) -> None:
        self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    def apply_settings(self, raw: Any) -> None:
        old = self.settings
        new, warnings = settings.merge(old, raw)
        for warning in warnings:
            self.warn(warning)
        self.settings = new
        if self.configured:  # before that, `initialized` starts the index
            self.codebase.settings_changed(old, new)
        if not new.warm:
            self.warmer.stop_all()
        if not new.next_edit:
            self.next_edits.stop_all()
        if not new.test_diagnostics:
            self.test_diagnostics.stop_all()
        self.mcp.settings_changed()
        if self.configured:  # before that, `initialized` asks for the engine once the configuration is in
            self.model_host.want(new)


def _lsp_errors(handler: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """Turns the features' exceptions into LSP error answers with messages a user can act on."""

    @functools.wraps(handler)
    async def wrapper(*args: Any) -> T:
        try:
            return await handler(*args)
        except protocol.ParamsError as exc:
            raise JsonRpcInvalidParams(str(exc)) from None
        except documents.StaleDocument as exc:
            raise JsonRpcContentModified(str(exc)) from None
        except (code_actions.NoEdit, EngineError) as exc:
            if isinstance(exc, EngineError) and exc.backend_fault:
                args[0].backend_failed(exc)
            raise JsonRpcException(f"llama-lsp: {exc}", code=REQUEST_FAILED) from None
        except (JsonRpcException, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("%s failed", handler.__name__)
            raise JsonRpcException(f"llama-lsp internal error: {exc}", code=REQUEST_FAILED) from None

    return wrapper


async def _watch_files(ls: AssistantServer) -> None:
    """Asks the client for its file events (workspace/didChangeWatchedFiles), where it lets a server
    register for them: the index follows files changed outside the editor."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if not ls.settings.codebase_index or watched is None or not watched.dynamic_registration:
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
    )
    registration = types.Registration(
        id="llama-lsp-index-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
    )
    try:
        await ls.client_register_capability_async(types.RegistrationParams(registrations=[registration]))
    except Exception as exc:  # a client may refuse: saves and edits still update the index
        log.info("no file events from the client: %s", exc)


def create_server() -> AssistantServer:
    server = AssistantServer()

    @server.feature(types.INITIALIZE)
    def on_initialize(ls: AssistantServer, params: types.InitializeParams) -> None:
        # pygls builds its Workspace before this handler, with no hook for the document class it holds.
        replace_workspace(ls.protocol, LspDocuments.replacing(ls.workspace))
        raw = params.initialization_options
        ls.settings, warnings = settings.merge(ls.settings, raw if isinstance(raw, dict) else None)
        for warning in warnings:
            log.warning("%s", warning)

    @server.feature(types.INITIALIZED)
    async def on_initialized(ls: AssistantServer, _params: types.InitializedParams) -> None:
        workspace = ls.client_capabilities.workspace
        if workspace is not None and workspace.configuration:
            try:
                section = await ls.workspace_configuration_async(
                    types.ConfigurationParams(items=[types.ConfigurationItem(section=settings.SECTION)])
                )
                ls.settings, warnings = settings.merge(ls.settings, section[0] if section else None)
                for warning in warnings:
                    ls.warn(warning)
            except Exception as exc:
                log.warning("could not read the %s configuration: %s", settings.SECTION, exc)
        ls.configured = True
        ls.model_host.want(ls.settings)
        ls.codebase.start()
        await _watch_files(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_configuration(ls: AssistantServer, params: types.DidChangeConfigurationParams) -> None:
        raw = params.settings
        if isinstance(raw, dict) and settings.SECTION in raw:
            raw = raw[settings.SECTION]
        ls.apply_settings(raw if isinstance(raw, dict) else None)

    @server.feature(types.SHUTDOWN)
    async def on_shutdown(ls: AssistantServer, _params: None) -> None:
        ls.warmer.stop_all()
        ls.next_edits.stop_all()
        ls.test_diagnostics.stop_all()
        ls.codebase.stop()
        await asyncio.gather(ls.model_host.close(), ls.mcp.close())

    # pygls keeps the documents; these run after it has applied the change.
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def on_did_open(ls: AssistantServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.completion.opened(params.text_document.uri)
        ls.warmer.opened(params.text_document.uri)
        ls.next_edits.opened(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def on_did_change(ls: AssistantServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.completion.changed(params)
        ls.warmer.changed(params.text_document.uri)
        ls.next_edits.changed(params.text_document.uri)
        ls.codebase.changed(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def on_did_save(ls: AssistantServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.test_diagnostics.saved(params.text_document.uri)
        ls.completion.saved(params.text_document.uri)
        ls.codebase.changed(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def on_watched_files(ls: AssistantServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.codebase.files_changed(params)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def on_did_close(ls: AssistantServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.completion.closed(params.text_document.uri)
        ls.warmer.closed(params.text_document.uri)
        ls.next_edits.closed(params.text_document.uri)

    @server.feature(types.EXIT)
    async def on_exit(ls: AssistantServer, _params: None) -> None:
        # `exit` without `shutdown` (an editor quitting mid-answer): stop the answer and free the model
        # before pygls ends the process, instead of leaving the engine thread decoding into a closed loop.
        try:
            await asyncio.wait_for(ls.model_host.close(), EXIT_CLOSE_TIMEOUT_S)
        except asyncio.TimeoutError:
            # Still in native code (a large model loading): Python's own teardown could crash under it.
            log.warning("the engine did not close within %.0f s; exiting at once", EXIT_CLOSE_TIMEOUT_S)
            logging.shutdown()
            os._exit(0 if shutdown_received(ls.protocol) else 1)

    @server.feature(protocol.CHAT)
    @_lsp_errors
    async def on_chat(ls: AssistantServer, params: Any) -> dict[str, Any]:
        return await chat.chat(ls.turns, protocol.parse_chat_params(params), ls.progress)

    @server.feature(protocol.SEARCH_CODEBASE)
    @_lsp_errors
    async def on_search_codebase(ls: AssistantServer, params: Any) -> dict[str, Any]:
        search = protocol.parse_search_params(params)
        return await ls.codebase.search(search.query, search.limit)

    @server.feature(protocol.NEXT_EDIT)
    @_lsp_errors
    async def on_next_edit(ls: AssistantServer, params: Any) -> dict[str, Any] | None:
        return await ls.next_edits.suggest(protocol.parse_next_edit_params(params))

    def on_next_edit_feedback(method: str) -> None:
        @server.feature(method)
        def on_feedback(ls: AssistantServer, params: Any) -> None:
            try:
                ls.next_edits.feedback(method, protocol.parse_suggestion_id(params))
            except protocol.ParamsError as exc:  # a notification has no answer to carry the error
                log.warning("%s: %s", method, exc)

    for method in (protocol.NEXT_EDIT_SHOWN, protocol.NEXT_EDIT_ACCEPTED, protocol.NEXT_EDIT_REJECTED):
        on_next_edit_feedback(method)

    @server.feature(protocol.STATS)
    @_lsp_errors
    async def on_stats(ls: AssistantServer, _params: Any) -> dict[str, Any]:
        engine = ls.engine
        info = await engine.info() if engine is not None else None
        return {
            "version": {"server": __version__, "native": _native_version()},
            "state": ls.state,
            "model": ls.engine_name,
            "error": str(ls.model_host.error) if ls.model_host.error else None,
            "modelLoads": ls.model_host.n_loads,
            "engine": info,
            "totals": ls.turns.stats.totals_json(),
            "lastStats": ls.turns.stats.last_json(),
            "lastCompletion": ls.completion.last,
            "nextEdit": ls.next_edits.stats_json(),
            "mcp": ls.mcp.stats_json(),
        }

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=code_actions.OFFERED_KINDS, resolve_provider=True),
    )
    def on_code_action(ls: AssistantServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions.list_actions(ls.workspace, params)

    @server.feature(types.CODE_ACTION_RESOLVE)
    @_lsp_errors
    async def on_code_action_resolve(ls: AssistantServer, action: types.CodeAction) -> types.CodeAction:
        return await code_actions.resolve_action(ls.turns, action)

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    @_lsp_errors
    async def on_inline_completion(
        ls: AssistantServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList:
        return await ls.completion.complete(params)

    @server.command(protocol.COMMAND_CODE_ACTION)
    @_lsp_errors
    async def on_code_action_command(ls: AssistantServer, *args: Any) -> dict[str, Any]:
        if len(args) != 1:
            raise protocol.ParamsError(
                f"{protocol.COMMAND_CODE_ACTION} takes one argument: {{uri, range, kind}}"
            )
        return await code_actions.execute_action(ls.turns, args[0], ls.workspace_apply_edit_async)

    return server
