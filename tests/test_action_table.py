"""The code action kinds are declared once, in lsp_server/assistant/actions/; everything else that lists
them is held to that table here: the protocol, the CLI, the editors' generated protocol modules (VS Code's
ActionKind type and command table, package.json's commands and menu, Neovim's action list) and the docs
that name each action.

No model and no server: the editors' sources are read and parsed as text.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import string
from pathlib import Path

import pytest
from lsprotocol import types

from lsp_server.assistant.actions import ACTIONS, BY_NAME, Action, Output
from lsp_server.clients.cli import build_parser
from lsp_server.lsp import code_actions, protocol

ROOT = Path(__file__).resolve().parent.parent
TS_PROTOCOL = ROOT / "editors" / "vscode" / "src" / "protocol.ts"
LUA_PROTOCOL = ROOT / "editors" / "nvim" / "lua" / "llama_lsp" / "protocol.lua"
PACKAGE_JSON = ROOT / "editors" / "vscode" / "package.json"
DOC = ROOT / "docs" / "protocol.md"
NVIM_DOC = ROOT / "editors" / "nvim" / "doc" / "llama_lsp.txt"

NAMES = [action.name for action in ACTIONS]
TITLES = [action.title for action in ACTIONS]
# What a block's instruction may name (lsp.code_actions._write_edit fills them in).
TEMPLATE_FIELDS = {"first", "last", "path", "language", "test_file"}


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# --- the table itself -----------------------------------------------------------------------------


def test_names_and_titles_are_unique() -> None:
    assert len(set(NAMES)) == len(NAMES), NAMES
    assert len(set(TITLES)) == len(TITLES), TITLES


@pytest.mark.parametrize("action", ACTIONS, ids=NAMES)
def test_each_lsp_kind_is_an_lsp_code_action_kind_or_under_one(action: Action) -> None:
    bases = {kind.value for kind in types.CodeActionKind if kind.value}
    assert any(action.lsp_kind == base or action.lsp_kind.startswith(base + ".") for base in bases), (
        f"{action.name}: {action.lsp_kind!r} is not under any of {sorted(bases)}"
    )


@pytest.mark.parametrize("action", ACTIONS, ids=NAMES)
def test_each_action_has_the_prompts_its_output_needs(action: Action) -> None:
    assert action.instruction.strip()
    fields = {name for _, name, _, _ in string.Formatter().parse(action.instruction) if name is not None}
    if action.output is Output.ANSWER:
        assert not fields, f"{action.name}: an answer's instruction is sent as it is, yet names {fields}"
        assert not action.edit_tools and not action.tool_instruction, f"{action.name} answers in words"
    else:
        assert fields <= TEMPLATE_FIELDS, f"{action.name}: unknown fields {fields - TEMPLATE_FIELDS}"
        has_prompt = bool(action.tool_instruction.strip())
        assert has_prompt == bool(action.edit_tools), f"{action.name}: edit tools without a prompt, or back"
    docstring_instruction = getattr(action, "docstring_instruction", "")
    if docstring_instruction:
        docstring_fields = {n for _, n, _, _ in string.Formatter().parse(docstring_instruction) if n}
        assert action.output is Output.BLOCK and action.admission(), f"{action.name}: docstrings only"
        assert "name" in docstring_fields and docstring_fields <= TEMPLATE_FIELDS | {"name"}, docstring_fields
    if action.output is Output.TEST_FILE:
        assert "test_file" in fields, f"{action.name} writes a test file without naming it"
        assert not action.edit_tools, f"{action.name}: a test file is written whole, never as a JSON argument"
    elif action.output is Output.BLOCK:
        assert action.edit_tools, f"{action.name}: no edit tool to fall back on"


def test_the_server_offers_every_lsp_kind() -> None:
    assert set(code_actions.OFFERED_KINDS) == {action.lsp_kind for action in ACTIONS}


# --- the protocol and the CLI ---------------------------------------------------------------------


def test_the_protocol_takes_its_kinds_from_the_table() -> None:
    assert list(protocol.ACTION_KINDS) == NAMES
    with pytest.raises(protocol.ParamsError, match="kind must be one of"):
        protocol.parse_code_action_request({"kind": "nope"})


def test_the_cli_offers_every_kind_and_no_other() -> None:
    parser = build_parser()
    for name in NAMES:
        assert parser.parse_args(["ask", "file.py", "question", "--action", name]).action == name
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        parser.parse_args(["ask", "file.py", "question", "--action", "nope"])


# --- the editors ---------------------------------------------------------------------------------


def ts_action_kinds() -> list[str]:
    text = TS_PROTOCOL.read_text(encoding="utf-8")
    match = re.search(r"^export type ActionKind\s*=([^;]*);", text, flags=re.MULTILINE)
    assert match, f"{rel(TS_PROTOCOL)}: no `export type ActionKind = ...;`"
    return re.findall(r"'([^']*)'", match.group(1))


def ts_action_commands() -> dict[str, dict[str, object]]:
    """protocol.ts's ACTION_COMMANDS: command id -> its fields (strings and booleans)."""
    text = TS_PROTOCOL.read_text(encoding="utf-8")
    match = re.search(
        r"^export const ACTION_COMMANDS\b[^=]*=\s*\{(.*?)^\};", text, flags=re.MULTILINE | re.DOTALL
    )
    assert match, f"{rel(TS_PROTOCOL)}: no `export const ACTION_COMMANDS = {{...}};`"
    commands = {}
    for command, body in re.findall(r"'([\w.]+)':\s*\{([^}]*)\}", match.group(1)):
        fields = re.findall(r"(\w+):\s*(?:'([^']*)'|(true|false))", body)
        commands[command] = {
            key: value if boolean == "" else boolean == "true" for key, value, boolean in fields
        }
    assert commands, f"{rel(TS_PROTOCOL)}: ACTION_COMMANDS has no entries the parser reads"
    return commands


def test_the_typescript_action_kind_is_the_tables() -> None:
    assert sorted(ts_action_kinds()) == sorted(NAMES), (
        f"ActionKind in {rel(TS_PROTOCOL)}: {ts_action_kinds()}; lsp_server/assistant/actions: {NAMES}"
    )


def test_the_vscode_commands_are_the_tables_actions() -> None:
    commands = ts_action_commands()
    kinds = [fields.get("kind") for fields in commands.values()]
    assert kinds == NAMES, f"ACTION_COMMANDS in {rel(TS_PROTOCOL)} run {kinds}; the table has {NAMES}"
    wrong = []
    for command, fields in commands.items():
        action = BY_NAME[str(fields["kind"])]
        expected = {
            "kind": action.name,
            "title": action.title,
            "lspKind": action.lsp_kind,
            "answers": action.output is Output.ANSWER,
            "forDiagnostics": action.for_diagnostics,
        }
        actual = {key: fields.get(key, False) for key in expected}
        if actual != expected:
            wrong.append(f"{command}: {actual} in {rel(TS_PROTOCOL)}, the table: {expected}")
    assert not wrong, "\n".join(wrong)


def test_every_vscode_action_command_is_contributed_with_its_title_and_in_the_menu() -> None:
    manifest = json.loads(PACKAGE_JSON.read_text(encoding="utf-8"))
    contributed = {c["command"]: c["title"] for c in manifest["contributes"]["commands"]}
    in_menu = {entry.get("command") for entry in manifest["contributes"]["menus"]["llamaLsp.editor"]}
    wrong = []
    for command, fields in ts_action_commands().items():
        # Exactly the title the server offers the action under: the palette and the lightbulb agree.
        title = f"Llama: {BY_NAME[str(fields['kind'])].title}"
        if contributed.get(command) != title:
            wrong.append(
                f"{command}: title {contributed.get(command)!r} in {rel(PACKAGE_JSON)}, want {title!r}"
            )
        if command not in in_menu:
            wrong.append(f"{command}: not in the llamaLsp.editor menu of {rel(PACKAGE_JSON)}")
    assert not wrong, "\n".join(wrong)


def test_the_neovim_action_list_is_the_tables() -> None:
    text = LUA_PROTOCOL.read_text(encoding="utf-8")
    match = re.search(r"^  ACTIONS = \{\n(.*?)^  \},", text, flags=re.MULTILINE | re.DOTALL)
    assert match, f"{rel(LUA_PROTOCOL)}: no `ACTIONS = {{...}}`"
    listed = [dict(re.findall(r'(\w+) = "([^"]*)"', entry)) for entry in match.group(1).split("},")[:-1]]
    expected = [{"kind": a.name, "title": a.title, "lsp_kind": a.lsp_kind} for a in ACTIONS]
    assert listed == expected


# --- the docs -------------------------------------------------------------------------------------


def test_the_protocol_doc_names_every_kind() -> None:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(r"`kind` one of `([^`]*)`", text)
    assert match, f"{rel(DOC)}: no '`kind` one of `a | b`' in the code actions section"
    documented = [kind.strip() for kind in match.group(1).split("|")]
    assert documented == NAMES, f"{rel(DOC)} lists the kinds {documented}; the table has {NAMES}"


@pytest.mark.parametrize("doc", [DOC, NVIM_DOC], ids=rel)
def test_the_docs_list_every_action_title(doc: Path) -> None:
    """The docs quote the titles the server offers ("Llama: Fix: …" is Fix with its diagnostic)."""
    text = doc.read_text(encoding="utf-8")
    documented = set(re.findall(r'"Llama: ([^":.…]+)', " ".join(text.split())))
    missing = sorted(set(TITLES) - documented)
    assert not missing, f"{rel(doc)} does not quote the titles {missing} (it has {sorted(documented)})"
