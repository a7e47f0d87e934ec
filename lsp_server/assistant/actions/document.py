"""Document: documentation added to the function or class that holds the selection, and nothing else.

Its edits keep every line of code: whatever proposes them (the block or the edit tool), the request's
ledger admits only the comments and docstrings they add (rewrite.only_documentation), so it is offered
only for languages whose comments languages.py can tell from their code. A Python function with no
docstring is asked for the docstring alone, which the edit puts under the function's signature: a third
of the tokens of the function written again, and no way to change its code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import languages, rewrite
from ..checks.verifier import CheckPolicy
from ..tools.proposals import Admission
from ..tools.runner import ToolRunner
from ..tools.workspace_files import ToolError
from .base import Action

# Models shown code that already has a docstring tend to write it back unchanged.
NOTHING_DOCUMENTED = (
    "that adds no documentation. Add to it: say in the docstring what the code returns, what its "
    "arguments mean and what it raises, and comment the lines whose purpose is not obvious"
)


@dataclass(frozen=True)
class Document(Action):
    # Asked instead of `instruction` when the block is a Python function with no docstring ({name} too).
    docstring_instruction: str = ""

    def offered_for(self, suffix: str) -> bool:
        """Only where the comments can be told from the code (languages.py): nothing else could check
        that its edit adds only documentation."""
        return languages.for_suffix(suffix) is not None

    def check_policy(self) -> CheckPolicy | None:
        return CheckPolicy(looks_before=True)

    def admission(self) -> Admission | None:
        return only_documentation

    def block_instruction(self, source: str, first: int, last: int, python: bool) -> tuple[str, str]:
        name = rewrite.undocumented_function(source, first, last) if python else None
        return (self.docstring_instruction, name) if name else (self.instruction, "")

    def propose_block(
        self, runner: ToolRunner, path: Path, source: str, first: int, last: int, test_file: str, code: str
    ) -> str | None:
        if path.suffix == ".py":
            code = rewrite.documented_by(source, first, last, code) or code  # a docstring alone
            # What the block documents is kept, renamed or not: the ledger admits only its documentation.
            code, _ = rewrite.the_unit_written(source, first, last, code)
        return runner.proposals.propose_text(path, rewrite.replace_lines(source, first, last, code))


def only_documentation(path: Path, before: str | None, after: str) -> str:
    """What an edit may leave of a file: `before` with only the documentation that `after` adds."""
    if before is None:
        raise ToolError("this action only adds documentation to the code; it creates no files")
    documented = rewrite.only_documentation(path.suffix, before, after)
    if documented is None:
        raise ToolError(
            "the documentation cannot be told apart from the code there (the result does not parse, "
            "a comment holds or hides code, or the language's comments are unknown); keep every line "
            "of code as it is and add only docstrings and comments, each comment on lines of its own"
        )
    if documented == before:
        raise ToolError(NOTHING_DOCUMENTED)
    return documented
