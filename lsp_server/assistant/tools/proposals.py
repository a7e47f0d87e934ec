"""The edits one request proposes, and what a proposal is checked against before it is recorded.

Nothing here writes to disk: a ProposedEdit waits for the user to review it. The ledger keeps each
changed file's text after the request's edits, each file's text before the first of them (what the
editor's text must still be when the edit is applied), and enough to withdraw the latest edit or
return to a saved point when a check fails (checks/verifier.py). A Python edit that breaks a file which
parsed before is refused, since small models often misindent.

An action may give the ledger an admission, which decides what is recorded of every edit, whatever
proposes it (a rewritten block, the edit tool): Document's keeps the file as it was plus only the
documentation the edit adds, so the action cannot do more than its name says.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .workspace_files import ToolError, WorkspaceFiles


@dataclass(frozen=True)
class ProposedEdit:
    """One change a tool call proposes; nothing is written until the user accepts it."""

    path: Path  # absolute, resolved, inside a workspace folder
    old_text: str | None  # None for a new file
    new_text: str  # the replacement text, or the new file's content

    @property
    def kind(self) -> Literal["replace", "create"]:
        return "create" if self.old_text is None else "replace"


# The ledger at one point: the edits, the files' texts, what each edit replaced.
Checkpoint = tuple[list[ProposedEdit], dict[Path, str], list[tuple[Path, str | None]]]

# What a ledger keeps of an edit to a file (path, its text before or None for a new file, after): the
# text to record, or a ToolError that says why nothing can be (an action's admission: actions/).
Admission = Callable[[Path, str | None, str], str]


class Proposals:
    """The ledger of one request's proposed edits, over the workspace files it may read."""

    def __init__(self, workspace: WorkspaceFiles, admission: Admission | None = None) -> None:
        self.workspace = workspace
        self.admission = admission  # None: an edit is recorded as it is
        self.edits: list[ProposedEdit] = []
        # The text each edited or created file has after this request's edits. Kept rather than recomputed,
        # so the user typing in the editor meanwhile cannot make an accepted edit stop applying.
        self._texts: dict[Path, str] = {}
        # What each recorded edit replaced in _texts, latest last, so that it can be withdrawn.
        self._replaced: list[tuple[Path, str | None]] = []
        # Each edited file's text as read before this request's first edit to it (None: a new file).
        self._originals: dict[Path, str | None] = {}

    def text_after_edits(self, path: Path) -> str:
        """A file's current text with this request's edits applied."""
        path = path.resolve()
        if path in self._texts:
            return self._texts[path]
        return self.workspace.read_text(path)

    def propose_text(self, path: Path, after: str) -> str | None:
        """Records a file's whole new text as an edit (the block-rewrite format of code actions).

        Returns None when recorded, else why not, for the model to read.
        """
        name = self.workspace.display(path)
        before = self.text_after_edits(path)
        if after == before and self.admission is None:  # an admission says what is missing instead
            return "That is the code exactly as it was: nothing would change. Write it with the change made."
        try:
            check_syntax(path, before, after, f"write the block again, complete, with {name}'s indentation")
            self.record(ProposedEdit(path, before, after), before, after)
        except ToolError as exc:
            message = str(exc)
            return f"{message[:1].upper()}{message[1:]}."
        return None

    def record(self, edit: ProposedEdit, before: str | None, after: str) -> None:
        """Records an edit that was checked: `before` and `after` are its file's whole text around it.
        With an admission, what it admits of `after` is recorded, or its ToolError raised."""
        if self.admission is not None:
            after = self.admission(edit.path, before, after)
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

    def checkpoint(self) -> Checkpoint:
        return list(self.edits), dict(self._texts), list(self._replaced)

    def restore(self, state: Checkpoint) -> None:
        edits, texts, replaced = state
        self.edits, self._texts, self._replaced = list(edits), dict(texts), list(replaced)


def _python_syntax_error(text: str) -> SyntaxError | None:
    try:
        compile(text, "<edit>", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except ValueError:  # e.g. NUL bytes: not ours to judge
        return None
    return None


def breaks_python(path: Path, before: str | None, after: str) -> bool:
    """Whether a Python file that parsed before the edit (or is new) no longer parses after it."""
    return (
        path.suffix == ".py"
        and (before is None or _python_syntax_error(before) is None)
        and _python_syntax_error(after) is not None
    )


def check_syntax(path: Path, before: str | None, after: str, advice: str) -> None:
    """Refuses a Python edit that breaks a file that parsed before: small models often misindent."""
    error = _python_syntax_error(after) if breaks_python(path, before, after) else None
    if error is not None:
        raise ToolError(
            f"the result would not parse ({type(error).__name__}: {error.msg}, line {error.lineno}); {advice}"
        )
