"""The code action kinds, declared once: their names, titles and LSP kinds, what the model reads and is
asked, what its answer becomes, and how the edit is checked.

A new kind is a row of ACTIONS and its prompts. The LSP layer (lsp_server.lsp.code_actions) offers the
rows as code actions and runs them through a document turn; the protocol and the CLI take the names
from here, and tests/test_action_table.py holds the editors' own lists and the docs to this table.
Plain data and text: no LSP types, no model.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import languages, related, rewrite
from .checks import passing_tests
from .edits import split_lines
from .tools.runner import ToolRunner
from .tools.workspace_files import WorkspaceFiles


class Output(enum.Enum):
    """What the model's answer becomes."""

    ANSWER = "answer"  # words, which the client shows as a conversation it can continue
    BLOCK = "block"  # the function or class that holds the selection, written again; the edit is the diff
    TEST_FILE = "test file"  # a new test file, written whole


@dataclass(frozen=True)
class ActionSpec:
    """One code action kind: everything that differs from one kind to another."""

    name: str  # on the wire: the `kind` of a code action's data and of the llamaLsp.codeAction command
    title: str  # offered as "Llama: <title>"
    lsp_kind: str  # the LSP CodeActionKind, a client's `only` filters on it
    output: Output
    # Asked after the code is shown: the question of an ANSWER; for the others a template that asks for
    # the block ({first}, {last}, {path}, {language}, {test_file}), repeated after a refusal.
    instruction: str
    # Asked instead of `instruction` when the block is a Python function with no docstring ({name} too):
    # for the docstring alone, which the edit puts under the function's signature.
    docstring_instruction: str = ""
    # When the block never came out right: what the edit tools are asked for, and which of them may be
    # used; none: no such turn.
    tool_instruction: str = ""
    edit_tools: tuple[str, ...] = ()
    for_diagnostics: bool = False  # offered only when the request has diagnostics, and about them
    preferred: bool = False  # the client may apply it without showing the others (LSP `isPreferred`)
    checked: bool = True  # its edit goes through verifyCommand when one is set
    # While the model writes, the check runs on the code as it is, so that the summary can say what a pass
    # is worth; `fixing`: a check that failed before is expected to pass after (verify.Verifier.look_before).
    looks_before: bool = False
    fixing: bool = False
    reads_named_code: bool = False  # the candidates after a failed check also read the code the problems name
    # Its edits keep every line of code: whatever proposes them, only the comments and docstrings they add
    # are recorded (proposals.Proposals), the rest is dropped.
    documentation_only: bool = False
    # Its new test file keeps only the tests that pass on the code as it is (passing_tests.py); when none
    # does, there is no edit rather than a failing one.
    keeps_passing_tests: bool = False


ACTIONS: tuple[ActionSpec, ...] = (
    ActionSpec(
        name="explain",
        title="Explain",
        lsp_kind="refactor.llama.explain",
        output=Output.ANSWER,
        instruction="Explain what this code does and anything surprising about it. Be brief.",
        checked=False,
    ),
    # Fix and Refactor say what they will change first, in the same answer: the block that follows is
    # better for it with small models (a separate answer for the analysis did not help them: they copied
    # the code).
    ActionSpec(
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
        looks_before=True,
        fixing=True,
        reads_named_code=True,
    ),
    ActionSpec(
        name="document",
        title="Document",
        lsp_kind="refactor.rewrite.llama.document",
        output=Output.BLOCK,
        instruction="Write lines {first}-{last} of `{path}` again, complete, with its documentation added or "
        "improved (docstrings in the file's style that say what each function returns, its arguments and "
        "what it raises; comments where the code is not obvious) and every line of code kept exactly as it "
        "is, in one ```{language} block. Write only that block.",
        # A Python function with no docstring: the docstring alone (rewrite.documented_by puts it in place),
        # a third of the tokens of the function written again, and no way to change its code.
        docstring_instruction="Write the docstring of `{name}` (lines {first}-{last} of `{path}`), in the "
        "file's style: what it does and returns, its arguments, and what it raises. Write only the "
        "docstring, in one ```{language} block.",
        tool_instruction="Add clear documentation (docstrings or comments, in the file's style) to this "
        "code. Propose the change with the edit tool; keep the code itself unchanged.",
        edit_tools=("edit",),
        looks_before=True,
        documentation_only=True,
    ),
    ActionSpec(
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
        looks_before=True,
    ),
    ActionSpec(
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
        keeps_passing_tests=True,
    ),
)

BY_NAME = {action.name: action for action in ACTIONS}

BLOCK_ATTEMPTS = 2  # writes of the block when edits are not checked

# A block written again must be whole (cut off, it cannot parse), so it may take more than maxTokens:
# up to this many times maxTokens. The bound is the user's, whatever the block's size.
REWRITE_MAX_FACTOR = 4
# Code rarely packs more characters into a token (runs of indentation are single tokens), so a block
# of more characters than this many times the bound cannot be written again within it.
CHARS_PER_TOKEN_AT_MOST = 5


class BlockTooLong(Exception):
    """The block an action would write again is longer than its bound allows; the message names the fix."""


def fence_language(path: Path) -> str:
    """The language tag of the code's fenced block."""
    language = languages.for_suffix(path.suffix)
    return language.name if language is not None else path.suffix.lstrip(".")


def offered_for(action: ActionSpec, suffix: str) -> bool:
    """Whether an action is offered for a file of this suffix: one that only documents needs a language
    whose comments can be told from its code (languages.py), since nothing else could check its edit."""
    return not action.documentation_only or languages.for_suffix(suffix) is not None


def code_shown(action: ActionSpec, source: str, first: int, last: int, python: bool) -> tuple[int, int, str]:
    """The 1-based inclusive lines the model reads for a selection of lines first..last, and their code:
    the selection for an answer, otherwise the unit it writes again (or tests), the function or class
    that holds the selection."""
    if action.output is not Output.ANSWER:
        first, last = rewrite.enclosing_block(source, first, last, python=python)
    lines = split_lines(source)
    last = min(last, max(len(lines), 1))
    return first, last, "".join(lines[first - 1 : last])


def block_instruction(
    action: ActionSpec, source: str, first: int, last: int, python: bool
) -> tuple[str, str]:
    """The instruction template that asks for the block at lines first..last, and the name of the
    function whose docstring alone it asks for ("" when it asks for the block)."""
    name = (
        rewrite.undocumented_function(source, first, last)
        if python and action.docstring_instruction
        else None
    )
    return (action.docstring_instruction, name) if name else (action.instruction, "")


def write_tokens(action: ActionSpec, code: str, max_tokens: int) -> int:
    """Tokens the model may write for an action's block (of `code`): room for the block again and what
    is said before it (two characters a token), at least maxTokens and at most REWRITE_MAX_FACTOR times
    it. New tests get at least twice maxTokens: a test file is usually longer than the code it tests, and
    one cut off cannot parse. Raises BlockTooLong for a block to write again (not new tests) that cannot
    fit in that bound."""
    bound = REWRITE_MAX_FACTOR * max_tokens
    if action.output is Output.TEST_FILE:
        return min(max(2 * max_tokens, len(code) // 2), bound)
    if action.output is Output.BLOCK and len(code) > CHARS_PER_TOKEN_AT_MOST * bound:
        raise BlockTooLong(
            f"{len(code) // CHARS_PER_TOKEN_AT_MOST} tokens or more, and an answer may write "
            f"{REWRITE_MAX_FACTOR} x maxTokens = {bound}; select a smaller block, or raise llamaLsp.maxTokens"
        )
    return min(max(max_tokens, len(code) // 2), bound)


def code_message(
    shown_path: str, first: int, last: int, code: str, language: str, diagnostics: tuple[dict[str, Any], ...]
) -> str:
    """The code the action is about, and the problems reported in it. The instruction comes after it:
    small models follow what they read most recently."""
    message = f"Lines {first}-{last} of `{shown_path}`:\n```{language}\n{code}```"
    if diagnostics:
        problems = "\n".join(
            f"- line {d['range']['start']['line'] + 1}: {d.get('message', '')}" for d in diagnostics
        )
        message += f"\n\nThe problems reported there:\n{problems}"
    return message


def named_code(diagnostics: tuple[dict[str, Any], ...], workspace: WorkspaceFiles, path: Path) -> str:
    """The code the problems name in the workspace (the failing test, say): what it expects is what a fix
    must do. Empty when they name nothing. Walks the folder: call it off the event loop."""
    named = related.named_definitions([d.get("message", "") for d in diagnostics], workspace, path)
    if not named:
        return ""
    return "The code they name:\n" + "\n\n".join(d.as_markdown() for d in named)


def block_proposer(
    action: ActionSpec, runner: ToolRunner, path: Path, source: str, first: int, last: int, test_file: str
) -> Callable[[str], str | None]:
    """Turns each block the model writes into a proposed edit: None when recorded, else why not, for the
    model to read."""

    def propose(block_code: str) -> str | None:
        if action.output is Output.TEST_FILE:
            if test_file.endswith(".py"):
                block_code = passing_tests.without_redefined_tests(passing_tests.complete_tests(block_code))
                block_code = passing_tests.with_missing_imports(block_code, source, path.stem)
            return runner.propose_file(test_file, block_code)
        if path.suffix == ".py":
            if action.docstring_instruction:  # a docstring alone goes under the function's signature
                block_code = rewrite.documented_by(source, first, last, block_code) or block_code
            block_code, wrong = rewrite.the_unit_written(source, first, last, block_code)
            # A documentation-only action keeps what the block documents, renamed or not (below).
            if wrong is not None and not action.documentation_only:
                return wrong
        # A documentation-only action's ledger keeps only the documentation of it (proposals.py).
        return runner.proposals.propose_text(path, rewrite.replace_lines(source, first, last, block_code))

    return propose


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
