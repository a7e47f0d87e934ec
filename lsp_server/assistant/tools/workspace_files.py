"""The files the tools may read: the workspace folders, which paths may be named, how files are read.

This module owns the path rules (how a path is shown to the model and resolved back, and that it stays
inside a folder or a document the request is about) and which files count as readable text. A file is
read through a descriptor opened beneath its folder, so a path swapped for a symlink after it was
checked cannot lead out. Every refusal is a ToolError, whose message the model reads. Plain Python only;
the feature layer fills in the open documents' text and the diagnostics from LSP.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

MAX_FILE_BYTES = 512 * 1024
BINARY_SNIFF_BYTES = 8 * 1024
MAX_LINK_HOPS = 40  # the kernel's own limit on the links one path may go through
WALK_MAX_FILES = 20_000  # a folder opened by mistake (a home directory) must not take minutes to list
# Vendored, generated or tool-owned trees: large, and rarely what the model is asked about.
# Every other dot-directory is skipped too.
SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", "build", "dist"})


log = logging.getLogger("llama_lsp.workspace_files")


class ToolError(Exception):
    """A tool call the path rules refuse or cannot carry out; the message is meant for the model to read."""


def _no_open_text(path: Path) -> str | None:
    return None


class WorkspaceFiles:
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
        documents: Sequence[Path] = (),
    ) -> None:
        self.roots = [Path(root).resolve() for root in roots]
        self.open_text = open_text
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
        try:
            fd = self._open_beneath(path, name)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolError(f"{name} does not exist; search with no pattern lists the files") from None
        except OSError as exc:
            raise ToolError(f"cannot read {name}: {exc.strerror}") from None
        try:
            # Everything below asks the descriptor that was opened, never the path again.
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise ToolError(f"{name} is a directory, not a file; search with a glob lists what it holds")
            if not stat.S_ISREG(info.st_mode):
                raise ToolError(f"{name} is not a regular file")
            with open(fd, "rb", closefd=False) as file:
                data = file.read(MAX_FILE_BYTES + 1)  # one byte more tells a file that grew meanwhile
            size = max(info.st_size, len(data))
            if size > MAX_FILE_BYTES:
                limit = MAX_FILE_BYTES // 1024
                raise ToolError(f"{name} is too large to read ({size // 1024} KB; the limit is {limit} KB)")
        except OSError as exc:
            raise ToolError(f"cannot read {name}: {exc.strerror}") from None
        finally:
            os.close(fd)
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise ToolError(f"{name} is a binary file")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ToolError(f"{name} is not UTF-8 text, so it is treated as binary") from None

    def _open_beneath(self, path: Path, name: str) -> int:
        """A descriptor of the file `path` names, opened from its folder one component at a time.

        `resolve` checked where the path led when it was asked, but any part of it may be swapped for a
        symlink before the read: opening each component with O_NOFOLLOW, relative to the directory
        before it, means that what is read is what was checked. A link met on the way (or a `..`) is
        followed here, by starting again from the path it leads to, which must be in the workspace too.
        """
        for _ in range(MAX_LINK_HOPS):
            folder, parts = self._beneath(path, name)
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for index, part in enumerate(parts):
                    last = index == len(parts) - 1
                    if part == "..":
                        # The components walked so far are real directories, so `..` is the one before.
                        above = folder.joinpath(*parts[: index - 1]) if index else folder.parent
                        path = above.joinpath(*parts[index + 1 :])
                        break
                    try:
                        # O_NONBLOCK: a FIFO must not hold the read up waiting for a writer.
                        flags = os.O_NONBLOCK | os.O_NOCTTY if last else os.O_DIRECTORY
                        opened = os.open(part, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | flags, dir_fd=fd)
                    except OSError as exc:
                        target = _link_target(part, fd)
                        if target is None:
                            raise exc from None
                        path = folder.joinpath(*parts[:index], target, *parts[index + 1 :])
                        break
                    os.close(fd)
                    fd = opened
                else:
                    opened, fd = fd, -1
                    return opened
            finally:
                if fd >= 0:
                    os.close(fd)
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name)

    def _beneath(self, path: Path, name: str) -> tuple[Path, tuple[str, ...]]:
        """The folder a path is in and its components below it (a document: its directory and name)."""
        for root in self.roots:
            if path.is_relative_to(root):
                return root, path.relative_to(root).parts
        if path in self.documents:
            return path.parent, (path.name,)
        raise ToolError(f"{name} is outside the workspace")

    def files(
        self, skipped: frozenset[str] = SKIPPED_DIRS, pause: Callable[[], None] | None = None
    ) -> dict[Path, str]:
        """Every file in the folders outside the skipped directories (and dot-directories): resolved
        path -> shown path. `pause` is called before each directory (background work: it may wait)."""
        found: dict[Path, str] = {}
        for root in self.roots:
            # fwalk opens each directory it lists by descriptor and never follows a linked one, which
            # could lead out of the folder or loop, even when a directory is swapped for a link meanwhile.
            for dirpath, dirnames, filenames, dirfd in os.fwalk(root):
                if pause is not None:
                    pause()
                dirnames[:] = [d for d in dirnames if d not in skipped and not d.startswith(".")]
                for filename in filenames:
                    if len(found) >= WALK_MAX_FILES:
                        log.warning("stopped listing %s after %d files", root, WALK_MAX_FILES)
                        return found
                    path = Path(dirpath, filename)
                    if _link_target(filename, dirfd) is not None:
                        try:
                            path = path.resolve()
                        except (OSError, RuntimeError):  # a link loop
                            continue
                        if not self.contains(path) or not path.is_file():
                            continue
                    found.setdefault(path, self.display(path))
        return found


def _link_target(name: str, dir_fd: int) -> str | None:
    """What the symlink `name` in a directory points to; None when it is no link (or is gone)."""
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None
