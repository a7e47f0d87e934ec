"""What every code action kind is and does unless its own module says otherwise.

An action kind is a row of the table (actions/__init__.py): an instance of its kind's class, whose
fields say what it is called and asks, and whose methods say how it behaves: which files it is offered
for, which code the model reads, how the model's block becomes an edit, which edits the request's
ledger admits, and how its check treats a failure (its CheckPolicy). The defaults here are those of a
kind that writes the function or class holding the selection again. Plain data and text: no LSP types,
no model.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import languages, related, rewrite
from ..checks.verifier import CheckPolicy
from ..edits import split_lines
from ..tools.proposals import Admission
from ..tools.runner import ToolRunner
from ..tools.workspace_files import WorkspaceFiles


class Output(enum.Enum):
    """What the model's answer becomes."""

    ANSWER = "answer"  # words, which the client shows as a conversation it can continue
    BLOCK = "block"  # the function or class that holds the selection, written again; the edit is the diff
    TEST_FILE = "test file"  # a new test file, written whole


BLOCK_ATTEMPTS = 2  # writes of the block when edits are not checked

# A block written again must be whole (cut off, it cannot parse), so it may take more than maxTokens:
# up to this many times maxTokens. The bound is the user's, whatever the block's size.
REWRITE_MAX_FACTOR = 4
# Code rarely packs more characters into a token (runs of indentation are single tokens), so a block
# of more characters than this many times the bound cannot be written again within it.
CHARS_PER_TOKEN_AT_MOST = 5


class BlockTooLong(Exception):
    """The block an action would write again is longer than its bound allows; the message names the fix."""


@dataclass(frozen=True)
class Action:
    """One code action kind: its name and what it asks (the fields), and its behaviour (the methods,
    which a kind's own class overrides)."""

    name: str  # on the wire: the `kind` of a code action's data and of the llamaLsp.codeAction command
    title: str  # offered as "Llama: <title>"
    lsp_kind: str  # the LSP CodeActionKind, a client's `only` filters on it
    output: Output
    # Asked after the code is shown: the question of an ANSWER; for the others a template that asks for
    # the block ({first}, {last}, {path}, {language}, {test_file}, {name}), repeated after a refusal.
    instruction: str
    # When the block never came out right: what the edit tools are asked for, and which of them may be
    # used; none: no such turn.
    tool_instruction: str = ""
    edit_tools: tuple[str, ...] = ()
    for_diagnostics: bool = False  # offered only when the request has diagnostics, and about them
    preferred: bool = False  # the client may apply it without showing the others (LSP `isPreferred`)

    def offered_for(self, suffix: str) -> bool:
        """Whether it is offered for a file of this suffix."""
        return True

    def check_policy(self) -> CheckPolicy | None:
        """How its edits are checked when verifyCommand is set (None: never checked)."""
        return CheckPolicy()

    def admission(self) -> Admission | None:
        """What the request's ledger keeps of each edit proposed (None: the edit as it is)."""
        return None

    def reads_failed_checks(self) -> bool:
        """Whether the model reads a failed check and writes again, rather than fresh candidates being
        written (block_turn.BlockRequest)."""
        return False

    def code_shown(self, source: str, first: int, last: int, python: bool) -> tuple[int, int, str]:
        """The 1-based inclusive lines the model reads for a selection of lines first..last, and their
        code: here the unit it writes again, the function or class that holds the selection."""
        first, last = rewrite.enclosing_block(source, first, last, python=python)
        return selected_lines(source, first, last)

    def block_instruction(self, source: str, first: int, last: int, python: bool) -> tuple[str, str]:
        """The instruction template that asks for the block at lines first..last, and the name of the
        function it is about where the template has one ("" otherwise)."""
        return self.instruction, ""

    def write_tokens(self, code: str, max_tokens: int) -> int:
        """Tokens the model may write for the block (of `code`): room for the block again and what is
        said before it (two characters a token), at least maxTokens and at most REWRITE_MAX_FACTOR times
        it. Raises BlockTooLong when the block cannot fit in that bound."""
        bound = REWRITE_MAX_FACTOR * max_tokens
        if len(code) > CHARS_PER_TOKEN_AT_MOST * bound:
            raise BlockTooLong(
                f"{len(code) // CHARS_PER_TOKEN_AT_MOST} tokens or more, and an answer may write "
                f"{REWRITE_MAX_FACTOR} x maxTokens = {bound}; select a smaller block, or raise "
                "llamaLsp.maxTokens"
            )
        return min(max(max_tokens, len(code) // 2), bound)

    def definitions_budget(self) -> int:
        """Characters of the definitions from other files that the code uses, read with it (0: none;
        related.used_definitions)."""
        return related.USED_BUDGET_CHARS

    def second_look(
        self, diagnostics: tuple[dict[str, Any], ...], workspace: WorkspaceFiles, path: Path
    ) -> str:
        """More for the candidates written after a failed check to read; "" for nothing. May walk the
        folder: call it off the event loop."""
        return ""

    def propose_block(
        self, runner: ToolRunner, path: Path, source: str, first: int, last: int, test_file: str, code: str
    ) -> str | None:
        """Turns a block the model wrote for lines first..last into a proposed edit: None when recorded,
        else why not, for the model to read."""
        if path.suffix == ".py":
            code, wrong = rewrite.the_unit_written(source, first, last, code)
            if wrong is not None:
                return wrong
        return runner.proposals.propose_text(path, rewrite.replace_lines(source, first, last, code))


def selected_lines(source: str, first: int, last: int) -> tuple[int, int, str]:
    """Lines first..last of `source` (1-based, inclusive, the last one within the text) and their code."""
    lines = split_lines(source)
    last = min(last, max(len(lines), 1))
    return first, last, "".join(lines[first - 1 : last])


def fence_language(path: Path) -> str:
    """The language tag of the code's fenced block."""
    return languages.fence_tag(path.suffix)


def code_message(
    shown_path: str,
    first: int,
    last: int,
    code: str,
    language: str,
    diagnostics: tuple[dict[str, Any], ...],
    used: list[related.Definition] | None = None,
) -> str:
    """The definitions from other files that the code uses, the code the action is about, and the
    problems reported in it. The instruction comes after it: small models follow what they read most
    recently."""
    message = f"Lines {first}-{last} of `{shown_path}`:\n```{language}\n{code}```"
    if used:
        shown = "\n\n".join(definition.as_markdown() for definition in used)
        message = f"Defined in other files, and used by lines {first}-{last}:\n{shown}\n\n{message}"
    if diagnostics:
        problems = "\n".join(
            f"- line {d['range']['start']['line'] + 1}: {d.get('message', '')}" for d in diagnostics
        )
        message += f"\n\nThe problems reported there:\n{problems}"
    return message


def test_file_for(path: Path, workspace: WorkspaceFiles) -> str:
    """Where new tests for a file go: the language's usual name beside it, never an existing file."""
    stem, suffix = path.stem, path.suffix
    names = (
        [f"test_{stem}{suffix}", f"test_{stem}_more{suffix}"]
        if suffix == ".py"
        else [f"{stem}.test{suffix}", f"{stem}.more.test{suffix}"]
    )
    for name in names:
        try:
            taken = (path.parent / name).exists()
        except OSError:  # e.g. a name too long for the file system: create_file will say so to the model
            taken = False
        if not taken:
            return workspace.display(path.parent / name)
    return workspace.display(path.parent / f"{stem}_generated_tests{suffix}")
