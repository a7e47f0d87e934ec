"""The sandbox the tools run in: the workspace folders, which paths may be named, how files are read.

This module owns the path rules (how a path is shown to the model and resolved back, and that it stays
inside a folder or a document the request is about) and which files count as readable text. Every
refusal is a ToolError, whose message the model reads. Plain Python only; the feature layer fills in
the open documents' text and the diagnostics from LSP.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 512 * 1024
BINARY_SNIFF_BYTES = 8 * 1024
WALK_MAX_FILES = 20_000  # a folder opened by mistake (a home directory) must not take minutes to list
# Vendored, generated or tool-owned trees: large, and rarely what the model is asked about.
# Every other dot-directory is skipped too.
SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", "build", "dist"})


log = logging.getLogger("llama_lsp.sandbox")


class ToolError(Exception):
    """A tool call the sandbox refuses or cannot carry out; the message is meant for the model to read."""


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic, filled by the server from LSP diagnostics; line and column are 1-based."""

    path: Path
    line: int
    column: int
    severity: str  # "error", "warning", "information" or "hint"
    message: str
    source: str | None = None


def _no_open_text(path: Path) -> str | None:
    return None


def _no_diagnostics(path: Path | None) -> list[Diagnostic]:
    return []


class Sandbox:
    """The workspace folders and how to read them: open documents' unsaved text wins over the disk.

    The one path rule: a file is shown relative to its folder, prefixed with the folder's name when
    there are several, and a shown path resolves back to the same file. `documents` are files outside
    every folder that the request is about (an editor may open one beside a folder): shown and resolved
    absolute, and readable and editable in place. With no folders at all, every other path is outside,
    and the tools say that no folder is open.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        open_text: Callable[[Path], str | None] = _no_open_text,
        diagnostics: Callable[[Path | None], list[Diagnostic]] = _no_diagnostics,
        documents: Sequence[Path] = (),
    ) -> None:
        self.roots = [Path(root).resolve() for root in roots]
        self.open_text = open_text
        self.diagnostics = diagnostics
        resolved = [Path(d).resolve() for d in documents]
        self.documents = frozenset(d for d in resolved if not any(d.is_relative_to(r) for r in self.roots))
        # Each folder's name as paths show it; two folders of one name are told apart by a number.
        self._names: dict[str, Path] = {}
        for root in self.roots:
            name = unique = root.name or "root"
            number = 2
            while unique in self._names:
                unique, number = f"{name}-{number}", number + 1
            self._names[unique] = root

    def contains(self, path: Path) -> bool:
        return any(path.is_relative_to(root) for root in self.roots) or path in self.documents

    def resolve(self, path: str) -> Path:
        """The absolute path a model-given path names (the inverse of `display`)."""
        if not path.strip():
            raise ToolError("the path is empty")
        if not self.roots and not self.documents:
            raise ToolError("no folder is open in the editor, so there are no files to work with")
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self._in_folder(candidate)
        try:
            # resolve() follows `..` and symlinks, so the containment check below sees where the path
            # really leads, not how it is spelled.
            resolved = candidate.resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
            raise ToolError(f"{path} is not a usable path ({exc})") from None
        if not self.contains(resolved):
            raise ToolError(f"{path} is outside the workspace; use a path relative to the workspace folder")
        return resolved

    def _in_folder(self, relative: Path) -> Path:
        if not self.roots:
            raise ToolError(f"{relative} is not in a folder: no folder is open; name files by absolute path")
        if len(self.roots) == 1:
            return self.roots[0] / relative
        parts = relative.parts
        if parts and parts[0] in self._names:
            return self._names[parts[0]].joinpath(*parts[1:])
        # A model may leave the folder's name out: the folder where the file exists, else the first.
        existing = [root / relative for root in self.roots if (root / relative).exists()]
        return existing[0] if len(existing) == 1 else self.roots[0] / relative

    def display(self, path: Path) -> str:
        """A path as the model sees it, and names back to `resolve`."""
        for name, root in self._names.items():
            if path.is_relative_to(root):
                relative = path.relative_to(root).as_posix()
                return relative if len(self.roots) == 1 else f"{name}/{relative}"
        return path.as_posix()

    def read_text(self, path: Path) -> str:
        """The text of a file: the open document's text if the editor has one, else the disk's."""
        name = self.display(path)
        if not self.contains(path):
            raise ToolError(f"{name} is outside the workspace")
        text = self.open_text(path)
        if text is not None:
            if len(text.encode()) > MAX_FILE_BYTES:
                raise ToolError(f"{name} is too large to read (the limit is {MAX_FILE_BYTES // 1024} KB)")
            return text
        if path.is_dir():
            raise ToolError(f"{name} is a directory, not a file; use list_files to see what it holds")
        if not path.exists():
            raise ToolError(f"{name} does not exist; use list_files to find files")
        if not path.is_file():
            raise ToolError(f"{name} is not a regular file")
        try:
            size = path.stat().st_size
            if size > MAX_FILE_BYTES:
                limit = MAX_FILE_BYTES // 1024
                raise ToolError(f"{name} is too large to read ({size // 1024} KB; the limit is {limit} KB)")
            data = path.read_bytes()
        except OSError as exc:
            raise ToolError(f"cannot read {name}: {exc.strerror}") from None
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise ToolError(f"{name} is a binary file")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{name} is not UTF-8 text, so it is treated as binary") from None

    def files(self) -> dict[Path, str]:
        """Every file in the folders outside the skipped directories: resolved path -> shown path."""
        found: dict[Path, str] = {}
        for root in self.roots:
            # os.walk does not follow linked directories, which could lead out of the folder or loop.
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith(".")]
                for filename in filenames:
                    if len(found) >= WALK_MAX_FILES:
                        log.warning("stopped listing %s after %d files", root, WALK_MAX_FILES)
                        return found
                    path = Path(dirpath, filename)
                    if path.is_symlink():
                        try:
                            path = path.resolve()
                        except (OSError, RuntimeError):  # a link loop
                            continue
                        if not self.contains(path) or not path.is_file():
                            continue
                    found.setdefault(path, self.display(path))
        return found
