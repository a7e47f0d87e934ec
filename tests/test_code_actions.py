"""Code actions over stdio on the real test model: lazy listing, resolve into edits, the command path."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from lsp_server.assistant.actions import BLOCK_ATTEMPTS
from lsp_server.assistant.rewrite import python_code_changed
from lsp_server.clients.ask import apply_workspace_edit
from lsp_server.lsp import lsp_json, protocol

from .lsp_client import SERVER_COMMAND, AssistantClient, initialize_params, make_client, open_document

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.usefixtures("default_model_path")]

# Writing edits that apply is beyond the 0.5B test model (it repeats one malformed call), so the
# code-action tests run on the default model, the one users get.
SERVER_OPTIONS = {
    "model": "qwen2.5-coder-1.5b",
    "contextSize": 4096,
    "slots": 3,
    "maxTokens": 400,
    "maxToolSteps": 3,
    # Checks have their own test (the demo's Fix, with "auto"); the other actions' edits are not checked.
    "verifyCommand": "",
}

DISCOUNT_LINES = types.Range(types.Position(17, 0), types.Position(20, 0))  # def apply_discount ... return


async def list_actions(
    client: AssistantClient,
    uri: str,
    selection: types.Range,
    diagnostics: list[types.Diagnostic] | None = None,
) -> list[types.CodeAction]:
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=selection,
            context=types.CodeActionContext(diagnostics=diagnostics or []),
        )
    )
    return [a for a in actions or [] if isinstance(a, types.CodeAction)]


def edited_texts(client: AssistantClient, edit: types.WorkspaceEdit, workspace: Path) -> dict[Path, str]:
    """Applies a WorkspaceEdit in memory, as the headless client does."""
    after = apply_workspace_edit(lsp_json.to_json(edit), {})
    texts = {Path(uri[len("file://") :]): text for uri, text in after.items()}
    assert all(path.is_relative_to(workspace) for path in texts)
    return texts


async def test_actions_are_listed_at_once_without_edits(client: AssistantClient, workspace: Path):
    uri = open_document(client, workspace / "inventory.py")
    kinds = {a.data["kind"] for a in await list_actions(client, uri, DISCOUNT_LINES)}
    assert kinds == {"explain", "document", "refactor", "tests"}
    diagnostic = types.Diagnostic(range=DISCOUNT_LINES, message="wrong result")
    with_problem = await list_actions(client, uri, DISCOUNT_LINES, [diagnostic])
    fix = next(a for a in with_problem if a.data["kind"] == "fix")
    assert fix.kind == types.CodeActionKind.QuickFix and fix.edit is None


@pytest.mark.backends("local", "remote")
@pytest.mark.parametrize("kind", ["document", "refactor", "tests"])
async def test_each_code_action_gives_an_edit_that_applies_and_parses(
    client: AssistantClient, workspace: Path, kind, backend: dict[str, Any]
):
    uri = open_document(client, workspace / "inventory.py")  # each test opens what it uses
    action = next(a for a in await list_actions(client, uri, DISCOUNT_LINES) if a.data["kind"] == kind)
    if kind == "document":
        # The 1.5B often writes this block back without a docstring, and then reaches for the edit tool to
        # fix the bug it sees instead. Document keeps only documentation, so it either adds some and keeps
        # every line of code, or says that no edit came back: never an edit that changes the code.
        try:
            resolved = await client.code_action_resolve_async(action)
        except JsonRpcException as exc:
            assert "proposed no applicable edit" in str(exc.message), exc.message
            return
        assert resolved.edit is not None
        before = (workspace / "inventory.py").read_text()
        for text in edited_texts(client, resolved.edit, workspace).values():
            assert not python_code_changed(before, text)
        return
    resolved = await client.code_action_resolve_async(action)
    assert resolved.edit is not None
    for change in resolved.edit.document_changes or []:
        if isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri:
            assert change.text_document.version == 1  # the version the edit was computed against
    texts = edited_texts(client, resolved.edit, workspace)
    assert texts
    for path, text in texts.items():
        assert path.suffix != ".py" or ast.parse(text)
    # No verifyCommand is set here, so nothing ran, and the action says its edit was not checked.
    verification = resolved.data["verification"]
    assert verification["command"] is None and verification["passed"] is None
    assert verification["summary"].startswith("not verified")


def configure(client: AssistantClient, options: dict[str, Any]) -> None:
    """The settings changed in the editor (the same model fields: the model is not loaded again)."""
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"llamaLsp": options})
    )


@pytest.mark.backends("local", "remote")
async def test_the_demo_fix_makes_the_failing_test_pass(client: AssistantClient, workspace: Path):
    """`make demo`'s flow: a question about the failing lines, then the Fix in that conversation, checked
    by the failing test, which verifyCommand "auto" finds. (Without the question first, the model's greedy
    block on this example is the unchanged code: the Fix then proposes nothing rather than something
    wrong.)"""
    failing = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_inventory.py"],
        cwd=workspace,
        capture_output=True,
        text=True,
    )
    assert failing.returncode == 1
    assert "assert -900.0 == 90.0" in failing.stdout
    uri = open_document(client, workspace / "inventory.py")  # each test opens what it uses
    problem = (
        "test_apply_discount failed: apply_discount(100.0, 10) returned -900.0, expected 90.0 "
        "(percent is 0-100)"
    )
    diagnostic = types.Diagnostic(
        range=DISCOUNT_LINES, message=problem, severity=types.DiagnosticSeverity.Error, source="pytest"
    )
    question = await client.request(
        protocol.CHAT,
        {"textDocument": {"uri": uri}, "range": lsp_json.to_json(DISCOUNT_LINES), "message": problem},
    )
    action = next(
        a for a in await list_actions(client, uri, DISCOUNT_LINES, [diagnostic]) if a.data["kind"] == "fix"
    )
    action.data["conversationId"] = question["conversationId"]
    configure(client, {**SERVER_OPTIONS, "verifyCommand": "auto"})
    try:
        resolved = await client.code_action_resolve_async(action)
    finally:
        configure(client, SERVER_OPTIONS)
    verification = resolved.data["verification"]
    assert verification["passed"] is True, verification
    # The workspace's only test file imports inventory: that one, with the server's Python (which has
    # pytest; its plugins are not the workspace's), as the demo runs it by hand.
    pytest_command = f"{sys.executable} -m pytest -q -p no:cacheprovider --tb=short test_inventory.py"
    assert verification["command"] == f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {pytest_command}"
    assert verification["reason"] == f"pytest with {sys.executable}, on 1 test file that imports inventory"
    project = workspace.parent / "fixed-project"
    project.mkdir(exist_ok=True)
    for name in ("inventory.py", "test_inventory.py"):
        (project / name).write_text((workspace / name).read_text())
    for path, text in edited_texts(client, resolved.edit, workspace).items():
        (project / path.name).write_text(text)
    passing = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_inventory.py"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert passing.returncode == 0, passing.stdout + (project / "inventory.py").read_text()


async def test_explain_answers_through_a_command_and_the_conversation_continues(
    client: AssistantClient, workspace: Path
):
    uri = open_document(client, workspace / "inventory.py")  # each test opens what it uses
    action = next(a for a in await list_actions(client, uri, DISCOUNT_LINES) if a.data["kind"] == "explain")
    resolved = await client.code_action_resolve_async(action)
    assert resolved.edit is None
    assert resolved.command is not None and resolved.command.command == protocol.COMMAND_SHOW_ANSWER
    answer: dict[str, Any] = resolved.command.arguments[0]
    assert answer["content"].strip()
    follow_up = await client.request(
        protocol.CHAT, {"message": "Now in one word?", "conversationId": answer["conversationId"]}
    )
    assert follow_up["conversationId"] == answer["conversationId"]
    assert follow_up["stats"]["nReused"] >= 0.8 * follow_up["stats"]["nPrompt"]


async def test_an_action_continues_the_chat_it_names(client: AssistantClient, workspace: Path):
    uri = open_document(client, workspace / "inventory.py")  # each test opens what it uses
    chat = await client.request(
        protocol.CHAT, {"message": "Is apply_discount right? One sentence.", "textDocument": {"uri": uri}}
    )
    arguments = {
        "uri": uri,
        "kind": "explain",
        "range": lsp_json.to_json(DISCOUNT_LINES),
        "conversationId": chat["conversationId"],
    }
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=protocol.COMMAND_CODE_ACTION, arguments=[arguments])
    )
    assert result["conversationId"] == chat["conversationId"]
    # The action's prompt holds the chat's question and answer before its own request.
    first_request = result["stats"]
    assert first_request["nPrompt"] > chat["stats"]["nPrompt"] + chat["stats"]["nGenerated"]
    assert first_request["nReused"] >= chat["stats"]["nPrompt"] - 64


async def test_execute_command_applies_its_edit_through_apply_edit(client: AssistantClient, workspace: Path):
    uri = open_document(client, workspace / "inventory.py")  # each test opens what it uses
    before = (workspace / "inventory.py").read_text()
    arguments = {
        "uri": uri,
        "kind": "refactor",  # an edit comes back (Document here often adds no docstring)
        "version": 1,
        "range": lsp_json.to_json(DISCOUNT_LINES),
    }
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=protocol.COMMAND_CODE_ACTION, arguments=[arguments])
    )
    assert result["applied"] is True
    assert len(client.applied_edits) == 1
    assert client.applied_edits[0].label == "Llama: Refactor"
    assert (workspace / "inventory.py").read_text() == before  # the server never writes files itself


async def test_a_model_that_writes_no_usable_block_gets_a_bounded_number_of_tries_and_a_clear_error(
    tiny_model: Path, tmp_path: Path
):
    """The tiny random model never writes a code block nor a valid edit: each way gets a bounded try."""
    from pygls.exceptions import JsonRpcException

    (tmp_path / "m.py").write_text("def f(x):\n    return x + 1\n")
    client = make_client()
    await client.start_io(*SERVER_COMMAND)
    try:
        options = {
            "model": str(tiny_model),
            "maxTokens": 16,
            "maxToolSteps": 2,
            "cacheDir": str(tmp_path / "cache"),
        }
        await client.initialize_session(initialize_params(tmp_path, options))
        uri = open_document(client, tmp_path / "m.py")
        diagnostic = types.Diagnostic(
            range=types.Range(types.Position(1, 0), types.Position(1, 5)), message="x"
        )
        fix = (await list_actions(client, uri, diagnostic.range, [diagnostic]))[0]
        with pytest.raises(JsonRpcException) as error:
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command=protocol.COMMAND_CODE_ACTION, arguments=[fix.data])
            )
        assert error.value.code == -32803
        assert "the model proposed no applicable edit" in error.value.message
        stats = await client.request(protocol.STATS, {})
        assert stats["lastStats"] is not None
        totals = stats["totals"]
        assert totals["requests"] == 1
        # Two tries at the block, then the edit tools' two steps, each within maxTokens.
        assert totals["nGenerated"] <= 16 * (BLOCK_ATTEMPTS + 2)
    finally:
        await client.shutdown_session()


@pytest_lsp.fixture(
    config=pytest_lsp.ClientServerConfig(server_command=SERVER_COMMAND, client_factory=make_client),
    scope="module",
)
async def two_folder_client(
    lsp_client: AssistantClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AssistantClient]:
    """A server on two workspace folders, `api` and `web`, and a file outside both."""
    base = tmp_path_factory.mktemp("multi-root")
    for name in ("api", "web", "elsewhere"):
        (base / name).mkdir()
        (base / name / "calc.py").write_text("def double(x):\n    return x * 2\n")
    params = initialize_params(base / "api", {**SERVER_OPTIONS, "cacheDir": str(base / "cache")})
    params.workspace_folders = [
        types.WorkspaceFolder(uri=(base / name).as_uri(), name=name) for name in ("api", "web")
    ]
    await lsp_client.initialize_session(params)
    await lsp_client.wait_for_status(protocol.READY)
    lsp_client.base = base  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.parametrize("folder", ["web", "elsewhere"])
async def test_with_two_folders_an_action_edits_the_file_it_is_about(two_folder_client, folder: str):
    """A file of the second folder, and one outside every folder, each get the edit in place."""
    path = two_folder_client.base / folder / "calc.py"
    uri = open_document(two_folder_client, path)
    lines = types.Range(types.Position(0, 0), types.Position(2, 0))
    action = next(
        a for a in await list_actions(two_folder_client, uri, lines) if a.data["kind"] == "document"
    )
    resolved = await two_folder_client.code_action_resolve_async(action)
    assert resolved.edit is not None
    changed = {change.text_document.uri for change in resolved.edit.document_changes or []}
    assert changed == {uri}
    after = apply_workspace_edit(lsp_json.to_json(resolved.edit), {})
    assert ast.get_docstring(ast.parse(after[uri]).body[0])  # type: ignore[arg-type]
    for name in ("api", "web", "elsewhere"):  # the server never writes files itself
        assert (two_folder_client.base / name / "calc.py").read_text() == "def double(x):\n    return x * 2\n"
