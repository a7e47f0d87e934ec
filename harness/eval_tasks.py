"""The eval's tasks (eval/tasks/*/task.json): `make eval` scores them and `make bench` (W) times their
rewrites, so both read them from here."""

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
