"""The tools the model may call, and the runner that carries out one request's calls.

The runner dispatches a call to its tool after checking the arguments against the tool's schema
(schemas.py); the tools read the workspace's files through workspace_files.py and propose edits into
the request's ledger (proposals.py). Tools never write to disk:
`edit` and `create_file` only record a ProposedEdit for the user to review. Every mistake, the model's
or ours, comes back as text for the model to read. Plain Python only; the feature layer converts to and
from LSP types.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import regex

from ..codebase import CodebaseIndex, words
from ..edits import (
    EditError,
    absorb_restated_lines,
    apply_replacement,
    apply_replacement_keeping_omitted,
    apply_replacement_loosely,
    apply_replacement_reindented,
    split_lines,
)
from .proposals import Admission, Proposals, ProposedEdit, breaks_python, check_syntax
from .schemas import EDIT_TOOL_NAMES, READ_MAX_LINES, TOOL_NAMES, check_arguments, glob_regex
from .workspace_files import MAX_FILE_BYTES, ToolError, WorkspaceFiles

READ_MAX_BYTES = 32 * 1024
LIST_MAX_FILES = 200
SEARCH_MAX_MATCHES = 50
SEARCH_TIME_BUDGET_S = 3.0  # a whole search, so a backtracking pattern cannot hold a turn up for long
SEARCH_LINE_CHARS = 200
CLOSEST_LINES = 20  # lines shown when a pattern matched none, ranked by the words of it they hold
CLOSEST_CHUNKS = 10  # the index's chunks shown instead, where the server keeps an index
NOTHING = "No matches"  # how a search or a listing that found nothing begins


log = logging.getLogger("llama_lsp.tools")


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call did: the text the model reads, whether it succeeded, and whether it proposed
    an edit (which the runner's ledger then holds)."""

    text: str
    ok: bool = True
    proposed: bool = False
    found_nothing: bool = False  # a search or listing that came back empty

    @classmethod
    def failed(cls, problem: str) -> ToolOutcome:
        return cls(f"Error: {problem}", ok=False)

    @property
    def problem(self) -> str:
        return self.text.removeprefix("Error: ")


def counted(n: int, noun: str) -> str:
    """ "1 line", "3 lines": `n` and the noun, plural unless n is 1."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


class ExtraTools(Protocol):
    """Tools besides the built-in four that a request may call: a chat's MCP tools (mcp_tools.py)."""

    @property
    def names(self) -> frozenset[str]: ...

    async def run(self, name: str, arguments: object) -> ToolOutcome: ...


class ToolRunner:
    """Runs one request's tool calls, within its workspace files; the edits they propose go to its ledger."""

    def __init__(
        self,
        workspace: WorkspaceFiles,
        admission: Admission | None = None,
        index: CodebaseIndex | None = None,
        extra: ExtraTools | None = None,
    ) -> None:
        self.workspace = workspace
        self.index = index  # the workspace index, where the server keeps one
        self.extra = extra  # a chat's MCP tools; code actions have none
        self.proposals = Proposals(workspace, admission)
        self._handlers: dict[str, Callable[[dict[str, Any]], str]] = {
            "read_file": self._read_file,
            "search": self._search,
            "edit": self._edit,
            "create_file": self._create_file,
        }

    def run(self, name: str, arguments: object) -> ToolOutcome:
        """The outcome of one tool call; its mistakes are outcomes too ("Error: ..."), for the model."""
        try:
            handler = self._handlers.get(name)
            if handler is None:
                raise ToolError(f"there is no tool named {name!r}; the tools are: {', '.join(TOOL_NAMES)}")
            text = handler(check_arguments(name, arguments))
            return ToolOutcome(text, proposed=name in EDIT_TOOL_NAMES, found_nothing=text.startswith(NOTHING))
        except ToolError as exc:
            return ToolOutcome.failed(str(exc))
        except (OSError, RuntimeError, ValueError) as exc:  # the file system refused: e.g. a name too long
            return ToolOutcome.failed(f"{name} failed: {exc}")
        except Exception as exc:  # a bug of ours must not end the user's chat: the model reads it instead
            log.exception("tool %s failed", name)
            return ToolOutcome.failed(f"{name} failed unexpectedly ({type(exc).__name__})")

    async def call(self, name: str, arguments: object) -> ToolOutcome:
        """One call of any tool the request has: an extra tool awaited, a built-in one off the event loop
        (a search through a large folder must not stall other requests or cancels)."""
        if self.extra is not None and name in self.extra.names:
            try:
                return await self.extra.run(name, arguments)
            except Exception as exc:  # a bug of ours must not end the user's chat
                log.exception("tool %s failed", name)
                return ToolOutcome.failed(f"{name} failed unexpectedly ({type(exc).__name__})")
        return await asyncio.to_thread(self.run, name, arguments)

    def propose_file(self, path: str, content: str) -> str | None:
        """Records a new file as create_file would (the block-rewrite format); None when recorded, else
        why not."""
        outcome = self.run("create_file", {"path": path, "content": content})
        return None if outcome.ok else outcome.problem

    def _files(self, glob: str | None) -> list[tuple[str, Path]]:
        """The workspace's files, plus those proposed in this request, as sorted (shown path, path)."""
        files = self.workspace.files()
        for edit in self.proposals.edits:
            files.setdefault(edit.path, self.workspace.display(edit.path))
        matcher = glob_regex(glob) if glob else None
        found = [
            (shown, path) for path, shown in files.items() if matcher is None or matcher.fullmatch(shown)
        ]
        # The first folder's relative paths come first, then other folders' absolute ones.
        return sorted(found, key=lambda item: (Path(item[0]).is_absolute(), item))

    def _read_file(self, args: dict[str, Any]) -> str:
        path = self.workspace.resolve(args["path"])
        name = self.workspace.display(path)
        lines = split_lines(self.proposals.text_after_edits(path))
        total = len(lines)
        if total == 0:
            return f"{name} is empty."
        start: int = args.get("startLine", 1)
        end: int = args.get("endLine", total)
        if start < 1 or end < 1:
            raise ToolError("line numbers start at 1")
        if start > total:
            raise ToolError(
                f"startLine {start} is past the end of {name}, which has {counted(total, 'line')}"
            )
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

    def _list_files(self, glob: str | None) -> str:
        names = [shown for shown, _ in self._files(glob)]
        if not names:
            return (
                f"{NOTHING}: no files match {glob!r}." if glob else f"{NOTHING}: the workspace has no files."
            )
        result = "\n".join(names[:LIST_MAX_FILES])
        if len(names) > LIST_MAX_FILES:
            result += f"\n... {len(names) - LIST_MAX_FILES} more; pass a narrower glob to see them"
        return result

    def _search(self, args: dict[str, Any]) -> str:
        pattern: str = args.get("pattern", "")
        if not pattern:
            return self._list_files(args.get("glob"))
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
                text = self.proposals.text_after_edits(path)
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
        if matches:
            return note + "\n".join(matches)
        closest = self._closest_code(pattern) or self._closest_lines(pattern, args.get("glob"), deadline)
        if closest:
            return closest
        return f"{NOTHING} for {pattern!r}."

    def _closest_code(self, pattern: str) -> str:
        """When a pattern matches no line: the workspace index's chunks that best match its words, each
        as `path:line` with its first line; "" without a built index, or no match."""
        if self.index is None or not self.index.ready or len(words(pattern)) < 2:
            return ""  # until the index is built, the lines with most of the words
        hits = self.index.search(pattern, CLOSEST_CHUNKS)
        if not hits:
            return ""
        shown = []
        for hit in hits:
            first = next((line.strip() for line in hit.snippet.splitlines() if line.strip()), "")
            shown.append(f"{hit.path}:{hit.start_line}: {first[:SEARCH_LINE_CHARS]}")
        return (
            f"No line matches {pattern!r}. The code that best matches its words, best first:\n"
            + "\n".join(shown)
        )

    def _closest_lines(self, pattern: str, glob: str | None, deadline: float) -> str:
        """When a pattern matches no line (small models search for a whole sentence): the lines that hold
        the most of its words, rarer words counting more, and a path's words counting too; "" when no
        line holds any of them."""
        wanted = list(dict.fromkeys(words(pattern)))
        if len(wanted) < 2:
            return ""
        asked = set(wanted)
        found: list[tuple[str, int, str, frozenset[str]]] = []
        for shown, path in self._files(glob):
            if time.monotonic() > deadline:
                break
            try:
                text = self.proposals.text_after_edits(path)
            except (ToolError, OSError):
                continue
            # Compared as words, not substrings: a stem is not always the start of its word ("retri").
            in_path = asked.intersection(words(shown))
            for number, line in enumerate(split_lines(text), 1):
                present = frozenset(asked.intersection(words(line))) | in_path
                if present - in_path:
                    found.append((shown, number, line.strip(), present))
        if not found:
            return ""
        lines_with = {word: sum(word in present for *_, present in found) for word in wanted}
        weight = {word: math.log(1 + len(found) / (1 + lines_with[word])) for word in wanted}
        ranked = sorted(found, key=lambda item: -sum(weight[word] for word in item[3]))
        shown_lines = [
            f"{shown}:{number}: {text[:SEARCH_LINE_CHARS]}"
            for shown, number, text, _ in ranked[:CLOSEST_LINES]
        ]
        return (
            f"No line matches {pattern!r}. The lines with the most of its words "
            f"({', '.join(wanted)}), best first:\n" + "\n".join(shown_lines)
        )

    def _edit(self, args: dict[str, Any]) -> str:
        path = self.workspace.resolve(args["path"])
        name = self.workspace.display(path)
        old_text: str = args["old_text"]
        new_text: str = args["new_text"]
        if old_text == new_text:
            raise ToolError("old_text and new_text are the same, so nothing would change")
        before = self.proposals.text_after_edits(path)
        old_text = absorb_restated_lines(before, old_text, new_text)
        try:
            after = apply_replacement(before, old_text, new_text)
        except EditError as exc:
            # Not in the file as quoted: the same lines with other whitespace or quotes, or a few left out.
            repaired = None
            if old_text and old_text not in before:
                repaired = apply_replacement_loosely(
                    before, old_text, new_text
                ) or apply_replacement_keeping_omitted(before, old_text, new_text)
            if repaired is None:
                raise ToolError(f"{exc}. {name} is unchanged") from None
            after = repaired
        line = _first_changed_line(before, after)
        if old_text in before and breaks_python(path, before, after):
            after = apply_replacement_reindented(before, old_text, new_text)
        check_syntax(
            path, before, after, f"write new_text with the file's exact indentation. {name} is unchanged"
        )
        self.proposals.record(ProposedEdit(path, old_text, new_text), before, after)
        return f"Proposed an edit to {name} at line {line}. The user will review it before it is applied."

    def _create_file(self, args: dict[str, Any]) -> str:
        path = self.workspace.resolve(args["path"])
        name = self.workspace.display(path)
        content: str = args["content"]
        if any(edit.path == path and edit.kind == "create" for edit in self.proposals.edits):
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
        check_syntax(path, None, content, f"write the content again. {name} was not created")
        self.proposals.record(ProposedEdit(path, None, content), None, content)
        return (
            f"Proposed creating {name} ({counted(len(content.splitlines()), 'line')}). "
            "The user will review it before it is created."
        )


def _first_changed_line(before: str, after: str) -> int:
    prefix = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        prefix += 1
    return len(split_lines(before[:prefix] + "x"))  # the line the first changed character is on
