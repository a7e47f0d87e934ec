"""Code actions: listed at once without the model, resolved by the model into versioned WorkspaceEdits.

What each kind is and asks is declared in lsp_server.assistant.actions; this module offers them as LSP
code actions, runs them through a document turn and returns the answer or the edit. "Explain" answers
in words (shown through a client command and kept as a conversation the client can continue). The
others rewrite a whole unit in the block-rewrite format (lsp_server.assistant.rewrite): the model
writes the function or class that holds the selection again (Fix and Refactor after a sentence or two
on what they change), and the edit is the difference; Write tests writes the new test file whole. A
newer request for the same action on the same document supersedes the older one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import Workspace

from ..assistant import actions, related
from ..assistant.actions import Action, Output
from ..assistant.block_turn import BlockRequest
from . import documents, lsp_json, protocol
from .turns import DocumentTurn, TurnService

# What the server offers, for its capabilities.
OFFERED_KINDS = sorted({action.lsp_kind for action in actions.ACTIONS})


def list_actions(lsp_documents: Workspace, params: types.CodeActionParams) -> list[types.CodeAction]:
    """The lazy actions for a range: no model call, just the data to resolve them later."""
    document = documents.get_document(lsp_documents, params.text_document.uri)
    if document is None:
        return []
    selection = params.range
    if selection.start == selection.end:  # no selection: the current line
        line = selection.start.line
        selection = types.Range(types.Position(line, 0), types.Position(line + 1, 0))
    suffix = _suffix(params.text_document.uri)
    # The actions about the diagnostics in range come first, and only when there are some.
    about_diagnostics = [a for a in actions.ACTIONS if a.for_diagnostics and params.context.diagnostics]
    offered = about_diagnostics + [a for a in actions.ACTIONS if not a.for_diagnostics]
    offered = [a for a in offered if a.offered_for(suffix)]
    only = params.context.only
    listed = []
    for action in offered:
        lsp_kind = action.lsp_kind
        if only and not any(lsp_kind == o or lsp_kind.startswith(o + ".") for o in only):
            continue
        diagnostics = list(params.context.diagnostics) if action.for_diagnostics else []
        title = f"Llama: {action.title}"
        first_line = diagnostics[0].message.strip().split("\n")[0] if diagnostics else ""
        if first_line:
            title += f": {first_line[:60]}"
        data = {
            "uri": params.text_document.uri,
            "range": lsp_json.to_json(selection),
            "kind": action.name,
            "version": document.version,
            "diagnostics": [lsp_json.to_json(d) for d in diagnostics],
        }
        listed.append(
            types.CodeAction(
                title=title,
                kind=lsp_kind,
                diagnostics=diagnostics or None,
                is_preferred=action.preferred or None,
                data=data,
            )
        )
    return listed


def _suffix(uri: str) -> str:
    """The suffix of the file a URI names (".js"); "" for one with none (an unsaved `untitled:` buffer).
    Read without urlparse, which raises on some malformed URIs a client may send."""
    path = uri.partition("?")[0].partition("#")[0]
    return PurePosixPath(unquote(path)).suffix


async def resolve_action(turns: TurnService, action: types.CodeAction) -> types.CodeAction:
    request = protocol.parse_code_action_request(action.data)
    outcome = await run_action(turns, request)
    if actions.BY_NAME[request.kind].output is Output.ANSWER:
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
        title = actions.BY_NAME[request.kind].title
        applied = await apply_edit(types.ApplyWorkspaceEditParams(edit=edit, label=f"Llama: {title}"))
        outcome["applied"] = applied.applied
        if not applied.applied:
            outcome["failureReason"] = applied.failure_reason
    return outcome


async def run_action(turns: TurnService, request: protocol.CodeActionRequest) -> dict[str, Any]:
    """Runs the action; a newer request for the same action on the same document supersedes it."""
    action = actions.BY_NAME[request.kind]
    if not action.offered_for(_suffix(request.uri)):  # a client may run one it was not offered
        raise NoEdit(
            f"{action.title} is not offered for this file: the server cannot tell its language's comments "
            "from its code"
        )
    work = _run(turns, request, action)
    return await turns.superseding((request.uri, request.kind), work, f"Llama: {action.title}")


async def _run(turns: TurnService, request: protocol.CodeActionRequest, action: Action) -> dict[str, Any]:
    async with turns.turn(
        request.uri,
        # An action may continue a chat, so that a Fix after a question sees the answer's conclusion.
        conversation_id=request.conversation_id,
        version=request.version,
        check_policy=action.check_policy(),
        admission=action.admission(),
    ) as turn:
        assert turn.path is not None
        path, source = turn.path, turn.text
        selected = (request.range.start.line + 1, max(request.range.start.line + 1, request.range.end.line))
        first, last, code = action.code_shown(source, *selected, python=path.suffix == ".py")
        language = actions.fence_language(path)
        used = await _definitions_used(turn, action, code)
        message = actions.code_message(
            turn.shown_path, first, last, code, language, request.diagnostics, used
        )
        second_look = ""
        if turn.verifier is not None:  # what it gives is read only after a failed check
            # Off the event loop: it may walk the folder.
            second_look = await asyncio.to_thread(
                action.second_look, request.diagnostics, turn.workspace, path
            )
            turn.verifier.look_before(path)
        if action.output is Output.ANSWER:
            await turn.ask(f"{message}\n\n{action.instruction}")
        else:
            await _write_edit(turn, action, message, first, last, code, language, second_look)
    outcome = turn.reply()
    if action.output is Output.ANSWER:
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


async def _definitions_used(turn: DocumentTurn, action: Action, code: str) -> list[related.Definition]:
    """What the code uses from the workspace's other files, as far as the index knows them by now (it may
    still be building: an action never waits for it)."""
    budget = action.definitions_budget()
    index = turn.runner.index
    if not budget or index is None or turn.path is None:
        return []
    # Off the event loop: it reads files.
    return await asyncio.to_thread(related.used_definitions, code, turn.path, turn.text, index, budget)


async def _write_edit(
    turn: DocumentTurn,
    action: Action,
    message: str,
    first: int,
    last: int,
    code: str,
    language: str,
    second_look: str,
) -> None:
    """The model writes the block again (or the test file); the edit tools, where the action has any, get
    a turn if that fails."""
    assert turn.path is not None
    path, source, runner = turn.path, turn.text, turn.runner
    test_file = actions.test_file_for(path, turn.workspace)
    template, name = action.block_instruction(source, first, last, python=path.suffix == ".py")
    write = template.format(
        first=first, last=last, path=turn.shown_path, language=language, test_file=test_file, name=name
    )
    attempts = turn.verifier.max_attempts if turn.verifier is not None else actions.BLOCK_ATTEMPTS
    try:
        write_tokens = action.write_tokens(code, turn.settings.max_tokens)
    except actions.BlockTooLong as exc:
        raise NoEdit(
            f"lines {first}-{last} of {turn.shown_path} are too long to write again ({exc})"
        ) from None
    block = BlockRequest(
        message=message,
        write=write,
        language=language,
        write_tokens=write_tokens,
        max_attempts=min(turn.settings.max_tool_steps, attempts),
        second_look=second_look,
        reads_failed_checks=action.reads_failed_checks(),
    )

    def propose(block_code: str) -> str | None:
        return action.propose_block(runner, path, source, first, last, test_file, block_code)

    await turn.write_block(block, propose)
    if not runner.proposals.edits and not turn.checked_without_passing and action.edit_tools:
        # The block never came out right (a small model may keep writing the code back as it was):
        # the edit tools get their turn, in the same conversation, from the warm cache.
        await turn.ask(action.tool_instruction, want_edit=True, edit_tools=action.edit_tools)


class NoEdit(Exception):
    """The action ends without an edit that applies: the model proposed none, or the block is too long
    for it to write again."""
