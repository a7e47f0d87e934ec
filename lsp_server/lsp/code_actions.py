"""Code actions: listed at once without the model, resolved by the model into versioned WorkspaceEdits.

"Explain" answers in words (shown through a client command and kept as a conversation the client can
continue). The others rewrite a whole unit in the block-rewrite format (lsp_server.rewrite): the model
writes the function or class that holds the selection again (Fix and Refactor after a sentence or two
on what they change), and the edit is the difference; Write tests writes the new test file whole. A
newer request for the same action on the same document supersedes the older one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.workspace import Workspace

from ..assistant import related, rewrite
from ..assistant.conversation import BlockRequest
from ..assistant.edits import split_lines
from ..assistant.tools import Workspace as ToolWorkspace
from . import documents, lsp_json, protocol
from .turns import DocumentTurn, TurnService

TITLES = {
    "explain": "Explain",
    "document": "Document",
    "refactor": "Refactor",
    "tests": "Write tests",
    "fix": "Fix",
}

LSP_KINDS = {
    "explain": types.CodeActionKind.Refactor + ".llama.explain",
    "document": types.CodeActionKind.RefactorRewrite + ".llama.document",
    "refactor": types.CodeActionKind.RefactorRewrite + ".llama.refactor",
    "tests": types.CodeActionKind.Refactor + ".llama.tests",
    "fix": types.CodeActionKind.QuickFix,
}

EXPLAIN = "Explain what this code does and anything surprising about it. Be brief."

# Fix and Refactor say what they will change first, in the same answer: the block that follows is better
# for it with small models (a separate answer for the analysis did not help them: they copied the code).
WRITE = {
    "fix": "Say in one or two sentences what is wrong, then write the corrected version of lines "
    "{first}-{last} of `{path}`, all of it, in one ```{language} block.",
    "refactor": "Say in one or two sentences what would make this code clearer without changing what it "
    "does, then write the refactored version of lines {first}-{last} of `{path}`, all of it, in one "
    "```{language} block.",
    "document": "Write lines {first}-{last} of `{path}` again, complete, with its documentation added or "
    "improved (docstrings in the file's style that say what each function returns, its arguments and "
    "what it raises; comments where the code is not obvious) and every line of code kept exactly as it "
    "is, in one ```{language} block. Write only that block.",
    "tests": "Write unit tests for this code, in the project's test style, as the complete new file "
    "`{test_file}` in one ```{language} block. Write only that block.",
}

# What the edit tools are asked for when the block format did not give an edit.
TOOL_INSTRUCTIONS = {
    "fix": "Fix the problem reported here. Propose the change with the edit tool.",
    "refactor": "Refactor this code for clarity without changing its behaviour. Propose the change with the "
    "edit tool.",
    "document": "Add clear documentation (docstrings or comments, in the file's style) to this code. "
    "Propose the change with the edit tool; keep the code itself unchanged.",
    "tests": "Propose the tests as a new file: call create_file with the path named above.",
}

# Models shown code that already has a docstring tend to write it back unchanged.
NOTHING_DOCUMENTED = (
    "That adds no documentation. Add to it: say in the docstring what the code returns, what its "
    "arguments mean and what it raises, and comment the lines whose purpose is not obvious."
)

BLOCK_ATTEMPTS = 2

LANGUAGES = {".py": "python", ".js": "javascript", ".ts": "typescript", ".rs": "rust", ".go": "go"}


def list_actions(lsp_documents: Workspace, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The lazy actions for a range: no model call, just the data to resolve them later."""
    document = documents.get_document(lsp_documents, params.text_document.uri)
    if document is None:
        return []
    selection = params.range
    if selection.start == selection.end:  # no selection: the current line
        line = selection.start.line
        selection = types.Range(types.Position(line, 0), types.Position(line + 1, 0))
    kinds = ["explain", "document", "refactor", "tests"]
    if params.context.diagnostics:
        kinds.insert(0, "fix")
    only = params.context.only
    actions = []
    for kind in kinds:
        lsp_kind = LSP_KINDS[kind]
        if only and not any(lsp_kind == o or lsp_kind.startswith(o + ".") for o in only):
            continue
        diagnostics = list(params.context.diagnostics) if kind == "fix" else []
        title = f"Llama: {TITLES[kind]}"
        first_line = diagnostics[0].message.strip().split("\n")[0] if diagnostics else ""
        if first_line:
            title += f": {first_line[:60]}"
        data = {
            "uri": params.text_document.uri,
            "range": lsp_json.to_json(selection),
            "kind": kind,
            "version": document.version,
            "diagnostics": [lsp_json.to_json(d) for d in diagnostics],
        }
        actions.append(
            types.CodeAction(
                title=title,
                kind=lsp_kind,
                diagnostics=diagnostics or None,
                is_preferred=kind == "fix" or None,
                data=data,
            )
        )
    return actions


async def resolve_action(turns: TurnService, action: types.CodeAction) -> types.CodeAction:
    request = protocol.parse_code_action_request(action.data)
    outcome = await run_action(turns, request)
    if request.kind == "explain":
        action.command = types.Command(
            title="Show the explanation",
            command=protocol.COMMAND_SHOW_ANSWER,
            arguments=[
                {
                    "conversationId": outcome["conversationId"],
                    "title": action.title,
                    "content": outcome["content"],
                }
            ],
        )
    else:
        action.edit = outcome["edit"]
        # Whether the edit was checked travels with it; clients show it next to the edit.
        action.data = {**(action.data or {}), "verification": outcome["verification"]}
    return action


async def execute_action(
    turns: TurnService,
    raw: Any,
    apply_edit: Callable[[types.ApplyWorkspaceEditParams], Awaitable[types.ApplyWorkspaceEditResult]],
) -> dict[str, Any]:
    """workspace/executeCommand: resolve the action, then apply its edit through workspace/applyEdit."""
    request = protocol.parse_code_action_request(raw)
    outcome = await run_action(turns, request)
    edit = outcome.pop("edit", None)
    if edit is not None:
        turns.check_current(edit)  # the user may have typed since the edit was computed
        applied = await apply_edit(
            types.ApplyWorkspaceEditParams(edit=edit, label=f"Llama: {TITLES[request.kind]}")
        )
        outcome["applied"] = applied.applied
        if not applied.applied:
            outcome["failureReason"] = applied.failure_reason
    return outcome


async def run_action(turns: TurnService, request: protocol.CodeActionRequest) -> dict[str, Any]:
    """Runs the action; a newer request for the same action on the same document supersedes it."""
    work = _run(turns, request)
    return await turns.superseding((request.uri, request.kind), work, f"Llama: {TITLES[request.kind]}")


async def _run(turns: TurnService, request: protocol.CodeActionRequest) -> dict[str, Any]:
    async with turns.turn(
        request.uri,
        # An action may continue a chat, so that a Fix after a question sees the answer's conclusion.
        conversation_id=request.conversation_id,
        version=request.version,
        diagnostics=request.diagnostics,
        checked=request.kind != "explain",
    ) as turn:
        assert turn.path is not None
        path, source = turn.path, turn.text
        selected = (request.range.start.line + 1, max(request.range.start.line + 1, request.range.end.line))
        if request.kind == "explain":
            first, last = selected
        else:  # the model rewrites a whole unit: the function or class that holds the selection
            first, last = rewrite.enclosing_block(source, *selected, python=path.suffix == ".py")
        lines = split_lines(source)
        last = min(last, max(len(lines), 1))
        language = LANGUAGES.get(path.suffix, path.suffix.lstrip("."))
        # The instruction comes last, after the code: small models follow what they read most recently.
        code = "".join(lines[first - 1 : last])
        message = f"Lines {first}-{last} of `{turn.shown_path}`:\n```{language}\n{code}```"
        if request.diagnostics:
            problems = "\n".join(
                f"- line {d['range']['start']['line'] + 1}: {d.get('message', '')}"
                for d in request.diagnostics
            )
            message += f"\n\nThe problems reported there:\n{problems}"
        second_look = ""
        if turn.verifier is not None and request.kind == "fix" and path.suffix == ".py":
            # Candidates after a failed check also read what the problems name (the failing test,
            # say): what it expects is what the fix must do. Off the event loop: it walks the folder.
            named = await asyncio.to_thread(
                related.named_definitions,
                [d.get("message", "") for d in request.diagnostics],
                turn.workspace,
                path,
            )
            if named:
                second_look = "The code they name:\n" + "\n\n".join(d.as_markdown() for d in named)
        if turn.verifier is not None and request.kind in ("fix", "refactor", "document"):
            # While the model writes, the check runs on the code as it is: whether it failed before
            # says what a pass after the edit is worth. (Its output in a Fix's prompt made the 1.5B
            # model's fixes worse on the eval's tasks, so the model never reads it.)
            turn.verifier.look_before(path, fixing=request.kind == "fix")
        if request.kind == "explain":
            await turn.ask(f"{message}\n\n{EXPLAIN}")
        else:
            await _write_edit(turn, request.kind, message, first, last, code, language, second_look)
    outcome = turn.reply()
    if request.kind == "explain":
        return outcome
    edit = turn.edit()
    if edit is None:
        result = turn.result
        assert result is not None
        reason = result.tool_calls[-1].result if result.tool_calls else result.content or "no answer"
        raise NoEdit(f"the model proposed no applicable edit ({reason[:300]})")
    outcome["edit"] = edit
    outcome["verification"] = turn.verification()
    return outcome


async def _write_edit(
    turn: DocumentTurn,
    kind: str,
    message: str,
    first: int,
    last: int,
    code: str,
    language: str,
    second_look: str,
) -> None:
    """The model writes the block again (or the test file); the edit tools get a turn if that fails."""
    assert turn.path is not None
    path, source, runner = turn.path, turn.text, turn.runner
    test_file = test_file_for(path, turn.workspace)
    write = WRITE[kind].format(
        first=first, last=last, path=turn.shown_path, language=language, test_file=test_file
    )
    attempts = turn.verifier.max_attempts if turn.verifier is not None else BLOCK_ATTEMPTS
    block = BlockRequest(
        message=message,
        write=write,
        # Room for the whole block again, and then some: a cut-off block cannot parse.
        write_tokens=max(turn.settings.max_tokens, len(code) // 2),
        max_attempts=min(turn.settings.max_tool_steps, attempts),
        second_look=second_look,
    )

    def propose(block_code: str) -> str | None:
        if kind == "tests":
            return runner.propose_file(test_file, block_code)
        after = rewrite.replace_lines(source, first, last, block_code)
        if kind == "document" and path.suffix == ".py":
            # Only the documentation comes from the model; the code lines stay the user's.
            after = rewrite.added_documentation(source, after) or after
        if kind == "document" and after == source:
            return NOTHING_DOCUMENTED
        return runner.propose_text(path, after, keep_code=kind == "document")

    await turn.write_block(block, propose)
    if not runner.edits and not turn.checked_without_passing:
        # The block never came out right (a small model may keep writing the code back as it was):
        # the edit tools get their turn, in the same conversation, from the warm cache.
        edit_tools = ("create_file",) if kind == "tests" else ("edit",)
        await turn.ask(TOOL_INSTRUCTIONS[kind], want_edit=True, edit_tools=edit_tools)


def test_file_for(path: Path, workspace: ToolWorkspace) -> str:
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


class NoEdit(Exception):
    """The model finished without an edit that applies."""
