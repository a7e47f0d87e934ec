"""The code action kinds, declared once: a row each, naming the class that holds its behaviour.

A row says what the kind is called and what it asks the model; its class (a module of this package)
says how it behaves where kinds differ (actions/base.py lists the methods, with the defaults of a kind
that writes the unit holding the selection again). A new kind is a row here and, when it behaves in a
way of its own, a module. The LSP layer (lsp_server.lsp.code_actions) offers the rows as code actions
and runs them through a document turn; the protocol, the CLI and the editors' generated files take the
names from here. Plain data and text: no LSP types, no model.
"""

from __future__ import annotations

from .base import (
    BLOCK_ATTEMPTS,
    REWRITE_MAX_FACTOR,
    Action,
    BlockTooLong,
    Output,
    code_message,
    fence_language,
    test_file_for,
)
from .document import Document
from .explain import Explain
from .fix import Fix
from .refactor import Refactor
from .write_tests import WriteTests

ACTIONS: tuple[Action, ...] = (
    Explain(
        name="explain",
        title="Explain",
        lsp_kind="refactor.llama.explain",
        output=Output.ANSWER,
        instruction="Explain what this code does and anything surprising about it. Be brief.",
    ),
    # Fix and Refactor say what they will change first, in the same answer: the block that follows is
    # better for it with small models (a separate answer for the analysis did not help them: they copied
    # the code).
    Fix(
        name="fix",
        title="Fix",
        lsp_kind="quickfix",
        output=Output.BLOCK,
        instruction="Say in one or two sentences what is wrong, then write the corrected version of lines "
        "{first}-{last} of `{path}`, all of it, in one ```{language} block.",
        tool_instruction="Fix the problem reported here. Propose the change with the edit tool.",
        edit_tools=("edit",),
        for_diagnostics=True,
        preferred=True,
    ),
    Document(
        name="document",
        title="Document",
        lsp_kind="refactor.rewrite.llama.document",
        output=Output.BLOCK,
        instruction="Write lines {first}-{last} of `{path}` again, complete, with its documentation added or "
        "improved (docstrings in the file's style that say what each function returns, its arguments and "
        "what it raises; comments where the code is not obvious) and every line of code kept exactly as it "
        "is, in one ```{language} block. Write only that block.",
        docstring_instruction="Write the docstring of `{name}` (lines {first}-{last} of `{path}`), in the "
        "file's style: what it does and returns, its arguments, and what it raises. Write only the "
        "docstring, in one ```{language} block.",
        tool_instruction="Add clear documentation (docstrings or comments, in the file's style) to this "
        "code. Propose the change with the edit tool; keep the code itself unchanged.",
        edit_tools=("edit",),
    ),
    Refactor(
        name="refactor",
        title="Refactor",
        lsp_kind="refactor.rewrite.llama.refactor",
        output=Output.BLOCK,
        instruction="Say in one or two sentences what would make this code clearer without changing what it "
        "does, then write the refactored version of lines {first}-{last} of `{path}`, all of it, in one "
        "```{language} block.",
        tool_instruction="Refactor this code for clarity without changing its behaviour. Propose the change "
        "with the edit tool.",
        edit_tools=("edit",),
    ),
    WriteTests(
        name="tests",
        title="Write tests",
        lsp_kind="refactor.llama.tests",
        output=Output.TEST_FILE,
        # A few short tests: a small model writing many runs into its token bound mid-test, and each
        # token is time the user waits.
        instruction="Write a few unit tests for this code (at most 6 test functions, each checking one "
        "behaviour with concrete inputs and the results this code gives for them), in the project's test "
        "style, as the complete new file `{test_file}` in one ```{language} block. Write only that block.",
        # No edit-tool turn: a whole test file as a create_file argument is JSON-escaped text, which this
        # size of model gets wrong (and which retries grow past the context).
    ),
)

BY_NAME = {action.name: action for action in ACTIONS}

__all__ = [
    "ACTIONS",
    "BLOCK_ATTEMPTS",
    "BY_NAME",
    "REWRITE_MAX_FACTOR",
    "Action",
    "BlockTooLong",
    "Output",
    "code_message",
    "fence_language",
    "test_file_for",
]
