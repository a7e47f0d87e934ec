"""Explain: an answer in words about the selected lines, which the client shows as a conversation it
can continue. Nothing to check, no edit."""

from __future__ import annotations

from dataclasses import dataclass

from ..checks.verifier import CheckPolicy
from .base import Action, selected_lines


@dataclass(frozen=True)
class Explain(Action):
    def definitions_budget(self) -> int:
        return 0

    def check_policy(self) -> CheckPolicy | None:
        return None

    def code_shown(self, source: str, first: int, last: int, python: bool) -> tuple[int, int, str]:
        """The selection itself: an answer is about what was selected, not the unit around it."""
        return selected_lines(source, first, last)
