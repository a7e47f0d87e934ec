"""The code a problem report names: definitions from the workspace's other files that a Fix should read.

A failing test's report names the test (`test_gradebook.py::test_drop_lowest_scores`) and a type
checker's names the function called; the message alone rarely says what the code should do, and the
named code does. A small model does not go and read it with the tools, so a Fix's candidates after a
failed check are shown it (lsp_server.assistant.block_turn.BlockRequest.second_look).
Python only (the definitions are found with `ast`); plain text in and out, no LSP, no model.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .edits import split_lines
from .rewrite import DEFINITIONS, definition_lines
from .tools.workspace_files import ToolError, WorkspaceFiles

MAX_DEFINITIONS = 3
MAX_LINES = 40  # of one definition; a longer one is cut, and says so
MAX_FILES_READ = 300  # Python files that mention a name; a huge folder must not stall the action
_NAME = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,}\b")


@dataclass(frozen=True)
class Definition:
    shown_path: str  # as the model sees paths
    line: int  # 1-based
    last_line: int
    code: str

    def encloses(self, other: Definition) -> bool:
        return (
            self is not other
            and self.shown_path == other.shown_path
            and self.line <= other.line
            and other.last_line <= self.last_line
        )

    def as_markdown(self) -> str:
        return f"`{self.shown_path}`, line {self.line}:\n```python\n{self.code}\n```"


def named_definitions(problems: Sequence[str], workspace: WorkspaceFiles, document: Path) -> list[Definition]:
    """The functions and classes that `problems` name, defined in Python files of the workspace other
    than `document` (which the model reads whole already): first-named first, files beside the
    document before the others, at most MAX_DEFINITIONS."""
    names = list(dict.fromkeys(name for problem in problems for name in _NAME.findall(problem)))
    if not names:
        return []
    found: dict[str, Definition] = {}
    for path in _python_files(workspace, document)[:MAX_FILES_READ]:
        try:
            text = workspace.read_text(path)
        except ToolError:
            continue
        mentioned = {name for name in names if name not in found and _may_define(text, name)}
        if not mentioned:
            continue
        for name, definition in _definitions(text, mentioned, workspace.display(path)).items():
            found.setdefault(name, definition)
        if all(name in found for name in names[:MAX_DEFINITIONS]):
            break
    named = [found[name] for name in names if name in found]
    # `TestCart.test_total`: the method says it; its whole class would crowd it out.
    return [d for d in named if not any(d.encloses(other) for other in named)][:MAX_DEFINITIONS]


def _may_define(text: str, name: str) -> bool:
    """A quick look before parsing: most files define none of the names."""
    return f"def {name}" in text or f"class {name}" in text


def _python_files(workspace: WorkspaceFiles, document: Path) -> list[Path]:
    files = [path for path in workspace.files() if path.suffix == ".py" and path != document]
    return sorted(files, key=lambda path: (path.parent != document.parent, len(path.parts), str(path)))


def _definitions(text: str, names: set[str], shown_path: str) -> dict[str, Definition]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = split_lines(text)
    found: dict[str, Definition] = {}
    for node in ast.walk(tree):
        if not isinstance(node, DEFINITIONS) or node.name not in names:
            continue
        first, last = definition_lines(node)
        code = "".join(lines[first - 1 : min(last, first + MAX_LINES - 1)]).rstrip()
        if last - first + 1 > MAX_LINES:
            code += f"\n# ... ({last - first + 1 - MAX_LINES} more lines)"
        found.setdefault(node.name, Definition(shown_path, first, last, code))
    return found
