"""The tools the model may call, run in a sandbox confined to the workspace folders.

This module owns the tool schemas the model sees, the sandbox rules (which paths may be read, which
files count as text) and the edits one request proposes. Tools never write to disk: `edit` and
`create_file` only record a ProposedEdit for the user to review. Plain Python only; the feature layer
converts to and from LSP types.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import regex

from .edits import (
    EditError,
    absorb_restated_lines,
    apply_replacement,
    apply_replacement_keeping_omitted,
    apply_replacement_reindented,
    split_lines,
)
from .rewrite import python_code_changed

MAX_FILE_BYTES = 512 * 1024
BINARY_SNIFF_BYTES = 8 * 1024
READ_MAX_LINES = 400
READ_MAX_BYTES = 32 * 1024
LIST_MAX_FILES = 200
SEARCH_MAX_MATCHES = 50
SEARCH_TIME_BUDGET_S = 3.0  # a whole search, so a backtracking pattern cannot hold a turn up for long
WALK_MAX_FILES = 20_000  # a folder opened by mistake (a home directory) must not take minutes to list
SEARCH_LINE_CHARS = 200
DIAGNOSTICS_MAX = 100
# Vendored, generated or tool-owned trees: large, and rarely what the model is asked about.
# Every other dot-directory is skipped too.
SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", "build", "dist"})


log = logging.getLogger("llama_lsp.tools")


class ToolError(Exception):
    """A tool call the sandbox refuses or cannot carry out; the message is meant for the model to read."""


@dataclass(frozen=True)
class ProposedEdit:
    """One change a tool call proposes; nothing is written until the user accepts it."""

    path: Path  # absolute, resolved, inside a workspace folder
    old_text: str | None  # None for a new file
    new_text: str  # the replacement text, or the new file's content

    @property
    def kind(self) -> Literal["replace", "create"]:
        return "create" if self.old_text is None else "replace"


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


class Workspace:
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


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


_PATH = {"type": "string", "description": "the file's path, relative to the workspace"}
_GLOB = {
    "type": "string",
    "description": "only paths matching this glob, e.g. `*.py` or `src/**/*.ts`",
}

# One declaration per tool, in a fixed order, so the prompt's prefix stays the same from request to request.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    _tool(
        "read_file",
        f"Read a file, or a range of its lines (1-based, inclusive). Shows at most {READ_MAX_LINES} lines "
        "at a time.",
        {
            "path": _PATH,
            "startLine": {"type": "integer", "description": "the first line to read (default 1)"},
            "endLine": {"type": "integer", "description": "the last line to read (default: the end)"},
        },
        ["path"],
    ),
    _tool("list_files", "List the files in the workspace.", {"glob": _GLOB}, []),
    _tool(
        "search",
        "Search the workspace's text files for a regular expression; shows `path:line: text` per match.",
        {"pattern": {"type": "string", "description": "a Python regular expression"}, "glob": _GLOB},
        ["pattern"],
    ),
    _tool(
        "get_diagnostics",
        "Show the errors and warnings the editor reports, for one file or the whole workspace.",
        {"path": {**_PATH, "description": "only this file's diagnostics (default: every file)"}},
        [],
    ),
    _tool(
        "edit",
        "Propose a change to a file: replace old_text, which must appear exactly once in the file, with "
        "new_text.",
        {
            "path": _PATH,
            "old_text": {"type": "string", "description": "the exact text to replace"},
            "new_text": {"type": "string", "description": "the replacement text"},
        },
        ["path", "old_text", "new_text"],
    ),
    _tool(
        "create_file",
        "Propose a new file; the path must not exist yet.",
        {"path": _PATH, "content": {"type": "string", "description": "the new file's text"}},
        ["path", "content"],
    ),
]
TOOL_NAMES = [schema["function"]["name"] for schema in TOOL_SCHEMAS]
EDIT_TOOL_NAMES = frozenset({"edit", "create_file"})  # the tools that propose edits rather than read


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call did: the text the model reads, whether it succeeded, and whether it proposed
    an edit (which the runner then holds)."""

    text: str
    ok: bool = True
    proposed: bool = False

    @classmethod
    def failed(cls, problem: str) -> ToolOutcome:
        return cls(f"Error: {problem}", ok=False)

    @property
    def problem(self) -> str:
        return self.text.removeprefix("Error: ")


_JSON_TYPES: dict[str, Callable[[object], bool]] = {
    "string": lambda value: isinstance(value, str),
    # bool is an int in Python but not in JSON Schema.
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
}


def _check_arguments(function: dict[str, Any], arguments: object) -> dict[str, Any]:
    """The call's arguments, checked against the tool's schema; a mismatch is the model's to fix."""
    name = function["name"]
    if isinstance(arguments, str):  # the engine passes arguments it could not parse as JSON through as text
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            raise ToolError(f"the arguments to {name} are not valid JSON; pass a JSON object") from None
    if not isinstance(arguments, dict):
        raise ToolError(f"the arguments to {name} must be a JSON object")
    properties: dict[str, Any] = function["parameters"]["properties"]
    # Models often spell an omitted optional argument as null.
    given = {key: value for key, value in arguments.items() if value is not None}
    expected = ", ".join(properties) or "none"
    for key in given:
        if key not in properties:
            raise ToolError(f"{name} has no argument {key!r}; its arguments are: {expected}")
    for key in function["parameters"]["required"]:
        if key not in given:
            raise ToolError(f"{name} needs the argument {key!r}; its arguments are: {expected}")
    for key, value in given.items():
        kind = properties[key]["type"]
        if not _JSON_TYPES[kind](value):
            article = "an" if kind[0] in "aeiou" else "a"
            raise ToolError(
                f"the argument {key!r} to {name} must be {article} {kind}, not {repr(value)[:80]}"
            )
    return given


def _glob_regex(glob: str) -> re.Pattern[str]:
    """A glob over `/`-separated relative paths, matched with fullmatch.

    `*` and `?` stay within one path segment and `**` crosses segments; like PurePath.match, a relative
    glob matches from the right (`*.py` matches `src/a.py`), and a leading `/` anchors it at the top.
    """
    anchored = glob.startswith("/")
    glob = glob.strip("/")
    parts = [] if anchored else ["(?:.*/)?"]
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            parts.append(".*")
            i += 2
        elif glob[i] == "*":
            parts.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            parts.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end].replace("\\", "\\\\")
            parts.append("[^" + body[1:] + "]" if body.startswith("!") else "[" + body + "]")
            i = end + 1
        else:
            parts.append(re.escape(glob[i]))
            i += 1
    try:
        return re.compile("".join(parts))
    except re.error:
        raise ToolError(f"{glob!r} is not a valid glob") from None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


# A ToolRunner's edits at one point: the edits, the files' texts, what each edit replaced.
RunnerState = tuple[list[ProposedEdit], dict[Path, str], list[tuple[Path, str | None]]]


class ToolRunner:
    """Runs one request's tool calls and collects the edits they propose."""

    schemas: list[dict[str, Any]] = TOOL_SCHEMAS

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.edits: list[ProposedEdit] = []
        # The text each edited or created file has after this request's edits. Kept rather than recomputed,
        # so the user typing in the editor meanwhile cannot make an accepted edit stop applying.
        self._texts: dict[Path, str] = {}
        # What each recorded edit replaced in _texts, latest last, so that it can be withdrawn.
        self._replaced: list[tuple[Path, str | None]] = []
        # Each edited file's text as read before this request's first edit to it (None: a new file).
        self._originals: dict[Path, str | None] = {}
        self._handlers: dict[str, Callable[[dict[str, Any]], str]] = {
            "read_file": self._read_file,
            "list_files": self._list_files,
            "search": self._search,
            "get_diagnostics": self._get_diagnostics,
            "edit": self._edit,
            "create_file": self._create_file,
        }

    def schemas_for(self, names: Iterable[str]) -> list[dict[str, Any]]:
        """The schemas of the named tools, in the fixed order whatever the order asked for."""
        wanted = set(names)
        unknown = wanted - set(TOOL_NAMES)
        if unknown:
            raise ValueError(f"no such tools: {', '.join(sorted(unknown))}")
        return [schema for schema in self.schemas if schema["function"]["name"] in wanted]

    def run(self, name: str, arguments: object) -> ToolOutcome:
        """The outcome of one tool call; its mistakes are outcomes too ("Error: ..."), for the model."""
        try:
            handler = self._handlers.get(name)
            if handler is None:
                raise ToolError(f"there is no tool named {name!r}; the tools are: {', '.join(TOOL_NAMES)}")
            function = next(s["function"] for s in self.schemas if s["function"]["name"] == name)
            return ToolOutcome(
                handler(_check_arguments(function, arguments)), proposed=name in EDIT_TOOL_NAMES
            )
        except ToolError as exc:
            return ToolOutcome.failed(str(exc))
        except (OSError, RuntimeError, ValueError) as exc:  # the file system refused: e.g. a name too long
            return ToolOutcome.failed(f"{name} failed: {exc}")
        except Exception as exc:  # a bug of ours must not end the user's chat: the model reads it instead
            log.exception("tool %s failed", name)
            return ToolOutcome.failed(f"{name} failed unexpectedly ({type(exc).__name__})")

    def text_after_edits(self, path: Path) -> str:
        """A file's current text with this request's edits applied."""
        path = path.resolve()
        if path in self._texts:
            return self._texts[path]
        return self.workspace.read_text(path)

    def propose_text(self, path: Path, after: str, keep_code: bool = False) -> str | None:
        """Records a file's whole new text as an edit (the block-rewrite format of code actions).

        Returns None when recorded, else why not, for the model to read. With keep_code, a Python
        file's code must stay as it was: only docstrings and comments may change.
        """
        name = self.workspace.display(path)
        before = self.text_after_edits(path)
        if after == before:
            return "That is the code exactly as it was: nothing would change. Write it with the change made."
        try:
            _check_syntax(path, before, after, f"write the block again, complete, with {name}'s indentation")
        except ToolError as exc:
            return f"{str(exc).capitalize()}."
        parses = path.suffix == ".py" and _python_syntax_error(after) is None
        if keep_code and parses and python_code_changed(before, after):
            return "That changes the code itself. Keep every line of code exactly as it is; add only docs."
        self._record(ProposedEdit(path, before, after), before, after)
        return None

    def _record(self, edit: ProposedEdit, before: str | None, after: str) -> None:
        self._originals.setdefault(edit.path, before)
        self.edits.append(edit)
        self._replaced.append((edit.path, self._texts.get(edit.path)))
        self._texts[edit.path] = after

    def withdraw_latest(self) -> None:
        """Takes the latest edit back (a check failed on it)."""
        self.edits.pop()
        path, text = self._replaced.pop()
        if text is None:
            del self._texts[path]
        else:
            self._texts[path] = text

    def original_text(self, path: Path) -> str | None:
        """The text this request's edits to a file were computed against (None for a new file)."""
        return self._originals.get(path.resolve())

    def changed_texts(self) -> dict[Path, str]:
        """The whole text of each file this request's edits change or create."""
        return dict(self._texts)

    def checkpoint(self) -> RunnerState:
        return list(self.edits), dict(self._texts), list(self._replaced)

    def restore(self, state: RunnerState) -> None:
        edits, texts, replaced = state
        self.edits, self._texts, self._replaced = list(edits), dict(texts), list(replaced)

    def propose_file(self, path: str, content: str) -> str | None:
        """Records a new file (the block-rewrite format); None when recorded, else why not."""
        outcome = self.run("create_file", {"path": path, "content": content})
        return None if outcome.ok else outcome.problem

    def _files(self, glob: str | None) -> list[tuple[str, Path]]:
        """The workspace's files, plus those proposed in this request, as sorted (shown path, path)."""
        files = self.workspace.files()
        for edit in self.edits:
            files.setdefault(edit.path, self.workspace.display(edit.path))
        matcher = _glob_regex(glob) if glob else None
        found = [
            (shown, path) for path, shown in files.items() if matcher is None or matcher.fullmatch(shown)
        ]
        # The first folder's relative paths come first, then other folders' absolute ones.
        return sorted(found, key=lambda item: (Path(item[0]).is_absolute(), item))

    def _read_file(self, args: dict[str, Any]) -> str:
        path = self.workspace.resolve(args["path"])
        name = self.workspace.display(path)
        lines = split_lines(self.text_after_edits(path))
        total = len(lines)
        if total == 0:
            return f"{name} is empty."
        start: int = args.get("startLine", 1)
        end: int = args.get("endLine", total)
        if start < 1 or end < 1:
            raise ToolError("line numbers start at 1")
        if start > total:
            raise ToolError(f"startLine {start} is past the end of {name}, which has {_count(total, 'line')}")
        if end < start:
            raise ToolError(f"endLine {end} is before startLine {start}")
        end = min(end, total)
        shown: list[str] = []
        size = 0
        for line in lines[start - 1 : min(end, start + READ_MAX_LINES - 1)]:
            size += len(line.encode())
            if shown and size > READ_MAX_BYTES:
                break
            shown.append(line)
        last = start + len(shown) - 1
        body = "".join(shown)
        if len(body) > READ_MAX_BYTES:  # one enormous line, e.g. minified code
            body = body[:READ_MAX_BYTES] + " [the rest of this line is cut]"
        result = f"{name} (lines {start}-{last} of {total}):\n{body}"
        if not result.endswith("\n"):
            result += "\n"
        if last < end:
            result += (
                f"[lines {last + 1}-{end} not shown; call read_file with startLine={last + 1} to read on]"
            )
        return result

    def _list_files(self, args: dict[str, Any]) -> str:
        glob = args.get("glob")
        names = [shown for shown, _ in self._files(glob)]
        if not names:
            return f"No files match {glob!r}." if glob else "The workspace has no files."
        result = "\n".join(names[:LIST_MAX_FILES])
        if len(names) > LIST_MAX_FILES:
            result += f"\n... {len(names) - LIST_MAX_FILES} more; pass a narrower glob to see them"
        return result

    def _search(self, args: dict[str, Any]) -> str:
        pattern: str = args["pattern"]
        if not pattern:
            raise ToolError("the pattern is empty")
        note = ""
        try:
            compiled = regex.compile(pattern)
        except (regex.error, ValueError, OverflowError):
            # Small models often pass code such as `foo(` meaning the text itself.
            compiled = regex.compile(regex.escape(pattern))
            note = "(not a valid regular expression, so searched as plain text)\n"
        deadline = time.monotonic() + SEARCH_TIME_BUDGET_S
        matches: list[str] = []
        for shown, path in self._files(args.get("glob")):
            try:
                text = self.text_after_edits(path)
            except (ToolError, OSError):
                continue  # binary, huge or unreadable: nothing to search in
            for number, line in enumerate(split_lines(text), 1):
                line = line.rstrip("\r\n")
                try:
                    found = compiled.search(line, timeout=max(deadline - time.monotonic(), 0.001))
                except TimeoutError:
                    matches.append(
                        f"[stopped after {SEARCH_TIME_BUDGET_S:.0f} s at {shown}:{number}; the pattern is "
                        "too slow to match (nested repetition?): use a simpler pattern or pass a glob]"
                    )
                    return note + "\n".join(matches)
                if found is None:
                    continue
                if len(matches) == SEARCH_MAX_MATCHES:
                    matches.append(
                        f"[stopped after {SEARCH_MAX_MATCHES} matches; narrow the pattern or pass a glob]"
                    )
                    return note + "\n".join(matches)
                text_shown = line.strip()
                if len(text_shown) > SEARCH_LINE_CHARS:
                    text_shown = text_shown[:SEARCH_LINE_CHARS] + "..."
                matches.append(f"{shown}:{number}: {text_shown}")
        if not matches:
            return f"{note}No matches for {pattern!r}."
        return note + "\n".join(matches)

    def _get_diagnostics(self, args: dict[str, Any]) -> str:
        path = self.workspace.resolve(args["path"]) if "path" in args else None
        found = sorted(self.workspace.diagnostics(path), key=lambda d: (str(d.path), d.line, d.column))
        if not found:
            return (
                f"No diagnostics for {self.workspace.display(path)}."
                if path is not None
                else "No diagnostics."
            )
        lines = []
        for d in found[:DIAGNOSTICS_MAX]:
            message = " ".join(d.message.split())  # multi-line messages would break one-per-line
            source = f" [{d.source}]" if d.source else ""
            lines.append(
                f"{self.workspace.display(d.path)}:{d.line}:{d.column}: {d.severity}: {message}{source}"
            )
        if len(found) > DIAGNOSTICS_MAX:
            lines.append(f"... {len(found) - DIAGNOSTICS_MAX} more; ask for one file's diagnostics")
        return "\n".join(lines)

    def _edit(self, args: dict[str, Any]) -> str:
        path = self.workspace.resolve(args["path"])
        name = self.workspace.display(path)
        old_text: str = args["old_text"]
        new_text: str = args["new_text"]
        if old_text == new_text:
            raise ToolError("old_text and new_text are the same, so nothing would change")
        before = self.text_after_edits(path)
        old_text = absorb_restated_lines(before, old_text, new_text)
        try:
            after = apply_replacement(before, old_text, new_text)
        except EditError as exc:
            missing = bool(old_text) and old_text not in before
            kept = apply_replacement_keeping_omitted(before, old_text, new_text) if missing else None
            if kept is None:
                raise ToolError(f"{exc}. {name} is unchanged") from None
            after = kept
        line = _first_changed_line(before, after)
        if old_text in before and _breaks_python(path, before, after):
            after = apply_replacement_reindented(before, old_text, new_text)
        _check_syntax(
            path, before, after, f"write new_text with the file's exact indentation. {name} is unchanged"
        )
        self._record(ProposedEdit(path, old_text, new_text), before, after)
        return f"Proposed an edit to {name} at line {line}. The user will review it before it is applied."

    def _create_file(self, args: dict[str, Any]) -> str:
        path = self.workspace.resolve(args["path"])
        name = self.workspace.display(path)
        content: str = args["content"]
        if any(edit.path == path and edit.kind == "create" for edit in self.edits):
            raise ToolError(f"{name} is already proposed in this request; use edit to change it")
        if path.exists() or self.workspace.open_text(path) is not None:
            raise ToolError(f"{name} already exists; use edit to change it")
        ancestor = path.parent
        while not ancestor.exists():
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise ToolError(
                f"{self.workspace.display(ancestor)} is a file, so {name} cannot be created in it"
            )
        if len(content.encode()) > MAX_FILE_BYTES:
            raise ToolError(f"the content is too large (the limit is {MAX_FILE_BYTES // 1024} KB)")
        _check_syntax(path, None, content, f"write the content again. {name} was not created")
        self._record(ProposedEdit(path, None, content), None, content)
        return (
            f"Proposed creating {name} ({_count(len(content.splitlines()), 'line')}). "
            "The user will review it before it is created."
        )


def _python_syntax_error(text: str) -> SyntaxError | None:
    try:
        compile(text, "<edit>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except ValueError:  # e.g. NUL bytes: not ours to judge
        return None
    return None


def _breaks_python(path: Path, before: str | None, after: str) -> bool:
    return (
        path.suffix == ".py"
        and (before is None or _python_syntax_error(before) is None)
        and _python_syntax_error(after) is not None
    )


def _check_syntax(path: Path, before: str | None, after: str, advice: str) -> None:
    """Refuses a Python edit that breaks a file that parsed before: small models often misindent."""
    error = _python_syntax_error(after) if _breaks_python(path, before, after) else None
    if error is not None:
        raise ToolError(
            f"the result would not parse ({type(error).__name__}: {error.msg}, line {error.lineno}); {advice}"
        )


def _first_changed_line(before: str, after: str) -> int:
    prefix = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        prefix += 1
    return len(split_lines(before[:prefix] + "x"))  # the line the first changed character is on
