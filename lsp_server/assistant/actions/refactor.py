"""Refactor: the function or class that holds the selection written again, clearer and doing the same;
its check must pass after it when it passed before."""

from __future__ import annotations

from dataclasses import dataclass

from ..checks.verifier import CheckPolicy
from .base import Action


@dataclass(frozen=True)
class Refactor(Action):
    def check_policy(self) -> CheckPolicy | None:
        return CheckPolicy(looks_before=True)
