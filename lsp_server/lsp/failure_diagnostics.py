"""Failing tests as diagnostics (`testDiagnostics`): after a save, the project's tests run in the
background and their failures show where they point.

A save of a Python file in a workspace folder runs the tests `verifyCommand: "auto"` would run for an
edit of it (test_discovery.py: the test files that import it, or all), in the check's sandbox on a copy of
the folder, never in the workspace itself. Each failure shows on the failing test's line and on the
function under test (test_failures.py), with what failed: the lightbulb there offers Fix, whose prompt
then reads the real failure. A test's diagnostics stay until its file runs again; a run that passes clears
them. A newer save in the same folder stops the run under way and runs again for both files.

The setting is trusted-only: VS Code never sends it from an untrusted workspace.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from lsprotocol import types
from pygls.uris import from_fs_path
from pygls.workspace import Workspace

from ..assistant.checks.discovery import find_tests
from ..assistant.checks.failures import FailureSite, failure_sites, parse_failures
from ..assistant.checks.sandbox import CheckSandbox, SandboxUnavailable
from ..assistant.checks.verifier import run_on_copy
from . import documents
from .settings import Settings

log = logging.getLogger("llama_lsp.failure_diagnostics")

SOURCE = "llama-lsp tests"


class FailureDiagnosticsContext(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def workspace(self) -> Workspace: ...

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...


class FailureDiagnostics:
    """The test runs of each workspace folder, and the diagnostics their failures published."""

    def __init__(self, server: FailureDiagnosticsContext, warn: Callable[[str], None]) -> None:
        self._server = server
        self._warn = warn  # tells the user once why the tests cannot run
        self._warned: set[str] = set()
        self._pending: dict[Path, set[Path]] = {}  # saved files whose tests have not run yet, by folder
        self._runs: dict[Path, asyncio.Task[None]] = {}  # the run under way, by folder
        # By folder, by test file (relative, with /): where its failures point.
        self._sites: dict[Path, dict[str, list[FailureSite]]] = {}
        self._published: set[str] = set()  # the URIs that show diagnostics now

    def saved(self, uri: str) -> None:
        """A document was saved: its tests run (again) when the setting is on."""
        path = documents.uri_to_path(uri)
        if not self._server.settings.test_diagnostics or path is None or path.suffix != ".py":
            return
        path = path.resolve()
        roots = [root.resolve() for root in documents.workspace_roots(self._server.workspace, uri)]
        folder = next((root for root in roots if path.is_relative_to(root)), None)
        if folder is None:
            return  # a file outside every folder has no project tests
        self._pending.setdefault(folder, set()).add(path)
        running = self._runs.get(folder)
        if running is not None and not running.done():
            running.cancel()  # its file stays pending: the new run covers it
        self._runs[folder] = asyncio.ensure_future(self._run_pending(folder, running))

    def stop_all(self) -> None:
        """The setting went off (or the server stops): runs end, and their diagnostics go."""
        for task in self._runs.values():
            task.cancel()
        self._runs.clear()
        self._pending.clear()
        self._sites.clear()
        self._publish()

    async def _run_pending(self, folder: Path, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)  # its processes are gone first
        pending = self._pending.get(folder, set())
        try:
            while pending:
                path = min(pending)
                await self._run(folder, path)
                pending.discard(path)
        except Exception:  # a bug of ours must not end the server (a cancel is no Exception)
            log.exception("test diagnostics failed in %s", folder)

    async def _run(self, folder: Path, saved: Path) -> None:
        settings = self._server.settings
        plan = await asyncio.to_thread(find_tests, folder, saved)
        if plan.command is None:
            self._warn_once(f"no test diagnostics: {plan.reason}")
            return
        sandbox = CheckSandbox(settings.verify_sandbox)
        try:
            await sandbox.isolation()
        except SandboxUnavailable as exc:
            self._warn_once(f"test diagnostics do not run: {exc}")
            return
        started = time.monotonic()
        run = await run_on_copy(sandbox, plan.command, folder, True, {}, settings.verify_timeout)
        if run.isolation is None:  # the folder could not be copied: nothing ran
            self._warn_once(f"test diagnostics do not run: {run.output}")
            return
        failures = parse_failures(run.output, str(run.copy))
        log.info(
            "tests for %s: %s: %s, %d failures read, %.1f s",
            saved.name, plan.command, "passed" if run.passed else "failed", len(failures),
            time.monotonic() - started,
        )  # fmt: skip
        if not run.passed and not failures:
            # A timeout, a crash, output that is not pytest's or unittest's: nothing to point at, and
            # the diagnostics of before stay, since nothing says they are gone.
            last = run.output.strip().splitlines()[-1:] or ["no output"]
            self._warn_once(f"the tests for {saved.name} failed, but not in a way they can show: {last[0]}")
            log.warning("%s", run.output[-500:])
            return
        sites = await asyncio.to_thread(lambda: [(f.test_file, failure_sites(f, folder)) for f in failures])
        by_file: dict[str, list[FailureSite]] = {
            test.relative_to(folder).as_posix(): [] for test in plan.tests
        }
        for test_file, where in sites:
            by_file.setdefault(test_file, []).extend(where)
        self._sites.setdefault(folder, {}).update(by_file)
        self._publish()

    def _publish(self) -> None:
        """Sends each file's diagnostics: the ones with sites now, and an empty list to the ones that
        had some before and have none now."""
        shown: dict[str, list[types.Diagnostic]] = {}
        for folder, by_file in self._sites.items():
            for sites in by_file.values():
                for site in sites:
                    shown.setdefault(self._uri(folder / site.path), []).append(_diagnostic(site))
        for uri in self._published - set(shown):
            self._server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))
        for uri, diagnostics in shown.items():
            self._server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, diagnostics))
        self._published = set(shown)

    def _uri(self, path: Path) -> str:
        """The URI the editor knows the file by: the one it opened it with, else the file's own."""
        document = documents.open_document(self._server.workspace, path)
        return document.uri if document is not None else from_fs_path(str(path)) or path.as_uri()

    def _warn_once(self, message: str) -> None:
        log.info("%s", message)
        if message not in self._warned:
            self._warned.add(message)
            self._warn(f"llama-lsp: {message}")


def _diagnostic(site: FailureSite) -> types.Diagnostic:
    # The whole line: its length in the client's units is not needed, and a Fix asked anywhere on it
    # gets the diagnostic.
    line = types.Range(types.Position(site.line - 1, 0), types.Position(site.line, 0))
    return types.Diagnostic(line, site.message, severity=types.DiagnosticSeverity.Error, source=SOURCE)
