"""Definitions from the workspace's other files that an action should read with the code it changes.

Two kinds. The code a problem report names: a failing test's report names the test
(`test_gradebook.py::test_drop_lowest_scores`) and a type checker's names the function called; the
message alone rarely says what the code should do, and the named code does, so a Fix's candidates after
a failed check are shown it (block_turn.BlockRequest.second_look). And the code the block uses: the
functions and classes it calls that live in other files, found in the workspace index's symbol table,
which a small model would otherwise guess at (it does not go and read them with the tools).
Python only (the definitions are found with `ast`); plain text in and out, no LSP, no model.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from . import languages
from .codebase import CodebaseIndex
from .edits import split_lines
from .rewrite import DEFINITIONS, definition_lines
from .tools.workspace_files import ToolError, WorkspaceFiles

MAX_DEFINITIONS = 3
MAX_LINES = 40  # of one definition; a longer one is cut, and says so
MAX_FILES_READ = 300  # Python files that mention a name; a huge folder must not stall the action
# Chat's `@codebase`: the chunks that best match the question, at most this much of them (a prompt's
# tokens are time on a CPU), each cut after RELEVANT_MAX_LINES.
RELEVANT_BUDGET_CHARS = 3_000
RELEVANT_MAX_LINES = 40
RELEVANT_MAX_CHUNKS = 4
# The code a block uses: at most this much of it is read (a prompt's tokens are time on a CPU), each
# definition cut after USED_MAX_LINES, and a name defined in more than USED_MAX_PLACES files (`save`,
# `run`) is left out unless the document imports one of them: which one it means cannot be told.
USED_BUDGET_CHARS = 2_000
USED_MAX_LINES = 25
USED_MAX_PLACES = 2
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
        fence = languages.fence_tag(PurePosixPath(self.shown_path).suffix)
        return f"`{self.shown_path}`, line {self.line}:\n```{fence}\n{self.code}\n```"


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


def used_definitions(
    code: str, document: Path, document_text: str, index: CodebaseIndex, budget_chars: int = USED_BUDGET_CHARS
) -> list[Definition]:
    """The functions and classes that `code` (a block of `document`) uses and that are defined in other
    files of the index, first-used first, within `budget_chars`. Names the document defines are left
    out: the model reads the document whole already."""
    used = _names_used(code) if document.suffix == ".py" else []
    if not used:
        return []
    own, imported = _defined_and_imported(document_text)
    shown_document = index.workspace.display(document)
    found: list[Definition] = []
    spent = 0
    for name in used:
        if name in own or len(name) < 3 or hasattr(builtins, name):
            continue
        places = [place for place in index.definitions(name) if place[0] != shown_document]
        if len(places) > USED_MAX_PLACES:
            places = [place for place in places if _imports(imported, place[0])]
        if not places or len(places) > USED_MAX_PLACES:
            continue
        for shown, start, end in places:
            definition = _read_definition(index, shown, start, end)
            if definition is None or any(d.encloses(definition) or d == definition for d in found):
                continue
            if spent + len(definition.code) > budget_chars:
                return found
            spent += len(definition.code)
            found.append(definition)
    return found


def _names_used(code: str) -> list[str]:
    """The names `code` loads and the attributes it reads, in order of first use."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except (SyntaxError, ValueError, RecursionError):
        return []
    nodes = sorted(
        (node for node in ast.walk(tree) if isinstance(node, ast.Name | ast.Attribute)),
        key=lambda node: (node.lineno, node.col_offset),
    )
    names = [
        node.id if isinstance(node, ast.Name) else node.attr
        for node in nodes
        if isinstance(node, ast.Attribute) or isinstance(node.ctx, ast.Load)
    ]
    return list(dict.fromkeys(names))


def _defined_and_imported(text: str) -> tuple[set[str], set[str]]:
    """The names the document defines, and the module paths (`pkg/mod`) it imports from (for telling
    which of a name's places it means), from one parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return set(), set()
    defined, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, DEFINITIONS):
            defined.add(node.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module.replace(".", "/"))
        elif isinstance(node, ast.Import):
            modules.update(alias.name.replace(".", "/") for alias in node.names)
    return defined, modules


def _imports(modules: set[str], shown: str) -> bool:
    stem = shown.removesuffix(".py").removesuffix("/__init__")
    return any(stem == module or stem.endswith("/" + module) for module in modules)


def _read_definition(
    index: CodebaseIndex, shown: str, start: int, end: int, max_lines: int = USED_MAX_LINES
) -> Definition | None:
    try:
        text = index.workspace.read_text(index.workspace.resolve(shown))
    except ToolError:
        return None
    lines = split_lines(text)[start - 1 : end]
    code = "".join(lines[:max_lines]).rstrip()
    if len(lines) > max_lines:
        code += f"\n... ({len(lines) - max_lines} more lines)"
    return Definition(shown, start, end, code)


def relevant_code(
    question: str, index: CodebaseIndex, budget_chars: int = RELEVANT_BUDGET_CHARS
) -> list[Definition]:
    """The chunks of the index that best match the words of `question`, best first, as the files are on
    disk, within `budget_chars` (the first whatever its length: RELEVANT_MAX_LINES at most)."""
    found: list[Definition] = []
    spent = 0
    for hit in index.search(question, limit=2 * RELEVANT_MAX_CHUNKS):
        definition = _read_definition(index, hit.path, hit.start_line, hit.end_line, RELEVANT_MAX_LINES)
        if definition is None or any(d.encloses(definition) or definition.encloses(d) for d in found):
            continue
        if found and spent + len(definition.code) > budget_chars:
            break
        found.append(definition)
        spent += len(definition.code)
        if len(found) == RELEVANT_MAX_CHUNKS:
            break
    return found
