"""The workspace index as the server keeps it (lsp_server.assistant.codebase): built in the background
once the client is initialized, kept up to date, saved, and searched.

The build runs in a thread and pauses between files while the model works on a request, so a chat or
a code action waits on it for one file at most (a request's tool calls do not pause it: the model is
idle then). It starts from the index saved in
`cacheDir` for the same folders, reading again only the files that changed since, and shows LSP
work-done progress; once it has saved the index, the one an older version saved there in a format no
longer read is deleted. Edits in the editor (didChange, debounced), saves and the client's file events
(workspace/didChangeWatchedFiles, registered where the client allows) update it file by file; the
search that follows a change starts the ranker's refresh in a thread of the index's, which pauses as
the build does, and answers at once from the ranker it has and the changed files' new chunks.
`assistant/searchCodebase` answers from it, and so does the tools' `search` when a pattern matches
no line (ToolRunner); while it is being built, with what it has so far, `ready` false.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from lsprotocol import types
from pygls.workspace import Workspace

from ..assistant.codebase import CodebaseIndex, Hit, Stopped
from ..assistant.tools.workspace_files import ToolError
from . import documents
from .settings import Settings

log = logging.getLogger("llama_lsp.codebase_index")

UPDATE_DELAY_S = 0.5  # typing: the file is indexed again once it pauses this long
BUSY_POLL_S = 0.05  # how often a paused build looks whether the model is done
SEARCH_LIMIT = 50  # the most results a search gives


class IndexContext(Protocol):
    """What the index needs from the language server."""

    @property
    def workspace(self) -> Workspace: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def model_working(self) -> bool: ...

    async def begin_progress(self, token: str, title: str) -> bool: ...

    def report_progress(self, token: str, message: str, percentage: int | None = None) -> None: ...

    def end_progress(self, token: str, message: str) -> None: ...


class WorkspaceIndex:
    """The server's index of its workspace folders."""

    def __init__(self, server: IndexContext) -> None:
        self._server = server
        self.index: CodebaseIndex | None = None
        self._building: asyncio.Task[None] | None = None
        self._stopping = threading.Event()
        self._updates: dict[str, asyncio.TimerHandle] = {}
        self._disk_changes: dict[Path, None] = {}  # files the client saw change, not yet indexed again
        self._applying: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Builds the index in the background, if the setting allows and there is a folder."""
        if not self._server.settings.codebase_index or self._building is not None:
            return
        roots = documents.workspace_roots(self._server.workspace, None)
        if not roots:
            return
        self._stopping = threading.Event()  # this build's: a later one has its own
        self._building = asyncio.ensure_future(self._build(roots, self._stopping))

    def stop(self) -> None:
        self._stopping.set()
        if self._building is not None:
            self._building.cancel()
        for handle in self._updates.values():
            handle.cancel()
        self._updates.clear()
        self._disk_changes.clear()

    def settings_changed(self, old: Settings, new: Settings) -> None:
        """Turned on: the index is built; off: it is dropped; what it leaves out changed: built again (a
        saved index is reused, so only the files newly in it are read)."""
        what = ("codebase_index", "codebase_exclude", "codebase_max_file_kb", "cache_dir")
        if all(getattr(old, name) == getattr(new, name) for name in what):
            return
        self.stop()
        self.index = None
        self._building = None
        self.start()

    async def _build(self, roots: list[Path], stopping: threading.Event) -> None:
        settings = self._server.settings
        index = CodebaseIndex(
            roots,
            settings.codebase_exclude,
            settings.codebase_max_file_kb << 10,
            pause=functools.partial(self._pause, stopping),  # the build's and every ranker refresh's
        )
        saved = self._saved_path(roots)
        started = time.monotonic()
        try:
            if await asyncio.to_thread(index.load, saved):
                log.info("read the saved index of %s: %d files", saved, index.n_files)
            self.index = index  # searchable from now on, with what it has
            token = f"llama-lsp-index-{id(self)}"
            shown = await self._server.begin_progress(token, "Indexing the workspace")
            loop = asyncio.get_running_loop()

            def progress(done: int, total: int) -> None:
                if shown:
                    percent = done * 100 // max(total, 1)
                    loop.call_soon_threadsafe(
                        self._server.report_progress, token, f"{done}/{total} files", percent
                    )

            await asyncio.to_thread(index.build, None, progress)
            await asyncio.to_thread(index.save, saved)
            _remove_older_formats(saved)
            skipped = ", ".join(f"{n} {why}" for why, n in sorted(index.skipped.counts.items()))
            summary = f"{index.n_files} files, {index.n_chunks} chunks" + (
                f"; skipped: {skipped}" if skipped else ""
            )
            if shown:
                self._server.end_progress(token, summary)
            log.info(
                "indexed %s in %.1f s: %s", ", ".join(map(str, roots)), time.monotonic() - started, summary
            )
        except Stopped:
            log.info("indexing %s stopped", ", ".join(map(str, roots)))
        except Exception:  # a bug of ours must not end the server: chat works without the index
            log.exception("indexing %s failed", roots)

    def _pause(self, stopping: threading.Event) -> None:
        """Between two files of the build, or before a ranker's refresh (in their thread): waits while
        the model works on a request (not while a request's tool runs: then the model waits, and the
        index may use the time)."""
        while self._server.model_working and not stopping.is_set():
            time.sleep(BUSY_POLL_S)
        if stopping.is_set():
            raise Stopped  # ends the build's thread at the next file, or a refresh before it starts

    def _saved_path(self, roots: list[Path]) -> Path:
        key = hashlib.sha256("\0".join(str(root) for root in roots).encode()).hexdigest()[:16]
        return self._server.settings.cache_dir / "index" / f"{key}.npz"

    # ---- changes ---------------------------------------------------------------------------------

    def changed(self, uri: str) -> None:
        """The editor's text of a document changed: indexed again once typing pauses."""
        if self.index is None:
            return
        if uri in self._updates:
            self._updates[uri].cancel()
        loop = asyncio.get_running_loop()
        self._updates[uri] = loop.call_later(UPDATE_DELAY_S, self._update_from_editor, uri)

    def _update_from_editor(self, uri: str) -> None:
        self._updates.pop(uri, None)
        document = documents.get_document(self._server.workspace, uri)
        path = documents.uri_to_path(uri)
        if self.index is not None and document is not None and path is not None:
            self.index.update(path, document.source)

    def files_changed(self, params: types.DidChangeWatchedFilesParams) -> None:
        """The client saw files created, changed or deleted on disk: indexed again in a thread, file by
        file with the build's pause (a branch switched names thousands, a few ms each: on the server's
        loop they would hold every request for seconds)."""
        if self.index is None:
            return
        for change in params.changes:
            path = documents.uri_to_path(change.uri)
            if path is not None:
                self._disk_changes[path] = None
        if self._applying is None or self._applying.done():
            self._applying = asyncio.ensure_future(self._apply_disk_changes())

    async def _apply_disk_changes(self) -> None:
        while self._disk_changes and (index := self.index) is not None:
            paths = list(self._disk_changes)
            self._disk_changes.clear()
            try:
                await asyncio.to_thread(_update_files, index, paths)
            except Stopped:
                return
            except Exception:  # a bug of ours must not end the server
                log.exception("indexing the files changed on disk failed")

    # ---- search ----------------------------------------------------------------------------------

    async def search(self, query: str, limit: int) -> dict[str, Any]:
        """`assistant/searchCodebase`'s result (docs/protocol.md)."""
        index = self.index
        if index is None:
            return {"results": [], "indexed": {"files": 0, "chunks": 0, "ready": False}}
        # The counts as they were before the search: a build that ends during it has them newer than
        # the results (a file it drops still found), and `ready` would say the results are its.
        indexed = {"files": index.n_files, "chunks": index.n_chunks, "ready": index.ready}
        hits = await asyncio.to_thread(index.search, query, min(max(limit, 1), SEARCH_LIMIT))
        return {
            "results": [result for hit in hits if (result := _result(index, hit)) is not None],
            "indexed": indexed,
        }


# The suffixes the index of the same folders was saved with by earlier versions (format 2 and before:
# JSON, gzipped), which no version reads now: a large workspace's took 20 MB of the cache.
OLDER_FORMATS = (".json.gz",)


def _remove_older_formats(saved: Path) -> None:
    """Deletes the index of the same folders in the formats no longer read, once `saved` is written."""
    for suffix in OLDER_FORMATS:
        older = saved.with_name(saved.name.removesuffix(saved.suffix) + suffix)
        try:
            older.unlink()
        except FileNotFoundError:
            continue
        except OSError as exc:  # a read-only cache: the file stays, and the index works without it
            log.warning("the index saved in an older format was not removed: %s", exc)
            continue
        log.info("removed the index saved in an older format: %s", older)


def _update_files(index: CodebaseIndex, paths: list[Path]) -> None:
    for path in paths:
        if index.pause is not None:
            index.pause()
        index.update(path)


def _result(index: CodebaseIndex, hit: Hit) -> dict[str, Any] | None:
    with contextlib.suppress(ToolError):
        uri = index.workspace.resolve(hit.path).as_uri()
        result: dict[str, Any] = {
            "uri": uri,
            "range": {
                "start": {"line": hit.start_line - 1, "character": 0},
                "end": {"line": hit.end_line, "character": 0},
            },
            "score": hit.score,
            "snippet": hit.snippet,
        }
        if hit.symbol is not None:
            result["symbol"] = hit.symbol
        return result
    return None  # the file is gone, or no longer inside the folders
