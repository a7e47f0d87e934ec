"""The eval's tasks (eval/tasks/*/task.json): `make eval` scores them and `make bench` (W) times their
rewrites, so both read them from here; and the fix tasks split across two files (`make eval --split`)."""

from __future__ import annotations

import ast
import json
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lsp_server.assistant.rewrite import DEFINITIONS, definition_lines

TASKS = Path(__file__).resolve().parent.parent / "eval" / "tasks"


@dataclass
class Task:
    name: str
    directory: Path
    kind: str  # fix | document | tests
    file: str
    first_line: int  # 1-based, inclusive
    last_line: int
    problem: str = ""
    symbol: str = ""
    mutants: list[dict[str, Any]] = field(default_factory=list)
    # A Write tests task made from a fix task (as_write_tests): the module is the fixed one, and the bug
    # is the mutant its tests should catch.
    source: str | None = None
    bugged: str | None = None
    # A fix task split across two files (as_split): the files written over the task's own (the module,
    # and the support module its other definitions moved to), and the module with the bug fixed.
    texts: dict[str, str] | None = None
    fixed: str | None = None

    @classmethod
    def load(cls, directory: Path) -> Task:
        spec = json.loads((directory / "task.json").read_text())
        first, last = spec["range"]
        return cls(
            name=directory.name,
            directory=directory,
            kind=spec["kind"],
            file=spec["file"],
            first_line=first,
            last_line=last,
            problem=spec.get("problem", ""),
            symbol=spec.get("symbol", ""),
            mutants=spec.get("mutants", []),
        )

    def copy_to(self, target: Path) -> None:
        """The task as a user's project would hold it: the module and its tests, not the answer; for a
        Write tests task made from a fix task, the fixed module alone."""
        if self.source is not None:
            (target / self.file).write_text(self.source, encoding="utf-8")
            return
        for path in self.directory.iterdir():
            if path.name not in ("task.json", "reference.py") and path.is_file():
                shutil.copy(path, target / path.name)
        for name, text in (self.texts or {}).items():
            (target / name).write_text(text, encoding="utf-8")

    def mutated(self, source: str) -> list[str]:
        """The module `source` with each of the task's bugs (mutants) in it, one per text."""
        texts = []
        for mutant in self.mutants:
            lines = source.splitlines(keepends=True)
            lines[mutant["line"] - 1] = lines[mutant["line"] - 1].replace(mutant["old"], mutant["new"], 1)
            texts.append("".join(lines))
        return texts + ([self.bugged] if self.bugged is not None else [])

    def as_write_tests(self) -> Task:
        """A fix task as a Write tests task: the fixed module (reference.py), the function that held the
        bug, and the module with the bug as the one mutant its tests should catch."""
        fixed = (self.directory / "reference.py").read_text(encoding="utf-8")
        bugged = (self.directory / self.file).read_text(encoding="utf-8")
        symbol = _definition_at(ast.parse(bugged), self.first_line)
        first, last = _span_of(ast.parse(fixed), symbol)
        return replace(
            self,
            name=f"{self.name}+tests",
            kind="tests",
            first_line=first,
            last_line=last,
            problem="",
            symbol=".".join(symbol),
            source=fixed,
            bugged=bugged,
        )

    def as_split(self) -> Task:
        """A fix task across two files (split_module): the definition holding the bug in the task's
        module, the module's other definitions in `<module>_support.py`. Raises ValueError when the bug
        is not inside a top-level function or class."""
        stem = Path(self.file).stem
        support_file = f"{stem}_support.py"
        bugged = (self.directory / self.file).read_text(encoding="utf-8")
        fixed = (self.directory / "reference.py").read_text(encoding="utf-8")
        module, support, offset = split_module(bugged, self.first_line, support_file.removesuffix(".py"))
        # The fixed module split the same way: the same definition kept, found by its name.
        kept = _top_level_at(ast.parse(bugged), self.first_line)
        assert isinstance(kept, DEFINITIONS)
        twin = next(n for n in ast.parse(fixed).body if isinstance(n, DEFINITIONS) and n.name == kept.name)
        fixed_module, fixed_support, _ = split_module(fixed, definition_lines(twin)[0], stem + "_support")
        if fixed_support != support:
            raise ValueError("the fix changes more than the definition holding the bug")
        return replace(
            self,
            first_line=self.first_line + offset,
            last_line=self.last_line + offset,
            texts={self.file: module, support_file: support},
            fixed=fixed_module,
        )


def split_module(source: str, line: int, support: str) -> tuple[str, str, int]:
    """`source` as two modules: the top-level function or class holding `line` stays, with the module's
    docstring, imports and other statements; every other top-level definition (functions, classes,
    assignments) moves to the module `support`, which gets a copy of the imports and is imported from by
    name (explicitly, so `_private` names come too, and `module.name` still resolves for the tests).
    The definitions that use the kept one (`parse` calls `parse_line`, the one with the bug) stay with it,
    and those that use them, so that `support` never needs the module back (a circular import).

    Why: every eval task is one module, so a Fix never needs the definitions from other files that the
    workspace index puts in its prompt (related.used_definitions); split, the code the fixed definition
    uses lives in another file, as in a real project. Mechanical (no task is edited by hand); a split
    that changes what the task's tests decide is left out by `make eval --split`.
    Each statement moves with the comments and blank lines above it, decorators included. Returns (the
    module, the support module, how far `line` moved). Raises ValueError when `line` is in no top-level
    function or class, or nothing moves."""
    tree = ast.parse(source)
    kept = _top_level_at(tree, line)
    if not isinstance(kept, DEFINITIONS):
        raise ValueError(f"line {line} is in no top-level function or class")
    staying = _users_of(tree, kept)
    lines = source.splitlines(keepends=True)
    stays, moves, imports, names = [], [], [], []
    previous_end = 0  # the line before each statement's own: its comments and blank lines go with it
    for node in tree.body:
        first, last = (
            definition_lines(node) if isinstance(node, DEFINITIONS) else (node.lineno, node.end_lineno)
        )
        assert last is not None
        segment = (previous_end + 1, last)
        previous_end = last
        moved = _defined_names(node)
        if node in staying or not moved:
            stays.append((node, segment))
            if isinstance(node, ast.Import | ast.ImportFrom):
                imports.append("".join(lines[first - 1 : last]))
        else:
            moves.append(segment)
            names.extend(moved)
    if not names:
        raise ValueError("nothing to move: the module has one definition")
    importing = f"from {support} import {', '.join(dict.fromkeys(names))}\n"
    if len(importing) > 100:  # as a formatter writes it
        importing = (
            f"from {support} import (\n" + "".join(f"    {n},\n" for n in dict.fromkeys(names)) + ")\n"
        )
    # It goes after the module's last import (or its docstring, or first).
    after = max(
        (i for i, (node, _) in enumerate(stays) if isinstance(node, ast.Import | ast.ImportFrom)),
        default=0 if stays and _is_docstring(stays[0][0]) else -1,
    )
    module, shift = "", 0
    for i, (node, (first, last)) in enumerate(stays):
        if node is kept:
            kept_at = module.count("\n") + 1  # where this segment starts in the new module
            shift = kept_at - first
        module += "".join(lines[first - 1 : last])
        if i == after:
            module += importing
    if after == -1:
        module = importing + module
        shift += 1
    module += "".join(lines[previous_end:])  # what follows the last statement
    body = "".join("".join(lines[first - 1 : last]) for first, last in moves)
    support_text = "".join(imports) + ("\n\n" if imports else "") + body.lstrip("\n")
    return module, support_text, shift


def _users_of(tree: ast.Module, kept: ast.stmt) -> list[ast.stmt]:
    """`kept`, and the top-level definitions that use it by name, or use one that does, and so on."""
    users = [kept]
    names = set(_defined_names(kept))
    grown = True
    while grown:
        grown = False
        for node in tree.body:
            defined = _defined_names(node)
            if node in users or not defined:
                continue
            if any(isinstance(n, ast.Name) and n.id in names for n in ast.walk(node)):
                users.append(node)
                names.update(defined)
                grown = True
    return users


def _top_level_at(tree: ast.Module, line: int) -> ast.stmt | None:
    return next(
        (
            n
            for n in tree.body
            if (definition_lines(n) if isinstance(n, DEFINITIONS) else (n.lineno, n.end_lineno or n.lineno))[
                0
            ]
            <= line
            <= (n.end_lineno or n.lineno)
        ),
        None,
    )


def _defined_names(node: ast.stmt) -> list[str]:
    """The names a top-level statement defines: a function's or class's, an assignment's targets."""
    if isinstance(node, DEFINITIONS):
        return [node.name]
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    return [n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name)]


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _definition_at(tree: ast.Module, line: int) -> list[str]:
    """The names of the innermost definition whose first line (decorators included) is `line`, from the
    outermost: ["Matrix", "__matmul__"]."""
    scope: list[ast.stmt] = tree.body
    names: list[str] = []
    while True:
        found = next(
            (
                n
                for n in scope
                if isinstance(n, DEFINITIONS) and definition_lines(n)[0] <= line <= definition_lines(n)[1]
            ),
            None,
        )
        if found is None:
            return names
        names.append(found.name)
        if definition_lines(found)[0] == line:
            return names
        scope = found.body


def _span_of(tree: ast.Module, names: list[str]) -> tuple[int, int]:
    """The 1-based lines of the definition named by `names` (decorators included)."""
    scope: list[ast.stmt] = tree.body
    node: ast.stmt | None = None
    for name in names:
        node = next(n for n in scope if isinstance(n, DEFINITIONS) and n.name == name)
        scope = node.body
    assert isinstance(node, DEFINITIONS)
    return definition_lines(node)
