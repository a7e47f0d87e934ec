"""A code action kind that exists only in the tests: what adding a kind with a behaviour of its own takes.

Its module is this file (the class), and its row is the one line that adds it to the table; nothing
else in the server changes. Imported before the server's modules (test_action_table.py starts a server
that does), the protocol, the code actions and the CLI take it from the table like the others.

"Sort lines" writes the selected lines again in order; its ledger admits an edit only when it keeps
the selection's lines, each exactly as it was, in another order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lsp_server.assistant import actions, rewrite
from lsp_server.assistant.actions.base import Action, selected_lines
from lsp_server.assistant.checks.verifier import CheckPolicy
from lsp_server.assistant.tools.proposals import Admission
from lsp_server.assistant.tools.runner import ToolRunner
from lsp_server.assistant.tools.workspace_files import ToolError

NOT_REORDERED = "that changes a line; write the same lines, each exactly as it is, in sorted order"


@dataclass(frozen=True)
class SortLines(Action):
    def check_policy(self) -> CheckPolicy | None:
        return None

    def admission(self) -> Admission | None:
        return only_reordered

    def code_shown(self, source: str, first: int, last: int, python: bool) -> tuple[int, int, str]:
        return selected_lines(source, first, last)

    def propose_block(
        self, runner: ToolRunner, path: Path, source: str, first: int, last: int, test_file: str, code: str
    ) -> str | None:
        return runner.proposals.propose_text(path, rewrite.replace_lines(source, first, last, code))


def only_reordered(path: Path, before: str | None, after: str) -> str:
    if before is None or sorted(before.splitlines()) != sorted(after.splitlines()):
        raise ToolError(NOT_REORDERED)
    return after


# Its row.
actions.ACTIONS += (
    SortLines(
        name="sort",
        title="Sort lines",
        lsp_kind="refactor.rewrite.llama.sort",
        output=actions.Output.BLOCK,
        instruction="Write lines {first}-{last} of `{path}` again in sorted order, in one ```{language} "
        "block.",
    ),
)
actions.BY_NAME = {action.name: action for action in actions.ACTIONS}
