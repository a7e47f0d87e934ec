"""Code actions: listed at once without the model, resolved by the model into versioned WorkspaceEdits.

"Explain" answers in words (shown through a client command and kept as a conversation the client can
continue). The others rewrite a whole unit in the block-rewrite format (lsp_server.rewrite): the model
writes the function or class that holds the selection again (Fix and Refactor after a sentence or two
on what they change), and the edit is the difference; Write tests writes the new test file whole. A
newer request for the same action on the same document supersedes the older one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from . import documents, protocol, rewrite
from .chat import turn_json
from .conversation import BlockRequest, TurnOptions, run_block_turn, run_turn
from .edits import split_lines
from .tools import ToolRunner, Workspace
from .verify import Verification

if TYPE_CHECKING:
    from .server import AssistantServer

TITLES = {
    "explain": "Explain",
    "document": "Document",
    "refactor": "Refactor",
    "tests": "Write tests",
    "fix": "Fix",
}

# Actions cancelled because a newer request for the same action on the same document replaced them.
_superseded: weakref.WeakSet[asyncio.Future[Any]] = weakref.WeakSet()

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


def list_actions(server: AssistantServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The lazy actions for a range: no model call, just the data to resolve them later."""
    document = documents.get_document(server.workspace, params.text_document.uri)
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
            "range": server.protocol._converter.unstructure(selection),
            "kind": kind,
            "version": document.version,
            "diagnostics": [server.protocol._converter.unstructure(d) for d in diagnostics],
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


async def resolve_action(server: AssistantServer, action: types.CodeAction) -> types.CodeAction:
    request = protocol.parse_code_action_request(action.data)
    outcome = await run_action(server, request)
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


async def execute_action(server: AssistantServer, raw: Any) -> dict[str, Any]:
    """workspace/executeCommand: resolve the action, then apply its edit through workspace/applyEdit."""
    request = protocol.parse_code_action_request(raw)
    outcome = await run_action(server, request)
    edit = outcome.pop("edit", None)
    if edit is not None:
        documents.check_versions(server.workspace, edit)
        applied = await server.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(edit=edit, label=f"Llama: {TITLES[request.kind]}")
        )
        outcome["applied"] = applied.applied
        if not applied.applied:
            outcome["failureReason"] = applied.failure_reason
    return outcome


async def run_action(server: AssistantServer, request: protocol.CodeActionRequest) -> dict[str, Any]:
    key = (request.uri, request.kind)
    previous = server.running_actions.get(key)
    if previous is not None and not previous.done():
        _superseded.add(previous)
        previous.cancel()
    task = asyncio.ensure_future(_run(server, request))
    server.running_actions[key] = task
    try:
        return await task
    except asyncio.CancelledError:
        # A superseded action still gets an answer of its own. A cancel from the client (or shutdown)
        # goes on up, and the protocol layer answers it.
        if task in _superseded:
            raise JsonRpcRequestCancelled(
                f"superseded by a newer Llama: {TITLES[request.kind]} request on this document"
            ) from None
        raise
    finally:
        if server.running_actions.get(key) is task:
            del server.running_actions[key]


async def _run(server: AssistantServer, request: protocol.CodeActionRequest) -> dict[str, Any]:
    document = documents.get_document(server.workspace, request.uri)
    path = documents.uri_to_path(request.uri)
    if document is None or path is None:
        raise protocol.ParamsError(f"unknown document {request.uri}: send textDocument/didOpen first")
    if request.version is not None and document.version != request.version:
        raise documents.StaleDocument(
            f"{request.uri} changed since the action was offered; request code actions again"
        )
    engine = await server.ready_engine()
    start_version = document.version
    # An action may continue a chat, so that a Fix after a question sees the answer's conclusion.
    conversation = server.conversations.get_or_create(request.conversation_id)
    workspace = server.tool_workspace(request.diagnostics, request.uri)
    conversation.show_document(workspace.display(path), document.source)
    selected = (request.range.start.line + 1, max(request.range.start.line + 1, request.range.end.line))
    if request.kind == "explain":
        first, last = selected
    else:  # the model rewrites a whole unit: the function or class that holds the selection
        first, last = rewrite.enclosing_block(document.source, *selected, python=path.suffix == ".py")
    lines = split_lines(document.source)
    last = min(last, max(len(lines), 1))
    shown_path = workspace.display(path)
    language = LANGUAGES.get(path.suffix, path.suffix.lstrip("."))
    # The instruction comes last, after the code: small models follow what they read most recently.
    message = f"Lines {first}-{last} of `{shown_path}`:\n```{language}\n{''.join(lines[first - 1 : last])}```"
    if request.diagnostics:
        problems = "\n".join(
            f"- line {d['range']['start']['line'] + 1}: {d.get('message', '')}" for d in request.diagnostics
        )
        message += f"\n\nThe problems reported there:\n{problems}"
    runner = ToolRunner(workspace)
    verifier = server.verifier(workspace) if request.kind != "explain" else None
    options = TurnOptions(
        max_tool_steps=server.settings.max_tool_steps,
        max_tokens=server.settings.max_tokens,
        temperature=server.settings.temperature,
    )
    with server.busy():
        if request.kind == "explain":
            conversation.messages.append({"role": "user", "content": f"{message}\n\n{EXPLAIN}"})
            turn = await run_turn(engine, conversation, runner, options)
        else:
            test_file = test_file_for(path, workspace)
            write = WRITE[request.kind].format(
                first=first, last=last, path=shown_path, language=language, test_file=test_file
            )
            conversation.messages.append({"role": "user", "content": f"{message}\n\n{write}"})
            attempts = verifier.max_attempts if verifier is not None else BLOCK_ATTEMPTS
            block = BlockRequest(
                write=write,
                # Room for the whole block again, and then some: a cut-off block cannot parse.
                write_tokens=max(server.settings.max_tokens, len("".join(lines[first - 1 : last])) // 2),
                max_attempts=min(server.settings.max_tool_steps, attempts),
            )

            def propose(code: str) -> str | None:
                if request.kind == "tests":
                    return runner.propose_file(test_file, code)
                after = rewrite.replace_lines(document.source, first, last, code)
                if request.kind == "document" and path.suffix == ".py":
                    # Only the documentation comes from the model; the code lines stay the user's.
                    after = rewrite.added_documentation(document.source, after) or after
                if request.kind == "document" and after == document.source:
                    return NOTHING_DOCUMENTED
                return runner.propose_text(path, after, keep_code=request.kind == "document")

            turn = await run_block_turn(
                engine, conversation, runner, block, propose, server.settings.temperature, verifier
            )
            checked = verifier is not None and (verifier.exhausted or verifier.verification.failed_candidates)
            if not runner.edits and not checked:
                # The block never came out right (a small model may keep writing the code back as it
                # was): the edit tools get their turn, in the same conversation, from the warm cache.
                conversation.messages.append({"role": "user", "content": TOOL_INSTRUCTIONS[request.kind]})
                forced = dataclasses.replace(
                    options,
                    want_edit=True,
                    edit_tools=("create_file",) if request.kind == "tests" else ("edit",),
                )
                later = await run_turn(engine, conversation, runner, forced, verifier=verifier)
                turn = turn.followed_by(later)
            if verifier is not None:
                verifier.settle(runner)
        server.remember_stats(turn)  # before busy ends, so that the "ready" status carries these stats
    outcome = turn_json(conversation.id, turn)
    if request.kind == "explain":
        return outcome
    edit = documents.workspace_edit(server.workspace, runner)
    if edit is None:
        reason = turn.tool_calls[-1].result if turn.tool_calls else turn.content or "no answer"
        raise NoEdit(f"the model proposed no applicable edit ({reason[:300]})")
    if server.document_version(request.uri) != start_version:
        raise documents.StaleDocument(f"{request.uri} changed while the edit was being written; run it again")
    outcome["edit"] = edit
    outcome["verification"] = (verifier.verification if verifier else Verification(None)).to_json()
    return outcome


def test_file_for(path: Path, workspace: Workspace) -> str:
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
