"""The eval's tasks (eval/tasks/*/task.json): `make eval` scores them and `make bench` (W) times their
rewrites, so both read them from here."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        """The task as a user's project would hold it: the module and its tests, not the answer."""
        for path in self.directory.iterdir():
            if path.name not in ("task.json", "reference.py") and path.is_file():
                shutil.copy(path, target / path.name)
