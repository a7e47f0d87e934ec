"""Fix: the function or class that holds the problem written again, checked as a fix: the check that
failed on the code as it is should pass after it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import related
from ..checks.verifier import CheckPolicy
from ..tools.workspace_files import WorkspaceFiles
from .base import Action


@dataclass(frozen=True)
class Fix(Action):
    def check_policy(self) -> CheckPolicy | None:
        # The model never reads the look before's output: in a Fix's prompt it made the 1.5B model's
        # fixes worse on the eval's tasks.
        return CheckPolicy(looks_before=True, fixing=True)

    def second_look(
        self, diagnostics: tuple[dict[str, Any], ...], workspace: WorkspaceFiles, path: Path
    ) -> str:
        """The code the problems name in the workspace (the failing test, say): what it expects is what
        a fix must do. Python only; empty when they name nothing."""
        if path.suffix != ".py":
            return ""
        named = related.named_definitions([d.get("message", "") for d in diagnostics], workspace, path)
        if not named:
            return ""
        return "The code they name:\n" + "\n\n".join(d.as_markdown() for d in named)
